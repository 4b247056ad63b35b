package main

// The session's world, as sandbox.go sees it: started on the first command
// where the machine gives namespaces (sandbox_world_linux.go), closed with
// the session; where it cannot start, why not is kept and every command
// takes the per-command sandbox instead.

import (
	"os"
	"os/exec"
	"time"
)

// worldHelperArg is the hidden subcommand the world's init answers to.
const worldHelperArg = "__world"

// worldRunner is a session's world: it starts commands inside.
type worldRunner interface {
	start(cmd *exec.Cmd, pol sandboxPolicy) (procHandle, error)
	protected() []string // the git paths it holds read-only
	processBound() bool  // whether its process count is bounded here
	privateTmp() bool    // /tmp is the session's own (not the host's)
	close()
}

// pathExists says whether p names something (a link counts).
func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// sessionDir is the session's own folder on the host, made on first use:
// the world's /tmp and /var/tmp, its caches' upper layers, the proxy's
// socket. It is removed when the sandbox closes.
func (s *sandbox) sessionDir() (string, error) {
	s.worldMu.Lock()
	defer s.worldMu.Unlock()
	return s.sessionDirLocked()
}

func (s *sandbox) sessionDirLocked() (string, error) {
	if s.session != "" {
		return s.session, nil
	}
	d, err := os.MkdirTemp("", "lembas-session-")
	if err != nil {
		return "", err
	}
	s.session = evalExisting(d)
	return s.session, nil
}

// theWorld is the session's world, started on first use; nil where the
// machine gives none (s.worldErr says why).
func (s *sandbox) theWorld() worldRunner {
	if s.noWorld || s.probed().Kind != "landlock" {
		return nil
	}
	s.worldMu.Lock()
	defer s.worldMu.Unlock()
	if s.world != nil || s.worldErr != nil {
		return s.world
	}
	dir, err := s.sessionDirLocked()
	if err != nil {
		s.worldErr = err
		return nil
	}
	var sock string
	if s.networkMode() == "proxy" {
		if s.proxy == nil {
			s.proxy, err = startSandboxProxy(s, dir)
			if err != nil {
				s.worldErr = err
				return nil
			}
		}
		sock = s.proxy.sock
	}
	t0 := time.Now()
	w, err := newWorldOS(s, dir, sock, time.Duration(theSandboxSpec().WorldIdleS)*time.Second)
	traceSince(t0, "sandbox world started")
	if err != nil {
		s.worldErr = err
		return nil
	}
	s.world = w
	return w
}

// snapshotPaths are the git paths compared before and after a command: all
// of them without a world, and in one those it could not bind (missing
// when it started: a commondir made later would point git elsewhere).
func (s *sandbox) snapshotPaths(all []string, w worldRunner) []string {
	if w == nil {
		return all
	}
	held := map[string]bool{}
	for _, p := range w.protected() {
		held[p] = true
	}
	var out []string
	for _, p := range all {
		if !held[p] {
			out = append(out, p)
		}
	}
	return out
}

// close ends the session's world and proxy and removes its folder.
func (s *sandbox) close() {
	s.worldMu.Lock()
	w, p, dir := s.world, s.proxy, s.session
	s.world, s.proxy, s.session = nil, nil, ""
	s.worldMu.Unlock()
	if w != nil {
		w.close()
	}
	if p != nil {
		p.close()
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// startServer starts a stdio MCP server for the session: in its world
// where there is one, else in the per-command sandbox (or bare where the
// machine gives none), with the network as sandbox.network says. The
// caller has scrubbed its environment and set its stdio (files).
func (s *sandbox) startServer(cmd *exec.Cmd) (procHandle, error) {
	if s.theWorld() != nil {
		dir, err := s.sessionDir()
		if err != nil {
			return nil, err
		}
		sock := ""
		if s.proxy != nil {
			sock = s.proxy.sock
		}
		w, err := newServerWorldOS(s, dir, sock)
		if err != nil {
			return nil, err
		}
		cmd.Env = s.sandboxEnv(cmd.Env, &sandboxRun{sb: s, world: w})
		p, err := w.start(cmd, s.worldPolicy(s.partsCached("auto")))
		if err != nil {
			w.close()
			return nil, err
		}
		return serverProc{p, w}, nil
	}
	if s.probed().Kind == "" {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return execProc{cmd}, nil
	}
	pol, _ := s.policy("auto")
	cmd.Env = s.sandboxEnv(cmd.Env, &sandboxRun{sb: s})
	if err := sandboxCommand(cmd, pol); err != nil {
		return nil, err
	}
	if err := sandboxStart(cmd, pol); err != nil {
		return nil, err
	}
	return execProc{cmd}, nil
}

// serverProc is an MCP server in a world of its own, which ends with it.
type serverProc struct {
	procHandle
	w worldRunner
}

func (p serverProc) wait() error {
	err := p.procHandle.wait()
	go p.w.close()
	return err
}

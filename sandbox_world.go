package main

// The session's world, as sandbox.go sees it: started on the first command
// where the machine gives namespaces (sandbox_world_linux.go), closed with
// the session; where it cannot start, why not is kept and every command
// takes the per-command sandbox instead.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
//
//go:noinline
func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// sessionDir is the session's own folder on the host, made on first use:
// the world's /tmp and /var/tmp, its caches' and git's upper layers, the
// proxy's socket. It is removed when the sandbox closes; its owner file
// (lembas's pid, locked while the session lives) lets a later session
// sweep the folders of one that was killed.
func (s *sandbox) sessionDir() (string, error) {
	s.worldMu.Lock()
	defer s.worldMu.Unlock()
	return s.sessionDirLocked()
}

func (s *sandbox) sessionDirLocked() (string, error) {
	if s.session != "" {
		return s.session, nil
	}
	// Folders left unowned (a -p's, a killed session's) go in the
	// background: removing one costs milliseconds, and nothing waits for
	// it (a new folder is never taken: until its owner file is written and
	// locked, a folder without one is kept for an hour).
	swept := make(chan struct{})
	s.swept = swept
	go func() {
		defer close(swept)
		sweepSessionDirs(false)
	}()
	d, err := os.MkdirTemp("", sessionDirPrefix)
	if err != nil {
		return "", err
	}
	f, err := lockSessionOwner(d)
	if err != nil {
		os.RemoveAll(d)
		return "", err
	}
	s.session, s.owner = evalExisting(d), f
	return s.session, nil
}

const (
	sessionDirPrefix = "lembas-session-"
	sessionOwnerFile = "owner" // "<pid>\n", locked (flock) while the session lives
)

// sweepSessionDirs removes the session folders in the temp folder whose
// owner is gone (no lock on the owner file; a folder without one, from an
// older lembas, once it is an hour old); with mine, also those this process
// owns (a test's end: sandboxes it never closed).
func sweepSessionDirs(mine bool) {
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), sessionDirPrefix) {
			continue
		}
		d := filepath.Join(os.TempDir(), e.Name())
		if mine && sessionOwnerPid(d) == os.Getpid() {
			os.RemoveAll(d)
			continue
		}
		if gone, lock := sessionOwnerGone(d); gone {
			os.RemoveAll(d)
			if lock != nil {
				lock.Close()
			}
		}
	}
}

// sessionOwnerPid is the pid an owner file names, or 0.
func sessionOwnerPid(d string) int {
	b, err := os.ReadFile(filepath.Join(d, sessionOwnerFile))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
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
	warming := s.warming
	s.worldMu.Unlock()
	if warming != nil {
		<-warming // a world begun in the background is closed with the rest, never left behind
	}
	s.worldMu.Lock()
	w, p, dir, owner := s.world, s.proxy, s.session, s.owner
	s.world, s.proxy, s.session, s.owner = nil, nil, "", nil
	s.worldMu.Unlock()
	if w != nil {
		w.close()
	}
	if p != nil {
		p.close()
	}
	s.screenAtClose() // the world's processes are gone: none plants after this
	s.closeAdded()
	if owner != nil {
		owner.Close() // first: Windows removes no open file; and the folder is unowned from here
	}
	if dir != "" && !s.leave.Load() {
		os.RemoveAll(dir)
	}
}

// leaveFolder makes close leave the session's folder, unowned (its lock
// released), to the next session's sweep: a process about to exit need
// not wait for its removal.
func (s *sandbox) leaveFolder() { s.leave.Store(true) }

// prewarm starts the session's world in the background, once, so the
// first command does not wait for the namespaces' probe and the world's
// start (together about two thirds of a first bash call's time): -p in
// auto mode, where a command is likely and runs unasked. close waits for
// it.
func (s *sandbox) prewarm() {
	s.worldMu.Lock()
	if s.warming != nil || s.world != nil {
		s.worldMu.Unlock()
		return
	}
	done := make(chan struct{})
	s.warming = done
	s.worldMu.Unlock()
	go func() {
		defer close(done)
		s.theWorld()
	}()
}

// homeNamed is what of the home folder a server's command line names:
// each word that is a path there that exists (a file: its folder), so
// that ~/tools/server.js, or node_modules beside it, are in its world's
// view though the home folder is not (a file in the home folder itself:
// that file alone).
func homeNamed(home string, words []string) []string {
	var out []string
	for _, w := range words {
		if i := strings.IndexByte(w, '='); i > 0 && !filepath.IsAbs(w) {
			w = w[i+1:] // --config=/home/u/x
		}
		if !filepath.IsAbs(w) {
			continue
		}
		if !within(home, filepath.Clean(w)) {
			w = evalExisting(w) // spelled through a link to the home folder (/home -> /var/home)
		}
		if !within(home, filepath.Clean(w)) || filepath.Clean(w) == home {
			continue
		}
		fi, err := os.Stat(w)
		if err != nil {
			continue
		}
		if d := filepath.Dir(filepath.Clean(w)); !fi.IsDir() && d != home {
			w = d // its folder (a file in home itself: the file alone)
		}
		out = append(out, filepath.Clean(w))
	}
	return uniq(out)
}

// startServer starts a stdio MCP server for the session: in a world laid
// out as the session's (its private /tmp, its masks, git add-only) where
// there is one, else in the per-command sandbox (or bare where the
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
		w, err := newServerWorldOS(s, dir, sock, append(append([]string{cmd.Path, cmd.Dir}, cmd.Args...), s.cfg.Readable...))
		if err != nil {
			return nil, err
		}
		cmd.Env = s.sandboxEnv(cmd.Env, &sandboxRun{sb: s, world: w})
		if cmd.Dir == "" {
			// A server with no folder of its own (config.yaml's entries)
			// starts in the project: lembas's own folder may be one the
			// world does not show (under the host's /tmp), and the start
			// would then fail as if the program were missing.
			cmd.Dir = s.root
		}
		p, err := w.start(cmd, s.worldPolicy(s.partsCached("auto")))
		if err != nil {
			w.close()
			return nil, err
		}
		return serverProc{p, w}, nil
	}
	closeInherited()
	if s.probed().Kind == "" {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return execProc{cmd}, nil
	}
	pol, _ := s.policy("auto")
	if pol.Home != "" {
		// As in a server's world: what its command line names of the home
		// folder is read (Landlock's reading of it, sandboxPolicy.Home).
		pol.Keep = append(pol.Keep, homeNamed(pol.Home, append(append([]string{cmd.Path, cmd.Dir}, cmd.Args...), s.cfg.Readable...))...)
	}
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

package main

// MCP over stdio: the server is a child process in a process group of its
// own, speaking one JSON-RPC message a line on stdin/stdout; what it writes
// to stderr is kept (its last lines) to say why it failed. Ending it: close
// stdin, wait a moment, SIGTERM the group, wait, SIGKILL the group — and the
// group is killed even when the leader left on its own, so no child of the
// server outlives the session.

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// mcpStdio is one running stdio server.
type mcpStdio struct {
	*lineReader
	*lineWriter
	cmd   *exec.Cmd
	proc  procHandle // the started server (a child, or in the session's world)
	stdin io.WriteCloser
	out   *os.File // our end of its stdout
	spec  *mcpSpec

	mu      mutex
	lines   []string // stderr's last lines
	done    chan any
	errDone chan any // stderr read to its end
	waitErr error
	once    sync.Once
}

// startMCPStdio starts the server. Its environment is lembas's own plus the
// entry's env (already expanded); its folder is cwd when given.
func startMCPStdio(cfg mcpServerConfig, sp *mcpSpec) (*mcpStdio, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = os.Environ()
	if cfg.Sandbox != nil {
		cmd.Env, _ = cfg.Sandbox.scrubEnv(cmd.Env) // the entry's own env is added after, as given
	}
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = cfg.Cwd
	setProcessGroup(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	var proc procHandle
	if cfg.Sandbox != nil {
		proc, err = cfg.Sandbox.startServer(cmd) // sandbox_world.go
	} else if err = cmd.Start(); err == nil {
		proc = execProc{cmd}
	}
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW, errR, errW} {
			f.Close()
		}
		return nil, errorf("starting %s: %v", cfg.Command, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	s := &mcpStdio{lineReader: newLineReader(outR, int(sp.num("max_message_bytes"))), lineWriter: &lineWriter{w: inW},
		cmd: cmd, proc: proc, stdin: inW, out: outR, spec: sp, done: make(chan any), errDone: make(chan any)}
	go s.readStderr(errR)
	go func() {
		err := proc.wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(s.done)
	}()
	return s, nil
}

// readStderr keeps the last stderr_lines lines, each cut at
// stderr_line_bytes, so a server that floods stderr costs a fixed amount.
func (s *mcpStdio) readStderr(r *os.File) {
	defer close(s.errDone)
	defer r.Close()
	keep := int(s.spec.num("stderr_lines"))
	width := int(s.spec.num("stderr_line_bytes"))
	br := bufio.NewReaderSize(r, 4096)
	var cur []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(cur) < width {
			n := width - len(cur)
			if n > len(chunk) {
				n = len(chunk)
			}
			cur = append(cur, chunk[:n]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if line := strings.TrimSpace(strings.ToValidUTF8(string(cur), "?")); line != "" {
			s.mu.Lock()
			s.lines = append(s.lines, line)
			if len(s.lines) > keep {
				s.lines = s.lines[len(s.lines)-keep:]
			}
			s.mu.Unlock()
		}
		cur = cur[:0]
		if err != nil {
			return
		}
	}
}

// tail is stderr's last lines; once the process has exited, what it
// wrote last is read first (bounded: a child may hold stderr open).
func (s *mcpStdio) tail() string {
	select {
	case <-s.done:
		select {
		case <-s.errDone:
		case <-time.After(s.spec.ms("stdin_grace_ms")):
		}
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, " | ")
}

func (s *mcpStdio) setVersion(string) {}

func (s *mcpStdio) exited() <-chan any { return s.done }

// exitStatus says how the process ended ("exit status 3", "signal: killed").
func (s *mcpStdio) exitStatus() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waitErr == nil {
		return "exit status 0"
	}
	return s.waitErr.Error()
}

// close ends the server: stdin closed, then SIGTERM, then SIGKILL to its
// group, each after its grace; then the group is killed once more for any
// child the leader left behind. Safe to call more than once.
func (s *mcpStdio) close() {
	s.once.Do(func() {
		s.stdin.Close()
		select {
		case <-s.done:
		case <-time.After(s.spec.ms("stdin_grace_ms")):
			s.proc.terminate()
			select {
			case <-s.done:
			case <-time.After(s.spec.ms("term_grace_ms")):
				s.proc.kill()
				<-s.done
			}
		}
		s.proc.kill()
		s.out.Close()
	})
}

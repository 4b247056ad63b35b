//go:build unix

package main

// PTYs on Unix, by hand with x/sys: the master comes from openPTYPair
// (pty_linux.go, pty_darwin.go), the child gets the slave as its stdin,
// stdout and stderr, a session of its own (Setsid) and the slave as its
// controlling terminal (Setctty), so job control, ^C and a hangup reach it
// as they would on a real terminal. The terminals (terminal.go) and the
// REPL's PTY test both start their processes here: one PTY implementation.

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ptyProc is one process running on the slave side of a pseudo-terminal;
// the master is read for its output and written with its input.
type ptyProc struct {
	master *os.File
	cmd    *exec.Cmd
	done   chan struct{} // closed once the process has been waited for
	code   int           // its exit status (128+n for signal n), valid after done
}

// startPTY starts argv (argv[0] is what the process sees as its name; path
// is the executable) in dir with env on a new PTY of cols×rows.
func startPTY(path string, argv []string, dir string, env []string, cols, rows int) (p *ptyProc, err error) {
	master, slave, err := openPTYPair()
	if err != nil {
		return nil, err
	}
	defer slave.Close() // the child has its own copy once started
	defer func() {
		if err != nil {
			master.Close()
		}
	}()
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}); err != nil {
		return nil, errorf("sizing the pty: %v", err)
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: dir, Env: env, Stdin: slave, Stdout: slave, Stderr: slave}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		return nil, errorf("starting %s on a pty: %v", path, err)
	}
	p = &ptyProc{master: master, cmd: cmd, done: make(chan struct{})}
	go p.reap()
	return p, nil
}

// reap waits for the process and keeps its status the way a shell reports
// it, so the exit a client sees reads like $? would.
func (p *ptyProc) reap() {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		p.code = 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = 128 + int(ws.Signal())
		} else {
			p.code = ee.ExitCode()
		}
	default:
		p.code = -1
	}
	close(p.done)
}

// Read reads output. The end of the output — every holder of the slave
// gone, which Linux reports as EIO — is io.EOF.
func (p *ptyProc) Read(b []byte) (int, error) {
	n, err := p.master.Read(b)
	if err != nil && errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}

// Write writes input, as if typed.
func (p *ptyProc) Write(b []byte) (int, error) { return p.master.Write(b) }

// resize tells the terminal its new size; the kernel sends SIGWINCH to
// the foreground job.
func (p *ptyProc) resize(cols, rows int) error {
	return unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
}

// hangup is what a modem dropping the line did: SIGHUP to the session's
// leader (the shell, whose process group is its pid) and to the job in the
// foreground, which a shell passes on to its other jobs.
func (p *ptyProc) hangup() {
	pid := p.cmd.Process.Pid
	if pid <= 0 || p.exited() {
		return // gone: its pid may be another's by now
	}
	// Once each: a second SIGHUP arriving while the shell runs its HUP
	// trap can stop the trap from finishing.
	if fg, err := unix.IoctlGetInt(int(p.master.Fd()), unix.TIOCGPGRP); err == nil && fg > 1 && fg != pid {
		unix.Kill(-fg, unix.SIGHUP)
	}
	unix.Kill(-pid, unix.SIGHUP)
	unix.Kill(-pid, unix.SIGCONT) // a stopped job would not see the hangup until it ran
}

// nudge sends the shell alone SIGHUP again, for a shell that took the
// first one just before blocking in read (terminal.hangup).
func (p *ptyProc) nudge() {
	if pid := p.cmd.Process.Pid; pid > 0 && !p.exited() {
		unix.Kill(pid, unix.SIGHUP)
	}
}

// kill ends the session's process group for good, after a hangup it
// ignored.
func (p *ptyProc) kill() {
	if pid := p.cmd.Process.Pid; pid > 0 && !p.exited() {
		unix.Kill(-pid, unix.SIGKILL)
	}
}

// exited says whether the process has been waited for.
func (p *ptyProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// drainBy bounds the reading of what is left once the process is gone: a
// background job that kept the slave open would otherwise keep the reader
// waiting for ever.
func (p *ptyProc) drainBy(t time.Time) { p.master.SetReadDeadline(t) }

// pid is the process's id.
func (p *ptyProc) pid() int { return p.cmd.Process.Pid }

// close releases the master; a reader blocked on it returns.
func (p *ptyProc) close() error { return p.master.Close() }

// ptyDefaultShell is the shell of last resort.
func ptyDefaultShell() string { return "/bin/sh" }

package main

// A started command, wherever it runs: a child of lembas (exec.Cmd), or a
// process the session's world started on lembas's behalf (Linux, see
// sandbox_world_linux.go). runShell and the jobs hold one of these, so the
// timeouts, cancels and stops are the same for both.

import (
	"errors"
	"os/exec"
)

// procHandle is one started command's process group.
type procHandle interface {
	wait() error // as exec.Cmd.Wait: nil, an exit (exitCodeOf) or another error
	terminate()  // SIGTERM to the group
	kill()       // SIGKILL to the group
	pid() int
}

// execProc is a command lembas started itself.
type execProc struct{ cmd *exec.Cmd }

func (p execProc) wait() error { return p.cmd.Wait() }
func (p execProc) terminate()  { terminateGroup(p.cmd) }
func (p execProc) kill()       { killGroup(p.cmd) }
func (p execProc) pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// exitCoder is an end that carries an exit code (the world's).
type exitCoder interface{ code() int }

// exitCodeOf reads a command's exit code from wait's error: ok is false for
// an error that is not an exit (the command could not be waited for).
func exitCodeOf(err error) (int, bool) {
	if err == nil {
		return 0, true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), true
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.code(), true
	}
	return -1, false
}

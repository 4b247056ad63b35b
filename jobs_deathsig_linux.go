package main

// On Linux a job's shell also gets SIGKILL from the kernel when lembas
// dies (Pdeathsig), so the group's leader goes at once even before the
// watchdog (jobs_unix.go) kills the rest. Pdeathsig follows the thread that
// started the child; Go ends threads only when a locked goroutine exits,
// which lembas never does, so the signal comes with the process's end.

import (
	"os/exec"
	"syscall"
)

func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

//go:build unix

package main

// Process groups on Unix: a command runs in a group of its own so that a
// timeout or a cancel can end it and every child it started.

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup sends SIGTERM to the command's group.
func terminateGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		unix.Kill(-cmd.Process.Pid, unix.SIGTERM)
	}
}

// killGroup sends SIGKILL to the command's group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	}
}

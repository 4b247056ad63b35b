//go:build !linux

package main

// Only Linux has Pdeathsig; elsewhere the watchdog (jobs_unix.go) and
// stopAll end a job when lembas does.

import "os/exec"

func dieWithParent(cmd *exec.Cmd) {}

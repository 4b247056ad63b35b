//go:build unix

package main

import "syscall"

// processAlive says whether a process of that id runs (service status:
// a status file left by a service that was killed says nothing).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

//go:build unix

package main

// Process helpers of the tests that differ by OS, so that every test file
// also compiles for Windows (GOOS=windows go vet).

import "syscall"

// ownGroup is the test process's own process group.
func ownGroup() int { return syscall.Getpgrp() }

// killGroupID kills process group n.
func killGroupID(n int) { syscall.Kill(-n, syscall.SIGKILL) }

// ownSessionAttr gives a command a session of its own.
func ownSessionAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

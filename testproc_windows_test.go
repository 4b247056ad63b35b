package main

// Windows twins of testproc_unix_test.go; the tests that use them skip on
// Windows before they get here.

import "syscall"

func ownGroup() int { return -1 }

func killGroupID(n int) {}

func ownSessionAttr() *syscall.SysProcAttr { return nil }

//go:build !linux

package main

import (
	"fmt"
	"runtime"
	"time"
)

// newWorldOS: only Linux has a world; elsewhere each command is sandboxed
// on its own (macOS) or not at all.
func newWorldOS(s *sandbox, dir, sock string, idle time.Duration) (worldRunner, error) {
	return nil, errorf("%s has no namespaces", runtime.GOOS)
}

func newServerWorldOS(s *sandbox, dir, sock string, names []string) (worldRunner, error) {
	return nil, errorf("%s has no namespaces", runtime.GOOS)
}

// worldInit is Linux's; nothing calls it here.
func worldInit(args []string) int {
	fmt.Println("lembas sandbox: the world is for Linux; the command did not run")
	return theSandboxSpec().ExitSetup
}

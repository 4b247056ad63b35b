//go:build unix && !linux && !darwin

package main

// On the other Unixes lembas has no PTY code yet: opening one says so, and
// the terminal capability is still offered but every open is refused with
// this reason. Safe: nothing else depends on a PTY.

import (
	"errors"
	"os"
)

func openPTYPair() (master, slave *os.File, err error) {
	return nil, nil, errorNew("opening a pty: not written for this operating system yet; use Linux or macOS")
}

//go:build unix

package main

// File locks on Unix: flock on a lock file. The kernel drops the lock when
// the holding process dies, so a lock left by a killed lembas is simply
// free again — the "take over a dead process's lock" rule comes for free.

import (
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive lock on f without waiting.
func tryLock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

func unlockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

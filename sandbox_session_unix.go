//go:build unix

package main

// A session folder's owner: a file holding lembas's pid, locked with flock
// for as long as the session lives. The kernel drops the lock when the
// process ends, however it ends, so a folder whose lock can be taken has
// no owner, and a live owner's folder is never swept.

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// lockSessionOwner makes d's owner file and locks it; the file stays open
// (and locked) until the session closes it.
func lockSessionOwner(d string) (*os.File, error) {
	// Made under another name, locked, and only then named the owner:
	// a sweep (another session's, or this process's own, which runs beside
	// the start) that found the owner file before its lock would take the
	// folder for one whose owner is gone, and remove it under us.
	tmp := filepath.Join(d, sessionOwnerFile+".new")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(d, sessionOwnerFile)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sessionOwnerGone says whether d's owner is gone; when it is, the lock
// taken to learn it is returned, to hold while d is removed.
func sessionOwnerGone(d string) (bool, *os.File) {
	f, err := os.Open(filepath.Join(d, sessionOwnerFile))
	if err != nil {
		// No owner file: an older lembas's folder, or one being made.
		fi, err := os.Stat(d)
		return err == nil && time.Since(fi.ModTime()) > time.Hour, nil
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		f.Close()
		return false, nil
	}
	return true, f
}

//go:build !unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Without flock a session folder's owner file only names the pid; a
// folder is swept once it is a day old.

func lockSessionOwner(d string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(d, sessionOwnerFile), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	return f, nil
}

func sessionOwnerGone(d string) (bool, *os.File) {
	fi, err := os.Stat(d)
	return err == nil && time.Since(fi.ModTime()) > time.Hour, nil
}

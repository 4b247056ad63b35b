//go:build !linux

package main

import (
	"io/fs"
	"os"
)

// Where there is no openat2, the file tools' disk access is the plain one
// (fs_nolinks.go).

func openNoLinks(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

func writeFileNoLinks(path string, data []byte, perm fs.FileMode) error {
	return writeFileAtomic(path, data, perm)
}

func removeNoLinks(path string) error { return os.Remove(path) }

func readDirNoLinks(dir string) ([]os.DirEntry, error) { return os.ReadDir(dir) }

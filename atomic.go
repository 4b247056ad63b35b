package main

// Atomic file writes: every file lembas writes (sessions, config, files a
// tool edits) goes through writeFileAtomic, so a crash or kill -9 at any
// moment leaves either the old bytes or the new ones, never a torn file.

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// writeFileAtomic writes data to a temporary file beside path, fsyncs it,
// renames it over path and, when path is new, fsyncs the directory so the
// new name survives a power cut. Replacing an existing file needs no
// directory sync: after a crash the name holds the old bytes or the new
// ones, both whole. The temporary name ends in ".tmp" (never ".json"), so a
// reader globbing *.json never sees it. The parent folder is created when
// missing.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	_, statErr := os.Lstat(path)
	existed := statErr == nil
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			// The write already failed and says so; a temp file left by a
			// failed remove is swept by sweepStaleTemps, and is never read
			// as the file (its name ends in .tmp).
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if !existed {
		if err := syncDir(dir); err != nil {
			return errorf("%s is written, but it may not survive a power cut: %w", path, err)
		}
	}
	return nil
}

// syncDir makes a rename durable, or says why it could not. Systems that
// cannot sync a directory (Windows, where a rename is durable on its own;
// file systems that answer EINVAL) are not an error: there is nothing more
// to do there.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return errorf("opening the folder %s to sync it: %w", dir, err)
	}
	err = d.Sync()
	cerr := d.Close()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		err = nil
	}
	if err != nil {
		return errorf("syncing the folder %s: %w", dir, err)
	}
	if cerr != nil {
		return errorf("syncing the folder %s: %w", dir, cerr)
	}
	return nil
}

// sweepStaleTemps removes the temp files writeFileAtomic makes
// (".<name>.*.tmp") that are older than age: a process killed between
// making one and renaming it leaves it behind, and nothing else ever
// would. A younger one may be a write in progress, and is left alone.
func sweepStaleTemps(dir string, now time.Time, age time.Duration) int {
	names, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	n := 0
	for _, p := range names {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() && now.Sub(st.ModTime()) > age {
			if os.Remove(p) == nil {
				n++
			}
		}
	}
	return n
}

package main

// Atomic file writes: every file lembas writes (sessions, config, files a
// tool edits) goes through writeFileAtomic, so a crash or kill -9 at any
// moment leaves either the old bytes or the new ones, never a torn file.

import (
	"os"
	"path/filepath"
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
		syncDir(dir)
	}
	return nil
}

// syncDir makes a rename durable. It is best effort: some systems (Windows)
// cannot open a directory for syncing, and the rename is still atomic there.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
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

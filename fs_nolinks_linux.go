//go:build linux

package main

// The file tools' disk access where a link may have changed under them
// (fs_nolinks.go says why): every path is opened with openat2's
// RESOLVE_NO_SYMLINKS, so a link met anywhere on it fails the open
// (ELOOP), and a write or a remove acts inside the folder so opened, by
// its descriptor, never through a path looked up again.

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNoLinks opens path, which the caller resolved, refusing a link on
// the way; on a kernel without openat2 (before 5.6, which has no Landlock
// either) it opens path as os.OpenFile does.
func openNoLinks(path string, flag int, perm fs.FileMode) (*os.File, error) {
	how := unix.OpenHow{Flags: uint64(flag | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_SYMLINKS}
	if flag&unix.O_CREAT != 0 {
		how.Mode = uint64(perm.Perm())
	}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		switch err {
		case nil:
			return os.NewFile(uintptr(fd), path), nil
		case unix.EINTR:
			continue
		case unix.ENOSYS:
			return os.OpenFile(path, flag, perm)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
}

// readDirNoLinks is os.ReadDir of the folder opened refusing links, read
// through its descriptor, sorted by name. The entries are the open
// file's (their Info looks up dir/name), not those of a /proc/self/fd
// path: that names another folder, or none, once the descriptor is closed,
// and a walk asks the entries' Info after (TestPickerIncremental).
func readDirNoLinks(dir string) ([]os.DirEntry, error) {
	d, err := openNoLinks(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// dirNoLinks opens the folder dir, made (with its missing parents) when
// mk, each made one inside the folder opened before it.
func dirNoLinks(dir string, mk bool) (*os.File, error) {
	d, err := openNoLinks(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err == nil || !mk || !os.IsNotExist(err) { // "/" is always there: the climb ends
		return d, err
	}
	p, err := dirNoLinks(filepath.Dir(dir), true)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	name := filepath.Base(dir)
	if err := syscall.Mkdirat(int(p.Fd()), name, 0o755); err != nil && err != syscall.EEXIST {
		return nil, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	fd, err := syscall.Openat(int(p.Fd()), name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// writeFileNoLinks is writeFileAtomic inside the folder opened once, by
// its descriptor: the temporary file is made there and renamed over the
// name there, neither of which follows a link.
func writeFileNoLinks(path string, data []byte, perm fs.FileMode) error {
	d, err := dirNoLinks(filepath.Dir(path), true)
	if err != nil {
		return err
	}
	defer d.Close()
	return writeFileAtomic("/proc/self/fd/"+strconv.Itoa(int(d.Fd()))+"/"+filepath.Base(path), data, perm)
}

// removeNoLinks removes the file path names, inside its folder.
func removeNoLinks(path string) error {
	d, err := dirNoLinks(filepath.Dir(path), false)
	if err != nil {
		return err
	}
	defer d.Close()
	return os.Remove("/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + filepath.Base(path))
}

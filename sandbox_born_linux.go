package main

// sandbox_born_linux.go: when a file last changed, for the screen of
// repositories under the project (sandbox_newrepo.go).

import (
	"time"

	"golang.org/x/sys/unix"
)

// changedAt is p's change time (not followed, if a link): when it was made,
// written, re-moded or moved, which no command can set back (utimes sets
// only the times it is given, and the change time to now); false where
// the file system keeps none.
func changedAt(p string) (time.Time, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME, &st); err != nil || st.Mask&unix.STATX_CTIME == 0 {
		return time.Time{}, false
	}
	return time.Unix(st.Ctime.Sec, int64(st.Ctime.Nsec)), true
}

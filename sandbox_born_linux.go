package main

// sandbox_born_linux.go: a file's birth time, for the screen of
// repositories made under the project (sandbox_newrepo.go).

import (
	"time"

	"golang.org/x/sys/unix"
)

// bornAt is when p (not followed, if a link) was made; false where the file
// system keeps no birth time.
func bornAt(p string) (time.Time, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}, false
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec)), true
}

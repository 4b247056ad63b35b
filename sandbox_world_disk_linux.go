//go:build linux

package main

// The world's disk, watched. RLIMIT_FSIZE bounds one file, not how many
// a command writes: a loop of them fills the disk under the project, the
// world's /tmp (a folder of the session on the host) or a cache's upper
// layer, and with it the person's machine. No quota is ours to set
// without privilege, so lembas watches instead: while the world lives it
// reads the free space (statfs, a few microseconds) of each file system
// the world can write, every disk_check_ms, and compares it with the
// free space when the world started. Past sandbox.json's limits it kills
// the world's init — pid 1 of its namespace, so the kernel ends every
// process in it, a fork loop's too — and the commands that were running
// are told why. Nothing is scanned and nothing runs on a command's path.

import (
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// diskFS is one file system the world writes.
type diskFS struct {
	fd    int    // O_PATH on a root on it, for fstatfs (a root renamed is still read)
	where string // that root as the world sees it, for the note
	start uint64 // bytes free to the unprivileged when the world started
}

// diskWatchFor opens the file systems the plan writes, one each: the
// writable roots, and the session folder (the world's /tmp and /var/tmp,
// the caches' and git's upper layers), named /tmp in notes.
func diskWatchFor(plan worldPlan) []diskFS {
	seen := map[uint64]int{} // st_dev → its index in out
	var out []diskFS
	roots := append(append([]string{}, plan.Write...), plan.Session)
	for i, p := range roots {
		where := showRoots([]string{p})
		if i == len(roots)-1 {
			where = "/tmp"
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			continue
		}
		if j, ok := seen[st.Dev]; ok {
			out[j].where += ", " + where
			continue
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		start, ok := diskFree(fd)
		if !ok {
			unix.Close(fd)
			continue
		}
		seen[st.Dev] = len(out)
		out = append(out, diskFS{fd: fd, where: where, start: start})
	}
	return out
}

// diskFree is the bytes free to the unprivileged on fd's file system.
func diskFree(fd int) (uint64, bool) {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return 0, false
	}
	unit := uint64(st.Frsize) // what the block counts are in
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	return st.Bavail * unit, true
}

// diskNote is why the watch stops a world: a text of sandbox.json's and
// its values, filled with who it stopped when it is told.
type diskNote struct {
	key string
	kv  []any
}

func (n *diskNote) text(who string) string {
	return sandboxText(n.key, append([]any{"who", sandboxText(who)}, n.kv...)...)
}

// diskOver is why a world is past the limits: its files grown by more
// than written in all, or a file system it wrote left with less than
// floor free (or, where less than floor was free when the world started,
// half of that: the world is not killed for a disk it found full, and
// may still take some of it); nil while it is within them. A zero limit
// is not checked.
func diskOver(fss []diskFS, written, floor uint64) *diskNote {
	var grown uint64
	var where []string
	for _, f := range fss {
		free, ok := diskFree(f.fd)
		if !ok || free >= f.start {
			continue
		}
		used := f.start - free
		grown += used
		where = append(where, f.where)
		fl := floor
		if f.start <= floor {
			fl = f.start / 2
		}
		if floor > 0 && free < fl {
			return &diskNote{"disk_floor", []any{"free_mb", megabytes(free), "where", f.where, "floor_mb", megabytes(fl), "mb", megabytes(used)}}
		}
	}
	if written > 0 && grown > written {
		return &diskNote{"disk_written", []any{"mb", megabytes(grown), "where", strings.Join(where, ", "), "limit_mb", megabytes(written)}}
	}
	return nil
}

// megabytes is n in (decimal) megabytes, rounded.
func megabytes(n uint64) uint64 { return (n + 500_000) / 1_000_000 }

// watchDisk watches the world c's disk while it lives (see the file's
// comment); fss were read when it started, and are closed here.
func (w *world) watchDisk(c *worldConn, fss []diskFS) {
	defer func() {
		for _, f := range fss {
			unix.Close(f.fd)
		}
	}()
	lim := theSandboxSpec().Limits
	t := time.NewTicker(time.Duration(lim.DiskCheckMS) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.gone:
			return
		case <-t.C:
		}
		if n := diskOver(fss, lim.WrittenBytes, lim.FreeFloorBytes); n != nil {
			w.stopForDisk(c, n)
			return
		}
	}
}

// diskWatched says whether the world's disk is watched: a session's
// commands' world, with a limit set. An MCP server's world, which lives
// as long as the session, is not: it would take a command's writes for
// the server's and kill it.
func (w *world) diskWatched() bool {
	lim := theSandboxSpec().Limits
	return !w.exeByFD && lim.DiskCheckMS > 0 && (lim.WrittenBytes > 0 || lim.FreeFloorBytes > 0)
}

// stopForDisk kills the world c (its init: the kernel ends the rest) and
// keeps why, for the commands it ends (read gives them a SIGKILL's end)
// or, where none was running, for the next command.
func (w *world) stopForDisk(c *worldConn, n *diskNote) {
	w.mu.Lock()
	c.stopped = true
	if len(c.waits) == 0 {
		w.stopUntold = n.text("disk_who_left")
		w.stops = append(w.stops, w.stopUntold)
	} else {
		w.stops = append(w.stops, n.text("disk_who_command"))
	}
	w.mu.Unlock()
	c.proc.Kill()
}

// diskStopCount and diskStopsSince give a command the notes of the
// stops since it began, and one made while no command ran.
func (w *world) diskStopCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.stops)
}

func (w *world) diskStopsSince(n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	if w.stopUntold != "" {
		out = append(out, w.stopUntold)
		w.stopUntold = ""
	}
	for _, s := range w.stops[min(n, len(w.stops)):] {
		if len(out) == 0 || s != out[0] {
			out = append(out, s)
		}
	}
	return out
}

// diskRoots names the file systems the watch reads (a root on each), for
// `sandbox check`; none where the disk is not watched.
func (w *world) diskRoots() []string {
	if !w.diskWatched() {
		return nil
	}
	var out []string
	for _, f := range diskWatchFor(w.plan) {
		out = append(out, f.where)
		unix.Close(f.fd)
	}
	return out
}

// oomScoreAdj is the oom_score_adj the world's processes have, as its
// init set it (0: left as it was), for `sandbox check`.
func (w *world) oomScoreAdj() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.oomAdj
}

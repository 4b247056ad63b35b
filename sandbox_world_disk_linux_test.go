//go:build linux

package main

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDiskFloorOfAFullDisk: on a disk that had less than the floor free
// when the world started, the world is not stopped for being there (no
// command could run, not even the rm that frees it), only once it has
// taken half of what was free; on one with more, below the floor is
// below the floor.
func TestDiskFloorOfAFullDisk(t *testing.T) {
	fd, err := unix.Open(os.TempDir(), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	free, ok := diskFree(fd)
	if !ok || free < 1<<30 {
		t.Skipf("%d bytes free", free)
	}
	fss := []diskFS{{fd: fd, where: "/tmp", start: free}}
	if n := diskOver(fss, 0, 4*free); n != nil {
		t.Errorf("a world that found the disk below its floor was stopped at once: %s", n.text("disk_who_command"))
	}
	fss[0].start = 3 * free // as if it had taken two thirds of the disk's free space since
	if n := diskOver(fss, 0, 4*free); n == nil || n.key != "disk_floor" {
		t.Errorf("a world that took more than half of what was free was not stopped: %v", n)
	}
	fss[0].start = free + free/4
	if n := diskOver(fss, 0, free+free/8); n == nil || n.key != "disk_floor" {
		t.Errorf("a world that took the disk below its floor was not stopped: %v", n)
	}
}

//go:build linux

package main

import (
	"os"
	"strings"
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

// TestWorldOOMRefused: where the kernel refuses the world's oom_score_adj
// (here one below what an unprivileged process may set), the world still
// starts, its commands run, and `sandbox check` claims no OOM order.
func TestWorldOOMRefused(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	if ok, why := sandboxNamespacesOS(); !ok {
		t.Skipf("no namespaces: %s", why)
	}
	sp := theSandboxSpec()
	old := sp.Limits
	sp.Limits.OOMScoreAdj = -500 // lowering needs CAP_SYS_RESOURCE outside the world's namespace
	t.Cleanup(func() { sp.Limits = old })
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	if tb.sandbox.theWorld() == nil {
		t.Fatalf("the world did not start: %v", tb.sandbox.worldErr)
	}
	if r := sandboxBash(t, tb, "auto", "echo ran; cat /proc/self/oom_score_adj"); !strings.Contains(r.Text, "ran") || strings.Contains(r.Text, "-500") {
		t.Errorf("a command in the world: %s", r.Text)
	}
	if rep := tb.sandbox.report("auto"); !strings.Contains(rep, "left as it is") || strings.Contains(rep, "oom_score_adj -500") {
		t.Errorf("check claims an OOM order that was refused:\n%s", rep)
	}
}

package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestHoldGC: holdGC stops collection until its limit, and the first
// collection gives the usual collector back; a GOGC or GOMEMLIMIT of the
// person's is left alone.
func TestHoldGC(t *testing.T) {
	// A hold of an in-process session made by an earlier test ends with
	// the next collection.
	waitGCReleased(t)
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	defer debug.SetMemoryLimit(math.MaxInt64)
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		if holdGC(64<<20, func(k string) string { return map[string]string{env: "50"}[k] }) {
			t.Errorf("held with %s set", env)
		}
	}
	if holdGC(0, func(string) string { return "" }) {
		t.Error("held with no limit")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d after refusals, want 100", got)
	}
	if !holdGC(64<<20, func(string) string { return "" }) {
		t.Fatal("did not hold")
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GC percent %d while held, want -1 (off)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("memory limit %d, want %d", got, 64<<20)
	}
	// A second hold while one is in force would take "off" for the percent
	// to give back, and leave collection off for good.
	if holdGC(64<<20, func(string) string { return "" }) {
		t.Error("a second hold was taken while the first was in force")
	}
	waitGCReleased(t)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d after the first collection, want none", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d after the first collection, want 100 back", got)
	}
}

// waitGCReleased collects until a hold's cleanup has run (the first
// collection queues it; it runs on a goroutine of the runtime's).
func waitGCReleased(t *testing.T) {
	deadline := time.Now().Add(10 * time.Second)
	for gcHeld.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the collector was never given back")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

package main

// proc_gc.go: a short run collects no garbage. A -p run of a few steps
// allocates 4–5 MB in all, and Go's first collection comes at a 4 MB
// heap: it frees little the run would use again, and its marking costs
// CPU and touches memory the run would not (the GC's span sets, the
// binary's stack maps): about 1 MB of peak RSS on the bench task
// (docs/measurements.md). holdGC turns collection off until the Go
// runtime holds limit bytes (the memory limit makes that first
// collection); the collection's cleanup then gives back the usual
// collector, so a long run is collected as any other. A person's GOGC or
// GOMEMLIMIT in the environment is theirs: holdGC leaves both alone.
//
// The ground (floor 1): it calls nothing above it.

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// holdGC stops collection until the runtime holds limit bytes; a limit of
// 0 or less, or GOGC/GOMEMLIMIT set, leaves the collector as it is. It
// reports whether it held.
func holdGC(limit int64, getenv func(string) string) bool {
	if limit <= 0 || getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return false
	}
	// One hold at a time: a second one's "previous" percent would be the
	// first's off, and its cleanup would leave collection off for good
	// (sessions made in one process, as the tests make them).
	if !gcHeld.CompareAndSwap(false, true) {
		return false
	}
	prev := debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	// The sentinel is unreachable at once, so the first collection (the
	// one the limit makes) runs its cleanup: the usual collector again.
	sentinel := new(gcSentinel)
	runtime.AddCleanup(sentinel, releaseGC, prev)
	return true
}

// gcSentinel is big enough to be an object of its own (not in the tiny
// allocator's shared blocks, which are freed together).
type gcSentinel struct{ _ [16]byte }

// releaseGC gives the collector back its percent and no limit.
func releaseGC(percent int) {
	debug.SetGCPercent(percent)
	debug.SetMemoryLimit(math.MaxInt64)
	gcHeld.Store(false)
}

// gcHeld is set while a hold is in force.
var gcHeld atomic.Bool

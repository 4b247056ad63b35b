package main

// link_idle.go: what an idle service gives back. ws.idle_release_ms after
// the link's last request or notification (and at each ping while nothing
// works), the service returns the Go heap's free pages to the system and
// drops the binary's own pages from its resident set
// (proc_pages_linux.go): start-up and the last turn leave most of the 11
// MB binary mapped, though waiting for the next request runs a few
// hundred KB of it. Once per quiet spell; the next request's first steps
// take the pages they use back (minor faults, well under a millisecond).

import (
	"runtime/debug"
	"time"
)

type linkIdle struct {
	mu       mutex
	timer    *time.Timer
	released bool // since the last request or notification
}

// touched starts the idle clock again: a request or notification came.
func (svc *linkService) touched() {
	d := time.Duration(svc.sp.WS.IdleReleaseMS) * time.Millisecond
	svc.idle.mu.Lock()
	defer svc.idle.mu.Unlock()
	svc.idle.released = false
	if d <= 0 {
		return
	}
	if svc.idle.timer == nil {
		svc.idle.timer = time.AfterFunc(d, svc.idleRelease)
	} else {
		svc.idle.timer.Reset(d)
	}
}

// idleRelease gives memory back when no request is being answered and no
// turn runs, once per quiet spell; when something works it waits for the
// next ping.
func (svc *linkService) idleRelease() {
	if svc.inflight.Load() > 0 || svc.busy() {
		return
	}
	svc.idle.mu.Lock()
	done := svc.idle.released
	svc.idle.released = true
	svc.idle.mu.Unlock()
	if done {
		return
	}
	debug.FreeOSMemory()
	releaseBinaryPages()
	tracef("service idle: memory released")
}

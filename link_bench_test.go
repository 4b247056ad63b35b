package main

// Measurements of the link (go test -bench Link -run '^$'): the service's
// memory idle and with 10 sessions open, events pushed per second, and the
// time from the instance coming back to the link being up again.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssMB reads a process's resident set from /proc (Linux only).
func rssMB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return -1
}

// BenchmarkLinkServiceRSS runs the built binary's `lembas service` against
// the fake instance and reads its RSS once linked and idle, and again with
// 10 sessions open.
func BenchmarkLinkServiceRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc")
	}
	bin := lembasBin(b)
	e := newLinkEnv(b, "")
	cmd := exec.Command(bin, "service", "--login", "test")
	cmd.Env = os.Environ()
	var logs strings.Builder
	cmd.Stderr = &syncWriter{b: &logs}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	e.logs.add("(subprocess)")
	l := e.link()
	sleepCtx(b.Context(), 2*time.Second) // let start-up garbage go before reading
	runtime.GC()
	idle := rssMB(cmd.Process.Pid)
	for i := 0; i < 10; i++ {
		e.newSession(l, e.proj, "edit")
	}
	sleepCtx(b.Context(), 2*time.Second)
	ten := rssMB(cmd.Process.Pid)
	for i := 0; i < b.N; i++ {
		l.result("_lembas/session/status", map[string]any{"sessionId": "ses_none"})
	}
	b.ReportMetric(idle, "idle_RSS_MB")
	b.ReportMetric(ten, "10sessions_RSS_MB")
}

// BenchmarkLinkEvents pushes b.N _lembas/event notifications through the
// service to the fake instance and waits until the last one arrived.
func BenchmarkLinkEvents(b *testing.B) {
	e := newLinkEnv(b, "")
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "edit")
	ev := map[string]any{"type": "text", "text": "a piece of an answer, as it streams"}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		e.svc.event(sid, ev)
	}
	e.svc.event(sid, map[string]any{"type": "marker"})
	l.waitNote("the last event", isEvent("marker"))
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkLinkRelink: the instance goes away and comes back; the time
// until the device's next link is up and initialized, with the real
// backoff (the first retry within about a second).
func BenchmarkLinkRelink(b *testing.B) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newLinkEnv(b, "")
		l0, _ := findLogin("test")
		e.svc = newLinkService(l0, e.logs.add)
		ctx, cancel := context.WithCancel(context.Background())
		e.cancel, e.done = cancel, make(chan error, 1)
		go func() { e.done <- e.svc.run(ctx) }()
		e.link()
		b.StartTimer()
		e.fi.kill()
		e.fi.restart()
		t0 := time.Now()
		e.link()
		total += time.Since(t0)
		b.StopTimer()
		e.stop()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/relink")
}

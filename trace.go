package main

// trace.go: LEMBAS_TRACE=1 prints where a run's wall time and memory go,
// to stderr, one line a mark: milliseconds since main began,
// since the previous mark, and what happened (the -p start, each model
// request, each tool call, each save and fsync, the sandbox's start). At
// the end (traceEnd) it adds the process's peak RSS and the Go heap's
// figures. Unset, a mark costs one boolean test. For measuring, never for
// behaviour: nothing reads what it prints.
//
// The ground (floor 1): it calls nothing above it.

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

var (
	traceOn    bool
	traceStart time.Time
	traceMu    mutex
	traceLast  time.Duration
)

// traceInit reads LEMBAS_TRACE; main calls it first, so start-up's init
// does none of it (TestStartupDoesNoWork) and the clock starts at main.
func traceInit() {
	traceOn = os.Getenv("LEMBAS_TRACE") != ""
	traceStart = time.Now()
}

// tracef prints one mark when LEMBAS_TRACE is set.
func tracef(format string, args ...any) {
	if !traceOn {
		return
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	now := time.Since(traceStart)
	rss, file := traceRSS()
	fmt.Fprintf(os.Stderr, "trace %7.2fms %+7.2fms rss %5dKB file %5dKB %s\n", ms(now), ms(now-traceLast), rss, file, fmt.Sprintf(format, args...))
	traceLast = now
}

// traceSince prints a mark for something that took since t0.
func traceSince(t0 time.Time, format string, args ...any) {
	if traceOn {
		tracef("%s (%.2fms)", fmt.Sprintf(format, args...), ms(time.Since(t0)))
	}
}

// traceEnd prints the process's memory: the kernel's peak and current
// resident set (file-backed pages of the binary and anonymous ones apart)
// and the Go heap.
func traceEnd() {
	if !traceOn {
		return
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	status := ""
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"VmHWM", "VmRSS", "RssAnon", "RssFile"} {
				if strings.HasPrefix(l, k+":") {
					status += " " + k + "=" + strings.Join(strings.Fields(l[len(k)+1:]), "")
				}
			}
		}
	}
	tracef("end:%s heap_sys=%dKB heap_inuse=%dKB stack_sys=%dKB sys=%dKB gc=%d", status,
		m.HeapSys>>10, m.HeapInuse>>10, m.StackSys>>10, m.Sys>>10, m.NumGC)
	if traceAtEnd != nil {
		traceAtEnd()
	}
}

// traceAtEnd, when set (trace_memprof.go, built with -tags memprof), runs
// after the end mark: a heap profile of the run.
var traceAtEnd func()

// traceRSS is the resident set now and the part of it that is file
// pages (the binary's own, mostly), in KB (0 where /proc has no statm).
func traceRSS() (rss, file int) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, 0
	}
	n, _ := strconv.Atoi(f[1])
	s, _ := strconv.Atoi(f[2])
	return n * os.Getpagesize() >> 10, s * os.Getpagesize() >> 10
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

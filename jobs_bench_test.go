package main

// What background work costs. Run:
//
//	go test -run XXX -bench 'BenchmarkSubagentOverhead' -benchmem .
//	go test -run XXX -bench 'BenchmarkFourSubagentsMemory' -benchtime 1x .
//	go test -run XXX -bench 'BenchmarkReplLinesWithJobFlood' .

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchEngine is newTestEngine for a benchmark.
func benchEngine(b *testing.B, f *fakeModel, mode string) *engine {
	tb, err := newToolbox(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	tb.shell = "/bin/sh"
	st := newStore(b.TempDir(), nil)
	b.Cleanup(st.close)
	sess, err := st.create(tb.root)
	if err != nil {
		b.Fatal(err)
	}
	sess.System, _ = systemPrompt(tb.root, mode, tb.shell, nil)
	e := newEngine(testRef(f.url()), tb, newPermissions(mode, tb.root, true), st, sess, theSpec().Loop.Budgets["cli"].MaxSteps)
	e.ask, e.emit = headlessApprover{}, func(event) {}
	b.Cleanup(func() { e.stopJobs() })
	return e
}

// BenchmarkSubagentOverhead: one turn whose model hands a task to a
// subagent that answers at once, against the same turn answered by the
// parent itself. Reported: the subagent's request bytes and the parent's
// first request bytes (what the subagent sends over the parent's own).
func BenchmarkSubagentOverhead(b *testing.B) {
	for _, withTask := range []bool{false, true} {
		b.Run(fmt.Sprintf("task=%v", withTask), func(b *testing.B) {
			f := newFakeModel(b)
			var childBytes, parentBytes int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := benchEngine(b, f, "auto")
				if withTask {
					f.push(callsReply(fakeCall{"task", map[string]any{"description": "answer", "prompt": "Say ok."}}), textReply("ok"), textReply("ok"))
				} else {
					f.push(textReply("ok"))
				}
				n := len(f.got())
				b.StartTimer()
				e.runTurn(context.Background(), "say ok")
				b.StopTimer()
				reqs := f.got()[n:]
				parentBytes = len(reqs[0].Raw)
				if withTask {
					childBytes = len(reqs[1].Raw)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(parentBytes), "parent-req-B")
			if withTask {
				b.ReportMetric(float64(childBytes), "subagent-req-B")
			}
		})
	}
}

// BenchmarkFourSubagentsMemory: heap and goroutines while four background
// subagents are running (each waits in its model request).
func BenchmarkFourSubagentsMemory(b *testing.B) {
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		arrived.Done()
		<-release
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, textReply("done").body)
	}))
	b.Cleanup(srv.Close)
	for i := 0; i < b.N; i++ {
		f := newFakeModel(b)
		e := benchEngine(b, f, "auto")
		e.jx.models = func(ctx context.Context, name string) (*modelRef, error) {
			return newModelRef(&connection{Name: "two", BaseURL: srv.URL + "/v1", http: newHTTPClient()}, "helper"), nil
		}
		e.sess.Turns = append(e.sess.Turns, turn{Prompt: "use helper"})
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		arrived.Add(4)
		for k := 0; k < 4; k++ {
			res := toolTask(e, context.Background(), theSpec().Tools["task"],
				[]byte(fmt.Sprintf(`{"description":"d%d","prompt":"wait","model":"helper","background":true}`, k)))
			if res.IsError {
				b.Fatal(res.Text)
			}
		}
		arrived.Wait()
		runtime.GC()
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		b.ReportMetric(float64(int64(during.HeapInuse)-int64(before.HeapInuse))/1024, "heap-KiB-for-4")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines-for-4")
		close(release)
		for _, j := range e.jobs().list() {
			<-j.doneCh()
		}
		release = make(chan struct{})
	}
}

// BenchmarkReplLinesWithJobFlood: lines of a streamed answer through the
// REPL's renderer, quiet and while a background job floods its output.
func BenchmarkReplLinesWithJobFlood(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("the flood runs through a POSIX shell")
	}
	for _, flood := range []bool{false, true} {
		b.Run(fmt.Sprintf("flood=%v", flood), func(b *testing.B) {
			pr, pw := io.Pipe()
			b.Cleanup(func() { pw.Close() })
			r, _ := benchRepl(b, false, pr, io.Discard)
			if flood {
				res := bashWithJobs(r.e, r.e.tb, context.Background(), theSpec().Tools["bash"], "yes flood", 60, true, nil, nil)
				if res.IsError {
					b.Fatal(res.Text)
				}
				j := r.e.jobs().get("j1")
				for { // wait until it is writing
					j.mu.Lock()
					n := j.out.end()
					j.mu.Unlock()
					if n > 1<<20 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
			line := strings.Repeat("word ", 15) + "\n"
			r.running = true
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				r.onEvent(event{Type: evText, Text: line})
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "lines/s")
			b.StopTimer()
			if flood {
				j := r.e.jobs().get("j1")
				j.mu.Lock()
				b.ReportMetric(float64(j.out.end()>>20), "job-MiB-written")
				j.mu.Unlock()
			}
		})
	}
}

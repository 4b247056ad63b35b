package main

// What the REPL adds: keystroke to echo through the filter and the line
// editor, first token to screen through the renderer, and the memory a
// long session holds. Run:
//
//	go test -run XXX -bench 'BenchmarkRepl' -benchmem .
//	go test -run XXX -bench BenchmarkRepl200Turns -benchtime 1x .

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// chanWriter tells the benchmark each time the REPL writes.
type chanWriter struct{ c chan struct{} }

func (w chanWriter) Write(p []byte) (int, error) {
	select {
	case w.c <- struct{}{}:
	default:
	}
	return len(p), nil
}

// benchRepl makes a REPL on a small project without starting its loop.
func benchRepl(b *testing.B, tty bool, in io.Reader, out io.Writer) (*repl, *fakeModel) {
	fm := newFakeModel(b)
	replEnv(b, fm)
	proj := b.TempDir()
	proj, _ = filepath.EvalSymlinks(proj)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	setTrust(proj, true)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	f := &runFlags{sessionOpts: sessionOpts{mode: "manual", cwd: proj}}
	e, cleanup, err := newSessionEngine(ctx, &f.sessionOpts, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cleanup)
	cfg, _ := loadConfig()
	return newRepl(ctx, e, f, cfg, replIO{in: in, out: out, tty: tty, width: 100}), fm
}

// BenchmarkReplKeystrokeEcho: one key typed (a letter, then a backspace,
// in turn) until the editor has echoed it.
func BenchmarkReplKeystrokeEcho(b *testing.B) {
	pr, pw := io.Pipe()
	w := chanWriter{make(chan struct{}, 1)}
	r, _ := benchRepl(b, true, pr, w)
	go r.readLines()
	b.Cleanup(func() { pw.Close() })
	pw.Write([]byte("x")) // the first read draws the prompt
	<-w.c
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := []byte("a")
		if i%2 == 1 {
			k = []byte{127}
		}
		pw.Write(k)
		<-w.c
	}
}

// BenchmarkReplFirstToken: a model request starts and its first piece of
// text reaches the screen (the REPL's part of first-token latency).
func BenchmarkReplFirstToken(b *testing.B) {
	for _, tty := range []bool{false, true} {
		b.Run(fmt.Sprintf("tty=%v", tty), func(b *testing.B) {
			pr, pw := io.Pipe()
			b.Cleanup(func() { pw.Close() })
			r, _ := benchRepl(b, tty, pr, io.Discard)
			r.running = true
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.onEvent(event{Type: evStep, Step: 1})
				r.onEvent(event{Type: evText, Text: "Hello "})
				if i%16 == 15 {
					r.onEvent(event{Type: evText, Text: "\n"})
				}
			}
		})
	}
}

// BenchmarkRepl200Turns runs a 200-turn session through the REPL on plain
// lines against the fake model and reports the heap it holds afterwards.
func BenchmarkRepl200Turns(b *testing.B) {
	for i := 0; i < b.N; i++ {
		pr, pw := io.Pipe()
		out := newSyncBuffer()
		r, fm := benchRepl(b, false, pr, out)
		for n := 0; n < 200; n++ {
			fm.push(textReply(fmt.Sprintf("Answer %d: a reply of a few words to keep in the session.", n)))
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan error, 1)
		go func() { r.start(); done <- r.run("") }()
		for n := 0; n < 200; n++ {
			fmt.Fprintf(pw, "question %d, with @a.txt attached\n", n)
			waitFor(b, out, fmt.Sprintf("Answer %d:", n))
		}
		pw.Close()
		<-done
		// What the test keeps is not the REPL's: the fake model's record
		// of every request, and the transcript.
		fm.mu.Lock()
		fm.requests = nil
		fm.mu.Unlock()
		out.mu.Lock()
		out.b = strings.Builder{}
		out.mu.Unlock()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc), "heap-bytes")
		b.ReportMetric(float64(int64(ms.HeapAlloc)-int64(before.HeapAlloc)), "heap-growth-bytes")
		b.ReportMetric(float64(len(r.e.sess.Messages)), "messages")
		runtime.KeepAlive(r)
	}
}

// waitFor waits until out contains s.
func waitFor(b *testing.B, out *syncBuffer, s string) {
	for {
		if strings.Contains(out.String(), s) {
			return
		}
		<-out.notify
	}
}

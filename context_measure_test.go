package main

// The measurement of issue 5: one scripted 40-step session that re-reads
// and re-searches files, run with hygiene on and off. It reports the bytes
// sent to the model (and their ratio) and the share of each request that
// is an unchanged prefix of the previous one:
//
//	go test -run '^$' -bench BenchmarkHygiene -benchtime 1x
//
// TestHygieneMeasure asserts what the numbers must show.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// measureProject is six files of 80 lines each.
func measureProject(t testing.TB) string {
	root := t.TempDir()
	for i := 0; i < 6; i++ {
		var b strings.Builder
		for l := 1; l <= 80; l++ {
			fmt.Fprintf(&b, "// file %d line %d: some code that does something useful here\n", i, l)
			if l%20 == 0 {
				b.WriteString("// TODO: look at this\n")
			}
		}
		os.MkdirAll(filepath.Join(root, "src"), 0o755)
		os.WriteFile(filepath.Join(root, "src", fmt.Sprintf("f%d.go", i)), []byte(b.String()), 0o644)
	}
	r, _ := filepath.EvalSymlinks(root)
	return r
}

// measureScript is the 40 steps: reads, re-reads, ranges inside reads,
// searches and listings repeated, and two edits that change what a later
// read sees.
func measureScript() []fakeReply {
	var out []fakeReply
	for s := 0; s < 40; s++ {
		file := fmt.Sprintf("src/f%d.go", s%6)
		var c fakeCall
		switch s % 8 {
		case 0, 3:
			c = fakeCall{"read", map[string]any{"path": file}}
		case 1:
			c = fakeCall{"grep", map[string]any{"pattern": "TODO"}}
		case 2:
			c = fakeCall{"read", map[string]any{"path": file, "offset": 10, "limit": 20}}
		case 4:
			c = fakeCall{"list", map[string]any{}}
		case 5:
			c = fakeCall{"glob", map[string]any{"pattern": "src/*.go"}}
		case 6:
			c = fakeCall{"read", map[string]any{"path": "src/f0.go"}}
		case 7:
			if s == 15 || s == 31 {
				c = fakeCall{"edit", map[string]any{"path": "src/f0.go", "old_string": fmt.Sprintf("file 0 line %d:", s), "new_string": fmt.Sprintf("file 0 line %d (edited):", s)}}
			} else {
				c = fakeCall{"grep", map[string]any{"pattern": "line 1[0-9]:", "include": "*.go"}}
			}
		}
		out = append(out, callsReply(c))
	}
	return append(out, textReply("Done."))
}

// measureSession runs the session and answers the bytes sent and, per
// request after the first, the share that is the previous request's prefix.
func measureSession(t testing.TB, hygiene bool) (int, int, []float64) {
	f := newFakeModel(t)
	e := testEngine(t, f, measureProject(t), "auto")
	e.hygiene = hygiene
	f.push(measureScript()...)
	if out := e.runTurn(context.Background(), "look through src, tidy f0.go"); out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := f.got()
	total, msgs := 0, 0
	var shares []float64
	for i, r := range reqs {
		total += len(r.Raw)
		for _, m := range r.Body.Messages {
			msgs += len(m)
		}
		if i > 0 {
			if !prefixHolds(t, reqs[i-1].Raw, r.Raw) {
				t.Errorf("request %d does not start with request %d's bytes", i, i-1)
			}
			head, _ := splitAtMessages(t, reqs[i-1].Raw)
			n := sharedPrefixLen(reqs[i-1].Raw, r.Raw)
			if n > len(head) {
				n = len(head)
			}
			shares = append(shares, float64(n)/float64(len(r.Raw)))
		}
	}
	return total, msgs, shares
}

func stats(xs []float64) (mean, lo float64) {
	lo = 1
	for _, x := range xs {
		mean += x
		lo = min(lo, x)
	}
	return mean / float64(len(xs)), lo
}

func TestHygieneMeasure(t *testing.T) {
	on, _, sharesOn := measureSession(t, true)
	off, _, _ := measureSession(t, false)
	if len(sharesOn) != 40 {
		t.Fatalf("%d requests", len(sharesOn)+1)
	}
	if ratio := float64(on) / float64(off); ratio >= 0.9 {
		t.Errorf("hygiene saves too little: %d / %d bytes = %.3f", on, off, ratio)
	}
	if mean, lo := stats(sharesOn); lo < 0.5 || mean < 0.9 {
		t.Errorf("prefix share mean %.3f, min %.3f", mean, lo)
	}
}

func BenchmarkHygiene(b *testing.B) {
	for i := 0; i < b.N; i++ {
		on, msgOn, sharesOn := measureSession(b, true)
		off, msgOff, sharesOff := measureSession(b, false)
		meanOn, loOn := stats(sharesOn)
		meanOff, loOff := stats(sharesOff)
		b.ReportMetric(float64(on), "bytes-on")
		b.ReportMetric(float64(off), "bytes-off")
		b.ReportMetric(float64(on)/float64(off), "ratio")
		b.ReportMetric(float64(msgOn)/float64(msgOff), "messages-ratio")
		b.ReportMetric(meanOn, "prefix-mean-on")
		b.ReportMetric(loOn, "prefix-min-on")
		b.ReportMetric(meanOff, "prefix-mean-off")
		b.ReportMetric(loOff, "prefix-min-off")
	}
}

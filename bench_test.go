package main

// Benchmarks of the whole binary (never timed assertions in tests). Each
// figure of the side-by-side bench has one here; the commands:
//
//	go test -run '^$' -bench 'Version|ScriptedTask|BinarySize' -benchtime 20x .
//	go test -run '^$' -bench SearchTurn -benchtime 7x .
//	go test -run '^$' -bench FloorRSS -benchtime 9x .   (the floor ScriptedTask's RSS is read against)
//
// LEMBAS_BENCH_BIN names the binary to run (a stripped build, as the bench
// makes it: go build -trimpath -ldflags='-s -w'); without it the test
// binary's own build of lembas runs. BenchmarkScriptedTask reports the
// bytes it sent the model (all, and the first request's), the
// peak RSS and Go heap of the -p process as it measured them itself
// (LEMBAS_TRACE's last line: the kernel's VmHWM), since rusage from here
// is unreliable: a child that Go starts with vfork takes on the test
// process's RSS as its maxrss when it execs. The side-by-side bench
// (../shared/bench/run.sh, GNU time) measures the same figure from outside.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchBin is the binary the whole-binary benchmarks run.
func benchBin(b *testing.B) string {
	if p := os.Getenv("LEMBAS_BENCH_BIN"); p != "" {
		return p
	}
	return lembasBin(b)
}

func BenchmarkVersion(b *testing.B) {
	bin := benchBin(b)
	for i := 0; i < b.N; i++ {
		if err := exec.Command(bin, "--version").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// traceFigure is one key=NNNkB (or NNNKB) figure of LEMBAS_TRACE's end line.
func traceFigure(stderr, key string) (float64, bool) {
	i := strings.LastIndex(stderr, " "+key+"=")
	if i < 0 {
		return 0, false
	}
	v := stderr[i+len(key)+2:]
	n := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if n <= 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(v[:n], 64)
	return f, err == nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkScriptedTask is the bench's edit task (list, read, grep, edit,
// cat, answer) through the binary against the fake model: wall time per
// run, and the median peak RSS and heap of the -p process.
func BenchmarkScriptedTask(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("POSIX shell")
	}
	bin := benchBin(b)
	f := newFakeModel(b)
	var rss, heap []float64
	var sent, first int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		done := len(f.got())
		scriptTask(f)
		proj := b.TempDir()
		os.MkdirAll(filepath.Join(proj, "src"), 0o755)
		os.WriteFile(filepath.Join(proj, "src/app.txt"), []byte("status: TODO\n"), 0o644)
		cmd := exec.Command(bin, "--mode", "auto", "-p", "replace TODO with DONE in src/app.txt, then cat it")
		cmd.Dir = proj
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "SHELL=/bin/sh", "OPENAI_BASE_URL=" + f.url(),
			"LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + b.TempDir(), "XDG_CONFIG_HOME=" + b.TempDir(), "LEMBAS_TRACE=1"}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b.StartTimer()
		if out, err := cmd.Output(); err != nil {
			b.Fatalf("%v: %s %s", err, out, stderr.String())
		}
		b.StopTimer()
		if v, ok := traceFigure(stderr.String(), "VmHWM"); ok {
			rss = append(rss, v)
		}
		if v, ok := traceFigure(stderr.String(), "heap_inuse"); ok {
			heap = append(heap, v)
		}
		sent, first = 0, 0
		for j, q := range f.got()[done:] {
			if j == 0 {
				first = len(q.Raw)
			}
			sent += len(q.Raw)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(sent), "bytes-sent")
	b.ReportMetric(float64(first), "first-request-bytes")
	if len(rss) > 0 {
		b.ReportMetric(median(rss)/1024, "peak-rss-MB")
	}
	if len(heap) > 0 {
		b.ReportMetric(median(heap)/1024, "heap-inuse-MB")
	}
}

// BenchmarkFloorRSS is the memory floor BenchmarkScriptedTask's peak RSS
// is read against: a Go program, built as the bench builds lembas
// (stripped, CGO off), whose only work is what any agent's run must do —
// six 10 KB JSON POSTs over loopback HTTP (to an httptest server in the
// same process) — reporting its own VmHWM, anonymous and file pages.
func BenchmarkFloorRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("/proc/self/status")
	}
	dir := b.TempDir()
	src := `package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
)

func main() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("{}"))
	}))
	body, _ := json.Marshal(map[string]any{"messages": strings.Repeat("x", 10000)})
	for i := 0; i < 6; i++ {
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	st, _ := os.ReadFile("/proc/self/status")
	fmt.Print(string(st))
}
`
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module floor\n\ngo 1.21\n"), 0o644)
	bin := filepath.Join(dir, "floor")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, msg)
	}
	var hwm, anon, file []float64
	for i := 0; i < b.N; i++ {
		out, err := exec.Command(bin).Output()
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []struct {
			key string
			to  *[]float64
		}{{"VmHWM:", &hwm}, {"RssAnon:", &anon}, {"RssFile:", &file}} {
			_, rest, _ := strings.Cut(string(out), f.key)
			if v, err := strconv.ParseFloat(strings.Fields(rest + " 0")[0], 64); err == nil {
				*f.to = append(*f.to, v)
			}
		}
	}
	b.ReportMetric(median(hwm)/1024, "peak-rss-MB")
	b.ReportMetric(median(anon)/1024, "anon-MB")
	b.ReportMetric(median(file)/1024, "file-MB")
}

// BenchmarkBinarySize builds lembas as the bench does (stripped) and
// reports its size; the time is the build's, not a figure.
func BenchmarkBinarySize(b *testing.B) {
	out := filepath.Join(b.TempDir(), "lembas")
	var size int64
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, msg)
		}
		st, err := os.Stat(out)
		if err != nil {
			b.Fatal(err)
		}
		size = st.Size()
	}
	b.ReportMetric(float64(size)/1e6, "MB")
}

// BenchmarkSearchTurn is a search as the person waits for it: a -p turn
// whose model calls one grep (a literal), glob or list over a big tree
// ($LEMBAS_BENCH_TREE, else Go's own $GOROOT/src), minus a turn that calls
// no tool, over ripgrep doing the same search alone (rg -n, rg --files).
// One round runs every variant once, interleaved; each figure is the
// median of the rounds (b.N of them: -benchtime 7x gives medians of 7).
// grep runs twice: with ripgrep on PATH (rg) and without it (go,
// LEMBAS_NO_RG=1). Reported: <variant>-ms (the turn's extra wall time),
// rg-<tool>-ms, and <variant>-x-rg, the ratio the goals are set on.
func BenchmarkSearchTurn(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("POSIX tools")
	}
	root := os.Getenv("LEMBAS_BENCH_TREE")
	if root == "" {
		root = filepath.Join(runtime.GOROOT(), "src")
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		b.Skip("no tree to search: set LEMBAS_BENCH_TREE")
	}
	bin := benchBin(b)
	f := newFakeModel(b)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "SHELL=/bin/sh", "OPENAI_BASE_URL=" + f.url(),
		"LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + b.TempDir(), "XDG_CONFIG_HOME=" + b.TempDir()}
	turn := func(call *fakeCall, extra ...string) float64 {
		if call != nil {
			f.push(callsReply(*call))
		}
		f.push(textReply("done"))
		cmd := exec.Command(bin, "--mode", "auto", "-p", "search")
		cmd.Dir, cmd.Env = root, append(slices.Clone(env), extra...)
		if v := os.Getenv("LEMBAS_TRACE"); v != "" {
			cmd.Env = append(cmd.Env, "LEMBAS_TRACE="+v)
		}
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		d := float64(time.Since(t0).Microseconds()) / 1000
		if os.Getenv("LEMBAS_TRACE") != "" {
			fmt.Fprintf(os.Stderr, "%v %s:\n%s", call, extra, out) // where the turn's time went
		}
		return d
	}
	rg := rgPath()
	rgRun := func(args ...string) float64 {
		cmd := exec.Command(rg, args...)
		cmd.Dir = root
		t0 := time.Now()
		cmd.Run() // exit 1 is "nothing found"
		return float64(time.Since(t0).Microseconds()) / 1000
	}
	type variant struct {
		name  string
		call  fakeCall
		extra []string
		rg    []string // ripgrep doing the same alone
	}
	vs := []variant{
		{"grep-rg", fakeCall{"grep", map[string]any{"pattern": "NewReader"}}, nil, []string{"-n", "NewReader"}},
		{"grep-go", fakeCall{"grep", map[string]any{"pattern": "NewReader"}}, []string{"LEMBAS_NO_RG=1"}, []string{"-n", "NewReader"}},
		{"glob", fakeCall{"glob", map[string]any{"pattern": "*_test.go"}}, nil, []string{"--files", "-g", "*_test.go"}},
		{"list", fakeCall{"list", map[string]any{"path": "."}}, nil, []string{"--files"}},
	}
	base := []float64{}
	turns := map[string][]float64{}
	rgs := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		base = append(base, turn(nil))
		for _, v := range vs {
			c := v.call
			turns[v.name] = append(turns[v.name], turn(&c, v.extra...))
			if rg != "" {
				rgs[v.name] = append(rgs[v.name], rgRun(v.rg...))
			}
		}
	}
	none := median(base)
	b.ReportMetric(none, "none-ms")
	for _, v := range vs {
		extra := median(turns[v.name]) - none
		b.ReportMetric(extra, v.name+"-ms")
		if r := median(rgs[v.name]); r > 0 {
			b.ReportMetric(r, "rg-"+v.name+"-ms")
			b.ReportMetric(extra/r, v.name+"-x-rg")
		}
	}
}

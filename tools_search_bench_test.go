//go:build unix

package main

// Benchmarks of the search tools on a large tree, each next to ripgrep
// doing the same work in the same run:
//
//	go test -run '^$' -bench 'BenchmarkSearch' -benchtime 10x .
//
// The tree is $LEMBAS_BENCH_TREE, else Go's own source ($GOROOT/src).
// BenchmarkPickerQuery ranks 100,000 generated paths.
//
// Besides wall time each reports cpu-ns/op: the CPU time of this process
// and of the processes it ran (ripgrep), which is the fairer comparison on
// a machine that is busy with other work.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cpuNow is the CPU time used so far by this process and its waited-for
// children.
func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// loopCPU runs f b.N times and reports its CPU time per run.
func loopCPU(b *testing.B, f func()) {
	start := cpuNow()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
}

func benchTree(b *testing.B) *toolbox {
	root := os.Getenv("LEMBAS_BENCH_TREE")
	if root == "" {
		root = filepath.Join(runtime.GOROOT(), "src")
	}
	root, _ = filepath.EvalSymlinks(root)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		b.Skip("no tree to search: set LEMBAS_BENCH_TREE")
	}
	tb, err := newToolbox(root, false)
	if err != nil {
		b.Fatal(err)
	}
	return tb
}

func searchBenchCall(b *testing.B, tb *toolbox, name string, args any) toolResult {
	raw, _ := json.Marshal(args)
	r := tb.run(context.Background(), tb.lookup(name), raw)
	if r.IsError {
		b.Fatal(r.Text)
	}
	return r
}

// BenchmarkSearchGrep: one grep call for a literal, in process (go), as a
// fresh process picks its engine (auto: ripgrep when the tree is known to
// be big), and ripgrep alone with the flags lembas gives it (rg).
func BenchmarkSearchGrep(b *testing.B) {
	tb := benchTree(b)
	for _, pat := range []string{"NewReader", "func \\w+Reader\\("} {
		args := map[string]any{"pattern": pat}
		b.Run("go/"+pat, func(b *testing.B) {
			b.Setenv("LEMBAS_NO_RG", "1")
			loopCPU(b, func() {
				searchBenchCall(b, tb, "grep", args)
			})
		})
		if rgPath() == "" {
			continue
		}
		b.Run("auto/"+pat, func(b *testing.B) {
			loopCPU(b, func() {
				treeSizes.Delete(tb.root)
				searchBenchCall(b, tb, "grep", args)
			})
		})
		b.Run("rg/"+pat, func(b *testing.B) {
			rgArgs := []string{"--no-config", "--line-number", "--no-heading", "--with-filename", "--color", "never",
				"--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-exclude", "-g", "!.git",
				"--max-filesize", strconv.Itoa(theSpec().Tools["grep"].limit("max_file_bytes")), "--no-messages",
				"--no-ignore-parent", "-e", pat, "--", "."}
			loopCPU(b, func() {
				cmd := exec.Command(rgPath(), rgArgs...)
				cmd.Dir = tb.root
				cmd.Output()
			})
		})
	}
}

// BenchmarkSearchGlob: glob **/*.go and list against rg --files with the
// same glob.
func BenchmarkSearchGlob(b *testing.B) {
	tb := benchTree(b)
	b.Run("glob", func(b *testing.B) {
		loopCPU(b, func() {
			searchBenchCall(b, tb, "glob", map[string]any{"pattern": "*_test.go"})
		})
	})
	b.Run("list", func(b *testing.B) {
		loopCPU(b, func() {
			searchBenchCall(b, tb, "list", map[string]any{"depth": 3})
		})
	})
	if rgPath() == "" {
		return
	}
	b.Run("rg-files", func(b *testing.B) {
		loopCPU(b, func() {
			cmd := exec.Command(rgPath(), "--no-config", "--files", "--hidden", "--no-require-git", "--no-ignore-global",
				"--no-ignore-parent", "-g", "!.git", "-g", "*_test.go")
			cmd.Dir = tb.root
			cmd.Output()
		})
	})
}

// BenchmarkPickerQuery ranks 100,000 paths (a generated tree, indexed
// without touching the disk) for a few typed queries.
func BenchmarkPickerQuery(b *testing.B) {
	x := &fileIndex{root: "/bench", built: true, byDir: map[string]map[string]bool{}, mtimes: map[string]time.Time{}, picksLoaded: true, picks: map[string][]int64{}}
	words := []string{"server", "client", "handler", "model", "engine", "store", "config", "tools", "link", "pty"}
	for i := 0; i < 100000; i++ {
		dir := fmt.Sprintf("pkg/%s/%s_%d", words[i%10], words[(i/10)%10], i/1000)
		if x.byDir[dir] == nil {
			x.byDir[dir] = map[string]bool{}
		}
		x.byDir[dir][fmt.Sprintf("%s_%s_%d.go", words[(i/7)%10], words[(i/3)%10], i)] = true
		x.count++
	}
	x.dirty = true
	x.paths()
	now := time.Now()
	for _, q := range []string{"srvhnd", "engine_store_4", "pty", "zzzz"} {
		b.Run(q, func(b *testing.B) {
			loopCPU(b, func() {
				x.query(q, 50, now)
			})
		})
	}
}

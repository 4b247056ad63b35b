package main

// Benchmarks of the whole binary (never timed assertions in tests):
//
//	go test -run '^$' -bench 'Version|ScriptedTask' -benchtime 20x .
//
// BenchmarkScriptedTask also reports the peak RSS of the lembas process.

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"testing"
)

func BenchmarkVersion(b *testing.B) {
	bin := lembasBin(&testing.T{})
	for i := 0; i < b.N; i++ {
		if err := exec.Command(bin, "--version").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScriptedTask(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("POSIX shell")
	}
	t := &testing.T{}
	bin := lembasBin(t)
	f := newFakeModel(b)
	var rss []int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		scriptTask(f)
		proj := b.TempDir()
		os.MkdirAll(filepath.Join(proj, "src"), 0o755)
		os.WriteFile(filepath.Join(proj, "src/app.txt"), []byte("status: TODO\n"), 0o644)
		cmd := exec.Command(bin, "--mode", "auto", "-p", "replace TODO with DONE in src/app.txt, then cat it")
		cmd.Dir = proj
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "SHELL=/bin/sh", "OPENAI_BASE_URL=" + f.url(),
			"LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + b.TempDir(), "XDG_CONFIG_HOME=" + b.TempDir()}
		b.StartTimer()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		b.StopTimer()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = append(rss, int64(ru.Maxrss))
		}
		b.StartTimer()
	}
	if len(rss) > 0 {
		sort.Slice(rss, func(i, j int) bool { return rss[i] < rss[j] })
		b.ReportMetric(float64(rss[len(rss)/2]), "peak-RSS-KB")
	}
}

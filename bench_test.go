package main

// Benchmarks of the whole binary (never timed assertions in tests):
//
//	go test -run '^$' -bench 'Version|ScriptedTask' -benchtime 20x .
//
// Peak RSS is measured by ../shared/bench/run.sh (GNU time), not here: a
// child that Go starts with vfork takes on the test process's RSS as its
// maxrss when it execs, so rusage from here would report the test's size.

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	}
}

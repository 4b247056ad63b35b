//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopSignalsRunCleanup: SIGTERM (a service manager, timeout, kill) and
// SIGHUP (a closed terminal or SSH session) end lembas -p as
// Ctrl-C does: the running command is cancelled, the session's jobs are
// stopped and lembas exits by itself rather than being killed by the
// signal with its deferred cleanup skipped. Before the fix -p caught only
// os.Interrupt, so it died of the signal.
func TestStopSignalsRunCleanup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		for _, mode := range []string{"-p", "-i"} {
			t.Run(sig.String()+mode, func(t *testing.T) {
				f := newFakeModel(t)
				f.push(callsReply(fakeCall{"bash", map[string]any{"command": "sleep 300 & echo $! > pid; wait", "background": true}}),
					callsReply(fakeCall{"bash", map[string]any{"command": "until test -s pid; do sleep 0.05; done; touch ready; sleep 300"}}),
					textReply("done"))
				proj := copyProject(t, "basic")
				cmd := exec.Command(lembasBin(t), "--mode", "auto", mode, "start a sleeper, then wait")
				cmd.Dir = proj
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh",
					"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
				stdin, err := cmd.StdinPipe() // the REPL's input stays open: only the signal ends it
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				var errb, outb bytes.Buffer
				cmd.Stderr = &errb
				cmd.Stdout = &outb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if mode == "-i" {
					stdin.Write([]byte("y\n")) // the REPL asks to trust the project first
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				if !waitForFile(filepath.Join(proj, "ready"), exited) {
					cmd.Process.Kill()
					t.Fatalf("the foreground command never started; stderr: %s\nstdout: %s", errb.String(), outb.String())
				}
				b, _ := os.ReadFile(filepath.Join(proj, "pid"))
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if pid <= 1 {
					cmd.Process.Kill()
					t.Fatalf("the job wrote no pid (%q)", b)
				}
				cmd.Process.Signal(sig)
				var werr error
				select {
				case werr = <-exited:
				case <-time.After(60 * time.Second): // a hang, not a speed check
					cmd.Process.Kill()
					exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
					t.Fatalf("lembas %s did not end on %v; stderr: %s", mode, sig, errb.String())
				}
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					t.Errorf("lembas %s was killed by %v (%v): its cleanup did not run; stderr: %s", mode, ws.Signal(), werr, errb.String())
				}
				if mode == "-p" && !strings.Contains(errb.String(), jobText("print_leftover", "n", 1, "ids", "j1")) {
					t.Errorf("-p did not stop its leftover job; stderr: %s", errb.String())
				}
				if left := waitGone([]int{pid}); len(left) > 0 {
					exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
					t.Errorf("the job's sleep %d outlived lembas %s", pid, mode)
				}
			})
		}
	}
}

// waitForFile waits for a file to appear, or for the process to end first.
func waitForFile(path string, exited chan error) bool {
	deadline := time.After(60 * time.Second) // a hang guard, not a speed check
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case err := <-exited:
			exited <- err
			return false
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return false
		}
	}
}

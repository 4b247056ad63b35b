//go:build unix

package main

// The REPL once under a real PTY: the real binary on the slave side of a
// pseudo-terminal from pty_unix.go (the one PTY implementation, the one the
// device's terminals use), typed at through the master like a person would.

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplUnderPTY(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("Hi from the PTY."))
	proj := copyProject(t, "basic")
	state := t.TempDir()
	bin := lembasBin(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh", "TERM=xterm-256color",
		"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + t.TempDir()}
	master, err := startPTY(bin, []string{bin}, proj, env, 100, 24)
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	t.Cleanup(func() { master.kill(); master.close() })
	out := newSyncBuffer()
	go io.Copy(out, master)
	h := &replHarness{t: t, out: out, tty: true}
	h.expect("Do you trust")
	master.Write([]byte("y"))
	h.expect("trusted; remembered")
	h.expect("/help for commands")
	master.Write([]byte("Q"))
	h.expect("Q") // the editor echoes what is typed
	master.Write([]byte("uick hello\r"))
	h.expect("Hi from the PTY.")
	h.expect("openai/mock · 100 in · 10 out · 80 cached")
	master.Write([]byte{4}) // Ctrl-D at an empty prompt
	select {
	case <-master.done:
		if master.code != 0 {
			t.Errorf("lembas ended with status %d; it printed:\n%s", master.code, out.String())
		}
	case <-time.After(20 * time.Second):
		master.kill()
		t.Fatalf("Ctrl-D did not end lembas; it printed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "\x1b[") {
		t.Errorf("no colour on a terminal: %q", out.String())
	}
	hist, _ := os.ReadFile(filepath.Join(state, "lembas", "history"))
	if !strings.Contains(string(hist), `"Quick hello"`) {
		t.Errorf("the history was not kept: %q", hist)
	}
}

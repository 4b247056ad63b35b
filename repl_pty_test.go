//go:build linux

package main

// The REPL once under a real PTY: the real binary on the slave side of a
// pseudo-terminal opened here with x/sys (the project's own pty_unix.go is
// a later issue), typed at through the master like a person would.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair sized 24×100.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no /dev/ptmx here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		t.Fatalf("naming the pty: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatalf("opening the pty's slave: %v", err)
	}
	unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100})
	t.Cleanup(func() { master.Close(); slave.Close() })
	return master, slave
}

func TestReplUnderPTY(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("Hi from the PTY."))
	proj := copyProject(t, "basic")
	state := t.TempDir()
	master, slave := openPTY(t)
	cmd := exec.Command(lembasBin(t))
	cmd.Dir = proj
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh", "TERM=xterm-256color",
		"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + t.TempDir()}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := newSyncBuffer()
	go io.Copy(out, master)
	h := &replHarness{t: t, out: out}
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
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("lembas ended with %v; it printed:\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
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

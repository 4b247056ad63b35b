//go:build linux

package main

// Red-team tests of the world, each a class of attack a hostile model
// tries by writing a script into the project and running it by name (no
// spelling rule sees it): each fails when the attack gets through.

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// unixCanary is a Unix socket outside the project, where a daemon's would
// be, counting the connections it receives.
func unixCanary(t *testing.T, dir string) (path string, hits *atomic.Int32) {
	t.Helper()
	path = filepath.Join(dir, "daemon.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	hits = &atomic.Int32{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	return path, hits
}

// TestWorldNoInheritedFiles: a command holds only its three files. A
// descriptor lembas inherited without close-on-exec (from an editor, a
// terminal, a service manager) would hand the command what it opens — here
// a secret outside; and the world's own control socket would let a process
// a command left behind take the next command's request (its output
// files) and answer in the init's name: a forged output and exit for a
// command that never ran.
func TestWorldNoInheritedFiles(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "inherited-secret")
	os.WriteFile(secret, []byte("CANARY-INHERITED-FD"), 0o600)
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	os.Remove(secret)
	tb, _, _, _ := worldFixture(t, sandboxConfig{})
	body := `#!/usr/bin/python3
import os, socket, sys
for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
    if fd < 3:
        continue
    try:
        print("fd", fd, os.readlink("/proc/self/fd/%d" % fd))
        os.lseek(fd, 0, 0)
        print(os.read(fd, 100))
    except OSError as e:
        print("read", fd, e)
socks = []
for fd in range(3, 256):
    try:
        s = socket.socket(fileno=os.dup(fd))
        if s.family == socket.AF_UNIX:
            socks.append(s)
    except OSError:
        pass
print("sockets", len(socks), flush=True)
if socks and os.fork() == 0:
    os.setsid()
    msg, fds, _, _ = socket.recv_fds(socks[0], 1 << 20, 8)
    # a run frame: "3:run", then the id
    n, rest = msg[5:].split(b":", 1)
    cid = rest[:int(n)].decode()
    os.write(fds[1], b"FORGED-OUTPUT\n")
    socks[0].send(b'{"op":"exit","id":%s,"status":0,"pid":1}' % cid.encode())
    os._exit(0)
print("tried")
`
	r := sandboxBash(t, tb, "auto", script(body)+" </dev/null >/dev/null 2>&1 & sleep 1; ./s.sh")
	if strings.Contains(r.Text, "CANARY-INHERITED-FD") {
		t.Errorf("a descriptor lembas inherited reached the command:\n%s", r.Text)
	}
	if !strings.Contains(r.Text, "tried") {
		t.Errorf("the script did not run to its end:\n%s", r.Text)
	}
	r = sandboxBash(t, tb, "auto", "echo the-real-command")
	if strings.Contains(r.Text, "FORGED") || !strings.Contains(r.Text, "the-real-command") {
		t.Errorf("a process a command left behind answered for the next command:\n%s", r.Text)
	}
}

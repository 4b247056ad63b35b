//go:build linux

package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// TestPeerLookup: the forwarder's way from a loopback connection to the
// process that made it, on this machine's own /proc: the dialling socket's
// inode is found in /proc/net/tcp (tcp6 for ::1), this process holds it,
// and this process's stat names its parent and group.
func TestPeerLookup(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err)
			continue
		}
		defer l.Close()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// As the forwarder sees it: the accepted end's remote is the peer's local.
		peer, want := s.RemoteAddr().(*net.TCPAddr).AddrPort(), s.LocalAddr().(*net.TCPAddr).AddrPort()
		file := "/proc/net/tcp"
		if peer.Addr().Is6() {
			file = "/proc/net/tcp6"
		}
		table, err := os.ReadFile(file)
		if err != nil {
			t.Skipf("no %s: %v", file, err)
		}
		inode, ok := socketInode(table, peer, want)
		if !ok {
			t.Fatalf("%s: the dialling socket %v → %v is not in %s", addr, peer, want, file)
		}
		if d, ok := diagInode(peer, want); !ok || d != inode {
			t.Errorf("%s: sock_diag finds inode %d %v, /proc/net/tcp %d", addr, d, ok, inode)
		}
		if _, ok := diagInode(want, netip.MustParseAddrPort("127.0.0.1:1")); ok {
			t.Errorf("%s: sock_diag found a socket for a remote address no socket has", addr)
		}
		if _, ok := socketInode(table, want, netip.MustParseAddrPort("127.0.0.1:1")); ok {
			t.Errorf("%s: a socket found for a remote address no socket has", addr)
		}
		holders := socketHolders(inode, -1)
		if len(holders) != 1 || holders[0] != os.Getpid() {
			t.Errorf("%s: socket %d is held by %v, want this process only", addr, inode, holders)
		}
	}
	ppid, pgrp, ok := procParent(os.Getpid())
	if !ok || ppid != os.Getppid() || pgrp <= 0 {
		t.Errorf("procParent: %d %d %v, want parent %d", ppid, pgrp, ok, os.Getppid())
	}
}

// TestPeerLine: the forwarder's line reads back as it was written; a
// stream that does not start with one is not taken for it.
func TestPeerLine(t *testing.T) {
	for _, c := range []struct {
		id uint64
		ok bool
	}{{7, true}, {1 << 40, true}, {0, false}} {
		id, known, ok := parsePeerLine(strings.TrimSuffix(peerLine(c.id, c.ok), "\n"))
		if !ok || known != c.ok || id != c.id {
			t.Errorf("peerLine(%d, %v) reads back as %d %v %v", c.id, c.ok, id, known, ok)
		}
	}
	for _, bad := range []string{"CONNECT example.com:443 HTTP/1.1", "LEMBAS-PEER ", "LEMBAS-PEER 0", "LEMBAS-PEER -1", "LEMBAS-PEER 1 2", "lembas-peer 1"} {
		if _, _, ok := parsePeerLine(bad); ok {
			t.Errorf("%q read as a peer line", bad)
		}
	}
}

// FuzzPeerParsers: the forwarder's readings of the kernel's tables and of
// its own line never crash, and what procNetAddr reads it reads as an
// address with a port.
func FuzzPeerParsers(f *testing.F) {
	f.Add("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:0C38 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 12345 1 0 20 4 30 10 -1\n", "123 (a) b) S 1 123 123 0")
	f.Add("   0: 00000000000000000000000001000000:0C38 00000000000000000000000001000000:9C40 01 00000000:00000000 00:00000000 00000000 0 0 0 1\n", "1 (init) S 0 0 0")
	f.Add("0: zz:zz", ")")
	f.Fuzz(func(t *testing.T, table, stat string) {
		socketInode([]byte(table), netip.MustParseAddrPort("127.0.0.1:54321"), netip.MustParseAddrPort("127.0.0.1:3128"))
		for _, w := range strings.Fields(table) {
			if a, ok := procNetAddr(w); ok && !a.IsValid() {
				t.Fatalf("%q read as an invalid address", w)
			}
		}
		parseProcStat([]byte(stat))
		if len(stat) <= 36 {
			diagReply([]byte(table), []byte(stat))
		}
		parsePeerLine(stat)
	})
}

// BenchmarkPeerLookup: the forwarder's work for one connection — the
// socket found in /proc/net/tcp, its holder among every process's
// descriptors — here over the host's /proc, which holds more processes
// than a world does (an upper bound).
func BenchmarkPeerLookup(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	peer, want := s.RemoteAddr().(*net.TCPAddr).AddrPort(), s.LocalAddr().(*net.TCPAddr).AddrPort()
	b.Run("diag", func(b *testing.B) {
		for b.Loop() {
			if _, ok := diagInode(peer, want); !ok {
				b.Fatal("not found")
			}
		}
	})
	b.Run("proc_net_tcp", func(b *testing.B) {
		for b.Loop() {
			table, _ := os.ReadFile("/proc/net/tcp")
			if _, ok := socketInode(table, peer, want); !ok {
				b.Fatal("not found")
			}
		}
	})
	inode, _ := diagInode(peer, want)
	b.Run("holders", func(b *testing.B) {
		for b.Loop() {
			if len(socketHolders(inode, -1)) != 1 {
				b.Fatal("not found")
			}
		}
	})
}

// TestWorldCommandOwnSession: each command is a session leader in the
// world, so no process of another command can join its process group
// (setpgid across sessions is refused) and be taken for it by the
// network card's peer lookup, which trusts a process group's leader.
func TestWorldCommandOwnSession(t *testing.T) {
	tb, _, _, _ := worldFixture(t, sandboxConfig{})
	r := sandboxBash(t, tb, "auto", `set -- $(sed 's/.*) //' /proc/$$/stat); echo "sid=$4 pid=$$"`)
	var sid, pid int
	if _, err := fmt.Sscanf(strings.TrimSpace(strings.Split(r.Text, "\n")[0]), "sid=%d pid=%d", &sid, &pid); err != nil {
		t.Fatalf("%v: %q", err, r.Text)
	}
	if sid != pid {
		t.Errorf("the command (pid %d) is in session %d, not its own: another command's process could join its group", pid, sid)
	}
}

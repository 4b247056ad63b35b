//go:build linux

package main

// Which command connected. Several commands may run in the world at once
// (background jobs beside a foreground command), and all of them reach the
// network through the same loopback port, so lembas's proxy cannot tell
// them apart by the connection. The world's init can: it started each
// command (its pid, the leader of its process group, and lembas's id for
// it are in initState). For each connection the forwarder (forwardProxy)
// finds the connecting socket's inode (the peer's end: local = the
// connection's remote address) by sock_diag, or in the world's
// /proc/net/tcp{,6} where that fails, the process
// holding it (/proc/*/fd), and walks up from it — its process group, then
// its parents — to a command it started. It says which in one line before
// the stream:
//
//	LEMBAS-PEER <id>\n   the command lembas numbered id
//	LEMBAS-PEER ?\n      not found (a process its command left behind, a
//	                     process that closed its socket, an MCP server)
//
// The proxy reads the line only from its Unix socket, which commands
// cannot reach (seccomp refuses them AF_UNIX sockets), and knows which
// world it came from by the socket's peer credentials (the init's pid), so
// the line is the init's word, never a command's. An unknown peer fails
// closed: its host is still asked about, and the card says lembas could
// not tell which command connected (sandbox_netask.go).

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peerLine is the forwarder's line for the command numbered id, or for an
// unknown peer (ok false).
func peerLine(id uint64, ok bool) string {
	if !ok {
		return peerLinePrefix + "?\n"
	}
	return peerLinePrefix + strconv.FormatUint(id, 10) + "\n"
}

// peerOf is the id of the command c (a connection the forwarder accepted)
// came from; false when it cannot tell.
func (in *initState) peerOf(c net.Conn) (uint64, bool) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, false
	}
	// The peer's socket: its local address is our remote one, and back.
	want, peer := local.AddrPort(), remote.AddrPort()
	inode, ok1 := diagInode(peer, want)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if ok1 {
			break
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if inode, ok1 = socketInode(data, peer, want); ok1 {
			break
		}
	}
	if inode == 0 {
		return 0, false
	}
	for _, pid := range socketHolders(inode, os.Getpid()) {
		if id, ok := in.commandOf(pid); ok {
			return id, true
		}
	}
	return 0, false
}

// commandOf walks from pid to a command the init started: pid itself, its
// process group's leader (the command, unless a child made a group of its
// own: a command is a session leader, so no process of another command's
// session can join its group), then its parents. A process whose command
// has ended (reparented to the init, its group's leader reaped) is
// nobody's. /proc is read first and in.mu taken only for the lookups, so
// a connection never holds up a command's start or its end.
func (in *initState) commandOf(pid int) (uint64, bool) {
	var chain [][2]int // pid, its group (0: unknown, the walk ends there)
	for steps := 0; pid > 1 && steps < 64; steps++ {
		ppid, pgrp, ok := procParent(pid)
		if !ok {
			chain = append(chain, [2]int{pid, 0})
			break
		}
		chain = append(chain, [2]int{pid, pgrp})
		pid = ppid
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, c := range chain {
		if id, ok := in.procs[c[0]]; ok {
			return id, true
		}
		if id, ok := in.procs[c[1]]; ok && c[1] != 0 {
			return id, true
		}
	}
	return 0, false
}

// procParent reads a process's parent and process group from /proc/PID/stat
// (after the name, which may hold spaces and parentheses).
func procParent(pid int) (ppid, pgrp int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseProcStat(data)
}

func parseProcStat(data []byte) (ppid, pgrp int, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:])) // state ppid pgrp …
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return ppid, pgrp, err1 == nil && err2 == nil && ppid >= 0 && pgrp >= 0
}

// diagInode asks the kernel (sock_diag, one exact lookup) for the inode
// of the TCP socket from local to remote: /proc/net/tcp, the fallback,
// walks the machine's whole connection table on every read (2 ms here).
func diagInode(local, remote netip.AddrPort) (uint64, bool) {
	fam := byte(unix.AF_INET)
	if local.Addr().Is6() {
		fam = unix.AF_INET6
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	// nlmsghdr (16) + inet_diag_req_v2 (56): family, protocol, ext, pad,
	// states, then the socket's id: ports and addresses in network order,
	// the interface, and no cookie (all ones).
	req := make([]byte, 16+56)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1)
	r := req[16:]
	r[0], r[1] = fam, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xffffffff)
	binary.BigEndian.PutUint16(r[8:], local.Port())
	binary.BigEndian.PutUint16(r[10:], remote.Port())
	src, dst := local.Addr().AsSlice(), remote.Addr().AsSlice()
	copy(r[12:28], src)
	copy(r[28:44], dst)
	binary.NativeEndian.PutUint32(r[48:], 0xffffffff)
	binary.NativeEndian.PutUint32(r[52:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, false
	}
	return diagReply(buf[:n], r[8:44])
}

// diagReply reads sock_diag's answer to one exact lookup: the inode of
// the socket in its inet_diag_msg (after family, state, timer, retrans,
// the 48-byte id, expires, rqueue, wqueue and uid), when the socket is the
// one asked for (id: its ports and addresses as asked) — the kernel's
// lookup falls back to a listening socket on the local port.
func diagReply(b, id []byte) (uint64, bool) {
	if len(b) < 16+72 || binary.NativeEndian.Uint16(b[4:]) != unix.SOCK_DIAG_BY_FAMILY || !bytes.Equal(b[20:20+len(id)], id) {
		return 0, false // an error (no such socket), another socket, or short
	}
	inode := binary.NativeEndian.Uint32(b[16+68:])
	return uint64(inode), inode != 0
}

// socketInode finds, in a /proc/net/tcp or tcp6 table, the socket whose
// local address is local and remote address remote: its inode.
func socketInode(table []byte, local, remote netip.AddrPort) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(nil, 1<<16)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
			continue // the heading, or a line cut short
		}
		l, ok1 := procNetAddr(f[1])
		r, ok2 := procNetAddr(f[2])
		if !ok1 || !ok2 || l != local || r != remote {
			continue
		}
		n, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil || n == 0 {
			return 0, false // a socket in TIME_WAIT has no inode: nobody holds it
		}
		return n, true
	}
	return 0, false
}

// procNetAddr reads an address as /proc/net/tcp{,6} writes it: the
// address's 32-bit words in hex, each in the machine's byte order, a colon,
// the port in hex. An IPv4-mapped address reads as IPv4.
func procNetAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, false
	}
	var b [16]byte
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	var addr netip.Addr
	if len(raw) == 4 {
		addr = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		addr = netip.AddrFrom16(b).Unmap()
	}
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// socketHolders are the processes with the socket inode open, found by
// their descriptors (/proc/PID/fd/N → socket:[inode]), but skip (the init,
// which holds the other end).
func socketHolders(inode uint64, skip int) []int {
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == skip {
			continue
		}
		dir := "/proc/" + e.Name() + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + fd.Name()); err == nil && l == want {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// proxyPeer is what the proxy knows of a connection from its Unix socket:
// the pid (in lembas's view) of the world's init that forwarded it.
func proxyPeer(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// worldRef is the command's place in its world: the init's pid (as the
// proxy sees it) and the command's id, for the network gate to know which
// command connected.
func (p *worldProc) worldRef() (int, uint64) {
	if p.c == nil || p.c.proc == nil {
		return 0, 0
	}
	return p.c.proc.Pid, p.id
}

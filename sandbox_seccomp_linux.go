//go:build linux

package main

// The seccomp filter a command runs under (restrictThread installs it on
// the thread that starts the command): what Landlock does not mediate.
//   - network off: socket() for anything but AF_UNIX, and io_uring (which
//     can open sockets past the filter), fail with EPERM; Landlock's TCP
//     rights cover what this misses on ABI 4+, and this covers UDP, raw
//     and the rest everywhere.
//   - NoUnix (the world): socket(AF_UNIX) fails with EPERM, so no Unix
//     socket outside the command — a daemon's under /run, an agent's in
//     home — can be connected to by path; socketpair() stays, and the
//     world's own forwarder to the proxy runs outside the filter.
//   - Families (the world): socket() for a family not listed (but
//     AF_UNIX, which NoUnix judges) fails with EPERM — AF_VSOCK and the
//     like are not confined by the world's network namespace — and so
//     does io_uring, whose IORING_OP_SOCKET makes sockets without the
//     socket(2) call this filter judges (AF_UNIX ones too).
//   - NoMeta (plan mode): chmod, chown and utime in all their spellings
//     fail with EPERM (Landlock does not mediate metadata).

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompArch is the audit arch of this build; a system call made through
// another arch's table (32-bit calls on a 64-bit kernel) is refused.
func seccompArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	case "arm":
		return unix.AUDIT_ARCH_ARM, true
	case "386":
		return unix.AUDIT_ARCH_I386, true
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, true
	}
	return 0, false
}

// seccompMetaCalls are the system calls that change a file's mode, owner
// or times, by this build's table (the numbers are x/sys/unix's
// zsysnum_linux_<arch>.go; not every arch has every name).
func seccompMetaCalls() []uint32 {
	switch runtime.GOARCH {
	case "amd64": // chmod fchmod chown fchown lchown utime utimes fchownat futimesat fchmodat utimensat fchmodat2
		return []uint32{90, 91, 92, 93, 94, 132, 235, 260, 261, 268, 280, 452}
	case "arm64", "riscv64": // fchmod fchmodat fchownat fchown utimensat fchmodat2
		return []uint32{52, 53, 54, 55, 88, 452}
	case "arm": // chmod lchown fchmod fchown chown lchown32 fchown32 chown32 utimes fchownat futimesat fchmodat utimensat utimensat_time64 fchmodat2
		return []uint32{15, 16, 94, 95, 182, 198, 207, 212, 269, 325, 326, 333, 348, 412, 452}
	case "386": // as arm, with utime, and its own numbers for the rest
		return []uint32{15, 16, 30, 94, 95, 182, 198, 207, 212, 271, 298, 299, 306, 320, 412, 452}
	}
	return nil
}

// seccompRestrict installs pol's filter on this thread; with nothing to
// refuse it installs none.
// seccompKeyCalls are add_key, request_key and keyctl: the kernel's
// keyrings are not namespaced, so a command would reach the person's
// session keyring (a kerberos ticket, an ecryptfs or secret-service key)
// from any world — refused, as Docker's default profile does.
func seccompKeyCalls() []uint32 {
	return []uint32{unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL}
}

func seccompRestrict(pol sandboxPolicy) error {
	if pol.Network && !pol.NoUnix && !pol.NoMeta && !pol.NoKeys && len(pol.Families) == 0 {
		return nil
	}
	arch, ok := seccompArch()
	if !ok {
		return errorf("no seccomp filter for %s; set sandbox.network: true", runtime.GOARCH)
	}
	prog := seccompProgram(arch, !pol.Network, pol.NoUnix, pol.NoMeta, pol.NoKeys, pol.Families)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return errorf("installing the seccomp filter: %v", err)
	}
	return nil
}

// seccompProgram assembles the filter: the arch checked, foreign numbers
// (x32) refused, each refused call compared in turn, socket()'s domain
// judged last. Jumps are to three labels at the end. families, when any,
// are the only families but AF_UNIX socket() may make.
func seccompProgram(arch uint32, noNet, noUnix, noMeta, noKeys bool, families []uint32) []unix.SockFilter {
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	const (
		toDeny = -1
		toSock = -2
	)
	// Offsets into struct seccomp_data: nr 0, arch 4, args[0] 16 (its low
	// half on these little-endian arches).
	type ins struct {
		code uint16
		k    uint32
		to   int // a label when jt is taken, or 0
	}
	var body []ins
	body = append(body, ins{ld, 0, 0}, ins{jge, 0x40000000, toDeny})
	if noNet || noUnix || len(families) > 0 { // io_uring makes sockets past the socket() rule below
		body = append(body, ins{jeq, unix.SYS_IO_URING_SETUP, toDeny}, ins{jeq, unix.SYS_IO_URING_ENTER, toDeny}, ins{jeq, unix.SYS_IO_URING_REGISTER, toDeny})
	}
	if noMeta {
		for _, nr := range seccompMetaCalls() {
			body = append(body, ins{jeq, nr, toDeny})
		}
	}
	if noKeys {
		for _, nr := range seccompKeyCalls() {
			body = append(body, ins{jeq, nr, toDeny})
		}
	}
	if noNet || noUnix || len(families) > 0 {
		body = append(body, ins{jeq, unix.SYS_SOCKET, toSock})
	}
	prog := []unix.SockFilter{{Code: ld, K: 4}, {Code: jeq, K: arch, Jt: 1}, {Code: ret, K: deny}}
	// After body: [allow] [deny] [socket: ld args0; jeq AF_UNIX; ...].
	n := len(prog) + len(body)
	denyAt, sockAt := n+1, n+2 // n is the allow
	for _, b := range body {
		at := len(prog)
		f := unix.SockFilter{Code: b.code, K: b.k}
		switch b.to {
		case toDeny:
			f.Jt = uint8(denyAt - at - 1)
		case toSock:
			f.Jt = uint8(sockAt - at - 1)
		}
		prog = append(prog, f)
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: allow}, unix.SockFilter{Code: ret, K: deny})
	// socket(domain, …): AF_UNIX is refused with noUnix, the others with noNet.
	unixRet, otherRet := uint32(allow), uint32(allow)
	if noUnix {
		unixRet = deny
	}
	if noNet {
		otherRet = deny
	}
	prog = append(prog,
		unix.SockFilter{Code: ld, K: 16},
		unix.SockFilter{Code: jeq, K: unix.AF_UNIX, Jf: 1},
		unix.SockFilter{Code: ret, K: unixRet})
	var listed []uint32
	for _, f := range families {
		if f != unix.AF_UNIX && !noNet {
			listed = append(listed, f)
		}
	}
	if len(families) == 0 {
		return append(prog, unix.SockFilter{Code: ret, K: otherRet})
	}
	// Each listed family jumps past the deny to an allow of its own.
	for i, f := range listed {
		prog = append(prog, unix.SockFilter{Code: jeq, K: f, Jt: uint8(len(listed) - i)})
	}
	return append(prog, unix.SockFilter{Code: ret, K: deny}, unix.SockFilter{Code: ret, K: allow})
}

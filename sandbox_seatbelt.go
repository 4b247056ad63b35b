package main

// The macOS profile: sandbox-exec runs a command under a Seatbelt profile
// that denies everything by default. The profile text is fixed; the roots
// come in as parameters (-D WRITE_0=/path …), never spliced into the text,
// so no path can change what the profile says. It is built on every OS so
// its golden file is tested everywhere.

import (
	"fmt"
	"strings"
)

// seatbeltProfile is the profile for pol and the -D parameters it reads.
func seatbeltProfile(pol sandboxPolicy) (string, []string) {
	var b strings.Builder
	var params []string
	param := func(prefix string, i int, v string) string {
		name := fmt.Sprintf("%s_%d", prefix, i)
		params = append(params, "-D", name+"="+v)
		return fmt.Sprintf("(param %q)", name)
	}
	b.WriteString("(version 1)\n(deny default)\n")
	b.WriteString("(allow process-exec process-fork)\n(allow signal (target same-sandbox))\n(allow process-info* (target same-sandbox))\n")
	b.WriteString("(allow sysctl-read)\n(allow mach-lookup)\n(allow ipc-posix-shm ipc-posix-sem)\n")
	b.WriteString("(allow file-read*)\n")
	for i, r := range pol.Write {
		fmt.Fprintf(&b, "(allow file-write* (subpath %s))\n", param("WRITE", i, r))
	}
	for i, d := range pol.Devices {
		p := param("DEVICE", i, d)
		fmt.Fprintf(&b, "(allow file-write* file-ioctl (subpath %s))\n", p)
	}
	b.WriteString("(allow pseudo-tty)\n")
	for i, p := range pol.Protect {
		fmt.Fprintf(&b, "(deny file-write* (subpath %s))\n", param("PROTECT", i, p))
	}
	if pol.Network {
		b.WriteString("(allow network*)\n")
	} else {
		b.WriteString("(allow network* (remote unix-socket))\n(allow network-bind (local unix-socket))\n")
	}
	return b.String(), params
}

//go:build darwin

package main

// The macOS sandbox: /usr/bin/sandbox-exec with the generated profile
// (sandbox_seatbelt.go). The git folder's protected paths are denied in
// the profile itself, so no namespace is needed.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"
)

const seatbeltExec = "/usr/bin/sandbox-exec"

func sandboxProbeOS() sandboxProbe {
	if _, err := os.Stat(seatbeltExec); err != nil {
		return sandboxProbe{Why: sandboxText("why_seatbelt", "error", err)}
	}
	return sandboxProbe{Kind: "seatbelt"}
}

// sandboxCommand runs cmd under sandbox-exec with pol's profile.
func sandboxCommand(cmd *exec.Cmd, pol sandboxPolicy) error {
	profile, params := seatbeltProfile(pol)
	args := append([]string{seatbeltExec, "-p", profile}, params...)
	args = append(args, "--", cmd.Path)
	cmd.Args = append(args, cmd.Args[1:]...)
	cmd.Path, cmd.Err = seatbeltExec, nil
	return nil
}

// sandboxHelper is Linux's; on macOS nothing calls it.
// sandboxStart starts the command sandboxCommand made ready.
func sandboxStart(cmd *exec.Cmd, pol sandboxPolicy) error { return cmd.Start() }

// closeInherited marks every descriptor from 3 up close-on-exec (see
// Linux's): what lembas inherited without the flag is not a command's.
func closeInherited() {
	ents, _ := os.ReadDir("/dev/fd")
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > 2 {
			unix.FcntlInt(uintptr(n), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}

// sandboxNamespacesOS: only Linux binds paths in a namespace.
func sandboxNamespacesOS() (bool, string) { return false, "" }

func sandboxHelper(args []string) int {
	fmt.Fprintf(os.Stderr, "lembas sandbox: the helper is for Linux; the command did not run\n")
	return theSandboxSpec().ExitSetup
}

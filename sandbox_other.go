//go:build !linux && !darwin

package main

// No sandbox: Windows and the other systems give none lembas can use. The
// probe says so (once per session to the person and the model), and
// sandbox.required: true refuses to run commands rather than run them bare;
// sandboxCommand is never reached for a bare run.

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

func sandboxProbeOS() sandboxProbe {
	if runtime.GOOS == "windows" {
		return sandboxProbe{Why: sandboxText("why_windows")}
	}
	return sandboxProbe{Why: sandboxText("why_os", "os", goosName())}
}

func sandboxCommand(cmd *exec.Cmd, pol sandboxPolicy) error {
	return errorf("%s has no sandbox", runtime.GOOS)
}

// sandboxStart starts the command sandboxCommand made ready.
func sandboxStart(cmd *exec.Cmd, pol sandboxPolicy) error { return cmd.Start() }

// closeInherited: Linux's and macOS's mark the descriptors lembas
// inherited close-on-exec. Windows hands a child only the handles it is
// given; elsewhere commands run with no sandbox to keep.
func closeInherited() {}

// sandboxNamespacesOS: only Linux binds paths in a namespace.
func sandboxNamespacesOS() (bool, string) { return false, "" }

func sandboxHelper(args []string) int {
	fmt.Fprintf(os.Stderr, "lembas sandbox: the helper is for Linux; the command did not run\n")
	return theSandboxSpec().ExitSetup
}

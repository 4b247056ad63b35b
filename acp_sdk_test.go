package main

// TestACPOfficialClient runs testdata/acpclient/client.mjs — a client on
// the official ACP TypeScript SDK — against the real binary and the fake
// model. It needs node and the SDK installed with npm; .ci/run installs it
// into a temp folder and names it in $LEMBAS_ACP_SDK. Without that the
// test skips (go test ./... stays offline and node-free).

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestACPOfficialClient(t *testing.T) {
	prefix := os.Getenv("LEMBAS_ACP_SDK")
	if prefix == "" {
		t.Skip("set LEMBAS_ACP_SDK to an npm prefix holding @agentclientprotocol/sdk (.ci/run does)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the turn runs cat through a POSIX shell")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("LEMBAS_ACP_SDK is set but node is not on PATH")
	}
	f := newFakeModel(t)
	f.push(
		callsReply(fakeCall{"plan_write", map[string]any{"title": "Mark it done", "phases": []any{map[string]any{"title": "Work",
			"tasks": []any{map[string]any{"text": "replace TODO", "status": "doing"}, map[string]any{"text": "show the file", "status": "todo"}}}}}}),
		callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}),
		callsReply(fakeCall{"edit", map[string]any{"path": "src/app.txt", "old_string": "TODO", "new_string": "DONE"}}),
		// sed, not cat: cat is allowed by harness/permission/defaults.json and would not be asked.
		callsReply(fakeCall{"bash", map[string]any{"command": "sed -n p src/app.txt"}}),
		textReply("Replaced TODO with DONE in src/app.txt."),
	)
	proj := copyProject(t, "basic")
	script, _ := filepath.Abs(filepath.Join("testdata", "acpclient", "client.mjs"))
	cmd := exec.Command(node, script)
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), acpEnv(t, f, t.TempDir())...)
	cmd.Env = append(cmd.Env, "ACP_SDK_PREFIX="+prefix, "LEMBAS_BIN="+lembasBin(t), "PROJECT="+proj, "SHELL=/bin/sh")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the SDK client failed: %v", err)
	}
	if n := f.left(); n != 0 {
		t.Errorf("%d scripted replies were not asked for", n)
	}
}

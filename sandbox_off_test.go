package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxOffConfig: sandbox: off in config.yaml is no OS sandbox — on
// any machine — so auto asks about a command the floor cannot show stays
// inside the project, the card says why, and sandbox check claims nothing
// it does not enforce (the probe injected as "none" reads the same way).
func TestSandboxOffConfig(t *testing.T) {
	f := newFakeModel(t)
	proj := sessionEnv(t, f)
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("sandbox: off\n"), 0o600)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "curl -s http://example.invalid/ -o got.txt"}}), textReply("done"))
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "auto", cwd: proj}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ap := &scriptedApprover{}
	e.ask = ap
	e.runTurn(context.Background(), "touch it")
	if len(ap.asked) != 1 || !strings.Contains(ap.asked[0].Reason, "sandbox: off in config.yaml") {
		t.Errorf("auto with sandbox: off did not ask, or the card does not say why: %+v", ap.asked)
	}
	if _, err := os.Stat(filepath.Join(proj, "got.txt")); err == nil {
		t.Error("the refused command ran")
	}
	rep := e.tb.sandbox.report("auto")
	if !strings.HasPrefix(rep, "sandbox: none — sandbox: off in config.yaml") || strings.Contains(rep, "writes:") || strings.Contains(rep, "\n  network: off") || !strings.Contains(rep, "nothing is enforced") {
		t.Errorf("sandbox check with sandbox: off:\n%s", rep)
	}
	sb := newSandbox(sandboxConfig{Network: "off"}, proj)
	sb.probeHook = func() sandboxProbe { return sandboxProbe{Why: "no Landlock, no namespaces on this machine"} }
	rep = sb.report("auto")
	if !strings.Contains(rep, "none — no Landlock") || strings.Contains(rep, "writes:") || strings.Contains(rep, "\n  network: off") {
		t.Errorf("sandbox check with no sandbox found:\n%s", rep)
	}
	if sandboxWhy(sb) == "" {
		t.Error("sandboxWhy says a sandbox is in force where the probe found none")
	}
}

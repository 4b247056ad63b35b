package main

import (
	"context"
	"encoding/json"
	"errors"
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

// TestSandboxLandlockAloneCountsAsNone: where Landlock is there but user
// namespaces are not, a script run by name could still read a key and
// send it (no masks, no network namespace), so auto asks before what the
// floor cannot show stays inside the project — refused in -p — as with no
// sandbox; a command the floor can show stays inside still runs.
func TestSandboxLandlockAloneCountsAsNone(t *testing.T) {
	proj := t.TempDir()
	sb := newSandbox(sandboxConfig{}, proj)
	sb.probeHook = func() sandboxProbe { return sandboxProbe{Kind: "landlock", ABI: 4} }
	sb.nsOnce.Do(func() { sb.ns, sb.nsWhy = false, "user namespaces refused by this test" })
	if why := sandboxWeakWhy(sb); !strings.Contains(why, "user namespaces refused by this test") {
		t.Fatalf("sandboxWeakWhy = %q", why)
	}
	shell := theSpec().Tools[theArityShellTool()]
	for _, c := range []struct {
		line, want string
	}{{"./build.sh", "deny"}, {"go test ./...", "deny"}, {"python3 x.py", "deny"}, {"ls", "allow"}} {
		p := permissionsFor("auto", proj, true, &config{})
		p.setSandbox(sandboxWhy(sb))
		p.setSandboxLate(func() string { return sandboxWeakWhy(sb) })
		raw, _ := json.Marshal(map[string]string{"command": c.line})
		if d := p.decide(shell, raw); d.Verdict != c.want {
			t.Errorf("%s with Landlock alone, headless: %s (%s), want %s", c.line, d.Verdict, d.Reason, c.want)
		}
	}
	ok := newSandbox(sandboxConfig{}, proj)
	ok.probeHook = sb.probeHook
	ok.nsOnce.Do(func() { ok.ns = true })
	if why := sandboxWeakWhy(ok); why != "" {
		t.Errorf("with namespaces, sandboxWeakWhy = %q", why)
	}
	ok.worldErr = errors.New("the world could not start in this test")
	if why := sandboxWeakWhy(ok); !strings.Contains(why, "could not start in this test") {
		t.Errorf("with the world failed, sandboxWeakWhy = %q", why)
	}
}

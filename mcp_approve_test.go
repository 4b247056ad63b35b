package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeProjectMCP writes a project's .mcp.json naming the fake server
// (this test binary) with the given extra arguments.
func writeProjectMCP(t *testing.T, proj, log string, extra ...string) {
	t.Helper()
	args := append([]string{"-test.run=^TestFakeMCPProcess$"}, extra...)
	doc := map[string]any{"mcpServers": map[string]any{"proj": map[string]any{
		"command": os.Args[0], "args": args,
		"env": map[string]string{"LEMBAS_FAKE_MCP": "normal", "LEMBAS_FAKE_MCP_LOG": log, "LEMBAS_TEST_TOKEN": "t0"}}}}
	data, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(proj, ".mcp.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMCPProjectApproval: a trusted project's stdio server does not start
// in lembas -p until its command line is approved with `lembas mcp
// approve`, which the refusal names; once approved it starts; a changed
// command line is held again; a token's value changing is not a change.
func TestMCPProjectApproval(t *testing.T) {
	skipNoFork(t)
	fm := newFakeModel(t)
	cfgHome, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("XDG_STATE_HOME", state)
	proj := evalExisting(t.TempDir())
	log := filepath.Join(t.TempDir(), "log")
	writeProjectMCP(t, proj, log)
	setTrust(proj, true)
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "OPENAI_API_KEY=x", "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + cfgHome}
	run := func(wantEcho bool) runResult {
		t.Helper()
		fm.push(callsReply(fakeCall{"mcp__proj__echo", map[string]any{"text": "hi"}}), textReply("done"))
		r := runLembas(t, env, proj, "", "--mode", "auto", "-p", "use the project's tool")
		res := toolResults(fm.got()[len(fm.got())-1])
		got := len(res) == 1 && strings.Contains(res[0], "echo: hi")
		if got != wantEcho {
			t.Errorf("the project's server ran: %v, want %v (results %v; stderr %s)", got, wantEcho, res, r.stderr)
		}
		return r
	}
	r := run(false)
	if !strings.Contains(r.stderr, "lembas mcp approve proj --cwd") || !strings.Contains(r.stderr, "TestFakeMCPProcess") {
		t.Errorf("-p does not name the server's command line and the command that approves it: %s", r.stderr)
	}
	if b, _ := os.ReadFile(log); len(b) > 0 {
		t.Errorf("the unapproved server was started: %s", b)
	}
	// mcp list names the held server and the command that approves it,
	// not "no MCP servers are configured".
	if l := runLembas(t, env, proj, "", "mcp", "list"); l.code != 0 || !strings.Contains(l.stdout, "waiting for approval") || !strings.Contains(l.stdout, "lembas mcp approve proj --cwd") || strings.Contains(l.stdout, "No MCP servers") {
		t.Errorf("mcp list of a held server: %d %q %q", l.code, l.stdout, l.stderr)
	}
	if h := runLembas(t, env, proj, "", "mcp", "approve", "--help"); h.code != 0 || !strings.Contains(h.stdout, "mcp approve NAME") {
		t.Errorf("mcp approve --help: %d %s %s", h.code, h.stdout, h.stderr)
	}
	if u := runLembas(t, env, proj, "", "mcp", "approve", "nosuch", "--cwd", proj); u.code != 2 || !strings.Contains(u.stderr, "proj") {
		t.Errorf("mcp approve of an unknown name: %d %s", u.code, u.stderr)
	}
	a := runLembas(t, env, t.TempDir(), "", "mcp", "approve", "proj", "--cwd", proj)
	if a.code != 0 || !strings.Contains(a.stdout, "Approved MCP server proj") || !strings.Contains(a.stdout, "TestFakeMCPProcess") {
		t.Fatalf("mcp approve: %d %s %s", a.code, a.stdout, a.stderr)
	}
	run(true)
	// A token's value is not pinned: the same command line with another
	// token still runs.
	data, _ := os.ReadFile(filepath.Join(proj, ".mcp.json"))
	os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(strings.Replace(string(data), `"t0"`, `"t1"`, 1)), 0o600)
	run(true)
	// A changed command line is held again, and says it changed.
	writeProjectMCP(t, proj, log, "-test.v=false")
	r = run(false)
	if !strings.Contains(r.stderr, "changed since it was approved") {
		t.Errorf("a changed command line: %s", r.stderr)
	}
}

// TestMCPApprovalPin: the pin covers the program, its arguments, folder
// and environment values, but not the values of secret-named variables;
// only project and ACP stdio servers need approval.
func TestMCPApprovalPin(t *testing.T) {
	base := mcpServerConfig{Name: "x", Source: "project", Command: "node", Args: []string{"s.js"}, Cwd: "/p", Env: map[string]string{"MODE": "a", "API_TOKEN": "1"}}
	same := base
	same.Env = map[string]string{"MODE": "a", "API_TOKEN": "2"}
	if mcpPin(base) != mcpPin(same) {
		t.Errorf("a token's value changed the pin")
	}
	for _, change := range []func(c *mcpServerConfig){
		func(c *mcpServerConfig) { c.Command = "nodejs" },
		func(c *mcpServerConfig) { c.Args = []string{"s.js", "--evil"} },
		func(c *mcpServerConfig) { c.Cwd = "/q" },
		func(c *mcpServerConfig) { c.Env = map[string]string{"MODE": "b", "API_TOKEN": "1"} },
		func(c *mcpServerConfig) {
			c.Env = map[string]string{"MODE": "a", "API_TOKEN": "1", "NODE_OPTIONS": "--require x"}
		},
	} {
		c := base
		change(&c)
		if mcpPin(c) == mcpPin(base) {
			t.Errorf("%+v pins as %+v", c, base)
		}
	}
	for _, c := range []mcpServerConfig{{Source: "config", Command: "x"}, {Source: "project", URL: "http://x"}} {
		if mcpNeedsApproval(c) {
			t.Errorf("%+v needs approval", c)
		}
	}
	if !mcpNeedsApproval(mcpServerConfig{Source: "acp", Command: "x"}) {
		t.Errorf("an ACP stdio server needs no approval")
	}
}

// TestMCPApprovalREPLCard: in the REPL, the first turn puts the project's
// unapproved server on a card naming its command line; "p" approves it for
// the project (kept), and its tool runs in that same turn.
func TestMCPApprovalREPLCard(t *testing.T) {
	skipNoFork(t)
	fm := newFakeModel(t)
	replEnv(t, fm)
	proj := copyProject(t, "basic")
	log := filepath.Join(t.TempDir(), "log")
	writeProjectMCP(t, proj, log)
	setTrust(proj, true)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &runFlags{sessionOpts: sessionOpts{mode: "auto", cwd: proj}}
	e, cleanup, err := newSessionEngine(ctx, &f.sessionOpts, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	cfg, _ := loadConfig()
	pr, pw := io.Pipe()
	h := &replHarness{t: t, fm: fm, in: pw, out: newSyncBuffer(), done: make(chan error, 1), proj: proj}
	h.r = newRepl(ctx, e, f, cfg, replIO{in: pr, out: h.out, width: 100})
	go func() {
		h.r.start()
		h.done <- h.r.run("")
	}()
	t.Cleanup(func() { pw.Close() })
	fm.push(callsReply(fakeCall{"mcp__proj__echo", map[string]any{"text": "from the card"}}), textReply("done"))
	h.typ("use the project's tool")
	h.expect("would start this program")
	h.expect("TestFakeMCPProcess")
	h.typ("p")
	h.turnDone()
	if res := toolResults(fm.got()[1]); len(res) != 1 || !strings.Contains(res[0], "echo: from the card") {
		t.Errorf("the approved server's tool: %v", res)
	}
	root := evalExisting(proj)
	if ok, _ := mcpApproved(root, mcpServerConfig{Name: "proj", Source: "project", Command: os.Args[0], Args: []string{"-test.run=^TestFakeMCPProcess$"}, Cwd: root,
		Env: map[string]string{"LEMBAS_FAKE_MCP": "normal", "LEMBAS_FAKE_MCP_LOG": log, "LEMBAS_TEST_TOKEN": "x"}}); !ok {
		b, _ := os.ReadFile(mcpApprovalFile())
		t.Errorf("the approval was not kept for %s: %s", root, b)
	}
	h.exit()
}

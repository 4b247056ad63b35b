package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// writeMCPConfig writes config.yaml with one fake stdio server and the
// given extra lines (permissions).
func writeMCPConfig(t *testing.T, mode, log string, extra ...string) {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas")
	os.MkdirAll(dir, 0o755)
	y := "mcp:\n  fake:\n    command: " + strconv.Quote(os.Args[0]) + "\n    args: [\"-test.run=^TestFakeMCPProcess$\"]\n" +
		"    env:\n      LEMBAS_FAKE_MCP: " + mode + "\n      LEMBAS_FAKE_MCP_LOG: " + strconv.Quote(log) + "\n" +
		"      LEMBAS_FAKE_MCP_GATE: " + strconv.Quote(log+".gate") + "\n" + strings.Join(extra, "\n") + "\n"
	// The server's world has a /tmp of its own: the folder of its log and
	// gate (a test's temp folder) is made writable, so both sides see it.
	y += "sandbox:\n  writable: [" + strconv.Quote(filepath.Dir(log)) + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
}

// mcpEngine is a session engine on the basic project with config.yaml's
// servers; headless refuses what would be asked.
func mcpEngine(t *testing.T, fm *fakeModel, mode string, headless bool) *engine {
	t.Helper()
	proj := copyProject(t, "basic")
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: mode, cwd: proj}, headless, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if headless {
		e.ask = headlessApprover{}
	}
	return e
}

func requestTools(r fakeRequest) []string {
	var names []string
	for _, raw := range r.Body.Tools {
		var d struct {
			Function struct{ Name string } `json:"function"`
		}
		json.Unmarshal(raw, &d)
		names = append(names, d.Function.Name)
	}
	return names
}

// TestMCPSessionEndToEnd: config.yaml's server joins the first request's
// tools (after the built-in ones, sorted), a call runs, and a changed tool
// list reaches the model as a session note at the next turn.
func TestMCPSessionEndToEnd(t *testing.T) {
	skipNoFork(t)
	fm := newFakeModel(t)
	replEnv(t, fm)
	log := filepath.Join(t.TempDir(), "log")
	writeMCPConfig(t, "wait", log)
	e := mcpEngine(t, fm, "auto", false)
	// The session is open while the server is still starting (it waits for
	// its gate): a prompt could be typed now.
	if st, _, _ := e.tb.mcp.servers[0].status(); st != "connecting" {
		t.Fatalf("the slow server is %s before its gate opened; the session waited for it", st)
	}
	os.WriteFile(log+".gate", nil, 0o600)
	fm.push(callsReply(fakeCall{"mcp__fake__echo", map[string]any{"text": "hi"}}),
		callsReply(fakeCall{"mcp__fake__change", map[string]any{}}),
		textReply("done"), textReply("ok"))
	if out := e.runTurn(context.Background(), "use the echo tool"); out.Err != nil || out.Answer != "done" {
		t.Fatalf("turn: %+v", out)
	}
	reqs := fm.got()
	names := requestTools(reqs[0])
	var mcp []string
	for _, n := range names {
		if strings.HasPrefix(n, "mcp__") {
			mcp = append(mcp, n)
		}
	}
	if len(mcp) != len(fakeMCPTools) || !strings.HasPrefix(names[len(names)-len(mcp)], "mcp__") {
		t.Fatalf("tools of the first request: %v", names)
	}
	if res := toolResults(reqs[1]); len(res) != 1 || !strings.Contains(res[0], "echo: hi") {
		t.Errorf("the echo result: %v", res)
	}
	if out := e.runTurn(context.Background(), "again"); out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs = fm.got()
	last := reqs[len(reqs)-1].messages()
	if u, _ := last[len(last)-1]["content"].(string); !strings.Contains(u, "The tools of MCP server fake changed") {
		t.Errorf("no session note of the change: %q", u)
	}
	if a, b := string(reqs[0].Body.Tools[0]), string(reqs[len(reqs)-1].Body.Tools[0]); a != b || len(reqs[0].Body.Tools) != len(reqs[len(reqs)-1].Body.Tools) {
		t.Errorf("the tools changed within the session")
	}
}

// TestMCPPermissions: an MCP call is asked in manual mode, so -p refuses it;
// rules mcp__server, mcp__server__* and mcp__server__tool allow or deny it.
func TestMCPPermissions(t *testing.T) {
	skipNoFork(t)
	cases := []struct {
		mode  string
		rules []string
		want  string
	}{
		{"manual", nil, "nobody can answer"},
		{"edit", nil, "nobody can answer"},
		{"manual", []string{"permissions:", "  allow: [mcp__fake]"}, "echo: hi"},
		{"manual", []string{"permissions:", "  allow: [\"mcp__fake__*\"]"}, "echo: hi"},
		{"manual", []string{"permissions:", "  allow: [mcp__fake__echo]"}, "echo: hi"},
		{"auto", nil, "echo: hi"},
		{"auto", []string{"permissions:", "  deny: [mcp__fake__echo]"}, "refuses it"},
		{"auto", []string{"permissions:", "  deny: [mcp__fake]"}, "refuses it"},
		{"auto", []string{"permissions:", "  deny: [mcp__other]"}, "echo: hi"},
	}
	for _, c := range cases {
		fm := newFakeModel(t)
		replEnv(t, fm)
		writeMCPConfig(t, "normal", filepath.Join(t.TempDir(), "log"), c.rules...)
		e := mcpEngine(t, fm, c.mode, true)
		fm.push(callsReply(fakeCall{"mcp__fake__echo", map[string]any{"text": "hi"}}), textReply("done"))
		e.runTurn(context.Background(), "echo")
		reqs := fm.got()
		if len(reqs) < 2 {
			t.Fatalf("%s %v: %d requests", c.mode, c.rules, len(reqs))
		}
		if res := toolResults(reqs[1]); len(res) != 1 || !strings.Contains(res[0], c.want) {
			t.Errorf("%s %v: %v, want %q", c.mode, c.rules, res, c.want)
		}
	}
}

// TestMCPSearchTool: with a tiny context window the schemas go behind
// mcp_tools, which finds a tool and calls it under the same permissions.
func TestMCPSearchTool(t *testing.T) {
	skipNoFork(t)
	fm := newFakeModel(t)
	replEnv(t, fm)
	writeMCPConfig(t, "normal", filepath.Join(t.TempDir(), "log"))
	e := mcpEngine(t, fm, "auto", true)
	e.ref.Meta.Context = 2000
	fm.push(callsReply(fakeCall{"mcp_tools", map[string]any{"query": "echo"}}),
		callsReply(fakeCall{"mcp_tools", map[string]any{"name": "mcp__fake__echo", "arguments": map[string]any{"text": "found"}}}),
		textReply("done"))
	e.runTurn(context.Background(), "find echo")
	reqs := fm.got()
	names := requestTools(reqs[0])
	if names[len(names)-1] != "mcp_tools" || strings.Contains(strings.Join(names, ","), "mcp__") {
		t.Fatalf("tools: %v", names)
	}
	if res := toolResults(reqs[1]); len(res) != 1 || !strings.Contains(res[0], `"name":"mcp__fake__echo"`) {
		t.Errorf("search: %v", res)
	}
	if res := toolResults(reqs[2]); len(res) != 2 || !strings.Contains(res[1], "echo: found") {
		t.Errorf("call: %v", res)
	}
}

// TestMCPFailedServerNotice: a server that fails is left out with a notice
// naming it and why, and the others' tools are there.
func TestMCPFailedServerNotice(t *testing.T) {
	skipNoFork(t)
	fm := newFakeModel(t)
	replEnv(t, fm)
	writeMCPConfig(t, "normal", filepath.Join(t.TempDir(), "log"),
		"  broken:", "    command: "+strconv.Quote(os.Args[0]), "    args: [\"-test.run=^TestFakeMCPProcess$\"]",
		"    startup_timeout: 60", "    env:", "      LEMBAS_FAKE_MCP: flood")
	e := mcpEngine(t, fm, "auto", true)
	var notices []string
	e.emit = func(ev event) {
		if ev.Type == evNotice {
			notices = append(notices, ev.Text)
		}
	}
	fm.push(textReply("hi"))
	e.runTurn(context.Background(), "hello")
	if len(notices) != 1 || !strings.Contains(notices[0], "MCP server broken left out: it exited (exit status 3)") {
		t.Errorf("notices: %q", notices)
	}
	if n := len(requestTools(fm.got()[0])); n < len(fakeMCPTools) {
		t.Errorf("%d tools", n)
	}
}

// TestMCPList: `lembas mcp list` starts the servers, waits, and shows each
// with its state and tools; a token that is not set is shown as needed.
func TestMCPList(t *testing.T) {
	skipNoFork(t)
	replEnv(t, newFakeModel(t))
	os.Unsetenv("LEMBAS_TEST_NO_TOKEN")
	writeMCPConfig(t, "normal", filepath.Join(t.TempDir(), "log"),
		"  remote:", "    url: http://127.0.0.1:1/mcp", "    headers:", "      Authorization: Bearer ${LEMBAS_TEST_NO_TOKEN}",
		"  off:", "    command: nothing", "    enabled: false")
	var out, errb strings.Builder
	if code := run([]string{"mcp", "list", "--cwd", t.TempDir()}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"MCP servers (3):", "fake (config, stdio): " + strconv.Itoa(len(fakeMCPTools)) + " tools", "    mcp__fake__echo",
		"remote (config, http): failed: needs a token: set LEMBAS_TEST_NO_TOKEN", "off (config, stdio): disabled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mcp list lacks %q:\n%s", want, out.String())
		}
	}
}

// TestMCPSources: a trusted project's .mcp.json adds its servers (names
// made to fit, cwd the project's); an untrusted one adds none; config.yaml
// wins a name both give; ${VAR:-default} expands.
func TestMCPSources(t *testing.T) {
	replEnv(t, newFakeModel(t))
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("mcp:\n  shared:\n    url: http://127.0.0.1:9/mcp\n    _meta:\n      lembas:\n        scope: s1\n"), 0o600)
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(`{"mcpServers": {
		"my tools": {"command": "${LEMBAS_TEST_CMD:-mytool}", "args": ["--flag"], "env": {"K": "v"}, "extraKey": 1},
		"shared": {"command": "ignored"},
		"remote": {"type": "http", "url": "http://127.0.0.1:9/other", "headers": {"X-Key": "${LEMBAS_TEST_KEY}"}}}}`), 0o600)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := mcpServersFor(cfg, proj, nil, os.Getenv)
	if err != nil || len(got) != 1 {
		t.Fatalf("an untrusted project: %v %+v", err, got)
	}
	if string(got[0].Meta) != `{"lembas":{"scope":"s1"}}` {
		t.Errorf("_meta from config.yaml: %s", got[0].Meta)
	}
	setTrust(proj, true)
	got, _, err = mcpServersFor(cfg, proj, nil, func(k string) string {
		if k == "LEMBAS_TEST_KEY" {
			return "k3y"
		}
		return ""
	})
	if err != nil || len(got) != 3 {
		t.Fatalf("a trusted project: %v %+v", err, got)
	}
	byName := map[string]mcpServerConfig{}
	for _, c := range got {
		byName[c.Name] = c
	}
	if c := byName["my_tools"]; c.Command != "mytool" || c.Cwd != proj || c.Source != "project" || c.Env["K"] != "v" {
		t.Errorf("my tools: %+v", c)
	}
	if c := byName["shared"]; c.Source != "config" {
		t.Errorf("shared came from %s, want config", c.Source)
	}
	if c := byName["remote"]; c.Headers["X-Key"] != "k3y" || c.URL != "http://127.0.0.1:9/other" {
		t.Errorf("remote: %+v", c)
	}
	// config.yaml is strict about its own keys and names
	for _, bad := range []string{"mcp:\n  a__b:\n    command: x\n", "mcp:\n  a:\n    comand: x\n", "mcp:\n  a:\n    command: x\n    url: y\n"} {
		os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(bad), 0o600)
		cfg, _ := loadConfig()
		if _, err := mcpFromConfig(cfg); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestMCPReplCommand: /mcp shows the session's servers.
func TestMCPReplCommand(t *testing.T) {
	skipNoFork(t)
	fm := newFakeModel(t)
	replEnv(t, fm)
	writeMCPConfig(t, "normal", filepath.Join(t.TempDir(), "log"))
	e := mcpEngine(t, fm, "auto", false)
	e.tb.mcp.wait(context.Background())
	cfg, _ := loadConfig()
	out := newSyncBuffer()
	r := newRepl(context.Background(), e, &runFlags{sessionOpts: sessionOpts{mode: "auto"}}, cfg, replIO{in: strings.NewReader(""), out: out, width: 100})
	r.terminalCommand("mcp", "")
	if got := out.String(); !strings.Contains(got, "fake (config, stdio): "+strconv.Itoa(len(fakeMCPTools))+" tools") || !strings.Contains(got, "mcp__fake__structured") {
		t.Errorf("/mcp printed:\n%s", got)
	}
}

// TestMCPLibraryScope: a server with session_scope gets the session's id
// as _meta.lembas.scope on every call, beside the entry's own _meta, over
// HTTP with a bearer token from the environment.
func TestMCPLibraryScope(t *testing.T) {
	fm := newFakeModel(t)
	replEnv(t, fm)
	web := newFakeHTTPMCP(t)
	web.bearer = "lib-token"
	t.Setenv("LEMBAS_TEST_LIB_TOKEN", "lib-token")
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("mcp:\n  library:\n    url: "+web.srv.URL+"/mcp\n    session_scope: true\n"+
		"    headers:\n      Authorization: Bearer ${LEMBAS_TEST_LIB_TOKEN}\n    _meta:\n      lembas:\n        kind: notes\n"), 0o600)
	e := mcpEngine(t, fm, "auto", true)
	fm.push(callsReply(fakeCall{"mcp__library__meta", map[string]any{}}), textReply("done"))
	e.runTurn(context.Background(), "look it up")
	want := `{"lembas":{"kind":"notes","scope":"` + e.sess.ID + `"}}`
	if res := toolResults(fm.got()[1]); len(res) != 1 || !strings.Contains(res[0], want) {
		t.Errorf("the call's _meta: %v, want %s", res, want)
	}
	// The token lives in the environment and in memory only: nothing lembas
	// wrote (sessions, state) holds it.
	filepath.Walk(os.Getenv("XDG_STATE_HOME"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "lib-token") {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})
}

// TestMCPBinaryLeavesNoProcess: `lembas -p` with a stdio server whose tool
// starts a child: when lembas exits, neither the server nor its child is
// left running (a real process check).
func TestMCPBinaryLeavesNoProcess(t *testing.T) {
	skipNoFork(t)
	fm := newFakeModel(t)
	fm.push(callsReply(fakeCall{"mcp__fake__child", map[string]any{}}), textReply("done"))
	cfgHome, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	log := filepath.Join(t.TempDir(), "log")
	writeMCPConfig(t, "normal", log)
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "OPENAI_API_KEY=x", "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + cfgHome}
	r := runLembas(t, env, t.TempDir(), "", "--mode", "auto", "--output-format", "json", "-p", "start the child")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := toolResults(fm.got()[1])
	if len(res) != 1 {
		t.Fatalf("results: %v", res)
	}
	lines := strings.Split(strings.TrimSpace(res[0]), "\n")
	child, err := strconv.Atoi(lines[len(lines)-1])
	if err != nil || child <= 0 {
		t.Fatalf("the child's pid from %q", res[0])
	}
	// The server runs in a world of its own (a pid namespace where one can
	// be made), so the pid it names may be the world's: look for the child
	// by its argument as well.
	if runtime.GOOS != "linux" && mcpAlive(child) || runtime.GOOS == "linux" && sleepAlive(fakeChildSleep) {
		t.Errorf("the server's child %d outlived lembas -p", child)
	}
	// The server's own pid: the fake logs none, so look for any process
	// still running this test binary as the fake server.
	out, _ := os.ReadFile(log)
	if !strings.Contains(string(out), `"name":"child"`) {
		t.Fatalf("the server saw no call: %s", out)
	}
	if pids := fakeServerPids(t, log); len(pids) > 0 {
		t.Errorf("fake MCP server processes still running after lembas exited: %v", pids)
	}
}

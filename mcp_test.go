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
	"time"
)

// connected starts one server and waits for its handshake.
func connected(t *testing.T, cfg mcpServerConfig) *mcpServer {
	t.Helper()
	s := newMCPServer(cfg, func(string) {})
	s.connect(context.Background())
	t.Cleanup(s.close)
	return s
}

func skipNoFork(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake stdio server's checks use Unix process groups")
	}
}

func readLog(t *testing.T, p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func TestMCPStdioHandshakeVersions(t *testing.T) {
	skipNoFork(t)
	for _, c := range []struct{ mode, version string }{{"normal", "2025-11-25"}, {"old", "2024-11-05"}} {
		log := filepath.Join(t.TempDir(), "log")
		s := connected(t, fakeStdioConfig(t, "fake", c.mode, log))
		state, reason, tools := s.status()
		if state != "ready" || s.version != c.version {
			t.Fatalf("%s: state %s (%s), version %q; want ready at %s", c.mode, state, reason, s.version, c.version)
		}
		if len(tools) != len(fakeMCPTools) {
			t.Errorf("%s: %d tools, want %d", c.mode, len(tools), len(fakeMCPTools))
		}
		got := readLog(t, log)
		if !strings.Contains(got, `"protocolVersion":"2025-11-25"`) || !strings.Contains(got, `"method":"notifications/initialized"`) {
			t.Errorf("%s: the server did not see initialize at the newest version and initialized:\n%s", c.mode, got)
		}
	}
	s := connected(t, fakeStdioConfig(t, "fake", "newer", filepath.Join(t.TempDir(), "log")))
	if state, reason, _ := s.status(); state != "failed" || !strings.Contains(reason, "2099-01-01") {
		t.Errorf("a server at an unknown version: %s %q, want failed naming the version", state, reason)
	}
}

func TestMCPPagination(t *testing.T) {
	skipNoFork(t)
	s := connected(t, fakeStdioConfig(t, "fake", "pages", filepath.Join(t.TempDir(), "log")))
	_, reason, tools := s.status()
	if len(tools) != len(fakeMCPTools) {
		t.Fatalf("%d tools over pages of 2 (%s), want %d", len(tools), reason, len(fakeMCPTools))
	}
	for i := 1; i < len(tools); i++ {
		if tools[i-1].Name >= tools[i].Name {
			t.Errorf("tools not sorted: %s before %s", tools[i-1].Name, tools[i].Name)
		}
	}
}

// TestMCPResultKinds calls every kind of result through a real server.
func TestMCPResultKinds(t *testing.T) {
	skipNoFork(t)
	s := connected(t, fakeStdioConfig(t, "fake", "normal", filepath.Join(t.TempDir(), "log")))
	call := func(name, args string, vision bool) toolResult {
		return s.callTool(context.Background(), mcpTool{Server: "fake", Name: name}, json.RawMessage(args), vision)
	}
	cases := []struct {
		name, args string
		vision     bool
		want       string
		isErr      bool
		images     int
	}{
		{"echo", `{"text":"hi"}`, false, "echo: hi", false, 0},
		{"image", `{}`, true, "a red dot", false, 1},
		{"image", `{}`, false, "this model cannot see images", false, 0},
		{"link", `{}`, false, "[resource x.txt: file:///tmp/x.txt] a file", false, 0},
		{"structured", ``, false, `{"temp":21.5,"unit":"C"}`, false, 0},
		{"iserror", `{}`, false, "it went wrong", true, 0},
		{"rpcerror", `{}`, false, "unknown argument (code -32602)", true, 0},
	}
	for _, c := range cases {
		r := call(c.name, c.args, c.vision)
		if !strings.Contains(r.Text, c.want) || r.IsError != c.isErr || len(r.Images) != c.images {
			t.Errorf("%s (vision %v): %+v; want text with %q, error %v, %d images", c.name, c.vision, r, c.want, c.isErr, c.images)
		}
	}
}

func TestMCPTimeoutAndCancelSendCancelled(t *testing.T) {
	skipNoFork(t)
	log := filepath.Join(t.TempDir(), "log")
	cfg := fakeStdioConfig(t, "fake", "normal", log)
	cfg.CallTimeout = 200 * time.Millisecond
	s := connected(t, cfg)
	r := s.callTool(context.Background(), mcpTool{Server: "fake", Name: "hang"}, nil, false)
	if !r.IsError || !strings.Contains(r.Text, "did not answer hang") {
		t.Fatalf("a call never answered: %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cfg.CallTimeout = time.Hour
	done := make(chan toolResult)
	go func() { done <- s.callTool(ctx, mcpTool{Server: "fake", Name: "hang"}, nil, false) }()
	mcpWaitFor(t, func() bool { return strings.Count(readLog(t, log), `"name":"hang"`) == 2 })
	cancel()
	r = <-done
	if r.Status != "cancelled" {
		t.Errorf("a cancelled call: %+v", r)
	}
	// Both requests' ids appear in a notifications/cancelled.
	mcpWaitFor(t, func() bool { return strings.Count(readLog(t, log), `"method":"notifications/cancelled"`) == 2 })
	got := readLog(t, log)
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, `"name":"hang"`) {
			var m struct{ ID json.RawMessage }
			json.Unmarshal([]byte(line), &m)
			if !strings.Contains(got, `"requestId":`+string(m.ID)) {
				t.Errorf("no notifications/cancelled names request %s:\n%s", m.ID, got)
			}
		}
	}
	if !strings.Contains(got, `"reason":"timeout"`) {
		t.Errorf("the timeout's cancel gives no reason:\n%s", got)
	}
}

// mcpWaitFor polls a condition that a goroutine makes true; the test's own
// deadline bounds it.
func mcpWaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMCPServerDiesMidCall(t *testing.T) {
	skipNoFork(t)
	s := connected(t, fakeStdioConfig(t, "fake", "normal", filepath.Join(t.TempDir(), "log")))
	r := s.callTool(context.Background(), mcpTool{Server: "fake", Name: "die"}, nil, false)
	if !r.IsError || !strings.Contains(r.Text, "ended while running die") || !strings.Contains(r.Text, "exit status 7") {
		t.Fatalf("a call whose server died: %+v, want how it ended", r)
	}
	mcpWaitFor(t, func() bool { st, _, _ := s.status(); return st == "failed" })
	r = s.callTool(context.Background(), mcpTool{Server: "fake", Name: "echo"}, nil, false)
	if !r.IsError || !strings.Contains(r.Text, "exit status 7") {
		t.Errorf("a call after the server died: %+v", r)
	}
}

func TestMCPFloodedStderrAndExit(t *testing.T) {
	skipNoFork(t)
	cfg := fakeStdioConfig(t, "flood", "flood", filepath.Join(t.TempDir(), "log"))
	cfg.StartupTimeout = time.Minute // reading the flood is the work here, not the timeout
	s := connected(t, cfg)
	state, reason, _ := s.status()
	if state != "failed" || !strings.Contains(reason, "exit status 3") || !strings.Contains(reason, "fatal: the last words") {
		t.Fatalf("a server that floods stderr and exits: %s %q", state, reason)
	}
	if limit := int(theMCP().num("stderr_lines")) * (int(theMCP().num("stderr_line_bytes")) + 3); len(reason) > limit+500 {
		t.Errorf("the reason keeps %d bytes of stderr, want at most about %d", len(reason), limit)
	}
}

func TestMCPStartupTimeout(t *testing.T) {
	skipNoFork(t)
	cfg := fakeStdioConfig(t, "silent", "silent", filepath.Join(t.TempDir(), "log"))
	cfg.StartupTimeout = 300 * time.Millisecond
	s := connected(t, cfg)
	if state, reason, _ := s.status(); state != "failed" || !strings.Contains(reason, "did not finish starting") {
		t.Errorf("a server that never answers initialize: %s %q", state, reason)
	}
}

func TestMCPShutdownLeavesNoProcess(t *testing.T) {
	skipNoFork(t)
	log := filepath.Join(t.TempDir(), "log")
	s := connected(t, fakeStdioConfig(t, "fake", "normal", log))
	r := s.callTool(context.Background(), mcpTool{Server: "fake", Name: "child"}, nil, false)
	child, err := strconv.Atoi(strings.TrimSpace(r.Text))
	if err != nil || child <= 0 {
		t.Fatalf("the child's pid: %+v", r)
	}
	leader := s.tr.(*mcpStdio).cmd.Process.Pid
	if !mcpAlive(leader) || !mcpAlive(child) {
		t.Fatalf("before close: leader %d alive %v, child %d alive %v", leader, mcpAlive(leader), child, mcpAlive(child))
	}
	if runtime.GOOS == "linux" && len(fakeServerPids(t, log)) != 2 {
		t.Fatalf("the process check sees %v, want the server and its child", fakeServerPids(t, log))
	}
	set := &mcpSet{servers: []*mcpServer{s}, cancel: func() {}}
	set.close()
	mcpWaitFor(t, func() bool { return !mcpAlive(child) })
	if mcpAlive(leader) {
		t.Errorf("the server %d outlived close", leader)
	}
	if pids := fakeServerPids(t, log); len(pids) > 0 {
		t.Errorf("still running after close: %v", pids)
	}
}

func TestMCPHTTPTransport(t *testing.T) {
	for _, sse := range []bool{false, true} {
		f := newFakeHTTPMCP(t)
		f.sse = sse
		f.bearer = "sekrit"
		t.Setenv("FAKE_MCP_TOKEN", "sekrit")
		cfg := f.config("web")
		cfg.Headers = map[string]string{"Authorization": "Bearer ${FAKE_MCP_TOKEN}"}
		cfg.Meta = json.RawMessage(`{"lembas":{"scope":"sess-123"}}`)
		cfg.expand(os.Getenv)
		s := connected(t, cfg)
		if st, reason, tools := s.status(); st != "ready" || len(tools) != len(fakeMCPTools) {
			t.Fatalf("sse %v: %s (%s), %d tools", sse, st, reason, len(tools))
		}
		r := s.callTool(context.Background(), mcpTool{Server: "web", Name: "echo"}, json.RawMessage(`{"text":"over http"}`), false)
		if r.Text != "echo: over http" {
			t.Fatalf("sse %v: %+v", sse, r)
		}
		f.mu.Lock()
		f.forget = true
		f.mu.Unlock()
		r = s.callTool(context.Background(), mcpTool{Server: "web", Name: "echo"}, json.RawMessage(`{"text":"again"}`), false)
		if r.Text != "echo: again" {
			t.Fatalf("sse %v: after a 404 the call was not retried on a new session: %+v", sse, r)
		}
		s.close()
		f.mu.Lock()
		if f.inits != 2 || f.deletes != 1 {
			t.Errorf("sse %v: %d initialize, %d DELETE; want 2 and 1", sse, f.inits, f.deletes)
		}
		if len(f.metas) == 0 || f.metas[0] != `{"lembas":{"scope":"sess-123"}}` {
			t.Errorf("sse %v: _meta of tools/call: %v", sse, f.metas)
		}
		for _, v := range f.versions {
			if strings.HasPrefix(v, "initialize=") != (v == "initialize=") || (!strings.HasPrefix(v, "initialize") && !strings.HasSuffix(v, "=2025-11-25")) {
				t.Errorf("sse %v: MCP-Protocol-Version: %v", sse, f.versions)
				break
			}
		}
		f.mu.Unlock()
	}
}

func TestMCPHTTPNeedsToken(t *testing.T) {
	f := newFakeHTTPMCP(t)
	cfg := f.config("web")
	cfg.Headers = map[string]string{"Authorization": "Bearer ${LEMBAS_TEST_UNSET_TOKEN}"}
	os.Unsetenv("LEMBAS_TEST_UNSET_TOKEN")
	cfg.expand(os.Getenv)
	s := connected(t, cfg)
	if st, reason, _ := s.status(); st != "failed" || !strings.Contains(reason, "needs a token: set LEMBAS_TEST_UNSET_TOKEN") {
		t.Errorf("unset token: %s %q", st, reason)
	}
}

// TestMCPHTTPResume: the tools/call stream closes after a priming event
// (id e1, retry 50 ms); the answer comes on the GET that resumes it, which
// must carry Last-Event-ID: e1.
func TestMCPHTTPResume(t *testing.T) {
	f := newFakeHTTPMCP(t)
	f.sse, f.cut = true, true
	s := connected(t, f.config("web"))
	r := s.callTool(context.Background(), mcpTool{Server: "web", Name: "echo"}, json.RawMessage(`{"text":"resumed"}`), false)
	if r.Text != "echo: resumed" {
		t.Fatalf("%+v", r)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.lastIDs) != 1 || f.lastIDs[0] != "e1" {
		t.Errorf("GETs with Last-Event-ID %v, want [e1]", f.lastIDs)
	}
}

// TestMCPHTTPTimeoutSendsCancelled: a call whose answer never comes — no
// headers at all (JSON), or a stream that stays silent (SSE) — ends at the
// call timeout with notifications/cancelled, not at the HTTP timeouts.
func TestMCPHTTPTimeoutSendsCancelled(t *testing.T) {
	for _, sse := range []bool{false, true} {
		f := newFakeHTTPMCP(t)
		f.sse = sse
		cfg := f.config("web")
		cfg.CallTimeout = 200 * time.Millisecond
		s := connected(t, cfg)
		r := s.callTool(context.Background(), mcpTool{Server: "web", Name: "hang"}, nil, false)
		if !r.IsError || !strings.Contains(r.Text, "did not answer") {
			t.Fatalf("sse %v: %+v", sse, r)
		}
		mcpWaitFor(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.cancelled) == 1 })
		f.mu.Lock()
		if !strings.Contains(f.cancelled[0], `"requestId":3`) {
			t.Errorf("sse %v: notifications/cancelled: %v (tools/call was request 3)", sse, f.cancelled)
		}
		f.mu.Unlock()
		s.close()
	}
}

func TestMCPOfferedNames(t *testing.T) {
	n := mcpOfferedName("srv", fakeLongTool)
	if len(n) != 64 || !strings.HasPrefix(n, "mcp__srv__a_tool") {
		t.Errorf("long name %q (%d)", n, len(n))
	}
	if n2 := mcpOfferedName("srv", fakeLongTool+"x"); n2 == n {
		t.Errorf("two long names collide: %q", n)
	}
	if got := mcpOfferedName("srv", "get item/ä"); got != "mcp__srv__get_item__" {
		t.Errorf("sanitised %q", got)
	}
}

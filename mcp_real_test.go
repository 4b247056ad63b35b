package main

// Real MCP servers from npm, driven through the whole lembas path: a
// config.yaml mcp: entry, `lembas -p` run in-process, and the scripted fake
// model calling the server's tools by their offered mcp__server__tool names.
// Each step asserts what the server really answered, as the model saw it.
// LEMBAS_MCP_CONFORMANCE names the folder where .ci/run installed the
// servers; without it (or without a server's package) the test skips.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// realStep is one tool call the model makes and what its result must hold
// (every want, case-insensitively; an error is asserted by its words).
type realStep struct {
	tool    string
	args    any
	want    []string
	refused bool // lembas refuses the call (nobody can approve it under -p): the run exits exitNotDone
}

// runRealLembas writes config.yaml with the given mcp: entries, queues one
// model reply per step and a closing answer, and runs `lembas -p` on a
// trusted project. It returns the tool result the model saw for each step,
// stderr, and the names of the tools the first request offered.
func runRealLembas(t *testing.T, proj, mcpYAML string, steps []realStep) (results []string, stderr string, offered []string) {
	t.Helper()
	if proj == "" {
		proj = t.TempDir()
	}
	fm := newFakeModel(t)
	replEnv(t, fm)
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas")
	os.MkdirAll(dir, 0o755)
	cfg := "mcp:\n" + mcpYAML
	if inst := os.Getenv("LEMBAS_MCP_CONFORMANCE"); inst != "" {
		// The servers are installed where .ci/run put them, a temp folder:
		// the host's /tmp, which a server's world does not show. A person's
		// servers live in home or the system's folders, which it shows.
		cfg += "sandbox:\n  writable: [" + strconv.Quote(inst) + "]\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	setTrust(proj, true)
	for _, s := range steps {
		fm.push(callsReply(fakeCall{s.tool, s.args}))
	}
	fm.push(textReply("done"))
	var out, errb bytes.Buffer
	code := run([]string{"--mode", "auto", "--cwd", proj, "-p", "use the tools"}, strings.NewReader(""), &out, &errb)
	want := exitOK
	for _, st := range steps {
		if st.refused {
			want = exitNotDone
		}
	}
	if code != want || !strings.Contains(out.String(), "done") {
		t.Errorf("lembas -p exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	reqs := fm.got()
	if len(reqs) > 0 {
		offered = requestTools(reqs[0])
	}
	for i := range steps {
		if i+1 >= len(reqs) {
			t.Fatalf("the model was asked %d times for %d steps; stderr: %s", len(reqs), len(steps), errb.String())
		}
		tr := toolResults(reqs[i+1])
		if len(tr) <= i {
			t.Fatalf("step %d (%s): no tool result reached the model", i, steps[i].tool)
		}
		results = append(results, tr[i])
	}
	return results, errb.String(), offered
}

// checkSteps asserts each step's result.
func checkSteps(t *testing.T, server string, steps []realStep, results []string) {
	t.Helper()
	for i, s := range steps {
		r := results[i]
		fmt.Printf("mcp real: %s %s → %q\n", server, strings.TrimPrefix(s.tool, "mcp__"+server+"__"), cutRunes(strings.ReplaceAll(r, "\n", " "), 160))
		low := strings.ToLower(r)
		for _, w := range s.want {
			if !strings.Contains(low, strings.ToLower(w)) {
				t.Errorf("%s: result lacks %q:\n%s", s.tool, w, r)
			}
		}
	}
}

// realPackage is the entry script of an installed npm server, or skips.
func realPackage(t *testing.T, pkg, script string) string {
	dir := os.Getenv("LEMBAS_MCP_CONFORMANCE")
	if dir == "" {
		t.Skip("set LEMBAS_MCP_CONFORMANCE to a folder with the reference MCP servers installed (.ci/run does)")
	}
	p := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", script)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed in %s", pkg, dir)
	}
	return p
}

func TestMCPRealServers(t *testing.T) {
	if os.Getenv("LEMBAS_MCP_CONFORMANCE") == "" {
		t.Skip("set LEMBAS_MCP_CONFORMANCE to a folder with the reference MCP servers installed (.ci/run does)")
	}
	t.Run("filesystem", func(t *testing.T) {
		main := realPackage(t, "server-filesystem", "index.js")
		// The server may use proj/data; proj/other is in the project (lembas
		// lets the call through) but not the server's, which refuses it;
		// a path outside the project lembas refuses before the server sees it.
		proj := t.TempDir()
		allowed, other := filepath.Join(proj, "data"), filepath.Join(proj, "other")
		os.MkdirAll(allowed, 0o755)
		os.MkdirAll(other, 0o755)
		os.WriteFile(filepath.Join(allowed, "hello.txt"), []byte("hello from the allowed dir\n"), 0o600)
		secret := filepath.Join(other, "secret.txt")
		os.WriteFile(secret, []byte("not for the model\n"), 0o600)
		outside := filepath.Join(t.TempDir(), "x.txt")
		os.WriteFile(outside, []byte("not for the model\n"), 0o600)
		yaml := "  fs:\n    command: node\n    args: [" + strconv.Quote(main) + ", " + strconv.Quote(allowed) + "]\n"
		steps := []realStep{
			{tool: "mcp__fs__write_file", args: map[string]any{"path": filepath.Join(allowed, "new.txt"), "content": "written by lembas"}, want: []string{"successfully wrote"}},
			{tool: "mcp__fs__read_text_file", args: map[string]any{"path": filepath.Join(allowed, "new.txt")}, want: []string{"written by lembas"}},
			{tool: "mcp__fs__list_directory", args: map[string]any{"path": allowed}, want: []string{"[FILE] hello.txt", "[FILE] new.txt"}},
			{tool: "mcp__fs__read_text_file", args: map[string]any{"path": secret}, want: []string{"access denied"}},
			{tool: "mcp__fs__read_text_file", args: map[string]any{"path": outside}, want: []string{"outside the project"}, refused: true},
		}
		results, _, _ := runRealLembas(t, proj, yaml, steps)
		checkSteps(t, "fs", steps, results)
		if b, _ := os.ReadFile(filepath.Join(allowed, "new.txt")); string(b) != "written by lembas" {
			t.Errorf("write_file left %q on disk", b)
		}
		for _, r := range results[3:] {
			if strings.Contains(r, "not for the model") {
				t.Errorf("a refused read leaked the file: %s", r)
			}
		}
	})
	t.Run("memory", func(t *testing.T) {
		main := realPackage(t, "server-memory", "index.js")
		// Its file in the project: the server's world writes only there
		// (and in the session's own /tmp), as a command's does.
		proj := t.TempDir()
		mem := filepath.Join(proj, "memory.jsonl")
		yaml := "  memory:\n    command: node\n    args: [" + strconv.Quote(main) + "]\n    env:\n      MEMORY_FILE_PATH: " + strconv.Quote(mem) + "\n"
		steps := []realStep{
			{tool: "mcp__memory__create_entities", args: map[string]any{"entities": []any{map[string]any{"name": "Ada Lovelace", "entityType": "person", "observations": []any{"wrote the first program"}}}}, want: []string{"Ada Lovelace"}},
			{tool: "mcp__memory__create_relations", args: map[string]any{"relations": []any{map[string]any{"from": "Ada Lovelace", "to": "Ada Lovelace", "relationType": "knows"}}}, want: []string{"knows"}},
			{tool: "mcp__memory__read_graph", args: map[string]any{}, want: []string{"Ada Lovelace", "wrote the first program", "knows"}},
			{tool: "mcp__memory__search_nodes", args: map[string]any{"query": "first program"}, want: []string{"Ada Lovelace"}},
		}
		results, _, _ := runRealLembas(t, proj, yaml, steps)
		checkSteps(t, "memory", steps, results)
		if b, _ := os.ReadFile(mem); !bytes.Contains(b, []byte("Ada Lovelace")) {
			t.Errorf("the memory file holds %q", b)
		}
	})
	t.Run("sequential-thinking", func(t *testing.T) {
		main := realPackage(t, "server-sequential-thinking", "index.js")
		yaml := "  think:\n    command: node\n    args: [" + strconv.Quote(main) + "]\n"
		steps := []realStep{
			{tool: "mcp__think__sequentialthinking", args: map[string]any{"thought": "first, read the issue", "nextThoughtNeeded": false, "thoughtNumber": 1, "totalThoughts": 1},
				want: []string{`"thoughtNumber": 1`, `"nextThoughtNeeded": false`}},
		}
		results, _, _ := runRealLembas(t, "", yaml, steps)
		checkSteps(t, "think", steps, results)
	})
	t.Run("playwright", func(t *testing.T) {
		// @playwright/mcp, the most installed MCP server on npm: its handshake,
		// its schemas — more than the share of the context window lembas
		// gives them, so they stand behind the search-and-load tool — and a
		// call through that tool. No browser is installed here (none may be
		// fetched), so the call's error — the server's own sentence, naming
		// the missing browser — must reach the model as a tool result.
		dir := os.Getenv("LEMBAS_MCP_CONFORMANCE")
		cli := filepath.Join(dir, "node_modules", "@playwright", "mcp", "cli.js")
		if _, err := os.Stat(cli); err != nil {
			t.Skipf("@playwright/mcp is not installed in %s", dir)
		}
		yaml := "  pw:\n    command: node\n    args: [" + strconv.Quote(cli) + ", --headless, --isolated]\n"
		search := theMCP().SearchTool.Name
		steps := []realStep{
			{tool: search, args: map[string]any{"query": "navigate url"}, want: []string{"mcp__pw__browser_navigate", `"url"`}},
			{tool: search, args: map[string]any{"name": "mcp__pw__browser_close", "arguments": map[string]any{}}, want: []string{"### "}}, // the server's answer: its error naming the missing browser here, a result where one is installed
		}
		results, _, offered := runRealLembas(t, "", yaml, steps)
		checkSteps(t, "pw", steps, results)
		if !contains(offered, search) || contains(offered, "mcp__pw__browser_navigate") {
			t.Errorf("playwright's schemas were offered whole, not behind %s: %v", search, offered)
		}
	})
	everything := func(t *testing.T, server string) []realStep {
		p := "mcp__" + server + "__"
		return []realStep{
			{tool: p + "echo", args: map[string]any{"message": "from lembas"}, want: []string{"from lembas"}},
			{tool: p + "get-sum", args: map[string]any{"a": 2, "b": 3}, want: []string{"5"}},
			{tool: p + "get-structured-content", args: map[string]any{"location": "Chicago"}, want: []string{"temperature", "humidity"}},
			{tool: p + "get-resource-links", args: map[string]any{"count": 2}, want: []string{"[resource ", "demo://resource/"}},
			{tool: p + "get-tiny-image", args: map[string]any{}, want: []string{"[image from " + server + " (image/png", "cannot see images"}},
			{tool: p + "get-resource-reference", args: map[string]any{"resourceType": "Text", "resourceId": 1}, want: []string{"demo://resource/"}},
			// 3 s of work under a 2 s call_timeout: progress keeps it going.
			{tool: p + "trigger-long-running-operation", args: map[string]any{"duration": 3, "steps": 6}, want: []string{"Long running operation completed"}},
			{tool: p + "toggle-simulated-logging", args: map[string]any{}, want: []string{"logging"}},
			// lembas advertises elicitation; with -p nobody can answer, so
			// the request ends as cancel (no one chose) and the server says so.
			{tool: p + "trigger-elicitation-request", args: map[string]any{}, want: []string{`"action": "cancel"`}},
			{tool: p + "get-sum", args: map[string]any{"a": "two"}, want: []string{"do not fit its schema"}},
			{tool: p + "no-such-tool", args: map[string]any{}, want: []string{"There is no tool named"}},
		}
	}
	t.Run("everything-stdio", func(t *testing.T) {
		main := realPackage(t, "server-everything", "index.js")
		yaml := "  every:\n    command: node\n    args: [" + strconv.Quote(main) + ", stdio]\n    call_timeout: 2\n"
		steps := everything(t, "every")
		results, _, offered := runRealLembas(t, "", yaml, steps)
		checkSteps(t, "every", steps, results)
		realOffersNoSampling(t, offered)
	})
	t.Run("everything-http", func(t *testing.T) {
		main := realPackage(t, "server-everything", "index.js")
		port := realServeHTTP(t, main)
		yaml := "  every:\n    url: \"http://127.0.0.1:" + port + "/mcp\"\n    call_timeout: 2\n"
		steps := everything(t, "every")
		results, _, offered := runRealLembas(t, "", yaml, steps)
		checkSteps(t, "every", steps, results)
		realOffersNoSampling(t, offered)
	})
}

// realOffersNoSampling: lembas declares no sampling and no roots, so
// server-everything leaves out the tools that need them (it registers them
// only for clients that declare the capability), and offers the rest.
func realOffersNoSampling(t *testing.T, offered []string) {
	t.Helper()
	for _, n := range []string{"mcp__every__trigger-sampling-request", "mcp__every__get-roots-list"} {
		if contains(offered, n) {
			t.Errorf("%s is offered, but lembas declares neither sampling nor roots", n)
		}
	}
	if !contains(offered, "mcp__every__echo") || !contains(offered, "mcp__every__trigger-elicitation-request") {
		t.Errorf("offered: %v", offered)
	}
}

// realServeHTTP starts server-everything in Streamable HTTP mode on a free
// loopback port and waits until it accepts connections; the process is
// ended (its group) when the test ends.
func realServeHTTP(t *testing.T, main string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command("node", main, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Readiness, not a timed assertion: up to a bound, it either listens or
	// the test says why not.
	for i := 0; i < 300; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return port
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server-everything did not listen on %s: %s", port, errb.String())
	return ""
}

// TestMCPMisbehavingServers drives the fake stdio server (mcp_fake_test.go)
// through the same -p path in the ways real servers misbehave: junk on
// stdout before the first message, a crash in the middle of a call, a
// server slower to start than its startup_timeout, and a tool list that
// changes during the session. It needs no npm.
func TestMCPMisbehavingServers(t *testing.T) {
	skipNoFork(t)
	entry := func(name, mode, log string, extra ...string) string {
		y := "  " + name + ":\n    command: " + strconv.Quote(os.Args[0]) + "\n    args: [\"-test.run=^TestFakeMCPProcess$\"]\n" +
			"    env:\n      LEMBAS_FAKE_MCP: " + mode + "\n      LEMBAS_FAKE_MCP_LOG: " + strconv.Quote(log) + "\n" +
			"      LEMBAS_FAKE_MCP_GATE: " + strconv.Quote(log+".gate") + "\n"
		for _, e := range extra {
			y += "    " + e + "\n"
		}
		return y
	}
	t.Run("junk-before-first-message", func(t *testing.T) {
		steps := []realStep{{tool: "mcp__junk__echo", args: map[string]any{"text": "through the junk"}, want: []string{"echo: through the junk"}}}
		results, _, _ := runRealLembas(t, "", entry("junk", "junk", filepath.Join(t.TempDir(), "log")), steps)
		checkSteps(t, "junk", steps, results)
	})
	t.Run("crash-mid-call", func(t *testing.T) {
		steps := []realStep{
			{tool: "mcp__crash__die", args: map[string]any{}, want: []string{"MCP server crash ended while running die", "exit status 7"}},
			{tool: "mcp__crash__echo", args: map[string]any{"text": "after"}, want: []string{"is not running", "exit status 7"}},
		}
		results, _, _ := runRealLembas(t, "", entry("crash", "normal", filepath.Join(t.TempDir(), "log")), steps)
		checkSteps(t, "crash", steps, results)
	})
	t.Run("slower-than-startup-timeout", func(t *testing.T) {
		dir := t.TempDir()
		// slow never opens its gate: it is left out after 1 s, with a
		// notice naming it; quick's tools are there and work.
		y := entry("slow", "wait", filepath.Join(dir, "slow"), "startup_timeout: 1") + entry("quick", "normal", filepath.Join(dir, "quick"))
		steps := []realStep{
			{tool: "mcp__quick__echo", args: map[string]any{"text": "quick"}, want: []string{"echo: quick"}},
			{tool: "mcp__slow__echo", args: map[string]any{"text": "slow"}, want: []string{"There is no tool named mcp__slow__echo"}},
		}
		results, stderr, _ := runRealLembas(t, "", y, steps)
		checkSteps(t, "slow", steps, results)
		if !strings.Contains(stderr, "slow") || !strings.Contains(stderr, "did not finish starting within 1 s") {
			t.Errorf("no notice names the slow server and why: %s", stderr)
		}
	})
	t.Run("progress-keeps-a-long-call-alive", func(t *testing.T) {
		// call_timeout 2 s, the call takes 3 s, with progress every 0.5 s:
		// each report starts the timeout again, so the call finishes; hang,
		// which reports nothing, still times out.
		steps := []realStep{
			{tool: "mcp__long__progress", args: map[string]any{}, want: []string{"finished after 6 reports"}},
			{tool: "mcp__long__hang", args: map[string]any{}, want: []string{"did not answer hang within 2 s"}},
		}
		results, _, _ := runRealLembas(t, "", entry("long", "normal", filepath.Join(t.TempDir(), "log"), "call_timeout: 2"), steps)
		checkSteps(t, "long", steps, results)
	})
	t.Run("tools-list-changed", func(t *testing.T) {
		// The change is noted; the session's tools stay as they were (the
		// prompt prefix stays still), so the next call still works.
		steps := []realStep{
			{tool: "mcp__chg__change", args: map[string]any{}, want: []string{"changed"}},
			{tool: "mcp__chg__echo", args: map[string]any{"text": "still here"}, want: []string{"echo: still here"}},
		}
		log := filepath.Join(t.TempDir(), "log")
		results, _, _ := runRealLembas(t, "", entry("chg", "normal", log), steps)
		checkSteps(t, "chg", steps, results)
	})
}

func init() {
	// mcp_stdio: the fake stdio server in a mode, a few calls through the
	// real client, and what the model would read of each.
	conformanceRunners["mcp_stdio"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Mode        string  `json:"mode"`
			CallTimeout float64 `json:"call_timeout_s"`
			Calls       []struct {
				Tool string          `json:"tool"`
				Args json.RawMessage `json:"args"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		cfg := mcpServerConfig{Name: "srv", Source: "config", Enabled: true, Command: os.Args[0],
			Args: []string{"-test.run=^TestFakeMCPProcess$"}, Env: map[string]string{"LEMBAS_FAKE_MCP": c.Mode},
			CallTimeout: time.Duration(c.CallTimeout * float64(time.Second))}
		s := newMCPServer(cfg, func(string) {})
		defer s.close()
		s.connect(context.Background())
		state, reason, _ := s.status()
		results := []string{}
		for _, call := range c.Calls {
			results = append(results, s.callTool(context.Background(), mcpTool{Server: "srv", Name: call.Tool}, call.Args, false).Text)
		}
		return map[string]any{"state": state, "reason": reason, "results": results}, nil
	}
}

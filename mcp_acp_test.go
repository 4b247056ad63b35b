package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPThroughACP: an editor's stdio and http servers in session/new are
// started, their tools offered and called; initialize says http is spoken.
// The stdio server starts a program: the first turn asks for its command
// line on a card (session/request_permission), answered for the project,
// so the next session starts it unasked.
func TestMCPThroughACP(t *testing.T) {
	skipNoFork(t)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"mcp__editor_fs__echo", map[string]any{"text": "from the editor"}},
		fakeCall{"mcp__editor-web__echo", map[string]any{"text": "over http"}}), textReply("done"))
	web := newFakeHTTPMCP(t)
	proj := copyProject(t, "basic")
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	r := p.result(p.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}), nil)
	caps, _ := r["agentCapabilities"].(map[string]any)
	if mc, _ := caps["mcpCapabilities"].(map[string]any); mc["http"] != true {
		t.Errorf("mcpCapabilities: %v", caps["mcpCapabilities"])
	}
	log := filepath.Join(t.TempDir(), "log")
	servers := []any{
		map[string]any{"name": "editor fs", "command": os.Args[0], "args": []any{"-test.run=^TestFakeMCPProcess$"},
			"env": []any{map[string]any{"name": "LEMBAS_FAKE_MCP", "value": "normal"}, map[string]any{"name": "LEMBAS_FAKE_MCP_LOG", "value": log}}},
		map[string]any{"type": "http", "name": "editor-web", "url": web.srv.URL + "/mcp", "headers": []any{}},
	}
	res := p.result(p.request("session/new", map[string]any{"cwd": proj, "mcpServers": servers, "_meta": map[string]any{"mode": "auto"}}), nil)
	sid, _ := res["sessionId"].(string)
	var outputs []string
	asked := 0
	p.result(p.request("session/prompt", prompt(sid, "use the editor's tools")), func(m map[string]any) {
		if m["method"] == "session/request_permission" {
			asked++
			if s := toJSON(m["params"]); !strings.Contains(s, "TestFakeMCPProcess") || !strings.Contains(s, "editor_fs") {
				t.Errorf("the card does not show the server and its command line: %s", s)
			}
			p.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "project"}}})
			return
		}
		if u := update(m); u != nil && u["sessionUpdate"] == "tool_call_update" {
			if c, ok := u["content"].([]any); ok && len(c) > 0 {
				outputs = append(outputs, strings.TrimSpace(toJSON(c)))
			}
		}
	})
	all := strings.Join(outputs, "\n")
	if !strings.Contains(all, "echo: from the editor") || !strings.Contains(all, "echo: over http") {
		t.Errorf("tool outputs: %s", all)
	}
	if !strings.Contains(readLog(t, log), `"name":"echo"`) {
		t.Errorf("the stdio server saw no call")
	}
	if asked != 1 {
		t.Errorf("asked %d times for the editor's stdio server, want once", asked)
	}
	// Approved for the project: a second session starts it without a card.
	f.push(callsReply(fakeCall{"mcp__editor_fs__echo", map[string]any{"text": "again"}}), textReply("done"))
	res = p.result(p.request("session/new", map[string]any{"cwd": proj, "mcpServers": servers[:1], "_meta": map[string]any{"mode": "auto"}}), nil)
	sid, _ = res["sessionId"].(string)
	outputs = nil
	p.result(p.request("session/prompt", prompt(sid, "again")), func(m map[string]any) {
		if m["method"] == "session/request_permission" {
			t.Errorf("asked again for an approved command line: %s", toJSON(m["params"]))
			p.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "deny"}}})
			return
		}
		if u := update(m); u != nil && u["sessionUpdate"] == "tool_call_update" {
			if c, ok := u["content"].([]any); ok && len(c) > 0 {
				outputs = append(outputs, strings.TrimSpace(toJSON(c)))
			}
		}
	})
	if all := strings.Join(outputs, "\n"); !strings.Contains(all, "echo: again") {
		t.Errorf("second session's outputs: %s", all)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

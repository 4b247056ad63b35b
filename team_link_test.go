package main

// The team through the link against the fake instance: an agent chat with
// Subagents {min 1, max 5} builds the same tree as the end-to-end test
// (team_e2e_test.go) — a sub-manager, a member granted write, a member
// out of context — and the client reads it back: the capabilities, the
// team events, _lembas/team, _lembas/team/findings, _lembas/team/transcript
// and _lembas/team/stop.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestTeamOverLink(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\n")
	script := teamScript(t)
	var mu sync.Mutex
	counts := map[string]int{}
	e.fi.model.route = func(req fakeRequest) fakeReply {
		first := ""
		for _, m := range req.messages() {
			if m["role"] == "user" {
				first, _ = m["content"].(string)
				break
			}
		}
		for k, f := range script {
			if strings.Contains(first, k) {
				mu.Lock()
				counts[k]++
				n := counts[k]
				mu.Unlock()
				return f(n, req)
			}
		}
		t.Errorf("no script for %.200q", first)
		return textReply("?")
	}
	e.startService()
	l := e.link()
	init := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	caps, _ := json.Marshal(init["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"])
	if !strings.Contains(string(caps), `"tree"`) || !strings.Contains(string(caps), `"agents"`) {
		t.Errorf("capabilities %s", caps)
	}
	r := l.result("session/new", map[string]any{"cwd": e.proj, "mcpServers": []any{}, "_meta": map[string]any{"mode": "edit", "lembas_model": "acme/chat-1",
		"lembas": map[string]any{"agents": map[string]any{"min": 1, "max": 5}, "said": []string{"Use a team for this."}}}})
	sid, _ := r["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new %v", r)
	}
	p := promptParams(sid, "PROMPT-MAIN: build a team", "t-1")
	p["_meta"].(map[string]any)["lembas"].(map[string]any)["agents"] = map[string]any{"min": 1, "max": 5}
	res := l.result("session/prompt", p)
	if res["stopReason"] != "end_turn" {
		t.Fatalf("prompt answer %v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(e.proj, "notes.txt")); string(b) != "team notes\n" {
		t.Errorf("notes.txt = %q", b)
	}
	// The team events came up, the members' own events beside them.
	ev := l.waitNote("team event", isEvent("team"))
	if ev["params"].(map[string]any)["sessionId"] != sid {
		t.Errorf("team event %v", ev)
	}
	// _lembas/team: the tree as it ended.
	tr := l.result("_lembas/team", map[string]any{"sessionId": sid})
	raw, _ := json.Marshal(tr["team"])
	var tree teamTree
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	checkTree(t, &tree)
	if tree.Max != 5 {
		t.Errorf("the chat's setting did not reach the tree: %+v", tree)
	}
	f := l.result("_lembas/team/findings", map[string]any{"sessionId": sid, "id": "s3"})
	if f["state"] != "out_of_context" || !strings.Contains(f["report"].(string), "READER-REPORT") || !strings.Contains(string(mustJSON(f["findings"])), "READER-FINDING") {
		t.Errorf("findings %v", f)
	}
	h := l.result("_lembas/team/transcript", map[string]any{"sessionId": sid, "id": "writer"})
	if h["id"] != "s2" || !strings.Contains(string(mustJSON(h)), "WRITER-TASK") {
		t.Errorf("transcript %v", h)
	}
	st := l.result("_lembas/team/stop", map[string]any{"sessionId": sid, "id": "s1"})
	if string(mustJSON(st["stopped"])) != "[]" {
		t.Errorf("stopping an ended subtree: %v", st)
	}
	if e := l.rpcErr("_lembas/team/findings", map[string]any{"sessionId": sid, "id": "s9"}); !strings.Contains(string(mustJSON(e)), "no subagent s9") {
		t.Errorf("unknown subagent: %v", e)
	}
}

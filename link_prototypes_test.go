package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func init() {
	conformanceRunners["prototype"] = func(input json.RawMessage) (any, error) {
		var in struct {
			System     string          `json:"system"`
			Prototypes *linkPrototypes `json:"prototypes"`
			Then       *linkPrototypes `json:"then"`
			Page       *string         `json:"page"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.Page != nil {
			return prototypePage(*in.Page), nil
		}
		s := withPrototypes(in.System, in.Prototypes)
		if in.Then != nil {
			s = withPrototypes(s, in.Then)
		}
		return s, nil
	}
}

// TestLinkPrototypes: the capability is listed only for a client that asks
// for it; offered, the block is in the session's prompt; a page written is
// named to the client.
func TestLinkPrototypes(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\n")
	e.fi.model.push(callsReply(fakeCall{"write", map[string]any{"path": "prototypes/demo/index.html", "content": "<p>hi</p>"}}), textReply("Written."))
	e.startService()
	l := e.link()
	init := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	if caps, _ := json.Marshal(init["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"]); strings.Contains(string(caps), `"prototypes"`) {
		t.Errorf("prototypes listed for a client that did not ask: %s", caps)
	}
	init = l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3, "capabilities": []string{"prototypes"}}}}})
	if caps, _ := json.Marshal(init["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"]); !strings.Contains(string(caps), `"prototypes"`) {
		t.Errorf("prototypes not listed for a client that asked: %s", caps)
	}
	sid := e.newSession(l, e.proj, "auto")
	p := promptParams(sid, "make a demo", "p-1")
	p["_meta"].(map[string]any)["lembas"].(map[string]any)["prototypes"] = map[string]any{"offered": true, "sources": "Pages load nothing from outside."}
	l.result("session/prompt", p)
	reqs := e.fi.model.got()
	if len(reqs) == 0 || !strings.Contains(systemOf(t, reqs[0]), "Prototypes (a page the person can open and try):") || !strings.Contains(systemOf(t, reqs[0]), "Pages load nothing from outside.") {
		t.Errorf("the prototypes block is not in the prompt: %q", systemOf(t, reqs[0]))
	}
	l.waitNote("prototype named", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		txt, _ := ev["text"].(string)
		return ev["type"] == "notice" && strings.Contains(txt, "prototypes/demo/index.html")
	})
}

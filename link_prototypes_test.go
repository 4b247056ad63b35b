package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
			Notice     json.RawMessage `json:"notice"`
			Viewer     bool            `json:"viewer"`
			Failed     bool            `json:"failed"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.Notice != nil {
			ev := event{Type: evToolEnd, Tool: &toolEvent{Name: "write", Input: string(in.Notice), IsError: in.Failed}}
			return prototypeNotice(ev, in.Viewer), nil
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

// TestPrototypeAtBareTerminal: a prototype's page written in the REPL is
// named in its transcript, and in -p on stderr — not passed over in
// silence — and the page is the file on disk.
func TestPrototypeAtBareTerminal(t *testing.T) {
	page := "<html><head><title>Demo</title></head><body>hi</body></html>"
	fm := newFakeModel(t)
	fm.push(callsReply(fakeCall{"write", map[string]any{"path": "prototypes/demo/index.html", "content": page}}), textReply("Made it."))
	h := startRepl(t, fm, "auto", false, yes())
	h.typ("make a demo page")
	h.expect("Prototype written: prototypes/demo/index.html (Demo) — open it in a browser")
	h.expect("Made it.")
	h.turnDone()
	h.exit()
	if strings.Contains(h.out.String(), "ask for it to be shown") {
		t.Errorf("a bare terminal offered to show the page:\n%s", h.out.String())
	}
	if b, err := os.ReadFile(filepath.Join(h.proj, "prototypes", "demo", "index.html")); err != nil || string(b) != page {
		t.Errorf("the page on disk: %q %v", b, err)
	}

	fm.push(callsReply(fakeCall{"write", map[string]any{"path": "prototypes/two/index.html", "content": "<p>two</p>"}}), textReply("Printed."))
	var out, errb bytes.Buffer
	if err := runHeadless(context.Background(), &runFlags{sessionOpts: sessionOpts{cwd: h.proj, mode: "auto"}, format: "text"}, "another", &out, &errb); err != nil {
		t.Fatalf("-p: %v (%s)", err, errb.String())
	}
	if !strings.Contains(errb.String(), "lembas: Prototype written: prototypes/two/index.html — open it in a browser") {
		t.Errorf("-p did not name the prototype on stderr: %q", errb.String())
	}
	if strings.TrimSpace(out.String()) != "Printed." {
		t.Errorf("-p's answer %q", out.String())
	}
}

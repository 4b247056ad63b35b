package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestLinkLibraryBases: with the instance's library this device's (a login
// with the library scope), initialize offers capability library; the
// bases named in session/new's _meta.lembas.library reach the model's
// system prompt, a prompt's newer list replaces them, and an empty list
// names none (the account's whole library). Without the scope the
// capability is not offered.
func TestLinkLibraryBases(t *testing.T) {
	e := newLinkEnv(t, "")
	web := newFakeHTTPMCP(t)
	web.bearer = e.fi.token
	e.fi.mcp = web
	if err := saveLogin(&loginRecord{Name: "test", URL: e.fi.srv.URL, Instance: "Test Instance", Token: e.fi.token, Scopes: []string{"library"}}); err != nil {
		t.Fatal(err)
	}
	e.startService()
	l := e.link()
	caps := func() []string {
		r := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
		var c []string
		b, _ := json.Marshal(r["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"])
		json.Unmarshal(b, &c)
		return c
	}
	if c := caps(); !slices.Contains(c, "library") {
		t.Fatalf("capability library not offered with the library scope: %v", c)
	}
	bases := func(names ...string) map[string]any {
		var bs []any
		for i, n := range names {
			bs = append(bs, map[string]any{"id": "kb" + string(rune('0'+i)), "name": n})
		}
		if bs == nil {
			bs = []any{}
		}
		return map[string]any{"bases": bs}
	}
	r := l.result("session/new", map[string]any{"cwd": e.proj, "mcpServers": []any{}, "_meta": map[string]any{"mode": "edit", "lembas_model": "acme/chat-1",
		"lembas": map[string]any{"library": bases("Manuals", "Recipes")}}})
	sid := r["sessionId"].(string)
	e.fi.model.push(textReply("one"), textReply("two"), textReply("three"))
	l.result("session/prompt", promptParams(sid, "first", "t-1"))
	p2 := promptParams(sid, "second", "t-2")
	p2["_meta"].(map[string]any)["lembas"].(map[string]any)["library"] = bases("Only this")
	l.result("session/prompt", p2)
	p3 := promptParams(sid, "third", "t-3")
	p3["_meta"].(map[string]any)["lembas"].(map[string]any)["library"] = bases()
	l.result("session/prompt", p3)
	got := e.fi.model.got()
	if len(got) != 3 {
		t.Fatalf("%d model requests", len(got))
	}
	sys := func(i int) string { return got[i].messages()[0]["content"].(string) }
	scope := func(b string) string { return fillPairs(linkText("knowledge_scope"), "bases", b) }
	if s := sys(0); !strings.Contains(s, "- "+scope("Manuals, Recipes")) {
		t.Errorf("the bases are not named in the first request's system prompt:\n%s", s)
	}
	if s := sys(1); !strings.Contains(s, "- "+scope("Only this")) || strings.Contains(s, "Manuals") {
		t.Errorf("the newer list did not replace the older:\n%s", s)
	}
	if s := sys(2); strings.Contains(s, "Knowledge bases of this chat") {
		t.Errorf("an empty list still names bases:\n%s", s)
	}
	// The scope goes out for a login without the library scope: no capability.
	if err := saveLogin(&loginRecord{Name: "test", URL: e.fi.srv.URL, Instance: "Test Instance", Token: e.fi.token}); err != nil {
		t.Fatal(err)
	}
	if c := caps(); slices.Contains(c, "library") {
		t.Errorf("capability library offered without the library scope: %v", c)
	}
}

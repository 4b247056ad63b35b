package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loginWithScope logs in to the fake instance by the device flow, the
// token endpoint answering scope.
func loginWithScope(t *testing.T, e *linkEnv, name, scope string) {
	t.Helper()
	e.fi.mu.Lock()
	e.fi.flow, e.fi.scope = []string{"ok"}, scope
	e.fi.mu.Unlock()
	var out, errb strings.Builder
	noWait := func(context.Context, time.Duration) error { return nil }
	if err := login([]string{e.fi.srv.URL, "--name", name}, strings.NewReader(""), &out, &errb, noWait); err != nil {
		t.Fatalf("login: %v %s %s", err, out.String(), errb.String())
	}
}

// TestMCPLibraryLogin: a login whose token was granted the library scope
// brings the instance's /mcp in as the server library, its bearer the
// login's token; a session the link's client opened sends
// _meta.lembas.scope, another sends none; no file but the login's holds
// the token, and lembas mcp list shows the server but not the token. A
// login without the scope, a pasted token and a config with library: add
// nothing.
func TestMCPLibraryLogin(t *testing.T) {
	e := newLinkEnv(t, "")
	web := newFakeHTTPMCP(t)
	web.bearer = e.fi.token
	e.fi.mcp = web
	noLibrary := func(what string) {
		t.Helper()
		cfg, err := loadConfig()
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := mcpServersFor(cfg, e.proj, nil, os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			if c.Name == "library" {
				t.Errorf("%s: a library server %+v", what, c.URL)
			}
		}
	}
	// newLinkEnv's login "test" has no scopes (saved as a pasted token is).
	noLibrary("a login without scopes")
	loginWithScope(t, e, "chatonly", "chat")
	if l, _ := findLogin("chatonly"); l == nil || strings.Join(l.Scopes, " ") != "chat" {
		t.Fatalf("the login's scopes: %+v", l)
	}
	noLibrary("a login without the library scope")
	var out, errb strings.Builder
	if code := run([]string{"login", e.fi.srv.URL, "--name", "piped", "--token-stdin"}, strings.NewReader(e.fi.token+"\n"), &out, &errb); code != 0 {
		t.Fatalf("login --token-stdin: %s", errb.String())
	}
	if l, _ := findLogin("piped"); l == nil || len(l.Scopes) != 0 {
		t.Errorf("a pasted token's scopes: %+v", l)
	}
	noLibrary("a pasted token")

	loginWithScope(t, e, "lab", "chat library")
	if l, _ := findLogin("lab"); l == nil || !l.hasScope("library") {
		t.Fatalf("the login's scopes: %+v", l)
	}
	// A session the link's client opened: the call carries the bearer (the
	// fake refuses any other) and the session's id as the scope.
	fm := e.fi.model
	eng, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{cwd: e.proj, mode: "auto", model: "lab/acme/chat-1", linkOpened: true}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	fm.push(callsReply(fakeCall{"mcp__library__meta", map[string]any{}}), textReply("done"))
	eng.runTurn(context.Background(), "look it up")
	reqs := fm.got()
	if len(reqs) < 2 {
		t.Fatalf("requests: %d", len(reqs))
	}
	if !contains(requestTools(reqs[0]), "mcp__library__meta") {
		t.Errorf("the first request's tools: %v", requestTools(reqs[0]))
	}
	want := `{"lembas":{"scope":"` + eng.sess.ID + `"}}`
	if res := toolResults(reqs[1]); len(res) != 1 || !strings.Contains(res[0], want) {
		t.Errorf("the call's result: %v, want %s", res, want)
	}
	// A session opened here, not by the link's client: no scope.
	eng2, cleanup2, err := newSessionEngine(context.Background(), &sessionOpts{cwd: e.proj, mode: "auto", model: "lab/acme/chat-1"}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup2)
	fm.push(callsReply(fakeCall{"mcp__library__meta", map[string]any{}}), textReply("done"))
	eng2.runTurn(context.Background(), "look it up")
	reqs = fm.got()
	if res := toolResults(reqs[len(reqs)-1]); len(res) != 1 || strings.Contains(res[0], "scope") {
		t.Errorf("an unscoped session's call: %v", res)
	}
	web.mu.Lock()
	metas := append([]string(nil), web.metas...)
	web.mu.Unlock()
	if len(metas) != 2 || !strings.Contains(metas[0], eng.sess.ID) || strings.Contains(metas[1], "scope") {
		t.Errorf("the calls' _meta at the server: %v", metas)
	}
	// lembas mcp list: the server, never the token.
	out.Reset()
	errb.Reset()
	if code := run([]string{"mcp", "list", "--cwd", e.proj}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "library (login, http)") ||
		strings.Contains(out.String()+errb.String(), e.fi.token) {
		t.Errorf("mcp list: %d %q %q", code, out.String(), errb.String())
	}
	// No file but the logins' holds the token.
	for _, root := range []string{os.Getenv("XDG_STATE_HOME"), os.Getenv("XDG_CONFIG_HOME")} {
		filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && filepath.Dir(p) != loginsDir() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), e.fi.token) {
					t.Errorf("%s holds the token", p)
				}
			}
			return nil
		})
	}
	// library: in config.yaml (local, or the account's written out) leaves
	// the login's server out.
	if err := configSet(configPath(), "library", "local"); err != nil {
		t.Fatal(err)
	}
	noLibrary("library: local")
}

// TestMCPLibraryOverLink: a session the instance opens over the real link
// calls the library with the login's bearer and its own id as the scope.
func TestMCPLibraryOverLink(t *testing.T) {
	e := newLinkEnv(t, "")
	web := newFakeHTTPMCP(t)
	web.bearer = e.fi.token
	e.fi.mcp = web
	if err := saveLogin(&loginRecord{Name: "test", URL: e.fi.srv.URL, Instance: "Test Instance", Token: e.fi.token, Scopes: []string{"library"}}); err != nil {
		t.Fatal(err)
	}
	e.fi.model.push(callsReply(fakeCall{"mcp__library__meta", map[string]any{}}), textReply("found"))
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	if r := l.result("session/prompt", promptParams(sid, "look it up", "t-1")); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt answer %v", r)
	}
	web.mu.Lock()
	metas := append([]string(nil), web.metas...)
	web.mu.Unlock()
	if want := `{"lembas":{"scope":"` + sid + `"}}`; len(metas) != 1 || metas[0] != want {
		t.Errorf("the call's _meta at the server: %v, want %s", metas, want)
	}
}

package main

// A fake LLeMbas instance (httptest + golang.org/x/net/websocket) playing
// the web UI's side of the link: discovery, the device flow, /v1/models
// with kinds, the chat completions (answered by the scripted fake model),
// and the link's WebSocket, where a test sends initialize, session/new and
// prompts and answers approvals. The device side is the real service
// (newLinkService.run) in this process, over real loopback sockets.

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/websocket"
)

type fakeInstance struct {
	t         testing.TB
	model     *fakeModel
	srv       *httptest.Server
	token     string
	mu        sync.Mutex
	protocols []int
	down      bool
	links     chan *instLink
	cur       []*instLink
	auths     []string
	puts      []string
	freeze    bool
	unfreeze  chan struct{}
	flow      []string // scripted token endpoint answers: "pending", "slow_down", "denied", "expired", "ok"
	flowPosts []string
	scope     string       // the token endpoint's scope answer, when set
	mcp       *fakeHTTPMCP // serves /mcp (the instance's library), when set
}

// guard is how long a test waits for something that must come before it
// calls the run broken; it is a hang guard, never a speed assertion.
const guard = 60 * time.Second

func newFakeInstance(t testing.TB) *fakeInstance {
	fi := &fakeInstance{t: t, model: newFakeModel(t), token: "tok-SECRET-123", protocols: []int{3}, links: make(chan *instLink, 100), unfreeze: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/lembas.json", func(w http.ResponseWriter, r *http.Request) {
		fi.mu.Lock()
		down, ps, flow := fi.down, fi.protocols, fi.flow != nil
		fi.mu.Unlock()
		if down {
			http.Error(w, "down", 503)
			return
		}
		d := map[string]any{"name": "Test Instance", "version": "2.0.0", "protocol": ps[len(ps)-1], "protocols": ps}
		if flow {
			d["device_authorization_endpoint"] = "/oauth/device"
			d["token_endpoint"] = fi.srv.URL + "/oauth/token"
			d["client_id"] = "lembas-cli"
		}
		json.NewEncoder(w).Encode(d)
	})
	mux.HandleFunc("/oauth/device", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		fi.mu.Lock()
		fi.flowPosts = append(fi.flowPosts, "device client_id="+r.PostForm.Get("client_id")+" scope="+r.PostForm.Get("scope"))
		fi.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"device_code": "dev-1", "user_code": "ABCD-EFGH", "verification_uri": fi.srv.URL + "/activate",
			"verification_uri_complete": fi.srv.URL + "/activate?code=ABCD-EFGH", "expires_in": 600, "interval": 2})
	})
	mux.HandleFunc("/oauth/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		fi.mu.Lock()
		fi.flowPosts = append(fi.flowPosts, "token "+r.PostForm.Get("grant_type")+" "+r.PostForm.Get("device_code"))
		next := "ok"
		if len(fi.flow) > 0 {
			next, fi.flow = fi.flow[0], fi.flow[1:]
		}
		fi.mu.Unlock()
		errs := map[string]string{"pending": "authorization_pending", "slow_down": "slow_down", "denied": "access_denied", "expired": "expired_token"}
		if e, ok := errs[next]; ok {
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]string{"error": e})
			return
		}
		ans := map[string]any{"access_token": fi.token, "token_type": "Bearer"}
		if fi.scope != "" {
			ans["scope"] = fi.scope
		}
		json.NewEncoder(w).Encode(ans)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if fi.mcp == nil {
			http.NotFound(w, r)
			return
		}
		fi.mcp.serve(w, r)
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+fi.token {
			http.Error(w, "no", 401)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]string{
			{"id": "acme/chat-1", "kind": "chat"}, {"id": "acme/embed-1", "kind": "embedding"}, {"id": "plain-2"}, {"id": "acme/tts", "kind": "tts"}}})
	})
	mux.HandleFunc("/api/v1/instance", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"name": "Acme LLeMbas", "version": "2.3.1", "other": true})
	})
	mux.HandleFunc("/v1/usage", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"plan": nil, "balance": nil, "unit": "credits",
			"month":  map[string]any{"from": "2026-12-01", "tokens_in": 1200, "tokens_out": 340, "cost": nil, "cost_by_currency": map[string]float64{"EUR": 1.5, "USD": 0.25}},
			"device": map[string]any{"tokens_in": 100, "tokens_out": 20, "cost": nil, "cost_by_currency": map[string]float64{"EUR": 0.1}}})
	})
	mux.HandleFunc("/v1/me/personalization", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PUT" {
			b, _ := io.ReadAll(r.Body)
			fi.mu.Lock()
			fi.puts = append(fi.puts, string(b))
			fi.mu.Unlock()
			var m map[string]any
			json.Unmarshal(b, &m)
			if _, ok := m["enabled"].(bool); !ok {
				w.WriteHeader(422)
				json.NewEncoder(w).Encode(map[string]any{"detail": "enabled must be a boolean"})
				return
			}
			if m["instructions"] == "forbidden" {
				w.WriteHeader(403)
				json.NewEncoder(w).Encode(map[string]any{"detail": "personalization is not available on this instance"})
				return
			}
			w.WriteHeader(204)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"enabled": true, "available": true, "personality": "", "personality_custom": "", "instructions": "Call me Sam."})
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+fi.token {
			http.Error(w, "no", 401)
			return
		}
		fi.model.serve(w, r)
	})
	ws := websocket.Server{Handshake: func(c *websocket.Config, r *http.Request) error {
		fi.mu.Lock()
		defer fi.mu.Unlock()
		fi.auths = append(fi.auths, r.Header.Get("Authorization"))
		if fi.down {
			return fmt.Errorf("down")
		}
		if r.Header.Get("Authorization") != "Bearer "+fi.token {
			return fmt.Errorf("bad token")
		}
		return nil
	}, Handler: fi.serveLink}
	mux.Handle("/api/devices/link", ws)
	fi.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(fi.unfreeze)
		fi.kill()
		fi.srv.CloseClientConnections()
		fi.srv.Close()
	})
	return fi
}

// kill drops every link and refuses new ones until restart.
func (fi *fakeInstance) kill() {
	fi.mu.Lock()
	fi.down = true
	cur := fi.cur
	fi.cur = nil
	fi.mu.Unlock()
	for _, l := range cur {
		l.ws.Close()
	}
}

func (fi *fakeInstance) restart() {
	fi.mu.Lock()
	fi.down = false
	fi.mu.Unlock()
}

// instLink is the instance's side of one link.
type instLink struct {
	t       testing.TB
	ws      *websocket.Conn
	mu      sync.Mutex
	next    int
	pending map[string]chan map[string]any
	notes   []map[string]any
	noteCh  chan struct{}
	closed  chan struct{}
	// answer answers the device's requests (approvals); nil: allow once.
	answer func(m map[string]any) any
	// hold, while locked, stops the instance reading (a client that
	// stopped reading: link_terminal_test.go's flood).
	hold sync.Mutex
	// order is every frame the device sent, in arrival order, as its
	// method or "answer <id>" (link_seed_test.go's ordering rules).
	order []string
}

func (fi *fakeInstance) serveLink(ws *websocket.Conn) {
	fi.mu.Lock()
	freeze := fi.freeze
	fi.mu.Unlock()
	if freeze { // a hung instance: it reads nothing, so answers no ping
		<-fi.unfreeze
		return
	}
	l := &instLink{t: fi.t, ws: ws, pending: map[string]chan map[string]any{}, noteCh: make(chan struct{}, 1), closed: make(chan struct{})}
	fi.mu.Lock()
	fi.cur = append(fi.cur, l)
	fi.mu.Unlock()
	fi.links <- l
	defer close(l.closed)
	for {
		var raw []byte
		err := websocket.Message.Receive(ws, &raw)
		l.hold.Lock() // waits while a test holds the instance's reading
		l.hold.Unlock()
		if err != nil {
			return
		}
		if !utf8.Valid(raw) {
			fi.t.Errorf("the device sent a frame that is not valid UTF-8: %q", raw)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			fi.t.Errorf("the device sent a frame that is not JSON: %q", raw)
			continue
		}
		_, hasID := m["id"]
		method, _ := m["method"].(string)
		l.mu.Lock()
		if method != "" {
			l.order = append(l.order, method)
		} else {
			l.order = append(l.order, fmt.Sprint("answer ", m["id"]))
		}
		l.mu.Unlock()
		switch {
		case method != "" && hasID:
			go l.serveRequest(m)
		case method != "":
			l.mu.Lock()
			l.notes = append(l.notes, m)
			l.mu.Unlock()
			select {
			case l.noteCh <- struct{}{}:
			default:
			}
		default:
			l.mu.Lock()
			ch := l.pending[fmt.Sprint(m["id"])]
			delete(l.pending, fmt.Sprint(m["id"]))
			l.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

func (l *instLink) serveRequest(m map[string]any) {
	var res any = map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	l.mu.Lock()
	ans := l.answer
	l.mu.Unlock()
	if ans != nil {
		res = ans(m)
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": res})
	websocket.Message.Send(l.ws, string(b))
}

// send sends a raw frame.
func (l *instLink) send(frame string) { websocket.Message.Send(l.ws, frame) }

// start sends a request and gives the channel its response comes on.
func (l *instLink) start(method string, params any) chan map[string]any {
	l.mu.Lock()
	l.next++
	id := l.next
	ch := make(chan map[string]any, 1)
	l.pending[fmt.Sprint(id)] = ch
	l.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	websocket.Message.Send(l.ws, string(b))
	return ch
}

// call sends a request and waits for its whole response.
func (l *instLink) call(method string, params any) map[string]any {
	l.t.Helper()
	select {
	case m := <-l.start(method, params):
		return m
	case <-l.closed:
		l.t.Fatalf("%s: the link closed before the answer", method)
	case <-time.After(guard):
		l.t.Fatalf("%s: no answer", method)
	}
	return nil
}

// result is call's result, failing the test on an error.
func (l *instLink) result(method string, params any) map[string]any {
	l.t.Helper()
	m := l.call(method, params)
	if m["error"] != nil {
		l.t.Fatalf("%s: error %v", method, m["error"])
	}
	r, _ := m["result"].(map[string]any)
	return r
}

// rpcErr is call's error object, failing the test when it succeeded.
func (l *instLink) rpcErr(method string, params any) map[string]any {
	l.t.Helper()
	m := l.call(method, params)
	e, _ := m["error"].(map[string]any)
	if e == nil {
		l.t.Fatalf("%s: want an error, got %v", method, m)
	}
	return e
}

// waitNote waits for a notification matching ok, from the start of the link.
func (l *instLink) waitNote(what string, ok func(m map[string]any) bool) map[string]any {
	l.t.Helper()
	deadline := time.After(guard)
	seen := 0
	for {
		l.mu.Lock()
		notes := l.notes
		l.mu.Unlock()
		for ; seen < len(notes); seen++ {
			if ok(notes[seen]) {
				return notes[seen]
			}
		}
		select {
		case <-l.noteCh:
		case <-l.closed:
			l.mu.Lock()
			n := len(l.notes)
			l.mu.Unlock()
			if n == seen {
				l.t.Fatalf("waiting for %s: the link closed", what)
			}
		case <-deadline:
			l.t.Fatalf("waiting for %s: it never came", what)
		}
	}
}

func (l *instLink) notesOf(method string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, n := range l.notes {
		if n["method"] == method {
			out = append(out, n)
		}
	}
	return out
}

func isEvent(kind string) func(m map[string]any) bool {
	return func(m map[string]any) bool {
		if m["method"] != "_lembas/event" {
			return false
		}
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		return ev["type"] == kind
	}
}

// linkEnv is a device: its own config and state, a trusted project inside
// the roots, and a login to the fake instance.
type linkEnv struct {
	t      testing.TB
	fi     *fakeInstance
	root   string // remote.roots[0]
	proj   string // a trusted project inside it
	svc    *linkService
	cancel context.CancelFunc
	done   chan error
	logs   *syncLog
}

type syncLog struct {
	mu    sync.Mutex
	lines []string
}

func (s *syncLog) add(line string) {
	s.mu.Lock()
	s.lines = append(s.lines, line)
	s.mu.Unlock()
}

func (s *syncLog) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

func newLinkEnv(t testing.TB, remote string) *linkEnv {
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"),
		"OPENAI_BASE_URL": "", "LEMBAS_MODEL": "", "SHELL": "/bin/sh"} {
		t.Setenv(k, v)
	}
	root := filepath.Join(home, "work")
	proj := filepath.Join(root, "proj")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(configDir(), 0o700)
	if remote == "" {
		remote = "remote:\n  roots:\n    - ~/work\n  max_mode: auto\n"
	}
	if err := os.WriteFile(configPath(), []byte(remote), 0o600); err != nil {
		t.Fatal(err)
	}
	rp, _ := filepath.EvalSymlinks(proj)
	setTrust(rp, true)
	fi := newFakeInstance(t)
	if err := saveLogin(&loginRecord{Name: "test", URL: fi.srv.URL, Instance: "Test Instance", Token: fi.token}); err != nil {
		t.Fatal(err)
	}
	rr, _ := filepath.EvalSymlinks(root)
	return &linkEnv{t: t, fi: fi, root: rr, proj: rp, logs: &syncLog{}}
}

// startService runs the real service against the fake instance, with the
// backoff's waits made short through the sleep hook.
func (e *linkEnv) startService(opts ...func(*linkService)) {
	l, err := findLogin("test")
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = newLinkService(l, e.logs.add)
	e.svc.sleep = func(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, time.Millisecond) }
	for _, o := range opts {
		o(e.svc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- e.svc.run(ctx) }()
	e.t.Cleanup(e.stop)
}

func (e *linkEnv) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	select {
	case <-e.done:
	case <-time.After(guard):
		e.t.Errorf("the service did not stop")
	}
	e.cancel = nil
}

// link waits for the device's next link and initializes it.
func (e *linkEnv) link() *instLink {
	e.t.Helper()
	var l *instLink
	select {
	case l = <-e.fi.links:
	case <-time.After(guard):
		e.t.Fatalf("the device never linked; its log:\n%s", e.logs.text())
	}
	hello := l.waitNote("hello", func(m map[string]any) bool { return m["method"] == "_lembas/hello" })
	if p := hello["params"].(map[string]any); p["protocol"] != float64(3) {
		e.t.Fatalf("hello %v", p)
	}
	r := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	if meta := r["_meta"].(map[string]any)["lembas"].(map[string]any); meta["protocol"] != float64(3) || meta["connection"] != "test" {
		e.t.Fatalf("initialize %v", r)
	}
	return l
}

func (e *linkEnv) newSession(l *instLink, cwd, mode string) string {
	e.t.Helper()
	r := l.result("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}, "_meta": map[string]any{"mode": mode, "lembas_model": "acme/chat-1",
		"lembas": map[string]any{"system_prompt": "Answer like a pirate."}}})
	sid, _ := r["sessionId"].(string)
	if sid == "" {
		e.t.Fatalf("session/new %v", r)
	}
	return sid
}

func promptParams(sid, text, turnID string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}},
		"_meta": map[string]any{"lembas": map[string]any{"turnId": turnID}}}
}

// TestLinkTurnEndToEnd: hello, initialize at 3, a session on the
// instance's model, a turn whose bash call is approved from the web, the
// events, the instructions in the system prompt, and the answer again for
// the same turn id without a second run.
func TestLinkTurnEndToEnd(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "expr 40 + 2 > answer.txt"}}), textReply("It is 42."))
	e.startService()
	l := e.link()
	asked := make(chan map[string]any, 4)
	l.answer = func(m map[string]any) any {
		asked <- m
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	}
	sid := e.newSession(l, e.proj, "auto") // lowered to edit: bash is asked
	r := l.result("session/prompt", promptParams(sid, "what is 40+2?", "t-1"))
	if r["stopReason"] != "end_turn" || r["_meta"].(map[string]any)["lembas"].(map[string]any)["turnId"] != "t-1" {
		t.Fatalf("prompt answer %v", r)
	}
	select {
	case m := <-asked:
		if m["method"] != "session/request_permission" {
			t.Fatalf("asked %v", m)
		}
	default:
		t.Fatalf("the bash call was never put to the instance")
	}
	if b, _ := os.ReadFile(filepath.Join(e.proj, "answer.txt")); strings.TrimSpace(string(b)) != "42" {
		t.Fatalf("the approved command did not run: %q", b)
	}
	got := e.fi.model.got()
	if len(got) != 2 || got[0].Body.Model != "acme/chat-1" {
		t.Fatalf("model requests %d, model %q", len(got), got[0].Body.Model)
	}
	sys := got[0].messages()[0]["content"].(string)
	if !strings.Contains(sys, "## Instructions from Test Instance\n\nAnswer like a pirate.") {
		t.Errorf("the instance's instructions are not in the system prompt:\n%s", sys)
	}
	for _, kind := range []string{"task", "prompt", "tool_start", "tool_end", "text", "done"} {
		l.waitNote("event "+kind, isEvent(kind))
	}
	pe := l.waitNote("prompt event", isEvent("prompt"))["params"].(map[string]any)["event"].(map[string]any)
	if pe["turnId"] != "t-1" {
		t.Errorf("prompt event %v", pe)
	}
	// The same turn id again: the first answer, nothing run.
	r2 := l.result("session/prompt", promptParams(sid, "what is 40+2?", "t-1"))
	if fmt.Sprint(r2) != fmt.Sprint(r) || len(e.fi.model.got()) != 2 {
		t.Fatalf("a known turn id ran again: %v, %d requests", r2, len(e.fi.model.got()))
	}
	// A newer context replaces the older.
	e.fi.model.push(textReply("Aye."))
	p2 := promptParams(sid, "again", "t-2")
	p2["_meta"].(map[string]any)["lembas"].(map[string]any)["system_prompt"] = "Be brief."
	p2["_meta"].(map[string]any)["lembas"].(map[string]any)["personalization"] = map[string]any{"personality": "", "personality_custom": "", "instructions": "Call me Sam."}
	l.result("session/prompt", p2)
	all := e.fi.model.got()
	sys2 := all[len(all)-1].messages()[0]["content"].(string)
	if !strings.Contains(sys2, "Be brief.") || strings.Contains(sys2, "pirate") || !strings.Contains(sys2, "Call me Sam.") {
		t.Errorf("the newer context did not replace the older:\n%s", sys2)
	}
	st := l.result("_lembas/session/status", map[string]any{"sessionId": sid})
	if st["lastTurnId"] != "t-2" || st["busy"] != false || st["held"] != "here" {
		t.Errorf("status %v", st)
	}
	h := l.result("_lembas/session/history", map[string]any{"sessionId": sid})
	turns := h["turns"].([]any)
	if len(turns) < 2 || turns[0].(map[string]any)["turnId"] != "t-1" || turns[0].(map[string]any)["text"] != "what is 40+2?" {
		t.Errorf("history %v", h)
	}
	if strings.Contains(e.logs.text(), e.fi.token) {
		t.Errorf("the token was logged")
	}
}

// TestLinkRefusals: a protocol 2 client, a session off the instance's
// models, folders outside the roots, untrusted, and a symlink out.
func TestLinkRefusals(t *testing.T) {
	e := newLinkEnv(t, "")
	outside := t.TempDir()
	untrusted := filepath.Join(e.root, "other")
	os.MkdirAll(untrusted, 0o755)
	link := filepath.Join(e.root, "sneaky")
	os.Symlink(outside, link)
	e.startService()
	l := e.link()
	for _, c := range []struct{ cwd, model, want string }{
		{outside, "acme/chat-1", "outside"},
		{untrusted, "acme/chat-1", "not trusted"},
		{link, "acme/chat-1", "outside"},
		{e.proj, "acme/embed-1", "not one it serves"},
		{e.proj, "", "not one it serves"},
	} {
		er := l.rpcErr("session/new", map[string]any{"cwd": c.cwd, "_meta": map[string]any{"lembas_model": c.model}})
		if er["code"] != float64(-32602) || !strings.Contains(er["message"].(string), c.want) {
			t.Errorf("session/new %s %s: %v", c.cwd, c.model, er)
		}
	}
	// A stored session outside the roots, never given: not there for the client.
	st := newStore(stateDir(), nil)
	other, _ := st.create(outside)
	st.unlock(other.ID)
	if r := l.result("_lembas/session/status", map[string]any{"sessionId": other.ID}); r["exists"] != false {
		t.Errorf("status shows a session outside the roots: %v", r)
	}
	if er := l.rpcErr("_lembas/session/history", map[string]any{"sessionId": other.ID}); er["code"] != float64(-32602) {
		t.Errorf("history of a session outside the roots: %v", er)
	}
	if er := l.rpcErr("_lembas/session/delete", map[string]any{"sessionId": other.ID}); er["code"] != float64(-32602) {
		t.Errorf("delete of a session outside the roots: %v", er)
	}
	d := l.result("_lembas/directories", map[string]any{})
	if places := d["places"].([]any); len(places) != 1 || places[0].(map[string]any)["path"] != e.root {
		t.Errorf("directories %v", d)
	}
	if er := l.rpcErr("_lembas/directories", map[string]any{"path": outside}); er["code"] != float64(-32602) {
		t.Errorf("directories outside: %v", er)
	}
	// Hostile frames: an invalid UTF-8 id, a huge method name.
	l.send("{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"nope\"}")
	huge := strings.Repeat("m", 1<<20)
	l.send(`{"jsonrpc":"2.0","id":"big","method":"` + huge + `"}`)
	er := l.rpcErr("initialize", map[string]any{"protocolVersion": 70000})
	if er["code"] != float64(-32602) {
		t.Errorf("initialize out of uint16: %v", er)
	}
	e2 := l.rpcErr("initialize", map[string]any{})
	if e2["code"] != float64(-32602) {
		t.Errorf("initialize without protocolVersion: %v", e2)
	}
	// A protocol 2 client is refused, and the link closed with 4400.
	er = l.rpcErr("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 2}}}})
	if er["code"] != float64(-32602) || !strings.Contains(er["message"].(string), "said 2") {
		t.Errorf("protocol 2 client: %v", er)
	}
	select {
	case err := <-e.done:
		if err == nil || !strings.Contains(err.Error(), "different link protocols") {
			t.Errorf("the service ended with %v", err)
		}
		e.cancel = nil
	case <-time.After(guard):
		t.Fatal("the service went on after refusing a protocol 2 client")
	}
}

// TestLinkHostileFrames: the frames sent back for hostile input.
func TestLinkHostileFrames(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	var l *instLink
	select {
	case l = <-e.fi.links:
	case <-time.After(guard):
		t.Fatal("no link")
	}
	ch := make(chan map[string]any, 2)
	l.mu.Lock()
	l.pending["<nil>"] = ch // invalid UTF-8 is -32700 with id null
	l.pending["big"] = ch
	l.mu.Unlock()
	l.send("{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}")
	l.send(`{"jsonrpc":"2.0","id":"big","method":"` + strings.Repeat("m", 1<<20) + `","params":{}}`)
	for i := 0; i < 2; i++ {
		select {
		case m := <-ch:
			b, _ := json.Marshal(m)
			if len(b) > 2000 {
				t.Errorf("an answer of %d bytes echoes the input", len(b))
			}
		case <-time.After(guard):
			t.Fatal("no answer to a hostile frame")
		}
	}
}

// TestLinkExactlyOnceRestarts kills and restarts the instance 20 times,
// each time in the middle of a turn; every turn runs exactly once: one
// side effect and two model requests per turn, and the prompt sent again
// on the new link gets the original's answer.
func TestLinkExactlyOnceRestarts(t *testing.T) {
	const n = 20
	e := newLinkEnv(t, "")
	for i := 0; i < n; i++ {
		e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": fmt.Sprintf("echo %d >> effects.txt", i)}}), textReply(fmt.Sprintf("done %d", i)))
	}
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	for i := 0; i < n; i++ {
		tid := fmt.Sprintf("turn-%d", i)
		l.start("session/prompt", promptParams(sid, fmt.Sprintf("step %d", i), tid))
		l.waitNote("tool_start of "+tid, func(m map[string]any) bool {
			return isEvent("tool_start")(m) && strings.Contains(fmt.Sprint(m), fmt.Sprintf("echo %d ", i))
		})
		e.fi.kill()
		e.fi.restart()
		l = e.link()
		st := l.result("_lembas/session/status", map[string]any{"sessionId": sid})
		if st["turnId"] != tid && st["lastTurnId"] != tid {
			t.Fatalf("status after the restart knows nothing of %s: %v", tid, st)
		}
		r := l.result("session/prompt", promptParams(sid, fmt.Sprintf("step %d", i), tid))
		if r["_meta"].(map[string]any)["lembas"].(map[string]any)["turnId"] != tid || r["stopReason"] != "end_turn" {
			t.Fatalf("turn %d answered %v", i, r)
		}
	}
	data, _ := os.ReadFile(filepath.Join(e.proj, "effects.txt"))
	lines := strings.Fields(string(data))
	if len(lines) != n {
		t.Fatalf("%d side effects for %d turns: %q", len(lines), n, data)
	}
	for i, ln := range lines {
		if ln != fmt.Sprint(i) {
			t.Fatalf("side effect %d is %q", i, ln)
		}
	}
	if got := len(e.fi.model.got()); got != 2*n {
		t.Fatalf("%d model requests for %d turns, want %d", got, n, 2*n)
	}
	// The turns file survives: a new book reads every answer.
	b := newTurnBook()
	for i := 0; i < n; i++ {
		if fresh, ans, _ := b.claim(sid, fmt.Sprintf("turn-%d", i)); fresh || ans == nil {
			t.Fatalf("turn-%d is not in the turns file", i)
		}
	}
}

// TestLinkSessionMethods: steer, cancel, title, compact, rewind, delete,
// files and commands.
func TestLinkSessionMethods(t *testing.T) {
	e := newLinkEnv(t, "")
	os.WriteFile(filepath.Join(e.proj, "main.go"), []byte("package main\n"), 0o644)
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	e.fi.model.push(textReply("first answer"))
	l.result("session/prompt", promptParams(sid, "hello", "a-1"))
	if er := l.rpcErr("_lembas/steer", map[string]any{"sessionId": sid, "text": "also this"}); er["code"] != float64(-32602) {
		t.Errorf("steer with nothing running: %v", er)
	}
	if r := l.result("_lembas/session/title", map[string]any{"sessionId": sid, "title": "My chat"}); r["title"] != "My chat" {
		t.Errorf("title %v", r)
	}
	l.waitNote("title event", isEvent("title"))
	if er := l.rpcErr("_lembas/session/title", map[string]any{"sessionId": sid, "title": strings.Repeat("x", 201)}); er["code"] != float64(-32602) {
		t.Errorf("long title: %v", er)
	}
	fs := l.result("_lembas/files/search", map[string]any{"sessionId": sid, "query": "main"})
	if fs["root"] != e.proj || !strings.Contains(fmt.Sprint(fs["files"]), "main.go") {
		t.Errorf("files/search %v", fs)
	}
	if cmds := l.result("_lembas/commands", map[string]any{"sessionId": sid}); !strings.Contains(fmt.Sprint(cmds), "compact") {
		t.Errorf("commands %v", cmds)
	}
	e.fi.model.push(textReply("The summary."))
	if r := l.result("_lembas/session/compact", map[string]any{"sessionId": sid}); r["summary"] == nil {
		t.Errorf("compact %v", r)
	}
	e.fi.model.push(textReply("second answer"))
	l.result("session/prompt", promptParams(sid, "again", "a-2"))
	if r := l.result("_lembas/session/rewind", map[string]any{"sessionId": sid, "turnId": "a-2"}); r["reverted"] != float64(1) {
		t.Errorf("rewind %v", r)
	}
	if er := l.rpcErr("_lembas/session/rewind", map[string]any{"sessionId": sid, "turnId": "zzz"}); er["code"] != float64(-32602) {
		t.Errorf("rewind unknown: %v", er)
	}
	// Cancel a turn that waits for an approval: the answer is cancelled.
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "expr 1 + 1"}}))
	blocked := make(chan struct{})
	l.answer = func(m map[string]any) any {
		<-blocked
		return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}
	}
	l.result("session/set_mode", map[string]any{"sessionId": sid, "modeId": "manual"})
	ch := l.start("session/prompt", promptParams(sid, "run it", "a-3"))
	l.waitNote("tool call", func(m map[string]any) bool {
		return m["method"] == "session/update" && strings.Contains(fmt.Sprint(m), "tool_call")
	})
	l.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	select {
	case m := <-ch:
		if m["result"].(map[string]any)["stopReason"] != "cancelled" {
			t.Errorf("cancelled prompt answered %v", m)
		}
	case <-time.After(guard):
		t.Fatal("a cancelled prompt was never answered")
	}
	close(blocked)
	if r := l.result("_lembas/session/delete", map[string]any{"sessionId": sid}); r["deleted"] != true {
		t.Errorf("delete %v", r)
	}
	if r := l.result("_lembas/session/delete", map[string]any{"sessionId": sid}); r["deleted"] != false {
		t.Errorf("delete again %v", r)
	}
	if _, err := os.Stat(turnsPath(sid)); !os.IsNotExist(err) {
		t.Errorf("the turns file outlived the session")
	}
}

// TestLinkSteer: a message steered into a running turn reaches the model
// at its next step.
func TestLinkSteer(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "sleep 1; echo ok"}}), textReply("steered"))
	ch := l.start("session/prompt", promptParams(sid, "go", "s-1"))
	l.waitNote("tool_start", isEvent("tool_start"))
	r := l.result("_lembas/steer", map[string]any{"sessionId": sid, "text": "use the blue one"})
	if r["queued"] != float64(1) {
		t.Errorf("steer %v", r)
	}
	select {
	case <-ch:
	case <-time.After(guard):
		t.Fatal("no answer")
	}
	got := e.fi.model.got()
	if !strings.Contains(string(got[len(got)-1].Raw), "use the blue one") {
		t.Errorf("the steer message never reached the model")
	}
}

// TestLinkOfflineDelete: a delete made with no link up is sent right after
// the next initialize.
func TestLinkOfflineDelete(t *testing.T) {
	e := newLinkEnv(t, "")
	st := newStore(stateDir(), nil)
	sess, err := st.create(e.proj)
	if err != nil {
		t.Fatal(err)
	}
	st.unlock(sess.ID)
	markGiven(sess.ID, nil)
	var out strings.Builder
	if code := run([]string{"sessions", "delete", sess.ID}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("sessions delete: %d %s", code, out.String())
	}
	e.startService()
	l := e.link()
	m := l.waitNote("deleted", func(m map[string]any) bool { return m["method"] == "_lembas/session/deleted" })
	if m["params"].(map[string]any)["sessionId"] != sess.ID {
		t.Errorf("deleted %v", m)
	}
	// The mark is forgotten just after the frame is written, so the note
	// can arrive first: wait for it (a hang guard, not a speed check).
	deadline := time.Now().Add(guard)
	for len(readIDList("deletes.json")) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	e.stop()
	if ids := readIDList("deletes.json"); len(ids) != 0 {
		t.Errorf("the delete was kept after it was sent: %v", ids)
	}
}

// TestLink4400: the instance closing with 4400 stops the service.
func TestLink4400(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	var l *instLink
	select {
	case l = <-e.fi.links:
	case <-time.After(guard):
		t.Fatal("no link")
	}
	l.ws.WriteClose(4400)
	select {
	case err := <-e.done:
		if err != errStop4400 {
			t.Errorf("service ended with %v", err)
		}
		e.cancel = nil
	case <-time.After(guard):
		t.Fatal("the service redialled after 4400")
	}
	if n := len(e.fi.links); n != 0 {
		t.Errorf("%d links after 4400", n)
	}
}

// TestLinkLimitsChange: when remote: changes while linked, the service
// relinks once idle and the new hello says the new limits.
func TestLinkLimitsChange(t *testing.T) {
	e := newLinkEnv(t, "")
	e.svc = nil
	e.startService()
	l := e.link()
	os.MkdirAll(filepath.Join(e.root, "..", "more"), 0o755)
	os.WriteFile(configPath(), []byte("remote:\n  roots: [~/work, ~/more]\n  max_mode: auto\n"), 0o600)
	sock := e.svc.pipe.socket()
	if !e.svc.checkLimits(sock) {
		t.Fatal("a change of the roots did not relink")
	}
	<-l.closed
	l2 := e.link()
	hello := l2.notesOf("_lembas/hello")[0]["params"].(map[string]any)
	if roots := hello["limits"].(map[string]any)["roots"].([]any); len(roots) != 2 {
		t.Errorf("the new hello says roots %v", roots)
	}
	if e.svc.checkLimits(e.svc.pipe.socket()) {
		t.Errorf("relinked with no change")
	}
}

// TestLoginDeviceFlow: pending, slow_down (+5 s), then the token; denied
// and expired each end the login with their sentence. The waits go
// through login's sleep, recorded instead of slept.
func TestLoginDeviceFlow(t *testing.T) {
	e := newLinkEnv(t, "")
	var waits []time.Duration
	record := func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	e.fi.flow = []string{"pending", "slow_down", "pending", "ok"}
	var out, errb strings.Builder
	if err := login([]string{e.fi.srv.URL, "--name", "lab"}, strings.NewReader(""), &out, &errb, record); err != nil {
		t.Fatalf("login: %v %s", err, out.String())
	}
	if fmt.Sprint(waits) != "[2s 2s 7s 7s]" {
		t.Errorf("poll intervals %v", waits)
	}
	if len(e.fi.flowPosts) == 0 || !strings.Contains(" "+e.fi.flowPosts[0]+" ", " scope=link library memory ") {
		t.Errorf("the device flow asked %v, want the memory scope among link library memory", e.fi.flowPosts)
	}
	if !strings.Contains(out.String(), "ABCD-EFGH") || strings.Contains(out.String()+errb.String(), e.fi.token) {
		t.Errorf("login output %q", out.String())
	}
	st, err := os.Stat(filepath.Join(loginsDir(), "lab.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v %v", st, err)
	}
	if dst, _ := os.Stat(loginsDir()); dst.Mode().Perm() != 0o700 {
		t.Errorf("logins folder mode %v", dst.Mode().Perm())
	}
	if cfg, _ := os.ReadFile(configPath()); !strings.Contains(string(cfg), "embedding: lab/acme/embed-1") || strings.Contains(string(cfg), e.fi.token) {
		t.Errorf("config.yaml after login:\n%s", cfg)
	}
	for _, c := range []struct{ flow, want string }{{"denied", "refused at the instance"}, {"expired", "code expired"}} {
		e.fi.flow = []string{"pending", c.flow}
		out.Reset()
		errb.Reset()
		if err := login([]string{e.fi.srv.URL, "--name", "x" + c.flow}, strings.NewReader(""), &out, &errb, record); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.flow, err)
		}
	}
	// --token-stdin, logins, logout; a protocol 2 instance refused.
	e.fi.flow = nil
	out.Reset()
	if code := run([]string{"login", e.fi.srv.URL, "--name", "piped", "--token-stdin"}, strings.NewReader(e.fi.token+"\n"), &out, &errb); code != 0 {
		t.Fatalf("login --token-stdin: %s", errb.String())
	}
	out.Reset()
	run([]string{"logins"}, nil, &out, &errb)
	if !strings.Contains(out.String(), "piped") || strings.Contains(out.String(), e.fi.token) {
		t.Errorf("logins %q", out.String())
	}
	if !strings.Contains(out.String(), "\tAcme LLeMbas 2.3.1\n") { // /api/v1/instance, read at login
		t.Errorf("logins does not say what the instance said of itself: %q", out.String())
	}
	run([]string{"logout", "piped"}, nil, &out, &errb)
	if _, err := os.Stat(filepath.Join(loginsDir(), "piped.json")); !os.IsNotExist(err) {
		t.Errorf("logout left the token file")
	}
	e.fi.protocols = []int{1, 2}
	errb.Reset()
	if code := run([]string{"login", e.fi.srv.URL, "--token-stdin"}, strings.NewReader("t\n"), &out, &errb); code == 0 || !strings.Contains(errb.String(), "update LLeMbas") {
		t.Errorf("protocol 2 instance: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"login", "http://example.com", "--token-stdin"}, strings.NewReader("t\n"), &out, &errb); code == 0 || !strings.Contains(errb.String(), "https") {
		t.Errorf("http off loopback: %d %q", code, errb.String())
	}
}

// TestTrustCommands: trust, trust --list, untrust.
func TestTrustCommands(t *testing.T) {
	e := newLinkEnv(t, "")
	dir := filepath.Join(e.root, "t2")
	os.MkdirAll(dir, 0o755)
	var out, errb strings.Builder
	if code := run([]string{"trust", dir}, nil, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	out.Reset()
	run([]string{"trust", "--list"}, nil, &out, &errb)
	if !strings.Contains(out.String(), dir) {
		t.Errorf("trust --list %q", out.String())
	}
	run([]string{"untrust", dir}, nil, &out, &errb)
	if tr, _ := trustOf(dir); tr {
		t.Errorf("untrust left it trusted")
	}
}

// TestServiceUnits: the systemd unit and the launchd plist, as goldens.
func TestServiceUnits(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for _, goos := range []string{"linux", "darwin"} {
		path, text, _ := serviceUnit(goos, "/usr/local/bin/lembas", "lab")
		golden := filepath.Join("testdata", "service", goos+".golden")
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%s: %v", golden, err)
		}
		if text != string(want) {
			t.Errorf("%s unit:\n%s\nwant:\n%s", goos, text, want)
		}
		if !strings.HasPrefix(path, "/home/u/") {
			t.Errorf("%s path %s", goos, path)
		}
	}
	// install, status, uninstall on this machine, in a home of the test's own.
	e := newLinkEnv(t, "")
	var out, errb strings.Builder
	if code := run([]string{"service", "status"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "not linked") {
		t.Errorf("status before any run: %q", out.String())
	}
	writeServiceStatus("test", "Test Instance", time.Now(), remoteLimits{Roots: []string{e.root}, MaxMode: "edit"})
	out.Reset()
	run([]string{"service", "status"}, nil, &out, &errb)
	if !strings.Contains(out.String(), "linked to Test Instance since") || !strings.Contains(out.String(), e.root) {
		t.Errorf("status while linked: %q", out.String())
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		return
	}
	out.Reset()
	if code := run([]string{"service", "install", "--login", "test"}, nil, &out, &errb); code != 0 {
		t.Fatalf("install: %s", errb.String())
	}
	path, _, _ := serviceUnit(runtime.GOOS, "", "")
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "service --login test") {
		t.Errorf("installed unit %q %v", b, err)
	}
	if runtime.GOOS == "linux" && !strings.Contains(out.String(), "loginctl enable-linger") {
		t.Errorf("install says nothing of linger: %q", out.String())
	}
	run([]string{"service", "uninstall"}, nil, &out, &errb)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("uninstall left %s", path)
	}
}

// FuzzLinkFrame feeds arbitrary bytes to the link's frame handling: the
// JSON-RPC layer's parser and the answer it sends must never panic, and
// every frame sent back must be valid UTF-8.
func FuzzLinkFrame(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"x\"}",
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `[1,2]`, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var sent [][]byte
		w := &captureWriter{f: func(b []byte) { sent = append(sent, b) }}
		c := newRPCConn(nil, w, theACPSpec().RPC, linkKeys, func(string) {})
		c.onRequest = func(r *rpcCall) { r.reply(nil, rpcErrorf(rpcMethodNotFound, "%s", methodForError(r.Method))) }
		c.handle(frame)
		for _, b := range sent {
			if !json.Valid(b) || !utf8ValidBytes(b) {
				t.Fatalf("sent an invalid frame %q", b)
			}
		}
	})
}

type captureWriter struct{ f func([]byte) }

func (c *captureWriter) writeFrame(b []byte) error { c.f(append([]byte(nil), b...)); return nil }

func utf8ValidBytes(b []byte) bool { return strings.ToValidUTF8(string(b), "") == string(b) }

// TestLinkDeadAndBig: a link from which nothing comes is taken as dead
// and dialled again (ping and dead times made short through the
// service's clock fields); a message over the size limit is answered
// -32600 and the link goes on.
func TestLinkDeadAndBig(t *testing.T) {
	e := newLinkEnv(t, "")
	e.fi.freeze = true
	l, err := findLogin("test")
	if err != nil {
		t.Fatal(err)
	}
	e.svc = newLinkService(l, e.logs.add)
	e.svc.sleep = func(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, time.Millisecond) }
	e.svc.pingEvery, e.svc.deadAfter = 20*time.Millisecond, 100*time.Millisecond
	e.svc.sp = func() *linkSpec { c := *theLinkSpec(); c.WS.MaxMessageBytes = 4096; return &c }()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- e.svc.run(ctx) }()
	t.Cleanup(e.stop)
	deadline := time.Now().Add(guard)
	for !strings.Contains(e.logs.text(), "taken as dead") {
		if time.Now().After(deadline) {
			t.Fatalf("a hung instance was never taken as dead; log:\n%s", e.logs.text())
		}
		sleepCtx(context.Background(), 10*time.Millisecond)
	}
	e.fi.mu.Lock()
	e.fi.freeze = false
	e.fi.mu.Unlock()
	il := e.link()
	ch := make(chan map[string]any, 1)
	il.mu.Lock()
	il.pending["<nil>"] = ch // too big to be read: answered with id null
	il.mu.Unlock()
	il.send(`{"jsonrpc":"2.0","id":1,"method":"x/big","params":{"pad":"` + strings.Repeat("z", 5000) + `"}}`)
	select {
	case m := <-ch:
		if m["error"].(map[string]any)["code"] != float64(-32600) {
			t.Errorf("an oversized message: %v", m)
		}
	case <-time.After(guard):
		t.Fatal("an oversized message was never answered")
	}
	il.result("_lembas/session/status", map[string]any{"sessionId": "ses_none"})
}

// fakeTerms is a terminalHandler that records what the link hands it and
// answers open by sending output through notify.
type fakeTerms struct {
	mu     sync.Mutex
	calls  []string
	closed int
	notify func(string, any) error
	limits func() terminalLimits
}

func (f *fakeTerms) request(ctx context.Context, method string, params json.RawMessage) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, method)
	f.mu.Unlock()
	if method == "_lembas/terminal/open" {
		lim := f.limits()
		if !lim.Enabled {
			return nil, rpcErrorf(rpcInvalidParams, "terminals are off")
		}
		if err := f.notify("_lembas/terminal/output", map[string]string{"terminalId": "t1", "data": "aGk="}); err != nil {
			return nil, err
		}
		return map[string]any{"terminalId": "t1", "cwd": lim.Roots[0], "integration": lim.Integration}, nil
	}
	return struct{}{}, nil
}

func (f *fakeTerms) closeAll() {
	f.mu.Lock()
	f.closed++
	f.mu.Unlock()
}

// TestLinkTerminalSeam: with terminal code in the build and
// remote.terminal on, the link lists terminal and shell, hands the
// requests and notifications to the handler, sends what it notifies, fills
// the limits, and closes every terminal when the link closes. Off, neither
// capability is listed and the methods are unknown.
func TestLinkTerminalSeam(t *testing.T) {
	ft := &fakeTerms{}
	fake := func(svc *linkService) {
		svc.newTerm = func(notify func(string, any) error, limits func() terminalLimits) terminalHandler {
			ft.notify, ft.limits = notify, limits
			return ft
		}
	}
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  terminal: true\n  terminal_integration: false\n")
	e.startService(fake)
	l := e.link()
	init := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	caps := fmt.Sprint(init["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"])
	if !strings.Contains(caps, "terminal") || !strings.Contains(caps, "shell") {
		t.Fatalf("capabilities %s", caps)
	}
	r := l.result("_lembas/terminal/open", map[string]any{"cols": 80, "rows": 24})
	if r["cwd"] != e.root || r["integration"] != false {
		t.Errorf("open %v", r)
	}
	l.waitNote("terminal output", func(m map[string]any) bool { return m["method"] == "_lembas/terminal/output" })
	l.send(`{"jsonrpc":"2.0","method":"_lembas/terminal/input","params":{"terminalId":"t1","data":"bHM="}}`)
	l.result("_lembas/terminal/resize", map[string]any{"terminalId": "t1", "cols": 100, "rows": 30})
	e.fi.kill()
	e.fi.restart()
	l = e.link()
	ft.mu.Lock()
	calls, closed := strings.Join(ft.calls, " "), ft.closed
	ft.mu.Unlock()
	if calls != "_lembas/terminal/open _lembas/terminal/input _lembas/terminal/resize" || closed < 1 {
		t.Errorf("handler saw %q, closeAll %d times", calls, closed)
	}
	// remote.terminal off: not listed, not handed over.
	os.WriteFile(configPath(), []byte("remote:\n  roots: [~/work]\n"), 0o600)
	init = l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	if caps := fmt.Sprint(init["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"]); strings.Contains(caps, "terminal") {
		t.Errorf("terminal listed while off: %s", caps)
	}
	if er := l.rpcErr("_lembas/terminal/open", map[string]any{}); er["code"] != float64(-32601) {
		t.Errorf("open while off: %v", er)
	}
}

// TestLoginAPI: /v1/usage in its protocol 3 shape (costs per currency,
// never summed) and the personalization's GET and partial PUT, 403 and
// 422 said plainly.
func TestLoginAPI(t *testing.T) {
	e := newLinkEnv(t, "")
	lines := strings.Join(usageLines(), "\n")
	if !strings.Contains(lines, "1200 tokens in, 340 out, €1.50 + $0.25") || !strings.Contains(lines, "this device: 100 tokens in, 20 out, €0.10") {
		t.Errorf("usage lines:\n%s", lines)
	}
	l, _ := findLogin("test")
	p, err := l.getPersonalization(context.Background())
	if err != nil || p.Instructions != "Call me Sam." {
		t.Fatalf("personalization %v %v", p, err)
	}
	if err := l.putPersonalization(context.Background(), "instructions", "Be kind."); err != nil {
		t.Fatal(err)
	}
	if got := e.fi.puts[len(e.fi.puts)-1]; got != `{"enabled":true,"instructions":"Be kind."}` {
		t.Errorf("PUT sent %s", got)
	}
	if err := l.putPersonalization(context.Background(), "instructions", "forbidden"); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("403: %v", err)
	}
	if err := l.putPersonalization(context.Background(), "colour", "x"); err == nil {
		t.Errorf("an unknown field was sent")
	}
}

// TestLinkReopen: a second service (the device restarted) opens a session
// the instance names from the store, answers a known turn id from the
// turns file without running it, and runs a new one.
func TestLinkReopen(t *testing.T) {
	e := newLinkEnv(t, "")
	e.fi.model.push(textReply("one"))
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "edit")
	r1 := l.result("session/prompt", promptParams(sid, "first", "r-1"))
	e.stop()
	e.startService()
	l = e.link()
	st := l.result("_lembas/session/status", map[string]any{"sessionId": sid})
	if st["exists"] != true || st["held"] != "none" || st["lastTurnId"] != "r-1" {
		t.Errorf("status of a stored session %v", st)
	}
	if r := l.result("session/prompt", promptParams(sid, "first", "r-1")); fmt.Sprint(r) != fmt.Sprint(r1) {
		t.Errorf("a known turn after a restart answered %v, first %v", r, r1)
	}
	e.fi.model.push(textReply("two"))
	l.result("session/prompt", promptParams(sid, "second", "r-2"))
	if n := len(e.fi.model.got()); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
	h := l.result("_lembas/session/history", map[string]any{"sessionId": sid})
	if turns := h["turns"].([]any); len(turns) != 4 || turns[2].(map[string]any)["turnId"] != "r-2" {
		t.Errorf("history after the reopen %v", h)
	}
}

// FuzzLinkSocket feeds arbitrary bytes, as the instance's side of an
// upgraded connection, to the link's WebSocket frame reader: it must never
// panic, never hang on a frame it cannot finish, and never give a message
// over its limit.
func FuzzLinkSocket(f *testing.F) {
	text := func(p string) []byte { return append([]byte{0x81, byte(len(p))}, p...) }
	f.Add(text(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	f.Add([]byte{0x89, 0x00, 0x8a, 0x00, 0x88, 0x02, 0x11, 0x30}) // ping, pong, close 4400
	f.Add([]byte{0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x01, 0x03, 'a', 'b', 'c', 0x80, 0x01, 'd'})
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			defer server.Close()
			req, err := http.ReadRequest(bufio.NewReader(server))
			if err != nil {
				return
			}
			h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
			fmt.Fprintf(server, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", base64.StdEncoding.EncodeToString(h[:]))
			server.Write(data)
			go io.Copy(io.Discard, server) // pongs and the close the reader sends
		}()
		cfg, _ := websocket.NewConfig("ws://127.0.0.1/api/devices/link", "http://127.0.0.1")
		ws, err := websocket.NewClient(cfg, client)
		if err != nil {
			return
		}
		s := newLinkSocket(ws, client, 256, 4, time.Second)
		defer s.fail(errLinkClosed)
		for i := 0; i < 64; i++ {
			b, err := s.readFrame()
			if err == errFrameTooBig {
				continue
			}
			if err != nil {
				return
			}
			if len(b) > 256 {
				t.Fatalf("a message of %d bytes over the 256 limit", len(b))
			}
		}
	})
}

// TestLinkApprovalTimeout: an approval nobody answers within
// remote.approval_timeout is a denial, and the card is settled.
func TestLinkApprovalTimeout(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  approval_timeout: 1\n")
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "expr 2 + 2 > four.txt"}}), textReply("denied, then."))
	e.startService()
	l := e.link()
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	l.answer = func(m map[string]any) any { <-never; return nil }
	sid := e.newSession(l, e.proj, "edit")
	r := l.result("session/prompt", promptParams(sid, "write four", "p-1"))
	if r["stopReason"] != "end_turn" {
		t.Errorf("prompt %v", r)
	}
	if _, err := os.Stat(filepath.Join(e.proj, "four.txt")); !os.IsNotExist(err) {
		t.Errorf("the command ran without an answer")
	}
	m := l.waitNote("settled", func(m map[string]any) bool { return m["method"] == "_lembas/permission/settled" })
	if m["params"].(map[string]any)["sessionId"] != sid {
		t.Errorf("settled %v", m)
	}
}

// TestLinkCutPromptKept is the soak's find of 2026-12-02: a device killed
// after it took a prompt (its turn id queued in the turns file) and before
// the prompt reached the session came back answering the prompt sent again
// "interrupted" while the session held nothing of it, so the person's
// words were gone and `-c` at the terminal said the project had no
// session. The prompt sent again is now kept as an interrupted turn, once.
func TestLinkCutPromptKept(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	e.stop()
	// What the kill left: the turn taken, the session without it.
	tf, _ := json.Marshal(turnFile{Session: sid, Turns: []turnEntry{{ID: "cut-1", State: "queued", Updated: time.Now()}}})
	os.MkdirAll(turnsDir(), 0o700)
	if err := os.WriteFile(turnsPath(sid), tf, 0o600); err != nil {
		t.Fatal(err)
	}
	e.startService()
	l = e.link()
	for i := 0; i < 2; i++ { // sent again twice: one turn kept
		r := l.result("session/prompt", promptParams(sid, "make the tea", "cut-1"))
		if lm := r["_meta"].(map[string]any)["lembas"].(map[string]any); lm["interrupted"] != true || lm["turnId"] != "cut-1" {
			t.Fatalf("the cut turn sent again answered %v", r)
		}
	}
	e.stop()
	st := newStore(stateDir(), nil)
	sess, err := st.latest(e.proj)
	if err != nil || sess.ID != sid {
		t.Fatalf("-c's session after the cut: %v %v", sess, err)
	}
	if len(sess.Turns) != 1 || sess.Turns[0].Prompt != "make the tea" || sess.Turns[0].Status != "interrupted" {
		t.Errorf("the cut prompt kept as %+v", sess.Turns)
	}
	prompts := 0
	for _, m := range sess.Messages {
		if m.Role == "user" && m.Kind == "prompt" {
			prompts++
		}
	}
	if prompts != 1 {
		t.Errorf("%d prompt messages, want 1", prompts)
	}
}

package main

// The link as a separately written LLeMbas would check it: the seed's
// acp.md (link protocol 2) as the harness README's changelog (3.0.0–3.6.0)
// changed it, asserted shape by shape — field names, types, absent against
// null, and the ordering rules — against the real service over a real
// WebSocket on loopback (link_test.go's fake instance). Where lembas differs
// on purpose, harness/acp.md says so and the test asserts lembas's side.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// field asserts m[key] exists with the JSON type want ("string",
// "number", "bool", "array", "object", "null") and returns it.
func field(t *testing.T, what string, m map[string]any, key, want string) any {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Errorf("%s: field %q is absent; want a %s (in %v)", what, key, want, m)
		return nil
	}
	if got := jsonType(v); got != want {
		t.Errorf("%s: field %q is a %s (%v); want a %s", what, key, got, v, want)
	}
	return v
}

// absent asserts m has no key (the seed's "?" fields left out, not null).
func absent(t *testing.T, what string, m map[string]any, key string) {
	t.Helper()
	if v, ok := m[key]; ok {
		t.Errorf("%s: field %q should be absent, got %v", what, key, v)
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// indexOf is the place of the first frame in the link's arrival order
// that satisfies ok, or -1.
func (l *instLink) indexOf(ok func(string) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, f := range l.order {
		if ok(f) {
			return i
		}
	}
	return -1
}

// TestLinkSeedHandshake: hello first with its fields, initialize's result
// as the seed draws it (with the changelog's protocol 3), capabilities a
// set of known names, and the JSON-RPC error codes for hostile frames.
func TestLinkSeedHandshake(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	e.startService()
	var l *instLink
	select {
	case l = <-e.fi.links:
	case <-time.After(guard):
		t.Fatal("no link")
	}
	hello := l.waitNote("hello", func(m map[string]any) bool { return m["method"] == "_lembas/hello" })
	if first := l.indexOf(func(string) bool { return true }); first != 0 || l.order[0] != "_lembas/hello" {
		t.Errorf("the first frame is not the hello: %v", l.order)
	}
	if _, ok := hello["id"]; ok {
		t.Errorf("hello is a notification, it carries no id: %v", hello)
	}
	hp := obj(hello["params"])
	if field(t, "hello", hp, "protocol", "number") != float64(3) {
		t.Errorf("hello protocol %v, want 3", hp["protocol"])
	}
	field(t, "hello", hp, "version", "string")
	field(t, "hello", hp, "harness_spec", "string")
	dev := obj(field(t, "hello", hp, "device", "object"))
	field(t, "hello.device", dev, "host", "string")
	field(t, "hello.device", dev, "platform", "string")
	lim := obj(field(t, "hello", hp, "limits", "object"))
	roots := field(t, "hello.limits", lim, "roots", "array").([]any)
	if len(roots) != 1 || roots[0] != e.root {
		t.Errorf("hello roots %v, want [%s] (absolute, symlinks resolved)", roots, e.root)
	}
	if field(t, "hello.limits", lim, "max_mode", "string") != "edit" {
		t.Errorf("max_mode %v", lim["max_mode"])
	}
	field(t, "hello.limits", lim, "require_trust", "bool")
	field(t, "hello.limits", lim, "terminal", "bool")
	field(t, "hello.limits", lim, "scheduled", "bool")

	// Before initialize, nothing but initialize is answered.
	if er := l.rpcErr("_lembas/directories", map[string]any{}); er["code"] != float64(-32600) {
		t.Errorf("a request before initialize: %v", er)
	}
	m := l.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	if m["jsonrpc"] != "2.0" || m["id"] != float64(2) {
		t.Errorf("the answer's envelope %v", m)
	}
	r := obj(m["result"])
	if field(t, "initialize", r, "protocolVersion", "number") != float64(1) {
		t.Errorf("protocolVersion %v", r["protocolVersion"])
	}
	ac := obj(field(t, "initialize", r, "agentCapabilities", "object"))
	if field(t, "agentCapabilities", ac, "loadSession", "bool") != false {
		t.Errorf("loadSession %v", ac["loadSession"])
	}
	pc := obj(field(t, "agentCapabilities", ac, "promptCapabilities", "object"))
	field(t, "promptCapabilities", pc, "image", "bool")
	if field(t, "promptCapabilities", pc, "audio", "bool") != false || field(t, "promptCapabilities", pc, "embeddedContext", "bool") != true {
		t.Errorf("promptCapabilities %v", pc)
	}
	// The link's session/new takes no mcpServers: no MCP transport is offered.
	mc := obj(field(t, "agentCapabilities", ac, "mcpCapabilities", "object"))
	if mc["http"] != false || mc["sse"] != false {
		t.Errorf("mcpCapabilities %v; the link takes no MCP servers from the client", mc)
	}
	if a := field(t, "initialize", r, "authMethods", "array"); len(a.([]any)) != 0 {
		t.Errorf("authMethods %v", a)
	}
	info := obj(field(t, "initialize", r, "agentInfo", "object"))
	field(t, "agentInfo", info, "name", "string")
	field(t, "agentInfo", info, "version", "string")
	meta := obj(obj(field(t, "initialize", r, "_meta", "object"))["lembas"])
	if field(t, "_meta.lembas", meta, "protocol", "number") != float64(3) {
		t.Errorf("_meta.lembas.protocol %v", meta["protocol"])
	}
	if field(t, "_meta.lembas", meta, "harness_spec", "string") != hp["harness_spec"] {
		t.Errorf("harness_spec differs between hello and initialize")
	}
	if field(t, "_meta.lembas", meta, "connection", "string") != "test" {
		t.Errorf("connection %v, want the login's name", meta["connection"])
	}
	ml := obj(field(t, "_meta.lembas", meta, "limits", "object"))
	if b1, b2 := rawJSON(ml), rawJSON(lim); string(b1) != string(b2) {
		t.Errorf("initialize's limits %s differ from the hello's %s", b1, b2)
	}
	caps := field(t, "_meta.lembas", meta, "capabilities", "array").([]any)
	known := []string{"directories", "configure", "steer", "terminal", "sessions", "status", "delete", "compact", "title", "files",
		"commands", "attachments", "ask", "plan", "model", "turns", "shell", "context", "library", "prototypes", "plan_state", "rewind",
		"show", "progress", "jobs", "scheduled", // scheduled: the README's 3.5.0
		"tree", "agents"} // the changelog's 3.4.0 (subagents.md §14; link_team.go)
	seen := map[string]bool{}
	for _, c := range caps {
		s, _ := c.(string)
		if !slices.Contains(known, s) {
			t.Errorf("capability %v is not one the spec names", c)
		}
		if seen[s] {
			t.Errorf("capability %q is listed twice: %v", s, caps)
		}
		seen[s] = true
	}
	for _, c := range []string{"terminal", "shell", "prototypes"} { // remote.terminal off; prototypes not offered
		if seen[c] {
			t.Errorf("capability %s listed, but it does not work here", c)
		}
	}

	// JSON-RPC: each hostile frame gets its code, with id null where the
	// id could not be read.
	nullCh := make(chan map[string]any, 1)
	for _, c := range []struct {
		frame string
		code  float64
	}{
		{`not json`, -32700},
		{`{"jsonrpc":"2.0","id":`, -32700},
		{`[]`, -32600},
		{`[{"jsonrpc":"2.0","id":9,"method":"initialize"}]`, -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`, -32600},
		{`{"jsonrpc":"1.0","id":null,"method":"initialize"}`, -32600},
		{`"str"`, -32600},
	} {
		l.mu.Lock()
		l.pending["<nil>"] = nullCh
		l.mu.Unlock()
		l.send(c.frame)
		select {
		case a := <-nullCh:
			er := obj(a["error"])
			if a["jsonrpc"] != "2.0" || a["id"] != nil || er["code"] != c.code || jsonType(er["message"]) != "string" {
				t.Errorf("frame %s: answered %v, want code %v with id null", c.frame, a, c.code)
			}
		case <-time.After(guard):
			t.Fatalf("frame %s: no answer", c.frame)
		}
	}
	if er := l.rpcErr("_lembas/nope", map[string]any{}); er["code"] != float64(-32601) {
		t.Errorf("an unknown method: %v", er)
	}
	// A method whose capability is off is unknown (terminal: remote.terminal is off).
	if er := l.rpcErr("_lembas/terminal/open", map[string]any{}); er["code"] != float64(-32601) {
		t.Errorf("a method whose capability is off: %v", er)
	}
	if er := l.rpcErr("session/prompt", map[string]any{"sessionId": 5, "prompt": []any{}}); er["code"] != float64(-32602) {
		t.Errorf("bad params: %v", er)
	}
	if er := l.rpcErr("_lembas/session/history", map[string]any{"sessionId": "no-such"}); er["code"] != float64(-32602) {
		t.Errorf("an unknown session: %v", er)
	}
	// JSON-RPC lets a request leave params out.
	npCh := make(chan map[string]any, 1)
	l.mu.Lock()
	l.pending["np"] = npCh
	l.mu.Unlock()
	l.send(`{"jsonrpc":"2.0","id":"np","method":"_lembas/directories"}`)
	select {
	case a := <-npCh:
		if a["error"] != nil || obj(a["result"])["path"] != "" {
			t.Errorf("a request without params: %v", a)
		}
	case <-time.After(guard):
		t.Fatal("no answer to a request without params")
	}
}

// TestLinkSeedSession: session/new's result and the updates that follow
// it (after the answer), a turn's events and answer, status and history
// shapes, configure keeping the effort, the plan's flat entries (every
// task, a dropped one completed), and the updates again when the session
// is opened from the store by a restarted device.
func TestLinkSeedSession(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	e.fi.model.push(callsReply(fakeCall{"plan_write", map[string]any{"title": "T", "phases": []any{map[string]any{"title": "Work",
		"tasks": []any{map[string]any{"text": "a"}, map[string]any{"text": "b", "status": "dropped"}, map[string]any{"text": "c", "status": "done"}}}}}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "expr 40 + 2 > answer.txt"}}), textReply("done."), textReply("again."))
	e.startService()
	l := e.link()
	asked := make(chan map[string]any, 2)
	l.answer = func(m map[string]any) any {
		asked <- m
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	}
	m := l.call("session/new", map[string]any{"cwd": e.proj, "mcpServers": []any{}, "_meta": map[string]any{"lembas_model": "acme/chat-1", "mode": "auto"}})
	r := obj(m["result"])
	sid, _ := field(t, "session/new", r, "sessionId", "string").(string)
	modes := obj(field(t, "session/new", r, "modes", "object"))
	cur := field(t, "modes", modes, "currentModeId", "string")
	var ids []string
	for _, am := range field(t, "modes", modes, "availableModes", "array").([]any) {
		field(t, "availableModes[]", obj(am), "name", "string")
		ids = append(ids, obj(am)["id"].(string))
	}
	if !slices.Equal(ids, []string{"manual", "edit", "auto", "plan"}) {
		t.Errorf("availableModes %v", ids)
	}
	nm := obj(obj(field(t, "session/new", r, "_meta", "object"))["lembas"])
	if field(t, "session/new _meta.lembas", nm, "mode", "string") != "edit" || cur != "edit" {
		t.Errorf("mode auto was not lowered to max_mode edit: %v %v", nm["mode"], cur)
	}
	if field(t, "session/new _meta.lembas", nm, "model", "string") != "acme/chat-1" {
		t.Errorf("model %v, want the served id", nm["model"])
	}
	if field(t, "session/new _meta.lembas", nm, "instance", "bool") != true {
		t.Errorf("instance %v", nm["instance"])
	}
	if _, ok := nm["effort"]; !ok {
		t.Errorf("session/new _meta.lembas has no effort: %v", nm)
	}
	// available_commands_update follows the answer.
	cmds := l.waitNote("available_commands_update", func(m map[string]any) bool {
		return m["method"] == "session/update" && obj(obj(m["params"])["update"])["sessionUpdate"] == "available_commands_update"
	})
	ans := l.indexOf(func(f string) bool { return f == "answer "+jsonNum(m["id"]) })
	upd := l.indexOf(func(f string) bool { return f == "session/update" })
	if ans < 0 || upd < ans {
		t.Errorf("available_commands_update came before session/new's answer: %v", l.order)
	}
	if obj(cmds["params"])["sessionId"] != sid {
		t.Errorf("the update names %v", cmds["params"])
	}
	var names []string
	for _, c := range obj(obj(cmds["params"])["update"])["availableCommands"].([]any) {
		c := obj(c)
		names = append(names, field(t, "availableCommands[]", c, "name", "string").(string))
		field(t, "availableCommands[]", c, "description", "string")
		if in, ok := c["input"]; ok {
			field(t, "availableCommands[].input", obj(in), "hint", "string")
		}
		kind := obj(obj(c["_meta"])["lembas"])["kind"]
		if kind != "builtin" && kind != "custom" && kind != "skill" {
			t.Errorf("command %v kind %v", c["name"], kind)
		}
	}
	if want := []string{"compact", "plan", "undo", "review", "changelog", "init", "continue"}; len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Errorf("the built-ins %v, want %v first", names, want)
	}

	// A turn: the approval card's shape, the answer, the events.
	pr := l.result("session/prompt", promptParams(sid, "plan and compute", "t-1"))
	if pr["stopReason"] != "end_turn" || obj(obj(pr["_meta"])["lembas"])["turnId"] != "t-1" {
		t.Errorf("prompt answer %v", pr)
	}
	var card map[string]any
	select {
	case card = <-asked:
	default:
		t.Fatal("the bash call was not put to the instance")
	}
	if card["method"] != "session/request_permission" {
		t.Fatalf("card %v", card)
	}
	cp := obj(card["params"])
	if cp["sessionId"] != sid {
		t.Errorf("card sessionId %v", cp["sessionId"])
	}
	tc := obj(field(t, "request_permission", cp, "toolCall", "object"))
	field(t, "toolCall", tc, "toolCallId", "string")
	field(t, "toolCall", tc, "title", "string")
	field(t, "toolCall", tc, "kind", "string")
	field(t, "toolCall", tc, "rawInput", "object")
	if tc["status"] != "pending" {
		t.Errorf("toolCall status %v", tc["status"])
	}
	kinds := map[string]string{}
	for _, o := range field(t, "request_permission", cp, "options", "array").([]any) {
		o := obj(o)
		field(t, "options[]", o, "name", "string")
		kinds[o["optionId"].(string)], _ = o["kind"].(string)
	}
	if kinds["once"] != "allow_once" || kinds["deny"] != "reject_once" || (kinds["session"] != "" && kinds["session"] != "allow_always") {
		t.Errorf("options %v", kinds)
	}
	field(t, "request_permission _meta.lembas", obj(obj(cp["_meta"])["lembas"]), "reason", "string")

	// The plan's flat entries: every task, the dropped one completed.
	pu := l.waitNote("plan update", func(m map[string]any) bool {
		return m["method"] == "session/update" && obj(obj(m["params"])["update"])["sessionUpdate"] == "plan"
	})
	u := obj(obj(pu["params"])["update"])
	b, _ := json.Marshal(u["entries"])
	if string(b) != `[{"content":"a","priority":"medium","status":"pending"},{"content":"b","priority":"medium","status":"completed"},{"content":"c","priority":"medium","status":"completed"}]` {
		t.Errorf("plan entries %s", b)
	}
	ps := obj(obj(obj(u["_meta"])["lembas"])["plan"])
	ph := field(t, "plan", ps, "phases", "array").([]any)
	if len(ph) != 1 || len(field(t, "phase", obj(ph[0]), "tasks", "array").([]any)) != 3 {
		t.Errorf("plan structure %v", ps)
	}
	pe := l.waitNote("plan event", isEvent("plan"))
	field(t, "plan event", obj(obj(pe["params"])["event"]), "plan", "object")

	// The turn's events: task start first, then prompt, task end last.
	var kindsSeen []string
	for _, n := range l.notesOf("_lembas/event") {
		p := obj(n["params"])
		if p["sessionId"] != sid {
			continue
		}
		ev := obj(p["event"])
		kindsSeen = append(kindsSeen, ev["type"].(string))
		switch ev["type"] {
		case "task":
			if ev["turnId"] != "t-1" || (ev["state"] != "start" && ev["state"] != "end") {
				t.Errorf("task event %v", ev)
			}
		case "prompt":
			if ev["turnId"] != "t-1" || ev["text"] != "plan and compute" {
				t.Errorf("prompt event %v", ev)
			}
			absent(t, "prompt event", ev, "attachments")
		case "title":
			field(t, "title event", ev, "id", "string")
			field(t, "title event", ev, "title", "string")
		}
	}
	if len(kindsSeen) < 3 || kindsSeen[0] != "task" || kindsSeen[1] != "prompt" || kindsSeen[len(kindsSeen)-1] != "task" {
		t.Errorf("event order %v: want task, prompt, …, task", kindsSeen)
	}

	// status and history.
	st := l.result("_lembas/session/status", map[string]any{"sessionId": sid})
	if st["sessionId"] != sid || field(t, "status", st, "exists", "bool") != true || field(t, "status", st, "held", "string") != "here" ||
		field(t, "status", st, "busy", "bool") != false || field(t, "status", st, "lastTurnId", "string") != "t-1" {
		t.Errorf("status %v", st)
	}
	field(t, "status", st, "title", "string")
	if q := field(t, "status", st, "queued", "array"); len(q.([]any)) != 0 {
		t.Errorf("queued %v", q)
	}
	absent(t, "idle status", st, "turnId")
	field(t, "status", st, "plan", "object")
	h := l.result("_lembas/session/history", map[string]any{"sessionId": sid})
	if h["sessionId"] != sid || field(t, "history", h, "root", "string") != e.proj {
		t.Errorf("history %v", h)
	}
	field(t, "history", h, "title", "string")
	turns := field(t, "history", h, "turns", "array").([]any)
	if len(turns) < 2 {
		t.Fatalf("history turns %v", turns)
	}
	ut := obj(turns[0])
	if ut["role"] != "user" || ut["text"] != "plan and compute" || ut["turnId"] != "t-1" {
		t.Errorf("history user turn %v", ut)
	}
	for _, tn := range turns[1:] {
		at := obj(tn)
		if at["role"] != "assistant" {
			continue
		}
		field(t, "assistant turn", at, "text", "string")
		field(t, "assistant turn", at, "reasoning", "string")
		for _, tl := range field(t, "assistant turn", at, "tools", "array").([]any) {
			tl := obj(tl)
			field(t, "tools[]", tl, "id", "string")
			field(t, "tools[]", tl, "name", "string")
			if _, ok := tl["args"]; !ok {
				t.Errorf("tools[] without args: %v", tl)
			}
			if v, ok := tl["isError"]; ok && jsonType(v) != "bool" {
				t.Errorf("isError %v", v)
			}
		}
	}

	// configure: the answer is the state now; naming only the model keeps
	// the effort, and a change is a model event with its four fields.
	c1 := l.result("_lembas/configure", map[string]any{"sessionId": sid, "effort": "default"})
	if c1["model"] != "acme/chat-1" || c1["effort"] != "default" {
		t.Errorf("configure effort: %v", c1)
	}
	me := obj(obj(l.waitNote("model event", isEvent("model"))["params"])["event"])
	field(t, "model event", me, "ref", "string")
	field(t, "model event", me, "effort", "string")
	field(t, "model event", me, "connection", "string")
	if field(t, "model event", me, "instance", "bool") != true {
		t.Errorf("model event %v", me)
	}
	if c2 := l.result("_lembas/configure", map[string]any{"sessionId": sid, "model": "acme/chat-1"}); c2["effort"] != "default" {
		t.Errorf("configure naming only the model forgot the effort: %v", c2)
	}
	if er := l.rpcErr("_lembas/configure", map[string]any{"sessionId": sid, "model": "acme/embed-1"}); er["code"] != float64(-32602) {
		t.Errorf("configure with a model that is not a chat model: %v", er)
	}

	// The device restarts; the session named again is opened from the
	// store, and its commands and plan are sent before the turn's answer.
	e.stop()
	e.startService()
	l = e.link()
	m = l.call("session/prompt", promptParams(sid, "again", "t-2"))
	if obj(m["result"])["stopReason"] != "end_turn" {
		t.Fatalf("prompt after the restart %v", m)
	}
	ans = l.indexOf(func(f string) bool { return f == "answer "+jsonNum(m["id"]) })
	var got []string
	for _, n := range l.notesOf("session/update") {
		got = append(got, obj(obj(n["params"])["update"])["sessionUpdate"].(string))
	}
	if !slices.Contains(got, "available_commands_update") || !slices.Contains(got, "plan") {
		t.Errorf("the updates of a session opened from the store: %v", got)
	}
	if upd := l.indexOf(func(f string) bool { return f == "session/update" }); upd < 0 || upd > ans {
		t.Errorf("the reopened session's updates came after the answer: %v", l.order)
	}
}

func jsonNum(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestLinkSeedPlainClient: a client that says no _meta.lembas gets plain
// ACP — no _lembas/event, no kept delete (that waits for the next LLeMbas
// client) — and the protocol 1 ways of saying LLeMbas are refused with
// 4400, naming what to update.
func TestLinkSeedPlainClient(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	st := newStore(stateDir(), nil)
	gone, err := st.create(e.proj)
	if err != nil {
		t.Fatal(err)
	}
	st.unlock(gone.ID)
	markGiven(gone.ID, nil)
	var out strings.Builder
	if code := run([]string{"sessions", "delete", gone.ID}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("sessions delete: %d %s", code, out.String())
	}
	e.fi.model.push(textReply("plain."))
	e.startService()
	l := <-e.fi.links
	l.waitNote("hello", func(m map[string]any) bool { return m["method"] == "_lembas/hello" })
	l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	r := l.result("session/new", map[string]any{"cwd": e.proj, "mcpServers": []any{}, "_meta": map[string]any{"lembas_model": "acme/chat-1"}})
	sid := r["sessionId"].(string)
	if pr := l.result("session/prompt", promptParams(sid, "hi", "p-1")); pr["stopReason"] != "end_turn" {
		t.Fatalf("plain prompt %v", pr)
	}
	l.waitNote("the answer's text", func(m map[string]any) bool {
		return m["method"] == "session/update" && obj(obj(m["params"])["update"])["sessionUpdate"] == "agent_message_chunk"
	})
	if n := l.notesOf("_lembas/event"); len(n) != 0 {
		t.Errorf("a plain ACP client got %d _lembas/event, the first %v", len(n), n[0])
	}
	if n := l.notesOf("_lembas/session/deleted"); len(n) != 0 {
		t.Errorf("a plain ACP client got a kept delete: %v", n)
	}
	if ids := readIDList("deletes.json"); !slices.Contains(ids, gone.ID) {
		t.Errorf("the kept delete was forgotten without being sent: %v", ids)
	}
	// The next LLeMbas client on a new link gets it.
	l.ws.Close()
	l2 := e.link()
	d := l2.waitNote("deleted", func(m map[string]any) bool { return m["method"] == "_lembas/session/deleted" })
	if obj(d["params"])["sessionId"] != gone.ID {
		t.Errorf("deleted %v", d)
	}
	if i, j := l2.indexOf(func(f string) bool { return f == "_lembas/session/deleted" }), l2.indexOf(func(f string) bool { return strings.HasPrefix(f, "answer ") }); i < j {
		t.Errorf("deleted came before initialize's answer: %v", l2.order)
	}
	e.stop()

	// Protocol 1 clients (lembas: true, or no protocol) and any other than 3.
	for _, c := range []struct {
		lembas any
		said   string
	}{{true, "said 1"}, {map[string]any{}, "said 1"}, {map[string]any{"protocol": 4}, "said 4"}} {
		e := newLinkEnv(t, "")
		e.startService()
		l := <-e.fi.links
		er := l.rpcErr("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": c.lembas}}})
		if er["code"] != float64(-32602) || !strings.Contains(er["message"].(string), c.said) || !strings.Contains(er["message"].(string), "update") {
			t.Errorf("lembas %v: %v", c.lembas, er)
		}
		select {
		case err := <-e.done:
			if err != errStop4400 {
				t.Errorf("lembas %v: the service ended with %v", c.lembas, err)
			}
			e.cancel = nil
		case <-time.After(guard):
			t.Fatalf("lembas %v: the service went on", c.lembas)
		}
	}
}

// TestLinkSeedDiscovery: protocols read before protocol, relative
// endpoint URLs resolved against the instance, https except on loopback.
func TestLinkSeedDiscovery(t *testing.T) {
	var doc string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(doc))
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, c := range []struct {
		doc string
		ok  bool
	}{
		{`{"name":"i","protocol":1,"protocols":[1,2,3]}`, true}, // protocol stays low on purpose; protocols wins
		{`{"name":"i","protocol":3}`, true},                     // no protocols: protocol
		{`{"name":"i","protocol":3,"protocols":[1,2]}`, false},  // protocols wins over protocol
		{`{"name":"i","protocol":2,"protocols":[]}`, false},
		{`{"name":"i","protocol":1,"protocols":[1,2]}`, false},
	} {
		doc = c.doc
		d, err := readDiscovery(ctx, srv.Client(), srv.URL)
		if (err == nil) != c.ok {
			t.Errorf("discovery %s: %v", c.doc, err)
		}
		if err != nil && !strings.Contains(err.Error(), "speaks link protocol") {
			t.Errorf("discovery %s refused with %q", c.doc, err)
		}
		_ = d
	}
	doc = `{"name":"i","protocols":[3],"link":"api/v9/link","device_authorization_endpoint":"oauth/device","token_endpoint":"/oauth/token"}`
	d, err := readDiscovery(ctx, srv.Client(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if u, err := d.linkURL(); err != nil || u != "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/v9/link" {
		t.Errorf("relative link %q %v", u, err)
	}
	if u, err := d.resolveRef(d.DeviceAuth); err != nil || u != srv.URL+"/oauth/device" {
		t.Errorf("relative device endpoint %q %v", u, err)
	}
	d.Link = "ws://example.com/link"
	if _, err := d.linkURL(); err == nil {
		t.Errorf("a ws link off loopback was taken")
	}
	d.Link = "wss://example.com/link"
	if u, err := d.linkURL(); err != nil || u != "wss://example.com/link" {
		t.Errorf("an absolute wss link %q %v", u, err)
	}
	if _, err := d.resolveRef("http://example.com/oauth/token"); err == nil {
		t.Errorf("an http token endpoint off loopback was taken")
	}
	for _, u := range []string{"http://example.com", "ftp://example.com", "example.com"} {
		if _, err := checkInstanceURL(u); err == nil {
			t.Errorf("instance %s was taken", u)
		}
	}
	for _, u := range []string{"https://example.com", "http://127.0.0.1:8080", "http://localhost", "http://[::1]:9"} {
		if _, err := checkInstanceURL(u); err != nil {
			t.Errorf("instance %s refused: %v", u, err)
		}
	}
}

// TestLinkSeedAccountAPI: /v1/usage as the changelog's 3.0.0 shapes it
// (nulls where credits were), a PUT of only the field changed, and a 422
// whose detail is a validation list (as a FastAPI server sends it) said in
// its words.
func TestLinkSeedAccountAPI(t *testing.T) {
	var puts []string
	var usage, put422 string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/usage":
			w.Write([]byte(usage))
		case r.Method == "PUT":
			b := make([]byte, 4096)
			n, _ := r.Body.Read(b)
			puts = append(puts, string(b[:n]))
			if put422 != "" {
				w.WriteHeader(422)
				w.Write([]byte(put422))
				return
			}
			w.Write([]byte(`{"enabled":true,"available":true,"personality":"","personality_custom":"","instructions":"x"}`))
		}
	}))
	defer srv.Close()
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	os.MkdirAll(filepath.Join(home, "state"), 0o700)
	l := &loginRecord{Name: "acct", URL: srv.URL, Token: "tok-x"}
	usage = `{"plan":null,"balance":null,"unit":"credits","month":{"from":"2026-12-01","tokens_in":5,"tokens_out":6,"cost":null,"cost_by_currency":{"EUR":0.5}},"device":null}`
	u, err := l.usage(context.Background())
	if err != nil || u.Month.TokensIn != 5 || u.Month.CostByCurrency["EUR"] != 0.5 {
		t.Errorf("usage %+v %v", u, err)
	}
	if err := l.putPersonalization(context.Background(), "personality", "kind"); err != nil {
		t.Fatal(err)
	}
	if len(puts) != 1 || puts[0] != `{"enabled":true,"personality":"kind"}` {
		t.Errorf("PUT sent %v; want only the field changed and enabled", puts)
	}
	put422 = `{"detail":[{"loc":["body","enabled"],"msg":"Input should be a valid boolean","type":"bool_parsing"}]}`
	err = l.putPersonalization(context.Background(), "instructions", "y")
	if err == nil || !strings.Contains(err.Error(), "Input should be a valid boolean") {
		t.Errorf("a 422 with a validation list: %v", err)
	}
}

// TestLinkSeedCards: the question and plan cards' params as the seed
// draws them (patient false in a session the client holds; no path: no
// plan file is written), steer's steered event with the message ids, an
// image block's attachments on the prompt event and in history, set_mode's
// updates, compact's event, the directories' Dir shape, and every frame
// valid UTF-8 when a command prints bytes that are not.
func TestLinkSeedCards(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\n")
	e.fi.model.push(
		callsReply(fakeCall{"ask_user", map[string]any{"questions": []any{map[string]any{"question": "Which database?",
			"options": []any{map[string]any{"label": "SQLite", "description": "small"}, map[string]any{"label": "Postgres", "description": "big"}}}}}}),
		callsReply(fakeCall{"plan_write", map[string]any{"title": "Fix", "phases": []any{map[string]any{"title": "Look", "tasks": []any{map[string]any{"text": "read a"}}}}}}),
		callsReply(fakeCall{"plan_submit", map[string]any{}}), textReply("On it."))
	e.startService()
	l := e.link()
	cards := make(chan map[string]any, 4)
	var steerOnce func()
	l.answer = func(m map[string]any) any {
		cards <- m
		switch m["method"] {
		case "_lembas/question":
			return map[string]any{"outcome": "answered", "answers": []any{map[string]any{"kind": "options", "labels": []any{"SQLite"}}}}
		case "_lembas/plan":
			return map[string]any{"outcome": "approve", "mode": "edit"}
		}
		if steerOnce != nil {
			steerOnce()
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	}
	sid := e.newSession(l, e.proj, "plan")
	l.result("session/prompt", promptParams(sid, "pick and plan", "c-1"))
	var q, pl map[string]any
	for len(cards) > 0 {
		m := <-cards
		switch m["method"] {
		case "_lembas/question":
			q = obj(m["params"])
		case "_lembas/plan":
			pl = obj(m["params"])
		}
	}
	if q == nil || pl == nil {
		t.Fatalf("the cards did not come: question %v plan %v", q, pl)
	}
	if q["sessionId"] != sid {
		t.Errorf("question sessionId %v", q["sessionId"])
	}
	field(t, "question", q, "toolCallId", "string")
	absent(t, "question (no why given)", q, "why")
	qs := field(t, "question", q, "questions", "array").([]any)
	qq := obj(qs[0])
	// The spec's ask_user takes no header: the card's is empty, not absent.
	if field(t, "questions[]", qq, "header", "string") != "" || field(t, "questions[]", qq, "question", "string") != "Which database?" ||
		field(t, "questions[]", qq, "multiple", "bool") != false {
		t.Errorf("question %v", qq)
	}
	for _, o := range field(t, "questions[]", qq, "options", "array").([]any) {
		o := obj(o)
		field(t, "options[]", o, "label", "string")
		field(t, "options[]", o, "description", "string")
		if v, ok := o["recommended"]; ok && v != true {
			t.Errorf("recommended is true or absent, got %v", v)
		}
	}
	if field(t, "question _meta.lembas", obj(obj(q["_meta"])["lembas"]), "patient", "bool") != false {
		t.Errorf("a question in a session the client holds is not patient: %v", q["_meta"])
	}
	field(t, "plan card", pl, "toolCallId", "string")
	field(t, "plan card", pl, "text", "string")
	field(t, "plan card", pl, "plan", "object")
	if path, _ := field(t, "plan card", pl, "path", "string").(string); !strings.HasPrefix(path, ".lembas/plans/") {
		t.Errorf("plan card path %v, want the plan file under .lembas/plans/", path)
	}
	wire := obj(pl["plan"])
	for _, k := range []string{"version", "title", "summary", "findings", "objectives", "phases", "steps"} {
		if _, ok := wire[k]; !ok {
			t.Errorf("plan card's plan has no %s: %v", k, wire)
		}
	}
	for _, k := range []string{"next_phase", "next_task"} {
		absent(t, "plan card's plan", wire, k)
	}
	if field(t, "plan _meta.lembas", obj(obj(pl["_meta"])["lembas"]), "patient", "bool") != false {
		t.Errorf("plan card patient %v", pl["_meta"])
	}
	// The approval lowered the mode to edit: the client hears it.
	l.waitNote("current_mode_update", func(m map[string]any) bool {
		u := obj(obj(m["params"])["update"])
		return m["method"] == "session/update" && u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "edit"
	})

	// set_mode: {} and the two notices.
	if r := l.result("session/set_mode", map[string]any{"sessionId": sid, "modeId": "manual"}); len(r) != 0 {
		t.Errorf("set_mode answered %v, want {}", r)
	}
	mev := obj(obj(l.waitNote("mode event", func(m map[string]any) bool {
		return isEvent("mode")(m) && obj(obj(m["params"])["event"])["mode"] == "manual"
	})["params"])["event"])
	field(t, "mode event", mev, "mode", "string")

	// Steer while a turn waits on an approval: taken in at its next step,
	// with the message id on the steered event. A command that prints a
	// byte that is not UTF-8 runs too (the fake checks every frame).
	steered := make(chan map[string]any, 1)
	steerOnce = func() {
		steerOnce = nil
		steered <- l.result("_lembas/steer", map[string]any{"sessionId": sid, "text": "use the blue one", "messageId": "m-1"})
	}
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": `printf 'a\377b\n' > bytes.txt; cat bytes.txt`}}), textReply("blue it is"))
	l.result("session/prompt", promptParams(sid, "run it", "c-2"))
	select {
	case sr := <-steered:
		if sr["queued"] != float64(1) {
			t.Errorf("steer %v", sr)
		}
	default:
		t.Fatal("the bash call was not put to the instance, so nothing was steered")
	}
	se := obj(obj(l.waitNote("steered event", isEvent("steered"))["params"])["event"])
	if b, _ := json.Marshal(se["texts"]); string(b) != `["use the blue one"]` {
		t.Errorf("steered texts %s", b)
	}
	if b, _ := json.Marshal(se["ids"]); string(b) != `["m-1"]` {
		t.Errorf("steered ids %s", b)
	}

	// An image block: attachments on the prompt event and in history.
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	e.fi.model.push(textReply("a dot"))
	l.result("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "what is this?"},
		map[string]any{"type": "image", "data": png, "mimeType": "image/png", "uri": "dot.png"}},
		"_meta": map[string]any{"lembas": map[string]any{"turnId": "c-3"}}})
	pe := obj(obj(l.waitNote("prompt event c-3", func(m map[string]any) bool {
		return isEvent("prompt")(m) && obj(obj(m["params"])["event"])["turnId"] == "c-3"
	})["params"])["event"])
	checkAttachments := func(what string, v any) {
		t.Helper()
		as, _ := v.([]any)
		if len(as) != 1 {
			t.Errorf("%s: attachments %v, want one", what, v)
			return
		}
		a := obj(as[0])
		if field(t, what, a, "name", "string") != "dot.png" {
			t.Errorf("%s: attachment name %v, want dot.png", what, a["name"])
		}
		if field(t, what, a, "mimeType", "string") != "image/png" || field(t, what, a, "size", "number") != float64(70) {
			t.Errorf("%s: attachment %v", what, a)
		}
	}
	checkAttachments("prompt event", pe["attachments"])
	if pe["text"] != "what is this?" {
		t.Errorf("prompt event text %q: the text without the attachments", pe["text"])
	}
	h := l.result("_lembas/session/history", map[string]any{"sessionId": sid})
	var ut map[string]any
	for _, tn := range h["turns"].([]any) {
		if obj(tn)["turnId"] == "c-3" {
			ut = obj(tn)
		}
	}
	if ut == nil {
		t.Fatalf("history has no turn c-3: %v", h["turns"])
	}
	checkAttachments("history", ut["attachments"])
	if ut["text"] != "what is this?" {
		t.Errorf("history text %q: the text without the attachments", ut["text"])
	}
	// Two text blocks are one text, joined by a blank line.
	e.fi.model.push(textReply("ok"))
	l.result("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "one"},
		map[string]any{"type": "text", "text": "two"}}, "_meta": map[string]any{"lembas": map[string]any{"turnId": "c-4"}}})
	got := e.fi.model.got()
	if raw := string(got[len(got)-1].Raw); !strings.Contains(raw, `one\n\ntwo`) {
		t.Errorf("two text blocks reached the model as %s", raw)
	}

	// compact: { summary } and the compacted event.
	e.fi.model.push(textReply("The summary."))
	cr := l.result("_lembas/session/compact", map[string]any{"sessionId": sid})
	field(t, "compact", cr, "summary", "string")
	ce := obj(obj(l.waitNote("compacted event", isEvent("compacted"))["params"])["event"])
	field(t, "compacted event", ce, "summary", "string")

	// directories: the roots, then a root with its entries.
	d := l.result("_lembas/directories", map[string]any{"path": e.root})
	if d["path"] != e.root || field(t, "directories", d, "parent", "string") == "" {
		t.Errorf("directories %v", d)
	}
	field(t, "directories", d, "name", "string")
	field(t, "directories", d, "accepted", "bool")
	for _, en := range field(t, "directories", d, "entries", "array").([]any) {
		en := obj(en)
		field(t, "entries[]", en, "path", "string")
		field(t, "entries[]", en, "name", "string")
		if field(t, "entries[]", en, "accepted", "bool") == false {
			field(t, "entries[] refused", en, "reason", "string")
		}
	}
}

// TestLinkSeedRemoteOff: a device whose remote work is off, or that has no
// roots, links all the same and says roots: [] — an empty list, never
// null — in the hello and initialize, refusing every folder with the
// reason.
func TestLinkSeedRemoteOff(t *testing.T) {
	for _, c := range []struct{ config, reason string }{
		{"remote:\n  enabled: false\n  roots: [~/work]\n", "remote work is off"},
		{"model: x\n", "allows no folder yet"},
	} {
		e := newLinkEnv(t, c.config)
		e.startService()
		var l *instLink
		select {
		case l = <-e.fi.links:
		case <-time.After(guard):
			t.Fatal("a device with remote work off did not link")
		}
		hello := l.waitNote("hello", func(m map[string]any) bool { return m["method"] == "_lembas/hello" })
		if r := field(t, "hello.limits", obj(obj(hello["params"])["limits"]), "roots", "array"); r != nil && len(r.([]any)) != 0 {
			t.Errorf("%q: hello roots %v", c.config, r)
		}
		r := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
		field(t, "initialize limits", obj(obj(obj(r["_meta"])["lembas"])["limits"]), "roots", "array")
		er := l.rpcErr("session/new", map[string]any{"cwd": e.proj, "_meta": map[string]any{"lembas_model": "acme/chat-1"}})
		if er["code"] != float64(-32602) || !strings.Contains(er["message"].(string), c.reason) {
			t.Errorf("%q: session/new %v", c.config, er)
		}
		d := l.result("_lembas/directories", map[string]any{})
		if p := field(t, "directories", d, "places", "array"); p != nil && len(p.([]any)) != 0 {
			t.Errorf("%q: places %v", c.config, p)
		}
		if er := l.rpcErr("_lembas/directories", map[string]any{"path": e.proj}); er["code"] != float64(-32602) {
			t.Errorf("%q: directories path %v", c.config, er)
		}
		e.stop()
	}
}

// FuzzLinkSeedParsers: the error body's detail, a prompt's blocks read for
// its attachments, and a stored prompt read back for history never crash,
// and history's text is never longer than what was stored.
func FuzzLinkSeedParsers(f *testing.F) {
	f.Add(`{"detail":[{"loc":["body","enabled"],"msg":"bad"}]}`, `{"prompt":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
		"hi\n[attached a.png (image/png, 2 bytes), saved at /x/a.png]\n")
	f.Add(`{"detail":"no"}`, `{"prompt":[{"type":"resource","resource":{"uri":"file:///a","blob":"!!"}}]}`, "[attached  (, 9 bytes), saved at ]")
	f.Fuzz(func(t *testing.T, body, params, stored string) {
		var b struct {
			Detail any `json:"detail"`
		}
		json.Unmarshal([]byte(body), &b)
		detailText(b.Detail)
		notePromptShown("fuzz", "t", json.RawMessage(params))
		m := map[string]any{}
		showPrompt("fuzz", "t", m)
		if text, _ := historyAttachments(stored); len(text) > len(stored) {
			t.Errorf("history text grew: %q from %q", text, stored)
		}
	})
}

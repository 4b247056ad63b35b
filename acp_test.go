package main

// ACP end to end: the real binary runs `lembas serve --stdio` against the
// scripted fake model, and the tests speak raw JSON lines to it, as an
// editor would.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// acpProc is one running `lembas serve --stdio`.
type acpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	msgs   chan map[string]any
	next   int
	stderr *strings.Builder
	mu     sync.Mutex
	seen   []map[string]any // every message the agent sent
}

// acpEnv is the environment a test's agent runs in.
func acpEnv(t *testing.T, f *fakeModel, state string) []string {
	return []string{"OPENAI_BASE_URL=" + f.url(), "OPENAI_API_KEY=x", "LEMBAS_MODEL=mock",
		"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + t.TempDir()}
}

func startACP(t *testing.T, env []string, dir string) *acpProc {
	t.Helper()
	cmd := exec.Command(lembasBin(t), "serve", "--stdio")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh"}, env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	p := &acpProc{t: t, cmd: cmd, in: in, msgs: make(chan map[string]any, 1000), stderr: &strings.Builder{}}
	cmd.Stderr = &syncWriter{b: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(strings.TrimSpace(string(line))) > 0 {
				var m map[string]any
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					t.Errorf("stdout carries a line that is not JSON: %q", line)
				} else {
					p.msgs <- m
				}
			}
			if err != nil {
				close(p.msgs)
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("lembas serve did not end after stdin closed")
		}
	})
	return p
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (p *acpProc) sendRaw(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *acpProc) send(v any) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	p.sendRaw(string(b))
}

// request sends a request and returns its id.
func (p *acpProc) request(method string, params any) float64 {
	p.next++
	p.send(map[string]any{"jsonrpc": "2.0", "id": p.next, "method": method, "params": params})
	return float64(p.next)
}

// read returns the next message, failing the test if none comes.
func (p *acpProc) read() map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.msgs:
		if !ok {
			p.t.Fatalf("the agent closed stdout; stderr:\n%s", p.stderr.String())
		}
		p.mu.Lock()
		p.seen = append(p.seen, m)
		p.mu.Unlock()
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no message from the agent; stderr:\n%s", p.stderr.String())
	}
	return nil
}

// await reads until the response to id, handing every other message to
// on (which may answer the agent's requests), and returns the response.
func (p *acpProc) await(id any, on func(m map[string]any)) map[string]any {
	p.t.Helper()
	for {
		m := p.read()
		if _, isReq := m["method"]; !isReq && fmt.Sprint(m["id"]) == fmt.Sprint(id) {
			return m
		}
		if on != nil {
			on(m)
		} else if _, ok := m["method"]; ok && m["id"] != nil {
			p.t.Fatalf("unexpected request from the agent: %v", m)
		}
	}
}

func (p *acpProc) result(id any, on func(m map[string]any)) map[string]any {
	p.t.Helper()
	m := p.await(id, on)
	r, ok := m["result"].(map[string]any)
	if !ok {
		p.t.Fatalf("response %v has no object result: %v", id, m)
	}
	return r
}

func (p *acpProc) initialize(caps map[string]any) {
	p.t.Helper()
	r := p.result(p.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps}), nil)
	if r["protocolVersion"] != 1.0 {
		p.t.Fatalf("initialize: %v", r)
	}
}

func (p *acpProc) newSession(cwd, mode string) string {
	p.t.Helper()
	params := map[string]any{"cwd": cwd, "mcpServers": []any{}}
	if mode != "" {
		params["_meta"] = map[string]any{"mode": mode}
	}
	r := p.result(p.request("session/new", params), nil)
	id, _ := r["sessionId"].(string)
	if id == "" {
		p.t.Fatalf("session/new: %v", r)
	}
	return id
}

// update is a session/update's update, or nil.
func update(m map[string]any) map[string]any {
	if m["method"] != "session/update" {
		return nil
	}
	u, _ := m["params"].(map[string]any)["update"].(map[string]any)
	return u
}

func prompt(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

func TestACPTurnWithToolCall(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fixture runs cat through a POSIX shell")
	}
	f := newFakeModel(t)
	f.push(
		callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}),
		callsReply(fakeCall{"edit", map[string]any{"path": "src/app.txt", "old_string": "TODO", "new_string": "DONE"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "cat src/app.txt"}}),
		textReply("Replaced TODO with DONE."),
	)
	proj := copyProject(t, "basic")
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	p.initialize(map[string]any{})
	sid := p.newSession(proj, "auto")
	if u := update(p.read()); u == nil || u["sessionUpdate"] != "available_commands_update" {
		t.Fatalf("no available_commands_update after session/new: %v", u)
	}
	var seq []string
	var text strings.Builder
	var diff, output map[string]any
	r := p.result(p.request("session/prompt", prompt(sid, "replace TODO with DONE, then cat it")), func(m map[string]any) {
		u := update(m)
		if u == nil {
			t.Fatalf("unexpected message %v", m)
		}
		switch u["sessionUpdate"] {
		case "agent_message_chunk":
			text.WriteString(u["content"].(map[string]any)["text"].(string))
		case "tool_call":
			seq = append(seq, fmt.Sprintf("call:%v:%v:%v", u["kind"], u["status"], u["title"]))
		case "tool_call_update":
			seq = append(seq, fmt.Sprintf("update:%v", u["status"]))
			if c, ok := u["content"].([]any); ok && len(c) > 0 {
				first := c[0].(map[string]any)
				if first["type"] == "diff" {
					diff = first
				} else if strings.Contains(fmt.Sprint(first), "status: DONE") {
					output = first
				}
			}
		}
	})
	if r["stopReason"] != "end_turn" {
		t.Errorf("stopReason %v", r)
	}
	want := "call:read:pending:Read src/app.txt update:in_progress update:completed " +
		"call:edit:pending:Edit src/app.txt update:in_progress update:completed " +
		"call:execute:pending:cat src/app.txt update:in_progress update:in_progress update:completed" // the second: cat's output, live
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("tool updates\n got %s\nwant %s", got, want)
	}
	if text.String() != "Replaced TODO with DONE." {
		t.Errorf("message chunks %q", text.String())
	}
	if diff == nil || diff["oldText"] != "status: TODO\n" || diff["newText"] != "status: DONE\n" || diff["path"] != filepath.Join(proj, "src/app.txt") {
		t.Errorf("edit diff %v", diff)
	}
	if output == nil || output["content"].(map[string]any)["type"] != "text" {
		t.Errorf("command output %v", output)
	}
	if data, _ := os.ReadFile(filepath.Join(proj, "src/app.txt")); string(data) != "status: DONE\n" {
		t.Errorf("file %q", data)
	}
}

// TestACPPermission answers the approval card every way: allow once,
// allow always (the second call is not asked), once with a corrected
// command, deny with feedback, cancelled.
// (The commands are expr, not echo: echo is allowed by
// harness/permission/defaults.json and would never be asked about.)
func TestACPPermission(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX shell commands")
	}
	f := newFakeModel(t)
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "expr one"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "expr two"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "expr three"}}),
		textReply("done"),
		callsReply(fakeCall{"bash", map[string]any{"command": "expr wrong"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "rm -rf build"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "expr four"}}),
		textReply("done"),
	)
	proj := copyProject(t, "basic")
	os.MkdirAll(filepath.Join(proj, "build"), 0o755)
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	p.initialize(nil)
	sid := p.newSession(proj, "")
	answers := []map[string]any{
		{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}},
		{"outcome": map[string]any{"outcome": "selected", "optionId": "session"}},
	}
	var asked []string
	answer := func(m map[string]any) {
		if m["method"] != "session/request_permission" {
			return
		}
		params := m["params"].(map[string]any)
		tc := params["toolCall"].(map[string]any)
		asked = append(asked, fmt.Sprint(tc["title"]))
		var kinds []string
		for _, o := range params["options"].([]any) {
			kinds = append(kinds, o.(map[string]any)["optionId"].(string)+"="+o.(map[string]any)["kind"].(string))
		}
		if got := strings.Join(kinds, " "); got != "once=allow_once session=allow_always deny=reject_once" {
			t.Errorf("options %s", got)
		}
		if tc["status"] != "pending" || tc["kind"] != "execute" || tc["toolCallId"] == "" {
			t.Errorf("toolCall %v", tc)
		}
		if len(answers) == 0 {
			t.Fatalf("asked more than expected: %v", asked)
		}
		p.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": answers[0]})
		answers = answers[1:]
	}
	r := p.result(p.request("session/prompt", prompt(sid, "echo things")), answer)
	if r["stopReason"] != "end_turn" || strings.Join(asked, "|") != "expr one|expr two" {
		t.Errorf("turn 1: %v, asked %q", r, asked)
	}
	// "always" held for the session: expr three ran without asking.
	res := toolResults(f.got()[3])
	if len(res) != 3 || !strings.Contains(res[2], "three") {
		t.Errorf("results %q", res)
	}
	// A new session starts without it: corrected command, feedback, cancelled.
	sid2 := p.newSession(proj, "")
	asked = nil
	answers = []map[string]any{
		{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}, "_meta": map[string]any{"lembas": map[string]any{"command": "echo corrected"}}},
		{"outcome": map[string]any{"outcome": "selected", "optionId": "deny"}, "_meta": map[string]any{"lembas": map[string]any{"feedback": "never delete build"}}},
		{"outcome": map[string]any{"outcome": "cancelled"}},
	}
	r = p.result(p.request("session/prompt", prompt(sid2, "more")), answer)
	if r["stopReason"] != "end_turn" || len(asked) != 3 {
		t.Fatalf("turn 2: %v, asked %q", r, asked)
	}
	res = toolResults(f.got()[7])
	if len(res) != 3 {
		t.Fatalf("results %q", res)
	}
	if !strings.Contains(res[0], "What ran instead: echo corrected") || !strings.Contains(res[0], "You asked for: expr wrong") {
		t.Errorf("the corrected command's result does not tell the model what the person changed: %q", res[0])
	}
	if !strings.Contains(res[1], "never delete build") {
		t.Errorf("denial with feedback %q", res[1])
	}
	if !strings.Contains(res[2], "denied") {
		t.Errorf("cancelled answer %q", res[2])
	}
	if _, err := os.Stat(filepath.Join(proj, "build")); err != nil {
		t.Errorf("the denied command ran: %v", err)
	}
}

// TestACPCancel cancels a turn whose command sleeps: the prompt answers
// cancelled, the command is killed, and nothing of the turn follows.
func TestACPCancel(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX shell commands")
	}
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "sleep 30; touch late"}}))
	proj := copyProject(t, "basic")
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	p.initialize(nil)
	sid := p.newSession(proj, "auto")
	id := p.request("session/prompt", prompt(sid, "sleep"))
	r := p.result(id, func(m map[string]any) {
		if u := update(m); u != nil && u["status"] == "in_progress" {
			p.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
		}
	})
	if r["stopReason"] != "cancelled" {
		t.Fatalf("stopReason %v", r)
	}
	// Nothing of the cancelled turn comes after its answer.
	p.result(p.request("session/set_mode", map[string]any{"sessionId": sid, "modeId": "edit"}), func(m map[string]any) {
		if u := update(m); u == nil || u["sessionUpdate"] != "current_mode_update" {
			t.Errorf("after the answer: %v", m)
		}
	})
	if _, err := os.Stat(filepath.Join(proj, "late")); err == nil {
		t.Errorf("the cancelled command ran on")
	}
	// The next prompt runs normally.
	f.push(textReply("ok"))
	if r := p.result(p.request("session/prompt", prompt(sid, "again")), nil2); r["stopReason"] != "end_turn" {
		t.Errorf("after cancel: %v", r)
	}
}

func nil2(map[string]any) {}

// TestACPLoad replays a stored session in a new process.
func TestACPLoad(t *testing.T) {
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}), textReply("It says TODO."))
	proj := copyProject(t, "basic")
	state := t.TempDir()
	env := acpEnv(t, f, state)
	p := startACP(t, env, proj)
	p.initialize(nil)
	sid := p.newSession(proj, "")
	p.result(p.request("session/prompt", prompt(sid, "what does app.txt say?")), nil2)
	p.in.Close()
	p.cmd.Wait()

	q := startACP(t, env, proj)
	q.initialize(nil)
	var kinds []string
	res := q.await(q.request("session/load", map[string]any{"sessionId": sid, "cwd": proj, "mcpServers": []any{}}), func(m map[string]any) {
		if u := update(m); u != nil {
			kinds = append(kinds, fmt.Sprint(u["sessionUpdate"], ":", u["status"]))
		}
	})
	r, ok := res["result"].(map[string]any)
	if !ok {
		t.Fatalf("session/load result is not an object: %v", res)
	}
	if m, _ := r["modes"].(map[string]any); m["currentModeId"] != "manual" {
		t.Errorf("modes %v", r["modes"])
	}
	if got := strings.Join(kinds, " "); got != "user_message_chunk:<nil> tool_call:completed agent_message_chunk:<nil>" {
		t.Errorf("replayed %s", got)
	}
	// The loaded session goes on.
	f.push(textReply("Still TODO."))
	if r := q.result(q.request("session/prompt", prompt(sid, "and now?")), nil2); r["stopReason"] != "end_turn" {
		t.Errorf("prompt after load: %v", r)
	}
	if n := len(f.got()[2].messages()); n < 6 {
		t.Errorf("the loaded conversation was not sent: %d messages", n)
	}
}

// TestACPMalformed sends every malformed case of the JSON-RPC 2.0
// specification's examples, and the limits, and checks each is answered
// and the connection kept.
func TestACPMalformed(t *testing.T) {
	f := newFakeModel(t)
	proj := copyProject(t, "basic")
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	big := `{"jsonrpc":"2.0","id":9,"method":"x","params":{"a":"` + strings.Repeat("x", 50331648) + `"}}`
	cases := []struct {
		line string
		code float64
		id   any
	}{
		{`{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`, -32601, "1"},
		{`{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`, -32700, nil},
		{`{"jsonrpc": "2.0", "method": 1, "params": "bar"}`, -32600, nil},
		{`[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]`, -32700, nil},
		{`[]`, -32600, nil},
		{`[1]`, -32600, nil},
		{`[1,2,3]`, -32600, nil},
		{`1`, -32600, nil},
		{`{"jsonrpc": "1.0", "method": "initialize", "id": 5}`, -32600, 5.0},
		{`{"method": "initialize", "id": 5}`, -32600, 5.0},
		{`{"jsonrpc": "2.0", "method": "initialize", "params": "bar", "id": 6}`, -32600, 6.0},
		{`{"jsonrpc": "2.0", "method": "initialize", "id": {"a": 1}}`, -32600, nil},
		{`{"jsonrpc": "2.0", "id": 7}`, -32600, 7.0},
		{`{"jsonrpc": "2.0", "method": "a", "method": "b", "id": 8}`, -32600, nil},
		{`{"jsonrpc": "2.0", "Method": "initialize", "id": 8}`, -32600, nil},
		{`{"jsonrpc": "2.0", "method": "initialize", "id": 8, "params": {"protocolVersion": 1, "ProtocolVersion": 2}}`, -32600, nil},
		{`{"jsonrpc": "2.0", "method": "x", "id": 8, "params": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, -32600, nil},
		{big, -32600, nil},
		{`{"jsonrpc": "2.0", "method": "session/new", "id": 10, "params": {"cwd": "/", "mcpServers": []}}`, -32600, 10.0},
		{`{"jsonrpc": "2.0", "method": "x", "id": 11} {"more": 1}`, -32700, nil},
	}
	for _, c := range cases {
		p.sendRaw(c.line)
		m := p.read()
		e, ok := m["error"].(map[string]any)
		short := c.line
		if len(short) > 80 {
			short = short[:80]
		}
		if !ok || e["code"] != c.code || m["id"] != c.id || e["message"] == "" {
			t.Errorf("%s\n got %v\nwant code %v id %v", short, m, c.code, c.id)
		}
	}
	// A notification of an unknown method is not answered; ids come back exactly.
	p.sendRaw(`{"jsonrpc": "2.0", "method": "foobar"}`)
	p.sendRaw(`{"jsonrpc": "2.0", "method": "initialize", "id": 1.50, "params": {"protocolVersion": 1}}`)
	m := p.read()
	if m["id"] != 1.5 || m["result"] == nil {
		t.Errorf("after a notification: %v", m)
	}
	p.sendRaw(`{"jsonrpc": "2.0", "method": "authenticate", "id": null, "params": {"methodId": "x"}}`)
	if m := p.read(); m["id"] != nil || m["result"] == nil {
		t.Errorf("null id: %v", m)
	}
	// Params that do not fit, and a prompt over its limits.
	id := p.request("session/new", map[string]any{"cwd": "relative/dir", "mcpServers": []any{}})
	if m := p.await(id, nil); m["error"].(map[string]any)["code"] != -32602.0 {
		t.Errorf("relative cwd: %v", m)
	}
	sid := p.newSession(proj, "")
	p.read() // available_commands_update
	huge := strings.Repeat("A", 14<<20)
	id = p.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "image", "mimeType": "image/png", "data": huge}}})
	if m := p.await(id, nil); m["error"].(map[string]any)["code"] != -32602.0 || !strings.Contains(fmt.Sprint(m), "limit") {
		t.Errorf("a block over the limit: %v", m)
	}
	blocks := []any{}
	for i := 0; i < 3; i++ {
		blocks = append(blocks, map[string]any{"type": "text", "text": strings.Repeat("x", 9<<20)})
	}
	id = p.request("session/prompt", map[string]any{"sessionId": sid, "prompt": blocks})
	if m := p.await(id, nil); m["error"].(map[string]any)["code"] != -32602.0 || !strings.Contains(fmt.Sprint(m), "a prompt") {
		t.Errorf("a prompt over the limit: %v", fmt.Sprint(m)[:200])
	}
	id = p.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "audio", "data": "AA=="}}})
	if m := p.await(id, nil); m["error"].(map[string]any)["code"] != -32602.0 {
		t.Errorf("an audio block: %v", m)
	}
	id = p.request("session/fly", map[string]any{})
	if m := p.await(id, nil); m["error"].(map[string]any)["code"] != -32601.0 {
		t.Errorf("unknown method: %v", m)
	}
}

// TestACPQueueAndEOF: a prompt sent while another works waits its turn;
// closing stdin mid-turn cancels it, answers it, and ends the process.
func TestACPQueueAndEOF(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX shell commands")
	}
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "sleep 0.3"}}), textReply("first"), textReply("second"))
	proj := copyProject(t, "basic")
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	p.initialize(nil)
	sid := p.newSession(proj, "auto")
	p.read()
	a := p.request("session/prompt", prompt(sid, "one"))
	b := p.request("session/prompt", prompt(sid, "two"))
	var order []string
	var text strings.Builder
	for len(order) < 2 {
		m := p.read()
		if u := update(m); u != nil && u["sessionUpdate"] == "agent_message_chunk" {
			text.WriteString(u["content"].(map[string]any)["text"].(string) + "|")
		}
		if m["method"] == nil {
			order = append(order, fmt.Sprint(m["id"], ":", m["result"].(map[string]any)["stopReason"]))
		}
	}
	if got := strings.Join(order, " "); got != fmt.Sprint(a, ":end_turn ", b, ":end_turn") || text.String() != "first|second|" {
		t.Errorf("order %s, text %q", got, text.String())
	}
	// EOF mid-turn.
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "sleep 30"}}))
	id := p.request("session/prompt", prompt(sid, "three"))
	for {
		if u := update(p.read()); u != nil && u["status"] == "in_progress" {
			break
		}
	}
	p.in.Close()
	m := p.await(id, nil2)
	if m["result"].(map[string]any)["stopReason"] != "cancelled" {
		t.Errorf("at EOF: %v", m)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("exit after EOF: %v; stderr %s", err, p.stderr.String())
	}
}

// TestACPPlanUpdate: a plan the model writes reaches the editor as flat
// entries, every task (a dropped one completed), with the structure in
// _meta.lembas.plan.
func TestACPPlanUpdate(t *testing.T) {
	p := &plan{Phases: []planPhase{{ID: "p1", Title: "Work", Tasks: []planTask{
		{ID: "t1", Text: "read", Status: "done"}, {ID: "t2", Text: "edit", Status: "doing"},
		{ID: "t3", Text: "gone", Status: "dropped"}, {ID: "t4", Text: "test", Status: "todo"}}}}}
	u := planUpdate(p)
	b, _ := json.Marshal(u["entries"])
	want := `[{"content":"read","priority":"medium","status":"completed"},{"content":"edit","priority":"medium","status":"in_progress"},{"content":"gone","priority":"medium","status":"completed"},{"content":"test","priority":"medium","status":"pending"}]`
	if string(b) != want {
		t.Errorf("entries %s\nwant %s", b, want)
	}
	m, _ := u["_meta"].(map[string]any)["lembas"].(map[string]any)
	got, _ := json.Marshal(m["plan"])
	wantPlan := `{"findings":[],"objectives":[],"phases":[{"id":"p1","tasks":[{"id":"t1","status":"done","text":"read"},{"id":"t2","status":"doing","text":"edit"},{"id":"t3","status":"dropped","text":"gone"},{"id":"t4","status":"todo","text":"test"}],"title":"Work"}],"steps":[{"id":"t1","phase":"p1","status":"done","text":"read"},{"id":"t2","phase":"p1","status":"doing","text":"edit"},{"id":"t3","phase":"p1","status":"dropped","text":"gone"},{"id":"t4","phase":"p1","status":"todo","text":"test"}],"summary":"","title":"","version":0}`
	if string(got) != wantPlan {
		t.Errorf("_meta.lembas.plan %s\nwant the seed's shape %s", got, wantPlan)
	}
}

// TestACPLiveOutput: a long command's output reaches the editor while it
// runs, as in-progress updates of the call, before the call completes.
func TestACPLiveOutput(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX shell commands")
	}
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "sh wait.sh"}}), textReply("ok"))
	proj := copyProject(t, "basic")
	// The script waits until the test has seen its first part live.
	os.WriteFile(filepath.Join(proj, "wait.sh"), []byte("echo first-part\nwhile [ ! -e done ]; do sleep 0.05; done\necho second-part\n"), 0o644)
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	p.initialize(nil)
	sid := p.newSession(proj, "auto")
	var live, final []string
	r := p.result(p.request("session/prompt", prompt(sid, "run it")), func(m map[string]any) {
		u := update(m)
		if u == nil || u["sessionUpdate"] != "tool_call_update" || u["content"] == nil {
			return
		}
		b, _ := json.Marshal(u["content"])
		if u["status"] == "in_progress" {
			live = append(live, string(b))
			// The command waits for this: the first part was seen live.
			os.WriteFile(filepath.Join(proj, "done"), nil, 0o644)
		} else {
			final = append(final, string(b))
		}
	})
	if r["stopReason"] != "end_turn" {
		t.Fatalf("stopReason %v", r)
	}
	if len(live) == 0 || !strings.Contains(live[0], "first-part") || strings.Contains(live[0], "second-part") {
		t.Errorf("live updates %q", live)
	}
	if len(final) != 1 || !strings.Contains(final[0], "second-part") {
		t.Errorf("final content %q", final)
	}
}

package main

// A panic is a failed call, never a dead process: one test per seam makes a
// panic through a hook the test injects into the real object (a tool of the
// toolbox, a handler of the connection, an asker, an event consumer) and
// checks that the call fails with a sentence and that the same object goes
// on serving.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPanicToolCall: a tool that panics answers an error result the model
// reads, and its stack goes to the toolbox's log.
func TestPanicToolCall(t *testing.T) {
	tb := newTestToolbox(t, nil)
	var logged []string
	tb.log = func(s string) { logged = append(logged, s) }
	tb.extra = map[string]toolFunc{"boom": func(*toolbox, context.Context, json.RawMessage) toolResult {
		var m map[string]int
		m["x"] = 1 // a nil map write: a runtime panic, not a panic(string)
		return toolResult{}
	}}
	res := tb.run(context.Background(), &toolSpec{Name: "boom", Parameters: json.RawMessage(`{"type":"object"}`)}, json.RawMessage(`{}`))
	if !res.IsError || res.Status != "failed" || !strings.Contains(res.Text, "boom failed inside lembas") {
		t.Fatalf("result %+v", res)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "goroutine") || !strings.Contains(logged[0], "recover_test.go") {
		t.Errorf("the log has no stack: %q", logged)
	}
}

// TestPanicStdioHandler: serve --stdio's connection, with a handler that
// panics for one method and one notification: the request is answered
// -32603 with its id, and initialize after it is answered as usual.
func TestPanicStdioHandler(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var logs syncLog
	a := newACPAgent(context.Background(), newLineReader(inR, 1<<20), &lineWriter{w: outW}, logs.add)
	inner, innerN := a.conn.onRequest, a.conn.onNotify
	a.conn.onRequest = func(c *rpcCall) {
		if c.Method == "boom" {
			panic("handler boom")
		}
		if c.Method == "boom/async" { // the shape of every handler goroutine
			go func() {
				defer c.recovered()
				panic("async boom")
			}()
			return
		}
		inner(c)
	}
	a.conn.onNotify = func(m string, p json.RawMessage) {
		if m == "boom/note" {
			panic("notification boom")
		}
		innerN(m, p)
	}
	done := make(chan error, 1)
	go func() { done <- a.run(context.Background()) }()
	lines := make(chan map[string]any, 10)
	go func() {
		dec := json.NewDecoder(outR)
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				close(lines)
				return
			}
			lines <- m
		}
	}()
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"boom"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"boom/note"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"boom/async"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}`)
	got := map[float64]map[string]any{}
	for len(got) < 3 {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("the connection ended; answers so far %v; log:\n%s", got, logs.text())
			}
			got[m["id"].(float64)] = m
		case <-time.After(guard):
			t.Fatalf("answers %v; log:\n%s", got, logs.text())
		}
	}
	for _, id := range []float64{1, 2} {
		e, _ := got[id]["error"].(map[string]any)
		if e == nil || e["code"] != float64(rpcInternalError) || !strings.Contains(e["message"].(string), "boom") {
			t.Errorf("answer to %v: %v", id, got[id])
		}
	}
	if got[3]["result"] == nil {
		t.Errorf("initialize after the panics: %v", got[3])
	}
	if l := logs.text(); !strings.Contains(l, "notification boom") || !strings.Contains(l, "goroutine") {
		t.Errorf("the log lacks the panics' stacks:\n%s", l)
	}
	inW.Close()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("serve did not end at EOF")
	}
}

// TestPanicLinkHandler: the device link, over a real WebSocket to the fake
// instance: a request whose handler panics is answered -32603 and the link
// goes on (a session opens after it, on the same link).
func TestPanicLinkHandler(t *testing.T) {
	e := newLinkEnv(t, "")
	l0, err := findLogin("test")
	if err != nil {
		t.Fatal(err)
	}
	e.svc = newLinkService(l0, e.logs.add)
	e.svc.sleep = func(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, time.Millisecond) }
	inner := e.svc.conn.onRequest
	e.svc.conn.onRequest = func(c *rpcCall) {
		if c.Method == "_lembas/boom" {
			panic("link boom")
		}
		inner(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- e.svc.run(ctx) }()
	t.Cleanup(e.stop)
	l := e.link()
	r := l.rpcErr("_lembas/boom", map[string]any{})
	if r["code"] != float64(rpcInternalError) {
		t.Fatalf("answer %v", r)
	}
	if sid := e.newSession(l, e.proj, "manual"); sid == "" {
		t.Fatal("no session after the panic")
	}
	if !strings.Contains(e.logs.text(), "link boom") {
		t.Errorf("the log lacks the panic:\n%s", e.logs.text())
	}
}

// panicAsker panics when asked anything.
type panicAsker struct{}

func (panicAsker) askUser(context.Context, []question) askAnswer { panic("asker boom") }

// TestPanicMCPCallback: an MCP server's elicitation request, answered on
// the client's own goroutine, meets a panic (the asker's): the server gets
// -32603 for it, the tool call in flight still ends, and the server's tools
// still answer.
func TestPanicMCPCallback(t *testing.T) {
	cfg := mcpServerConfig{Name: "asks", Enabled: true, Command: "unused", StartupTimeout: 5 * time.Second, CallTimeout: guard}
	var logs syncLog
	s := newMCPServer(cfg, logs.add)
	list := `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`
	tr := newScriptedMCP([]byte(list), []byte(`{"content":[{"type":"text","text":"done"}]}`), []byte(`{}`),
		[]byte(`{"message":"your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`))
	s.open = func(context.Context) (mcpTransport, error) { return tr, nil }
	s.connect(context.Background())
	defer s.close()
	s.mu.Lock()
	s.person = func() asker { return panicAsker{} }
	s.mu.Unlock()
	_, _, tools := s.status()
	if len(tools) != 1 {
		t.Fatalf("tools %v", tools)
	}
	for i := 0; i < 2; i++ {
		if res := s.callTool(context.Background(), tools[0], json.RawMessage(`{}`), false); res.IsError || !strings.Contains(res.Text, "done") {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
	deadline := time.Now().Add(guard)
	for {
		tr.mu.Lock()
		n := len(tr.answers)
		ans := strings.Join(tr.answers, "\n")
		tr.mu.Unlock()
		if n >= 2 {
			if strings.Count(ans, fmt.Sprint(rpcInternalError)) != 2 {
				t.Errorf("answers to the elicitations: %s", ans)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the elicitations were not answered: %q", ans)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPanicEngineTurn: a panic in the turn outside any tool (here the
// event consumer's, at the prompt event) ends that turn failed with a
// sentence; the session is saved and the next turn runs.
func TestPanicEngineTurn(t *testing.T) {
	f := newFakeModel(t)
	f.push(textReply("second"))
	e, evs := newTestEngine(t, f, "manual", nil)
	var mu sync.Mutex
	var logged []string
	e.tb.log = func(s string) { mu.Lock(); logged = append(logged, s); mu.Unlock() }
	record := e.emit
	armed := true
	e.emit = func(ev event) {
		if ev.Type == evPrompt && armed {
			armed = false
			panic("consumer boom")
		}
		record(ev)
	}
	out := e.runTurn(context.Background(), "first")
	if out.Err == nil || !strings.Contains(out.Err.Error(), "the session goes on") || out.StopReason != "error" {
		t.Fatalf("outcome %+v", out)
	}
	if tr := e.sess.Turns[0]; tr.Status != "failed" || tr.Error == "" {
		t.Errorf("turn %+v", tr)
	}
	out = e.runTurn(context.Background(), "again")
	if out.Err != nil || out.Answer != "second" {
		t.Fatalf("the next turn: %+v", out)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "consumer boom") {
		t.Errorf("log %q", logged)
	}
	done := 0
	for _, ev := range *evs {
		if ev.Type == evDone {
			done++
		}
	}
	if done != 2 {
		t.Errorf("%d done events, want one per turn", done)
	}
}

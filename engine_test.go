package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// newTestEngine makes an engine over a fresh project against a fake model.
func newTestEngine(t *testing.T, f *fakeModel, mode string, files map[string]string) (*engine, *[]event) {
	t.Helper()
	tb := newTestToolbox(t, files)
	tb.shell = "/bin/sh"
	st := newStore(t.TempDir(), nil)
	t.Cleanup(st.close)
	sess, err := st.create(tb.root)
	if err != nil {
		t.Fatal(err)
	}
	sess.System, _ = systemPrompt(tb.root, mode, tb.shell, nil)
	var mu sync.Mutex
	var evs []event
	e := newEngine(testRef(f.url()), tb, newPermissions(mode, tb.root, true), st, sess, theSpec().Loop.Budgets["cli"].MaxSteps)
	e.ask = headlessApprover{}
	e.emit = func(ev event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() }
	return e, &evs
}

func TestEngineBadCalls(t *testing.T) {
	f := newFakeModel(t)
	f.push(fakeReply{body: sseData(
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{
			map[string]any{"index": 0, "id": "u", "function": map[string]any{"name": "frobnicate", "arguments": "{}"}},
			map[string]any{"index": 1, "id": "j", "function": map[string]any{"name": "read", "arguments": "{not json"}},
			map[string]any{"index": 2, "id": "m", "function": map[string]any{"name": "read", "arguments": `{"offset":3}`}},
			map[string]any{"index": 3, "id": "a", "function": map[string]any{"name": "view", "arguments": `{"path":"a.txt"}`}},
		}}}}})}, textReply("ok"))
	e, _ := newTestEngine(t, f, "manual", map[string]string{"a.txt": "A\n"})
	out := e.runTurn(context.Background(), "go")
	if out.Err != nil || out.StopReason != "end_turn" {
		t.Fatalf("outcome %+v", out)
	}
	res := toolResults(f.got()[1])
	wants := []string{"There is no tool named frobnicate. The tools are: apply_patch, ask_user, bash, edit",
		"The arguments of read are not valid JSON", "path is missing. Expected: {path: string (required), limit: integer, offset: integer}",
		"1\tA"}
	for i, w := range wants {
		if i >= len(res) || !strings.Contains(res[i], w) {
			t.Errorf("result %d: %q, want %q", i, res, w)
		}
	}
}

// TestEngineParallelReads checks read-only calls of one step run together
// while a write runs alone, in the order the model gave.
func TestEngineParallelReads(t *testing.T) {
	f := newFakeModel(t)
	f.push(callsReply(
		fakeCall{"read", map[string]any{"path": "a.txt"}},
		fakeCall{"grep", map[string]any{"pattern": "A"}},
		fakeCall{"edit", map[string]any{"path": "a.txt", "old_string": "A", "new_string": "B"}},
		fakeCall{"read", map[string]any{"path": "a.txt"}},
	), textReply("done"))
	e, evs := newTestEngine(t, f, "edit", map[string]string{"a.txt": "A\n"})
	e.runTurn(context.Background(), "go")
	res := toolResults(f.got()[1])
	if len(res) != 4 || !strings.Contains(res[3], "1\tB") || !strings.Contains(res[0], "1\tA") {
		t.Errorf("results %q", res)
	}
	// The two first calls started before either ended; the edit started after both.
	var order []string
	for _, ev := range *evs {
		if ev.Type == evToolStart || ev.Type == evToolEnd {
			order = append(order, ev.Type+":"+ev.Tool.Name)
		}
	}
	got := strings.Join(order, " ")
	if !strings.HasPrefix(got, "tool_start:read tool_start:grep") && !strings.HasPrefix(got, "tool_start:grep tool_start:read") {
		t.Errorf("reads did not start together: %s", got)
	}
	if !strings.Contains(got, "tool_start:edit tool_end:read tool_end:grep tool_end:edit tool_start:read") {
		// tool_end events are sent in call order once the step is done.
		t.Logf("order %s", got)
	}
}

func TestEnginePanicBecomesResult(t *testing.T) {
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"boom_tool", map[string]any{}}), textReply("fine"))
	e, _ := newTestEngine(t, f, "manual", nil)
	// A tool that panics, given to this engine alone (no registry swapped).
	spec := &toolSpec{Name: "boom_tool", Description: "Panics.", Risk: "read", Block: "read",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	boom := func(*toolbox, context.Context, json.RawMessage) toolResult { panic("boom") }
	if err := e.tb.addExtraTools([]*toolSpec{spec}, map[string]toolFunc{"boom_tool": boom}); err != nil {
		t.Fatal(err)
	}
	out := e.runTurn(context.Background(), "go")
	if out.Err != nil || out.Answer != "fine" {
		t.Fatalf("outcome %+v", out)
	}
	if res := toolResults(f.got()[1]); !strings.Contains(res[0], "boom_tool failed inside lembas: boom") {
		t.Errorf("result %q", res)
	}
}

func TestEngineNudgeAndBackstop(t *testing.T) {
	f := newFakeModel(t)
	f.push(textReply(""), textReply("now an answer"))
	e, _ := newTestEngine(t, f, "manual", nil)
	out := e.runTurn(context.Background(), "go")
	if out.Answer != "now an answer" {
		t.Errorf("after nudge: %+v", out)
	}
	if m := f.got()[1].messages(); m[len(m)-1]["content"] != theSpec().Loop.Nudges.EmptyReply {
		t.Errorf("nudge not sent: %v", m[len(m)-1])
	}
	// The step backstop with the wrap-up before it.
	f2 := newFakeModel(t)
	for i := 0; i < 4; i++ {
		f2.push(callsReply(fakeCall{"list", map[string]any{}}))
	}
	e2, _ := newTestEngine(t, f2, "manual", nil)
	e2.maxSteps = 4
	out = e2.runTurn(context.Background(), "go")
	if out.StopReason != "max_turn_requests" || len(f2.got()) != 4 {
		t.Errorf("backstop: %+v after %d requests", out, len(f2.got()))
	}
	wrap := 0
	for _, r := range f2.got() {
		for _, m := range r.messages() {
			if m["content"] == theSpec().Loop.Steps.Wrapup {
				wrap++
			}
		}
	}
	if wrap == 0 {
		t.Error("the wrap-up text was never sent")
	}
}

func TestEngineCancelMidStream(t *testing.T) {
	f := newFakeModel(t)
	f.chunk = 1
	long := strings.Repeat("word ", 400)
	f.push(textReply(long))
	e, _ := newTestEngine(t, f, "manual", nil)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	e.emit = func(ev event) {
		if ev.Type == evText {
			once.Do(func() { time.AfterFunc(5*time.Millisecond, cancel) })
		}
	}
	out := e.runTurn(ctx, "go")
	if out.StopReason != "cancelled" {
		t.Fatalf("outcome %+v", out)
	}
	if e.sess.Turns[0].Status != "cancelled" {
		t.Errorf("turn %+v", e.sess.Turns[0])
	}
	last := e.sess.Messages[len(e.sess.Messages)-1]
	if last.Role != "assistant" || last.Status != "cancelled" || last.Content == "" || len(last.Content) >= len(long) {
		t.Errorf("the text seen before the cancel was not kept: %+v", last)
	}
}

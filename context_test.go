package main

// Context tests: the engine against the scripted fake model over real
// HTTP. The prefix rule is asserted byte-wise on the raw request bodies of
// a long session; hygiene's stubs, recall, session notes, compaction and
// the reasoning_passback quirk each on what was actually sent.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ctxProject writes a small project to read and search.
func ctxProject(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"src/a.go":  "package a\n\nfunc A() int {\n\treturn 1 // TODO\n}\n\nfunc B() int { return 2 }\n",
		"src/b.go":  "package a\n\n// TODO: more\nfunc C() {}\n",
		"README.md": "# demo\n\nA demo project.\n",
		"docs/x.md": "notes\n",
	}
	for p, c := range files {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := filepath.EvalSymlinks(root)
	return r
}

// testEngine makes a session and an engine on the fake model, as
// newSessionEngine does for lembas -p.
func testEngine(t testing.TB, f *fakeModel, root, mode string) *engine {
	t.Helper()
	ref := testRef(f.url())
	tb, err := newToolbox(root, false)
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t.TempDir(), nil)
	sess, err := st.create(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	sess.System, err = systemPrompt(root, mode, tb.shell, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess.NoteMode = mode
	e := newEngine(ref, tb, newPermissions(mode, root, true), st, sess, 60)
	e.ask, e.hygiene = headlessApprover{}, true
	return e
}

// withReasoning puts a reasoning piece before a scripted reply.
func withReasoning(r fakeReply, reasoning string) fakeReply {
	pre := sseData(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"reasoning_content": reasoning}}}})
	r.body = strings.TrimSuffix(pre, "data: [DONE]\n\n") + r.body
	return r
}

var reReasoningField = regexp.MustCompile(`,"reasoning_content":"(?:[^"\\]|\\.)*"`)

// splitAtMessages cuts a raw body where its messages array closes: the
// part before is what the next request must start with, the part from the
// bracket on is what it must end with.
func splitAtMessages(t testing.TB, body []byte) ([]byte, []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	msgs := m["messages"]
	i := bytes.Index(body, msgs)
	if i < 0 {
		t.Fatal("messages not found in the body")
	}
	cut := i + len(msgs) - 1
	return body[:cut], body[cut:]
}

// prefixHolds says whether next starts with prev's bytes up to the end of
// its last message and ends with prev's bytes after its messages.
func prefixHolds(t testing.TB, prev, next []byte) bool {
	head, tail := splitAtMessages(t, prev)
	return bytes.HasPrefix(next, head) && bytes.HasSuffix(next, tail)
}

// sharedPrefixLen is how many leading bytes two requests share.
func sharedPrefixLen(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestPrefixStaysStill(t *testing.T) {
	f := newFakeModel(t)
	root := ctxProject(t)
	e := testEngine(t, f, root, "auto")
	e.ref.Meta.Context = 0 // no compaction until turn 3
	var events []event
	e.emit = func(ev event) { events = append(events, ev) }
	read := func(args map[string]any) fakeReply { return callsReply(fakeCall{"read", args}) }
	// Turn 1: reads, re-reads, searches, an edit, a read after it.
	f.push(
		withReasoning(read(map[string]any{"path": "src/a.go"}), "look at a"),
		withReasoning(callsReply(fakeCall{"grep", map[string]any{"pattern": "TODO"}}, fakeCall{"list", map[string]any{}}), "search"),
		withReasoning(read(map[string]any{"path": "src/a.go"}), "again"),
		read(map[string]any{"path": "src/a.go", "offset": 3, "limit": 2}),
		callsReply(fakeCall{"grep", map[string]any{"pattern": "TODO"}}),
		callsReply(fakeCall{"edit", map[string]any{"path": "src/a.go", "old_string": "return 1 // TODO", "new_string": "return 1"}}),
		read(map[string]any{"path": "src/a.go"}),
		withReasoning(textReply("Done with a."), "wrap up"),
	)
	if out := e.runTurn(context.Background(), "clean up a.go"); out.Err != nil {
		t.Fatal(out.Err)
	}
	// Turn 2, after a mode change: the note says so.
	e.setMode("edit")
	f.push(
		withReasoning(read(map[string]any{"path": "src/b.go"}), "b now"),
		callsReply(fakeCall{"grep", map[string]any{"pattern": "TODO"}}),
		textReply("b is fine."),
	)
	if out := e.runTurn(context.Background(), "and b.go?"); out.Err != nil {
		t.Fatal(out.Err)
	}
	// Turn 3: the person changed the plan; the window is small enough that
	// the first step's 220 tokens call for a compaction.
	if err := e.personPlan(&plan{Title: "Tidy", Phases: []planPhase{{ID: "p1", Title: "Work", Tasks: []planTask{{ID: "t1", Text: "tidy a", Status: "done"}}}}}); err != nil {
		t.Fatal(err)
	}
	e.ref.Meta.Context = 250
	f.push(
		read(map[string]any{"path": "README.md"}),
		textReply("Summary: a.go tidied, b.go checked, README read."),
		textReply("All tidy."),
	)
	if out := e.runTurn(context.Background(), "read the README"); out.Err != nil {
		t.Fatal(out.Err)
	}
	// Turn 4 after the compaction: the table was emptied, so a.go is read whole.
	e.ref.Meta.Context = 0
	f.push(read(map[string]any{"path": "src/a.go"}), read(map[string]any{"path": "src/a.go"}), textReply("Read."))
	if out := e.runTurn(context.Background(), "read a again"); out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := f.got()
	recs := e.sess.Requests
	if len(reqs) != len(recs) || len(reqs) != 17 {
		t.Fatalf("%d requests sent, %d recorded, want 17", len(reqs), len(recs))
	}
	stripped := 0
	for i := 1; i < len(reqs); i++ {
		prev, next := reqs[i-1].Raw, reqs[i].Raw
		switch {
		case recs[i-1].Kind == "compact":
			if prefixHolds(t, prev, next) {
				t.Errorf("request %d, right after the compaction, still carries the old history", i)
			}
		case recs[i].Turn != recs[i-1].Turn:
			if !prefixHolds(t, reReasoningField.ReplaceAll(prev, nil), next) {
				t.Errorf("request %d (new turn) does not start with request %d less its reasoning:\n%s\n%s", i, i-1, prev, next)
			}
			if !prefixHolds(t, prev, next) {
				stripped++
			}
		default:
			if !prefixHolds(t, prev, next) {
				t.Errorf("request %d does not start with request %d's bytes:\n%s\n%s", i, i-1, prev, next)
			}
		}
	}
	if stripped == 0 {
		t.Error("no new turn dropped reasoning: the test lost its reasoning")
	}
	// What hygiene inserted in turn 1 (request 8 holds all of its results).
	res := toolResults(reqs[7])
	if len(res) != 8 {
		t.Fatalf("turn 1 results: %q", res)
	}
	wantStart := []string{"[#0001] src/a.go · lines 1-7 of 7 · sha256:", "[#0002]", "[#0003]",
		"[#0004] src/a.go lines 1-7 are unchanged since #0001", "[#0005] src/a.go lines 3-4 are unchanged since #0001",
		"[#0006] The same grep as #0002", "[#0007]", "[#0008] src/a.go · lines 1-7 of 7"}
	for i, w := range wantStart {
		if !strings.HasPrefix(res[i], w) {
			t.Errorf("result %d = %q, want it to start with %q", i+1, res[i], w)
		}
	}
	if !strings.Contains(res[6], "src/a.go: 1 replacement(s).\n@@ -4,1 +4,1 @@\n-\treturn 1 // TODO\n+\treturn 1") {
		t.Errorf("the edit does not answer its diff: %q", res[6])
	}
	// Notes: the date on turn 1, the mode on turn 2, the plan on turn 3.
	var prompts []string
	for _, m := range e.sess.Messages {
		if m.Kind == "prompt" {
			prompts = append(prompts, m.Content)
		}
	}
	if !strings.HasPrefix(prompts[0], "<session-note>\nToday is ") || !strings.Contains(prompts[1], "The permission mode is now edit.") ||
		strings.Contains(prompts[1], "Today is") || !strings.Contains(prompts[2], "The person changed the plan") || strings.Contains(prompts[3], "<session-note>") {
		t.Errorf("session notes: %q", prompts)
	}
	if first := reqs[0].messages(); !strings.HasPrefix(fmt.Sprint(first[1]["content"]), "<session-note>") || strings.Contains(e.sess.System, "Today") {
		t.Error("the date must come as a note, never in the system prompt")
	}
	// The compaction: asked as the next turn of the same conversation, then
	// the history is the system prompt and the summary.
	ci := -1
	for i, r := range recs {
		if r.Kind == "compact" {
			ci = i
		}
	}
	if ci < 0 {
		t.Fatal("no compaction")
	}
	after := reqs[ci+1].messages()
	if len(after) != 2 || after[0]["role"] != "system" || after[1]["role"] != "user" {
		t.Fatalf("after the compaction the history is %v", after)
	}
	summary, _ := after[1]["content"].(string)
	if !strings.Contains(summary, "Summary: a.go tidied") || !strings.Contains(summary, "src/b.go · lines 1-4") ||
		!strings.Contains(summary, theSpec().Loop.Context.Compaction.Continue) {
		t.Errorf("summary message: %q", summary)
	}
	compacted := 0
	for _, m := range e.sess.Messages {
		if m.Compacted {
			compacted++
		}
	}
	if compacted < 20 {
		t.Errorf("only %d messages marked compacted", compacted)
	}
	last := toolResults(reqs[len(reqs)-1])
	if len(last) != 2 || !strings.Contains(last[0], "src/a.go · lines 1-7") || !strings.Contains(last[1], "unchanged since") {
		t.Errorf("after compaction: %q", last)
	}
	if recs[len(recs)-1].Usage.Cached != 80 {
		t.Errorf("cached tokens not recorded: %+v", recs[len(recs)-1])
	}
	// The stored session reads back with all of it.
	back, err := e.st.read(e.sess.ID)
	if err != nil || len(back.Requests) != 17 || back.Plan == nil || back.Dedupe == nil || len(back.Dedupe.Reads) != 1 {
		t.Errorf("stored session: %v %+v", err, back)
	}
	sawPlan := false
	for _, ev := range events {
		if ev.Type == evPlan && ev.Plan != nil && ev.Plan.Title == "Tidy" {
			sawPlan = true
		}
	}
	if !sawPlan {
		t.Error("no plan event")
	}
}

func TestRecallAndHygieneOff(t *testing.T) {
	f := newFakeModel(t)
	root := ctxProject(t)
	big := strings.Repeat("line\n", 900)
	os.WriteFile(filepath.Join(root, "big.txt"), []byte(big), 0o644)
	e := testEngine(t, f, root, "auto")
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "cat big.txt"}}),
		callsReply(fakeCall{"read", map[string]any{"path": "src/a.go"}}),
		callsReply(fakeCall{"read", map[string]any{"path": "src/a.go"}}),
		callsReply(fakeCall{"recall", map[string]any{"id": "#0001", "offset": 890}}),
		callsReply(fakeCall{"recall", map[string]any{"id": "3"}}),
		callsReply(fakeCall{"recall", map[string]any{"id": "#00ff"}}),
		textReply("ok"),
	)
	if out := e.runTurn(context.Background(), "go"); out.Err != nil {
		t.Fatal(out.Err)
	}
	res := toolResults(f.got()[6])
	if !strings.Contains(res[0], "lines elided, full output #0001") {
		t.Errorf("bash output not capped: %.200q", res[0])
	}
	if !strings.HasPrefix(res[3], "[#0004]\nResult #0001 (bash) in full:\n") || strings.Count(res[3], "line") != 11 {
		t.Errorf("recall of the capped output: %q", res[3])
	}
	if !strings.Contains(res[4], "Result #0003 (read) in full:\n[#0003] src/a.go · lines 1-7") || !strings.Contains(res[4], "func A() int") {
		t.Errorf("recall of a stub: %q", res[4])
	}
	if !strings.Contains(res[5], "There is no result #00ff") {
		t.Errorf("recall of nothing: %q", res[5])
	}
	// Hygiene off: the same re-read is sent whole.
	f2 := newFakeModel(t)
	e2 := testEngine(t, f2, root, "auto")
	e2.hygiene = false
	f2.push(callsReply(fakeCall{"read", map[string]any{"path": "src/a.go"}}), callsReply(fakeCall{"read", map[string]any{"path": "src/a.go"}}), textReply("ok"))
	e2.runTurn(context.Background(), "go")
	r2 := toolResults(f2.got()[2])
	if strings.Contains(r2[1], "unchanged") || !strings.Contains(r2[1], "func A() int") {
		t.Errorf("hygiene off still stubs: %q", r2[1])
	}
	for _, v := range []struct {
		env  string
		want bool
	}{{"off", false}, {"OFF", false}, {"0", false}, {"", true}, {"on", true}} {
		if got := hygieneOn(func(string) string { return v.env }); got != v.want {
			t.Errorf("LEMBAS_HYGIENE=%q: %v", v.env, got)
		}
	}
}

// TestReasoningPassback: a server that demands every tool-calling
// assistant message's reasoning answers 400 once; the quirk is learned,
// the request retried, and every later request keeps it.
func TestReasoningPassback(t *testing.T) {
	f := newFakeModel(t)
	root := ctxProject(t)
	e := testEngine(t, f, root, "auto")
	f.push(
		withReasoning(callsReply(fakeCall{"read", map[string]any{"path": "src/a.go"}}), "I should read a"),
		withReasoning(textReply("Read it."), "done reading"),
	)
	e.runTurn(context.Background(), "read a")
	quirk := requestQuirks()[0]
	msg, _ := json.Marshal(map[string]any{"error": map[string]any{"message": quirk.Error, "type": "invalid_request_error"}})
	f.push(fakeReply{status: 400, body: string(msg)},
		withReasoning(callsReply(fakeCall{"list", map[string]any{}}), "list it"),
		textReply("Listed."))
	if out := e.runTurn(context.Background(), "now list"); out.Err != nil {
		t.Fatal(out.Err)
	}
	reqs := f.got()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	reasoningOf := func(r fakeRequest) []string {
		var out []string
		for _, m := range r.messages() {
			if m["role"] == "assistant" {
				s, _ := m["reasoning_content"].(string)
				out = append(out, s)
			}
		}
		return out
	}
	if got := reasoningOf(reqs[2]); got[0] != "" {
		t.Errorf("before the quirk, turn 1's reasoning went back: %q", got)
	}
	if got := reasoningOf(reqs[3]); len(got) != 2 || got[0] != "I should read a" || got[1] != "" {
		t.Errorf("the retried request: %q", got)
	}
	if got := reasoningOf(reqs[4]); len(got) != 3 || got[0] != "I should read a" || got[2] != "list it" {
		t.Errorf("a later request: %q", got)
	}
	if !e.quirkOn("reasoning_passback") || len(e.sess.Quirks) != 1 {
		t.Errorf("quirk not remembered: %v", e.sess.Quirks)
	}
	// A known host has it from the start; another does not.
	if !connQuirk(&connection{BaseURL: "https://api.deepseek.com/v1"}, "reasoning_passback") ||
		connQuirk(&connection{BaseURL: "http://127.0.0.1:1/v1"}, "reasoning_passback") {
		t.Error("hosts of the quirk")
	}
	// Another 400 is not a quirk.
	if learnedQuirk(&modelError{Kind: "bad_request", Status: 400, Msg: "x rejected the request (HTTP 400): bad"}) != "" {
		t.Error("any 400 taken as the quirk")
	}
}

// TestAbsolutePathsAccepted: the prompt names no machine path, and the
// model's absolute paths still work.
func TestAbsolutePathsAccepted(t *testing.T) {
	f := newFakeModel(t)
	root := ctxProject(t)
	e := testEngine(t, f, root, "auto")
	home, _ := os.UserHomeDir()
	for _, p := range []string{root, filepath.Dir(root), e.tb.shell} {
		if strings.Contains(e.sess.System, p) {
			t.Errorf("the system prompt holds the machine path %s", p)
		}
	}
	if home != "" && strings.Contains(e.sess.System, home) {
		t.Error("the system prompt holds the home folder")
	}
	if !strings.Contains(e.sess.System, "Project: "+filepath.Base(root)+". Paths are relative to its root.") {
		t.Errorf("the environment block does not name the project: %s", e.sess.System)
	}
	f.push(callsReply(fakeCall{"read", map[string]any{"path": filepath.Join(root, "src", "b.go")}}), textReply("ok"))
	e.runTurn(context.Background(), "read it")
	if r := toolResults(f.got()[1])[0]; !strings.Contains(r, "func C() {}") {
		t.Errorf("an absolute path was refused: %q", r)
	}
}

// TestCompactCommand is /compact between turns: no "continue" line, the
// dedupe table emptied, and a failed summary leaves the history as it was.
func TestCompactCommand(t *testing.T) {
	f := newFakeModel(t)
	root := ctxProject(t)
	e := testEngine(t, f, root, "auto")
	f.push(callsReply(fakeCall{"read", map[string]any{"path": "src/a.go"}}), textReply("ok"))
	e.runTurn(context.Background(), "read a")
	f.push(textReply(" "))
	if err := e.compact(context.Background()); err == nil || !strings.Contains(err.Error(), "no summary") {
		t.Errorf("an empty summary: %v", err)
	}
	f.push(textReply("We read a.go."))
	if err := e.compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(e.sess.Dedupe.Reads) != 0 {
		t.Error("the dedupe table was not emptied")
	}
	f.push(textReply("fine"))
	e.runTurn(context.Background(), "next")
	reqs := f.got()
	// The failed ask is not sent again; the good one continued the conversation.
	if !prefixHolds(t, reqs[1].Raw, reqs[3].Raw) {
		t.Error("the compaction request does not continue the conversation")
	}
	msgs := reqs[4].messages()
	if len(msgs) != 3 || strings.Contains(fmt.Sprint(msgs[1]["content"]), "Continue the task") ||
		!strings.Contains(fmt.Sprint(msgs[1]["content"]), "src/a.go · lines 1-7") {
		t.Errorf("after /compact: %v", msgs)
	}
}

func TestCompactAt(t *testing.T) {
	for _, c := range []struct{ window, want int }{{1000, 750}, {32768, 26214}, {131072, 111411}, {1000000, 900000}} {
		if got := compactAt(c.window); got != c.want {
			t.Errorf("compactAt(%d) = %d, want %d", c.window, got, c.want)
		}
	}
}

// FuzzHygieneInsert: any arguments and output a model and a tool produce
// are inserted without a panic, under their id, and the same listing
// twice is a stub.
func FuzzHygieneInsert(f *testing.F) {
	f.Add(`{"path":"a.txt"}`, "1\tx", true)
	f.Add(`{"pattern":"\u0000"}`, "", false)
	f.Add(`not json`, "x\ny", true)
	f.Fuzz(func(t *testing.T, args, text string, read bool) {
		d := &dedupeTable{}
		res := toolResult{Text: text}
		if read {
			res.Read = &readInfo{Start: 1, End: 2, Total: 2, Hash: "abc"}
		}
		tool := "grep"
		if read {
			tool = "read"
		}
		c1, _ := d.insert("/r", tool, json.RawMessage(args), &res, "0001", true)
		c2, _ := d.insert("/r", tool, json.RawMessage(args), &res, "0002", true)
		if !strings.HasPrefix(c1, "[#0001]") || !strings.HasPrefix(c2, "[#0002]") {
			t.Fatalf("ids: %q %q", c1, c2)
		}
		if _, capped := capOutput(text, "0001"); !capped && !strings.Contains(c2, "#0001") {
			t.Fatalf("the same result twice is not a stub: %q", c2)
		}
	})
}

// TestProjectInstructions: AGENTS.md (else CLAUDE.md) goes into the system
// prompt, cut at the spec's size, and not in a folder marked untrusted.
func TestProjectInstructions(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := t.TempDir()
	if got := projectInstructions(root); got != "" {
		t.Errorf("no file: %q", got)
	}
	os.WriteFile(filepath.Join(root, "CLAUDE.md"), []byte("Use tabs.\n"), 0o644)
	if got := projectInstructions(root); !strings.Contains(got, "CLAUDE.md") || !strings.HasSuffix(got, "Use tabs.") {
		t.Errorf("CLAUDE.md: %q", got)
	}
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Run make test.\n"), 0o644)
	sys, err := systemPrompt(root, "manual", "/bin/sh", nil)
	if err != nil || !strings.Contains(sys, "Run make test.") || strings.Contains(sys, "Use tabs.") {
		t.Errorf("AGENTS.md first: %v\n%s", err, sys)
	}
	big := strings.Repeat("x", theLibrarySpec().Instructions.MaxBytes+10)
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte(big), 0o644)
	if got := projectInstructions(root); !strings.Contains(got, "cut at") || len(got) > len(big)+200 {
		t.Errorf("not cut: %d bytes", len(got))
	}
	setTrust(root, false)
	if got := projectInstructions(root); got != "" {
		t.Errorf("an untrusted folder's instructions were used: %q", got[:40])
	}
}

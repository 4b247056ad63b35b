package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// toolResultOf is the content of the tool message answering callID in a
// model request.
func toolResultOf(r fakeRequest, callID string) string {
	for _, m := range r.messages() {
		if m["role"] == "tool" && m["tool_call_id"] == callID {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// requestsOf waits for n requests of method from the device, answering
// each with answer.
func cardsAnswer(l *instLink, method string, seen chan map[string]any, answer func(m map[string]any) any) {
	l.mu.Lock()
	l.answer = func(m map[string]any) any {
		if m["method"] == method {
			seen <- m
			return answer(m)
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	}
	l.mu.Unlock()
}

// TestLinkQuestion: ask_user in a link session is put to the web UI as
// _lembas/question — the first option recommended, a long label cut for the
// card — and the answer reaches the model with the whole label, as the
// REPL's answers do.
func TestLinkQuestion(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	long := strings.Repeat("x", 300)
	e.fi.model.push(callsReply(fakeCall{"ask_user", map[string]any{"questions": []any{
		map[string]any{"question": "Which database?", "options": []any{map[string]any{"label": "SQLite"}, map[string]any{"label": long}}},
		map[string]any{"question": "Why?"}}}}), textReply("SQLite it is."))
	e.startService()
	l := e.link()
	seen := make(chan map[string]any, 2)
	cardsAnswer(l, "_lembas/question", seen, func(m map[string]any) any {
		return map[string]any{"outcome": "answered", "answers": []any{
			map[string]any{"kind": "options", "labels": []any{strings.Repeat("x", 240)}},
			map[string]any{"kind": "custom", "text": "it is small"}}}
	})
	sid := e.newSession(l, e.proj, "edit")
	l.result("session/prompt", promptParams(sid, "pick a database", "q-1"))
	var q map[string]any
	select {
	case q = <-seen:
	default:
		t.Fatalf("ask_user was never put to the instance")
	}
	p := q["params"].(map[string]any)
	if p["sessionId"] != sid || p["toolCallId"] != "call_0_ask_user" {
		t.Errorf("question params %v", p)
	}
	opts := p["questions"].([]any)[0].(map[string]any)["options"].([]any)
	if opts[0].(map[string]any)["recommended"] != true || len(opts[1].(map[string]any)["label"].(string)) != 240 {
		t.Errorf("options on the card %v", opts)
	}
	got := e.fi.model.got()
	res := toolResultOf(got[len(got)-1], "call_0_ask_user")
	if !strings.Contains(res, "Which database? → "+long) || !strings.Contains(res, "(in their own words) it is small") {
		t.Errorf("the model was given %q", res)
	}
}

// TestLinkQuestionTimeoutAndPlain: a card nobody answers within
// remote.approval_timeout is dismissed and taken down with settled; a
// client that did not say _meta.lembas is never asked, and the model hears
// that nobody can be asked.
func TestLinkQuestionTimeoutAndPlain(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  approval_timeout: 1\n")
	ask := fakeCall{"ask_user", map[string]any{"questions": []any{map[string]any{"question": "Go on?"}}}}
	e.fi.model.push(callsReply(ask), textReply("ok"))
	e.startService()
	l := e.link()
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	seen := make(chan map[string]any, 2)
	cardsAnswer(l, "_lembas/question", seen, func(m map[string]any) any { <-never; return nil })
	sid := e.newSession(l, e.proj, "edit")
	l.result("session/prompt", promptParams(sid, "ask me", "q-1"))
	got := e.fi.model.got()
	if res := toolResultOf(got[len(got)-1], "call_0_ask_user"); !strings.Contains(res, "dismissed") {
		t.Errorf("an unanswered question gave the model %q", res)
	}
	st := l.waitNote("settled", func(m map[string]any) bool { return m["method"] == "_lembas/permission/settled" })
	if st["params"].(map[string]any)["toolCallId"] != "call_0_ask_user" {
		t.Errorf("settled %v", st)
	}
	// A plain ACP client: the same service, a new link that says no _meta.lembas.
	e.fi.kill()
	e.fi.restart()
	var pl *instLink
	select {
	case pl = <-e.fi.links:
	case <-time.After(guard):
		t.Fatalf("no relink; log:\n%s", e.logs.text())
	}
	pl.waitNote("hello", func(m map[string]any) bool { return m["method"] == "_lembas/hello" })
	pl.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	asked := make(chan map[string]any, 2)
	cardsAnswer(pl, "_lembas/question", asked, func(m map[string]any) any { return map[string]any{"outcome": "dismissed"} })
	e.fi.model.push(callsReply(ask), textReply("ok"))
	sid2 := e.newSession(pl, e.proj, "edit")
	pl.result("session/prompt", promptParams(sid2, "ask me", "q-2"))
	got = e.fi.model.got()
	if res := toolResultOf(got[len(got)-1], "call_0_ask_user"); !strings.Contains(res, "Nobody can be asked") {
		t.Errorf("a plain client's session gave the model %q", res)
	}
	if len(asked) != 0 || len(pl.notesOf("_lembas/event")) != 0 {
		t.Errorf("a plain client got %d questions and %d events", len(asked), len(pl.notesOf("_lembas/event")))
	}
}

// TestLinkPlan: plan_submit in plan mode goes to the web UI as
// _lembas/plan with the markdown and the structure; an approval in edit
// mode is lowered to max_mode (manual here) and the session goes on in it.
func TestLinkPlan(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: manual\n")
	e.fi.model.push(callsReply(fakeCall{"plan_write", map[string]any{"title": "Fix", "phases": []any{map[string]any{"title": "Look", "tasks": []any{map[string]any{"text": "read a"}}}}}}),
		callsReply(fakeCall{"plan_submit", map[string]any{}}), textReply("On it."))
	e.startService()
	l := e.link()
	seen := make(chan map[string]any, 2)
	cardsAnswer(l, "_lembas/plan", seen, func(m map[string]any) any { return map[string]any{"outcome": "approve", "mode": "edit"} })
	sid := e.newSession(l, e.proj, "plan")
	l.result("session/prompt", promptParams(sid, "plan the fix", "p-1"))
	var q map[string]any
	select {
	case q = <-seen:
	default:
		t.Fatalf("plan_submit was never put to the instance")
	}
	p := q["params"].(map[string]any)
	if !strings.Contains(p["text"].(string), "read a") || p["plan"].(map[string]any)["title"] != "Fix" || p["toolCallId"] != "call_0_plan_submit" {
		t.Errorf("plan params %v", p)
	}
	got := e.fi.model.got()
	if res := toolResultOf(got[len(got)-1], "call_0_plan_submit"); !strings.Contains(res, "now in manual mode") {
		t.Errorf("the model was given %q", res)
	}
}

// TestLinkProgressAndQueued: progress phases reach a lembas client as
// _lembas/event with since and their data, the capability is listed, and
// a prompt sent while another runs is told it is queued.
func TestLinkProgressAndQueued(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "expr 1 + 1"}}), textReply("done one"), textReply("done two"))
	e.startService()
	var l *instLink
	select {
	case l = <-e.fi.links:
	case <-time.After(guard):
		t.Fatal("no link")
	}
	l.waitNote("hello", func(m map[string]any) bool { return m["method"] == "_lembas/hello" })
	init := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	caps, _ := json.Marshal(init["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"])
	for _, c := range []string{"progress", "ask", "plan", "show", "jobs"} {
		if !strings.Contains(string(caps), `"`+c+`"`) {
			t.Errorf("capability %s not listed: %s", c, caps)
		}
	}
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	l.answer = func(m map[string]any) any {
		asked <- struct{}{}
		<-release
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	}
	sid := e.newSession(l, e.proj, "edit")
	first := l.start("session/prompt", promptParams(sid, "say hi", "r-1"))
	<-asked
	second := l.start("session/prompt", promptParams(sid, "again", "r-2"))
	qn := l.waitNote("queued", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		pr, _ := ev["progress"].(map[string]any)
		return ev["type"] == "progress" && pr["phase"] == "queued"
	})
	ev := qn["params"].(map[string]any)["event"].(map[string]any)
	if ev["turnId"] != "r-2" || ev["progress"].(map[string]any)["data"].(map[string]any)["ahead"] != float64(1) {
		t.Errorf("queued event %v", ev)
	}
	close(release)
	for _, ch := range []chan map[string]any{first, second} {
		select {
		case <-ch:
		case <-time.After(guard):
			t.Fatal("a prompt was never answered")
		}
	}
	tool := l.waitNote("running_tool", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		pr, _ := ev["progress"].(map[string]any)
		return ev["type"] == "progress" && pr["phase"] == "running_tool"
	})
	pr := tool["params"].(map[string]any)["event"].(map[string]any)["progress"].(map[string]any)
	if pr["data"].(map[string]any)["tool"] != "bash" || pr["text"] != "Running bash" {
		t.Errorf("running_tool %v", pr)
	}
	if since, _ := time.Parse(time.RFC3339Nano, pr["since"].(string)); since.IsZero() {
		t.Errorf("since %v", pr["since"])
	}
	l.waitNote("waiting_for_person", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		pr, _ := ev["progress"].(map[string]any)
		return ev["type"] == "progress" && pr["phase"] == "waiting_for_person" && ev["text"] == pr["text"]
	})
	// The same change as the harness README names it: the phase event,
	// flat, its data's fields beside phase, since and text.
	ph := l.waitNote("phase running_tool", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		return ev["type"] == "phase" && ev["phase"] == "running_tool"
	})["params"].(map[string]any)["event"].(map[string]any)
	if ph["tool"] != "bash" || ph["text"] != "Running bash" || ph["since"] == nil || ph["turnId"] == nil {
		t.Errorf("phase event %v", ph)
	}
	q := l.waitNote("phase queued", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		return ev["type"] == "phase" && ev["phase"] == "queued"
	})["params"].(map[string]any)["event"].(map[string]any)
	if q["ahead"] != float64(1) || q["turnId"] != "r-2" {
		t.Errorf("phase queued %v", q)
	}
}

// TestLinkShow: a link session is offered show, which sends the file to
// the web UI's viewer; the CLI's toolbox never offers it.
func TestLinkShow(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	os.WriteFile(filepath.Join(e.proj, "REPORT.md"), []byte("# Findings\n\nAll good.\n"), 0o644)
	e.fi.model.push(callsReply(fakeCall{"show", map[string]any{"path": "REPORT.md", "title": "Report"}}), textReply("Shown."))
	e.startService()
	l := e.link()
	seen := make(chan map[string]any, 2)
	cardsAnswer(l, "_lembas/show", seen, func(m map[string]any) any { return map[string]any{"shown": true} })
	sid := e.newSession(l, e.proj, "edit")
	l.result("session/prompt", promptParams(sid, "show me the report", "s-1"))
	got := e.fi.model.got()
	offered := false
	for _, d := range got[0].Body.Tools {
		offered = offered || strings.Contains(string(d), `"name":"show"`)
	}
	if !offered {
		t.Errorf("show was not offered in a link session")
	}
	var m map[string]any
	select {
	case m = <-seen:
	default:
		t.Fatalf("show never reached the instance; the model got %q", toolResultOf(got[len(got)-1], "call_0_show"))
	}
	p := m["params"].(map[string]any)
	if p["path"] != "REPORT.md" || p["kind"] != "markdown" || p["content"] != "# Findings\n\nAll good.\n" || p["truncated"] != false || p["title"] != "Report" {
		t.Errorf("show params %v", p)
	}
	if res := toolResultOf(got[len(got)-1], "call_0_show"); !strings.Contains(res, "open in the person's viewer") {
		t.Errorf("the model was given %q", res)
	}
	tb, err := newToolbox(e.proj, false)
	if err != nil {
		t.Fatal(err)
	}
	if tb.lookup("show") != nil || strings.Contains(string(tb.defs), `"name":"show"`) {
		t.Errorf("the CLI's toolbox offers show")
	}
}

// TestLinkJobWakes: a background command started in a link session ends
// while the session is idle; the job events reach the client, the end
// wakes the session with a turn of lembas's own (machine on its prompt
// event), and _lembas/jobs lists the job.
func TestLinkJobWakes(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\n")
	marker := filepath.Join(e.proj, "go.txt")
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "while [ ! -f go.txt ]; do sleep 0.05; done; echo built", "background": true}}),
		textReply("Started it."), textReply("The build finished."))
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	l.result("session/prompt", promptParams(sid, "build in the background", "j-1"))
	l.waitNote("job start", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		j, _ := ev["job"].(map[string]any)
		return ev["type"] == "job" && j["status"] == "running"
	})
	jobs := l.result("_lembas/jobs", map[string]any{"sessionId": sid})["jobs"].([]any)
	if len(jobs) != 1 {
		t.Fatalf("_lembas/jobs %v", jobs)
	}
	id := jobs[0].(map[string]any)["id"].(string)
	os.WriteFile(marker, nil, 0o644) // the job may end now: the turn is over
	pe := l.waitNote("machine prompt", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		return ev["type"] == "prompt" && ev["machine"] == true
	})
	tid := pe["params"].(map[string]any)["event"].(map[string]any)["turnId"]
	l.waitNote("machine turn end", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		return ev["type"] == "task" && ev["state"] == "end" && ev["turnId"] == tid
	})
	if n := len(e.fi.model.got()); n != 3 {
		t.Errorf("model requests %d, want 3 (the machine's turn the third)", n)
	}
	out := l.result("_lembas/job/output", map[string]any{"sessionId": sid, "jobId": id})
	if !strings.Contains(out["output"].(string), "built") {
		t.Errorf("job output %v", out)
	}
	if e := l.rpcErr("_lembas/job/stop", map[string]any{"sessionId": sid, "jobId": "nope"}); !strings.Contains(e["message"].(string), "has no job nope") {
		t.Errorf("unknown job %v", e)
	}
	for _, m := range []string{"_lembas/job/send", "_lembas/job/transcript"} {
		if e := l.rpcErr(m, map[string]any{"sessionId": sid, "jobId": id, "text": "hi"}); !strings.Contains(e["message"].(string), "is a command, not a subagent") {
			t.Errorf("%s to a command's job: %v", m, e)
		}
	}
}

// TestLinkJobSendTranscript: a subagent's approval names its job; the
// client reads the subagent's transcript, sends it a message (it starts
// again with its context, and its end wakes the session), and is told
// plainly when the job is no subagent or the message is empty.
func TestLinkJobSendTranscript(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	e.fi.model.push(callsReply(fakeCall{"task", map[string]any{"description": "check", "prompt": "Run the check.", "agent": "general"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "echo sub > sub.txt"}}),
		textReply("checked"),
		textReply("All checked."))
	e.startService()
	l := e.link()
	metas := make(chan map[string]any, 4)
	l.answer = func(m map[string]any) any {
		metas <- m["params"].(map[string]any)["_meta"].(map[string]any)["lembas"].(map[string]any)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	}
	sid := e.newSession(l, e.proj, "edit")
	if r := l.result("session/prompt", promptParams(sid, "check it with a subagent", "s-1")); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt %v", r)
	}
	select {
	case m := <-metas:
		if m["job"] != "j1" || !strings.HasPrefix(fmt.Sprint(m["subagent"]), "j1 ") {
			t.Errorf("the subagent's approval does not name its job: %v", m)
		}
	default:
		t.Fatal("the subagent's bash call was never put to the client")
	}
	tr := l.result("_lembas/job/transcript", map[string]any{"sessionId": sid, "jobId": "j1"})
	turns, _ := tr["turns"].([]any)
	if tr["jobId"] != "j1" || len(turns) < 2 || !strings.Contains(fmt.Sprint(turns[0]), "Run the check.") || !strings.Contains(fmt.Sprint(turns), "checked") {
		t.Fatalf("transcript %v", tr)
	}
	e.fi.model.push(textReply("checked again"), textReply("Noted."))
	s := l.result("_lembas/job/send", map[string]any{"sessionId": sid, "jobId": "j1", "text": "Check once more."})
	if s["restarted"] != true {
		t.Fatalf("send to a finished subagent %v", s)
	}
	l.waitNote("the machine's turn after the subagent's second run", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		return ev["type"] == "prompt" && ev["machine"] == true
	})
	got := e.fi.model.got()
	var sawSend bool
	for _, r := range got {
		for _, u := range userTexts(r) {
			sawSend = sawSend || strings.Contains(u, "Check once more.")
		}
	}
	if !sawSend {
		t.Errorf("the message never reached the subagent")
	}
	if er := l.rpcErr("_lembas/job/send", map[string]any{"sessionId": sid, "jobId": "j1", "text": "  "}); !strings.Contains(fmt.Sprint(er["message"]), "is empty") {
		t.Errorf("an empty message %v", er)
	}
	if er := l.rpcErr("_lembas/job/transcript", map[string]any{"sessionId": sid, "jobId": "j9"}); !strings.Contains(fmt.Sprint(er["message"]), "has no job j9") {
		t.Errorf("an unknown job %v", er)
	}
}

// TestLinkJobNote: a job that ends while the turn still runs is a mark
// given to the model at its next step, and the client hears it as a
// job_note with the mark's text and no job body (capability jobs).
func TestLinkJobNote(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\n")
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "true", "background": true}}),
		callsReply(fakeCall{"job_output", map[string]any{"id": "j1", "wait": 30}}),
		textReply("Done."))
	e.startService()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	l.result("session/prompt", promptParams(sid, "run it", "n-1"))
	note := l.waitNote("job_note", func(m map[string]any) bool {
		ev, _ := m["params"].(map[string]any)["event"].(map[string]any)
		return ev["type"] == "job_note"
	})["params"].(map[string]any)["event"].(map[string]any)
	if txt, _ := note["text"].(string); !strings.Contains(txt, "j1") || note["job"] != nil {
		t.Errorf("job_note %v, want the mark naming j1", note)
	}
}

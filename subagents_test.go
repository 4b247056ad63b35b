package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// toolNames lists the tools a request offered.
func toolNames(r fakeRequest) []string {
	var out []string
	for _, raw := range r.Body.Tools {
		var d struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		json.Unmarshal(raw, &d)
		out = append(out, d.Function.Name)
	}
	return out
}

// systemOf is a request's system prompt.
func subSystemOf(r fakeRequest) string {
	for _, m := range r.messages() {
		if m["role"] == "system" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// TestSubagentReadOnlyTask: an explore subagent reads a file in a fresh
// conversation and its answer comes back as the call's result, with its
// id; its usage is the parent's, and its transcript is a child session.
func TestSubagentReadOnlyTask(t *testing.T) {
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"task", map[string]any{"description": "find the greeting", "prompt": "What does a.txt say?", "agent": "explore"}}),
		callsReply(fakeCall{"read", map[string]any{"path": "a.txt"}}),
		textReply("a.txt says hello"),
		textReply("It says hello."))
	e, evs := newTestEngine(t, f, "manual", map[string]string{"a.txt": "hello\n"})
	out := e.runTurn(context.Background(), "what is in a.txt? ask a subagent")
	var up []string
	for _, ev := range *evs {
		if ev.Agent == "j1" && (ev.Type == evToolEnd || ev.Type == evDone) {
			up = append(up, ev.Type+":"+ev.Session)
		}
	}
	if out.Err != nil || out.Answer != "It says hello." {
		t.Fatalf("outcome %+v", out)
	}
	reqs := f.got()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	child := reqs[1]
	if sys := subSystemOf(child); !strings.Contains(sys, "You are a subagent of lembas") || !strings.Contains(sys, "Agent: explore.") {
		t.Errorf("subagent system prompt %q", sys)
	}
	if u := userTexts(child); len(u) != 1 || !strings.Contains(u[0], "What does a.txt say?") || strings.Contains(u[0], "ask a subagent") {
		t.Errorf("the subagent saw %q; want only its task", u)
	}
	names := strings.Join(toolNames(child), ",")
	for _, no := range []string{"bash", "write", "edit", "task", "ask_user"} {
		if strings.Contains(","+names+",", ","+no+",") {
			t.Errorf("an explore subagent was offered %s: %s", no, names)
		}
	}
	if !strings.Contains(names, "report") || !strings.Contains(names, "read") {
		t.Errorf("explore tools %s, want read and report", names)
	}
	if strings.Contains(strings.Join(toolNames(reqs[0]), ","), "report") {
		t.Error("the main agent was offered report")
	}
	res := toolResults(reqs[3])
	if !strings.Contains(res[0], "[subagent j1 · explore · done · 2 steps") || !strings.Contains(res[0], "a.txt says hello") {
		t.Errorf("task result %q", res[0])
	}
	// Parent: 2 requests (200+20, 100+10); subagent: the same two.
	if out.Usage.Input != 600 || out.Usage.Output != 60 {
		t.Errorf("turn usage %+v, want the subagent's added (600 in, 60 out)", out.Usage)
	}
	j := e.jobs().get("j1")
	kid, err := e.st.read(j.sub.e.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if kid.Parent != e.sess.ID || kid.Agent != "j1 explore" || len(kid.Turns) != 1 || kid.Turns[0].Answer != "a.txt says hello" {
		t.Errorf("child session parent %q agent %q turns %+v", kid.Parent, kid.Agent, kid.Turns)
	}
	if want := "tool_end:" + kid.ID + " done:" + kid.ID; strings.Join(up, " ") != want {
		t.Errorf("the subagent's events that came up %q, want %q (marked with its job id and its own session)", up, want)
	}
	if latest, err := e.st.latest(e.tb.root); err != nil || latest.ID != e.sess.ID {
		t.Errorf("latest is %v (%v), want the parent, never a subagent's transcript", latest, err)
	}
	var b strings.Builder
	if err := showSubagents(&b, e.st, e.sess.ID); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "=== subagent j1 explore · session "+kid.ID) || !strings.Contains(b.String(), "a.txt says hello") {
		t.Errorf("sessions show does not name the subagent's transcript:\n%s", b.String())
	}
}

// recordingApprover answers every card with choice and keeps the requests.
type recordingApprover struct {
	mu     sync.Mutex
	choice string
	reqs   []approvalRequest
}

func (a *recordingApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	return approvalAnswer{Choice: a.choice}
}

// TestSubagentWriteAsksThePerson: in manual mode a subagent's write goes to
// the parent's front end, with the subagent named on the card; with -p
// nobody can answer and it is refused with the headless text.
func TestSubagentWriteAsksThePerson(t *testing.T) {
	for _, headless := range []bool{false, true} {
		f := newFakeModel(t)
		f.push(callsReply(fakeCall{"task", map[string]any{"description": "write it", "prompt": "Write b.txt with hi."}}),
			callsReply(fakeCall{"write", map[string]any{"path": "b.txt", "content": "hi\n"}}),
			textReply("wrote it"), textReply("done"))
		e, _ := newTestEngine(t, f, "manual", nil)
		ap := &recordingApprover{choice: "once"}
		if headless {
			e.ask = headlessApprover{}
		} else {
			e.ask = ap
			e.perm.headless = false
		}
		e.runTurn(context.Background(), "make b.txt")
		childRes := toolResults(f.got()[2])
		_, err := os.Stat(filepath.Join(e.tb.root, "b.txt"))
		if headless {
			want := loopText(theSpec().Loop.Permission, "headless_ask", "tool", "write", "mode", "manual", "wider", "edit")
			if !strings.Contains(childRes[0], want) || err == nil {
				t.Errorf("-p: the subagent's write gave %q (file there: %v), want %q", childRes[0], err == nil, want)
			}
			continue
		}
		if len(ap.reqs) != 1 || ap.reqs[0].Agent != "j1 general" || ap.reqs[0].Tool != "write" {
			t.Fatalf("approvals %+v, want one for write naming j1 general", ap.reqs)
		}
		if err != nil {
			t.Errorf("the approved write did not happen: %v (%q)", err, childRes)
		}
	}
}

// TestSubagentRefusals: a wider mode, the model the person did not name,
// and the capacity rules, each refused with its text from harness/.
func TestSubagentRefusals(t *testing.T) {
	rf := map[string]string{}
	for k, v := range theSpec().Loop.Subagents.Refusals {
		rf[k] = v
	}
	for k, v := range theSpec().Models.Capacity.Texts { // the capacity refusals (models/schema.json)
		rf[k] = v
	}
	cases := []struct {
		name  string
		args  map[string]any
		setup func(e *engine)
		want  string
	}{
		{"wider mode", map[string]any{"description": "d", "prompt": "p", "mode": "auto"}, nil,
			fillPairs(rf["wider_mode"], "mode", "manual", "asked", "auto")},
		{"model not named", map[string]any{"description": "d", "prompt": "p", "model": "big-coder"}, nil, rf["model_not_named"]},
		{"one at a time", map[string]any{"description": "d", "prompt": "p"}, func(e *engine) { e.ref.Meta.Parallel = 1 }, rf["one_at_a_time"]},
		{"same one-model server", map[string]any{"description": "d", "prompt": "p", "model": "big-coder"},
			func(e *engine) {
				e.ref.Conn.Name = "llamacpp"
				e.sess.Turns = append(e.sess.Turns, turn{Prompt: "use big-coder for helpers"})
			},
			rf["same_server"]},
	}
	for _, c := range cases {
		f := newFakeModel(t)
		f.push(callsReply(fakeCall{"task", c.args}), textReply("ok"))
		e, _ := newTestEngine(t, f, "manual", nil)
		if c.setup != nil {
			c.setup(e)
		}
		e.runTurn(context.Background(), "go")
		res := toolResults(f.got()[1])
		if len(res) != 1 || !strings.HasSuffix(res[0], c.want) {
			t.Errorf("%s: %q, want %q", c.name, res, c.want)
		}
		if len(f.got()) != 2 {
			t.Errorf("%s: a refused task made a request", c.name)
		}
	}
}

// TestSubagentCancelCascades: cancelling the parent's turn cancels the
// subagent and kills its command.
func TestSubagentCancelCascades(t *testing.T) {
	skipNoUnix(t)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"task", map[string]any{"description": "wait", "prompt": "run the long thing"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "sleep 300 & echo $! > pid; wait"}}))
	e, _ := newTestEngine(t, f, "auto", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan outcome, 1)
	go func() { done <- e.runTurn(ctx, "go") }()
	pidFile := filepath.Join(e.tb.root, "pid")
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the subagent's command never started")
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	cancel()
	out := <-done
	if out.StopReason != "cancelled" {
		t.Errorf("parent stop reason %q, want cancelled", out.StopReason)
	}
	if left := waitGone([]int{pid}); len(left) > 0 {
		t.Errorf("the subagent's command %v outlived the cancel", left)
	}
	if st, _, _ := e.jobs().get("j1").status(); st != "stopped" {
		t.Errorf("subagent status %q, want stopped", st)
	}
}

// TestBackgroundSubagentJobSend: a background subagent ends and wakes its
// parent with its answer; job_send starts it again with its context. It
// runs on a second model the person named, so each server's queue is its
// own.
func TestBackgroundSubagentJobSend(t *testing.T) {
	f := newFakeModel(t)
	f2 := newFakeModel(t, "helper")
	e, _ := newTestEngine(t, f, "auto", nil)
	t.Cleanup(func() { e.stopJobs() })
	e.jx.models = func(ctx context.Context, name string) (*modelRef, error) {
		c := &connection{Name: "two", BaseURL: f2.url(), http: newHTTPClient()}
		return newModelRef(c, strings.TrimPrefix(name, "two/")), nil
	}
	woke := make(chan struct{}, 8)
	e.jx.wake = func() { woke <- struct{}{} }
	f.push(callsReply(fakeCall{"task", map[string]any{"description": "count", "prompt": "Count the files.", "model": "helper", "background": true}}),
		textReply("started"))
	f2.push(textReply("there are none"))
	if out := e.runTurn(context.Background(), "use helper for a subagent that counts files"); out.Err != nil {
		t.Fatal(out.Err)
	}
	if res := toolResults(f.got()[1]); !strings.Contains(res[0], "Started subagent j1 (general) in the background") {
		t.Fatalf("task result %q", res)
	}
	j := e.jobs().get("j1")
	<-j.doneCh()
	select {
	case <-woke:
	case <-time.After(30 * time.Second):
		t.Fatal("the subagent's end did not wake its parent")
	}
	f.push(callsReply(fakeCall{"job_send", map[string]any{"id": "j1", "message": "Count again, with hidden files."}}), textReply("asked"))
	f2.push(textReply("still none"))
	out, ran := e.runMachineTurn(context.Background())
	if !ran || out.Err != nil {
		t.Fatalf("machine turn %v %+v", ran, out)
	}
	reqs := f.got()
	mt := userTexts(reqs[2])
	if last := mt[len(mt)-1]; !strings.Contains(last, `<job-ended id="j1" kind="subagent" status="done">count.`) || !strings.Contains(last, "there are none") {
		t.Errorf("machine prompt %q", last)
	}
	if res := toolResults(reqs[3]); !strings.Contains(res[len(res)-1], "j1 had finished; it starts again") {
		t.Errorf("job_send result %q", res)
	}
	<-j.doneCh()
	second := f2.got()[1]
	u := userTexts(second)
	if len(u) != 2 || !strings.Contains(u[0], "Count the files.") || !strings.Contains(u[1], "Count again, with hidden files.") {
		t.Errorf("the restarted subagent saw %q; want its first task and the message", u)
	}
	if second.Body.Model != "helper" {
		t.Errorf("subagent model %q, want helper", second.Body.Model)
	}
	// The second end is marked: taken by the machine turn's last step if
	// it ended by then, else waiting for the next turn.
	p, _ := e.takeMachinePrompt()
	last := userTexts(f.got()[3])
	if !strings.Contains(p, "still none") && countContaining(last, "still none") != 1 {
		t.Errorf("the second end left no mark: waiting %q, last request %q", p, last)
	}
}

// TestSubagentReport: report reaches the parent as a mark before the
// subagent's answer.
func TestSubagentReport(t *testing.T) {
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"task", map[string]any{"description": "look", "prompt": "Look around."}}),
		callsReply(fakeCall{"report", map[string]any{"message": "found a TODO in main.go"}}),
		textReply("all done"), textReply("thanks"))
	e, _ := newTestEngine(t, f, "auto", nil)
	e.runTurn(context.Background(), "look")
	users := userTexts(f.got()[3])
	want := fillPairs(theSpec().Loop.Jobs.Marks["report"], "id", "j1", "name", "general", "message", "found a TODO in main.go")
	if countContaining(users, want) != 1 {
		t.Errorf("parent's messages %q, want the report %q", users, want)
	}
}

// FuzzPersonNamed: the person's text and a model's name are outside input;
// any of them answers without a panic, and a name alone is always named.
func FuzzPersonNamed(f *testing.F) {
	f.Add("use qwen3.", "qwen3")
	f.Add("ünïcode qwen3-coder", "qwen3")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, said, name string) {
		personNamed([]string{said}, name)
		if n := strings.TrimSpace(name); n != "" && strings.ToLower(n) == n && !strings.ContainsAny(n, ".:/") && !personNamed([]string{n}, n) {
			t.Fatalf("%q alone does not name itself", n)
		}
	})
}

// TestSubagentLimits: a fifth subagent while four run is refused with its
// text; a subagent past its token budget is stopped and says so.
func TestSubagentLimits(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	arrived := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, textReply("done").body)
	}))
	t.Cleanup(srv.Close)
	f := newFakeModel(t)
	e, _ := newTestEngine(t, f, "auto", nil)
	t.Cleanup(func() { e.stopJobs() })
	e.jx.models = func(ctx context.Context, name string) (*modelRef, error) {
		return newModelRef(&connection{Name: "two", BaseURL: srv.URL + "/v1", http: newHTTPClient()}, "helper"), nil
	}
	e.sess.Turns = append(e.sess.Turns, turn{Prompt: "use helper"})
	sp := theSpec().Loop.Subagents
	args := json.RawMessage(`{"description":"d","prompt":"wait","model":"helper","background":true}`)
	for i := 0; i < sp.MaxRunning; i++ {
		if res := toolTask(e, context.Background(), theSpec().Tools["task"], args); res.IsError {
			t.Fatal(res.Text)
		}
	}
	for i := 0; i < sp.MaxRunning; i++ {
		<-arrived
	}
	res := toolTask(e, context.Background(), theSpec().Tools["task"], args)
	if want := fillPairs(sp.Refusals["too_many"], "max", sp.MaxRunning); res.Text != want {
		t.Errorf("fifth subagent: %q, want %q", res.Text, want)
	}
	once.Do(func() { close(release) })
	for _, j := range e.jobs().list() {
		<-j.doneCh()
	}

	// The budget: the subagent's first request spends more than it has.
	f.push(callsReply(fakeCall{"task", map[string]any{"description": "big", "prompt": "Read everything."}}),
		callsReply(fakeCall{"list", map[string]any{}}), textReply("stopped it"))
	old := theSpec().Loop.Subagents.MaxTokens
	theSpec().Loop.Subagents.MaxTokens = 100
	defer func() { theSpec().Loop.Subagents.MaxTokens = old }()
	e.runTurn(context.Background(), "read it all")
	got := toolResults(f.got()[2])
	want := fillPairs(sp.Texts["budget"], "max", 100)
	if r := got[len(got)-1]; !strings.Contains(r, "· stopped ·") || !strings.Contains(r, want) {
		t.Errorf("over budget: %q, want stopped and %q", r, want)
	}
}

// TestJobSendToRunningSubagent: a message sent to a running subagent is
// read at its next step.
func TestJobSendToRunningSubagent(t *testing.T) {
	f := newFakeModel(t)
	f2 := newFakeModel(t, "helper")
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		f2.serve(w, r)
	}))
	t.Cleanup(gate.Close)
	e, _ := newTestEngine(t, f, "auto", nil)
	t.Cleanup(func() { e.stopJobs() })
	e.jx.models = func(ctx context.Context, name string) (*modelRef, error) {
		return newModelRef(&connection{Name: "two", BaseURL: gate.URL + "/v1", http: newHTTPClient()}, "helper"), nil
	}
	f.push(callsReply(fakeCall{"task", map[string]any{"description": "count", "prompt": "Count files.", "model": "helper", "background": true}}),
		callsReply(fakeCall{"job_send", map[string]any{"id": "j1", "message": "Count folders too."}}),
		textReply("asked"))
	f2.push(callsReply(fakeCall{"list", map[string]any{}}), textReply("0 files, 0 folders"))
	e.runTurn(context.Background(), "have helper count files")
	if res := toolResults(f.got()[2]); !strings.Contains(res[len(res)-1], "Sent to j1; it reads the message at its next step.") {
		t.Errorf("job_send result %q", res)
	}
	once.Do(func() { close(release) })
	<-e.jobs().get("j1").doneCh()
	u := userTexts(f2.got()[1])
	if len(u) != 2 || !strings.Contains(u[1], "Count folders too.") {
		t.Errorf("the subagent's second request had %q; want the message", u)
	}
}

// TestSubagentOfferRules: a subagent is offered no tool its session's offer
// rules leave out (offered_if: notes, skills, knowledge, an earlier
// session), though it can still call one by name, as the session can.
func TestSubagentOfferRules(t *testing.T) {
	root := t.TempDir()
	tb, err := newToolboxFor(root, false, map[string]bool{}) // no condition holds
	if err != nil {
		t.Fatal(err)
	}
	gated := 0
	for _, readOnly := range []bool{true, false} {
		sub, err := tb.forSubagent(readOnly, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sub.tools {
			if len(st.OfferedIf) > 0 {
				t.Errorf("readOnly=%v: the subagent was offered %s (offered_if %v), which its session was not", readOnly, st.Name, st.OfferedIf)
			}
		}
		for _, name := range theSpec().ToolNames {
			if ts := theSpec().Tools[name]; len(ts.OfferedIf) > 0 && tb.lookup(name) != nil && ts.Risk == "read" {
				gated++
				if sub.lookup(name) == nil {
					t.Errorf("readOnly=%v: %s is not even callable by name in the subagent", readOnly, name)
				}
			}
		}
	}
	if gated == 0 {
		t.Fatal("no read tool with offered_if in the harness: the test checks nothing")
	}
}

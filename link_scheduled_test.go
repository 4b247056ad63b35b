package main

// Scheduled work on the link (link_scheduled.go, link_monitor.go): the
// consent judged at every request, the mode, the wait, the run's report,
// the approvals across a link drop, and the monitor's hash — the service in
// this process, linked to the fake instance over a real WebSocket.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func schedNew(l *instLink, cwd string, sched map[string]any) map[string]any {
	return l.call("session/new", map[string]any{"cwd": cwd, "_meta": map[string]any{"lembas_model": "acme/chat-1",
		"lembas": map[string]any{"scheduled": sched}}})
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func TestScheduledSpec(t *testing.T) {
	sp := theSchedSpec()
	if sp.Setting.Default || sp.Setting.Label != "Accept scheduled work" || sp.Sentinel != "[SILENT]" || sp.ApprovalWait.DefaultS != 1800 {
		t.Errorf("loop.json scheduled: %+v", sp.Setting)
	}
	if theLinkSpec().RemoteDefaults.Scheduled {
		t.Errorf("remote.scheduled must be off by default")
	}
	if !inList(theLinkSpec().Capabilities, "scheduled") {
		t.Errorf("capability scheduled is not listed")
	}
}

// TestScheduledOff: with remote.scheduled off (the default) a scheduled
// session/new, a monitor, and a prompt to a scheduled session opened while
// it was on are each refused with the one fixed text; the hello says
// scheduled: false.
func TestScheduledOff(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	e.startService()
	l := e.link()
	hello := l.waitNote("hello", func(m map[string]any) bool { return m["method"] == "_lembas/hello" })
	if lim := hello["params"].(map[string]any)["limits"].(map[string]any); lim["scheduled"] != false {
		t.Errorf("hello limits %v", lim)
	}
	off := loopText(theSchedSpec().Refusals, "off")
	if got := errMessage(schedNew(l, e.proj, map[string]any{"schedule": "s1", "run": "r1"})); got != off {
		t.Errorf("session/new while off: %q", got)
	}
	if got := errMessage(l.call("_lembas/monitor", map[string]any{"cwd": e.proj, "command": "ls"})); got != off {
		t.Errorf("monitor while off: %q", got)
	}
	// A plain session is not scheduled work: it opens.
	e.newSession(l, e.proj, "edit")
}

// TestScheduledRun: Auto under max_mode edit is lowered to edit; show is
// not offered; ask_user answers that nobody is there; a command the mode
// asks about waits the schedule's wait (not remote.approval_timeout), is
// denied, and the turn goes on to a silent end; the report is in the
// answer and in the answer kept for the turn id.
func TestScheduledRun(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: edit\n  scheduled: true\n  approval_timeout: 3600\n")
	e.fi.model.push(
		callsReply(fakeCall{"ask_user", map[string]any{"questions": []any{map[string]any{"question": "Which branch?", "options": []any{map[string]any{"label": "main"}, map[string]any{"label": "dev"}}}}}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "touch made.txt"}}),
		textReply("[SILENT]\nNothing new tonight."))
	e.startService()
	l := e.link()
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	var asked []map[string]any
	l.answer = func(m map[string]any) any {
		l.mu.Lock()
		asked = append(asked, m)
		l.mu.Unlock()
		<-never
		return nil
	}
	for _, bad := range []map[string]any{{"schedule": "s1", "run": "r1", "mode": "plan"}, {"schedule": "s1"},
		{"schedule": "s1", "run": "r1", "approval_wait": 0}, {"schedule": "s1", "run": "r1", "mode": "wild"}} {
		if m := schedNew(l, e.proj, bad); m["error"] == nil {
			t.Errorf("session/new %v: want a refusal, got %v", bad, m)
		}
	}
	if got := errMessage(schedNew(l, e.proj, map[string]any{"schedule": "s1", "run": "r1", "mode": "plan"})); got != loopText(theSchedSpec().Refusals, "plan") {
		t.Errorf("plan refusal %q", got)
	}
	r := schedNew(l, e.proj, map[string]any{"schedule": "sch_1", "run": "run_1", "mode": "auto", "approval_wait": 1, "agents": map[string]any{"min": 1, "max": 2}})
	res, _ := r["result"].(map[string]any)
	if res == nil {
		t.Fatalf("session/new %v", r)
	}
	sid := res["sessionId"].(string)
	// The schedule's Min/Max are the session's Subagents setting, as an
	// agent chat's are.
	if tr := obj(l.result("_lembas/team", map[string]any{"sessionId": sid})["team"]); tr["max"] != float64(2) {
		t.Errorf("the schedule's agents did not reach the tree: %v", tr)
	}
	lm := res["_meta"].(map[string]any)["lembas"].(map[string]any)
	if lm["mode"] != "edit" || obj(lm["scheduled"])["mode"] != "edit" || obj(lm["scheduled"])["asked"] != "auto" {
		t.Errorf("Auto under max_mode edit: %v", lm)
	}
	if got := errMessage(l.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "plan"})); got == "" {
		t.Errorf("set_mode plan on a scheduled session was not refused")
	}
	ans := l.result("session/prompt", promptParams(sid, "check the build", "turn-s1"))
	rep := obj(obj(obj(ans["_meta"])["lembas"])["scheduled"])
	if rep["status"] != "silent" || rep["text"] != "Nothing new tonight." || rep["run"] != "run_1" {
		t.Errorf("report %v", ans)
	}
	if _, err := os.Stat(filepath.Join(e.proj, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("the command ran without an approval")
	}
	l.mu.Lock()
	n := len(asked)
	var meta map[string]any
	if n > 0 {
		meta = obj(obj(obj(asked[0]["params"])["_meta"])["lembas"])
	}
	l.mu.Unlock()
	if n != 1 || obj(meta["scheduled"])["schedule"] != "sch_1" || obj(meta["scheduled"])["wait"] != float64(1) {
		t.Errorf("approvals asked %d, meta %v", n, meta)
	}
	l.waitNote("settled", func(m map[string]any) bool { return m["method"] == "_lembas/permission/settled" })
	reqs := e.fi.model.got()
	for _, q := range reqs {
		for _, tool := range q.Body.Tools {
			if strings.Contains(string(tool), `"name":"show"`) {
				t.Errorf("show was offered to a scheduled run")
			}
		}
	}
	if res := toolResults(reqs[1]); len(res) == 0 || !strings.Contains(res[0], "scheduled run: nobody is there") {
		t.Errorf("ask_user's result %q", res)
	}
	if res := toolResults(reqs[2]); len(res) < 2 || !strings.Contains(strings.ToLower(res[1]), "denied") && !strings.Contains(strings.ToLower(res[1]), "time") {
		t.Logf("the denial as the model read it: %q", res)
	}
	// The same turn id again: the kept answer, with its report, no new run.
	again := l.result("session/prompt", promptParams(sid, "check the build", "turn-s1"))
	if obj(obj(obj(again["_meta"])["lembas"])["scheduled"])["status"] != "silent" {
		t.Errorf("the answer kept for the turn %v", again)
	}
	// Turned off meanwhile: the next prompt to the scheduled session is refused.
	os.WriteFile(configPath(), []byte("remote:\n  roots: [~/work]\n  max_mode: edit\n  scheduled: false\n"), 0o600)
	if got := errMessage(l.call("session/prompt", promptParams(sid, "again", "turn-s2"))); got != loopText(theSchedSpec().Refusals, "off") {
		t.Errorf("prompt after off: %q", got)
	}
	if got := errMessage(l.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "manual"})); got != loopText(theSchedSpec().Refusals, "off") {
		t.Errorf("set_mode after off: %q", got)
	}
	if st := l.result("_lembas/session/status", map[string]any{"sessionId": sid}); st["exists"] != true {
		t.Errorf("status after off: %v", st)
	}
}

// TestScheduledApprovalAcrossDrop: an approval waiting in a scheduled turn
// outlives a dropped link: the turn keeps running and the request is sent
// again on the next link, where its answer is taken.
func TestScheduledApprovalAcrossDrop(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\n  scheduled: true\n")
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "touch made.txt"}}), textReply("Made it."))
	e.startService()
	l := e.link()
	first := make(chan struct{}, 1)
	l.answer = func(m map[string]any) any {
		first <- struct{}{}
		select {} // never answered on this link
	}
	r := schedNew(l, e.proj, map[string]any{"schedule": "s1", "run": "r1", "mode": "manual", "approval_wait": 3600})
	sid := obj(r["result"])["sessionId"].(string)
	l.start("session/prompt", promptParams(sid, "make the file", "turn-d1"))
	<-first
	e.fi.kill()
	e.fi.restart()
	l2 := e.link()
	l2.answer = func(m map[string]any) any {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	}
	// The device asks again on l2; the turn ends; its answer is kept and
	// given to the prompt sent again.
	ans := l2.result("session/prompt", promptParams(sid, "make the file", "turn-d1"))
	if obj(obj(obj(ans["_meta"])["lembas"])["scheduled"])["status"] != "ok" {
		t.Errorf("answer after the drop %v", ans)
	}
	if _, err := os.Stat(filepath.Join(e.proj, "made.txt")); err != nil {
		t.Errorf("the approval given on the second link did not run the command: %v", err)
	}
}

// TestMonitor: the hash is sha256 over the output and then the exit
// status, computed here independently; unchanged output gives the same
// hash, changed output another; what the mode would ask about is refused,
// as is what the floor refuses; the folder rules are the link's.
func TestMonitor(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\n  scheduled: true\n")
	e.startService()
	l := e.link()
	page := filepath.Join(e.proj, "page.txt")
	os.WriteFile(page, []byte("price: 10\n"), 0o644)
	mon := func(cmd, mode string) map[string]any {
		return l.call("_lembas/monitor", map[string]any{"cwd": e.proj, "command": cmd, "mode": mode, "timeout": 30})
	}
	r1 := obj(mon("cat page.txt", "edit")["result"])
	if r1["hash"] != watchHash([]byte("price: 10\n"), 0) || r1["excerpt"] != "price: 10\n" || r1["exit"] != float64(0) {
		t.Fatalf("monitor %v", r1)
	}
	if r2 := obj(mon("cat page.txt", "edit")["result"]); r2["hash"] != r1["hash"] {
		t.Errorf("unchanged output, another hash: %v", r2)
	}
	os.WriteFile(page, []byte("price: 12\n"), 0o644)
	if r3 := obj(mon("cat page.txt", "edit")["result"]); r3["hash"] == r1["hash"] || r3["hash"] != watchHash([]byte("price: 12\n"), 0) {
		t.Errorf("changed output: %v", r3)
	}
	if r4 := obj(mon("cat missing.txt", "edit")["result"]); r4["exit"] == float64(0) || !strings.HasPrefix(r4["hash"].(string), "sha256:") {
		t.Errorf("a failing command: %v", r4)
	}
	if got := errMessage(mon("touch x.txt", "edit")); !strings.Contains(got, "would be asked about in edit mode") {
		t.Errorf("an asked command: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.proj, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("the refused command ran")
	}
	if got := errMessage(mon("rm -rf /", "auto")); got == "" {
		t.Errorf("the floor did not hold")
	}
	if got := errMessage(mon("cat page.txt", "plan")); got != loopText(theSchedSpec().Refusals, "plan") {
		t.Errorf("plan mode: %q", got)
	}
	if m := l.call("_lembas/monitor", map[string]any{"cwd": "/", "command": "ls"}); m["error"] == nil {
		t.Errorf("outside the roots: %v", m)
	}
	if m := l.call("_lembas/monitor", map[string]any{"cwd": e.proj, "command": "sleep 5", "mode": "auto", "timeout": 1}); !strings.Contains(errMessage(m), "did not end within 1 s") {
		t.Errorf("timeout: %v", m)
	}
}

// TestServiceScheduledCommand: on and off write remote.scheduled in place,
// the comments kept, and status says it.
func TestServiceScheduledCommand(t *testing.T) {
	newLinkEnv(t, "# my device\nremote:\n  # where the web may work\n  roots: [~/work]\n")
	var out, errb strings.Builder
	if code := run([]string{"service", "scheduled", "on"}, nil, &out, &errb); code != 0 {
		t.Fatalf("on: %s", errb.String())
	}
	data, _ := os.ReadFile(configPath())
	if !strings.Contains(string(data), "# my device") || !strings.Contains(string(data), "# where the web may work") || !strings.Contains(string(data), "scheduled: true") {
		t.Errorf("config after on:\n%s", data)
	}
	if lim, _ := readRemoteLimits(); !lim.Scheduled {
		t.Errorf("not on after on")
	}
	out.Reset()
	run([]string{"service", "status"}, nil, &out, &errb)
	if !strings.Contains(out.String(), "scheduled work: accepted") {
		t.Errorf("status %q", out.String())
	}
	run([]string{"service", "scheduled", "off"}, nil, &out, &errb)
	if lim, _ := readRemoteLimits(); lim.Scheduled {
		t.Errorf("still on after off")
	}
	if code := run([]string{"service", "scheduled", "maybe"}, nil, &out, &errb); code == 0 {
		t.Errorf("maybe was taken")
	}
}

func TestScheduledJudge(t *testing.T) {
	lim := remoteLimits{Scheduled: true, MaxMode: "edit"}
	r, err := judgeScheduled(lim, schedParams{Schedule: "a", Run: "b"})
	if err != nil || r.Mode != "edit" || r.ApprovalWait != 1800 {
		t.Errorf("defaults %+v %v", r, err)
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"approval_wait":1800`) {
		t.Errorf("%s", b)
	}
}

// TestScheduledBinary: the built binary as `lembas service`, linked to the
// fake instance, receives a scheduled run in Auto under max_mode: edit
// (lowered to edit), asks an approval nobody answers (a one-second wait),
// ends silent; then a monitor call whose hash is unchanged, then changed
// — each hash checked against one computed here.
func TestScheduledBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newLinkEnv(t, "# the device's own words\nremote:\n  roots: [~/work]\n  max_mode: edit\n  approval_timeout: 3600\n")
	var out, errb strings.Builder
	if code := run([]string{"service", "scheduled", "on"}, nil, &out, &errb); code != 0 {
		t.Fatalf("service scheduled on: %s", errb.String())
	}
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "touch made.txt"}}), textReply("Nothing to report tonight.\n[SILENT]"))
	cmd := exec.Command(lembasBin(t), "service", "--login", "test")
	cmd.Env = os.Environ()
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	l := e.link()
	hello := l.notesOf("_lembas/hello")
	if lim := obj(obj(hello[0]["params"])["limits"]); lim["scheduled"] != true || lim["max_mode"] != "edit" {
		t.Errorf("hello limits %v", lim)
	}
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	asked := make(chan map[string]any, 4)
	l.answer = func(m map[string]any) any { asked <- m; <-never; return nil }
	r := l.result("session/new", map[string]any{"cwd": e.proj, "_meta": map[string]any{"lembas_model": "acme/chat-1",
		"lembas": map[string]any{"scheduled": map[string]any{"schedule": "sch_night", "run": "run_7", "mode": "auto", "approval_wait": 1}}}})
	sid, _ := r["sessionId"].(string)
	if lm := obj(obj(r["_meta"])["lembas"]); lm["mode"] != "edit" || obj(lm["scheduled"])["asked"] != "auto" {
		t.Fatalf("session/new %v", r)
	}
	ans := l.result("session/prompt", promptParams(sid, "Check the build and fix what broke.", "turn-night-7"))
	rep := obj(obj(obj(ans["_meta"])["lembas"])["scheduled"])
	if ans["stopReason"] != "end_turn" || rep["status"] != "silent" || rep["text"] != "Nothing to report tonight." {
		t.Errorf("the run's answer %v\nlog:\n%s", ans, logs.String())
	}
	select {
	case m := <-asked:
		if s := obj(obj(obj(obj(m["params"])["_meta"])["lembas"])["scheduled"]); s["run"] != "run_7" || s["wait"] != float64(1) {
			t.Errorf("the approval's scheduled %v", s)
		}
	default:
		t.Errorf("no approval was asked")
	}
	if _, err := os.Stat(filepath.Join(e.proj, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("the command ran although its approval timed out")
	}
	page := filepath.Join(e.proj, "status.txt")
	os.WriteFile(page, []byte("build: green\n"), 0o644)
	mon := func() map[string]any {
		return l.result("_lembas/monitor", map[string]any{"cwd": e.proj, "command": "cat status.txt", "schedule": "sch_night"})
	}
	m1, m2 := mon(), mon()
	if m1["hash"] != watchHash([]byte("build: green\n"), 0) || m2["hash"] != m1["hash"] {
		t.Errorf("unchanged: %v then %v", m1, m2)
	}
	os.WriteFile(page, []byte("build: red\n"), 0o644)
	if m3 := mon(); m3["hash"] == m1["hash"] || m3["hash"] != watchHash([]byte("build: red\n"), 0) || m3["excerpt"] != "build: red\n" {
		t.Errorf("changed: %v", m3)
	}
}

// TestScheduledRelinks: lembas service scheduled on, while the service is
// linked, changes what the link announced: the service relinks and the new
// hello and initialize say scheduled: true.
func TestScheduledRelinks(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n")
	e.startService()
	l := e.link()
	var out, errb strings.Builder
	if code := run([]string{"service", "scheduled", "on"}, nil, &out, &errb); code != 0 {
		t.Fatalf("on: %s", errb.String())
	}
	if !e.svc.checkLimits(e.svc.pipe.socket()) {
		t.Fatal("turning scheduled work on did not relink")
	}
	<-l.closed
	l2 := e.link()
	if lim := obj(obj(l2.notesOf("_lembas/hello")[0]["params"])["limits"]); lim["scheduled"] != true {
		t.Errorf("the new hello says %v", lim)
	}
	if r := schedNew(l2, e.proj, map[string]any{"schedule": "s", "run": "r"}); r["error"] != nil {
		t.Errorf("a scheduled run after on: %v", r)
	}
}

// FuzzScheduledParams: whatever the instance sends as
// _meta.lembas.scheduled, the judgement never panics, and a run it takes
// is within the rules (a mode allowed and not above max_mode, a wait in
// range); the sentinel's stripping never adds text.
func FuzzScheduledParams(f *testing.F) {
	for _, s := range []string{`{"schedule":"a","run":"b"}`, `{"schedule":"a","run":"b","mode":"auto","approval_wait":1e9}`,
		`{"schedule":"a","run":"b","agents":{"min":1,"max":1}}`, `{"mode":"plan"}`, `{"approval_wait":"60"}`, `[]`, `null`} {
		f.Add([]byte(s), "edit", "[SILENT]\nok")
	}
	rank := map[string]int{"plan": 0, "manual": 1, "edit": 2, "auto": 3}
	f.Fuzz(func(t *testing.T, raw []byte, maxMode, reply string) {
		var p schedParams
		if json.Unmarshal(raw, &p) != nil {
			return
		}
		m, err := normMode(maxMode)
		if err != nil {
			return
		}
		r, rerr := judgeScheduled(remoteLimits{Scheduled: true, MaxMode: m}, p)
		if rerr == nil {
			sp := theSchedSpec()
			if !inList(sp.Modes.Allowed, r.Mode) || rank[r.Mode] > rank[m] || r.ApprovalWait < sp.ApprovalWait.MinS || r.ApprovalWait > sp.ApprovalWait.MaxS {
				t.Errorf("took %+v under max_mode %s", r, m)
			}
		}
		if txt, silent := stripSentinel(reply); silent && len(txt) > len(reply) {
			t.Errorf("stripping %q gave %q", reply, txt)
		}
	})
}

// TestScheduledInterrupted: a scheduled turn a restart cut off is answered
// cancelled, and its report says so; any other session's is unchanged.
func TestScheduledInterrupted(t *testing.T) {
	newLinkEnv(t, "")
	markScheduled("ses_sched", schedRun{Schedule: "s", Run: "r", Mode: "edit"})
	var got map[string]any
	json.Unmarshal(interruptedReport("ses_sched", interruptedAnswer("t1")), &got)
	if rep := obj(obj(obj(got["_meta"])["lembas"])["scheduled"]); rep["status"] != "cancelled" || rep["run"] != "r" {
		t.Errorf("interrupted scheduled turn %v", got)
	}
	if a := interruptedReport("ses_other", interruptedAnswer("t1")); strings.Contains(string(a), "scheduled") {
		t.Errorf("another session's answer changed: %s", a)
	}
	forgetScheduled("ses_sched")
	if scheduledMark("ses_sched") != nil {
		t.Errorf("the mark outlived its session")
	}
}

// TestSchedMarksSwept: a mark whose session left the store is swept; one
// whose session is there stays.
func TestSchedMarksSwept(t *testing.T) {
	newLinkEnv(t, "")
	st := newStore(stateDir(), func(string) {})
	sess, err := st.create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.save(sess); err != nil {
		t.Fatal(err)
	}
	markScheduled(sess.ID, schedRun{Schedule: "s", Run: "r"})
	markScheduled("ses_gone", schedRun{Schedule: "s", Run: "r"})
	if n := sweepSchedMarks(); n != 1 || scheduledMark(sess.ID) == nil || scheduledMark("ses_gone") != nil {
		t.Errorf("swept %d; kept %v, gone %v", n, scheduledMark(sess.ID), scheduledMark("ses_gone"))
	}
}

package main

// The REPL's side of the link (repl_link.go): a terminal turn in the turns
// file, shared with the service's record; the instance's usage in the turn
// line, read once a ttl; the account's personalization in the system
// prompt and written back by /settings. Conformance areas repl_usage and
// personalization run the real text and prompt code.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func init() {
	conformanceRunners["repl_usage"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Login string          `json:"login"`
			Usage json.RawMessage `json:"usage"`
			AgeS  *int            `json:"age_s"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		var u *instanceUsage
		if len(in.Usage) > 0 && string(in.Usage) != "null" {
			u = &instanceUsage{}
			if err := json.Unmarshal(in.Usage, u); err != nil {
				return nil, err
			}
		}
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		var at time.Time
		if in.AgeS != nil {
			at = now.Add(-time.Duration(*in.AgeS) * time.Second)
		}
		return map[string]any{"suffix": turnUsageText(in.Login, u), "read_again": usageStale(at, now)}, nil
	}
	conformanceRunners["personalization"] = func(input json.RawMessage) (any, error) {
		var in struct {
			System string           `json:"system"`
			Person *personalization `json:"personalization"`
			Config *string          `json:"config"` // config.yaml's text: its three keys are the person's own
			Notice string           `json:"notice"` // where the personalization came from: the notice for its preset
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.Config != nil {
			c, err := parseConfig([]byte(*in.Config), "config.yaml")
			if err != nil {
				return map[string]any{"error": err.Error()}, nil
			}
			in.Person = &c.Personalization
		}
		if in.Notice != "" {
			return map[string]any{"system": withPersonalization(in.System, in.Person), "notice": unknownPreset(in.Person, in.Notice)}, nil
		}
		return withPersonalization(in.System, in.Person), nil
	}
}

func TestReplLinkSpec(t *testing.T) {
	sp := theReplLinkSpec()
	if sp.UsageTTLS <= 0 || sp.UsageTimeoutS <= 0 || sp.PersonalizationTimeoutS <= 0 || sp.TurnIDPrefix == "" || len(sp.Fields) != 3 {
		t.Fatalf("repl_link.json: %+v", sp)
	}
}

// TestReplTurnsFile: a turn at the terminal is in turns/<id>.json, done,
// numbered, marked as the terminal's; a second process's record (the
// service) knows it and never runs it, and its own turns and the
// terminal's later ones end up in the one file.
func TestReplTurnsFile(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("one"), textReply("two"))
	h := startRepl(t, fm, "edit", false, yes())
	h.typ("first")
	h.turnDone()
	id := h.r.e.sess.ID
	got := waitTurnsDone(t, id, 1)
	if len(got) != 1 || got[0].State != "done" || got[0].N != 1 || !strings.HasPrefix(got[0].ID, theReplLinkSpec().TurnIDPrefix) {
		t.Fatalf("turns file after one terminal turn: %+v", got)
	}
	if stop, origin := turnRecordAnswer(got[0].Answer); stop != "end_turn" || origin != "terminal" {
		t.Errorf("recorded answer %s", got[0].Answer)
	}
	// The service, as another process: the terminal's turn id is done there.
	svc := newTurnBook()
	if fresh, ans, _ := svc.claim(id, got[0].ID); fresh || ans == nil {
		t.Fatalf("the service would run the terminal's turn again (fresh %v)", fresh)
	}
	if fresh, _, _ := svc.claim(id, "web-1"); !fresh {
		t.Fatal("a new web turn id was not fresh")
	}
	svc.finish(id, "web-1", rawJSON(map[string]any{"stopReason": "end_turn"}))
	before := h.r.link.turns.fileWrites()
	h.typ("second")
	h.turnDone()
	h.exit()
	if n := h.r.link.turns.fileWrites() - before; n != 2 {
		t.Errorf("a terminal turn wrote the turns file %d times, want 2 (started, done)", n)
	}
	all := waitTurnsDone(t, id, 3)
	states := map[string]string{}
	for _, e := range all {
		states[e.ID] = e.State
	}
	if len(all) != 3 || states["web-1"] != "done" || states[got[0].ID] != "done" {
		t.Fatalf("the shared file lost a turn: %+v", all)
	}
	for _, e := range all {
		if e.ID != "web-1" && e.ID != got[0].ID && e.N != 2 {
			t.Errorf("the second terminal turn is numbered %d", e.N)
		}
	}
}

// waitTurnsDone waits until the session's turns file holds n finished
// turns: the turn line is printed at the engine's done event, just before
// the REPL records the turn's end (a hang guard, not a speed check).
func waitTurnsDone(t *testing.T, id string, n int) []turnEntry {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		got := readTurnFile(id)
		done := 0
		for _, e := range got {
			if e.State == "done" {
				done++
			}
		}
		if done >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startLinkedRepl runs a REPL on the login's model (test/acme/chat-1) in
// the link env's project.
func startLinkedRepl(t *testing.T, e *linkEnv) *replHarness {
	t.Helper()
	t.Setenv("LEMBAS_MODEL", "test/acme/chat-1")
	t.Setenv("NO_COLOR", "")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &runFlags{sessionOpts: sessionOpts{mode: "edit", cwd: e.proj}}
	eng, cleanup, err := newSessionEngine(ctx, &f.sessionOpts, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	cfg, _ := loadConfig()
	pr, pw := io.Pipe()
	h := &replHarness{t: t, fm: e.fi.model, in: pw, out: newSyncBuffer(), done: make(chan error, 1), proj: e.proj}
	h.r = newRepl(ctx, eng, f, cfg, replIO{in: pr, out: h.out, width: 200})
	go func() {
		h.r.start()
		h.done <- h.r.run("")
	}()
	t.Cleanup(func() { pw.Close() })
	return h
}

// TestReplLinkUsageAndPersonalization: on a login's model the turn line
// ends with the instance's month cost, /v1/usage is read once for turns
// within its ttl, the account's personalization is in the system prompt,
// and /settings writes one field back (a 403 said as the instance says).
func TestReplLinkUsageAndPersonalization(t *testing.T) {
	e := newLinkEnv(t, "")
	var usageReads atomic.Int32
	inner := e.fi.srv.Config.Handler
	e.fi.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/usage" {
			usageReads.Add(1)
		}
		inner.ServeHTTP(w, r)
	})
	e.fi.model.push(textReply("one"), textReply("two"), textReply("three"))
	h := startLinkedRepl(t, e)
	h.typ("first")
	h.turnDone()
	deadline := time.Now().Add(guard)
	for { // the first read runs in the background; wait for it to land (a hang guard, not a speed check)
		h.r.link.mu.Lock()
		read := h.r.link.usageOf == "test" && !h.r.link.usageBusy
		h.r.link.mu.Unlock()
		if read {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/v1/usage was never read")
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.typ("second")
	h.expect("test this month €1.50 + $0.25")
	h.typ("/settings instructions Be brief.")
	h.expect("personalization: instructions written to test")
	if p := e.fi.puts[len(e.fi.puts)-1]; p != `{"enabled":true,"instructions":"Be brief."}` {
		t.Errorf("PUT sent %s", p)
	}
	h.typ("/settings instructions forbidden")
	h.expect("not available on this instance")
	h.typ("/settings personality_custom")
	h.expect("personalization: personality_custom written to test")
	h.typ("third")
	h.turnDone()
	h.exit()
	if n := usageReads.Load(); n != 1 {
		t.Errorf("/v1/usage read %d times for three turns within its ttl, want 1", n)
	}
	got := e.fi.model.got()
	if len(got) != 3 {
		t.Fatalf("%d model requests", len(got))
	}
	sys := func(i int) string { return got[i].messages()[0]["content"].(string) }
	head := thePersonalitySpec().Heading
	if s := sys(0); !strings.Contains(s, head+"\n\nCall me Sam.") {
		t.Errorf("the account's personalization is not in the first request's system prompt:\n%s", s)
	}
	if s := sys(2); !strings.Contains(s, head+"\n\nBe brief.") || strings.Contains(s, "Call me Sam.") || strings.Count(s, head) != 1 {
		t.Errorf("the written instructions did not replace the old ones once:\n%s", s)
	}
}

// TestReplSettingsNoLogin: a personalization field on a model that is no
// login's says so and sends nothing.
func TestReplSettingsNoLogin(t *testing.T) {
	fm := newFakeModel(t)
	h := startRepl(t, fm, "edit", false, yes())
	h.typ("/settings instructions Be brief.")
	h.expect("is not a login's")
	h.exit()
	if len(fm.got()) != 0 {
		t.Errorf("a model request was made")
	}
}

// TestReplShare: with the real service linked to the fake instance, /share
// announces the REPL's session (origin terminal, the instance's served id),
// a new link after the instance went away hears it again, and /share off
// sends left. Without a service, /share says so.
func TestReplShare(t *testing.T) {
	e := newLinkEnv(t, "")
	h := startLinkedRepl(t, e)
	h.typ("/share")
	h.expect("no lembas service runs here")
	e.startService()
	l := e.link()
	isNote := func(method string) func(m map[string]any) bool {
		return func(m map[string]any) bool { return m["method"] == method }
	}
	h.typ("/share")
	h.expect("shared: session")
	a := l.waitNote("announce", isNote("_lembas/session/announce"))["params"].(map[string]any)
	if a["sessionId"] != h.r.e.sess.ID || a["origin"] != "terminal" || a["instance"] != true || a["model"] != "acme/chat-1" || a["cwd"] != e.proj {
		t.Fatalf("announce %v", a)
	}
	e.fi.kill()
	e.fi.restart()
	l2 := e.link()
	a2 := l2.waitNote("announce on the new link", isNote("_lembas/session/announce"))["params"].(map[string]any)
	if a2["sessionId"] != h.r.e.sess.ID {
		t.Fatalf("announce after the redial %v", a2)
	}
	h.typ("/share off")
	h.expect("no longer shared")
	left := l2.waitNote("left", isNote("_lembas/session/left"))["params"].(map[string]any)
	if left["sessionId"] != h.r.e.sess.ID || left["available"] != true {
		t.Fatalf("left %v", left)
	}
	h.exit()
}

// FuzzShareLines: whatever a process writes to share.sock, the service
// neither crashes nor keeps a share once the connection ends.
func FuzzShareLines(f *testing.F) {
	f.Add([]byte(`{"type":"announce","session":{"sessionId":"s1","cwd":"/x"}}` + "\n"))
	f.Add([]byte("{\"type\":\"announce\",\"session\":{\"sessionId\":\"\xff\"}}\n{]\n"))
	f.Add([]byte(`{"type":"announce","session":{"sessionId":"s1","cwd":"/x"}}` + "\n" +
		`{"type":"card","id":"c1","card":{"kind":"approval","sessionId":"s1","toolCallId":"t1","approval":{"tool":"bash","input":"ls"}}}` + "\n" +
		`{"type":"card","id":"c2","card":{"kind":"question","sessionId":"other","toolCallId":"t2"}}` + "\n" +
		`{"type":"settled","id":"c1"}` + "\n" + `{"type":"card","id":"c1"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		svc := &linkService{}
		a, b := net.Pipe()
		done := make(chan struct{})
		go func() { svc.serveShare(b); close(done) }()
		a.Write(data)
		a.Close()
		<-done
		svc.shares.mu.Lock()
		_, kept := svc.shares.by[b]
		svc.shares.mu.Unlock()
		if kept {
			t.Fatal("a share outlived its connection")
		}
	})
}

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestReplShareCards: a shared session's cards go to the terminal and the
// web UI at once (patient), through the real service and a real link to
// the fake instance. The web UI answering first takes the terminal's card
// down and decides; the terminal answering first takes the web UI's card
// down with settled; a question answered in the web UI reaches the model;
// status says the terminal holds the session; the REPL going away settles
// a card still open in the web UI.
func TestReplShareCards(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	l := e.link()
	h := startLinkedRepl(t, e)
	h.typ("/share")
	h.expect("shared: session")
	sid := h.r.e.sess.ID
	l.waitNote("announce", func(m map[string]any) bool { return m["method"] == "_lembas/session/announce" })

	asked := make(chan map[string]any, 8)
	answers := make(chan any, 8) // what the web UI answers, one per card; a card waits for it
	l.answer = func(m map[string]any) any {
		asked <- m
		return <-answers
	}
	webCard := func(method string) map[string]any {
		t.Helper()
		select {
		case m := <-asked:
			if m["method"] != method {
				t.Fatalf("the web UI was asked %v, want %s", m["method"], method)
			}
			p := m["params"].(map[string]any)
			if p["sessionId"] != sid {
				t.Fatalf("the card names session %v, want %s", p["sessionId"], sid)
			}
			if lm := p["_meta"].(map[string]any)["lembas"].(map[string]any); lm["patient"] != true {
				t.Fatalf("a shared session's card is not patient: %v", lm)
			}
			return p
		case <-time.After(guard):
			t.Fatalf("no %s card reached the web UI", method)
		}
		return nil
	}

	// 1. The web UI answers first: the command runs, the terminal's card
	// comes down without a denial.
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo web > web.txt"}}), textReply("Done from the web."))
	h.typ("write web.txt")
	h.expect("echo web > web.txt")
	p := webCard("session/request_permission")
	if tc := p["toolCall"].(map[string]any); tc["toolCallId"] == "" || tc["status"] != "pending" {
		t.Fatalf("toolCall %v", tc)
	}
	answers <- map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}
	h.expect("answered in the web UI: once")
	h.expect("Done from the web.")
	h.turnDone()
	if b, _ := os.ReadFile(filepath.Join(e.proj, "web.txt")); strings.TrimSpace(string(b)) != "web" {
		t.Fatalf("the command the web UI allowed did not run: %q", b)
	}

	// 2. The terminal answers first: the web UI's card is settled.
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo term > term.txt"}}), textReply("Refused, fine."))
	h.typ("write term.txt")
	h.expect("echo term > term.txt")
	p = webCard("session/request_permission")
	callID := p["toolCall"].(map[string]any)["toolCallId"]
	h.typ("n")
	h.expect("tell the model why") // typed before the reason is asked, it would be a steer message
	h.typ("not now")
	st := l.waitNote("settled", func(m map[string]any) bool {
		return m["method"] == "_lembas/permission/settled" && m["params"].(map[string]any)["toolCallId"] == callID
	})["params"].(map[string]any)
	if st["sessionId"] != sid {
		t.Fatalf("settled %v", st)
	}
	h.expect("Refused, fine.")
	h.turnDone()
	answers <- map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}} // too late: ignored
	if _, err := os.Stat(filepath.Join(e.proj, "term.txt")); err == nil {
		t.Fatalf("the command the terminal denied ran")
	}

	// 3. A question answered in the web UI reaches the model.
	e.fi.model.push(callsReply(fakeCall{"ask_user", map[string]any{"questions": []any{
		map[string]any{"question": "Which colour?", "options": []any{map[string]any{"label": "red"}, map[string]any{"label": "blue"}}}}}}),
		textReply("Blue it is."))
	h.typ("pick a colour")
	h.expect("Which colour?")
	q := webCard("_lembas/question")
	if qs := q["questions"].([]any); len(qs) != 1 || qs[0].(map[string]any)["question"] != "Which colour?" {
		t.Fatalf("question card %v", q)
	}
	answers <- map[string]any{"outcome": "answered", "answers": []any{map[string]any{"kind": "options", "labels": []any{"blue"}}}}
	h.expect("answered in the web UI: answered")
	h.expect("Blue it is.")
	h.turnDone()
	got := e.fi.model.got()
	if res := toolResults(got[len(got)-1]); len(res) == 0 || !strings.Contains(res[len(res)-1], "→ blue") {
		t.Errorf("the web UI's answer sent to the model: %q", res)
	}

	// 4. Status: the terminal holds it, idle once its announce after the
	// turn reached the service (the turn line is printed just before).
	var s map[string]any
	for deadline := time.Now().Add(guard); ; {
		s = l.result("_lembas/session/status", map[string]any{"sessionId": sid})
		if s["busy"] == false || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s["held"] != "terminal" || s["exists"] != true || s["busy"] != false || s["title"] == "" {
		t.Errorf("status of a shared session %v", s)
	}

	// 5. The REPL goes away with a card open in the web UI: it is settled.
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo gone > gone.txt"}}), textReply("unused"))
	h.typ("write gone.txt")
	p = webCard("session/request_permission")
	callID = p["toolCall"].(map[string]any)["toolCallId"]
	h.exit()
	l.waitNote("settled when the REPL left", func(m map[string]any) bool {
		return m["method"] == "_lembas/permission/settled" && m["params"].(map[string]any)["toolCallId"] == callID
	})
	l.waitNote("left", func(m map[string]any) bool { return m["method"] == "_lembas/session/left" })
	close(answers)
}

// TestReplShareCardRedial: a card open when the link drops is put again on
// the next link, and its answer there decides.
func TestReplShareCardRedial(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	l := e.link()
	h := startLinkedRepl(t, e)
	h.typ("/share")
	h.expect("shared: session")
	first := make(chan map[string]any, 1)
	l.answer = func(m map[string]any) any {
		first <- m
		select {} // this link never answers: it is killed
	}
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo again > again.txt"}}), textReply("Ran after the redial."))
	h.typ("write again.txt")
	select {
	case <-first:
	case <-time.After(guard):
		t.Fatal("the card never reached the first link")
	}
	e.fi.kill()
	e.fi.restart()
	e.link() // the new link's client answers every request with once
	h.expect("answered in the web UI: once")
	h.expect("Ran after the redial.")
	h.turnDone()
	if b, _ := os.ReadFile(filepath.Join(e.proj, "again.txt")); strings.TrimSpace(string(b)) != "again" {
		t.Fatalf("the command allowed on the new link did not run: %q", b)
	}
	h.exit()
}

// TestReplShareWebWork: the web UI works a terminal's shared session
// through the service: a prompt runs at the terminal (shown there, its
// events relayed as _lembas/event), the same turn id again gets the first
// answer and nothing runs, a non-text block is refused, steer while idle is
// refused, cancel stops the running turn, history reads the session, and a
// delete makes the terminal start a new session before the old one goes.
func TestReplShareWebWork(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	l := e.link()
	h := startLinkedRepl(t, e)
	h.typ("/share")
	h.expect("shared: session")
	sid := h.r.e.sess.ID
	l.waitNote("announce", func(m map[string]any) bool { return m["method"] == "_lembas/session/announce" })

	e.fi.model.push(textReply("Hi from the terminal's session."))
	r := l.result("session/prompt", promptParams(sid, "hello from the web", "w-1"))
	if r["stopReason"] != "end_turn" || r["_meta"].(map[string]any)["lembas"].(map[string]any)["turnId"] != "w-1" {
		t.Fatalf("the web prompt's answer %v", r)
	}
	h.expect("from the web UI: hello from the web")
	h.expect("Hi from the terminal's session.")
	ofSession := func(kind string) func(m map[string]any) bool {
		return func(m map[string]any) bool {
			return isEvent(kind)(m) && m["params"].(map[string]any)["sessionId"] == sid
		}
	}
	if ev := l.waitNote("prompt event", ofSession("prompt"))["params"].(map[string]any)["event"].(map[string]any); ev["turnId"] != "w-1" {
		t.Errorf("prompt event %v", ev)
	}
	for _, kind := range []string{"task", "text", "done"} {
		l.waitNote("event "+kind, ofSession(kind))
	}
	n := len(e.fi.model.got())
	if r2 := l.result("session/prompt", promptParams(sid, "hello from the web", "w-1")); fmt.Sprint(r2) != fmt.Sprint(r) || len(e.fi.model.got()) != n {
		t.Fatalf("a known turn id ran again: %v", r2)
	}
	img := map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "image", "data": "AAAA", "mimeType": "image/png"}},
		"_meta": map[string]any{"lembas": map[string]any{"turnId": "w-2"}}}
	if er := l.rpcErr("session/prompt", img); er["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(er["message"]), "takes text") {
		t.Errorf("an image into a shared session: %v", er)
	}
	if er := l.rpcErr("_lembas/steer", map[string]any{"sessionId": sid, "text": "faster"}); er["code"] != float64(-32602) {
		t.Errorf("steer while idle: %v", er)
	}
	hist := l.result("_lembas/session/history", map[string]any{"sessionId": sid})
	if turns := hist["turns"].([]any); len(turns) < 2 || turns[0].(map[string]any)["text"] != "hello from the web" {
		t.Errorf("history of the shared session %v", hist)
	}

	// Cancel from the web UI while the turn waits on an approval.
	asked := make(chan struct{}, 1)
	l.answer = func(m map[string]any) any {
		asked <- struct{}{}
		select {} // never answered: the cancel decides
	}
	e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo x > cancelled.txt"}}), textReply("unused"))
	pending := l.start("session/prompt", promptParams(sid, "write cancelled.txt", "w-3"))
	select {
	case <-asked:
	case <-time.After(guard):
		t.Fatal("the card never reached the web UI")
	}
	l.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	h.expect("the web UI cancelled the turn")
	select {
	case m := <-pending:
		if res, _ := m["result"].(map[string]any); res["stopReason"] != "cancelled" {
			t.Fatalf("the cancelled prompt's answer %v", m)
		}
	case <-time.After(guard):
		t.Fatal("the cancelled prompt was never answered")
	}
	if _, err := os.Stat(filepath.Join(e.proj, "cancelled.txt")); err == nil {
		t.Fatal("the cancelled turn's command ran")
	}

	// Delete from the web UI: the terminal goes on in a new session.
	d := l.result("_lembas/session/delete", map[string]any{"sessionId": sid})
	if d["deleted"] != true {
		t.Fatalf("delete %v", d)
	}
	h.expect("the web UI deleted session " + sid)
	if h.r.e.sess.ID == sid {
		t.Fatal("the terminal kept the deleted session")
	}
	l.waitNote("the new session announced", func(m map[string]any) bool {
		return m["method"] == "_lembas/session/announce" && m["params"].(map[string]any)["sessionId"] != sid
	})
	if _, err := newStore(stateDir(), nil).read(sid); err == nil {
		t.Fatal("the deleted session is still in the store")
	}
	h.exit()
}

// TestReplShareReaderStops: the web UI's deletes are handed to the REPL's
// loop by the share's own reader; when the REPL stops reading (its queue
// full) and the share ends, that reader ends too and endShare waits for
// it: no goroutine is left waiting on a REPL that is gone.
func TestReplShareReaderStops(t *testing.T) {
	r := &repl{link: &replLink{}}
	rs := &r.link.shareConn
	rs.web = make(chan shareWork, 1)
	client, server := net.Pipe()
	defer server.Close()
	rs.mu.Lock()
	rs.c = client
	rs.stop = make(chan struct{})
	rs.readers.Add(1)
	go func(stop chan struct{}) {
		defer rs.readers.Done()
		r.readShare(client, stop)
	}(rs.stop)
	rs.mu.Unlock()
	for i := 0; i < 3; i++ { // one fills the queue, one waits in the reader, one waits to be read
		go fmt.Fprintf(server, "{\"type\":\"delete\",\"id\":\"ses_%d\"}\n", i)
	}
	for len(rs.web) < 1 {
		time.Sleep(time.Millisecond)
	}
	ended := make(chan struct{})
	go func() { r.endShare(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(guard):
		t.Fatal("endShare waited forever for the share's reader")
	}
	buf := make([]byte, 1<<20)
	if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "readShare") {
		t.Errorf("a goroutine of the share is left:\n%s", st)
	}
}

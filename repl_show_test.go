package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReplShowNoLogin: a plain REPL with no login never offers show (a
// bare terminal has no viewer and never can), and -p never offers it even
// with a login.
func TestReplShowNoLogin(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("hello"))
	h := startRepl(t, fm, "edit", false, yes())
	h.typ("hi")
	h.turnDone()
	h.exit()
	got := fm.got()
	if len(got) != 1 || len(toolNames(got[0])) == 0 {
		t.Fatalf("%d requests", len(got))
	}
	if slices.Contains(toolNames(got[0]), "show") {
		t.Errorf("a REPL without a login offered show: %v", toolNames(got[0]))
	}

	e := newLinkEnv(t, "")
	t.Setenv("LEMBAS_MODEL", "test/acme/chat-1")
	e.fi.model.push(textReply("printed"))
	var out, errb bytes.Buffer
	if err := runHeadless(context.Background(), &runFlags{sessionOpts: sessionOpts{cwd: e.proj}, format: "text"}, "hi", &out, &errb); err != nil {
		t.Fatalf("-p: %v (%s)", err, errb.String())
	}
	got = e.fi.model.got()
	if len(got) != 1 || len(toolNames(got[0])) == 0 {
		t.Fatalf("-p made %d requests", len(got))
	}
	if slices.Contains(toolNames(got[0]), "show") {
		t.Errorf("-p with a login offered show: %v", toolNames(got[0]))
	}
}

// TestReplShowShared: with an instance logged in to, the REPL offers show
// from its first request, and the tools array never changes; before
// /share a call answers show's unavailable text and how to share; once
// shared, the file's content reaches the fake instance as _lembas/show over
// the real link, and the web UI's answer is the model's result.
func TestReplShowShared(t *testing.T) {
	e := newLinkEnv(t, "")
	e.startService()
	l := e.link()
	if err := os.WriteFile(filepath.Join(e.proj, "report.md"), []byte("# Report\n\nAll good.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startLinkedRepl(t, e)
	show := theSpec().Tools["show"]

	// Not shared yet: offered, and answering unavailable with the way out.
	e.fi.model.push(callsReply(fakeCall{"show", map[string]any{"path": "report.md"}}), textReply("Not yet."))
	h.typ("show me the report")
	h.expect("Not yet.")
	h.turnDone()
	got := e.fi.model.got()
	if len(got) != 2 || !slices.Contains(toolNames(got[0]), "show") {
		t.Fatalf("show not offered from the first request: %v", toolNames(got[0]))
	}
	want := show.Unavailable + " " + show.text("unshared")
	if res := toolResults(got[1]); len(res) == 0 || !strings.Contains(res[len(res)-1], want) {
		t.Fatalf("show before /share answered %q, want %q", res, want)
	}

	// Shared: the file goes to the web UI.
	h.typ("/share")
	h.expect("shared: session")
	sid := h.r.e.sess.ID
	l.waitNote("announce", func(m map[string]any) bool { return m["method"] == "_lembas/session/announce" })
	asked := make(chan map[string]any, 4)
	l.answer = func(m map[string]any) any {
		asked <- m
		return map[string]any{"shown": true}
	}
	e.fi.model.push(callsReply(fakeCall{"show", map[string]any{"path": "report.md", "title": "The report"}}), textReply("Shown."))
	h.typ("show it now")
	var p map[string]any
	select {
	case m := <-asked:
		if m["method"] != "_lembas/show" {
			t.Fatalf("the web UI was asked %v, want _lembas/show", m["method"])
		}
		p = m["params"].(map[string]any)
	case <-time.After(guard):
		t.Fatal("no _lembas/show reached the web UI")
	}
	if p["sessionId"] != sid || p["path"] != "report.md" || p["title"] != "The report" || p["kind"] != "markdown" ||
		p["content"] != "# Report\n\nAll good.\n" || p["truncated"] != false || p["toolCallId"] == "" {
		t.Errorf("_lembas/show params %v", p)
	}
	h.expect("Shown.")
	h.turnDone()
	got = e.fi.model.got()
	if res := toolResults(got[len(got)-1]); len(res) == 0 || !strings.Contains(res[len(res)-1], show.text("shown", "path", "report.md")) {
		t.Errorf("the model was told %q", res)
	}
	for i := range got {
		if !bytes.Equal(toolsJSON(got[i]), toolsJSON(got[0])) {
			t.Errorf("request %d's tools differ from the first's: the list changed when the session was shared", i)
		}
	}
	h.exit()
}

// toolsJSON is a request's tools array as sent.
func toolsJSON(r fakeRequest) []byte {
	var b bytes.Buffer
	for _, t := range r.Body.Tools {
		b.Write(t)
	}
	return b.Bytes()
}

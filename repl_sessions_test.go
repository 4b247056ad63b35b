package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runPipedRepl runs the REPL as `lembas` does (runREPL), its input a pipe
// holding in, in the folder proj, and returns what it printed.
func runPipedRepl(t *testing.T, proj, in string, cont bool) string {
	t.Helper()
	var out bytes.Buffer
	f := &runFlags{sessionOpts: sessionOpts{mode: "manual", cwd: proj, cont: cont}}
	if err := runREPL(context.Background(), f, "", strings.NewReader(in), &out, &out); err != nil {
		t.Fatalf("the REPL ended with %v; it printed:\n%s", err, out.String())
	}
	return out.String()
}

// TestReplEmptySessionsNotKept: a REPL started and quit leaves no session
// behind, /new and /delete leave none either, and -c takes the last
// session with a turn, not a newer empty one.
func TestReplEmptySessionsNotKept(t *testing.T) {
	fm := newFakeModel(t)
	replEnv(t, fm)
	proj := copyProject(t, "basic")
	setTrust(proj, true)
	st := newStore(stateDir(), nil)
	count := func() int {
		t.Helper()
		all, err := st.list()
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	runPipedRepl(t, proj, "", false)
	if n := count(); n != 0 {
		t.Fatalf("a REPL started and quit kept %d session(s)", n)
	}
	fm.push(textReply("Hello there."))
	runPipedRepl(t, proj, "hi\n", false)
	all, _ := st.list()
	if len(all) != 1 {
		t.Fatalf("a REPL with one turn kept %d sessions, want 1", len(all))
	}
	real := all[0].ID
	time.Sleep(10 * time.Millisecond) // the next session is newer on a coarse clock
	// /new twice, then quit: none of the empty ones is kept.
	runPipedRepl(t, proj, "/new\n/new\n", false)
	if n := count(); n != 1 {
		t.Fatalf("/new left %d sessions, want 1", n)
	}
	out := runPipedRepl(t, proj, "", true)
	if !strings.Contains(out, "Hello there.") {
		t.Errorf("-c did not resume the session with a turn (%s); it printed:\n%s", real, out)
	}
	// An empty session a crash left behind is passed over by -c.
	empty, err := st.create(proj)
	if err != nil {
		t.Fatal(err)
	}
	st.unlock(empty.ID)
	got, err := st.latest(proj)
	if err != nil || got.ID != real {
		t.Errorf("-c chose %v (%v), want %s, the last session with a turn", got, err, real)
	}
	st.remove(empty.ID)
	// /delete asks first; any key but y keeps the session, y deletes it,
	// and the empty session it opens in its place is not kept either.
	h := startReplIn(t, fm, proj, true)
	h.typ("/delete")
	h.expect("for good (1 turn)?")
	h.typ("n")
	h.expect("kept session " + real)
	h.typ("/delete")
	h.expect("for good (1 turn)?")
	h.typ("y")
	h.expect("deleted session " + real)
	if _, err := os.Stat(filepath.Join(stateDir(), "sessions", real+".jsonl")); err == nil {
		t.Errorf("/delete kept %s", real)
	}
	h.typ("/new")
	h.expect("new session")
	if n := count(); n != 1 {
		t.Errorf("/delete, then /new, left %d sessions, want 1 (the one open)", n)
	}
	h.exit()
}

// storedTwoTurns is a session of two turns as the engine stores them: the
// first prompt with a session note and an attached file, cancelled; the
// second answered.
func storedTwoTurns(t *testing.T, st *store, proj string) *session {
	t.Helper()
	sess, err := st.create(proj)
	if err != nil {
		t.Fatal(err)
	}
	first := "explain @main.go\n\n<file path=\"main.go\">\npackage main\nfunc main() {}\n</file>"
	noted := "<session-note>\nThe date is 2026-12-01.\n</session-note>\n\n" + first
	sess.Turns = []turn{{N: 1, Prompt: first, Status: "cancelled"}, {N: 2, Prompt: "and now?", Status: "done", Answer: "Second answer."}}
	sess.Messages = []message{
		{Role: "user", Kind: "prompt", Content: noted, Turn: 1},
		{Role: "assistant", Content: "Partial first.", Turn: 1},
		{Role: "user", Kind: "prompt", Content: "and now?", Turn: 2},
		{Role: "assistant", Content: "Second answer.", Turn: 2},
	}
	if err := st.save(sess); err != nil {
		t.Fatal(err)
	}
	st.unlock(sess.ID)
	return sess
}

// TestSessionsShowInOrder: sessions show gives each prompt with its turn's
// end and answer, in order, without the <session-note>, and an attached
// file as one line.
func TestSessionsShowInOrder(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	st := newStore(stateDir(), nil)
	sess := storedTwoTurns(t, st, t.TempDir())
	var b bytes.Buffer
	showSession(&b, sess)
	out := b.String()
	order := []string{"> explain @main.go", "> [attached main.go]", "--- turn 1: cancelled", "> and now?", "--- turn 2: done", "Second answer."}
	at := 0
	for _, w := range order {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("sessions show lacks %q after offset %d, in order; it printed:\n%s", w, at, out)
		}
		at += i + len(w)
	}
	for _, bad := range []string{"session-note", "The date is", "package main"} {
		if strings.Contains(out, bad) {
			t.Errorf("sessions show printed %q:\n%s", bad, out)
		}
	}
}

// TestReplResumeRecap: -c recaps an attached file in one line and marks
// the cancelled turn.
func TestReplResumeRecap(t *testing.T) {
	fm := newFakeModel(t)
	replEnv(t, fm)
	proj := copyProject(t, "basic")
	setTrust(proj, true)
	storedTwoTurns(t, newStore(stateDir(), nil), proj)
	h := startReplIn(t, fm, proj, true)
	got := h.expect("Second answer.")
	for _, w := range []string{"› explain @main.go", "[attached main.go]", "(this turn was cancelled before it finished)", "› and now?"} {
		if !strings.Contains(got, w) {
			t.Errorf("the resume recap lacks %q; it printed:\n%s", w, got)
		}
	}
	if strings.Contains(got, "package main") {
		t.Errorf("the resume recap printed the attached file whole:\n%s", got)
	}
	h.exit()
}

// TestReplContinueKeepsMode: -c goes on in the mode the session was left
// in (/mode auto), unless --mode says otherwise.
func TestReplContinueKeepsMode(t *testing.T) {
	fm := newFakeModel(t)
	replEnv(t, fm)
	proj := copyProject(t, "basic")
	setTrust(proj, true)
	st := newStore(stateDir(), nil)
	sess := storedTwoTurns(t, st, proj)
	sess.Mode = "auto"
	st.lock(sess.ID)
	st.save(sess)
	st.unlock(sess.ID)
	h := startReplIn(t, fm, proj, true)
	h.expect("auto mode")
	if got := h.r.e.perm.mode(); got != "auto" {
		t.Errorf("-c after /mode auto runs in %s mode", got)
	}
	h.exit()
}

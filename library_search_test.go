package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addSession stores a finished session of project with the given
// prompt/answer pairs, through the store's own methods.
func addSession(t *testing.T, st *store, project, title string, pairs ...string) *session {
	t.Helper()
	s, err := st.create(project)
	if err != nil {
		t.Fatal(err)
	}
	s.Title = title
	for i := 0; i+1 < len(pairs); i += 2 {
		note := ""
		if i == 0 {
			note = "<session-note>\nToday is Monday.\n</session-note>\n\n"
		}
		s.Messages = append(s.Messages,
			message{Role: "user", Kind: "prompt", Content: note + pairs[i], Time: time.Now()},
			message{Role: "assistant", Content: pairs[i+1], Time: time.Now()})
		s.Turns = append(s.Turns, turn{N: i/2 + 1, Prompt: pairs[i], Status: "done"})
	}
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	st.unlock(s.ID)
	return s
}

// TestLibrarySessionSearch: several sessions of a project, one of another
// project and the session asking; a search finds the right one first,
// never the other project's or its own, and reading it pages its messages.
func TestLibrarySessionSearch(t *testing.T) {
	libEnv(t, nil)
	f := newFakeModel(t)
	e, _ := newTestEngine(t, f, "manual", nil)
	root := e.perm.root
	other, _ := filepath.EvalSymlinks(t.TempDir())
	addSession(t, e.st, root, "Fix the login page", "the login form loses the password field", "I fixed the form's reset.")
	ws := addSession(t, e.st, root, "Flaky test", "the websocket reconnect test is flaky on CI", "It raced the dial; I added a wait for the handshake.",
		"and the websocket ping?", "The ping interval is now configurable.")
	addSession(t, e.st, root, "Release notes", "write release notes for 1.4", "Done: CHANGES.md has the 1.4 section.")
	elsewhere := addSession(t, e.st, other, "Other project", "websocket websocket websocket reconnect flaky", "elsewhere")
	e.sess.Messages = append(e.sess.Messages, message{Role: "user", Kind: "prompt", Content: "websocket reconnect flaky"})
	e.st.save(e.sess)

	r := runLibTool(t, e, "session_search", map[string]any{"query": "flaky websocket reconnect"})
	if r.IsError {
		t.Fatal(r.Text)
	}
	lines := strings.Split(r.Text, "\n")
	if len(lines) < 2 || !strings.Contains(lines[1], ws.ID) || !strings.Contains(lines[1], "Flaky test") {
		t.Fatalf("first hit is not the websocket session:\n%s", r.Text)
	}
	if strings.Contains(r.Text, "Other project") || strings.Contains(r.Text, e.sess.ID) {
		t.Errorf("another project's session, or the asking one, was found:\n%s", r.Text)
	}
	if !strings.Contains(r.Text, "websocket reconnect test") || strings.Contains(r.Text, "Today is Monday") {
		t.Errorf("snippet:\n%s", r.Text)
	}
	if r := runLibTool(t, e, "session_search", map[string]any{"query": "release notes"}); !strings.Contains(strings.SplitN(r.Text, "\n", 3)[1], "Release notes") {
		t.Errorf("release notes:\n%s", r.Text)
	}
	if r := runLibTool(t, e, "session_search", map[string]any{"query": "kubernetes"}); r.IsError || !strings.Contains(r.Text, "No earlier session matches") {
		t.Errorf("no match: %s", r.Text)
	}
	// Reading: paged, numbered, without the session note.
	r = runLibTool(t, e, "session_search", map[string]any{"session": ws.ID, "limit": 2})
	if r.IsError || !strings.Contains(r.Text, "messages 1-2 of 4") || !strings.Contains(r.Text, "[1] person: the websocket reconnect test") ||
		!strings.Contains(r.Text, "offset 3") || strings.Contains(r.Text, "session-note") {
		t.Errorf("read:\n%s", r.Text)
	}
	if r := runLibTool(t, e, "session_search", map[string]any{"session": ws.ID, "offset": 3}); !strings.Contains(r.Text, "[4] assistant: The ping interval") {
		t.Errorf("read page 2:\n%s", r.Text)
	}
	for _, id := range []string{"../../etc/passwd", "20990101-000000-ffffff", elsewhere.ID} {
		if r := runLibTool(t, e, "session_search", map[string]any{"session": id}); !r.IsError {
			t.Errorf("read %s: %s", id, r.Text)
		}
	}
	// At most max_limit sessions, whatever the limit asked.
	for i := 0; i < 30; i++ {
		addSession(t, e.st, root, fmt.Sprintf("s%d", i), "websocket chatter", "ok")
	}
	if r := runLibTool(t, e, "session_search", map[string]any{"query": "websocket", "limit": 100}); strings.Count(r.Text, "\n- ") != theSpec().Tools["session_search"].limit("max_limit") {
		t.Errorf("limit: %d rows", strings.Count(r.Text, "\n- "))
	}
}

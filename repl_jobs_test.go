package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReplJobs: /jobs lists a background command; when it ends the REPL
// says so and runs the machine's turn on its own; /agents lists a
// subagent, whose approval card names it.
func TestReplJobs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the job runs through a POSIX shell")
	}
	fm := newFakeModel(t)
	fm.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "until test -f release; do sleep 0.02; done; echo served", "background": true}}),
		textReply("Started the server."),
		textReply("The server job ended."),
		callsReply(fakeCall{"task", map[string]any{"description": "touch a file", "prompt": "Write notes.txt."}}),
		callsReply(fakeCall{"write", map[string]any{"path": "notes.txt", "content": "n\n"}}),
		textReply("wrote notes.txt"),
		textReply("The subagent wrote it."),
	)
	h := startRepl(t, fm, "manual", true, yes())
	h.expect("/help for commands")
	h.typ("start the server in the background")
	h.expect("n deny · e edit")
	h.expect("Waiting for you") // the progress line below the card while it waits, not the model
	h.key("y")
	h.expect("Started the server.")
	h.turnDone()
	h.typ("/jobs")
	h.expect("j1  command  running")
	os.WriteFile(filepath.Join(h.proj, "release"), nil, 0o644)
	h.expect("job j1 done (exit 0): until test -f release")
	h.expect("The server job ended.")
	h.turnDone()
	reqs := fm.got()
	if u := userTexts(reqs[2]); !strings.Contains(u[len(u)-1], "[This turn was started by lembas") {
		t.Errorf("the machine's turn prompt %q", u[len(u)-1])
	}
	h.typ("give a subagent the notes")
	h.expect("┌ " + subText("card", "name", "j2 general"))
	h.expect("┌ write · write")
	h.key("y")
	h.expect("The subagent wrote it.")
	h.turnDone()
	h.typ("/agents")
	h.expect("j2  general  done  2 steps")
	h.exit()
	if data, _ := os.ReadFile(filepath.Join(h.proj, "notes.txt")); string(data) != "n\n" {
		t.Errorf("notes.txt = %q", data)
	}
}

// TestReplBackgroundSubagentAsksWhileIdle: a background subagent's card
// drawn while no turn runs takes the next line as its answer (not as a
// prompt), and its end runs the machine's turn.
func TestReplBackgroundSubagentAsksWhileIdle(t *testing.T) {
	fm := newFakeModel(t)
	f2 := newFakeModel(t, "helper")
	fm.push(
		callsReply(fakeCall{"task", map[string]any{"description": "notes", "prompt": "Write notes.txt.", "model": "helper", "background": true}}),
		textReply("It runs in the background."),
		textReply("The notes are written."),
	)
	f2.push(callsReply(fakeCall{"write", map[string]any{"path": "notes.txt", "content": "n\n"}}), textReply("wrote notes.txt"))
	// The subagent's first request waits until the parent's turn is over,
	// so its card comes while no turn runs.
	release := make(chan struct{})
	target, _ := url.Parse(f2.srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	h := startRepl(t, fm, "manual", false, yes())
	h.r.e.jx.models = func(ctx context.Context, name string) (*modelRef, error) {
		return newModelRef(&connection{Name: "two", BaseURL: gate.URL + "/v1", http: newHTTPClient()}, "helper"), nil
	}
	h.expect("/help for commands")
	h.typ("let helper write the notes in the background")
	h.expect("It runs in the background.")
	h.turnDone()
	close(release)
	h.expect("┌ " + subText("card", "name", "j1 general"))
	h.expect("n deny")
	h.typ("y")
	h.expect("job j1 done: notes")
	h.expect("The notes are written.")
	h.turnDone()
	h.exit()
	if data, _ := os.ReadFile(filepath.Join(h.proj, "notes.txt")); string(data) != "n\n" {
		t.Errorf("notes.txt = %q", data)
	}
	if n := len(fm.got()); n != 3 {
		t.Errorf("%d requests to the main model, want 3 (the y was not a prompt)", n)
	}
}

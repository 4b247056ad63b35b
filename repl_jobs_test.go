package main

import (
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
	h.expect("Waiting for you") // the progress line while the card waits, not the model
	h.expect("n deny · e edit")
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

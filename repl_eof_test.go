package main

import "testing"

// TestReplEOFAtCard: input that ends while an approval card (or its
// feedback line) waits is a denial at once: the turn finishes and the
// REPL ends, instead of waiting out the approval timeout for a person who
// can no longer type.
func TestReplEOFAtCard(t *testing.T) {
	for _, typed := range []string{"", "n"} {
		fm := newFakeModel(t)
		fm.push(callsReply(fakeCall{"bash", map[string]any{"command": "rm -r build"}}), textReply("Not run."))
		h := startRepl(t, fm, "manual", false, yes())
		h.typ("clean up")
		h.expect("e edit")
		if typed != "" {
			h.typ(typed)
			h.expect("tell the model why")
		}
		h.exit()
		h.expect("denied")
	}
}

// TestReplCtrlCDuringCompact: Ctrl-C while /compact waits for the model
// cancels the compaction, as it cancels a turn, and the REPL goes on.
func TestReplCtrlCDuringCompact(t *testing.T) {
	fm := newFakeModel(t)
	h := startRepl(t, fm, "manual", true, yes())
	fm.push(textReply("Hello back."))
	h.typ("hello")
	h.expect("Hello back.")
	h.turnDone()
	started, _ := stallingModel(t, fm, "", fakeReply{})
	h.typ("/compact")
	<-started
	h.key("\x03")
	h.expect("compaction cancelled")
	fm.push(textReply("Still here."))
	h.typ("are you there")
	h.expect("Still here.")
	h.exit()
}

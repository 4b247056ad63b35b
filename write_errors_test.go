package main

// Write errors are reported and never followed by forgetting (issue 25):
// each record's folder is made unwritable with a file where the folder
// goes (a full disk's stand-in that fails even as root), the failure is
// said once, and once the folder is back the record is written whole.
// The pending-delete list's own case is TestNoteDeletedKeepsUntilWritten.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// blockDir puts a file where dir goes and gives the undo.
func blockDir(t *testing.T, dir string) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTeamSaveFailureTold: a member's record that cannot be saved is told
// to the person once (not at every save), a findings call tells its model
// it was not saved, and once the folder is back the next save writes the
// record with everything kept in memory meanwhile.
func TestTeamSaveFailureTold(t *testing.T) {
	state := t.TempDir()
	unblock := blockDir(t, filepath.Join(state, "sessions"))
	var notices []string
	perm := &permissions{}
	perm.setMode("edit")
	ref := newModelRef(&connection{Name: "local", BaseURL: "http://127.0.0.1:9/v1"}, "mock")
	root := newEngine(ref, nil, perm, nil, &session{ID: "main"}, 0)
	root.emit = func(ev event) {
		if ev.Type == evNotice {
			notices = append(notices, ev.Text)
		}
	}
	tm := root.team()
	st := newStore(state, nil)
	sess := &session{ID: "20261201-000000-aaaaaa", Project: "p"}
	m := &teamMember{parent: root, rec: teamRecord{ID: "s1", Name: "reader", State: "working"}, run: &subagentRun{e: newEngine(ref, nil, perm, st, sess, 0)}}
	tm.mu.Lock()
	tm.members = append(tm.members, m)
	tm.byEngine[m.run.e] = m
	tm.mu.Unlock()
	m.run.e.jx.sub = &subagentInfo{id: "j1", parent: root, depth: 1, run: m.run} // the member's tools find the root's team
	for i, f := range []string{"FINDING-ONE", "FINDING-TWO"} {
		raw, _ := json.Marshal(map[string]string{"add": f})
		res := toolTeamFindings(m.run.e, context.Background(), theSpec().Tools["team_findings"], raw)
		if !res.IsError || !strings.Contains(res.Text, "Not saved") {
			t.Errorf("findings call %d with the folder unwritable: %+v", i, res)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "s1") || !strings.Contains(notices[0], "could not be saved") {
		t.Errorf("want one notice naming s1, got %q", notices)
	}
	unblock()
	if err := tm.save(m); err != nil {
		t.Fatal(err)
	}
	back, err := newStore(state, nil).read(sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if back.Team == nil || strings.Join(back.Team.Findings, " ") != "FINDING-ONE FINDING-TWO" {
		t.Errorf("the record on disk after the folder came back: %+v", back.Team)
	}
}

// TestTurnBookWriteFailureSaid: a turns file that cannot be written is
// said once in the log, the turns stay in memory, and the next write
// after the folder is back holds them all.
func TestTurnBookWriteFailureSaid(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	unblock := blockDir(t, turnsDir())
	var said []string
	b := newTurnBook()
	b.log = func(s string) { said = append(said, s) }
	const id = "20261201-000000-bbbbbb"
	b.claim(id, "web-1")
	b.finish(id, "web-1", rawJSON(map[string]any{"stopReason": "end_turn"}))
	b.claim(id, "web-2")
	if len(said) != 1 || !strings.Contains(said[0], id) {
		t.Errorf("want the failure said once, naming the session: %q", said)
	}
	unblock()
	b.finish(id, "web-2", rawJSON(map[string]any{"stopReason": "end_turn"}))
	got := map[string]string{}
	for _, e := range readTurnFile(id) {
		got[e.ID] = e.State
	}
	if got["web-1"] != "done" || got["web-2"] != "done" {
		t.Errorf("the turns file after the folder came back: %v", got)
	}
}

// TestScheduledMarkFailureRefuses: a scheduled run whose mark cannot be
// kept is an error (the session is not opened without it).
func TestScheduledMarkFailureRefuses(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	unblock := blockDir(t, schedMarksDir())
	if err := markScheduled("ses_x", schedRun{Schedule: "s", Run: "r"}); err == nil || !strings.Contains(err.Error(), "ses_x") {
		t.Fatalf("markScheduled with the folder unwritable: %v", err)
	}
	unblock()
	if err := markScheduled("ses_x", schedRun{Schedule: "s", Run: "r"}); err != nil || scheduledMark("ses_x") == nil {
		t.Fatalf("after the folder came back: %v", err)
	}
}

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoteDeletedKeepsUntilWritten: when the pending-delete list cannot be
// written, the delete is reported and the session stays marked as given;
// once the folder is writable it is kept, and a list that is not JSON is
// never written over.
func TestNoteDeletedKeepsUntilWritten(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	markGiven("ses_a", nil)
	blocker := filepath.Join(linkStateDir(), "deletes.json")
	if err := os.Mkdir(blocker, 0o700); err != nil { // a folder where the list goes: every write fails, even as root
		t.Fatal(err)
	}
	if err := noteDeleted("ses_a"); err == nil || !strings.Contains(err.Error(), "ses_a") {
		t.Fatalf("noteDeleted with the list unwritable: %v", err)
	}
	if !wasGiven("ses_a") {
		t.Fatal("the delete was forgotten although its write failed")
	}
	os.Remove(blocker)
	if err := noteDeleted("ses_a"); err != nil {
		t.Fatal(err)
	}
	if ids, err := readIDListErr("deletes.json"); err != nil || !slices.Contains(ids, "ses_a") {
		t.Fatalf("pending deletes %v (%v)", ids, err)
	}
	markGiven("ses_b", nil)
	os.WriteFile(blocker, []byte("[broken"), 0o600)
	if err := noteDeleted("ses_b"); err == nil {
		t.Fatal("a broken list was written over")
	}
	if b, _ := os.ReadFile(blocker); string(b) != "[broken" {
		t.Errorf("the list is now %q", b)
	}
}

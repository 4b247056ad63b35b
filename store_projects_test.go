package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProjectIndex: "has this project another session?" is read from the
// per-project index, which sessions stored before it existed join once,
// which a new session joins at its first write and leaves at its
// removal, and in which a name whose session is gone does not count.
func TestProjectIndex(t *testing.T) {
	dir := t.TempDir()
	st := newStore(dir, nil)
	defer st.close()
	a, b := "/work/a", "/work/b"
	mk := func(proj string, i int) *session {
		s := &session{ID: newSessionID(time.Now().Add(time.Duration(i) * time.Second)), Project: proj}
		if err := st.save(s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := mk(a, 0)
	// Stored before the index: none of it on disk.
	if err := os.RemoveAll(st.projectsDir()); err != nil {
		t.Fatal(err)
	}
	if !st.projectHasOther(a, "") {
		t.Error("a session stored before the index was not found")
	}
	if st.projectHasOther(a, old.ID) {
		t.Error("the session itself counted as another")
	}
	if st.projectHasOther(b, "") {
		t.Error("project b has no session, but one was found")
	}
	if _, err := os.Stat(filepath.Join(st.projectsDir(), ".complete")); err != nil {
		t.Errorf("the scan of the older sessions was not marked done: %v", err)
	}
	nb := mk(b, 1)
	if !st.projectHasOther(b, "") || st.projectHasOther(b, nb.ID) {
		t.Error("a new session was not indexed under its project, or counted as another of itself")
	}
	if err := st.remove(nb.ID); err != nil {
		t.Fatal(err)
	}
	if st.projectHasOther(b, "") {
		t.Error("a removed session still counts")
	}
	// A session gone behind the store's back (its name left by a crash).
	os.Remove(st.path(old.ID))
	if st.projectHasOther(a, "") {
		t.Error("a session whose file is gone still counts")
	}
	if _, err := os.Stat(filepath.Join(st.projectDir(a), old.ID)); err == nil {
		t.Error("the stale name was kept")
	}
}

// BenchmarkProjectHasOther: the offer's question with 2,000 stored
// sessions of other projects and none of this one, read from the index
// and, as before it, by a scan of every session's head.
func BenchmarkProjectHasOther(b *testing.B) {
	st := newStore(b.TempDir(), nil)
	defer st.close()
	now := time.Now()
	for i := range 2000 {
		s := &session{ID: newSessionID(now.Add(time.Duration(i) * time.Second)), Project: "/work/other"}
		if err := st.save(s); err != nil {
			b.Fatal(err)
		}
	}
	st.projectHasOther("/work/this", "") // the one scan that completes the index
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			if st.projectHasOther("/work/this", "") {
				b.Fatal("found one")
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			st.eachStored(func(id, proj string, _ time.Time) bool { return proj != "/work/this" })
		}
	})
}

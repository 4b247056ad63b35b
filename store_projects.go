package main

// store_projects.go: which sessions each project has, kept as names in a
// folder per project (<state>/projects/<hash of the root>/<session id>,
// empty files), so that "has this project a session before this one?" —
// asked at every session's start to decide whether session_search is
// offered (tools_offer.go) — reads one small folder instead of the head
// of every stored session: with a few thousand sessions of other
// projects on a device, that scan was a few thousand opens per start.
//
// A name is added when a session is first written and taken away when it
// is removed. The index may only err towards a session that is gone
// (a crash between the two), and each name found is checked against the
// session's file before it counts, so a stale name costs one stat and is
// dropped. Sessions stored before the index existed are added to it once,
// by one scan of the store, after which a ".complete" mark says so.
//
// The store floor (floor 2): it calls only its own floor and the ground.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// projectsDir holds the index: beside the sessions folder.
func (s *store) projectsDir() string { return filepath.Join(filepath.Dir(s.dir), "projects") }

func (s *store) projectDir(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(s.projectsDir(), hex.EncodeToString(sum[:8]))
}

// noteProject adds a session to its project's folder. A failure is only
// a slower answer later (the scan), so it is not an error of the save.
func (s *store) noteProject(root, id string) {
	if root == "" || !validID(id) {
		return
	}
	dir := s.projectDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	if f, err := os.OpenFile(filepath.Join(dir, id), os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	}
}

// forgetProject takes a removed session out of its project's folder.
func (s *store) forgetProject(root, id string) {
	if root != "" && validID(id) {
		os.Remove(filepath.Join(s.projectDir(root), id))
	}
}

// projectHasOther says whether root has a stored session other than self.
func (s *store) projectHasOther(root, self string) bool {
	s.completeProjectIndex()
	dir := s.projectDir(root)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		id := e.Name()
		if id == self || !validID(id) {
			continue
		}
		if s.stored(id) {
			return true
		}
		os.Remove(filepath.Join(dir, id)) // gone: a crash between its removal and this name's
	}
	return false
}

// projectOf reads a stored session's project from its head, or from the
// older format's whole file, without taking its lock (remove holds it).
func (s *store) projectOf(id string) string {
	if proj, _, ok := peekJournal(s.path(id)); ok {
		return proj
	}
	var old struct {
		Project string `json:"project"`
	}
	if b, err := os.ReadFile(s.oldPath(id)); err == nil && json.Unmarshal(b, &old) == nil {
		return old.Project
	}
	return ""
}

// stored says whether a session's file (journal or the older format) is
// there.
func (s *store) stored(id string) bool {
	for _, p := range []string{s.path(id), s.oldPath(id)} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// completeProjectIndex adds the sessions stored before the index existed,
// once per store: a scan of every session's head, then the mark. Two
// processes that scan at once write the same names.
func (s *store) completeProjectIndex() {
	mark := filepath.Join(s.projectsDir(), ".complete")
	if _, err := os.Stat(mark); err == nil {
		return
	}
	if _, err := os.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		// No session yet: the index is complete as it is.
	} else if s.eachStored(func(id, proj string, _ time.Time) bool {
		s.noteProject(proj, id)
		return true
	}) != nil {
		return // scanned again next time
	}
	if os.MkdirAll(s.projectsDir(), 0o700) == nil {
		writeFileAtomic(mark, nil, 0o600)
	}
}

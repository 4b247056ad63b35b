package main

// /undo: taking back the last turn. Before a file tool (write, edit,
// multiedit, apply_patch) changes a file, the file as it was is kept — once
// per file per turn, so what is kept is the state before the turn — in the
// store under the session's folder (sessions/<id>.snapshots/). Undo puts
// each file back (or removes one the turn created), marks the turn's
// messages undone so the model no longer sees them, and says what it
// restored and what it could not; shell commands are named, never guessed
// at, since what they changed is unknown.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// snapshot keeps abs as it is now, unless this turn kept it already. A
// failure to keep it is recorded, so undo can say why it cannot restore.
func (e *engine) snapshot(abs string) {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	n := len(e.sess.Turns)
	for _, s := range e.sess.Snapshots {
		if s.Turn == n && s.Path == abs {
			return
		}
	}
	snap := snapshot{Turn: n, Path: abs}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		snap.Existed, snap.Skipped = true, err.Error()
	case st.Size() > int64(theReplSpec().Numbers.SnapshotMaxBytes):
		snap.Existed, snap.Skipped = true, fmt.Sprintf("%d bytes, over the %d byte limit", st.Size(), theReplSpec().Numbers.SnapshotMaxBytes)
	default:
		snap.Existed, snap.Mode = true, uint32(st.Mode().Perm())
		data, err := e.tb.files().readFile(abs)
		if err == nil {
			snap.Blob = fmt.Sprintf("%d-%d", n, len(e.sess.Snapshots))
			dir := e.st.snapDir(e.sess.ID)
			if err = os.MkdirAll(dir, 0o700); err == nil {
				err = writeFileAtomic(filepath.Join(dir, snap.Blob), data, 0o600)
			}
		}
		if err != nil {
			snap.Blob, snap.Skipped = "", err.Error()
		}
	}
	e.sess.Snapshots = append(e.sess.Snapshots, snap)
	e.st.save(e.sess)
}

// undoReport says what /undo did.
type undoReport struct {
	Turn     int
	Prompt   string
	Restored []string // project-relative, put back
	Removed  []string // created by the turn, removed
	Failed   []string // "path: why"
	Shell    []string // commands the turn ran through the shell
}

// undoLast takes back the newest turn not yet undone; nil when there is
// none.
func (e *engine) undoLast() (*undoReport, error) {
	ti := -1
	for i := len(e.sess.Turns) - 1; i >= 0; i-- {
		if !e.sess.Turns[i].Undone {
			ti = i
			break
		}
	}
	if ti < 0 {
		return nil, nil
	}
	t := &e.sess.Turns[ti]
	rep := &undoReport{Turn: t.N, Prompt: t.Prompt}
	root := e.perm.root
	snaps := e.sess.Snapshots
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		if s.Turn != t.N {
			continue
		}
		rel := relPath(root, s.Path)
		switch {
		case !s.Existed:
			if err := os.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				rep.Failed = append(rep.Failed, rel+": "+err.Error())
			} else {
				rep.Removed = append(rep.Removed, rel)
			}
		case s.Blob == "":
			rep.Failed = append(rep.Failed, rel+": "+s.Skipped)
		default:
			data, err := os.ReadFile(filepath.Join(e.st.snapDir(e.sess.ID), s.Blob))
			if err == nil {
				err = e.tb.files().writeFile(s.Path, data, fs.FileMode(s.Mode))
			}
			if err != nil {
				rep.Failed = append(rep.Failed, rel+": "+err.Error())
			} else {
				rep.Restored = append(rep.Restored, rel)
			}
		}
	}
	for i := range e.sess.Messages {
		m := &e.sess.Messages[i]
		if m.Turn != t.N {
			continue
		}
		m.Undone = true
		for _, c := range m.ToolCalls {
			if tl := e.tb.lookup(c.Function.Name); tl != nil && tl.Block == "shell" {
				var a struct {
					Command string `json:"command"`
				}
				json.Unmarshal([]byte(c.Function.Arguments), &a)
				rep.Shell = append(rep.Shell, a.Command)
			}
		}
	}
	t.Undone = true
	return rep, e.st.save(e.sess)
}

// text says what an undo did, for any front end, in the texts of
// harness/repl.json (text fills one of them).
func (rep *undoReport) text(text func(key string, kv ...any) string) string {
	lines := []string{text("undo_head", "n", rep.Turn, "prompt", titleOf(rep.Prompt))}
	for _, p := range rep.Restored {
		lines = append(lines, text("undo_restored", "path", p))
	}
	for _, p := range rep.Removed {
		lines = append(lines, text("undo_removed", "path", p))
	}
	for _, f := range rep.Failed {
		p, why, _ := strings.Cut(f, ": ")
		lines = append(lines, text("undo_failed", "path", p, "error", why))
	}
	if len(rep.Restored)+len(rep.Removed)+len(rep.Failed) == 0 {
		lines = append(lines, text("undo_no_files"))
	}
	for _, c := range rep.Shell {
		lines = append(lines, text("undo_shell", "command", c))
	}
	return strings.Join(lines, "\n")
}

// replText fills a text of harness/repl.json, for front ends other than
// the REPL that say the same things (an undo's report over ACP).
func replText(key string, kv ...any) string {
	s, ok := theReplSpec().Texts[key]
	if !ok {
		panic("harness: repl.json has no text " + key)
	}
	return fillPairs(s, kv...)
}

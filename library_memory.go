package main

// Memory: short records the model keeps across sessions, in two targets —
// the person's (user: every project) and this project's — each one file
// under the state folder's memory/. A call's change, or batch of changes,
// is applied to a copy and kept only when every target it touched stays
// within its limit: all or nothing (conformance memory). The records reach
// the model once, in the system prompt a session is made with.
//
// Where the records live is a memoryBackend: the local files here; through
// an instance login with the memory scope the instance's records (the
// device link's HTTP API) — that half is not built yet (see docs/library.md).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// memRecord is one record.
type memRecord struct {
	Text    string    `json:"text"`
	Updated time.Time `json:"updated"`
}

// memChange is one change the memory tool asks for.
type memChange struct {
	Action string `json:"action"`
	Target string `json:"target"`
	Text   string `json:"text,omitempty"`
	Old    string `json:"old,omitempty"`
}

// memoryBackend keeps the records of the targets. apply loads, changes
// and saves as one step (under a lock for the local files), so two
// sessions changing memory at once both land.
type memoryBackend interface {
	load(target string) ([]memRecord, error)
	apply(fn func(recs map[string][]memRecord) (map[string][]memRecord, error)) error
	where(target string) string
}

// localMemory is the records as files: memory/user.json and
// memory/project-<hash>.json under the state folder.
type localMemory struct {
	dir  string
	root string
}

// memoryFor is the backend of a project. Through an instance login with
// the memory scope it would be the instance's; only the local one exists.
func memoryFor(root string) memoryBackend {
	return &localMemory{dir: filepath.Join(stateDir(), "memory"), root: root}
}

type memFile struct {
	Target  string      `json:"target"`
	Project string      `json:"project,omitempty"`
	Records []memRecord `json:"records"`
}

func (m *localMemory) path(target string) string {
	if target == "user" {
		return filepath.Join(m.dir, "user.json")
	}
	return filepath.Join(m.dir, "project-"+libHash(m.root, 16)+".json")
}

func (m *localMemory) where(target string) string { return m.path(target) }

func (m *localMemory) load(target string) ([]memRecord, error) {
	data, err := os.ReadFile(m.path(target))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f memFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, errorf("memory file %s is not valid JSON (%v); fix or remove it", m.path(target), err)
	}
	return f.Records, nil
}

// apply runs fn over both targets under the memory folder's lock and
// saves the targets it changed, each atomically.
func (m *localMemory) apply(fn func(map[string][]memRecord) (map[string][]memRecord, error)) error {
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockPath(filepath.Join(m.dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	before := map[string][]memRecord{}
	for _, t := range theLibrarySpec().Memory.Targets {
		recs, err := m.load(t)
		if err != nil {
			return err
		}
		before[t] = recs
	}
	after, err := fn(cloneRecords(before))
	if err != nil {
		return err
	}
	for _, t := range theLibrarySpec().Memory.Targets {
		if sameRecords(before[t], after[t]) {
			continue
		}
		f := memFile{Target: t, Records: after[t]}
		if f.Records == nil {
			f.Records = []memRecord{}
		}
		if t != "user" {
			f.Project = m.root
		}
		data, _ := json.MarshalIndent(f, "", "  ")
		if err := writeFileAtomic(m.path(t), append(data, '\n'), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// lockPath takes a lock file, waiting a little for another process that
// holds it (a memory change is quick).
func lockPath(p string) (func(), error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		if err := tryLock(f); err == nil {
			return func() { unlockFile(f); f.Close() }, nil
		} else if i >= 200 {
			f.Close()
			return nil, errorf("%s is held by another lembas process; try again when it is done", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cloneRecords(in map[string][]memRecord) map[string][]memRecord {
	out := map[string][]memRecord{}
	for k, v := range in {
		out[k] = append([]memRecord(nil), v...)
	}
	return out
}

func sameRecords(a, b []memRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Text != b[i].Text {
			return false
		}
	}
	return true
}

// memUsed is the characters a target's records hold.
func memUsed(recs []memRecord) int {
	n := 0
	for _, r := range recs {
		n += utf8.RuneCountInString(r.Text)
	}
	return n
}

// memError is a change refused; its text is the tool's, for the model.
type memError struct{ msg string }

func (e memError) Error() string { return e.msg }

// applyMemory applies changes in order to a copy of recs and checks every
// touched target against its limit: the whole batch, or nothing.
func applyMemory(t *toolSpec, recs map[string][]memRecord, changes []memChange, limits map[string]int, now time.Time) (map[string][]memRecord, error) {
	touched := map[string]bool{}
	out := cloneRecords(recs)
	for _, c := range changes {
		if _, ok := limits[c.Target]; !ok {
			return nil, memError{t.text("bad_target", "targets", strings.Join(theLibrarySpec().Memory.Targets, ", "))}
		}
		text := strings.TrimSpace(c.Text)
		list := out[c.Target]
		switch c.Action {
		case "add":
			if text == "" {
				return nil, memError{t.text("need_text", "action", c.Action)}
			}
			for _, r := range list {
				if r.Text == text {
					return nil, memError{t.text("duplicate", "target", c.Target)}
				}
			}
			list = append(list, memRecord{Text: text, Updated: now})
		case "replace", "remove":
			if strings.TrimSpace(c.Old) == "" {
				return nil, memError{t.text("need_old", "action", c.Action)}
			}
			if c.Action == "replace" && text == "" {
				return nil, memError{t.text("need_text", "action", c.Action)}
			}
			var hits []int
			for i, r := range list {
				if strings.Contains(r.Text, c.Old) {
					hits = append(hits, i)
				}
			}
			switch {
			case len(hits) == 0:
				return nil, memError{t.text("no_match", "target", c.Target, "old", fmt.Sprintf("%q", c.Old), "records", renderRecords(t, recs, []string{c.Target}, limits))}
			case len(hits) > 1:
				return nil, memError{t.text("ambiguous", "count", len(hits), "target", c.Target, "old", fmt.Sprintf("%q", c.Old))}
			}
			i := hits[0]
			if c.Action == "replace" {
				list[i] = memRecord{Text: text, Updated: now}
			} else {
				list = append(list[:i:i], list[i+1:]...)
			}
		default:
			return nil, memError{t.text("no_changes")}
		}
		out[c.Target] = list
		touched[c.Target] = true
	}
	for _, target := range theLibrarySpec().Memory.Targets {
		if touched[target] {
			if used := memUsed(out[target]); used > limits[target] {
				return nil, memError{t.text("over_limit", "target", target, "used", used, "limit", limits[target])}
			}
		}
	}
	return out, nil
}

// memLimits are the targets' limits from the memory tool's JSON.
func memLimits(t *toolSpec) map[string]int {
	m := map[string]int{}
	for _, target := range theLibrarySpec().Memory.Targets {
		m[target] = t.limit(target + "_limit")
	}
	return m
}

// renderRecords shows targets' records as the tool's answers do.
func renderRecords(t *toolSpec, recs map[string][]memRecord, targets []string, limits map[string]int) string {
	ms := theLibrarySpec().Memory
	var b strings.Builder
	for i, target := range targets {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(fillPairs(ms.TargetHead, "target", target, "used", memUsed(recs[target]), "limit", limits[target]))
		if len(recs[target]) == 0 {
			b.WriteString("\n" + t.text("empty"))
		}
		for _, r := range recs[target] {
			b.WriteString("\n" + fillPairs(ms.Row, "text", r.Text))
		}
	}
	return b.String()
}

func init() {
	sessionTools["memory"] = toolMemory
}

// toolMemory applies one change or a batch. The engine has asked the
// person per the mode (risk write).
func toolMemory(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		memChange
		Changes []memChange `json:"changes"`
	}
	json.Unmarshal(raw, &a)
	changes := a.Changes
	if a.Action != "" {
		changes = append([]memChange{a.memChange}, changes...)
	}
	if len(changes) == 0 {
		return errResult(t.text("no_changes"))
	}
	limits := memLimits(t)
	var after map[string][]memRecord
	err := memoryFor(e.perm.root).apply(func(recs map[string][]memRecord) (map[string][]memRecord, error) {
		var err error
		after, err = applyMemory(t, recs, changes, limits, time.Now())
		return after, err
	})
	var me memError
	if errors.As(err, &me) {
		return errResult(me.msg)
	}
	if err != nil {
		return errResult(t.text("store_failed", "error", err))
	}
	return toolResult{Text: t.text("applied", "n", len(changes), "records", renderRecords(t, after, theLibrarySpec().Memory.Targets, limits))}
}

// memoryPrompt is the records for the system prompt, as they are when the
// session is made; nothing when both targets are empty.
func memoryPrompt(root string) string {
	ms := theLibrarySpec().Memory
	t := theSpec().Tools["memory"]
	if t == nil {
		return ""
	}
	mem := memoryFor(root)
	recs := map[string][]memRecord{}
	any := false
	for _, target := range ms.Targets {
		r, err := mem.load(target)
		if err == nil && len(r) > 0 {
			recs[target] = r
			any = true
		}
	}
	if !any {
		return ""
	}
	return ms.Head + "\n" + renderRecords(t, recs, ms.Targets, memLimits(t))
}

// removeMemory removes record n (1-based) of a target, or all of them
// (n == 0), for the person: `lembas memory rm` and /memory rm. It returns
// the session note telling the model.
func removeMemory(root, target string, n int) (string, error) {
	ms := theLibrarySpec().Memory
	ok := false
	for _, tg := range ms.Targets {
		ok = ok || tg == target
	}
	if !ok {
		return "", usageError{ms.Usage}
	}
	var note string
	err := memoryFor(root).apply(func(recs map[string][]memRecord) (map[string][]memRecord, error) {
		list := recs[target]
		if n == 0 {
			recs[target] = nil
			note = fillPairs(ms.NoteCleared, "target", target)
			return recs, nil
		}
		if n < 1 || n > len(list) {
			return nil, errorf("%s", fillPairs(ms.NoRecord, "target", target, "n", n))
		}
		note = fillPairs(ms.NoteRemoved, "target", target, "text", list[n-1].Text)
		recs[target] = append(list[:n-1:n-1], list[n:]...)
		return recs, nil
	})
	return note, err
}

// listMemory writes the targets' records numbered, for the person.
func listMemory(root string, targets []string) (string, error) {
	ms := theLibrarySpec().Memory
	t := theSpec().Tools["memory"]
	limits := memLimits(t)
	mem := memoryFor(root)
	var b strings.Builder
	for _, target := range targets {
		recs, err := mem.load(target)
		if err != nil {
			return "", err
		}
		b.WriteString(fillPairs(ms.ListHead, "target", target, "path", mem.where(target), "used", memUsed(recs), "limit", limits[target]) + "\n")
		if len(recs) == 0 {
			b.WriteString(ms.ListEmpty + "\n")
		}
		for i, r := range recs {
			b.WriteString(fillPairs(ms.ListRow, "n", i+1, "text", r.Text) + "\n")
		}
	}
	return b.String(), nil
}

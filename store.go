package main

// Sessions on disk: one JSON file per session under the state folder's
// sessions/, rewritten atomically after every message, so a message the
// person has seen is on disk and kill -9 at any moment leaves every session
// readable. A session open in a process is guarded by a lock file; a
// corrupt file is reported and set aside, never silently dropped.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// message is one stored message: the wire fields plus what lembas keeps
// about it.
type message struct {
	Role       string      `json:"role"`
	Content    string      `json:"content,omitempty"`
	Images     []imagePart `json:"images,omitempty"`
	Reasoning  string      `json:"reasoning,omitempty"`
	ToolCalls  []toolCall  `json:"tool_calls,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
	ToolName   string      `json:"tool_name,omitempty"`
	ResultID   string      `json:"result_id,omitempty"`
	Full       string      `json:"full,omitempty"` // a capped result's whole output, for recall
	Status     string      `json:"status,omitempty"`
	Turn       int         `json:"turn"`
	Kind       string      `json:"kind,omitempty"`      // prompt (starts a turn), nudge, wrapup, image, steer, mode, compact (the summary's ask), summary
	Undone     bool        `json:"undone,omitempty"`    // taken back by /undo: no longer sent to the model
	Compacted  bool        `json:"compacted,omitempty"` // kept, but no longer sent: a compaction covers it
	Time       time.Time   `json:"time"`
}

// turn is one prompt and how it ended.
type turn struct {
	N          int       `json:"n"`
	Prompt     string    `json:"prompt"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended,omitempty"`
	Status     string    `json:"status"` // running, done, cancelled, failed, interrupted
	StopReason string    `json:"stop_reason,omitempty"`
	Answer     string    `json:"answer,omitempty"`
	Error      string    `json:"error,omitempty"`
	Usage      usage     `json:"usage"`
	Steps      int       `json:"steps"`
	Undone     bool      `json:"undone,omitempty"` // taken back by /undo
	By         string    `json:"by,omitempty"`     // machine: started by lembas when background work ended (jobs.go)
}

type session struct {
	ID         string     `json:"id"`
	Project    string     `json:"project"`
	Title      string     `json:"title,omitempty"`
	Created    time.Time  `json:"created"`
	Updated    time.Time  `json:"updated"`
	Model      string     `json:"model,omitempty"`
	Mode       string     `json:"mode,omitempty"`
	System     string     `json:"system,omitempty"` // the system prompt, made once
	NextResult int        `json:"next_result"`
	Messages   []message  `json:"messages"`
	Turns      []turn     `json:"turns"`
	Snapshots  []snapshot `json:"snapshots,omitempty"` // files as they were before a turn changed them (undo.go)

	// Context (context.md): what the model has been told, so a continued
	// session goes on exactly where it was.
	Dedupe   *dedupeTable    `json:"dedupe,omitempty"`    // hygiene: reads and listings still in the history
	Notes    []string        `json:"notes,omitempty"`     // session notes waiting for the next user message
	NoteDate string          `json:"note_date,omitempty"` // the date the model was last told
	NoteMode string          `json:"note_mode,omitempty"` // the mode the model was last told
	Quirks   []string        `json:"quirks,omitempty"`    // request quirks learned on this session's connection
	Requests []requestRecord `json:"requests,omitempty"`  // usage of every model request
	Plan     *plan           `json:"plan,omitempty"`
	Parent   string          `json:"parent,omitempty"` // a subagent's transcript: the session that gave the task (subagents.go)
	Agent    string          `json:"agent,omitempty"`  // a subagent's transcript: its job id and agent
}

// requestRecord is one model request: its usage (cached input tokens
// included), its size, and whether it was a step or a compaction.
type requestRecord struct {
	Turn  int       `json:"turn"`
	Kind  string    `json:"kind"` // step, compact
	Bytes int       `json:"bytes"`
	Usage usage     `json:"usage"`
	Time  time.Time `json:"time"`
}

// store is the sessions folder.
type store struct {
	dir   string
	warn  func(string) // where reports of set-aside files go
	locks map[string]*os.File
}

func newStore(stateDir string, warn func(string)) *store {
	if warn == nil {
		warn = func(string) {}
	}
	return &store{dir: filepath.Join(stateDir, "sessions"), warn: warn, locks: map[string]*os.File{}}
}

func (s *store) path(id string) string { return filepath.Join(s.dir, id+".json") }

// newSessionID is sortable by time and unique: 20261130-161200-a1b2c3.
func newSessionID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// validID keeps ids to the shape we make, so an id from the command line
// can never name a path outside the sessions folder.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (s *store) create(project string) (*session, error) {
	now := time.Now()
	sess := &session{ID: newSessionID(now), Project: project, Created: now, Updated: now, NextResult: 1}
	if err := s.lock(sess.ID); err != nil {
		return nil, err
	}
	return sess, s.save(sess)
}

// save writes the session atomically.
func (s *store) save(sess *session) error {
	sess.Updated = time.Now()
	data, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.path(sess.ID), data, 0o600); err != nil {
		return fmt.Errorf("saving session %s: %w", sess.ID, err)
	}
	return nil
}

// read loads a session file; a corrupt one is set aside as
// <name>.corrupt-<time> and reported.
func (s *store) read(id string) (*session, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%q is not a session id; `lembas sessions list` shows them", id)
	}
	p := s.path(id)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no session %s; `lembas sessions list` shows them", id)
	}
	if err != nil {
		return nil, err
	}
	var sess session
	err = json.Unmarshal(data, &sess)
	if err == nil && sess.ID != id {
		err = fmt.Errorf("it holds session %q", sess.ID)
	}
	if err != nil {
		aside, rerr := setAside(p)
		if rerr != nil {
			return nil, fmt.Errorf("session %s is corrupt (%v) and could not be set aside (%v); move %s away by hand", id, err, rerr, p)
		}
		s.warn(fmt.Sprintf("session file %s is corrupt (%v); set aside as %s", p, err, aside))
		return nil, fmt.Errorf("session %s is corrupt and was set aside as %s", id, aside)
	}
	return &sess, nil
}

// setAside renames a corrupt file to <name>.corrupt-<time>, with a number
// added when that name is taken (two copies set aside in one second), so an
// earlier set-aside file is never renamed over and lost. A name taken
// between the check and the rename is a race with another lembas setting
// the same file aside, which then has nothing left to rename.
func setAside(p string) (string, error) {
	base := p + ".corrupt-" + time.Now().UTC().Format("20060102T150405")
	aside := base
	for n := 2; ; n++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s-%d", base, n)
	}
	return aside, os.Rename(p, aside)
}

// open loads a session to work in: it takes the lock, and repairs what a
// killed process left — a running turn becomes interrupted, and a tool call
// without a result gets an "interrupted" result so the conversation is
// valid to send again.
func (s *store) open(id string) (*session, error) {
	if err := s.lock(id); err != nil {
		return nil, err
	}
	sess, err := s.read(id)
	if err != nil {
		s.unlock(id)
		return nil, err
	}
	if repairSession(sess) {
		if err := s.save(sess); err != nil {
			return nil, err
		}
	}
	return sess, nil
}

// repairSession closes what an interrupted process left open.
func repairSession(sess *session) bool {
	changed := false
	for i := range sess.Turns {
		if sess.Turns[i].Status == "running" {
			sess.Turns[i].Status = "interrupted"
			sess.Turns[i].StopReason = "cancelled"
			changed = true
		}
	}
	answered := map[string]bool{}
	for _, m := range sess.Messages {
		if m.Role == "tool" {
			answered[m.ToolCallID] = true
		}
	}
	var out []message
	for _, m := range sess.Messages {
		out = append(out, m)
		for _, c := range m.ToolCalls {
			if answered[c.ID] {
				continue
			}
			out = append(out, message{Role: "tool", ToolCallID: c.ID, ToolName: c.Function.Name,
				Content: theSpec().Loop.ToolErrors["interrupted"], Status: "interrupted", Turn: m.Turn, Time: time.Now()})
			answered[c.ID] = true
			changed = true
		}
	}
	if changed {
		sess.Messages = reorderResults(out)
	}
	return changed
}

// reorderResults puts every tool result right after the assistant message
// that called it, keeping the calls' order.
func reorderResults(msgs []message) []message {
	results := map[string]message{}
	for _, m := range msgs {
		if m.Role == "tool" {
			results[m.ToolCallID] = m
		}
	}
	var out []message
	for _, m := range msgs {
		if m.Role == "tool" {
			continue
		}
		out = append(out, m)
		for _, c := range m.ToolCalls {
			if r, ok := results[c.ID]; ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// lock takes the session's lock file, or says which process holds it.
func (s *store) lock(id string) error {
	if _, ok := s.locks[id]; ok {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	p := filepath.Join(s.dir, id+".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := tryLock(f); err != nil {
		holder, _ := os.ReadFile(p)
		f.Close()
		return fmt.Errorf("session %s is open in another lembas process (pid %s); close it there first", id, strings.TrimSpace(string(holder)))
	}
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0)
	s.locks[id] = f
	return nil
}

func (s *store) unlock(id string) {
	if f, ok := s.locks[id]; ok {
		unlockFile(f)
		f.Close()
		delete(s.locks, id)
	}
}

func (s *store) close() {
	for id := range s.locks {
		s.unlock(id)
	}
}

// list reads every session, newest first; corrupt files are set aside and
// reported, the rest still listed.
func (s *store) list() ([]*session, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*session
	for _, n := range names {
		id := strings.TrimSuffix(filepath.Base(n), ".json")
		sess, err := s.read(id)
		if err != nil {
			continue
		}
		out = append(out, sess)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out, nil
}

// latest is the newest session of a project.
func (s *store) latest(project string) (*session, error) {
	all, err := s.list()
	if err != nil {
		return nil, err
	}
	for _, sess := range all {
		if sess.Project == project && sess.Parent == "" {
			return sess, nil
		}
	}
	return nil, fmt.Errorf("no session of %s yet; run without -c to start one", project)
}

func (s *store) remove(id string) error {
	if !validID(id) {
		return fmt.Errorf("%q is not a session id", id)
	}
	if err := s.lock(id); err != nil {
		return err
	}
	defer s.unlock(id)
	if err := os.Remove(s.path(id)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no session %s", id)
		}
		return err
	}
	os.Remove(filepath.Join(s.dir, id+".lock"))
	os.RemoveAll(s.snapDir(id))
	return nil
}

// prune deletes sessions not updated for days days; locked ones are kept.
func (s *store) prune(days int) ([]string, error) {
	all, err := s.list()
	if err != nil {
		return nil, err
	}
	cut := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	var gone []string
	for _, sess := range all {
		if sess.Updated.Before(cut) {
			if err := s.remove(sess.ID); err == nil {
				gone = append(gone, sess.ID)
			}
		}
	}
	return gone, nil
}

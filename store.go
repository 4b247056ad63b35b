package main

// Sessions on disk: one append-only JSON Lines journal per session under
// the state folder's sessions/ (<id>.jsonl, store_journal.go), appended
// with one write after every message and an fsync before the person sees
// it (each save's own, or for -p's text and json one at the turn's end:
// deferSyncs), so a message the person has seen is on disk and kill -9 at
// any moment leaves every session readable; compacted by an atomic rewrite now and then. A session in the
// older single-object format (<id>.json) is read as before and converted
// on its next save. A session open in a process is guarded by a lock file;
// a corrupt file is reported and set aside, never silently dropped.
//
// Floor 2 (persistence): it keeps records whose shapes are the ground's
// (*_record.go, events.go) and calls only the ground.

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
	Offer    *offerDecision  `json:"offer,omitempty"`  // the conditions its tools were offered under (tools_offer.go)
	Team     *teamRecord     `json:"team,omitempty"`   // a team member's transcript: its place in the tree, findings and report (team.go)
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
	dir     string
	warn    func(string) // where reports of set-aside files go
	locks   map[string]*os.File
	mu      mutex                     // guards shadows, and makes saves one at a time
	shadows map[string]*sessionShadow // what is on disk, for sessions this process holds
	lazy    bool                      // saves are written at once and made durable at flush (deferSyncs)
}

func newStore(stateDir string, warn func(string)) *store {
	if warn == nil {
		warn = func(string) {}
	}
	return &store{dir: filepath.Join(stateDir, "sessions"), warn: warn, locks: map[string]*os.File{},
		shadows: map[string]*sessionShadow{}}
}

// path is the session's journal.
//
//go:noinline
func (s *store) path(id string) string { return filepath.Join(s.dir, id+".jsonl") }

// oldPath is where the single-object format kept a session.
//
//go:noinline
func (s *store) oldPath(id string) string { return filepath.Join(s.dir, id+".json") }

// newSessionID is sortable by time and unique: 20261130-161200-a1b2c3.
func newSessionID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// validID keeps ids to the shape we make, so an id from the command line
// can never name a path outside the sessions folder.
//
//go:noinline
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

// begin is create without the first write: the session is locked and
// goes to disk whole at its first save (one fsync where create and that
// save made two). -p uses it: a run that fails before its first message
// leaves no empty session behind, and the first request waits on one
// fsync fewer.
func (s *store) begin(project string) (*session, error) {
	now := time.Now()
	sess := &session{ID: newSessionID(now), Project: project, Created: now, Updated: now, NextResult: 1}
	return sess, s.lock(sess.ID)
}

// save puts the session on disk: it appends what changed since the last
// save, in one write and fsync, and rewrites the journal whole when it has
// no shadow of what is there or the journal has grown too big
// (store_journal.go). Saves are made one at a time.
func (s *store) save(sess *session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer traceSince(time.Now(), "save")
	sess.Updated = time.Now()
	sh := s.shadows[sess.ID]
	st, err := os.Lstat(s.path(sess.ID))
	if sh == nil && s.lazy && errors.Is(err, fs.ErrNotExist) {
		if _, oldErr := os.Lstat(s.oldPath(sess.ID)); errors.Is(oldErr, fs.ErrNotExist) {
			return s.firstWrite(sess) // the older format's file is looked for only here, not at every save
		}
	}
	if sh == nil || err != nil || st.Size() != sh.j.size {
		// No shadow, or the file is not the one the shadow describes
		// (removed, or written by someone else): start it afresh.
		return s.rewrite(sess)
	}
	if err := sh.j.append(sh.diff(sess)...); err != nil {
		delete(s.shadows, sess.ID) // unsure what is on disk: the next save rewrites
		return errorf("saving session %s: %w", sess.ID, err)
	}
	if sh.j.needsCompaction(sh.live()) {
		return s.rewrite(sess)
	}
	return nil
}

// deferSyncs is for a front end that shows the person nothing of a turn
// until it ends (-p's text and json): from now on a save writes at once
// but does not fsync, and flush, called before anything is shown, makes
// every save since durable with one fsync a journal. The promise holds:
// the process's crash or kill -9 loses nothing (the kernel has every
// write), and a power cut loses only what the person has not seen. It
// spares the turn an fsync a message (one a step and more).
func (s *store) deferSyncs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazy = true
	for _, sh := range s.shadows {
		sh.j.lazy = true
	}
}

// flush makes the saves since deferSyncs durable: call it before the
// person is shown anything.
func (s *store) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, sh := range s.shadows {
		if err := sh.j.sync(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// firstWrite starts a new session's journal with one lazy append, where
// rewrite's temp file, rename and fsyncs would make it durable at once:
// there is no older file for a crash to leave half replaced.
func (s *store) firstWrite(sess *session) error {
	j := &journal{path: s.path(sess.ID), perm: 0o600, lazy: true}
	recs, sh := snapshotRecords(sess, j)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return errorf("saving session %s: %w", sess.ID, err)
	}
	if err := j.append(recs...); err != nil {
		return errorf("saving session %s: %w", sess.ID, err)
	}
	s.noteProject(sess.Project, sess.ID)
	if _, ok := s.locks[sess.ID]; ok {
		s.shadows[sess.ID] = sh
	}
	return nil
}

// rewrite writes the whole session as a fresh journal, and removes a file
// of the older format it replaces. The shadow is kept only while this
// process holds the lock: without it, another process may write next.
func (s *store) rewrite(sess *session) error {
	j := &journal{path: s.path(sess.ID), perm: 0o600}
	recs, sh := snapshotRecords(sess, j)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return errorf("saving session %s: %w", sess.ID, err)
	}
	if err := j.rewrite(recs); err != nil {
		delete(s.shadows, sess.ID)
		return errorf("saving session %s: %w", sess.ID, err)
	}
	s.noteProject(sess.Project, sess.ID)
	if err := os.Remove(s.oldPath(sess.ID)); err == nil {
		// The old file's removal not surviving a power cut leaves both
		// formats on disk, which loading already reads (the journal wins):
		// said, not failed, since the save itself is durable.
		if err := syncDir(s.dir); err != nil {
			s.warn(fmt.Sprintf("saving session %s: %v", sess.ID, err))
		}
	}
	if _, ok := s.locks[sess.ID]; ok {
		sh.j.lazy = s.lazy // the rewrite itself was durable; later appends follow the store
		s.shadows[sess.ID] = sh
	}
	return nil
}

// read loads a session; a corrupt file is set aside as
// <name>.corrupt-<time> and reported. A journal's torn last record is cut
// off (with a warning) only when this process holds the session's lock,
// since otherwise it may be another process's append in progress.
func (s *store) read(id string) (*session, error) {
	if !validID(id) {
		return nil, errorf("%q is not a session id; `lembas sessions list` shows them", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, locked := s.locks[id]
	p := s.path(id)
	j, recs, err := loadJournal(p, 0o600, locked, s.warn)
	if errors.Is(err, fs.ErrNotExist) {
		return s.readOld(id)
	}
	var sess *session
	var sh *sessionShadow
	var jerr *journalError
	switch {
	case errors.As(err, &jerr):
	case err != nil:
		return nil, err
	default:
		sess, sh, err = replaySession(recs, j)
		if err == nil && sess.ID != id {
			err = errorf("it holds session %q", sess.ID)
		}
	}
	if err != nil {
		return nil, s.setAsideCorrupt(id, p, err)
	}
	if locked {
		sh.j.lazy = s.lazy
		s.shadows[id] = sh
	}
	return sess, nil
}

// readOld reads a session in the single-object format; with no shadow
// kept, its next save writes the journal and removes this file.
func (s *store) readOld(id string) (*session, error) {
	p := s.oldPath(id)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errorf("no session %s; `lembas sessions list` shows them", id)
	}
	if err != nil {
		return nil, err
	}
	var sess session
	err = json.Unmarshal(data, &sess)
	if err == nil && sess.ID != id {
		err = errorf("it holds session %q", sess.ID)
	}
	if err != nil {
		return nil, s.setAsideCorrupt(id, p, err)
	}
	delete(s.shadows, id)
	return &sess, nil
}

// setAsideCorrupt moves a corrupt session file out of the way and says so.
func (s *store) setAsideCorrupt(id, p string, err error) error {
	delete(s.shadows, id)
	aside, rerr := setAside(p)
	if rerr != nil {
		return errorf("session %s is corrupt (%v) and could not be set aside (%v); move %s away by hand", id, err, rerr, p)
	}
	s.warn(fmt.Sprintf("session file %s is corrupt (%v); set aside as %s", p, err, aside))
	return errorf("session %s is corrupt and was set aside as %s", id, aside)
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
		holder, _ := os.ReadFile(p) // only names the holder in the message
		f.Close()                   // opened only to lock, nothing written
		return errorf("session %s is open in another lembas process (pid %s); close it there first", id, strings.TrimSpace(string(holder)))
	}
	// The pid in the file only names the holder in another process's
	// message; the lock is the flock, so a failed write of it is safe.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0)
	s.locks[id] = f
	return nil
}

func (s *store) unlock(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh := s.shadows[id]; sh != nil {
		if err := sh.j.sync(); err != nil { // lazy saves are durable before another process may write
			s.warn(err.Error())
		}
	}
	delete(s.shadows, id) // once unlocked, another process may write
	if f, ok := s.locks[id]; ok {
		// Closing the file drops the lock whatever unlockFile answered,
		// and nothing was written through it: both errors are safe to drop.
		_ = unlockFile(f)
		_ = f.Close()
		delete(s.locks, id)
	}
}

func (s *store) close() {
	if err := s.flush(); err != nil {
		s.warn(err.Error())
	}
	s.mu.Lock()
	ids := make([]string, 0, len(s.locks))
	for id := range s.locks {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.unlock(id)
	}
}

// list reads every session, newest first; corrupt files are set aside and
// reported, the rest still listed.
func (s *store) list() ([]*session, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.json*"))
	if err != nil {
		return nil, err
	}
	var out []*session
	seen := map[string]bool{}
	for _, n := range names {
		base := filepath.Base(n)
		id := strings.TrimSuffix(strings.TrimSuffix(base, ".jsonl"), ".json")
		if id == base || seen[id] || !validID(id) { // .json.corrupt-…, or both formats of one session
			continue
		}
		seen[id] = true
		sess, err := s.read(id)
		if err != nil {
			continue
		}
		out = append(out, sess)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out, nil
}

// latest is the newest session of a project. It replays only that one:
// of every other journal it reads the first record (the project) and the
// file's end (the time of the last save), so `-c` costs the same with a
// hundred long sessions stored as with one. A file it cannot peek at (the
// older format, a torn end) is read whole, as list does.
func (s *store) latest(project string) (*session, error) {
	type cand struct {
		id      string
		updated time.Time
	}
	var cands []cand
	err := s.eachStored(func(id, proj string, updated time.Time) bool {
		if proj == project {
			cands = append(cands, cand{id, updated})
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].updated.After(cands[j].updated) })
	for _, c := range cands {
		// A session with no turn (started and left) is not a conversation
		// to go on with: -c takes the last one that has one.
		if sess, err := s.read(c.id); err == nil && sess.Parent == "" && len(sess.Turns) > 0 {
			return sess, nil
		}
	}
	return nil, errorf("no session of %s yet; run without -c to start one", project)
}

// eachStored calls visit with every stored session's id, project and last
// save, peeked at (peekJournal) or, where it cannot be, read whole, until
// visit answers false. A file that cannot be read is passed over.
func (s *store) eachStored(visit func(id, project string, updated time.Time) bool) error {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.json*"))
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, n := range names {
		base := filepath.Base(n)
		id := strings.TrimSuffix(strings.TrimSuffix(base, ".jsonl"), ".json")
		if id == base || seen[id] || !validID(id) {
			continue
		}
		seen[id] = true
		proj, updated, ok := peekJournal(s.path(id))
		if !ok {
			sess, err := s.read(id)
			if err != nil {
				continue
			}
			proj, updated = sess.Project, sess.Updated
		}
		if !visit(id, proj, updated) {
			return nil
		}
	}
	return nil
}

// dropEmpty removes a session this process leaves without a turn in it
// (a REPL started and quit, /new, /delete): such a session is never kept.
// It reports whether the session was removed.
func (s *store) dropEmpty(sess *session) bool {
	if sess == nil || len(sess.Turns) > 0 || sess.Parent != "" {
		return false
	}
	return s.remove(sess.ID) == nil
}

func (s *store) remove(id string) error {
	if !validID(id) {
		return errorf("%q is not a session id", id)
	}
	if err := s.lock(id); err != nil {
		return err
	}
	defer s.unlock(id)
	proj := s.projectOf(id) // for the index, before the file goes
	errNew, errOld := os.Remove(s.path(id)), os.Remove(s.oldPath(id))
	if errors.Is(errNew, fs.ErrNotExist) && errors.Is(errOld, fs.ErrNotExist) {
		return errorf("no session %s", id)
	}
	for _, err := range []error{errNew, errOld} {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	s.forgetProject(proj, id)
	// The lock file stays. Unlinking it while held is the classic race: a
	// process that opened it before the unlink takes the lock on the
	// orphaned inode once this one lets go, while a third opens a new file
	// at the name and locks that, so two hold "the" lock. A kept file costs
	// a few bytes per deleted session, and ids are never reused.
	if err := os.RemoveAll(s.snapDir(id)); err != nil {
		s.warn(fmt.Sprintf("removing the snapshots of session %s: %v; remove %s by hand", id, err, s.snapDir(id)))
	}
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

// toolCall is a call as the OpenAI wire format carries it.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// imagePart is an image attached for a vision model.
type imagePart struct {
	Mime string `json:"mime"`
	Data string `json:"data"` // base64
}

//go:noinline
func (s *store) snapDir(id string) string { return filepath.Join(s.dir, id+".snapshots") }

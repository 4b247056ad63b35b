package main

// Exactly-once turns: per session, the last turns.keep turn ids the device
// accepted, each queued, running or done, the finished ones with the answer
// their prompt got. Kept in <state>/turns/<sessionId>.json — written whole
// and atomically, merged with what is on disk first, so the service and a
// terminal working the same session in turn share one record — and read
// back at start, so a prompt whose turn id is known never runs again, not
// even after a restart. A turn found unfinished in the file that this
// process did not start was cut off by a restart: it is answered as
// interrupted, never run twice.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// turnEntry is one turn id's record.
type turnEntry struct {
	ID      string          `json:"id"`
	State   string          `json:"state"` // queued, running, done
	N       int             `json:"n,omitempty"`
	Answer  json.RawMessage `json:"answer,omitempty"`
	Updated time.Time       `json:"updated"`
}

type turnFile struct {
	Session string      `json:"session"`
	Turns   []turnEntry `json:"turns"`
}

// sessionTurns is one session's record in memory.
type sessionTurns struct {
	id      string
	entries map[string]*turnEntry
	mine    map[string]bool                   // started by this process
	waiters map[string][]chan json.RawMessage // prompts waiting for an unfinished turn
}

// turnBook holds the records of every session the process has seen.
type turnBook struct {
	mu     mutex
	books  map[string]*sessionTurns
	writes int64 // turns files written (each an fsync'd atomic rewrite): what a turn costs an SD card

	log     func(string) // where a failed write is said (the service's log); nil says nothing
	saidErr string       // the last write fault said
}

func newTurnBook() *turnBook { return &turnBook{books: map[string]*sessionTurns{}} }

func turnsDir() string { return filepath.Join(stateDir(), "turns") }

func turnsPath(id string) string { return filepath.Join(turnsDir(), id+".json") }

// readTurnFile reads a session's turns file; a missing or broken one is
// empty (a broken one is kept aside by the next write's merge failing
// quietly — it holds answers only, never the conversation).
func readTurnFile(id string) []turnEntry {
	data, err := os.ReadFile(turnsPath(id))
	if err != nil {
		return nil
	}
	var f turnFile
	if json.Unmarshal(data, &f) != nil {
		return nil
	}
	return f.Turns
}

// book gives a session's record, read from its file on first use. Called
// with b.mu held.
func (b *turnBook) book(id string) *sessionTurns {
	if st, ok := b.books[id]; ok {
		return st
	}
	st := &sessionTurns{id: id, entries: map[string]*turnEntry{}, mine: map[string]bool{}, waiters: map[string][]chan json.RawMessage{}}
	for _, e := range readTurnFile(id) {
		e := e
		st.entries[e.ID] = &e
	}
	b.books[id] = st
	return st
}

// interruptedAnswer is the answer of a turn a restart cut off.
func interruptedAnswer(turnID string) json.RawMessage {
	return rawJSON(map[string]any{"stopReason": "cancelled", "_meta": map[string]any{"lembas": map[string]any{
		"turnId": turnID, "interrupted": true, "message": linkText("interrupted")}}})
}

// keepCutPrompt stores the prompt of a turn a restart cut off while it
// was still queued — taken and recorded in the turns file, not yet in the
// session — as an interrupted turn, from the prompt sent again. A queued
// turn's prompt may also have reached the session just before the kill
// (the journal is written before the turn is marked running), so one
// whose text is the session's last prompt is not stored twice. Only an
// idle session is written: a turn running now owns the session.
func (ls *linkSession) keepCutPrompt(params json.RawMessage) {
	var p acpPromptParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var texts []string
	for _, b := range p.Prompt {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	text := strings.Join(texts, "\n\n")
	if text == "" {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	sess := ls.s.e.sess
	if len(ls.pending) > 0 || ls.compacting || (len(sess.Turns) > 0 && sess.Turns[len(sess.Turns)-1].Prompt == text) {
		return
	}
	if err := ls.s.e.recordCut(text); err != nil && ls.svc.turns.log != nil {
		ls.svc.turns.log("keeping a prompt a restart cut off: " + err.Error())
	}
}

// claim takes a prompt's turn id. A new id is recorded as queued and
// claim says fresh; a done one gives its answer; an unfinished one gives a
// channel that yields the answer when the turn ends.
func (b *turnBook) claim(session, turnID string) (fresh bool, answer json.RawMessage, wait <-chan json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.book(session)
	e, ok := st.entries[turnID]
	switch {
	case !ok:
		st.entries[turnID] = &turnEntry{ID: turnID, State: "queued", Updated: time.Now()}
		st.mine[turnID] = true
		b.saveLocked(st)
		return true, nil, nil
	case e.State == "done":
		return false, e.Answer, nil
	case !st.mine[turnID]:
		e.State, e.Answer, e.Updated = "done", interruptedReport(session, interruptedAnswer(turnID)), time.Now()
		b.saveLocked(st)
		return false, e.Answer, nil
	}
	ch := make(chan json.RawMessage, 1)
	st.waiters[turnID] = append(st.waiters[turnID], ch)
	return false, nil, ch
}

// start records a turn this process runs now as running, turn n of the
// session, in one write: a terminal's own turn (claimed and started at
// once), or the web UI's prompt into a shared session, which the service
// claimed.
func (b *turnBook) start(session, turnID string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.book(session)
	e, ok := st.entries[turnID]
	if !ok {
		e = &turnEntry{ID: turnID}
		st.entries[turnID] = e
	} else if e.State == "done" {
		return
	}
	st.mine[turnID] = true
	e.State, e.N, e.Updated = "running", n, time.Now()
	b.saveLocked(st)
}

// running marks a turn as started, as turn n of the session.
func (b *turnBook) running(session, turnID string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.book(session)
	if e, ok := st.entries[turnID]; ok && e.State != "done" {
		e.State, e.N, e.Updated = "running", n, time.Now()
		b.saveLocked(st)
	}
}

// finish records a turn's answer and hands it to every prompt waiting.
func (b *turnBook) finish(session, turnID string, answer json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.book(session)
	e, ok := st.entries[turnID]
	if !ok {
		e = &turnEntry{ID: turnID}
		st.entries[turnID] = e
	}
	e.State, e.Answer, e.Updated = "done", answer, time.Now()
	b.saveLocked(st)
	for _, ch := range st.waiters[turnID] {
		ch <- answer
	}
	delete(st.waiters, turnID)
}

// state is a turn id's state: queued, running, done, or "" when unknown.
func (b *turnBook) state(session, turnID string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.book(session).entries[turnID]; ok {
		return e.State
	}
	return ""
}

// lastDone is the turn id finished last, and the id of turn n.
func (b *turnBook) lastDone(session string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var last *turnEntry
	for _, e := range b.book(session).entries {
		if e.State == "done" && (last == nil || e.Updated.After(last.Updated)) {
			last = e
		}
	}
	if last == nil {
		return ""
	}
	return last.ID
}

// byTurn maps the session's turn numbers to their turn ids.
func (b *turnBook) byTurn(session string) map[int]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[int]string{}
	for _, e := range b.book(session).entries {
		if e.N > 0 {
			out[e.N] = e.ID
		}
	}
	return out
}

// forget drops a session's record and its file (the session was deleted).
func (b *turnBook) forget(session string) {
	b.mu.Lock()
	delete(b.books, session)
	b.mu.Unlock()
	// A turns file a failed remove leaves answers no prompt again: its
	// session is gone, and pruneTurnFiles removes it in time.
	os.Remove(turnsPath(session))
}

// saveLocked merges the record with the file and writes it back, keeping
// the newest turns.keep entries. A write that fails is not fatal: the
// turn still runs once in this process; only a restart could repeat it.
func (b *turnBook) saveLocked(st *sessionTurns) {
	for _, e := range readTurnFile(st.id) {
		if cur, ok := st.entries[e.ID]; !ok || (e.Updated.After(cur.Updated) && !st.mine[e.ID]) {
			e := e
			st.entries[e.ID] = &e
		}
	}
	list := make([]turnEntry, 0, len(st.entries))
	for _, e := range st.entries {
		list = append(list, *e)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Updated.Before(list[j].Updated) })
	if keep := theLinkSpec().Turns.Keep; len(list) > keep {
		for _, e := range list[:len(list)-keep] {
			delete(st.entries, e.ID)
		}
		list = list[len(list)-keep:]
	}
	data, _ := json.Marshal(turnFile{Session: st.id, Turns: list}) // strings, ints, times and raw JSON we made: it always encodes
	err := os.MkdirAll(turnsDir(), 0o700)
	if err == nil {
		err = writeFileAtomic(turnsPath(st.id), data, 0o600)
	}
	if err != nil {
		// Not fatal (the turn still runs once in this process), but a
		// restart could repeat it: said once per fault, in the log.
		if msg := err.Error(); msg != b.saidErr && b.log != nil {
			b.log("keeping the turns of session " + st.id + " (so a restart does not run one twice): " + msg)
		}
		b.saidErr = err.Error()
		return
	}
	b.saidErr = ""
	b.writes++
}

// fileWrites is how many turns files this book has written.
func (b *turnBook) fileWrites() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writes
}

// pruneTurnFiles removes turns files untouched for turns.prune_days.
// It also removes what a kill in the middle of an atomic write left in the
// turns and sessions folders (sweepStaleTemps).
func pruneTurnFiles(now time.Time) int {
	age := time.Duration(theLinkSpec().Turns.StaleTempsS) * time.Second
	sweepStaleTemps(turnsDir(), now, age)
	sweepStaleTemps(filepath.Join(stateDir(), "sessions"), now, age)
	days := theLinkSpec().Turns.PruneDays
	names, _ := filepath.Glob(filepath.Join(turnsDir(), "*.json"))
	n := 0
	for _, p := range names {
		if st, err := os.Stat(p); err == nil && now.Sub(st.ModTime()) > time.Duration(days)*24*time.Hour {
			if os.Remove(p) == nil {
				n++
			}
		}
	}
	return n
}

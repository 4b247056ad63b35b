package main

// store_journal.go: a session as a journal (journal.go) of records, one
// JSON object a line: {"k": kind, "i": index, "v": value}.
//
//	session   the header: every session field but the ones below (first)
//	system    the system prompt, made once
//	message i / turn i / snapshot i / request i
//	          element i of that list: i == len appends, i < len replaces
//	cut       {"l": list, "i": n}: that list is cut to its first n
//	dedupe / notes / plan   the whole value (null clears it)
//	updated   the time of the save that wrote this batch
//
// save compares the session with a shadow of what is on disk (kept per
// session while this process holds its lock) and appends only what
// differs, in one write: cuts first, then replacements, then new elements,
// so any prefix of a torn batch is still a session. Comparing is cheap —
// strings that were not reassigned share their bytes, and Go compares
// those by pointer — so a save costs the size of what changed, not of the
// session. The shadow also counts what a fresh rewrite would take (one
// record per element); when the file passes compact_factor × that, it is
// rewritten whole. Without a shadow (a first save, a session read without
// its lock, an old single-object .json file, or an append that failed)
// save rewrites the journal whole, which also converts an old file.

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
)

// sessionShadow is what this process knows to be in a session's journal.
type sessionShadow struct {
	j      *journal
	header []byte
	system string
	msgs   []message
	turns  []turn
	snaps  []snapshot
	reqs   []requestRecord
	dedupe *dedupeTable
	notes  []string
	plan   []byte

	// the size of each slot's latest record, with its newline: their sum
	// is what a fresh rewrite takes
	sizes map[string]int
	msgSz []int
	trnSz []int
	snpSz []int
	reqSz []int
}

// live is the size of a fresh rewrite of the state.
func (sh *sessionShadow) live() int64 {
	var n int64
	for _, v := range sh.sizes {
		n += int64(v)
	}
	for _, l := range [][]int{sh.msgSz, sh.trnSz, sh.snpSz, sh.reqSz} {
		for _, v := range l {
			n += int64(v)
		}
	}
	return n
}

// record builds one line without re-encoding v.
func record(kind string, i int, v []byte) []byte {
	b := make([]byte, 0, len(v)+32)
	b = append(b, `{"k":"`...)
	b = append(b, kind...)
	b = append(b, `","i":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"v":`...)
	b = append(b, v...)
	return append(b, '}')
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// every field of a session is plain data; a failure is a bug
		panic("store: encoding a session record: " + err.Error())
	}
	return b
}

// sessionHeader is the session without the parts that have records of
// their own; a field someone adds to session lands here by itself.
func sessionHeader(sess *session) []byte {
	h := *sess
	h.Messages, h.Turns, h.Snapshots, h.Requests = nil, nil, nil, nil
	h.Dedupe, h.Notes, h.Plan, h.System = nil, nil, nil, ""
	h.Updated = time.Time{}
	return mustJSON(&h)
}

// cloneMessage copies m deep enough that changing the session's message in
// place (its slices included) never changes the shadow's.
func cloneMessage(m message) message {
	m.Images = slices.Clone(m.Images)
	m.ToolCalls = slices.Clone(m.ToolCalls)
	return m
}

// sameMessage compares every field; TestSameMessageCoversEveryField fails
// when a field is added to message and not here.
func sameMessage(a, b *message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Reasoning == b.Reasoning &&
		a.ToolCallID == b.ToolCallID && a.ToolName == b.ToolName && a.ResultID == b.ResultID &&
		a.Full == b.Full && a.Status == b.Status && a.Turn == b.Turn && a.Kind == b.Kind &&
		a.Undone == b.Undone && a.Compacted == b.Compacted && a.Time == b.Time &&
		slices.Equal(a.Images, b.Images) && slices.Equal(a.ToolCalls, b.ToolCalls)
}

func cloneDedupe(d *dedupeTable) *dedupeTable {
	if d == nil {
		return nil
	}
	return &dedupeTable{Reads: slices.Clone(d.Reads), Same: slices.Clone(d.Same)}
}

func sameDedupe(a, b *dedupeTable) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.Reads, b.Reads) && slices.Equal(a.Same, b.Same)
}

// diffList appends the records that turn old into cur, and makes old,
// sizes match cur. same compares, clone copies into the shadow.
func diffList[T any](kind string, cur []T, old *[]T, sizes *[]int, same func(a, b *T) bool, clone func(T) T, out *[][]byte) {
	if len(cur) < len(*old) {
		*out = append(*out, mustJSON(map[string]any{"k": "cut", "l": kind, "i": len(cur)}))
		*old, *sizes = (*old)[:len(cur)], (*sizes)[:len(cur)]
	}
	for i := range *old {
		if !same(&cur[i], &(*old)[i]) {
			r := record(kind, i, mustJSON(&cur[i]))
			*out = append(*out, r)
			(*old)[i], (*sizes)[i] = clone(cur[i]), len(r)+1
		}
	}
	for i := len(*old); i < len(cur); i++ {
		r := record(kind, i, mustJSON(&cur[i]))
		*out = append(*out, r)
		*old, *sizes = append(*old, clone(cur[i])), append(*sizes, len(r)+1)
	}
}

func same[T comparable](a, b *T) bool { return *a == *b }
func keep[T any](v T) T               { return v }

// diff returns the records that bring the journal from sh to sess, and
// updates sh to sess. If they are not then written, the caller drops sh.
func (sh *sessionShadow) diff(sess *session) [][]byte {
	var out [][]byte
	if h := sessionHeader(sess); string(h) != string(sh.header) {
		r := record("session", 0, h)
		out, sh.header, sh.sizes["session"] = append(out, r), h, len(r)+1
	}
	if sess.System != sh.system {
		r := record("system", 0, mustJSON(sess.System))
		out, sh.system, sh.sizes["system"] = append(out, r), sess.System, len(r)+1
	}
	diffList("message", sess.Messages, &sh.msgs, &sh.msgSz, sameMessage, cloneMessage, &out)
	diffList("turn", sess.Turns, &sh.turns, &sh.trnSz, same[turn], keep[turn], &out)
	diffList("snapshot", sess.Snapshots, &sh.snaps, &sh.snpSz, same[snapshot], keep[snapshot], &out)
	diffList("request", sess.Requests, &sh.reqs, &sh.reqSz, same[requestRecord], keep[requestRecord], &out)
	if !sameDedupe(sess.Dedupe, sh.dedupe) {
		r := record("dedupe", 0, mustJSON(sess.Dedupe))
		out, sh.dedupe, sh.sizes["dedupe"] = append(out, r), cloneDedupe(sess.Dedupe), len(r)+1
	}
	if !slices.Equal(sess.Notes, sh.notes) {
		r := record("notes", 0, mustJSON(sess.Notes))
		out, sh.notes, sh.sizes["notes"] = append(out, r), slices.Clone(sess.Notes), len(r)+1
	}
	if p := mustJSON(sess.Plan); string(p) != string(sh.plan) {
		r := record("plan", 0, p)
		out, sh.plan, sh.sizes["plan"] = append(out, r), p, len(r)+1
	}
	r := record("updated", 0, mustJSON(sess.Updated))
	sh.sizes["updated"] = len(r) + 1
	return append(out, r)
}

// emptyShadow is the shadow of an empty journal: the first diff against it
// is a full snapshot of the session.
//
//go:noinline
func emptyShadow(j *journal) *sessionShadow {
	return &sessionShadow{j: j, sizes: map[string]int{}, plan: []byte("null")}
}

// snapshotRecords is the whole session as records, and a shadow of it.
func snapshotRecords(sess *session, j *journal) ([][]byte, *sessionShadow) {
	sh := emptyShadow(j)
	return sh.diff(sess), sh
}

// sessionRec is one record as read back.
type sessionRec struct {
	K string          `json:"k"`
	I int             `json:"i"`
	L string          `json:"l,omitempty"` // cut: which list
	V json.RawMessage `json:"v"`
}

// replaySession rebuilds a session from its records, and the shadow of
// what the journal holds. A record that does not fit (an index past the
// end, a value of the wrong shape, no header first) is an error: the file
// is corrupt. A kind this version does not know is skipped, so a newer
// lembas's journal still opens.
func replaySession(recs [][]byte, j *journal) (*session, *sessionShadow, error) {
	sess := &session{}
	sh := emptyShadow(j)
	bad := func(n int, err error) error {
		return errorf("%s", loopText(theStoreSpec().Texts, "bad_record", "line", n, "error", err))
	}
	for n, raw := range recs {
		var r sessionRec
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, nil, bad(n+1, err)
		}
		if n == 0 && r.K != "session" {
			return nil, nil, errorf("%s", theStoreSpec().Texts["no_header"])
		}
		size := len(raw) + 1
		var err error
		switch r.K {
		case "session":
			var h session
			if err = json.Unmarshal(r.V, &h); err == nil {
				h.Messages, h.Turns, h.Snapshots, h.Requests = sess.Messages, sess.Turns, sess.Snapshots, sess.Requests
				h.Dedupe, h.Notes, h.Plan, h.System, h.Updated = sess.Dedupe, sess.Notes, sess.Plan, sess.System, sess.Updated
				*sess = h
				sh.header, sh.sizes["session"] = sessionHeader(sess), size
			}
		case "system":
			if err = json.Unmarshal(r.V, &sess.System); err == nil {
				sh.system, sh.sizes["system"] = sess.System, size
			}
		case "message":
			err = replayElem(r, &sess.Messages, &sh.msgs, &sh.msgSz, size, cloneMessage)
		case "turn":
			err = replayElem(r, &sess.Turns, &sh.turns, &sh.trnSz, size, keep[turn])
		case "snapshot":
			err = replayElem(r, &sess.Snapshots, &sh.snaps, &sh.snpSz, size, keep[snapshot])
		case "request":
			err = replayElem(r, &sess.Requests, &sh.reqs, &sh.reqSz, size, keep[requestRecord])
		case "cut":
			err = replayCut(r, sess, sh)
		case "dedupe":
			sess.Dedupe = nil
			if err = json.Unmarshal(r.V, &sess.Dedupe); err == nil {
				sh.dedupe, sh.sizes["dedupe"] = cloneDedupe(sess.Dedupe), size
			}
		case "notes":
			sess.Notes = nil
			if err = json.Unmarshal(r.V, &sess.Notes); err == nil {
				sh.notes, sh.sizes["notes"] = slices.Clone(sess.Notes), size
			}
		case "plan":
			sess.Plan = nil
			if err = json.Unmarshal(r.V, &sess.Plan); err == nil {
				sh.plan, sh.sizes["plan"] = mustJSON(sess.Plan), size
			}
		case "updated":
			if err = json.Unmarshal(r.V, &sess.Updated); err == nil {
				sh.sizes["updated"] = size
			}
		}
		if err != nil {
			return nil, nil, bad(n+1, err)
		}
	}
	if len(recs) == 0 {
		return nil, nil, errorf("%s", theStoreSpec().Texts["no_header"])
	}
	return sess, sh, nil
}

// replayElem applies element r.I of a list: append at the end, replace
// before it.
func replayElem[T any](r sessionRec, list, shadow *[]T, sizes *[]int, size int, clone func(T) T) error {
	var v T
	if err := json.Unmarshal(r.V, &v); err != nil {
		return err
	}
	switch {
	case r.I == len(*list):
		*list, *shadow, *sizes = append(*list, v), append(*shadow, clone(v)), append(*sizes, size)
	case r.I >= 0 && r.I < len(*list):
		(*list)[r.I], (*shadow)[r.I], (*sizes)[r.I] = v, clone(v), size
	default:
		return errorf("%s %d of %d", r.K, r.I, len(*list))
	}
	return nil
}

func replayCut(r sessionRec, sess *session, sh *sessionShadow) error {
	cut := func(n int, sizes *[]int) error {
		if r.I < 0 || r.I > n {
			return errorf("cut %s to %d of %d", r.L, r.I, n)
		}
		*sizes = (*sizes)[:r.I]
		return nil
	}
	var err error
	switch r.L {
	case "message":
		if err = cut(len(sess.Messages), &sh.msgSz); err == nil {
			sess.Messages, sh.msgs = sess.Messages[:r.I], sh.msgs[:r.I]
		}
	case "turn":
		if err = cut(len(sess.Turns), &sh.trnSz); err == nil {
			sess.Turns, sh.turns = sess.Turns[:r.I], sh.turns[:r.I]
		}
	case "snapshot":
		if err = cut(len(sess.Snapshots), &sh.snpSz); err == nil {
			sess.Snapshots, sh.snaps = sess.Snapshots[:r.I], sh.snaps[:r.I]
		}
	case "request":
		if err = cut(len(sess.Requests), &sh.reqSz); err == nil {
			sess.Requests, sh.reqs = sess.Requests[:r.I], sh.reqs[:r.I]
		}
	default:
		err = errorf("cut of an unknown list %q", r.L)
	}
	return err
}

// peekJournal reads a session journal's project (its first record) and
// the time of its last save (the last "updated" record, which ends every
// save, within the file's last 4 KB) without replaying it. ok is false
// when either is not found whole: the caller reads the file instead.
func peekJournal(path string) (project string, updated time.Time, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", time.Time{}, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", time.Time{}, false
	}
	head := make([]byte, min(st.Size(), 64<<10))
	if _, err := io.ReadFull(f, head); err != nil {
		return "", time.Time{}, false
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		return "", time.Time{}, false
	}
	var h struct {
		K string `json:"k"`
		V struct {
			Project string `json:"project"`
		} `json:"v"`
	}
	if json.Unmarshal(head[:nl], &h) != nil || h.K != "session" {
		return "", time.Time{}, false
	}
	tailSize := min(st.Size(), 4096)
	tail := make([]byte, tailSize)
	if _, err := f.ReadAt(tail, st.Size()-tailSize); err != nil {
		return "", time.Time{}, false
	}
	if len(tail) == 0 || tail[len(tail)-1] != '\n' {
		return "", time.Time{}, false // a torn end: let the reader judge it
	}
	lines := bytes.Split(tail[:len(tail)-1], []byte("\n"))
	last := lines[len(lines)-1]
	if len(lines) == 1 && tailSize < st.Size() {
		return "", time.Time{}, false // the line may start before the tail
	}
	var u struct {
		K string    `json:"k"`
		V time.Time `json:"v"`
	}
	if json.Unmarshal(last, &u) != nil || u.K != "updated" {
		return "", time.Time{}, false
	}
	return h.V.Project, u.V, true
}

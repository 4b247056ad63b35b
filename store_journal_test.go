package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sessionJSON is a session as its single-object encoding: two sessions
// are the same when these are.
func sessionJSON(t testing.TB, s *session) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newTestSession makes a locked session with a few messages and a turn.
func newTestSession(t testing.TB, dir string) (*store, *session) {
	t.Helper()
	st := newStore(dir, nil)
	s, err := st.create("/proj")
	if err != nil {
		t.Fatal(err)
	}
	s.System = "you are a test"
	s.Turns = append(s.Turns, turn{N: 1, Prompt: "héllo", Status: "running", Started: time.Now()})
	for i, m := range []message{
		{Role: "user", Content: "héllo \"x\"\nnew line", Kind: "prompt", Turn: 1},
		{Role: "assistant", ToolCalls: []toolCall{{ID: "c1", Type: "function"}}, Turn: 1},
	} {
		m.Time = time.Now()
		s.Messages = append(s.Messages, m)
		if err := st.save(s); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	return st, s
}

// TestJournalTornEveryOffset cuts the journal at every byte of its last
// record (and adds the zeros a power cut can leave): the session opens
// with every earlier record, the file is cut back to them with one
// warning, and the next save appends cleanly after them.
func TestJournalTornEveryOffset(t *testing.T) {
	dir := t.TempDir()
	st, s := newTestSession(t, dir)
	beforeSize, _ := os.Stat(st.path(s.ID))
	s.Messages = append(s.Messages, message{Role: "tool", ToolCallID: "c1", Content: strings.Repeat("out ", 50), Turn: 1, Time: time.Now()})
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	st.close()
	whole, _ := os.ReadFile(st.path(s.ID))
	start := int(beforeSize.Size())
	var tails [][]byte
	for n := start + 1; n < len(whole); n++ {
		tails = append(tails, whole[:n])
	}
	tails = append(tails, append(copyBytes(whole[:start]), 0, 0, 0, 0), append(copyBytes(whole[:start]), "{\"k\":\"mess\x00\x00\n"...))
	for i, data := range tails {
		os.WriteFile(st.path(s.ID), data, 0o600)
		var warned []string
		other := newStore(dir, func(w string) { warned = append(warned, w) })
		got, err := other.open(s.ID)
		if err != nil {
			t.Fatalf("tail %d (%d bytes): %v", i, len(data), err)
		}
		// A cut right after a record's newline (between two records of
		// one save) leaves only whole records: nothing to warn about.
		clean := data[len(data)-1] == '\n' && bytes.IndexByte(data, 0) < 0 && json.Valid(data[bytes.LastIndexByte(data[:len(data)-1], '\n')+1:len(data)-1])
		if clean && len(warned) != 0 || !clean && (len(warned) != 1 || !strings.Contains(warned[0], "was cut off")) {
			t.Fatalf("tail %d: warnings %q", i, warned)
		}
		// open repairs the dangling tool call: compare what came before.
		if len(got.Messages) < 2 || got.Messages[1].ToolCalls[0].ID != "c1" || got.Messages[0].Content != s.Messages[0].Content {
			t.Fatalf("tail %d: messages %+v", i, got.Messages)
		}
		after, _ := os.ReadFile(st.path(s.ID))
		if !bytes.HasPrefix(after, whole[:start]) {
			t.Fatalf("tail %d: the whole records were changed", i)
		}
		got.Messages = append(got.Messages, message{Role: "user", Content: "again", Turn: 1})
		if err := other.save(got); err != nil {
			t.Fatal(err)
		}
		other.close()
		again, err := newStore(dir, nil).read(s.ID)
		if err != nil || sessionJSON(t, again) != sessionJSON(t, got) {
			t.Fatalf("tail %d: after a save: %v", i, err)
		}
	}
}

func copyBytes(b []byte) []byte { return append([]byte(nil), b...) }

// TestJournalTornNoRepairWithoutLock: a reader that does not hold the
// lock (sessions list while a turn runs) never cuts the file: the tail
// may be another process's append in progress.
func TestJournalTornNoRepairWithoutLock(t *testing.T) {
	dir := t.TempDir()
	st, s := newTestSession(t, dir)
	f, _ := os.OpenFile(st.path(s.ID), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte(`{"k":"message","i":2,"v":{"role":"us`))
	f.Close()
	size, _ := os.Stat(st.path(s.ID))
	var warned []string
	other := newStore(dir, func(w string) { warned = append(warned, w) })
	got, err := other.read(s.ID)
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("read: %v %+v", err, got)
	}
	if now, _ := os.Stat(st.path(s.ID)); now.Size() != size.Size() || len(warned) != 0 {
		t.Errorf("an unlocked read changed the file (%d → %d bytes) or warned %q", size.Size(), now.Size(), warned)
	}
}

// TestJournalCorruptMiddleSetAside: a bad line that is not the last is
// corruption: the file is set aside and reported, never silently cut.
func TestJournalCorruptMiddleSetAside(t *testing.T) {
	dir := t.TempDir()
	st, s := newTestSession(t, dir)
	st.close()
	data, _ := os.ReadFile(st.path(s.ID))
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for _, bad := range []string{`{"k":"message","i":`, `{"k":"message","i":99,"v":{}}`, `{"k":"turn","i":0,"v":"not a turn"}`} {
		mid := append(copyBytes(bytes.Join(lines[:2], []byte("\n"))), '\n')
		mid = append(append(mid, bad...), '\n')
		mid = append(append(mid, bytes.Join(lines[2:], []byte("\n"))...), '\n')
		os.WriteFile(st.path(s.ID), mid, 0o600)
		var warned []string
		other := newStore(dir, func(w string) { warned = append(warned, w) })
		if _, err := other.open(s.ID); err == nil || !strings.Contains(err.Error(), "is corrupt and was set aside") {
			t.Fatalf("%s: open %v", bad, err)
		}
		other.close()
		if len(warned) != 1 || !strings.Contains(warned[0], "line 3") {
			t.Errorf("%s: warnings %q", bad, warned)
		}
	}
	m, _ := filepath.Glob(filepath.Join(dir, "sessions", s.ID+".jsonl.corrupt-*"))
	if len(m) != 3 {
		t.Errorf("%d files set aside, want 3", len(m))
	}
}

// TestSessionOldFormatConverted reads a session written by the
// single-object store (testdata/store/, made by the code before the
// journal), and converts it on the next save: same content, .json gone.
func TestSessionOldFormatConverted(t *testing.T) {
	old, _ := filepath.Glob("testdata/store/*.json")
	if len(old) != 1 {
		t.Fatalf("fixtures %v", old)
	}
	data, err := os.ReadFile(old[0])
	if err != nil {
		t.Fatal(err)
	}
	var want session
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Messages) < 10 || len(want.Requests) == 0 || len(want.Snapshots) == 0 || want.Dedupe == nil {
		t.Fatalf("the fixture lacks parts it should test: %d messages", len(want.Messages))
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sessions"), 0o700)
	os.WriteFile(filepath.Join(dir, "sessions", filepath.Base(old[0])), data, 0o600)
	st := newStore(dir, nil)
	if all, err := st.list(); err != nil || len(all) != 1 || all[0].ID != want.ID {
		t.Fatalf("list: %v %v", all, err)
	}
	s, err := st.open(want.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sessionJSON(t, s) != sessionJSON(t, &want) {
		t.Fatal("the old session read differently")
	}
	s.Messages = append(s.Messages, message{Role: "user", Content: "next", Kind: "prompt", Turn: 2, Time: time.Now()})
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	st.close()
	if _, err := os.Stat(st.oldPath(want.ID)); err == nil {
		t.Error("the old file is still there after the conversion")
	}
	got, err := newStore(dir, nil).read(want.ID)
	if err != nil || sessionJSON(t, got) != sessionJSON(t, s) {
		t.Fatalf("after conversion: %v", err)
	}
	if all, _ := st.list(); len(all) != 1 {
		t.Errorf("list after conversion: %d sessions", len(all))
	}
	if err := st.remove(want.ID); err != nil {
		t.Fatal(err)
	}
	// The lock file stays (store.remove says why); nothing else does.
	if m, _ := filepath.Glob(filepath.Join(dir, "sessions", want.ID+"*")); len(m) != 1 || !strings.HasSuffix(m[0], ".lock") {
		t.Errorf("left after remove: %v", m)
	}
}

// TestJournalCompactionKeepsEveryRecord drives a session through random
// changes of every kind — new and changed messages, turns, cuts, notes,
// dedupe, plan, header — saving after each; after every save a second
// store reading the file must see exactly the session in memory, and the
// journal must have been compacted along the way.
func TestJournalCompactionKeepsEveryRecord(t *testing.T) {
	dir := t.TempDir()
	st, s := newTestSession(t, dir)
	rng := rand.New(rand.NewSource(9))
	compactions := 0
	var last int64
	for i := 0; i < 300; i++ {
		switch rng.Intn(10) {
		case 0, 1, 2:
			s.Messages = append(s.Messages, message{Role: "tool", ToolCallID: fmt.Sprint(i), Content: strings.Repeat("x", rng.Intn(400)), Turn: len(s.Turns), Time: time.Now()})
		case 3:
			if len(s.Messages) > 0 {
				m := &s.Messages[rng.Intn(len(s.Messages))]
				m.Compacted = !m.Compacted
			}
		case 4:
			s.Turns = append(s.Turns, turn{N: len(s.Turns) + 1, Prompt: fmt.Sprint("p", i), Status: "running"})
		case 5:
			s.Turns[len(s.Turns)-1].Steps++
			s.Turns[len(s.Turns)-1].Answer = fmt.Sprint("a", i)
		case 6:
			s.Notes = append(s.Notes, fmt.Sprint("note", i))
			if rng.Intn(3) == 0 {
				s.Notes = nil
			}
		case 7:
			if s.Dedupe == nil {
				s.Dedupe = &dedupeTable{}
			}
			s.Dedupe.Reads = append(s.Dedupe.Reads, readEntry{Key: fmt.Sprint(i), Path: "a.go"})
		case 8:
			s.Plan = &plan{Title: fmt.Sprint("plan", i)}
			s.Title = fmt.Sprint("title ", i)
			s.Requests = append(s.Requests, requestRecord{Turn: len(s.Turns), Kind: "step", Bytes: i})
		case 9:
			if len(s.Messages) > 3 && rng.Intn(4) == 0 {
				s.Messages = s.Messages[:len(s.Messages)-2]
			} else if len(s.Messages) > 0 {
				s.Messages[len(s.Messages)-1].ToolCalls = append(s.Messages[len(s.Messages)-1].ToolCalls, toolCall{ID: fmt.Sprint("t", i)})
			}
		}
		if err := st.save(s); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(st.path(s.ID))
		if fi.Size() < last {
			compactions++
		}
		last = fi.Size()
		got, err := newStore(dir, nil).read(s.ID)
		if err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
		if a, b := sessionJSON(t, got), sessionJSON(t, s); a != b {
			t.Fatalf("save %d: read back differs:\n got %.300s\nwant %.300s", i, a, b)
		}
	}
	if compactions == 0 {
		t.Error("the journal was never compacted")
	}
	// Compacted or not, the file stays within the factor of a fresh rewrite.
	st.close()
	fi, _ := os.Stat(st.path(s.ID))
	fresh, _ := snapshotRecords(s, nil)
	n := 0
	for _, r := range fresh {
		n += len(r) + 1
	}
	if f := int64(theStoreSpec().Numbers.CompactFactor); fi.Size() > f*int64(n) && fi.Size() > int64(theStoreSpec().Numbers.CompactMinBytes) {
		t.Errorf("journal %d bytes, a fresh one %d: over the factor %d", fi.Size(), n, f)
	}
}

// TestSameMessageCoversEveryField sets each field of a message in turn: a
// change sameMessage does not see would never reach the disk.
func TestSameMessageCoversEveryField(t *testing.T) {
	typ := reflect.TypeOf(message{})
	for i := 0; i < typ.NumField(); i++ {
		var a, b message
		f := reflect.ValueOf(&b).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int:
			f.SetInt(1)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Unix(1, 0)))
		default:
			t.Fatalf("message.%s: a kind of field this test does not know; teach it and sameMessage", typ.Field(i).Name)
		}
		if sameMessage(&a, &b) {
			t.Errorf("sameMessage misses message.%s", typ.Field(i).Name)
		}
	}
}

// TestHelperJournalWriter is not a test: TestKillNineMidAppend runs the
// test binary as this helper, which appends big messages as fast as it
// can and prints how many are saved after each save returns.
func TestHelperJournalWriter(t *testing.T) {
	dir := os.Getenv("LEMBAS_JOURNAL_HELPER")
	if dir == "" {
		t.Skip("a helper process for TestKillNineMidAppend")
	}
	st := newStore(dir, nil)
	var s *session
	var err error
	if id := os.Getenv("LEMBAS_JOURNAL_ID"); id != "" {
		s, err = st.open(id)
	} else {
		s, err = st.create("/proj")
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("id", s.ID, len(s.Messages))
	big := strings.Repeat("0123456789abcdef", 4096) // 64 KB: a write the kill can land in
	for i := 0; ; i++ {
		s.Messages = append(s.Messages, message{Role: "tool", Content: fmt.Sprint(len(s.Messages), big), Time: time.Now()})
		if i%7 == 0 && len(s.Messages) > 1 {
			s.Messages[len(s.Messages)-2].Compacted = true // a replacement in the same batch
		}
		if err := st.save(s); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("saved", len(s.Messages))
	}
}

// TestKillNineMidAppend kills a process appending to a session with
// SIGKILL, again and again, at a different count each time: every message
// a save had returned for must be there, the file must open (its torn
// tail cut off), and the next process must go on appending to it. While
// the writer runs, a second process's open is refused by the lock.
func TestKillNineMidAppend(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	dir := t.TempDir()
	id := ""
	for round := 0; round < 12; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperJournalWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LEMBAS_JOURNAL_HELPER="+dir, "LEMBAS_JOURNAL_ID="+id)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		saved := 0
		want := 3 + round*5
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) >= 2 && f[0] == "id" {
				id = f[1]
				if _, err := newStore(dir, nil).open(id); err == nil || !strings.Contains(err.Error(), "is open in another lembas process") {
					t.Errorf("round %d: a second process opened the session: %v", round, err)
				}
			}
			if len(f) == 2 && f[0] == "saved" {
				saved, _ = strconv.Atoi(f[1])
				if saved >= want {
					break
				}
			}
			if len(f) > 0 && f[0] == "error" {
				t.Fatalf("round %d: helper: %s", round, sc.Text())
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if saved < want {
			t.Fatalf("round %d: the helper stopped at %d saves", round, saved)
		}
		st := newStore(dir, nil)
		s, err := st.open(id)
		if err != nil {
			t.Fatalf("round %d: open after kill -9: %v", round, err)
		}
		if len(s.Messages) < saved {
			t.Fatalf("round %d: %d messages saved, %d on disk", round, saved, len(s.Messages))
		}
		for i, m := range s.Messages {
			if !strings.HasPrefix(m.Content, strconv.Itoa(i)) {
				t.Fatalf("round %d: message %d holds %.20q", round, i, m.Content)
			}
		}
		st.close()
	}
	if all, err := newStore(dir, nil).list(); err != nil || len(all) != 1 {
		t.Errorf("list after the kills: %d %v", len(all), err)
	}
}

// FuzzJournal feeds any bytes to the journal reader and the session
// replay: an error or a session, never a panic; what the reader keeps
// is whole JSON, and reading the repaired file again keeps the same.
func FuzzJournal(f *testing.F) {
	dir := f.TempDir()
	st, s := newTestSession(f, dir)
	st.close()
	whole, _ := os.ReadFile(st.path(s.ID))
	f.Add(whole)
	f.Add(whole[:len(whole)-7])
	f.Add([]byte(`{"k":"session","i":0,"v":{"id":"x"}}` + "\n" + `{"k":"cut","l":"message","i":-1}` + "\n"))
	f.Add([]byte("\n\n{}\n\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, n, err := splitJournal(data)
		if err != nil {
			return
		}
		if n > len(data) {
			t.Fatalf("whole %d of %d bytes", n, len(data))
		}
		for _, r := range recs {
			if !json.Valid(r) {
				t.Fatalf("kept a bad record %q", r)
			}
		}
		again, n2, err := splitJournal(data[:n])
		if err != nil || n2 != n || len(again) != len(recs) {
			t.Fatalf("the repaired file reads differently: %v %d %d", err, n2, n)
		}
		replaySession(recs, nil)
	})
}

func init() {
	conformanceRunners["journal"] = func(input json.RawMessage) (any, error) {
		var in struct {
			File   string `json:"file"`
			Replay bool   `json:"replay"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "journal-conf")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		p := filepath.Join(dir, "s.jsonl")
		os.WriteFile(p, []byte(in.File), 0o600)
		warned := false
		j, recs, err := loadJournal(p, 0o600, true, func(string) { warned = true })
		var jerr *journalError
		if errors.As(err, &jerr) {
			return map[string]any{"corrupt_line": jerr.Line}, nil
		}
		if err != nil {
			return nil, err
		}
		fi, _ := os.Stat(p)
		if fi.Size() != j.size {
			return nil, fmt.Errorf("file %d bytes, journal thinks %d", fi.Size(), j.size)
		}
		out := map[string]any{"records": len(recs), "kept_bytes": fi.Size(), "warned": warned}
		if in.Replay {
			s, _, err := replaySession(recs, j)
			if err != nil {
				out["error"] = err.Error()
			} else {
				msgs := []string{}
				for _, m := range s.Messages {
					t := m.Role + ": " + m.Content
					if m.Undone {
						t += " (undone)"
					}
					msgs = append(msgs, t)
				}
				out["messages"] = msgs
			}
		}
		return out, nil
	}
}

// TestLatestPeeks: -c's latest finds the newest session of the project by
// peeking at each journal's ends, agreeing with a full read; a torn end
// or the older format fall back to reading whole.
func TestLatestPeeks(t *testing.T) {
	dir := t.TempDir()
	st := newStore(dir, nil)
	var ids []string
	for i, proj := range []string{"/a", "/b", "/a", "/b"} {
		s, err := st.create(proj)
		if err != nil {
			t.Fatal(err)
		}
		s.Messages = append(s.Messages, message{Role: "user", Content: strings.Repeat("m", 100*i), Time: time.Now()})
		s.Turns = append(s.Turns, turn{N: 1, Status: "done"}) // -c passes over a session with no turn
		st.save(s)
		ids = append(ids, s.ID)
		p, u, ok := peekJournal(st.path(s.ID))
		if !ok || p != proj || !u.Equal(s.Updated) {
			t.Errorf("peek %d: %q %v %v, want %q %v", i, p, u, ok, proj, s.Updated)
		}
	}
	st.close()
	if got, err := st.latest("/a"); err != nil || got.ID != ids[2] {
		t.Fatalf("latest /a: %v %v", got, err)
	}
	// The newest of /a gets a torn end: still found, through a whole read.
	f, _ := os.OpenFile(st.path(ids[2]), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"k":"message","i":1,"v":{"ro`)
	f.Close()
	if _, _, ok := peekJournal(st.path(ids[2])); ok {
		t.Error("peeked through a torn end")
	}
	if got, err := st.latest("/a"); err != nil || got.ID != ids[2] {
		t.Fatalf("latest /a with a torn end: %v %v", got, err)
	}
	// A save with a record longer than the tail read: its updated record
	// still ends the file.
	if err := newStoreSave(t, dir, ids[0], func(s *session) { s.Notes = []string{strings.Repeat("n", 9000)} }); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := peekJournal(st.path(ids[0])); !ok {
		t.Error("a save ends with its short updated record: peek should find it past a 9 KB record")
	}
	if got, err := newStore(dir, nil).latest("/a"); err != nil || got.ID != ids[0] {
		t.Fatalf("latest /a after a long save: %v %v", got, err)
	}
	old, _ := filepath.Glob("testdata/store/*.json")
	data, _ := os.ReadFile(old[0])
	var was session
	json.Unmarshal(data, &was)
	os.WriteFile(filepath.Join(dir, "sessions", filepath.Base(old[0])), data, 0o600)
	if got, err := newStore(dir, nil).latest(was.Project); err != nil || got.ID != was.ID {
		t.Fatalf("latest of the older format: %v %v", got, err)
	}
	if _, err := newStore(dir, nil).latest("/c"); err == nil || !strings.Contains(err.Error(), "no session of /c") {
		t.Errorf("latest of a project without sessions: %v", err)
	}
}

// newStoreSave opens a session in a store of its own, changes it and saves.
func newStoreSave(t *testing.T, dir, id string, change func(*session)) error {
	t.Helper()
	st := newStore(dir, nil)
	defer st.close()
	s, err := st.open(id)
	if err != nil {
		return err
	}
	change(s)
	return st.save(s)
}

// TestSaveRewritesAFileItDoesNotKnow: when the journal is not what this
// process last left (removed, or grown by someone else), a save writes it
// whole instead of appending to a file without its header.
func TestSaveRewritesAFileItDoesNotKnow(t *testing.T) {
	dir := t.TempDir()
	st, s := newTestSession(t, dir)
	defer st.close()
	os.Remove(st.path(s.ID))
	s.Notes = []string{"after the file went"}
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(st.path(s.ID), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"k":"notes","i":0,"v":["someone else"]}` + "\n")
	f.Close()
	s.Title = "mine"
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	got, err := newStore(dir, nil).read(s.ID)
	if err != nil || sessionJSON(t, got) != sessionJSON(t, s) {
		t.Fatalf("read back: %v", err)
	}
}

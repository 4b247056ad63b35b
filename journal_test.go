package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryAfterTornLine: a history file whose last line was torn (a
// REPL killed mid-append) loses only that line; the next line typed is
// kept whole, and so is everything before.
func TestHistoryAfterTornLine(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	h := openHistory()
	h.Add("first")
	h.Add("second")
	f, _ := os.OpenFile(h.path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`"thi`)
	f.Close()
	h = openHistory()
	h.Add("fourth")
	again := openHistory()
	var got []string
	for i := again.Len() - 1; i >= 0; i-- {
		got = append(got, again.At(i))
	}
	if strings.Join(got, ",") != "first,second,fourth" {
		t.Errorf("history %q", got)
	}
}

// TestJournalAppendKeepsOthersLines: an append through a journal that does
// not know the file's size (a second writer, like another REPL sharing the
// history) goes after what is there and never cuts it.
func TestJournalAppendKeepsOthersLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.jsonl")
	a, b := &journal{path: p, perm: 0o600}, &journal{path: p, perm: 0o600}
	if err := a.append([]byte(`"a1"`), []byte(`"a2"`)); err != nil {
		t.Fatal(err)
	}
	if err := b.append([]byte(`"b1"`)); err != nil {
		t.Fatal(err)
	}
	if err := b.append([]byte("\"bad\nline\"")); err == nil {
		t.Error("a record with a newline was appended")
	}
	_, recs, err := loadJournal(p, 0o600, true, nil)
	if err != nil || len(recs) != 3 || string(recs[2]) != `"b1"` || b.size != 15 {
		t.Errorf("records %q, err %v, size %d", recs, err, b.size)
	}
}

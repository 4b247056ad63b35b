package main

import (
	"strings"
	"testing"
)

func TestRuneWidth(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"abc", 3}, {"日本語", 6}, {"ｱ", 1}, {"Ａ", 2}, {"한국", 4}, {"e\u0301", 1}, {"🙂", 2}, {"👍🏽", 4},
		{"a\u200bb", 2}, {"\u2728", 2}, {"→", 1}, {"✓", 1}, {"\t", 0}, {"ä", 1}, {"\U00020000", 2},
	} {
		if got := stringWidth(c.s); got != c.want {
			t.Errorf("stringWidth(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestWrapWords(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"no lembas service runs here to share through", 20, "no lembas service\nruns here to share\nthrough"},
		{"short", 20, "short"},
		{"a verylongwordthatdoesnotfit b", 10, "a\nverylongwo\nrdthatdoes\nnotfit b"},
		{"日本語 の 文章です", 8, "日本語\nの\n文章です"},
		{"two\nlines here", 6, "two\nlines\nhere"},
	} {
		got := wrapWords(c.in, c.width)
		if got != c.want {
			t.Errorf("wrapWords(%q, %d) =\n%s\nwant\n%s", c.in, c.width, got, c.want)
		}
		for _, l := range strings.Split(got, "\n") {
			if stringWidth(l) > c.width {
				t.Errorf("line %q is wider than %d", l, c.width)
			}
		}
	}
}

// The editor counts columns: after 日本語 the cursor is six columns past
// the prompt, Left steps over one wide character, and a letter typed
// there lands between 本 and 語, as the screen shows it.
func TestLineEditorWide(t *testing.T) {
	out := newSyncBuffer()
	ed := newLineEditor(out, 40)
	ed.setPrompt("› ", true)
	ed.show()
	for _, r := range "日本語" {
		ed.edit(r)
	}
	sc := screenOf(out.String(), 40)
	if row := sc.cursorRow(); row != "› 日本語" || sc.col != 8 {
		t.Errorf("after typing: %q at column %d, want column 8", row, sc.col)
	}
	ed.edit(keyLeft)
	ed.edit('x')
	sc = screenOf(out.String(), 40)
	if row := sc.cursorRow(); row != "› 日本x語" || sc.col != 7 {
		t.Errorf("after Left and x: %q at column %d, want column 7", row, sc.col)
	}
	ed.setLine("")
	for _, r := range "ae\u0301b" {
		ed.edit(r)
	}
	ed.edit(keyLeft)
	ed.edit(keyLeft) // over b, then over é as one character
	ed.edit('>')
	sc = screenOf(out.String(), 40)
	if row := sc.cursorRow(); row != "› a>e\u0301b" || sc.col != 4 {
		t.Errorf("with a combining mark: %q at column %d, want column 4", row, sc.col)
	}
	// A line wider than the row scrolls by columns: the cursor stays on
	// the row, and never past its last column.
	ed.setLine("")
	for i := 0; i < 30; i++ {
		ed.edit('漢')
	}
	sc = screenOf(out.String(), 40)
	if sc.col > 39 || stringWidth(sc.cursorRow()) > 40 {
		t.Errorf("a long wide line: %q at column %d", sc.cursorRow(), sc.col)
	}
}

func TestVTScreenWide(t *testing.T) {
	s := screenOf("ab日本\r\n", 5)
	if got := s.text(); got != "ab日\n本\n" {
		t.Errorf("wide wrap: %q", got)
	}
}

// A streamed answer wraps by columns: ten wide characters fill a row of
// twenty, and the eleventh starts the next row.
func TestStreamWrapsWide(t *testing.T) {
	var out strings.Builder
	r := &repl{out: &out, width: 20}
	r.mu.Lock()
	r.streamLocked("text", "日本語の文章を書いています。これは長い")
	r.streamLocked("text", " ok\n")
	r.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if stringWidth(l) > 20 {
			t.Errorf("a row of %d columns: %q", stringWidth(l), l)
		}
	}
	if got := out.String(); !strings.HasPrefix(got, "日本語の文章を書いて\n") {
		t.Errorf("streamed:\n%s", got)
	}
}

// TestFoldResultMore: a folded result says how many lines it did not
// show, "1 more line" for one (it said "1 more lines").
func TestFoldResultMore(t *testing.T) {
	n := theReplSpec().Numbers.FoldLines
	r := &repl{width: 80}
	for extra, want := range map[int]string{1: "… 1 more line · recall #0004", 2: "… 2 more lines · recall #0004", 0: "#0004"} {
		out := strings.Repeat("x\n", n+extra)
		got := r.foldResult(&toolEvent{Output: out, ResultID: "0004"})
		if !strings.HasSuffix(got, "└ "+want) {
			t.Errorf("%d lines past the fold: %q, want it to end %q", extra, got, want)
		}
	}
}

package main

// A small VT100 screen for tests: what a terminal would show after the
// bytes the REPL wrote, so tests check where things land on the screen
// (the prompt at column 0 after a turn, typing kept out of the answer),
// not only what the stream carried. It keeps every row that scrolled
// off, like a terminal's scrollback, and knows the few controls lembas
// writes: CR, LF, BS, CSI A/B/C/D/G/H/K/J, and it ignores SGR and modes.

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

type vtScreen struct {
	width    int
	rows     [][]rune
	row, col int
	wrap     bool              // the cursor is past the last column: the next rune wraps
	marks    map[[2]int]string // combining marks after the character in a cell
}

func newVTScreen(width int) *vtScreen {
	return &vtScreen{width: width, rows: [][]rune{{}}}
}

func (s *vtScreen) ensure() {
	for s.row >= len(s.rows) {
		s.rows = append(s.rows, []rune{})
	}
}

// put draws r at the cursor as a terminal does: a wide character takes
// two cells (the second holds wideTail), wrapping first when only one is
// left; a combining mark or zero-width character takes none and joins the
// cell before it (kept in marks, so the text still reads "é").
func (s *vtScreen) put(r rune) {
	w := runeWidth(r)
	if r == '\t' {
		w = 1
	}
	if w == 0 {
		if s.marks == nil {
			s.marks = map[[2]int]string{}
		}
		at := [2]int{s.row, max(0, s.col-1)}
		if s.wrap {
			at[1] = s.col
		}
		s.marks[at] += string(r)
		return
	}
	if s.wrap || (w == 2 && s.col == s.width-1) {
		s.row++
		s.col, s.wrap = 0, false
	}
	s.ensure()
	line := s.rows[s.row]
	for len(line) < s.col+w {
		line = append(line, ' ')
	}
	line[s.col] = r
	delete(s.marks, [2]int{s.row, s.col})
	if w == 2 {
		line[s.col+1] = wideTail
	}
	s.rows[s.row] = line
	if s.col+w >= s.width {
		s.col, s.wrap = s.width-1, true
	} else {
		s.col += w
	}
}

// wideTail fills the second cell of a wide character.
const wideTail = rune(0xe0ff)

// feed interprets bytes written to the terminal.
func (s *vtScreen) feed(b []byte) {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b && i+1 < len(b) && b[i+1] == '[':
			j := i + 2
			for j < len(b) && (b[j] < 0x40 || b[j] > 0x7e) {
				j++
			}
			if j >= len(b) {
				return
			}
			s.csi(string(b[i+2:j]), b[j])
			i = j + 1
		case c == 0x1b:
			i += 2
		case c == '\r':
			s.col, s.wrap = 0, false
			i++
		case c == '\n':
			s.row++
			s.wrap = false
			s.ensure()
			i++
		case c == '\b':
			if s.col > 0 {
				s.col--
			}
			s.wrap = false
			i++
		case c == '\t':
			s.put('\t') // kept as itself, so tests can name it
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			s.put(r)
			i += n
		}
	}
}

func (s *vtScreen) csi(params string, final byte) {
	if strings.HasPrefix(params, "?") {
		return // modes: bracketed paste, cursor shown
	}
	n := 1
	if v, err := strconv.Atoi(strings.Split(params, ";")[0]); err == nil {
		n = v
	}
	s.wrap = false
	switch final {
	case 'A':
		s.row = max(0, s.row-n)
	case 'B':
		s.row += n
		s.ensure()
	case 'C':
		s.col = min(s.width-1, s.col+n)
	case 'D':
		s.col = max(0, s.col-n)
	case 'G':
		s.col = min(s.width-1, max(0, n-1))
	case 'K':
		s.ensure()
		cut := s.col
		if params == "2" {
			cut = 0
		}
		if len(s.rows[s.row]) > cut {
			s.rows[s.row] = s.rows[s.row][:cut]
		}
		for at := range s.marks {
			if at[0] == s.row && at[1] >= cut {
				delete(s.marks, at)
			}
		}
	case 'J':
		s.ensure()
		if len(s.rows[s.row]) > s.col {
			s.rows[s.row] = s.rows[s.row][:s.col]
		}
		s.rows = s.rows[:s.row+1]
	}
}

// text is every row, trailing blanks cut, one a line.
func (s *vtScreen) text() string {
	var b strings.Builder
	for i := range s.rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.rowText(i))
	}
	return b.String()
}

// rowText is row i as text: wide characters once, marks after their cell.
func (s *vtScreen) rowText(i int) string {
	var b strings.Builder
	for c, r := range s.rows[i] {
		if r != wideTail {
			b.WriteRune(r)
		}
		b.WriteString(s.marks[[2]int{i, c}])
	}
	return strings.TrimRight(b.String(), " ")
}

// cursorRow is the row the cursor is on, as text.
func (s *vtScreen) cursorRow() string {
	s.ensure()
	return s.rowText(s.row)
}

// screenOf renders what a terminal of the width shows after out.
func screenOf(out string, width int) *vtScreen {
	s := newVTScreen(width)
	s.feed([]byte(out))
	return s
}

func TestVTScreen(t *testing.T) {
	s := screenOf("hello\r\n› \x1b[K\r\x1b[2C"+"\r\x1b[K\x1b[A\r\x1b[5C world\r\n› ab\x1b[K\r\x1b[4C", 20)
	if got := s.text(); got != "hello world\n› ab" {
		t.Errorf("screen:\n%s", got)
	}
	if s.col != 4 || s.row != 1 {
		t.Errorf("cursor at %d,%d", s.row, s.col)
	}
	s = screenOf("abcdefghij\r\n", 5)
	if got := s.text(); got != "abcde\nfghij\n" {
		t.Errorf("wrapped: %q", got)
	}
}

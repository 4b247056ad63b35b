package main

// text_width.go: how many columns a terminal gives a character, and
// wrapping text at word boundaries to a width (the ground). A terminal
// gives East Asian Wide and Fullwidth characters and most emoji two
// columns, combining marks and zero-width characters none, and everything
// else one; an editor that counted runes put its cursor in the wrong
// place after `日本語` or `é` typed as e and a combining accent.
// The wide ranges below are the Wide and Fullwidth blocks of Unicode's
// EastAsianWidth.txt, condensed to whole blocks, and the emoji blocks
// terminals draw wide; the zero-width ones are Unicode's own categories.

import (
	"strings"
	"unicode"
)

// wideRunes is the two-column characters: Hangul Jamo, the CJK blocks,
// Hangul syllables, the fullwidth forms, the wide symbols and the emoji.
var wideRunes = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x1100, 0x115f, 1}, // Hangul Jamo initial consonants
		{0x231a, 0x231b, 1}, // watch, hourglass
		{0x2329, 0x232a, 1}, // angle brackets
		{0x23e9, 0x23ec, 1},
		{0x23f0, 0x23f3, 3},
		{0x25fd, 0x25fe, 1},
		{0x2614, 0x2615, 1},
		{0x2648, 0x2653, 1}, // zodiac
		{0x267f, 0x2693, 20},
		{0x26a1, 0x26a1, 1},
		{0x26aa, 0x26ab, 1},
		{0x26bd, 0x26be, 1},
		{0x26c4, 0x26c5, 1},
		{0x26ce, 0x26d4, 6},
		{0x26ea, 0x26ea, 1},
		{0x26f2, 0x26f3, 1},
		{0x26f5, 0x26fa, 5},
		{0x26fd, 0x2705, 8},
		{0x270a, 0x270b, 1},
		{0x2728, 0x274c, 36},
		{0x274e, 0x274e, 1},
		{0x2753, 0x2755, 1},
		{0x2757, 0x2757, 1},
		{0x2795, 0x2797, 1},
		{0x27b0, 0x27bf, 15},
		{0x2b1b, 0x2b1c, 1},
		{0x2b50, 0x2b55, 5},
		{0x2e80, 0x303e, 1}, // CJK radicals, Kangxi, CJK symbols and punctuation
		{0x3041, 0x33ff, 1}, // kana, bopomofo, Hangul compatibility, CJK compatibility
		{0x3400, 0x4dbf, 1}, // CJK extension A
		{0x4e00, 0x9fff, 1}, // CJK unified ideographs
		{0xa000, 0xa4cf, 1}, // Yi
		{0xa960, 0xa97f, 1}, // Hangul Jamo extended A
		{0xac00, 0xd7a3, 1}, // Hangul syllables
		{0xf900, 0xfaff, 1}, // CJK compatibility ideographs
		{0xfe10, 0xfe19, 1}, // vertical forms
		{0xfe30, 0xfe6f, 1}, // CJK compatibility forms, small forms
		{0xff00, 0xff60, 1}, // fullwidth forms
		{0xffe0, 0xffe6, 1},
	},
	R32: []unicode.Range32{
		{0x16fe0, 0x16fe4, 1},
		{0x17000, 0x18cff, 1}, // Tangut
		{0x1aff0, 0x1b2ff, 1}, // kana supplement and extensions
		{0x1f004, 0x1f0cf, 0xcb},
		{0x1f18e, 0x1f18e, 1},
		{0x1f191, 0x1f19a, 1},
		{0x1f200, 0x1f202, 1},
		{0x1f210, 0x1f23b, 1},
		{0x1f240, 0x1f248, 1},
		{0x1f250, 0x1f251, 1},
		{0x1f260, 0x1f265, 1},
		{0x1f300, 0x1f64f, 1}, // pictographs, emoticons
		{0x1f680, 0x1f6ff, 1}, // transport and map symbols
		{0x1f7e0, 0x1f7eb, 1},
		{0x1f90c, 0x1f9ff, 1}, // supplemental symbols and pictographs
		{0x1fa70, 0x1faff, 1}, // symbols and pictographs extended A
		{0x20000, 0x2fffd, 1}, // CJK extensions B–F
		{0x30000, 0x3fffd, 1}, // CJK extension G
	},
}

// runeWidth is the columns a terminal gives r: 0 for controls, combining
// marks and zero-width characters (ZWJ, variation selectors, Hangul's
// medial vowels and final consonants), 2 for wide ones, else 1.
func runeWidth(r rune) int {
	switch {
	case r == 0 || unicode.IsControl(r):
		return 0
	case r < 0x300:
		return 1 // ASCII and Latin-1: the common case, no table
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) || (r >= 0x1160 && r <= 0x11ff):
		return 0
	case unicode.Is(wideRunes, r):
		return 2
	}
	return 1
}

// stringWidth is the columns s takes (no escape sequences in it).
//
//go:noinline
func stringWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runesWidth is the columns rs take.
//
//go:noinline
func runesWidth(rs []rune) int {
	n := 0
	for _, r := range rs {
		n += runeWidth(r)
	}
	return n
}

// wrapWords breaks each line of s into lines of at most width columns, at
// spaces; a word longer than the width is cut where it must be. A width
// under 1 leaves s as it is.
func wrapWords(s string, width int) string {
	if width < 1 {
		return s
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if stringWidth(line) <= width {
			out = append(out, line)
			continue
		}
		var cur strings.Builder
		curW := 0
		flush := func() {
			out = append(out, strings.TrimRight(cur.String(), " "))
			cur.Reset()
			curW = 0
		}
		for _, word := range strings.Split(line, " ") {
			ww := stringWidth(word)
			if curW > 0 && curW+1+ww > width {
				flush()
			}
			if curW > 0 {
				cur.WriteByte(' ')
				curW++
			}
			for _, r := range word { // a word wider than the line
				if rw := runeWidth(r); curW+rw > width && curW > 0 {
					flush()
				}
				cur.WriteRune(r)
				curW += runeWidth(r)
			}
		}
		flush()
	}
	return strings.Join(out, "\n")
}

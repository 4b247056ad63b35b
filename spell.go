package main

// spell.go: the nearest known spelling of a mistyped word — a command, a
// config key — so an error can name what was probably meant.

import (
	"sort"
	"strings"
)

// nearestWords are the words of known closest to w (case aside): those
// w begins (three letters or more), and those an edit or two away (one
// for words of four letters or fewer), the nearest first; none when
// nothing is that close.
func nearestWords(w string, known []string) []string {
	if len(w) > 64 {
		return nil // no command or key is that long, and a long prompt costs no table
	}
	lw := strings.ToLower(w)
	type cand struct {
		word string
		d    int
	}
	var cs []cand
	for _, n := range known {
		limit := 2
		if len([]rune(n)) <= 4 {
			limit = 1
		}
		d := editDistance(lw, strings.ToLower(n))
		if len(lw) >= 3 && strings.HasPrefix(strings.ToLower(n), lw) && d > limit {
			d = limit
		}
		if d <= limit {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for _, x := range cs {
		if x.d == cs[0].d {
			out = append(out, x.word)
		}
	}
	return out
}

// editDistance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// didYouMean is "; did you mean "x"?" for the nearest of known, or
// "; use one of a, b, c" when none is near.
func didYouMean(w string, known []string) string {
	near := nearestWords(w, known)
	if len(near) == 0 {
		return "; use one of " + strings.Join(known, ", ")
	}
	q := make([]string, len(near))
	for i, n := range near {
		q[i] = `"` + n + `"`
	}
	return "; did you mean " + strings.Join(q, " or ") + "?"
}

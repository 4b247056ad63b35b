package main

// text.go: cutting outside or long strings to what a line may show, for
// every floor (the ground).

import (
	"strings"
	"unicode/utf8"
)

// cutRunes cuts s to at most n characters.
//
//go:noinline
func cutRunes(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// oneLine folds s's white space to single spaces and cuts it to n runes,
// marking the cut with an ellipsis.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

//go:noinline
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

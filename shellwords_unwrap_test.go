package main

import (
	"reflect"
	"testing"
)

func TestShellQuoteRoundTrip(t *testing.T) {
	for _, words := range [][]string{
		{"ls"},
		{"echo", "a b", "it's", "", "$HOME", "~", "*.go", "{a,b}", "x=y", "-rf", "/"},
		{"A=b", "c"},
		{"if", "x"},
		{"{", "}"},
		{"echo", "line\nbreak", "tab\there", `back\slash`, `"dq"`, "#hash", "a;b|c&d", "(p)", "<>"},
	} {
		q := shellQuote(words)
		cmds, err := parseShell(q, shellEnv{Home: "/h"})
		if err != nil {
			t.Errorf("shellQuote(%q) = %s: %v", words, q, err)
			continue
		}
		if len(cmds) != 1 || !reflect.DeepEqual(cmds[0].Words, words) {
			t.Errorf("shellQuote(%q) = %s parses to %#v", words, q, cmds)
		}
	}
}

func TestShellQuotePlain(t *testing.T) {
	if got := shellQuote([]string{"git", "commit", "-m", "a b"}); got != `git commit -m 'a b'` {
		t.Errorf("got %s", got)
	}
}

func TestUnwrapGivesUp(t *testing.T) {
	for line, want := range map[string][]string{
		"sudo -l":          {"sudo", "-l"},
		"env":              {"env"},
		"command -v rm":    {"command", "-v", "rm"},
		"bash script.sh":   {"bash", "script.sh"},
		"xargs":            {"echo"},
		"timeout 5":        {"timeout", "5"},
		"nice":             {"nice"},
		"./rm -rf /":       {"./rm", "-rf", "/"},
		"/usr/local/bin/x": {"x"},
	} {
		cmds, err := parseShell(line, shellEnv{})
		if err != nil || len(cmds) != 1 || !reflect.DeepEqual(cmds[0].Words, want) {
			t.Errorf("parseShell(%q) = %#v, %v; want words %q", line, cmds, err, want)
		}
	}
}

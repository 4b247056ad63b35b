package main

// Permission rules ("bash: git status *", "edit: docs/**") and arity, how
// much of a command an "always allow" answer covers: `git status` is two
// words, so the answer stores `git status *`, which never covers
// `git push --force`. The table is harness/permission/arity.json.

import (
	"encoding/json"
	"io/fs"
	"path"
	"strings"
	"sync"
)

type aritySpec struct {
	About        string              `json:"about"`
	Source       string              `json:"source"`
	ShellTool    string              `json:"shell_tool"`
	Default      int                 `json:"default"`
	Arity        map[string]int      `json:"arity"`
	ValueOptions map[string][]string `json:"value_options"`
	KeepOptions  map[string][]string `json:"keep_options"`
	Toolchain    map[string]string   `json:"toolchain_prefix"`
	QuietTargets []string            `json:"quiet_redirect_targets"`
	Rules        struct {
		About string `json:"about"`
		Error string `json:"error"`
	} `json:"rules"`
}

var (
	arityOnce sync.Once
	arityData *aritySpec
	arityErr  error
)

// loadArity reads harness/permission/arity.json once.
func loadArity() (*aritySpec, error) {
	arityOnce.Do(func() {
		data, err := fs.ReadFile(harnessFS, "harness/permission/arity.json")
		if err != nil {
			arityErr = errorf("reading the arity table: %w", err)
			return
		}
		var a aritySpec
		if err := json.Unmarshal(data, &a); err != nil {
			arityErr = errorf("parsing harness/permission/arity.json: %w", err)
			return
		}
		if a.Default < 1 || a.ShellTool == "" || a.Rules.Error == "" {
			arityErr = errorf("harness/permission/arity.json needs default above 0, shell_tool and rules.error")
			return
		}
		arityData = &a
	})
	return arityData, arityErr
}

// arityWords returns the words that name a command's subcommands: the
// command name, then its plain words, skipping options (and the value of
// those listed in value_options) but keeping those listed in keep_options
// (python -m). Each carries its index in words.
func arityWords(a *aritySpec, words []string) []int {
	if len(words) == 0 {
		return nil
	}
	idx := []int{0}
	vals := a.ValueOptions[words[0]]
	keep := a.KeepOptions[words[0]]
	for i := 1; i < len(words) && len(idx) < 4; i++ {
		w := words[i]
		if contains(keep, w) {
			idx = append(idx, i)
			continue
		}
		if tp := a.Toolchain[words[0]]; i == 1 && tp != "" && strings.HasPrefix(w, tp) {
			continue
		}
		if len(w) > 1 && w[0] == '-' {
			if contains(vals, w) {
				i++
			}
			continue
		}
		idx = append(idx, i)
	}
	return idx
}

// arityPrefix returns the words an "always allow" of this command covers:
// the command and as many subcommand words as arity.json says (the longest
// entry that matches wins; unknown commands take the default). Options
// before a subcommand are skipped (git -C dir status is git status). When
// the command has fewer plain words than its arity, all its words are the
// prefix: git --version covers git --version, never git.
func arityPrefix(words []string) []string {
	a, err := loadArity()
	if err != nil || len(words) == 0 {
		return nil
	}
	idx := arityWords(a, words)
	n := a.Default
	for k := len(idx); k >= 1; k-- {
		var key []string
		for _, i := range idx[:k] {
			key = append(key, words[i])
		}
		if v, ok := a.Arity[strings.Join(key, " ")]; ok {
			n = v
			break
		}
	}
	if len(idx) < n {
		return append([]string(nil), words...)
	}
	out := make([]string, 0, n)
	for _, i := range idx[:n] {
		out = append(out, words[i])
	}
	return out
}

// permRule is one permission rule: a tool, and a pattern over its command
// or path; no pattern covers every call of the tool. Text is as written.
type permRule struct {
	Tool    string `json:"tool"`
	Pattern string `json:"pattern"`
	Text    string `json:"text"`
}

// parseRule reads "tool" or "tool: pattern".
func parseRule(s string) (permRule, error) {
	a, err := loadArity()
	if err != nil {
		return permRule{}, err
	}
	tool, pattern, _ := strings.Cut(s, ":")
	tool = strings.TrimSpace(tool)
	pattern = strings.Join(strings.Fields(pattern), " ")
	ok := tool != ""
	for i := 0; i < len(tool); i++ {
		if !isNameByte(tool[i]) || (tool[i] >= 'A' && tool[i] <= 'Z') {
			ok = false
		}
	}
	if !ok && mcpRuleKey(tool) {
		ok = true // mcp__server, mcp__server__*, mcp__server__Tool-name (mcp_tools.go)
	}
	if !ok || (strings.Contains(s, ":") && pattern == "") {
		return permRule{}, errorf("rule %q: %s", s, a.Rules.Error)
	}
	return permRule{Tool: tool, Pattern: pattern, Text: s}, nil
}

// commandText is a command as rules see it: its variables, its words and
// its redirections that touch a file, each joined by one space. Quiet
// redirections (2>&1, >/dev/null) and here-documents are left out.
func commandText(a *aritySpec, c shellCmd) string {
	parts := append([]string(nil), c.Assigns...)
	parts = append(parts, c.Words...)
	for _, r := range c.Redirs {
		op := strings.TrimLeft(r.Op, "0123456789")
		switch {
		case op == "<<" || op == "<<-" || op == "<<<":
			continue
		case (op == ">&" || op == "<&") && isFdTarget(r.Target):
			continue
		case contains(a.QuietTargets, r.Target):
			continue
		}
		parts = append(parts, r.Op+r.Target)
	}
	return strings.Join(parts, " ")
}

// matchCommandRule says whether a rule covers one simple command: its
// pattern, with * for any text, matches the whole plain text; a pattern
// ending in " *" also covers the command with nothing after it.
func matchCommandRule(r permRule, c shellCmd) bool {
	a, err := loadArity()
	if err != nil {
		return false
	}
	if r.Pattern == "" {
		return true
	}
	text := commandText(a, c)
	if wildMatch(r.Pattern, text) {
		return true
	}
	if p, ok := strings.CutSuffix(r.Pattern, " *"); ok {
		return wildMatch(p, text)
	}
	return false
}

// wildMatch matches text against a pattern where * is any text, empty
// included, and every other byte is itself.
func wildMatch(pattern, text string) bool {
	p, t := 0, 0
	star, mark := -1, 0
	for t < len(text) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, t
			p++
		case p < len(pattern) && pattern[p] == text[t]:
			p++
			t++
		case star >= 0:
			p = star + 1
			mark++
			t = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchPathRule says whether a rule covers a path relative to the project:
// * stays inside one segment, ** spans any number; a path outside the
// project is never covered.
func matchPathRule(r permRule, rel string) bool {
	rel = path.Clean(strings.ReplaceAll(rel, `\`, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
		return false
	}
	if r.Pattern == "" {
		return true
	}
	p := r.Pattern
	if strings.HasSuffix(p, "/") {
		p += "**"
	}
	return pathGlobMatch(strings.TrimPrefix(p, "./"), rel, false)
}

// pathGlobMatch matches a slash-separated path against a pattern: * ? and
// [..] inside one segment, ** any number of segments (none included).
func pathGlobMatch(pattern, name string, fold bool) bool {
	if fold {
		pattern, name = strings.ToLower(pattern), strings.ToLower(name)
	}
	var ps, ns []string
	if pattern != "" {
		ps = strings.Split(pattern, "/")
	}
	if name != "" && name != "." {
		ns = strings.Split(name, "/")
	}
	return segMatch(ps, ns)
}

func segMatch(ps, ns []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			for k := 0; k <= len(ns); k++ {
				if segMatch(ps[1:], ns[k:]) {
					return true
				}
			}
			return false
		}
		if len(ns) == 0 {
			return false
		}
		if ok, err := path.Match(ps[0], ns[0]); err != nil || !ok {
			return false
		}
		ps, ns = ps[1:], ns[1:]
	}
	return len(ns) == 0
}

// alwaysPattern is what an "always allow" answer for a command stores:
// its variables, its arity prefix and " *"; a command with fewer plain
// words than its arity (git --version, npm run) is stored exactly.
func alwaysPattern(c shellCmd) string {
	a, err := loadArity()
	if err != nil || len(c.Words) == 0 {
		return ""
	}
	parts := append(append([]string(nil), c.Assigns...), arityPrefix(c.Words)...)
	text := strings.Join(parts, " ")
	if len(arityWords(a, c.Words)) < arityOf(a, c.Words) {
		return text
	}
	return text + " *"
}

// arityOf is the arity the table gives the words of a prefix.
func arityOf(a *aritySpec, words []string) int {
	idx := arityWords(a, words)
	for k := len(idx); k >= 1; k-- {
		var key []string
		for _, i := range idx[:k] {
			key = append(key, words[i])
		}
		if v, ok := a.Arity[strings.Join(key, " ")]; ok {
			return v
		}
	}
	return a.Default
}

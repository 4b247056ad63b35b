package main

// The parts of a shell word the floor must read rather than give up on:
// parameter expansions with an operator (${HOME%/}, ${X:-/}), whose value
// is worked out when the variable is known and is otherwise unknown (the
// floor then reads it as possibly anything), and characters that are not
// what they look like (zero-width, bidi, Unicode spaces, fullwidth and
// confusable letters) outside quotes, which make a line refused.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// matchBrace returns the index of the } closing the ${ that s starts
// with, counting nested ${…}; -1 when there is none.
func matchBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i++
		case s[i] == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// knownVar is the value of a variable the parser knows: HOME, and USER
// and LOGNAME (the login name).
func (p *shParser) knownVar(name string) (string, bool) {
	switch name {
	case "HOME":
		return p.env.Home, p.env.Home != ""
	case "USER", "LOGNAME":
		return p.env.User, p.env.User != ""
	}
	return "", false
}

// paramExpansion reads ${name<op>word} (inner is what the braces hold):
// the defaults (:- - := =), the checks (:? ?), the alternatives (:+ +)
// and the literal prefix and suffix removals (# ## % %%) are worked out
// when the variable is known; any other form, or an unknown variable,
// stands as its raw text, unknown, which the floor reads as possibly
// anything. Quotes, substitutions and escapes inside are not read at all:
// the line is then not spelled plainly.
func (p *shParser) paramExpansion(w *lexWord, inner, raw string) error {
	if strings.ContainsAny(inner, "`\"'\\(") {
		return errorf("${%s} is not read; write its value plainly", inner)
	}
	i := 0
	for i < len(inner) && isNameByte(inner[i]) {
		i++
	}
	name, op := inner[:i], inner[i:]
	val, known := p.knownVar(name)
	unknown := func() error {
		w.add(raw, attrQuoted|attrUnknown)
		return nil
	}
	if name == "" || !isNameStart(name[0]) {
		return unknown()
	}
	word := func(n int) (string, bool) {
		v := op[n:]
		if !strings.Contains(v, "$") {
			return v, true
		}
		vars := map[string]string{}
		for _, k := range []string{"HOME", "USER", "LOGNAME"} {
			if kv, ok := p.knownVar(k); ok {
				vars[k] = kv
			}
		}
		v = expandKnownVars(v, vars)
		return v, !strings.Contains(v, "$")
	}
	for _, o := range []string{":-", ":=", ":?", ":+", "##", "%%", "-", "=", "?", "+", "#", "%"} {
		if !strings.HasPrefix(op, o) {
			continue
		}
		if !known {
			return unknown()
		}
		set := val != "" || o[0] != ':'
		switch strings.TrimPrefix(o, ":") {
		case "-", "=", "?":
			if set {
				w.add(val, attrQuoted)
				return nil
			}
			if v, ok := word(len(o)); ok && o != "?" && o != ":?" {
				w.add(v, attrQuoted)
				return nil
			}
		case "+":
			if !set {
				return nil
			}
			if v, ok := word(len(o)); ok {
				w.add(v, attrQuoted)
				return nil
			}
		case "#", "##", "%", "%%":
			pat, ok := word(len(o))
			if !ok || hasGlob(pat) {
				return unknown()
			}
			if o[0] == '#' {
				w.add(strings.TrimPrefix(val, pat), attrQuoted)
			} else {
				w.add(strings.TrimSuffix(val, pat), attrQuoted)
			}
			return nil
		}
		return unknown()
	}
	return unknown()
}

// unicodeError is a character outside quotes that is not what it looks
// like; the floor refuses such a line in every mode.
type unicodeError struct {
	r     rune
	class string
}

func (e unicodeError) Error() string {
	return fmt.Sprintf("the line holds %s U+%04X outside quotes; type it in plain ASCII or quote it", e.class, e.r)
}

// checkRune looks at the character starting at p.pos (outside quotes)
// and returns its length in bytes: one of hardline.json's unicode classes,
// or bytes that are not UTF-8, is an error.
func (p *shParser) checkRune() (int, error) {
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == utf8.RuneError && size <= 1 {
		return 1, unicodeError{r: rune(p.src[p.pos]), class: "a byte that is not UTF-8"}
	}
	if class := unicodeClass(r); class != "" {
		return size, unicodeError{r: r, class: class}
	}
	return size, nil
}

// unicodeClass names the hardline.json unicode class a character is in,
// or "" for none.
func unicodeClass(r rune) string {
	h, err := loadHardline()
	if err != nil {
		return "a character that could not be checked"
	}
	for _, c := range h.Unicode.classes {
		for _, rg := range c.ranges {
			if r >= rg[0] && r <= rg[1] {
				return c.name
			}
		}
	}
	return ""
}

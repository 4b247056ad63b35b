package main

// The floor's reading of a script a line writes and then runs. A line
// that writes a file with a text it spells out (cat > x.sh <<'EOF', tee
// x.py <<< '…', echo '…' > x.sh) and then runs that file (bash x.sh,
// ./x.sh, source x.sh, python3 x.py) runs that text: a shell script's
// commands are read as commands of the line itself, right after the one
// that runs them, so every rule of the floor, the boundary and the allow
// rules sees them as if written inline (bash <<'EOF' … EOF reads the same);
// an interpreter's program is read as its code is in python3 - <<'EOF'
// (code_later.exec_markers, exfiltration's secret_mentions and
// net_markers). A file written any other way (curl -o, cp, >> onto what
// was there) holds a text only known when the line runs: runs-written-file
// (permission_floor.go) stays unsure.
//
// A worker (floor 3), beside the floor it serves (permission_floor*.go).

import (
	"path"
	"strings"
)

// withWrittenScripts is a parsed line with the scripts it spells out read
// in: each shell script the line writes and runs has its commands follow
// the command that runs it (marked scriptRead), and an interpreter whose
// program is a text the line spells out (a written file, a here-document
// or a here-string on its input) is given it as -c code (codeWords), so
// every check of inline code reads it. A script that does not parse is
// left unread (runs-written-file stays unsure for it).
func (h *hardlineSpec) withWrittenScripts(cmds []shellCmd, env shellEnv) []shellCmd {
	texts := map[string]string{} // written files whose text is known, cleaned
	written := map[string]bool{}
	var out []shellCmd
	note := func(c shellCmd) {
		if len(c.Words) > 0 && !contains(h.CodeLater.WrittenThenRun.KeepsTexts.Commands, commandName(c.Words[0])) {
			// It may have changed a written file (sed -i, ln, cd, a
			// script): no text is known any more, before its own writes
			// are noted below.
			clear(texts)
		}
		if len(c.Redirs) == 0 && len(c.Words) > 0 {
			if _, ok := h.CodeLater.WrittenThenRun.OutputOptions[c.Words[0]]; !ok {
				return // writes no file noteWritten knows
			}
		}
		mine := map[string]bool{}
		h.noteWritten(c, mine)
		known := h.writtenTexts(c)
		for f := range mine {
			written[f] = true
			if t, ok := known[f]; ok {
				texts[f] = t
			} else {
				delete(texts, f) // written again some other way: unknown
			}
		}
	}
	changed := false
	budget := h.Plain.Limits.Commands // commands read in, in all: a script run many times is read while it fits
	for _, c := range cmds {
		n, inner := h.readScript(c, written, texts, env)
		if len(inner) > budget {
			n, inner = c, nil // unread: runs-written-file stays unsure
		}
		budget -= len(inner)
		out = append(out, n)
		note(c)
		for _, k := range inner {
			out = append(out, k)
			note(k)
		}
		changed = changed || n.scriptRead
	}
	if !changed {
		return cmds
	}
	return out
}

// readScript is one command of withWrittenScripts with what it runs read
// in: the command (scriptRead when read) and the commands of the shell
// script it runs.
func (h *hardlineSpec) readScript(c shellCmd, written map[string]bool, texts map[string]string, env shellEnv) (shellCmd, []shellCmd) {
	if text, expands, ok := stdinText(c); ok && !expands {
		if in, ok := h.interpreterFor(c); ok {
			if n, ok := h.codeWords(in, c, "", text); ok {
				return n, nil
			}
		}
	}
	if len(written) == 0 {
		return c, nil
	}
	what := h.runsWritten(c, written)
	text, known := texts[path.Clean(what)]
	if what == "" || !known {
		return c, nil
	}
	if in, script := h.interpreterScript(c); script != "" {
		if n, ok := h.codeWords(in, c, script, text); ok {
			return n, nil
		}
		return c, nil
	}
	if !h.shellText(text) {
		return c, nil // another language by its #! line: unsure
	}
	inner, err := parseShell(text, env)
	if err != nil {
		return c, nil
	}
	c.scriptRead = true
	return c, inner
}

// codeWords spells an interpreter command with its program given as code
// (python3 -c TEXT, node -e TEXT) in place of its script operand, or of
// the - (or /dev/stdin) that reads it from stdin, or last when it has no
// operand. It is marked scriptRead: what it named is read.
func (h *hardlineSpec) codeWords(in interpreterSpec, c shellCmd, script, text string) (shellCmd, bool) {
	opt := ""
	for _, o := range in.CodeOptions {
		if o != "+" {
			opt = o
			break
		}
	}
	if opt == "" {
		return c, false
	}
	n := c
	n.Words = []string{c.Words[0]}
	placed := false
	for _, w := range c.Words[1:] {
		switch {
		case !placed && script != "" && w == script, !placed && script == "" && (w == "-" || contains(h.Plain.Shells.Fd0Files, w)):
			// its script operand, or the - that reads stdin: the program
			// given in its place, so the operands after it stay its own
			n.Words = append(n.Words, opt, text)
			placed = true
		default:
			n.Words = append(n.Words, w)
		}
	}
	if !placed {
		n.Words = append(n.Words, opt, text)
	}
	n.scriptRead = true
	return n, true
}

// interpreterFor is the interpreter (code_later.interpreters with code
// options and no markers of their own) a command is, when it reads its
// program from stdin: no code option, no script operand.
func (h *hardlineSpec) interpreterFor(c shellCmd) (interpreterSpec, bool) {
	in, script := h.interpreterScript(c)
	if script != "" || len(in.CodeOptions) == 0 {
		return in, false
	}
	for _, w := range c.Words[1:] {
		if contains(h.CodeLater.InfoOptions, w) {
			return in, false
		}
		for _, o := range in.CodeOptions {
			if w == o || (strings.HasPrefix(o, "--") && strings.HasPrefix(w, o+"=")) || (len(o) == 2 && len(w) > 1 && w[0] == '-' && !strings.HasPrefix(w, "--") && strings.IndexByte(w[1:], o[1]) >= 0) {
				return in, false // code given: that is its program
			}
		}
	}
	return in, true
}

// writtenTexts are the files a command writes with a text the line spells
// out, and that text: cat with no file operand given a here-document or a
// here-string and sending it to > FILE, tee (not appending) given one, and
// echo with no options to > FILE.
func (h *hardlineSpec) writtenTexts(c shellCmd) map[string]string {
	if len(c.Words) == 0 {
		return nil
	}
	text, ok := "", false
	var files []string
	switch c.Words[0] {
	case "cat", "tee":
		t, expands, has := stdinText(c)
		if !has || expands {
			return nil
		}
		text, ok = t, true
		if c.Words[0] == "cat" && len(c.Words) > 1 && !(len(c.Words) == 2 && c.Words[1] == "-") {
			return nil // cat a b: the files', not its input's
		}
		if c.Words[0] == "tee" {
			for _, w := range c.Words[1:] {
				if w == "-a" || w == "--append" || (strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "a")) {
					return nil // appended to what was there
				}
				if !strings.HasPrefix(w, "-") {
					files = append(files, w)
				}
			}
		}
	case "echo":
		for _, w := range c.Words[1:] {
			if strings.HasPrefix(w, "-") {
				return nil // -e, -n: escapes and line ends the floor does not spell
			}
			if hasUnknown(w) {
				return nil
			}
		}
		text, ok = strings.Join(c.Words[1:], " ")+"\n", true
	case "printf":
		text, ok = printfText(c.Words[1:])
	}
	if !ok {
		return nil
	}
	for _, r := range c.Redirs {
		switch strings.TrimPrefix(r.Op, "1") {
		case ">", ">|", "&>":
			if !isFdTarget(r.Target) && !hasUnknown(r.Target) {
				files = append(files, r.Target)
			}
		}
	}
	out := map[string]string{}
	for _, f := range files {
		out[path.Clean(f)] = text
	}
	return out
}

// printfText is what printf writes given these words, when the floor can
// spell it: a format of plain text, the common escapes (\n, \t, \\, \'),
// %%, %s and %b (its argument's escapes read too), used again while
// arguments remain, as printf does. printf '#!/bin/sh\nrm -rf ~\n' > a.sh
// writes a script as echo does; any other directive, an option (-v) or a
// word known only at run time is not spelt (ok false: unsure).
func printfText(args []string) (string, bool) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", false
	}
	for _, a := range args {
		if hasUnknown(a) {
			return "", false
		}
	}
	format, rest := args[0], args[1:]
	var b strings.Builder
	for {
		used := false
		for i := 0; i < len(format); i++ {
			ch := format[i]
			switch {
			case ch == '\\' && i+1 < len(format):
				e, ok := printfEscape(format[i+1])
				if !ok {
					return "", false
				}
				b.WriteString(e)
				i++
			case ch == '%' && i+1 < len(format):
				d := format[i+1]
				i++
				if d == '%' {
					b.WriteByte('%')
					continue
				}
				if d != 's' && d != 'b' {
					return "", false
				}
				used = true
				arg := ""
				if len(rest) > 0 {
					arg, rest = rest[0], rest[1:]
				}
				if d == 'b' {
					t, ok := printfText([]string{strings.ReplaceAll(arg, "%", "%%")})
					if !ok {
						return "", false
					}
					arg = t
				}
				b.WriteString(arg)
			case ch == '%' || ch == '\\':
				return "", false
			default:
				b.WriteByte(ch)
			}
		}
		if !used || len(rest) == 0 {
			return b.String(), true
		}
	}
}

// printfEscape is the text of a backslash escape printf reads.
func printfEscape(e byte) (string, bool) {
	switch e {
	case 'n':
		return "\n", true
	case 't':
		return "\t", true
	case '\\', '\'', '"':
		return string(e), true
	}
	return "", false
}

// interpreterScript is an interpreter command's script operand: the first
// operand after its options, when no option gives it code (-c, -e) or
// makes it run something else (-m); "" otherwise.
func (h *hardlineSpec) interpreterScript(c shellCmd) (interpreterSpec, string) {
	if len(c.Words) == 0 {
		return interpreterSpec{}, ""
	}
	cl := &h.CodeLater
	for _, in := range cl.Interpreters {
		if !nameMatches(in.Names, c.Words[0]) || len(in.Markers) > 0 || len(in.CodeOptions) == 0 {
			continue
		}
		args := c.Words[1:]
		for j := 0; j < len(args); j++ {
			a := args[j]
			if contains(cl.InfoOptions, a) {
				return in, ""
			}
			if v := valueOption(in.ValueOptions, a); v != "" {
				if a == v {
					j++
				}
				continue
			}
			if a == "-" || contains(h.Plain.Shells.Fd0Files, a) {
				return in, ""
			}
			if h.stdinScript(a) {
				return in, a // <(…), /dev/fd/3: read at run time, not from stdin's here-document
			}
			if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+") {
				for _, o := range in.CodeOptions {
					if a == o || (strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"=")) || (len(o) == 2 && !strings.HasPrefix(a, "--") && strings.IndexByte(a[1:], o[1]) >= 0) {
						return in, ""
					}
				}
				continue
			}
			return in, a
		}
		return in, ""
	}
	return interpreterSpec{}, ""
}

// shellText says whether a script's text is a shell's: no #! line, or one
// naming a shell (env's first plain word counts).
func (h *hardlineSpec) shellText(text string) bool {
	if !strings.HasPrefix(text, "#!") {
		return true
	}
	first, _, _ := strings.Cut(text, "\n")
	f := strings.Fields(strings.TrimPrefix(first, "#!"))
	if len(f) == 0 {
		return true
	}
	prog := commandName(f[0])
	if prog == "env" {
		prog = ""
		for _, w := range f[1:] {
			if !strings.HasPrefix(w, "-") {
				prog = commandName(w)
				break
			}
		}
	}
	return contains(h.Plain.Shells.Names, prog)
}

// textExfil reads a text a command sends or runs as its words: the line of
// it naming one of exfiltration.secret_mentions (or ""), and whether it
// holds one of net_markers.
func (h *hardlineSpec) textExfil(text string) (secret string, net bool) {
	ex := &h.Exfil
	for _, l := range strings.Split(text, "\n") {
		for _, m := range ex.Secrets {
			if secret == "" && strings.Contains(l, m) {
				secret = strings.TrimSpace(l)
			}
		}
		for _, m := range ex.NetMarkers {
			if strings.Contains(l, m) {
				net = true
			}
		}
	}
	return secret, net
}

package main

// The README and docs/ against the code: the README stays a front page
// (at most about 250 lines), every link into docs/ (and between docs)
// names a file and heading that exist, and every lembas command in a
// fenced block names a command, subcommand and flags the help table
// (harness/commands_cli.json) has — so the docs cannot teach a command
// that does not run.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const readmeMaxLines = 250

func TestReadmeIsAFrontPage(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; keep it under %d and move the rest to docs/", n, readmeMaxLines)
	}
	for _, want := range []string{"go install github.com/llembas/lembas@latest", "go test ./...", "GOARM=6"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	if mod, _ := os.ReadFile("go.mod"); !strings.HasPrefix(string(mod), "module github.com/llembas/lembas\n") {
		t.Errorf("go.mod's module path is not the one the README installs:\n%s", mod)
	}
}

var reMDLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// docFiles are the README and every file in docs/.
func docFiles(t *testing.T) []string {
	files, _ := filepath.Glob("docs/*.md")
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{"README.md"}, files...)
}

// TestDocLinks: every relative link resolves to a file, and a #fragment
// to a heading of it (GitHub's slugs).
func TestDocLinks(t *testing.T) {
	for _, f := range docFiles(t) {
		data, _ := os.ReadFile(f)
		for _, m := range reMDLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
			}
			st, err := os.Stat(file)
			if err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if frag != "" && !st.IsDir() {
				body, _ := os.ReadFile(file)
				if !hasHeading(string(body), frag) {
					t.Errorf("%s: link %s: %s has no heading #%s", f, target, file, frag)
				}
			}
		}
		if f == "README.md" {
			for _, m := range regexp.MustCompile(`docs/[a-z0-9-]+\.md`).FindAllString(string(data), -1) {
				if _, err := os.Stat(m); err != nil {
					t.Errorf("README.md names %s: %v", m, err)
				}
			}
		}
	}
}

// hasHeading says whether md has a heading whose GitHub anchor is slug.
func hasHeading(md, slug string) bool {
	inFence := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r > 127:
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		if b.String() == slug {
			return true
		}
	}
	return false
}

// fencedLembas yields the lembas command lines of md's fenced shell blocks:
// each part of a line (split at && || | ; and inside <( ) $( )) whose
// first word is lembas or ./lembas, without its comment.
func fencedLembas(md string) [][]string {
	var out [][]string
	inFence, shell := false, false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			if !inFence {
				lang := strings.TrimPrefix(l, "```")
				shell = lang == "" || lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
			}
			inFence = !inFence
			continue
		}
		if !inFence || !shell {
			continue
		}
		words := splitWordsForTest(l)
		var part []string
		flush := func() {
			if len(part) > 0 && (part[0] == "lembas" || part[0] == "./lembas") {
				out = append(out, part)
			}
			part = nil
		}
		for _, w := range words {
			switch w {
			case "&&", "||", "|", ";", "<(", "$(", ")":
				flush()
				continue
			}
			if strings.HasPrefix(w, "#") {
				break
			}
			part = append(part, w)
		}
		flush()
	}
	return out
}

// splitWordsForTest splits a shell line into words, honouring quotes and
// backslashes, with operators as words of their own.
func splitWordsForTest(l string) []string {
	var out []string
	var cur strings.Builder
	has := false
	quote := rune(0)
	emit := func() {
		if has {
			out = append(out, cur.String())
		}
		cur.Reset()
		has = false
	}
	rs := []rune(l)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, has = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			has = true
		case r == ' ' || r == '\t':
			emit()
		case r == ';' || r == ')':
			emit()
			out = append(out, string(r))
		case r == '|' || r == '&':
			emit()
			if i+1 < len(rs) && rs[i+1] == r {
				out = append(out, string(r)+string(r))
				i++
			} else {
				out = append(out, string(r))
			}
		case (r == '<' || r == '$') && i+1 < len(rs) && rs[i+1] == '(':
			emit()
			out = append(out, string(r)+"(")
			i++
		case r == '#' && !has:
			out = append(out, "#")
			return out
		default:
			cur.WriteRune(r)
			has = true
		}
	}
	emit()
	return out
}

// TestDocCommands: every lembas command in a fenced block runs as written
// in the table's terms.
func TestDocCommands(t *testing.T) {
	c := theCLI()
	mainFlags := map[string]bool{"--help": true, "-h": true, "--version": true}
	for _, f := range c.Flags {
		mainFlags["--"+f.Long] = true
		if f.Short != "" {
			mainFlags["-"+f.Short] = true
		}
	}
	checked := 0
	for _, file := range docFiles(t) {
		data, _ := os.ReadFile(file)
		for _, words := range fencedLembas(string(data)) {
			checked++
			line := strings.Join(words, " ")
			args := words[1:]
			if len(args) == 0 {
				continue
			}
			cmd := c.command(args[0])
			flags := mainFlags
			if cmd != nil {
				flags = map[string]bool{"--help": true, "-h": true}
				for _, f := range cmd.Flags {
					flags["--"+f.Long] = true
				}
				args = args[1:]
				if len(cmd.Subcommands) > 0 && len(args) > 0 && !strings.HasPrefix(args[0], "-") && !placeholder(args[0]) {
					found := false
					for _, s := range cmd.Subcommands {
						found = found || s.Name == args[0]
					}
					if !found {
						t.Errorf("%s: %q: %s has no subcommand %q", file, line, cmd.Name, args[0])
					}
				}
			} else if !strings.HasPrefix(args[0], "-") && !placeholder(args[0]) {
				if msg := unknownCommand(args); msg != "" {
					t.Errorf("%s: %q: %s", file, line, msg)
				}
			}
			for _, a := range args {
				if a == "--" {
					break
				}
				name, _, _ := strings.Cut(a, "=")
				if strings.HasPrefix(a, "-") && a != "-" && !flags[name] {
					t.Errorf("%s: %q: no flag %s", file, line, name)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d lembas commands found in fenced blocks; the reader is broken", checked)
	}
}

// placeholder is a usage word such as [flags], ["prompt"], ID or KEY.
func placeholder(w string) bool {
	return strings.HasPrefix(w, "[") || (strings.ToUpper(w) == w && strings.ToLower(w) != w)
}

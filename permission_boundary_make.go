package main

// Makefiles a line runs (boundary.json scripts.make): make reads its
// recipes from a file on disk, which the model may have written with the
// write tool a call before, so make is as much a script run as bash x.sh.
// Its recipes are read as shell lines and a floor refusal in them is the
// line's; what they only ask (installing outside the project) or leave
// unsure (make's $(VAR), the shell's $$x) is left to the sandbox and the
// mode, so ordinary make stays as it was.

import (
	"os"
	"strings"
)

type makeSpec struct {
	About       string   `json:"about"`
	Names       []string `json:"names"`
	Files       []string `json:"files"`
	FileOptions []string `json:"file_options"`
	DirOptions  []string `json:"dir_options"`
	Reason      string   `json:"reason"`
}

// makefileOf is the Makefile a make command reads (its -f file, or the
// first of make.files in its folder, -C's or cwd's) as a path to read
// from cwd, "" when c is not make or names it only at run time.
func (b *boundarySpec) makefileOf(p *permissions, c shellCmd, cwd string) string {
	mk := &b.Scripts.Make
	if len(c.Words) == 0 || !contains(mk.Names, commandName(c.Words[0])) {
		return ""
	}
	dir, file := cwd, ""
	args := c.Words[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		isFile, isDir := contains(mk.FileOptions, name), contains(mk.DirOptions, name)
		if !isFile && !isDir {
			for _, o := range append(append([]string(nil), mk.FileOptions...), mk.DirOptions...) {
				if len(o) == 2 && strings.HasPrefix(a, o) && len(a) > 2 {
					isFile, isDir = contains(mk.FileOptions, o), contains(mk.DirOptions, o)
					val, hasVal = a[2:], true
				}
			}
		}
		if !isFile && !isDir {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return ""
			}
			val = args[i+1]
			i++
		}
		if hasUnknown(val) {
			return ""
		}
		if isDir {
			dir = p.pathAt(dir, val)
		} else {
			file = val
		}
	}
	if file != "" {
		return p.pathAt(dir, file)
	}
	for _, f := range mk.Files {
		if st, err := os.Stat(p.pathAt(dir, f)); err == nil && !st.IsDir() {
			return p.pathAt(dir, f)
		}
	}
	return ""
}

// reMakeVar is a reference to one of make's variables or functions:
// $(NAME …), ${NAME …} or a one-character $X ($@, $<).
var reMakeVar = lazyRE(`\$(\(([^()]*)\)|\{([^{}]*)\}|[^($])`)

// makeRecipes is the shell text of a Makefile's recipes, one line each:
// tab-led lines (continuations joined) and the command after target: ;,
// with make's @ - + prefixes taken off, $$ as the shell's $, $(HOME) as
// $HOME, and every other make reference as a plain word, which only ever
// hides a target (never makes one).
func makeRecipes(text string) string {
	var out []string
	lines := strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n")
	for _, l := range lines {
		var r string
		switch {
		case strings.HasPrefix(l, "\t"):
			r = l[1:]
		case !strings.HasPrefix(l, "#") && strings.Contains(l, ":") && !strings.Contains(l, ":=") && !strings.Contains(l, "="):
			_, after, ok := strings.Cut(l, ";")
			if !ok {
				continue
			}
			r = after
		default:
			continue
		}
		r = strings.TrimLeft(r, "@-+ \t")
		if strings.HasPrefix(r, "#") || strings.TrimSpace(r) == "" {
			continue
		}
		r = strings.ReplaceAll(r, "$$", "\x00")
		r = reMakeVar.ReplaceAllStringFunc(r, func(m string) string {
			if name := strings.Trim(m, "${}()"); name == "HOME" {
				return "$HOME"
			}
			return "MAKEVAR"
		})
		out = append(out, strings.ReplaceAll(r, "\x00", "$"))
	}
	return strings.Join(out, "\n")
}

// judgeMakefile is the floor's refusal of what the Makefile a make
// command reads would run, if any.
func (p *permissions) judgeMakefile(b *boundarySpec, c shellCmd, cwd string, env shellEnv) *decision {
	mk := b.makefileOf(p, c, cwd)
	if mk == "" {
		return nil
	}
	st, err := os.Stat(mk)
	if err != nil || st.IsDir() || st.Size() > int64(b.Scripts.MaxBytes) {
		return nil
	}
	data, err := os.ReadFile(mk)
	if err != nil {
		return nil
	}
	at := env
	at.Cwd = cwd
	hit, _ := checkHardline(makeRecipes(string(data)), at)
	if hit == nil || hit.Unsure {
		return nil
	}
	shown := relPath(p.root, mk)
	return &decision{Verdict: "deny", Rule: "boundary.json scripts.make (" + shown + "): hardline.json " + hit.Rule,
		Reason: fillPairs(b.Scripts.Make.Reason, "file", shown, "reason", hit.Reason, "command", hit.Command)}
}

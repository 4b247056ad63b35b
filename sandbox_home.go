package main

// What the world shows of the home folder (policyParts.Home and Keep):
// the kept paths, read from home.keep, PATH, the toolchains' variables,
// the global git config and config.yaml's sandbox.readable; and the note
// a command that misses a hidden path is given. The world lays it out
// (sandbox_world_layout_linux.go hideHome); Landlock alone reads it
// (sandbox_linux.go readAllBut).

import (
	"os"
	"path/filepath"
	"strings"
)

// homeView is the home folder the world shows only part of, and that
// part (besides the writable roots and caches, which the world places
// anyway): home.keep, config's sandbox.readable, and the project with its
// git folders (in plan mode they are not writable roots, and still seen).
// The home folder stays whole where sandbox.readable holds ~, a writable
// root or a temp folder holds it, or it is /.
func (s *sandbox) homeView(sp *sandboxSpec, getenv func(string) string, home string, p policyParts, gd, common string, isGit bool) (string, []string) {
	if home == "" || home == "/" || !filepath.IsAbs(home) {
		return "", nil
	}
	home = evalExisting(home)
	for _, r := range append(append([]string{}, p.Write...), p.Temp...) {
		if within(evalExisting(r), home) {
			return "", nil
		}
	}
	var keep []string
	add := func(e string) bool {
		r, ok := expandRoot(e, getenv, home)
		if !ok {
			return true
		}
		if evalExisting(r) == home {
			return false
		}
		if !within(home, r) {
			// Spelled through a link to the home folder (HOME=/home/u with
			// /home a link to /var/home; a PATH entry written so).
			if rr := evalExisting(r); within(home, rr) {
				r = rr
			}
		}
		if within(home, r) {
			keep = append(keep, r)
		}
		return true
	}
	for _, e := range s.cfg.Readable {
		if !add(e) {
			return "", nil
		}
	}
	for _, e := range sp.Home.Keep {
		add(e)
	}
	// The folders of PATH in the home folder are where the person's tools
	// live (~/.npm-global/bin, ~/apps/bin): kept, though no list names them.
	// A bin folder's tools often need what is beside it (~/apps/node/bin/npm
	// is a link to ../lib/…; a Go or a virtualenv unpacked there): its
	// parent is kept where it holds one of home.bin_parent (lib, a Go's
	// VERSION, a virtualenv's pyvenv.cfg), unless that is the home folder
	// or ~/.local. What a tool there links to elsewhere in the home folder
	// (~/bin/t -> ~/tools/t.sh) is kept too: the folder holding it.
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if up := filepath.Dir(d); filepath.Base(d) == "bin" && up != home && up != filepath.Join(home, ".local") && evalExisting(up) != home && holdsAny(up, sp.Home.BinParent) {
			d = up
		}
		if d == home || evalExisting(d) == home {
			continue
		}
		add(d)
		for _, t := range binLinks(filepath.Join(d, "bin"), home, d) {
			add(t)
		}
		for _, t := range binLinks(d, home, d) {
			add(t)
		}
	}
	// What git's own config names in the home folder: included files
	// (user.name is often in ~/.gitconfig.local), excludes, attributes,
	// a commit template, a hooks folder.
	for _, f := range gitConfigNames(home, getenv) {
		add(f)
	}
	add(s.root)
	if isGit {
		add(gd)
		add(common)
	}
	return home, uniq(keep)
}

// holdsAny says whether folder dir holds an entry of one of names.
func holdsAny(dir string, names []string) bool {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// binLinks is, for each link in folder bin that leads elsewhere in the
// home folder (outside kept), the folder holding what it leads to — the
// file itself where that folder is the home folder. At most home.bin_links
// entries are read: a PATH folder is not a tree to walk.
func binLinks(bin, home, kept string) []string {
	f, err := os.Open(bin)
	if err != nil {
		return nil
	}
	defer f.Close()
	ents, _ := f.ReadDir(max(theSandboxSpec().Home.BinLinks, 1))
	var out []string
	for _, e := range ents {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		t, err := filepath.EvalSymlinks(filepath.Join(bin, e.Name()))
		if err != nil || !within(home, t) || within(kept, t) {
			continue
		}
		if d := filepath.Dir(t); d != home {
			t = d
		}
		out = append(out, t)
	}
	return out
}

// gitConfigNames is the paths of the home folder the person's global git
// config names for git to read: the values of sandbox.json home.git_keys
// (include and includeIf paths, excludes and attributes files, commit
// templates, a hooks folder) in the key = value lines of ~/.gitconfig
// and $XDG_CONFIG_HOME/git/config, ~/ expanded.
func gitConfigNames(home string, getenv func(string) string) []string {
	files := []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")}
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		files = append(files, filepath.Join(x, "git", "config"))
	}
	keys := map[string]bool{}
	for _, k := range theSandboxSpec().Home.GitKeys {
		keys[k] = true
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) > 1<<20 {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if !ok || !keys[strings.ToLower(strings.TrimSpace(k))] {
				continue
			}
			v = strings.Trim(strings.TrimSpace(v), `"`)
			switch {
			case strings.HasPrefix(v, "~/"):
				v = filepath.Join(home, v[2:])
			case !filepath.IsAbs(v):
				v = filepath.Join(filepath.Dir(f), v) // relative to the file that names it
			}
			out = append(out, filepath.Clean(v))
		}
	}
	return out
}

// containsAny says whether s holds one of subs.
func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// homeAll says whether sandbox.readable keeps the whole home folder.
func homeAll(readable []string) bool {
	for _, r := range readable {
		if strings.TrimRight(strings.TrimSpace(r), "/") == "~" {
			return true
		}
	}
	return false
}

// hiddenNamed lists the paths of the home folder that out says were not
// found, that the person has (or whose folder the person has), and that
// the world leaves out of its view
// (policyParts.Home): a command is told why ~/notes.txt is missing. A
// relative path is taken from the project.
func hiddenNamed(out, root string, parts policyParts) []string {
	missing := theSandboxSpec().Home.Missing
	lower := strings.ToLower(out)
	if parts.Home == "" || !containsAny(lower, missing) {
		return nil
	}
	var found []string
	for _, line := range strings.Split(out, "\n") {
		if !containsAny(strings.ToLower(line), missing) {
			continue
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t'\"`‘’,()[]", r) }) {
			f = strings.TrimRight(f, ":,;")
			if strings.HasPrefix(f, "../") {
				f = filepath.Join(root, f)
			}
			if !filepath.IsAbs(f) || f == parts.Home || !within(parts.Home, filepath.Clean(f)) {
				continue
			}
			f = filepath.Clean(f)
			if underAnyRoot(f, parts.Keep) || underAnyRoot(f, parts.Write) || underAnyRoot(f, parts.Caches) {
				continue
			}
			// The path, or the nearest folder of it the person has (a
			// file being made in a hidden folder), is there outside.
			for a := f; a != parts.Home; a = filepath.Dir(a) {
				if _, err := os.Lstat(a); err == nil {
					found = append(found, f)
					break
				}
			}
		}
	}
	return uniq(found)
}

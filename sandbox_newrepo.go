package main

// sandbox_newrepo.go: a git repository the session made is screened after
// every command. A project's own .git is protected from the commands
// (sandbox.json protect: config, hooks and the rest are read-only or put
// back), but a project that had none when the session began gets one
// from `git init` in a command, and that same command can set
// core.fsmonitor, a hook or an alias the person's git runs the next time
// they use git there. Such a repository keeps only plain settings
// (sandbox.json new_repo.config_keep, an allow-list: what is not known to
// be harmless goes) and git's own sample hooks; a .git that is a file or a
// link (pointing git at a repository elsewhere) is taken away whole. The
// command is told what went. Only the project's own .git is read: a
// repository made in a folder under it is not (harness/sandbox.json says
// so).
//
// The worker floor (floor 3).

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// gitMadeHere says whether the project had no .git when its first command
// began (read once, then kept for the session).
func (s *sandbox) gitMadeHere() bool {
	s.gitStartOnce.Do(func() {
		_, err := os.Lstat(filepath.Join(s.root, ".git"))
		s.gitAtStart = err == nil
		s.gitRan = true
	})
	return !s.gitAtStart
}

// screenAtClose screens a repository the session made once more when the
// session's world is gone: a process a command left behind may have
// planted a hook after the last command's screen.
func (s *sandbox) screenAtClose() {
	s.gitStartOnce.Do(func() {}) // no command ran: nothing to screen
	if s.gitRan && !s.gitAtStart {
		screenNewRepo(s.root, theSandboxSpec().NewRepo.ConfigKeep)
	}
}

// screenNewRepo takes out of root's .git what would run a program for the
// person, and names what it took.
func screenNewRepo(root string, keep []string) []string {
	gitDir := filepath.Join(root, ".git")
	st, err := os.Lstat(gitDir)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		if os.Remove(gitDir) == nil {
			return []string{".git (a " + fileKind(st) + " pointing git elsewhere)"}
		}
		return nil
	}
	var taken []string
	screen := func(dir, shown string) {
		for _, name := range []string{"config", "config.worktree"} {
			taken = append(taken, screenGitConfig(filepath.Join(dir, name), shown+name, keep)...)
		}
		taken = append(taken, screenHooks(filepath.Join(dir, "hooks"), shown+"hooks")...)
		if p := filepath.Join(dir, "commondir"); pathExists(p) && os.Remove(p) == nil {
			taken = append(taken, shown+"commondir")
		}
	}
	screen(gitDir, ".git/")
	taken = append(taken, screenModules(filepath.Join(gitDir, "modules"), ".git/modules", screen, 0)...)
	// A linked worktree's own config (extensions.worktreeConfig) is read
	// by git there; its commondir and gitdir are what make it one.
	if st, err := os.Lstat(filepath.Join(gitDir, "worktrees")); err == nil && st.IsDir() {
		wts, _ := os.ReadDir(filepath.Join(gitDir, "worktrees"))
		for _, w := range wts {
			if w.IsDir() && w.Type()&fs.ModeSymlink == 0 {
				taken = append(taken, screenGitConfig(filepath.Join(gitDir, "worktrees", w.Name(), "config.worktree"), ".git/worktrees/"+w.Name()+"/config.worktree", keep)...)
			}
		}
	}
	return taken
}

// screenModules screens each module's folder under dir (and the modules
// of modules, to a bounded depth). A link is never followed: a modules
// folder, or a module's, that is a link goes itself, and what it points
// at is not read or written.
func screenModules(dir, shown string, screen func(dir, shown string), depth int) []string {
	taken, there := takeOdd(dir, shown, fs.FileMode.IsDir)
	if there == nil {
		return taken
	}
	mods, _ := os.ReadDir(dir)
	for _, m := range mods {
		p := filepath.Join(dir, m.Name())
		switch {
		case m.Type()&fs.ModeSymlink != 0:
			if os.Remove(p) == nil {
				taken = append(taken, shown+"/"+m.Name()+" (a link)")
			}
		case m.IsDir():
			screen(p, shown+"/"+m.Name()+"/") // what it takes, screen's caller counts
			if depth < theSandboxSpec().NewRepo.ModuleDepth {
				taken = append(taken, screenModules(filepath.Join(p, "modules"), shown+"/"+m.Name()+"/modules", screen, depth+1)...)
			}
		}
	}
	return taken
}

// takeOdd removes what stands at p when it is not of the kind want
// names (a link never is), and names it; there is p's information when
// it is of that kind, nil otherwise.
func takeOdd(p, shown string, want func(fs.FileMode) bool) (taken []string, there fs.FileInfo) {
	st, err := os.Lstat(p)
	if err != nil {
		return nil, nil
	}
	if want(st.Mode()) {
		return nil, st
	}
	if os.Remove(p) == nil {
		return []string{shown + " (a " + fileKind(st) + ")"}, nil
	}
	return nil, nil
}

func fileKind(st fs.FileInfo) string {
	if st.Mode()&fs.ModeSymlink != 0 {
		return "link"
	}
	return "file"
}

// screenHooks removes every hook but git's own *.sample ones; a hooks
// folder that is a link goes whole.
func screenHooks(dir, shown string) []string {
	taken, there := takeOdd(dir, shown, fs.FileMode.IsDir)
	if there == nil {
		return taken
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sample") && e.Type().IsRegular() {
			continue
		}
		if os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			taken = append(taken, shown+"/"+e.Name())
		}
	}
	return taken
}

// screenGitConfig rewrites a config file without the keys keep does not
// hold; a config that is a link goes whole.
func screenGitConfig(path, shown string, keep []string) []string {
	taken, st := takeOdd(path, shown, fs.FileMode.IsRegular)
	if st == nil {
		return taken
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out, dropped := filterGitConfig(b, keep)
	if len(dropped) == 0 {
		return nil
	}
	if writeFileAtomic(path, out, st.Mode().Perm()) != nil {
		os.Remove(path) // not rewritten: not kept either
	}
	for i, d := range dropped {
		dropped[i] = shown + ": " + d
	}
	return dropped
}

// filterGitConfig keeps a git config's comments, section headers and the
// keys keep holds; every other key, with its continuation lines, goes,
// and so does a line it cannot read (fail closed). It returns the kept
// text and the keys taken, each once, as section.name (a subsection shown
// as section.*.name).
func filterGitConfig(b []byte, keep []string) ([]byte, []string) {
	var out bytes.Buffer
	var dropped []string
	drop := func(what string) {
		if !slices.Contains(dropped, what) {
			dropped = append(dropped, what)
		}
	}
	section, sub := "", false
	// A section's header (and the comments after it) is written with its
	// first kept key: a section left with none goes whole.
	var pending strings.Builder
	write := func(s string) {
		out.WriteString(pending.String())
		pending.Reset()
		out.WriteString(s)
	}
	lines := strings.SplitAfter(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			if pending.Len() > 0 {
				pending.WriteString(line)
			} else {
				out.WriteString(line)
			}
			continue
		}
		rest := t
		if t[0] == '[' {
			pending.Reset()
			end := strings.IndexByte(t, ']')
			if end < 0 {
				drop("(a line git's config format does not have)")
				section = "\x00" // what follows belongs to no known section
				continue
			}
			section, sub = gitSectionName(t[1:end])
			rest = strings.TrimSpace(t[end+1:])
			if rest == "" || rest[0] == '#' || rest[0] == ';' {
				pending.WriteString(line)
				continue
			}
			pending.WriteString(t[:end+1] + "\n") // a key on the header's line is read as its own line
		}
		name := rest
		if k := strings.IndexAny(rest, "= \t"); k >= 0 {
			name = rest[:k]
		}
		name = strings.ToLower(name)
		shown := section + "." + name
		if sub {
			shown = section + ".*." + name
		}
		// A line going on to the next (a trailing backslash) is not kept:
		// every line is read on its own, so what git reads of what is kept
		// is what this read (a backslash in a comment does not go on, in
		// a value it does: either way nothing kept goes on).
		goesOn := strings.HasSuffix(strings.TrimRight(line, "\r\n"), "\\")
		if section != "\x00" && !goesOn && validGitKeyName(name) && gitKeyKept(section, sub, name, keep) {
			if rest != t { // the header's line: its key written on a line of its own
				write(rest + "\n")
			} else {
				write(line)
			}
		} else {
			drop(shown)
		}
	}
	return out.Bytes(), dropped
}

// gitSectionName reads a header's inside: `core`, `remote "origin"` (a
// subsection), or the older `branch.main`.
func gitSectionName(h string) (section string, sub bool) {
	h = strings.TrimSpace(h)
	if k := strings.IndexAny(h, " \t"); k >= 0 {
		return strings.ToLower(h[:k]), true
	}
	if k := strings.IndexByte(h, '.'); k >= 0 {
		return strings.ToLower(h[:k]), true
	}
	return strings.ToLower(h), false
}

func validGitKeyName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// gitKeyKept matches a key against keep's entries: section.name, or
// section.*.name for a key in a subsection; * in the name's place takes
// any name.
func gitKeyKept(section string, sub bool, name string, keep []string) bool {
	for _, k := range keep {
		parts := strings.Split(strings.ToLower(k), ".")
		switch {
		case !sub && len(parts) == 2:
			if parts[0] == section && (parts[1] == "*" || parts[1] == name) {
				return true
			}
		case sub && len(parts) == 3:
			if parts[0] == section && parts[1] == "*" && (parts[2] == "*" || parts[2] == name) {
				return true
			}
		}
	}
	return false
}

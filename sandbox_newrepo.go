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
// link (pointing git at a repository elsewhere) is taken away whole, but
// for a submodule's naming a module of a repository the session made
// (gitLinkInto), whose module is screened instead. The
// command is told what went. A repository made in a folder under the
// project (sub/.git) is screened once, when the session ends
// (screenNestedRepos): a walk of the project after every command would
// cost more than the command.
//
// The worker floor (floor 3).

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// gitMadeHere says whether the project had no .git when its first command
// began (read once, then kept for the session).
func (s *sandbox) gitMadeHere() bool {
	s.gitStartOnce.Do(func() {
		_, err := os.Lstat(filepath.Join(s.root, ".git"))
		s.gitAtStart = err == nil
		s.gitRan = true
		s.firstCmd = time.Now().Add(-time.Second) // a coarse clock's tick before it
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
	if s.gitRan {
		screenNestedRepos(s.root, s.firstCmd, theSandboxSpec().NewRepo.ConfigKeep, !s.gitAtStart)
	}
}

// screenNewRepo takes out of root's .git what would run a program for the
// person, and names what it took. Every name is resolved through an
// os.Root of the project, never out of it: the screen runs outside the
// world while a command's process may still run in it (a job), and such a
// process could swap .git, or a folder in it, for a link between a look
// and a remove or rewrite, which would have lembas delete or rewrite a
// file of the person's (.git → ~/.ssh made "config" ~/.ssh/config).
// Through the root a swapped name reaches at most the project, which the
// command may change anyway.
func screenNewRepo(root string, keep []string) []string {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	return screenRepoAt(r, ".git", keep)
}

// screenRepoAt screens the repository whose git folder is gitDir (a name
// under r: .git, or sub/.git), naming what it took by that name.
func screenRepoAt(r *os.Root, gitDir string, keep []string) []string {
	st, err := r.Lstat(gitDir)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		if r.Remove(gitDir) == nil {
			return []string{gitDir + " (a " + fileKind(st) + " pointing git elsewhere)"}
		}
		return nil
	}
	var taken []string
	screen := func(dir, shown string) {
		for _, name := range []string{"config", "config.worktree"} {
			taken = append(taken, screenGitConfig(r, path.Join(dir, name), shown+name, keep)...)
		}
		taken = append(taken, screenHooks(r, path.Join(dir, "hooks"), shown+"hooks")...)
		if p := path.Join(dir, "commondir"); rootHas(r, p) && r.Remove(p) == nil {
			taken = append(taken, shown+"commondir")
		}
	}
	screen(gitDir, gitDir+"/")
	taken = append(taken, screenModules(r, gitDir+"/modules", gitDir+"/modules", screen, 0)...)
	// A linked worktree's own config (extensions.worktreeConfig) is read
	// by git there; its commondir and gitdir are what make it one.
	wts := gitDir + "/worktrees"
	if st, err := r.Lstat(wts); err == nil && st.IsDir() {
		for _, w := range rootReadDir(r, wts) {
			if w.IsDir() && w.Type()&fs.ModeSymlink == 0 {
				n := wts + "/" + w.Name() + "/config.worktree"
				taken = append(taken, screenGitConfig(r, n, n, keep)...)
			}
		}
	}
	return taken
}

// screenNestedRepos screens, once the session's world is gone, each
// repository in a folder under the project (sub/.git) that a command may
// have made or changed since the session's first command: the .git, or
// what in it makes git run code (its config, hooks, commondir, a module's
// or a worktree's), changed since (repoChanged). A birth time would not
// do: a command can move an old folder or file into a .git, or write into
// a repository the person had there. A repository the session left alone
// is the person's to keep as it is. Git runs such a repository's hooks and
// config for the person who works in that folder later (and an editor's
// scan of the project's folders, unasked). Folders the project's ignore
// files leave out are not walked (the walk is the glob tool's), but for
// the repositories of the project's own top folders, which a command can
// add to .gitignore; the project's own .git is screenNewRepo's (projectMade:
// the session made it, so its modules are the session's too).
func screenNestedRepos(root string, since time.Time, keep []string, projectMade bool) []string {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	var (
		mu    mutex
		found = map[string]bool{}
	)
	look := func(gd string) {
		if repoChanged(filepath.Join(root, filepath.FromSlash(gd)), since) {
			mu.Lock()
			found[gd] = true
			mu.Unlock()
		}
	}
	walkProjectParallel(root, root, runtime.GOMAXPROCS(0), func(rel string, d fs.DirEntry) error {
		if !d.IsDir() && d.Name() != ".git" {
			return nil
		}
		gd := path.Join(filepath.ToSlash(rel), ".git")
		if d.Name() == ".git" { // a .git file (a link to a git folder elsewhere), or the walk's own skip
			gd = filepath.ToSlash(rel)
		}
		look(gd)
		return nil
	})
	for _, e := range rootReadDir(r, ".") {
		if e.IsDir() && e.Name() != ".git" && rootHas(r, e.Name()+"/.git") {
			look(e.Name() + "/.git")
		}
	}
	var gds, taken []string
	for gd := range found {
		gds = append(gds, gd)
	}
	sort.Strings(gds)
	owners := gds // the repositories whose modules are the session's
	if projectMade {
		owners = append(owners[:len(owners):len(owners)], ".git") // the project's, made here (screenNewRepo's)
	}
	for _, gd := range gds {
		if to := gitLinkInto(r, gd, owners); to != "" {
			gd = to // a submodule's .git file: its repository is screened, the file kept
		} else if !projectMade && gitLinkInto(r, gd, []string{".git"}) != "" {
			continue // a module of the person's own repository: its config and hooks there are read-only to commands (protect)
		}
		taken = append(taken, screenRepoAt(r, gd, keep)...)
	}
	return taken
}

// gitLinkInto is the folder a submodule's .git file gd names (gitdir:
// ../.git/modules/s, as git clone --recurse-submodules writes it), when
// it is a module of a repository in owners reached through folders alone
// (no link); "" otherwise, and the file goes as one pointing elsewhere.
func gitLinkInto(r *os.Root, gd string, owners []string) string {
	st, err := r.Lstat(gd)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 4096 {
		return ""
	}
	b, _ := r.ReadFile(gd)
	to, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || path.IsAbs(to) {
		return ""
	}
	to = path.Join(path.Dir(gd), to)
	for _, f := range owners {
		rest, ok := strings.CutPrefix(to, f+"/modules/")
		if !ok {
			continue
		}
		cur := f
		for _, c := range strings.Split("modules/"+rest, "/") {
			cur = path.Join(cur, c)
			if fi, err := r.Lstat(cur); err != nil || !fi.IsDir() {
				return ""
			}
		}
		return to
	}
	return ""
}

// repoChanged says whether a .git file gd, or what in the git folder gd
// makes git run code, changed at or after since. A file moved, linked or
// written there changes then (a folder moved in is judged by what it
// holds); the folder itself, its objects, refs and logs change with git's
// own work and are not looked at.
func repoChanged(gd string, since time.Time) bool {
	changed := false
	filepath.WalkDir(gd, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		switch n := d.Name(); {
		case p != gd && d.IsDir() && (n == "objects" || n == "refs" || n == "logs" || n == "lfs"):
			return fs.SkipDir
		case p == gd && d.IsDir(), p != gd && !strings.Contains(" config config.worktree commondir gitdir hooks ", " "+n+" ") && !strings.Contains(p, "/hooks/"):
			return nil
		}
		if t, ok := changedAt(p); ok && !t.Before(since) {
			changed = true
			return fs.SkipAll
		}
		return nil
	})
	return changed
}

// rootHas says whether name stands under r (a link counts).
func rootHas(r *os.Root, name string) bool {
	_, err := r.Lstat(name)
	return err == nil
}

// rootReadDir lists the folder name under r, sorted; nothing when it
// cannot be read.
func rootReadDir(r *os.Root, name string) []fs.DirEntry {
	f, err := r.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	ents, _ := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents
}

// screenModules screens each module's folder under dir (and the modules
// of modules, to a bounded depth). A link is never followed: a modules
// folder, or a module's, that is a link goes itself, and what it points
// at is not read or written.
func screenModules(r *os.Root, dir, shown string, screen func(dir, shown string), depth int) []string {
	taken, there := takeOdd(r, dir, shown, fs.FileMode.IsDir)
	if there == nil {
		return taken
	}
	for _, m := range rootReadDir(r, dir) {
		p := path.Join(dir, m.Name())
		switch {
		case m.Type()&fs.ModeSymlink != 0:
			if r.Remove(p) == nil {
				taken = append(taken, shown+"/"+m.Name()+" (a link)")
			}
		case m.IsDir():
			screen(p, shown+"/"+m.Name()+"/") // what it takes, screen's caller counts
			if depth < theSandboxSpec().NewRepo.ModuleDepth {
				taken = append(taken, screenModules(r, path.Join(p, "modules"), shown+"/"+m.Name()+"/modules", screen, depth+1)...)
			}
		}
	}
	return taken
}

// screenSwap, when set (tests only), runs after takeOdd found p of the
// kind wanted, before it is used: where a process left running would swap
// it for a link.
var screenSwap func(p string)

// takeOdd removes what stands at p when it is not of the kind want
// names (a link never is), and names it; there is p's information when
// it is of that kind, nil otherwise.
func takeOdd(r *os.Root, p, shown string, want func(fs.FileMode) bool) (taken []string, there fs.FileInfo) {
	st, err := r.Lstat(p)
	if err != nil {
		return nil, nil
	}
	if want(st.Mode()) {
		if screenSwap != nil {
			screenSwap(p)
		}
		return nil, st
	}
	if r.Remove(p) == nil {
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
func screenHooks(r *os.Root, dir, shown string) []string {
	taken, there := takeOdd(r, dir, shown, fs.FileMode.IsDir)
	if there == nil {
		return taken
	}
	for _, e := range rootReadDir(r, dir) {
		if strings.HasSuffix(e.Name(), ".sample") && e.Type().IsRegular() {
			continue
		}
		if r.RemoveAll(path.Join(dir, e.Name())) == nil {
			taken = append(taken, shown+"/"+e.Name())
		}
	}
	return taken
}

// screenGitConfig rewrites a config file without the keys keep does not
// hold; a config that is a link goes whole. The rewrite is a new file
// beside it renamed over it, both under r.
func screenGitConfig(r *os.Root, name, shown string, keep []string) []string {
	taken, st := takeOdd(r, name, shown, fs.FileMode.IsRegular)
	if st == nil {
		return taken
	}
	b, err := r.ReadFile(name)
	if err != nil {
		return nil
	}
	out, dropped := filterGitConfig(b, keep)
	if len(dropped) == 0 {
		return nil
	}
	if rootWriteAtomic(r, name, out, st.Mode().Perm()) != nil {
		r.Remove(name) // not rewritten: not kept either
	}
	for i, d := range dropped {
		dropped[i] = shown + ": " + d
	}
	return dropped
}

// rootWriteAtomic writes name under r through a new file beside it,
// synced and renamed over it.
func rootWriteAtomic(r *os.Root, name string, data []byte, perm fs.FileMode) error {
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := name + ".lembas-" + hex.EncodeToString(rnd[:])
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		r.Remove(tmp)
	}
	return err
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

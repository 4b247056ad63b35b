package main

// gitSnapshot: protected paths compared before and after a command and
// put back, every name through a folder held since the snapshot, where
// no namespace could keep them read-only.

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// gitSnapshot keeps the protected git files as they were before a command,
// so a change can be seen and undone where no namespace could stop it.
type gitSnapshot struct {
	roots []string
	globs []string           // protect's patterns: a match that was not there before is the command's
	above map[string]string  // root → its folder, links resolved, when taken
	files map[string]gitFile // path → what it held; roots that did not exist are absent
	// held is each root's folder opened when the snapshot was taken:
	// restore writes and removes through these (os.Root), so a command's
	// process left running that swaps a folder for a link after the
	// command (.git → ~/.ssh) cannot have lembas, outside any sandbox,
	// write or remove where the link points.
	held map[string]*os.Root
}

type gitFile struct {
	mode os.FileMode
	data []byte // a file's bytes, a link's target
	dir  bool
}

// takeGitSnapshot reads the protected paths (a file, or a folder walked
// whole; hooks folders are small). A pattern's matches (a submodule's
// config and hooks, a worktree's folder) are those that exist now; one a
// command makes — which the world could not bind, as it was not there
// when the world began — reads as added, and restore takes it away.
func takeGitSnapshot(roots []string, globs ...string) gitSnapshot {
	s := gitSnapshot{globs: globs, files: map[string]gitFile{}}
	if len(globs) > 0 {
		held := map[string]bool{}
		for _, r := range roots {
			held[r] = true
		}
		for _, m := range s.matches() {
			if !held[m] {
				roots = append(roots, m) // bound in the world, or new: compared either way
			}
		}
	}
	s.roots = roots
	s.above = map[string]string{}
	for _, r := range roots {
		s.read(r, s.files)
		s.above[r] = evalExisting(filepath.Dir(r))
		if d := heldDirOf(r); s.held[d] == nil {
			if h, err := os.OpenRoot(d); err == nil {
				if s.held == nil {
					s.held = map[string]*os.Root{}
				}
				s.held[d] = h
			}
		}
	}
	return s
}

// heldDirOf is the folder a snapshot holds for root r: the one holding
// its git folder (.git), so that a .git the command replaced by a new
// folder is restored where git will read it, while a .git replaced by a
// link out of that folder is not followed; another root's own folder.
func heldDirOf(r string) string {
	sep := string(filepath.Separator)
	if i := strings.Index(r+sep, sep+".git"+sep); i > 0 {
		return r[:i]
	}
	return filepath.Dir(r)
}

// close lets the held folders go.
//
//go:noinline
func (s gitSnapshot) close() {
	for _, h := range s.held {
		h.Close()
	}
}

// heldFor is the held folder p is under (the deepest) and p's name in it.
func (s gitSnapshot) heldFor(p string) (*os.Root, string, error) {
	best := ""
	for d := range s.held {
		if within(d, p) && p != d && len(d) > len(best) {
			best = d
		}
	}
	if best == "" {
		return nil, "", errorf("%s is under no folder held since the command began", p)
	}
	rel, _ := filepath.Rel(best, p)
	return s.held[best], rel, nil
}

// aboveMoved says whether the folders above p's root now lead elsewhere
// than when the snapshot was taken (the command replaced .git by a link):
// what was there is written nowhere but where it was.
func (s gitSnapshot) aboveMoved(p string) error {
	for r, was := range s.above {
		if p == r || within(r, p) {
			if now := evalExisting(filepath.Dir(r)); now != was {
				return errorf("%s now leads to %s", filepath.Dir(r), now)
			}
		}
	}
	return nil
}

// matches is what the snapshot's patterns match now. A match reached
// through a link below the pattern's fixed part (modules/evil -> ~) is
// the link itself: restore removes what the command made, never what it
// points at — a file of the person's that only looks like a match.
func (s gitSnapshot) matches() []string {
	var out []string
	for _, g := range s.globs {
		base := g
		if i := strings.IndexByte(g, '*'); i >= 0 {
			base = filepath.Dir(g[:i+1])
		}
		// Glob follows a link in the pattern's fixed part: with
		// .git/worktrees or .git/modules (or .git) made a link to the
		// person's folder, every entry there would read as a match the
		// command added, and restore would remove it. The link itself is
		// the match then, and nothing past it is globbed.
		if l := linkAbove(base); l != "" {
			out = append(out, l)
			continue
		}
		ms, _ := filepath.Glob(g)
		for _, m := range ms {
			rel, err := filepath.Rel(base, m)
			if err != nil || !within(base, m) {
				continue
			}
			cur := base
			for _, c := range strings.Split(rel, string(filepath.Separator)) {
				cur = filepath.Join(cur, c)
				if fi, err := os.Lstat(cur); err != nil || fi.Mode()&fs.ModeSymlink != 0 || cur == m {
					out = append(out, cur)
					break
				}
			}
		}
	}
	return uniq(out)
}

// linkAbove is base or its folder when either is a link (or not a
// folder), "" when both are folders.
func linkAbove(base string) string {
	for _, p := range []string{filepath.Dir(base), base} {
		fi, err := os.Lstat(p)
		if err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// nowRoots is the roots and every match of the patterns now.
func (s gitSnapshot) nowRoots() []string {
	if len(s.globs) == 0 {
		return s.roots
	}
	return uniq(append(append([]string{}, s.roots...), s.matches()...))
}

//go:noinline
func (s gitSnapshot) read(root string, into map[string]gitFile) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		f := gitFile{mode: fi.Mode(), dir: d.IsDir()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			f.data = []byte(t)
		case fi.Mode().IsRegular():
			f.data, _ = os.ReadFile(p)
		}
		into[p] = f
		return nil
	})
}

// changed lists what differs now from the snapshot.
func (s gitSnapshot) changed() []string {
	if len(s.roots) == 0 && len(s.globs) == 0 {
		return nil
	}
	now := map[string]gitFile{}
	for _, r := range s.nowRoots() {
		s.read(r, now)
	}
	var out []string
	for p, f := range s.files {
		g, ok := now[p]
		if !ok || g.mode != f.mode || string(g.data) != string(f.data) {
			out = append(out, p)
		}
	}
	for p := range now {
		if _, ok := s.files[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// restoreSwap, when set (tests only), runs after restore's last look at
// p, before it writes: where a process left running would swap a folder.
var restoreSwap func(p string)

// restore puts the protected paths back: what was added is removed, what
// changed or went is written again (files atomically) — every name
// through the folder held since the snapshot (heldFor).
func (s gitSnapshot) restore() error {
	now := map[string]gitFile{}
	for _, r := range s.nowRoots() {
		s.read(r, now)
	}
	var paths []string
	for p := range now {
		if _, ok := s.files[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(paths))) // children before their folders
	for _, p := range paths {
		h, rel, err := s.heldFor(p)
		if err == nil {
			err = h.RemoveAll(rel)
		}
		if err != nil {
			return err
		}
	}
	paths = paths[:0]
	for p := range s.files {
		paths = append(paths, p)
	}
	sort.Strings(paths) // folders before their children
	for _, p := range paths {
		f, g := s.files[p], now[p]
		if g.mode == f.mode && string(g.data) == string(f.data) && g.dir == f.dir {
			continue
		}
		h, rel, err := s.heldFor(p)
		if err != nil {
			return err
		}
		if !f.dir && g.dir {
			h.RemoveAll(rel)
		}
		if g.mode&fs.ModeSymlink != 0 && f.mode&fs.ModeSymlink == 0 {
			h.Remove(rel) // a link the command made in its place: never written, made or chmod'ed through
		}
		if err := s.aboveMoved(p); err != nil {
			return err
		}
		if restoreSwap != nil {
			restoreSwap(p)
		}
		switch {
		case f.dir:
			if err = h.MkdirAll(rel, f.mode.Perm()); err == nil {
				err = h.Chmod(rel, f.mode.Perm())
			}
		case f.mode&fs.ModeSymlink != 0:
			h.Remove(rel)
			err = h.Symlink(string(f.data), rel)
		default:
			if g.mode&fs.ModeSymlink != 0 {
				h.Remove(rel) // never write through a link the command made
			}
			if err = rootWriteAtomic(h, rel, f.data, f.mode.Perm()); err == nil {
				err = h.Chmod(rel, f.mode.Perm())
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removeAdded removes, through the held folders, what is under the
// snapshot's roots now that was not when it was taken, but for what keep
// (nil: nothing) says git wrote; what was there and changed is left. It
// returns what it removed, relative to root (a folder, not what was in it).
func (s gitSnapshot) removeAdded(root string, keep func(path, rel string) bool) ([]string, error) {
	var gone, shown []string
	for _, m := range s.changed() { // sorted: a folder before what is in it
		if _, had := s.files[m]; had || underAnyRoot(m, gone) {
			continue
		}
		rel := relPath(root, m)
		if keep != nil && keep(m, rel) {
			continue
		}
		h, hrel, err := s.heldFor(m)
		if err == nil {
			err = h.RemoveAll(hrel)
		}
		if err != nil {
			return append(shown, rel), err
		}
		gone, shown = append(gone, m), append(shown, rel)
	}
	return shown, nil
}

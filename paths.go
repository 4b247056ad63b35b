package main

// Containment: every path a tool touches is resolved — relative to the
// project root, "..", symlinks followed — before anyone judges it, so a
// symlink inside the project that points outside counts as outside.

import (
	"os"
	"path/filepath"
	"strings"
)

// resolvePath turns a path as a model gave it into an absolute, cleaned
// path with symlinks resolved as far as the path exists (a file about to be
// created resolves through its existing parent). inside says whether it is
// within root (root itself must already be resolved).
func resolvePath(root, p string) (abs string, inside bool) {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, "file://") {
		p = strings.TrimPrefix(p, "file://")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	abs = evalExisting(filepath.Clean(p))
	return abs, within(root, abs)
}

// evalExisting resolves symlinks in the longest existing prefix of p and
// appends the rest unchanged.
func evalExisting(p string) string {
	rest := ""
	cur := p
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			if rest == "" {
				return r
			}
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		if rest == "" {
			rest = filepath.Base(cur)
		} else {
			rest = filepath.Join(filepath.Base(cur), rest)
		}
		cur = parent
	}
}

// within says whether p is root or below it.
func within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// relPath is p relative to root for display (slashes), or p itself when it
// is outside: the prompt never carries the machine's absolute paths for
// project files.
func relPath(root, p string) string {
	if within(root, p) {
		r, err := filepath.Rel(root, p)
		if err == nil {
			return filepath.ToSlash(r)
		}
	}
	return p
}

// projectRoot resolves the folder a session works in.
func projectRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(r)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", &os.PathError{Op: "open project", Path: dir, Err: errNotDir}
	}
	return r, nil
}

type pathErr string

func (e pathErr) Error() string { return string(e) }

const errNotDir = pathErr("not a directory")

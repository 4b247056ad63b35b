package main

// relpath.go: two lexical relations between cleaned paths, for every floor;
// they resolve nothing (containment with links followed is contain.go's).

import (
	"path/filepath"
	"strings"
)

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

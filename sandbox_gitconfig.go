package main

// The project's files that git's config names for git to run or to read
// as config (sandbox.json git_config): husky's core.hooksPath = .husky,
// an include.path = ../shared.gitconfig, a diff textconv or a filter's
// script in the project. They are project files, writable like the rest,
// yet git runs them in the person's next commit or diff outside lembas:
// a command that rewrote one would plant code there. They are protected
// as git's own hooks are (bound read-only in the world; compared and put
// back without one).

import (
	"os"
	"path/filepath"
	"strings"
)

// gitConfigProjectNames is what the repository's config (its config and
// config.worktree, the common folder's, and the person's global ones,
// with the files they include) names under the project or its git
// folders: the path keys' values whether they exist or not, and each word
// of a command key's value that is a file there.
func gitConfigProjectNames(root, gd, common, home string, getenv func(string) string) []string {
	spec := theSandboxSpec().GitConfig
	files := []string{filepath.Join(gd, "config"), filepath.Join(gd, "config.worktree")}
	if common != gd {
		files = append(files, filepath.Join(common, "config"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		files = append(files, filepath.Join(x, "git", "config"))
	}
	inside := func(p string) bool { return within(root, p) || within(gd, p) || within(common, p) }
	var out []string
	seen := map[string]bool{}
	for len(files) > 0 {
		f := filepath.Clean(files[0])
		files = files[1:]
		if seen[f] || len(seen) >= spec.MaxFiles {
			continue
		}
		seen[f] = true
		b, err := os.ReadFile(f)
		if err != nil || len(b) > spec.MaxBytes {
			continue
		}
		gitConfigEach(string(b), func(key, val string) {
			switch {
			case gitKeyIn(key, spec.PathKeys):
				p := gitConfigPath(val, home, filepath.Dir(f), root, key)
				if p == "" {
					return
				}
				if strings.HasSuffix(key, ".path") {
					files = append(files, p) // an include: read in turn
				}
				if inside(p) {
					out = append(out, p)
				}
			case gitKeyIn(key, spec.CommandKeys):
				for _, w := range strings.Fields(strings.TrimPrefix(val, "!")) {
					w = strings.Trim(w, `"'`)
					if w == "" || strings.HasPrefix(w, "-") {
						continue
					}
					p := gitConfigPath(w, home, root, root, key)
					if fi, err := os.Stat(p); p != "" && err == nil && fi.Mode().IsRegular() && inside(p) {
						out = append(out, p)
					}
				}
			}
		})
	}
	return uniq(out)
}

// gitConfigPath is a config value as a path: ~/ is the home folder; a
// relative include is taken from the including file's folder, any other
// relative path from the project (where git runs hooks and filters).
func gitConfigPath(v, home, fileDir, root, key string) string {
	switch {
	case v == "":
		return ""
	case strings.HasPrefix(v, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, v[2:])
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	case strings.HasSuffix(key, ".path"):
		return filepath.Join(fileDir, v)
	}
	return filepath.Join(root, v)
}

// gitConfigEach calls f with each key (section.key, or
// section.sub.key; lower case but the subsection) and value of a git
// config file's text; a key with no value has "".
func gitConfigEach(text string, f func(key, val string)) {
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			head := line[1:end]
			name, sub, hasSub := strings.Cut(head, " ")
			section = strings.ToLower(strings.TrimSpace(name))
			if hasSub {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		k, v, _ := strings.Cut(line, "=")
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.HasPrefix(v, `"`) {
			v = strings.TrimSpace(v[:i])
		}
		f(section+"."+strings.ToLower(strings.TrimSpace(k)), strings.Trim(v, `"`))
	}
}

// gitKeyIn says whether key matches one of the patterns: section.key or
// section.*.key (any subsection), a * key matching any.
func gitKeyIn(key string, pats []string) bool {
	parts := strings.Split(key, ".")
	sec, name := strings.ToLower(parts[0]), parts[len(parts)-1]
	hasSub := len(parts) > 2
	for _, p := range pats {
		pp := strings.Split(p, ".")
		switch len(pp) {
		case 2:
			if pp[0] == sec && !hasSub && (pp[1] == "*" || pp[1] == name) {
				return true
			}
		case 3:
			if pp[0] == sec && hasSub && (pp[2] == "*" || pp[2] == name) {
				return true
			}
		}
	}
	return false
}

// gitConfigNamesPath says whether abs is, or is under, what the project's
// git config names (gitConfigProjectNames): the file tools ask before
// writing it, as the world keeps commands from writing it.
func gitConfigNamesPath(root, home, abs string) bool {
	gd, common, ok := gitDirs(root)
	if !ok {
		return false
	}
	for _, p := range gitConfigProjectNames(root, gd, common, home, os.Getenv) {
		if p == abs || within(p, abs) {
			return true
		}
	}
	return false
}

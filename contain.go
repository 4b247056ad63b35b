package main

// Containment: every path a tool touches is read as a model means it (~,
// ~name and $HOME are home folders), then resolved — relative to the
// project root, "..", symlinks followed, dangling ones to where a write
// through them would land — before anyone judges it, so a symlink inside
// the project that points outside counts as outside. Names that hide
// characters, loop or run too long are errors (hardline.json paths).

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// pathsSpec is hardline.json paths.
type pathsSpec struct {
	About         string   `json:"about"`
	RefuseClasses []string `json:"refuse_classes"`
	MaxNameBytes  int      `json:"max_name_bytes"`
	MaxPathBytes  int      `json:"max_path_bytes"`
	MaxLinks      int      `json:"max_links"`
	AgentConfig   struct {
		About    string   `json:"about"`
		Patterns []string `json:"patterns"`
		Reason   string   `json:"reason"`

		pats [][]string
	} `json:"agent_config"`
}

// resolvePath turns a path as a model gave it into an absolute, cleaned
// path with symlinks resolved as far as the path exists (a file about to be
// created resolves through its existing parent). inside says whether it is
// within root (root itself must already be resolved). A path that cannot
// be read (resolvePathErr's error) is never inside.
//
//go:noinline
func resolvePath(root, p string) (abs string, inside bool) {
	abs, inside, _ = resolvePathErr(root, p)
	return abs, inside
}

// resolvePathErr is resolvePath with the reason a path cannot be judged:
// hidden characters, a name too long, a symlink loop.
func resolvePathErr(root, p string) (abs string, inside bool, err error) {
	return resolvePathIn(root, homeDir(), p)
}

// resolvePathIn is resolvePathErr with the home folder ~ and $HOME stand
// for given (@path expansion judges with the session's).
func resolvePathIn(root, home, p string) (abs string, inside bool, err error) {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, "file://") {
		p = strings.TrimPrefix(p, "file://")
	}
	if err := checkPathText(p); err != nil {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		return filepath.Clean(p), false, err
	}
	p = expandHome(p, home)
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	abs, err = resolveLinks(p)
	if err != nil {
		return p, false, err
	}
	return abs, within(root, abs), nil
}

// checkPathText refuses a path whose text hides what it names, or is
// longer than a file system takes.
func checkPathText(p string) error {
	h, err := loadHardline()
	if err != nil {
		return err
	}
	ps := &h.Paths
	if strings.IndexByte(p, 0) >= 0 {
		return errorNew("the path holds a NUL byte; give it without")
	}
	if !utf8.ValidString(p) {
		return errorNew("the path is not valid UTF-8; give it as UTF-8 text")
	}
	for _, r := range p {
		if r < 0x80 && r >= 0x20 && r != 0x7f {
			continue
		}
		if c := unicodeClass(r); c != "" && contains(ps.RefuseClasses, c) {
			return errorf("the path holds %s (U+%04X), which hides what it names; give the name in plain characters", c, r)
		}
	}
	if len(p) > ps.MaxPathBytes {
		return errorf("the path is %d bytes long, more than %d; give a shorter one", len(p), ps.MaxPathBytes)
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if len(part) > ps.MaxNameBytes {
			return errorf("a name in the path is %d bytes long, more than %d; give a shorter one", len(part), ps.MaxNameBytes)
		}
	}
	return nil
}

// expandHome reads ~, ~/x, ~name/x, $HOME/x and ${HOME}/x as a shell
// would: a model writing ~/.ssh means the home folder, never a folder
// named ~ in the project. ./~ still names that folder.
func expandHome(p, home string) string {
	sep := func(s string) bool { return s == "" || s[0] == '/' || s[0] == filepath.Separator }
	for _, v := range []string{"$HOME", "${HOME}"} {
		if strings.HasPrefix(p, v) && sep(p[len(v):]) {
			return home + p[len(v):]
		}
	}
	if !strings.HasPrefix(p, "~") {
		return p
	}
	end := strings.IndexAny(p, `/`+string(filepath.Separator))
	if end < 0 {
		end = len(p)
	}
	name := p[1:end]
	if name == "" {
		return home + p[end:]
	}
	for _, r := range name {
		if !(r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return p
		}
	}
	if name == loginName(home) {
		return home + p[end:] // the person's own, as the floor reads ~login
	}
	if u, err := user.Lookup(name); err == nil && u.HomeDir != "" {
		return u.HomeDir + p[end:]
	}
	// Nobody of that name here: where homes are kept, beside one's own.
	return filepath.Join(filepath.Dir(home), name) + p[end:]
}

// evalExisting resolves symlinks in the longest existing prefix of p and
// appends the rest unchanged; a dangling link is followed to where it
// points. A loop leaves p as it is.
//
//go:noinline
func evalExisting(p string) string {
	if r, err := resolveLinks(p); err == nil {
		return r
	}
	return p
}

// resolveLinks resolves p through every symlink in it, also one that
// points at nothing (a write through it lands at its target, so that is
// where it is judged). More than max_links links is a loop: an error.
func resolveLinks(p string) (string, error) {
	// max_links is read when a link is met: a path without one parses no floor.
	max := 0
	seen := map[string]bool{} // links followed: one met again is a loop
	for hops := 0; ; hops++ {
		rest := ""
		cur := p
		followed := false
		for {
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				if rest == "" {
					return r, nil
				}
				return filepath.Join(r, rest), nil
			}
			if st, err := os.Lstat(cur); err == nil && st.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(cur)
				if err != nil {
					return "", errorf("reading the link %s: %v", cur, err)
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(cur), target)
				}
				if max == 0 {
					max = 40
					if h, err := loadHardline(); err == nil && h.Paths.MaxLinks > 0 {
						max = h.Paths.MaxLinks
					}
				}
				if hops >= max || seen[cur] {
					return "", errorf("the path %s goes through more than %d symbolic links (a loop?); give the file's own path", p, max)
				}
				seen[cur] = true
				p = filepath.Clean(filepath.Join(target, rest))
				followed = true
				break
			}
			parent := filepath.Dir(cur)
			if parent == cur {
				return p, nil
			}
			if rest == "" {
				rest = filepath.Base(cur)
			} else {
				rest = filepath.Join(filepath.Base(cur), rest)
			}
			cur = parent
		}
		if !followed {
			return p, nil
		}
	}
}

// agentConfig says whether a path inside the project (rel, slashes) is the
// project's agent or editor configuration (hardline.json paths.agent_config),
// which a tool writes only when the person says so.
func agentConfig(rel string) (string, bool) {
	h, err := loadHardline()
	if err != nil {
		return "", true
	}
	ns := splitName(windowsName(strings.ToLower(rel)))
	for i, pat := range h.Paths.AgentConfig.pats {
		if segMatch(pat, ns) {
			return h.Paths.AgentConfig.Patterns[i], true
		}
	}
	return "", false
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

package main

// The search tools: glob, grep, list. All walk the project through
// walkProject (ignore files honoured, .git skipped) and cap their output,
// saying how much was left out. grep reads files in parallel behind a
// literal prefilter, and hands the search to ripgrep when it is on PATH,
// with the same flags of what counts, so the answer is the same either way.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

func init() {
	toolImpls["glob"] = toolGlob
	toolImpls["grep"] = toolGrep
	toolImpls["list"] = toolList
}

// searchStart resolves the folder (or file) a search starts from; an
// error when it is not the one the call was judged by (fs_nolinks.go).
func (tb *toolbox) searchStart(ctx context.Context, p string) (string, string, error) {
	if strings.TrimSpace(p) == "" || p == "." {
		return tb.root, ".", nil
	}
	abs, err := tb.toolPath(ctx, p)
	return abs, p, err
}

func toolGlob(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}
	json.Unmarshal(raw, &a)
	t := tb.spec.Tools["glob"]
	start, shown, err := tb.searchStart(ctx, a.Path)
	if err != nil {
		return errResult(err.Error())
	}
	if _, err := os.Stat(start); err != nil {
		return fsError(shown, err)
	}
	re, err := compileGlob(a.Pattern)
	if err != nil {
		return errResult(t.text("bad_pattern", "pattern", a.Pattern, "error", err))
	}
	base := relPath(tb.root, start)
	var hits []string
	var mu mutex
	walkProjectParallel(tb.root, start, grepWorkers(), func(rel string, d fs.DirEntry) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			return nil
		}
		sub := rel
		if base != "." && strings.HasPrefix(rel, base+"/") {
			sub = rel[len(base)+1:]
		}
		if re.MatchString(sub) {
			mu.Lock()
			hits = append(hits, rel)
			mu.Unlock()
		}
		return nil
	})
	if len(hits) == 0 {
		return toolResult{Text: t.text("none", "pattern", a.Pattern)}
	}
	sort.Strings(hits)
	max := t.limit("max_results")
	left := 0
	if len(hits) > max {
		left = len(hits) - max
		hits = hits[:max]
	}
	out := strings.Join(hits, "\n")
	if left > 0 {
		out += "\n" + t.text("more", "left", left)
	}
	return toolResult{Text: out}
}

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Include    string `json:"include"`
	IgnoreCase bool   `json:"ignore_case"`
}

// grepMatch is one matching line.
type grepMatch struct {
	path string
	line int
	text string
}

func toolGrep(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a grepArgs
	json.Unmarshal(raw, &a)
	t := tb.spec.Tools["grep"]
	expr := a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return errResult(t.text("bad_pattern", "pattern", a.Pattern, "error", err))
	}
	start, shown, err := tb.searchStart(ctx, a.Path)
	if err != nil {
		return errResult(err.Error())
	}
	startInfo, err := os.Stat(start)
	if err != nil {
		return fsError(shown, err)
	}
	// Small trees are searched here: starting ripgrep costs more than the
	// whole search. A tree past rg_above_files files goes to ripgrep when
	// it is on PATH; both count the same files, so the answer is the same.
	// The choice is made without walking where the size is known (the last
	// search's count, git's index); else the walk hands over when it passes
	// the size, and the count is remembered for the next call.
	above := t.limit("rg_above_files")
	var matches []grepMatch
	err = errTreeTooBig
	if !useRG(tb.root, above) {
		handOver := 0
		if rgPath() != "" {
			handOver = above
		}
		matches, err = tb.grepGo(ctx, re, a, start, handOver)
	}
	if err == errTreeTooBig {
		if rg := rgPath(); rg != "" {
			matches, err = tb.grepRG(ctx, rg, a, start)
		}
		if err != nil || rgPath() == "" {
			matches, err = tb.grepGo(ctx, re, a, start, 0)
		}
	}
	if err != nil {
		return errResult(err.Error())
	}
	// A folder's protected files (.env, keys, .git internals) never reach
	// the prompt through a search; a protected file named as the path was
	// already put to the person by the permission check.
	hidden := map[string]bool{}
	if startInfo.IsDir() && tb.protected != nil {
		kept := matches[:0]
		for _, m := range matches {
			if hidden[m.path] || tb.protected(filepath.Join(tb.root, filepath.FromSlash(m.path))) {
				hidden[m.path] = true
				continue
			}
			kept = append(kept, m)
		}
		matches = kept
	}
	res := grepAnswer(t, a.Pattern, matches)
	if len(hidden) > 0 {
		res.Text += "\n" + t.text("protected", "n", len(hidden))
	}
	return res
}

// grepAnswer sorts and caps matches into the tool's answer.
func grepAnswer(t *toolSpec, pattern string, matches []grepMatch) toolResult {
	if len(matches) == 0 {
		return toolResult{Text: t.text("none", "pattern", pattern)}
	}
	sort.Slice(matches, func(i, j int) bool {
		if matches[i].path != matches[j].path {
			return matches[i].path < matches[j].path
		}
		return matches[i].line < matches[j].line
	})
	max := t.limit("max_matches")
	maxLine := t.limit("max_line_chars")
	var b strings.Builder
	for i, m := range matches {
		if i == max {
			break
		}
		text := m.text
		if len(text) > maxLine {
			text = cutUTF8(text, maxLine) + "…"
		}
		b.WriteString(m.path + ":" + strconv.Itoa(m.line) + ":" + text + "\n")
	}
	if len(matches) > max {
		b.WriteString(t.text("more", "left", len(matches)-max) + "\n")
	}
	return toolResult{Text: strings.TrimSuffix(b.String(), "\n")}
}

var (
	rgOnce sync.Once
	rgBin  string
)

// rgPath is ripgrep's path, or "" (LEMBAS_NO_RG=1 turns it off, for tests
// that compare both).
func rgPath() string {
	if os.Getenv("LEMBAS_NO_RG") != "" {
		return ""
	}
	rgOnce.Do(func() { rgBin, _ = exec.LookPath("rg") })
	return rgBin
}

// errTreeTooBig stops grepGo when a tree is big enough for ripgrep.
var errTreeTooBig = errors.New("tree too big for the in-process search")

// grepGo searches the project in process (tools_search_engine.go). With
// handOver > 0 it gives up with errTreeTooBig once the walk passes
// handOver files; a whole walk from the root is remembered as the tree's
// size.
func (tb *toolbox) grepGo(ctx context.Context, re *regexp.Regexp, a grepArgs, start string, handOver int) ([]grepMatch, error) {
	var inc *globMatcher
	if a.Include != "" {
		var err error
		if inc, err = compileGlob(a.Include); err != nil {
			return nil, err
		}
	}
	m := newLineMatcher(re, a.Pattern, a.IgnoreCase)
	maxSize := int64(tb.spec.Tools["grep"].limit("max_file_bytes"))
	out, seen, err := grepTree(ctx, tb.root, start, m, inc, maxSize, handOver)
	switch {
	case err == errTreeTooBig:
		rememberTree(tb.root, seen)
	case err == nil && start == tb.root:
		rememberTree(tb.root, seen)
	}
	return out, err
}

// grepRG runs ripgrep with flags that make it count the same files as
// walkProject: hidden files searched, .git skipped, ignore files honoured
// without needing a git repository, global and parent ignores off,
// symlinks not followed, binary files skipped, the same size limit.
func (tb *toolbox) grepRG(ctx context.Context, rg string, a grepArgs, start string) ([]grepMatch, error) {
	t := tb.spec.Tools["grep"]
	args := []string{"--no-config", "--line-number", "--no-heading", "--with-filename", "--color", "never",
		"--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-exclude", "-g", "!.git",
		"--max-filesize", strconv.Itoa(t.limit("max_file_bytes")), "--no-messages"}
	if start == tb.root {
		args = append(args, "--no-ignore-parent")
	}
	if a.IgnoreCase {
		args = append(args, "-i")
	}
	// include is applied to rg's answer below, not with -g: a -g glob
	// overrides the ignore files, which would make rg count other files.
	var inc *globMatcher
	if a.Include != "" {
		var err error
		if inc, err = compileGlob(a.Include); err != nil {
			return nil, err
		}
	}
	target := relPath(tb.root, start)
	args = append(args, "-e", a.Pattern, "--", target)
	cmd := exec.CommandContext(ctx, rg, args...)
	cmd.Dir = tb.root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return nil, nil // no matches
		}
		return nil, err
	}
	var ms []grepMatch
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		// path:line:text — the path may hold ':' so take the first ":N:".
		i := strings.Index(line, ":")
		for i >= 0 {
			rest := line[i+1:]
			j := strings.IndexByte(rest, ':')
			if j > 0 {
				if n, err := strconv.Atoi(rest[:j]); err == nil {
					p := filepath.ToSlash(strings.TrimPrefix(line[:i], "./"))
					if inc == nil || inc.MatchString(p) {
						ms = append(ms, grepMatch{p, n, strings.TrimSuffix(rest[j+1:], "\r")})
					}
					break
				}
			}
			k := strings.Index(rest, ":")
			if k < 0 {
				i = -1
			} else {
				i += k + 1
			}
		}
	}
	return confirmMatches(tb.root, ms), nil
}

// confirmMatches keeps the matches ripgrep found that the file, read here
// refusing any link on the way (fs_nolinks.go), holds as rg said: rg
// opens by path, and a folder swapped for a link while it read would have
// it search outside the project.
func confirmMatches(root string, ms []grepMatch) []grepMatch {
	kept, at := ms[:0], ""
	var lines []string
	for _, m := range ms {
		if m.path != at { // rg prints a file's matches together
			at = m.path
			data, _ := readFileNoLinks(filepath.Join(root, filepath.FromSlash(m.path)))
			lines = strings.Split(string(data), "\n")
		}
		if m.line >= 1 && m.line <= len(lines) && strings.TrimSuffix(lines[m.line-1], "\r") == m.text {
			kept = append(kept, m)
		}
	}
	return kept
}

func toolList(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Path  string `json:"path"`
		Depth int    `json:"depth"`
	}
	json.Unmarshal(raw, &a)
	t := tb.spec.Tools["list"]
	start, shown, err := tb.searchStart(ctx, a.Path)
	if err != nil {
		return errResult(err.Error())
	}
	st, err := os.Stat(start)
	if err != nil {
		return fsError(shown, err)
	}
	if !st.IsDir() {
		return errResult(t.text("not_dir", "path", shown))
	}
	depth := t.limit("default_depth")
	if a.Depth > 0 {
		depth = a.Depth
	}
	base := relPath(tb.root, start)
	max := t.limit("max_entries")
	var lines []string
	total := 0
	walkProject(tb.root, start, func(rel string, d fs.DirEntry) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sub := rel
		if base != "." {
			sub = strings.TrimPrefix(rel, base+"/")
		}
		level := strings.Count(sub, "/")
		if level >= depth {
			return fs.SkipDir
		}
		total++
		if len(lines) < max {
			name := d.Name()
			if d.IsDir() {
				name += "/"
			}
			lines = append(lines, strings.Repeat("  ", level)+name)
		}
		return nil
	})
	if total == 0 {
		return toolResult{Text: t.text("empty", "path", shown)}
	}
	out := strings.Join(lines, "\n")
	if total > len(lines) {
		out += "\n" + t.text("more", "left", total-len(lines))
	}
	return toolResult{Text: out}
}

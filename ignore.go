package main

// Walking a project the way a person expects: .gitignore and .ignore files
// (at every level, the deeper and the later line winning, "!" to take a
// file back) are honoured, and .git is never entered. Symlinks are not
// followed, so a walk never leaves the project.

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// ignoreFile is the rules of one folder's .gitignore and .ignore.
type ignoreFile struct {
	base  string // folder, relative to the root, "" for the root
	rules []ignoreRule
}

// readIgnores reads dir's ignore files (rel is dir relative to the root).
func readIgnores(dir, rel string) *ignoreFile {
	var f *ignoreFile
	for _, name := range []string{".gitignore", ".ignore"} {
		fh, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if r, ok := parseIgnoreLine(sc.Text()); ok {
				if f == nil {
					f = &ignoreFile{base: rel}
				}
				f.rules = append(f.rules, r)
			}
		}
		fh.Close()
	}
	return f
}

// parseIgnoreLine reads one gitignore line.
func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}, false
	}
	// Trailing spaces are dropped unless escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	var r ignoreRule
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, "\\!") || strings.HasPrefix(line, "\\#") {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	expr := globRegexp(line)
	if anchored {
		expr = "^" + expr + "$"
	} else {
		expr = "(^|/)" + expr + "$"
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return ignoreRule{}, false
	}
	r.re = re
	return r, true
}

// globRegexp translates a glob (*, ?, [..], **, {a,b}) to a regular
// expression over slash-separated paths.
func globRegexp(g string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				// "**/" any folders (or none); "/**" everything below; "**" alone anything.
				if i+2 < len(g) && g[i+2] == '/' {
					b.WriteString("(?:.*/)?")
					i += 2
				} else {
					b.WriteString(".*")
					i++
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			cls := g[i+1 : i+1+j]
			if strings.HasPrefix(cls, "!") {
				cls = "^" + cls[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(cls, `\`, `\\`) + "]")
			i += j + 1
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth > 0 {
				depth--
				b.WriteString(")")
			} else {
				b.WriteString(`\}`)
			}
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		case '\\':
			if i+1 < len(g) {
				i++
				b.WriteString(regexp.QuoteMeta(string(g[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	for ; depth > 0; depth-- {
		b.WriteString(")")
	}
	return b.String()
}

// ignored decides rel (slash path from the root) against the stack of
// ignore files that apply to it; the last matching rule wins.
func ignored(stack []*ignoreFile, rel string, isDir bool) bool {
	ign := false
	for _, f := range stack {
		sub := rel
		if f.base != "" {
			if !strings.HasPrefix(rel, f.base+"/") {
				continue
			}
			sub = rel[len(f.base)+1:]
		}
		for _, r := range f.rules {
			if r.dirOnly && !isDir {
				continue
			}
			if r.re.MatchString(sub) {
				ign = !r.negate
			}
		}
	}
	return ign
}

// walkProject visits every file and folder under start (an absolute path
// inside root) that is not ignored, in lexical order, with its path
// relative to root. Returning fs.SkipDir from fn for a folder skips it.
func walkProject(root, start string, fn func(rel string, d fs.DirEntry) error) error {
	stack, relStart := ignoresAbove(root, start)
	var walk func(dir, rel string, stack []*ignoreFile) error
	walk = func(dir, rel string, stack []*ignoreFile) error { return visitFolder(dir, rel, stack, fn, walk) }
	st, err := os.Stat(start)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fn(relStart, fs.FileInfoToDirEntry(st))
	}
	return walk(start, relStart, stack)
}

// walkProjectParallel visits what walkProject visits, in no set order,
// with workers goroutines reading folders at once, so fn must be safe to
// call from several of them. The first error fn returns (other than
// fs.SkipDir) ends the walk and is returned. glob sorts what it finds, so
// it takes this walk: on a big tree reading the folders is most of a
// glob's time, and they can be read side by side.
func walkProjectParallel(root, start string, workers int, fn func(rel string, d fs.DirEntry) error) error {
	stack, relStart := ignoresAbove(root, start)
	st, err := os.Stat(start)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fn(relStart, fs.FileInfoToDirEntry(st))
	}
	type job struct {
		dir, rel string
		stack    []*ignoreFile
	}
	var (
		mu       mutex
		more     = sync.NewCond(&mu)
		queue    = []job{{start, relStart, stack}}
		pending  = 1 // folders queued or being read
		firstErr error
	)
	one := func(j job) ([]job, error) {
		var subs []job
		err := visitFolder(j.dir, j.rel, j.stack, fn, func(dir, rel string, stack []*ignoreFile) error {
			subs = append(subs, job{dir, rel, stack})
			return nil
		})
		return subs, err
	}
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			for {
				for len(queue) == 0 && pending > 0 && firstErr == nil {
					more.Wait()
				}
				if pending == 0 || firstErr != nil {
					return
				}
				j := queue[len(queue)-1] // the newest first: the queue stays as deep as the tree, not as wide
				queue = queue[:len(queue)-1]
				mu.Unlock()
				subs, err := one(j)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				queue = append(queue, subs...)
				pending += len(subs) - 1
				more.Broadcast()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// visitFolder reads one folder of a walk, calls fn for each entry the
// walk does not pass by, and hands each folder fn did not skip to into
// (the ordered walk goes down into it at once, the parallel one queues it).
func visitFolder(dir, rel string, stack []*ignoreFile, fn func(string, fs.DirEntry) error, into func(dir, rel string, stack []*ignoreFile) error) error {
	ents, stack, ok := readWalkDir(dir, rel, stack)
	if !ok {
		return nil // an unreadable folder is skipped, not fatal
	}
	for _, d := range ents {
		crel, isDir, skip := walkEntry(stack, rel, d)
		if skip {
			continue
		}
		err := fn(crel, d)
		if err == fs.SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if isDir {
			if err := into(filepath.Join(dir, d.Name()), crel, stack); err != nil {
				return err
			}
		}
	}
	return nil
}

// ignoresAbove is the stack of ignore files that apply at start: those of
// the folders from the root down to it. relStart is start from the root,
// "" for the root itself.
func ignoresAbove(root, start string) (stack []*ignoreFile, relStart string) {
	relStart = relPath(root, start)
	if relStart == "." {
		relStart = ""
	}
	if f := readIgnores(root, ""); f != nil {
		stack = append(stack, f)
	}
	if relStart != "" {
		parts := strings.Split(relStart, "/")
		for i := 1; i < len(parts); i++ {
			rel := strings.Join(parts[:i], "/")
			if f := readIgnores(filepath.Join(root, filepath.FromSlash(rel)), rel); f != nil {
				stack = append(stack, f)
			}
		}
	}
	return stack, relStart
}

// readWalkDir lists a folder of the walk and adds its own ignore files to
// the stack (a copy: the caller's is shared with the folder's siblings).
// A folder's ignore files are opened only when its listing holds one,
// which most folders' do not.
func readWalkDir(dir, rel string, stack []*ignoreFile) ([]fs.DirEntry, []*ignoreFile, bool) {
	ents, err := readDirNoLinks(dir) // a folder swapped for a link since it was listed is not read
	if err != nil {
		return nil, stack, false
	}
	if rel != "" && hasIgnoreFile(ents) {
		if f := readIgnores(dir, rel); f != nil {
			stack = append(stack[:len(stack):len(stack)], f)
		}
	}
	return ents, stack, true
}

// walkEntry is one entry of a folder at rel: its path from the root,
// whether it is a folder, and whether the walk passes it by (a symlink,
// .git, or ignored).
func walkEntry(stack []*ignoreFile, rel string, d fs.DirEntry) (crel string, isDir, skip bool) {
	name := d.Name()
	crel = name
	if rel != "" {
		crel = rel + "/" + name
	}
	if d.Type()&fs.ModeSymlink != 0 {
		return crel, false, true
	}
	isDir = d.IsDir()
	if isDir && name == ".git" {
		return crel, isDir, true
	}
	return crel, isDir, ignored(stack, crel, isDir)
}

// hasIgnoreFile says whether a folder's listing holds an ignore file.
func hasIgnoreFile(ents []fs.DirEntry) bool {
	for _, e := range ents {
		if n := e.Name(); n == ".gitignore" || n == ".ignore" {
			return true
		}
	}
	return false
}

// globMatcher is a compiled glob. The common shapes are matched without
// the regular expression: a glob without a slash is tried on the file's
// name alone, and "*.go", "main*" or a plain name by a suffix, prefix or
// equality test.
type globMatcher struct {
	re       *regexp.Regexp // over the name (nameOnly) or the whole path
	nameOnly bool
	kind     byte // 0: use re; 's': suffix; 'p': prefix; '=': equal
	lit      string
}

// MatchString says whether the slash path rel matches the glob.
func (g *globMatcher) MatchString(rel string) bool {
	s := rel
	if g.nameOnly {
		s = rel[strings.LastIndexByte(rel, '/')+1:]
	}
	switch g.kind {
	case 's':
		return strings.HasSuffix(s, g.lit)
	case 'p':
		return strings.HasPrefix(s, g.lit)
	case '=':
		return s == g.lit
	}
	return g.re.MatchString(s)
}

// compileGlob compiles a glob over slash paths; a glob without a
// slash matches a name at any depth, as people expect of *.go.
func compileGlob(g string) (*globMatcher, error) {
	g = strings.TrimPrefix(g, "./")
	expr := globRegexp(g)
	if strings.Contains(g, "/") {
		re, err := regexp.Compile("^" + expr + "$")
		return &globMatcher{re: re}, err
	}
	m := &globMatcher{nameOnly: !strings.Contains(g, "**")}
	if !m.nameOnly {
		re, err := regexp.Compile("(^|/)" + expr + "$")
		m.re = re
		return m, err
	}
	re, err := regexp.Compile("^" + expr + "$")
	if err != nil {
		return nil, err
	}
	m.re = re
	if body, ok := strings.CutPrefix(g, "*"); ok && !strings.ContainsAny(body, "*?[{\\") {
		m.kind, m.lit = 's', body
	} else if body, ok := strings.CutSuffix(g, "*"); ok && !strings.ContainsAny(body, "*?[{\\") {
		m.kind, m.lit = 'p', body
	} else if !strings.ContainsAny(g, "*?[{\\") {
		m.kind, m.lit = '=', g
	}
	return m, nil
}

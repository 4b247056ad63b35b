package main

// grep's in-process engine and the choice between it and ripgrep.
//
// The engine reads each file once into a buffer its worker reuses, skips
// a binary file by its first bytes, and finds candidate lines without the
// regular expression where it can: a pattern that is a plain literal is
// found with bytes.Index alone; a pattern with a literal every match must
// contain is looked for only on the lines that hold that literal; any other
// pattern without anchors is first tried on the whole file, so that a file
// without a match costs one scan. Line numbers are counted only up to a
// line that matched. Every shortcut gives the answer the line-by-line
// regexp would, which the tests check against ripgrep and against the
// plain loop.

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"sync"
	"unicode/utf8"
)

// lineMatcher finds the matching lines of one file's bytes.
type lineMatcher struct {
	re *regexp.Regexp
	// lit: the whole pattern is this literal, so a line holding it matches.
	lit bool
	// need: bytes every match contains (nil: none known). With fold, need
	// is lower-case ASCII and is looked for in a lower-cased copy.
	need []byte
	fold bool
	// whole: the pattern has no anchors, so "no match in the whole file"
	// means no line matches either.
	whole bool
}

// newLineMatcher studies pattern (as typed, before "(?i)" is added).
func newLineMatcher(re *regexp.Regexp, pattern string, ignoreCase bool) *lineMatcher {
	m := &lineMatcher{re: re}
	flags := syntax.Perl
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return m
	}
	tree = tree.Simplify()
	m.whole = !hasAnchor(tree)
	lit, whole, folded := requiredLiteral(tree)
	if len(lit) == 0 || bytes.ContainsAny(lit, "\r\n") {
		return m
	}
	if !folded {
		m.need, m.lit = lit, whole
		return m
	}
	// A folded literal is looked for in ASCII lower case; that is exact
	// only for ASCII letters whose every fold is ASCII ('k' and 's' also
	// fold to the Kelvin sign and the long s).
	low := make([]byte, len(lit))
	for i, c := range lit {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c >= utf8.RuneSelf || c == 'k' || c == 's' {
			return m
		}
		low[i] = c
	}
	m.need, m.fold = low, true
	return m
}

// requiredLiteral is the longest literal every match of tree contains,
// whether tree is that literal and nothing else, and whether the literal
// is matched without regard to case.
func requiredLiteral(tree *syntax.Regexp) (lit []byte, whole, fold bool) {
	switch tree.Op {
	case syntax.OpLiteral:
		return []byte(string(tree.Rune)), true, tree.Flags&syntax.FoldCase != 0
	case syntax.OpConcat:
		for _, s := range tree.Sub {
			if b, _, f := requiredLiteral(s); len(b) > len(lit) {
				lit, fold = b, f
			}
		}
		return lit, false, fold
	case syntax.OpCapture, syntax.OpPlus:
		// x+ holds x at least once; (x) holds x.
		lit, _, fold = requiredLiteral(tree.Sub[0])
		return lit, false, fold
	}
	return nil, false, false
}

// hasAnchor says whether tree holds ^, $, \A or \z, which mean something
// else on a line than on a whole file.
func hasAnchor(tree *syntax.Regexp) bool {
	switch tree.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	}
	for _, s := range tree.Sub {
		if hasAnchor(s) {
			return true
		}
	}
	return false
}

// match appends data's matching lines (as grepMatch of rel) to out. low
// is a scratch buffer for the folded copy; it is returned for reuse.
func (m *lineMatcher) match(data []byte, rel string, out []grepMatch, low []byte) ([]grepMatch, []byte) {
	hay := data
	if m.fold {
		if cap(low) < len(data) {
			low = make([]byte, len(data), len(data)+len(data)/4)
		}
		low = low[:len(data)]
		for i, c := range data {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			low[i] = c
		}
		hay = low
	}
	n, counted := 1, 0
	emit := func(ls, le int) {
		n += bytes.Count(data[counted:ls], nl)
		counted = ls
		line := bytes.TrimSuffix(data[ls:le], cr)
		if m.lit || m.re.Match(line) {
			out = append(out, grepMatch{rel, n, string(line)})
		}
	}
	switch {
	case m.need != nil:
		for pos := 0; pos <= len(data); {
			i := bytes.Index(hay[pos:], m.need)
			if i < 0 {
				break
			}
			ls, le := lineAround(data, pos, pos+i)
			emit(ls, le)
			pos = le + 1
		}
	case m.whole:
		for pos := 0; pos < len(data); {
			loc := m.re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			ls, le := lineAround(data, pos, pos+loc[0])
			emit(ls, le)
			pos = le + 1
		}
	default:
		for pos := 0; pos < len(data); {
			le := bytes.IndexByte(data[pos:], '\n')
			if le < 0 {
				le = len(data)
			} else {
				le += pos
			}
			if m.re.Match(bytes.TrimSuffix(data[pos:le], cr)) {
				n += bytes.Count(data[counted:pos], nl)
				counted = pos
				out = append(out, grepMatch{rel, n, string(bytes.TrimSuffix(data[pos:le], cr))})
			}
			pos = le + 1
		}
	}
	return out, low
}

var (
	nl = []byte{'\n'}
	cr = []byte{'\r'}
)

// lineAround is the line of data holding offset at, which lies at or past
// from (a line start): its start and the offset of its newline (or the end).
func lineAround(data []byte, from, at int) (int, int) {
	ls := from + bytes.LastIndexByte(data[from:at], '\n') + 1
	le := bytes.IndexByte(data[at:], '\n')
	if le < 0 {
		return ls, len(data)
	}
	return ls, at + le
}

// grepWorker searches files one after another with buffers it keeps.
type grepWorker struct {
	buf, low []byte
}

// binarySniff is how many leading bytes decide that a file is binary
// before the rest is read.
const binarySniff = 8 << 10

// file searches one file: opened once, its size from the open file, read
// into the worker's buffer. A file holding a NUL byte is binary and
// skipped, as ripgrep skips it.
func (w *grepWorker) file(abs, rel string, m *lineMatcher, maxSize int64, out []grepMatch) []grepMatch {
	f, err := openNoLinks(abs, os.O_RDONLY, 0) // fs_nolinks.go
	if err != nil {
		return out
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSize {
		return out
	}
	size := int(st.Size())
	if cap(w.buf) < size {
		w.buf = make([]byte, size, size+size/4+512)
	}
	buf := w.buf[:size]
	head := min(size, binarySniff)
	n, _ := io.ReadFull(f, buf[:head])
	if bytes.IndexByte(buf[:n], 0) >= 0 {
		return out
	}
	if n == head && size > head {
		k, _ := io.ReadFull(f, buf[head:])
		n += k
		if bytes.IndexByte(buf[head:n], 0) >= 0 {
			return out
		}
	}
	out, w.low = m.match(buf[:n], rel, out, w.low)
	return out
}

// grepWorkers is how many files are searched at once: one per CPU the Go
// scheduler may use, since reading a file from the page cache is work for
// a CPU, not a wait.
func grepWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// grepTree searches every file walkProject gives under start with workers
// of its own; with handOver > 0 it stops with errTreeTooBig once the walk
// passes handOver files.
func grepTree(ctx context.Context, root, start string, m *lineMatcher, inc *globMatcher, maxSize int64, handOver int) ([]grepMatch, int, error) {
	files := make(chan string, 256)
	var mu mutex
	var out []grepMatch
	var wg sync.WaitGroup
	for range grepWorkers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w grepWorker
			var mine []grepMatch
			for rel := range files {
				if ctx.Err() != nil {
					continue // drain: the walk is stopping
				}
				mine = w.file(filepath.Join(root, filepath.FromSlash(rel)), rel, m, maxSize, mine)
			}
			mu.Lock()
			out = append(out, mine...)
			mu.Unlock()
		}()
	}
	// With a hand-over size, names are only collected until the walk is
	// known to stay under it: a tree that goes to ripgrep has no file read
	// here first (the walk of 2,000 names costs a fraction of reading them).
	seen := 0
	var held []string
	err := walkProject(root, start, func(rel string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if seen++; handOver > 0 && seen > handOver {
			return errTreeTooBig
		}
		if inc != nil && !inc.MatchString(rel) {
			return nil
		}
		if handOver > 0 {
			held = append(held, rel)
			return nil
		}
		files <- rel
		return nil
	})
	if err == nil {
		for _, rel := range held {
			files <- rel
		}
	}
	close(files)
	wg.Wait()
	return out, seen, err
}

// treeSizes remembers how many files the last walk of a project saw, so
// that the next search can pick its engine without walking first.
var treeSizes sync.Map // root → int

// estimateFiles guesses how many files a search of root will meet,
// without walking it: the count a previous search of this project saw,
// else the entry count in the header of git's index (12 bytes read),
// else -1 (unknown).
func estimateFiles(root string) int {
	if n, ok := treeSizes.Load(root); ok {
		return n.(int)
	}
	f, err := os.Open(filepath.Join(root, ".git", "index"))
	if err != nil {
		return -1
	}
	defer f.Close()
	var h [12]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:4]) != "DIRC" {
		return -1
	}
	return int(h[8])<<24 | int(h[9])<<16 | int(h[10])<<8 | int(h[11])
}

// useRG says whether a search of root should go to ripgrep straight away:
// when it is on PATH and the project is known or guessed to be past the
// size where starting ripgrep costs less than searching here.
func useRG(root string, above int) bool {
	if rgPath() == "" {
		return false
	}
	n := estimateFiles(root)
	return n > above
}

// rememberTree keeps a walk's file count for root, so the next search
// picks its engine from it.
func rememberTree(root string, n int) {
	treeSizes.Store(root, n)
}

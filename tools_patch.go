package main

// The pure engine of the apply_patch tool: parsing the "*** Begin Patch"
// format that Codex-trained models emit and working out, in memory, what
// every file would become. No file I/O happens here; the caller reads through
// a callback and writes the returned changes (atomically) only when the
// whole patch applied, so a patch changes every file or none.

import (
	"strconv"
	"strings"
	"unicode"
)

type patchOp struct {
	Kind   string // "add", "delete", "update"
	Path   string // as written in the patch
	MoveTo string // update with "*** Move to:"
	Add    string // content of an added file (lines joined with "\n", final newline)
	Hunks  []patchHunk
}

type patchHunk struct {
	Header string      // text after "@@" (may be empty): a line to find first, as a locator
	Lines  []patchLine // ' ' context, '-' remove, '+' add
	EOF    bool        // "*** End of File": the hunk must match at the end of the file
}

type patchLine struct {
	Op   byte   // ' ' context, '-' remove, '+' add
	Text string // the line without its prefix and line ending
}

// fileChange is what applying one op would do; the caller does the I/O (atomic writes).
type fileChange struct {
	Path     string // the file written or deleted (the MoveTo for a move)
	From     string // for a move: the original path (to delete), else ""
	Delete   bool
	Old, New string // contents before (""+Existed=false for an add) and after; for a move, Old is the source's
	Existed  bool   // whether Old was read from an existing file (the source, for a move)
}

const (
	patchBegin     = "*** Begin Patch"
	patchEnd       = "*** End Patch"
	patchAddFile   = "*** Add File:"
	patchDelFile   = "*** Delete File:"
	patchUpdFile   = "*** Update File:"
	patchMoveTo    = "*** Move to:"
	patchEndOfFile = "*** End of File"
)

// unifiedRange matches the "-1,3 +1,4 @@" that models used to git diffs put
// after "@@"; what follows it, if anything, is the real locator line.
var unifiedRange = lazyRE(`^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$`)

// patchParseError wraps a parse failure in the one template that tells the
// model nothing was applied.
func patchParseError(key string, vars map[string]string) error {
	return errorNew(patchText("parse_error", map[string]string{"reason": patchText(key, vars)}))
}

// opHeader recognises the three lines that start an op and returns its kind
// and path; markers must start at column 0 so that a context line " *** Add
// File: x" inside a hunk is never mistaken for one.
func opHeader(line string) (kind, marker, path string, ok bool) {
	for _, m := range [...]struct{ kind, marker string }{
		{"add", patchAddFile}, {"delete", patchDelFile}, {"update", patchUpdFile},
	} {
		if strings.HasPrefix(line, m.marker) {
			return m.kind, m.marker, strings.TrimSpace(line[len(m.marker):]), true
		}
	}
	return "", "", "", false
}

// parsePatch turns patch text into ops. It is lenient where models are
// sloppy (wrapper text around the patch, a missing "*** End Patch", hunk lines
// without a prefix, git-style "@@ -1,2 +1,3 @@" headers, blank separator
// lines) and strict where a guess could corrupt a file (an Add line without
// "+", an empty path, an unknown "***" marker). Line numbers in errors are
// 1-based lines of text.
func parsePatch(text string) ([]patchOp, error) {
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	start, err := patchStart(lines)
	if err != nil {
		return nil, err
	}
	var p patchParser
	for i := start; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == patchEnd {
			break
		}
		if err := p.line(i, lines[i]); err != nil {
			return nil, err
		}
	}
	if err := p.closeOp(); err != nil {
		return nil, err
	}
	return p.ops, nil
}

// patchStart is the index of the patch's first line: after "*** Begin
// Patch", or, without one, the first op header.
func patchStart(lines []string) (int, error) {
	for i, l := range lines {
		if strings.TrimSpace(l) == patchBegin {
			return i + 1, nil
		}
	}
	for i, l := range lines {
		if _, _, _, ok := opHeader(strings.TrimRight(l, " \t")); ok {
			return i, nil
		}
	}
	return 0, patchParseError("no_begin", nil)
}

// patchParser is parsePatch's state between lines.
type patchParser struct {
	ops      []patchOp
	cur      *patchOp   // op being filled, nil before the first
	curLine  int        // 1-based line of cur's header
	hunk     *patchHunk // hunk being filled, nil between hunks
	hunkLine int        // 1-based line where hunk started
	blanks   int        // trailing unprefixed blank lines of the hunk or add
	addLines []string
}

// closeHunk drops the blank separator lines a model leaves before the next
// marker and rejects a hunk left with nothing in it.
func (p *patchParser) closeHunk() error {
	if p.hunk == nil {
		return nil
	}
	p.hunk.Lines = p.hunk.Lines[:len(p.hunk.Lines)-p.blanks]
	p.blanks = 0
	if len(p.hunk.Lines) == 0 {
		return patchParseError("empty_hunk", map[string]string{
			"line": strconv.Itoa(p.hunkLine), "hunk": strconv.Itoa(len(p.cur.Hunks) + 1), "path": p.cur.Path})
	}
	p.cur.Hunks = append(p.cur.Hunks, *p.hunk)
	p.hunk = nil
	return nil
}

// closeOp ends the op being filled: an add's text is joined, an update
// needs a hunk or a move.
func (p *patchParser) closeOp() error {
	if p.cur == nil {
		return nil
	}
	if err := p.closeHunk(); err != nil {
		return err
	}
	switch p.cur.Kind {
	case "add":
		p.addLines = p.addLines[:len(p.addLines)-p.blanks]
		p.blanks = 0
		if len(p.addLines) > 0 {
			p.cur.Add = strings.Join(p.addLines, "\n") + "\n"
		}
		p.addLines = nil
	case "update":
		if len(p.cur.Hunks) == 0 && p.cur.MoveTo == "" {
			return patchParseError("update_no_hunks", map[string]string{"line": strconv.Itoa(p.curLine), "path": p.cur.Path})
		}
	}
	p.ops = append(p.ops, *p.cur)
	p.cur = nil
	return nil
}

// line takes line i of the text: an op header, a move, an end-of-file
// marker, or a line of the op being filled.
func (p *patchParser) line(i int, raw string) error {
	l := strings.TrimRight(raw, " \t")
	lineNo := strconv.Itoa(i + 1)
	if kind, marker, path, ok := opHeader(l); ok {
		if err := p.closeOp(); err != nil {
			return err
		}
		if path == "" {
			return patchParseError("empty_path", map[string]string{"line": lineNo, "marker": marker})
		}
		p.cur, p.curLine = &patchOp{Kind: kind, Path: path}, i+1
		return nil
	}
	if strings.HasPrefix(l, patchMoveTo) {
		if p.cur == nil || p.cur.Kind != "update" || p.cur.MoveTo != "" || p.hunk != nil || len(p.cur.Hunks) > 0 {
			return patchParseError("misplaced_move", map[string]string{"line": lineNo})
		}
		p.cur.MoveTo = strings.TrimSpace(l[len(patchMoveTo):])
		if p.cur.MoveTo == "" {
			return patchParseError("empty_path", map[string]string{"line": lineNo, "marker": patchMoveTo})
		}
		return nil
	}
	if l == patchEndOfFile {
		if p.cur == nil || p.cur.Kind != "update" || p.hunk == nil {
			return patchParseError("misplaced_eof", map[string]string{"line": lineNo})
		}
		p.hunk.EOF = true
		return p.closeHunk()
	}
	if p.cur == nil {
		if l == "" {
			return nil
		}
		return patchParseError("unexpected_line", map[string]string{"line": lineNo, "text": strconv.Quote(raw)})
	}
	switch p.cur.Kind {
	case "add":
		switch {
		case strings.HasPrefix(raw, "+"):
			p.addLines = append(p.addLines, raw[1:])
			p.blanks = 0
		case l == "":
			// A model dropping the "+" of an empty line, or a separator;
			// trailing ones are trimmed when the op closes.
			p.addLines = append(p.addLines, "")
			p.blanks++
		default:
			return patchParseError("add_line", map[string]string{"line": lineNo, "path": p.cur.Path, "text": strconv.Quote(raw)})
		}
	case "delete":
		if l != "" {
			return patchParseError("delete_line", map[string]string{"line": lineNo, "path": p.cur.Path, "text": strconv.Quote(raw)})
		}
	case "update":
		return p.updateLine(i, raw, l, lineNo)
	}
	return nil
}

// updateLine takes a line of an update op: a hunk header, or a hunk line.
func (p *patchParser) updateLine(i int, raw, l, lineNo string) error {
	if strings.HasPrefix(l, "@@") {
		if err := p.closeHunk(); err != nil {
			return err
		}
		header := strings.TrimSpace(l[2:])
		if m := unifiedRange.FindStringSubmatch(header); m != nil {
			header = strings.TrimSpace(m[1])
		}
		p.hunk, p.hunkLine = &patchHunk{Header: header}, i+1
		return nil
	}
	if strings.HasPrefix(l, `\ No newline`) {
		return nil // git's marker; final newlines are preserved anyway
	}
	if strings.HasPrefix(l, "*** ") {
		return patchParseError("unexpected_marker", map[string]string{"line": lineNo, "path": p.cur.Path, "text": strconv.Quote(raw)})
	}
	if p.hunk == nil {
		if raw == "" {
			return nil // a separator, not the start of a hunk
		}
		// The first hunk may omit "@@", as may one after "*** End of File".
		p.hunk, p.hunkLine = &patchHunk{}, i+1
	}
	pl := patchLine{Op: ' ', Text: raw}
	if raw == "" {
		p.blanks++
	} else {
		p.blanks = 0
		switch raw[0] {
		case ' ', '-', '+':
			pl = patchLine{Op: raw[0], Text: raw[1:]}
		}
	}
	p.hunk.Lines = append(p.hunk.Lines, pl)
	return nil
}

// patchFile is a file split into lines, keeping each line's own ending so
// that lines the patch does not touch come back byte for byte.
type patchFile struct {
	lines   []string // without line endings
	eols    []string // "\n", "\r\n", or "" for a last line without one
	eol     string   // the file's dominant ending, used for new lines
	finalNL bool     // whether the content ended with a line ending
}

// splitPatchFile detects the dominant line ending (CRLF only when most lines
// use it) and whether the file ends with a newline; an empty file counts as
// ending with one, so lines added to it end properly.
func splitPatchFile(s string) patchFile {
	f := patchFile{eol: "\n", finalNL: true}
	if s == "" {
		return f
	}
	lf := strings.Count(s, "\n")
	if crlf := strings.Count(s, "\r\n"); crlf > lf-crlf {
		f.eol = "\r\n"
	}
	parts := strings.Split(s, "\n")
	f.finalNL = parts[len(parts)-1] == ""
	if f.finalNL {
		parts = parts[:len(parts)-1]
	}
	for i, p := range parts {
		e := "\n"
		if i == len(parts)-1 && !f.finalNL {
			e = ""
		} else if strings.HasSuffix(p, "\r") {
			p, e = p[:len(p)-1], "\r\n"
		}
		f.lines = append(f.lines, p)
		f.eols = append(f.eols, e)
	}
	return f
}

// join is splitPatchFile's inverse: every line but the last gets its ending
// (the dominant one if it had none), the last only if the file had one.
func (f patchFile) join() string {
	var b strings.Builder
	for i, l := range f.lines {
		b.WriteString(l)
		e := f.eols[i]
		if e == "" {
			e = f.eol
		}
		if i < len(f.lines)-1 || f.finalNL {
			b.WriteString(e)
		}
	}
	return b.String()
}

// punctFold maps the typographic characters models (or editors) substitute
// for ASCII ones, so a patch with curly quotes still finds straight ones.
var punctFold = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'", "\u201a", "'", "\u201b", "'", "\u2032", "'",
	"\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u201f", `"`, "\u2033", `"`,
	"\u00ab", `"`, "\u00bb", `"`,
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2026", "...",
	"\u00a0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200a", " ", "\u202f", " ", "\u205f", " ", "\u3000", " ",
	"\u200b", "", "\ufeff", "",
)

// foldLine is the loosest comparison: typographic punctuation folded to
// ASCII, outer whitespace dropped and inner runs collapsed to one space.
func foldLine(s string) string {
	return strings.Join(strings.FieldsFunc(punctFold.Replace(s), unicode.IsSpace), " ")
}

// patchTiers are the line comparisons tried in order, strictest first, so a
// patch that matches exactly is never applied at a looser, earlier spot.
var patchTiers = []func(string) string{
	func(s string) string { return s },
	func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
	strings.TrimSpace,
	foldLine,
}

// seekLines finds pattern in lines at or after from, trying each tier in
// turn; with atEnd only the position ending at the last line is tried.
func seekLines(lines, pattern []string, from int, atEnd bool) (int, bool) {
	if len(pattern) > len(lines) {
		return 0, false
	}
	for _, norm := range patchTiers {
		pat := make([]string, len(pattern))
		for i, p := range pattern {
			pat[i] = norm(p)
		}
		norms := make([]string, len(lines))
		for i, l := range lines {
			norms[i] = norm(l)
		}
		match := func(p int) bool {
			for k := range pat {
				if norms[p+k] != pat[k] {
					return false
				}
			}
			return true
		}
		if atEnd {
			if p := len(lines) - len(pat); p >= from && match(p) {
				return p, true
			}
			continue
		}
		for p := max(from, 0); p+len(pat) <= len(lines); p++ {
			if match(p) {
				return p, true
			}
		}
	}
	return 0, false
}

// seekHeader finds the "@@" locator line at or after from: the usual tiers,
// then, as a last resort, a line that merely contains it (models often give
// "func main" for "func main() {").
func seekHeader(lines []string, header string, from int) (int, bool) {
	if p, ok := seekLines(lines, []string{header}, from, false); ok {
		return p, true
	}
	h := foldLine(header)
	if h == "" {
		return 0, false
	}
	for p := max(from, 0); p < len(lines); p++ {
		if strings.Contains(foldLine(lines[p]), h) {
			return p, true
		}
	}
	return 0, false
}

// numberedLines renders lines[from:to] with 1-based numbers for an error.
func numberedLines(lines []string, from, to int) string {
	if len(lines) == 0 {
		return patchText("file_empty", nil)
	}
	from, to = max(from, 0), min(to, len(lines))
	if from >= to {
		from = max(len(lines)-3, 0)
		to = len(lines)
	}
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, patchText("numbered_line", map[string]string{"n": strconv.Itoa(i + 1), "text": lines[i]}))
	}
	return strings.Join(out, "\n")
}

// nearestMatch explains a failed search: it finds where the most hunk lines
// line up with the file (loosest comparison, blank lines not counted,
// preferring positions at or after from on ties), names the first line that
// differs there, and shows the file lines around it.
func nearestMatch(lines, pattern []string, from int) (mismatch, nearest string) {
	const maxShown = 10
	folded := make([]string, len(lines))
	for i, l := range lines {
		folded[i] = foldLine(l)
	}
	want := make([]string, len(pattern))
	for k, l := range pattern {
		want[k] = foldLine(l)
	}
	best, bestScore := -1, 0
	for p := 0; p < len(lines); p++ {
		score := 0
		for k := range want {
			if p+k < len(lines) && want[k] != "" && folded[p+k] == want[k] {
				score++
			}
		}
		if score > bestScore || (score == bestScore && score > 0 && best < from && p >= from) {
			best, bestScore = p, score
		}
	}
	if best < 0 {
		return patchText("no_partial_match", nil), similarLines(lines, pattern, from)
	}
	mismatch = ""
	for k := range pattern {
		if best+k >= len(lines) {
			mismatch = patchText("first_mismatch_past_end", map[string]string{
				"at": strconv.Itoa(best + 1), "k": strconv.Itoa(k + 1), "want": strconv.Quote(pattern[k])})
			break
		}
		if folded[best+k] != want[k] {
			mismatch = patchText("first_mismatch", map[string]string{
				"at": strconv.Itoa(best + 1), "k": strconv.Itoa(k + 1), "want": strconv.Quote(pattern[k]),
				"n": strconv.Itoa(best + k + 1), "got": strconv.Quote(lines[best+k])})
			break
		}
	}
	to := min(best+len(pattern)+1, best-1+maxShown)
	return mismatch, numberedLines(lines, best-1, to)
}

// similarLines shows the file lines around the one sharing the most words
// with any of want (the first line at or after from when none shares any),
// for when nothing matches even loosely.
func similarLines(lines, want []string, from int) string {
	words := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.FieldsFunc(foldLine(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
			m[w] = true
		}
		return m
	}
	var wanted []map[string]bool
	for _, w := range want {
		wanted = append(wanted, words(w))
	}
	best, bestScore := min(max(from, 0), max(len(lines)-1, 0)), 0
	for i, l := range lines {
		lw := words(l)
		for _, ww := range wanted {
			score := 0
			for w := range ww {
				if lw[w] {
					score++
				}
			}
			if score > bestScore {
				best, bestScore = i, score
			}
		}
	}
	return numberedLines(lines, best-2, best+3)
}

// hunkFailure carries a hunk's error template until applyPatchOps adds which
// op and hunk it was.
type hunkFailure struct {
	key  string
	vars map[string]string
}

// trimBlankContext yields the hunk as written, then without trailing blank
// context lines, then without leading ones too: models often pad a hunk with
// an empty line that stands for the file's final newline or a separator.
func trimBlankContext(hl []patchLine) [][]patchLine {
	out := [][]patchLine{hl}
	isBlank := func(l patchLine) bool { return l.Op == ' ' && strings.TrimSpace(l.Text) == "" }
	t := hl
	for len(t) > 0 && isBlank(t[len(t)-1]) {
		t = t[:len(t)-1]
	}
	if len(t) != len(hl) && hasOldLines(t) {
		out = append(out, t)
	}
	u := t
	for len(u) > 0 && isBlank(u[0]) {
		u = u[1:]
	}
	if len(u) != len(t) && hasOldLines(u) {
		out = append(out, u)
	}
	return out
}

// applyHunk applies one hunk to f at or after cursor and returns the cursor
// for the next hunk. Context lines keep the file's own text (and ending), so
// whitespace drift in the patch never rewrites lines it only quoted.
func applyHunk(f *patchFile, h patchHunk, cursor int) (int, *hunkFailure) {
	from := cursor
	if h.Header != "" {
		p, ok := seekHeader(f.lines, h.Header, cursor)
		if ok {
			from = p
		} else if !hasOldLines(h.Lines) {
			return 0, &hunkFailure{"header_not_found", map[string]string{
				"header": strconv.Quote(h.Header), "from": strconv.Itoa(cursor + 1),
				"nearest": similarLines(f.lines, []string{h.Header}, cursor)}}
		}
		// A header not found but context present: the context is the real
		// anchor, so go on and search for it from the cursor.
	}
	if !hasOldLines(h.Lines) {
		at := len(f.lines)
		if h.Header != "" && !h.EOF {
			at = from + 1
		}
		spliceHunk(f, at, h.Lines)
		return at + len(h.Lines), nil
	}
	var firstOld []string
	for _, hl := range trimBlankContext(h.Lines) {
		old := oldLines(hl)
		if firstOld == nil {
			firstOld = old
		}
		p, ok := seekLines(f.lines, old, from, h.EOF)
		if !ok && from != cursor {
			// Found the header but not the context after it: the header
			// may be misplaced, so fall back to searching from the cursor.
			p, ok = seekLines(f.lines, old, cursor, h.EOF)
		}
		if ok {
			spliceHunk(f, p, hl)
			return p + countNew(hl), nil
		}
	}
	if h.EOF {
		if p, ok := seekLines(f.lines, firstOld, cursor, false); ok {
			return 0, &hunkFailure{"eof_mismatch", map[string]string{"at": strconv.Itoa(p + 1)}}
		}
	}
	if p, ok := seekLines(f.lines, firstOld, 0, false); ok && p < cursor {
		return 0, &hunkFailure{"out_of_order", map[string]string{"at": strconv.Itoa(p + 1), "from": strconv.Itoa(cursor + 1)}}
	}
	mismatch, near := nearestMatch(f.lines, firstOld, from)
	return 0, &hunkFailure{"context_not_found", map[string]string{
		"from": strconv.Itoa(from + 1), "mismatch": mismatch, "nearest": near}}
}

// hasOldLines reports whether the hunk has anything to find in the file.
func hasOldLines(hl []patchLine) bool {
	for _, l := range hl {
		if l.Op != '+' {
			return true
		}
	}
	return false
}

// oldLines is what the hunk expects to find: its context and "-" lines.
func oldLines(hl []patchLine) []string {
	var out []string
	for _, l := range hl {
		if l.Op != '+' {
			out = append(out, l.Text)
		}
	}
	return out
}

// countNew is how many lines the hunk leaves in the file.
func countNew(hl []patchLine) int {
	n := 0
	for _, l := range hl {
		if l.Op != '-' {
			n++
		}
	}
	return n
}

// spliceHunk replaces the hunk's old lines at p with its new ones: context
// lines are taken from the file, added lines from the patch with the file's
// dominant ending.
func spliceHunk(f *patchFile, p int, hl []patchLine) {
	var lines, eols []string
	lines = append(lines, f.lines[:p]...)
	eols = append(eols, f.eols[:p]...)
	k := p
	for _, l := range hl {
		switch l.Op {
		case '+':
			lines = append(lines, l.Text)
			eols = append(eols, f.eol)
		case '-':
			k++
		default:
			lines = append(lines, f.lines[k])
			eols = append(eols, f.eols[k])
			k++
		}
	}
	lines = append(lines, f.lines[k:]...)
	eols = append(eols, f.eols[k:]...)
	f.lines, f.eols = lines, eols
}

// applyPatchOps works out every change or none: read returns a file's
// content (ok=false when missing). Ops see the results of earlier ops in the
// same patch (an Add then an Update of that file works), and the first
// failure returns an error naming the op and hunk, with no changes.
func applyPatchOps(ops []patchOp, read func(path string) (content string, ok bool, err error)) ([]fileChange, error) {
	type state struct {
		content string
		exists  bool
	}
	seen := map[string]state{}
	get := func(path string) (string, bool, error) {
		if s, ok := seen[path]; ok {
			return s.content, s.exists, nil
		}
		if read == nil {
			return "", false, nil
		}
		return read(path)
	}
	var changes []fileChange
	for i, op := range ops {
		opVars := func(reason string) map[string]string { return patchOpVars(i, op.Kind, op.Path, reason) }
		if op.Path == "" {
			return nil, errorNew(patchText("op_error", opVars(patchText("op_empty_path", nil))))
		}
		switch op.Kind {
		case "add":
			changes = append(changes, fileChange{Path: op.Path, New: op.Add})
			seen[op.Path] = state{op.Add, true}
		case "delete":
			old, ok, err := get(op.Path)
			if err != nil {
				return nil, errorNew(patchText("op_error", opVars(patchText("read_failed", map[string]string{"err": err.Error()}))))
			}
			changes = append(changes, fileChange{Path: op.Path, Delete: true, Old: old, Existed: ok})
			seen[op.Path] = state{}
		case "update":
			old, ok, err := get(op.Path)
			if err != nil {
				return nil, errorNew(patchText("op_error", opVars(patchText("read_failed", map[string]string{"err": err.Error()}))))
			}
			if !ok {
				return nil, errorNew(patchText("op_error", opVars(patchText("update_missing", nil))))
			}
			f := splitPatchFile(old)
			cursor := 0
			for j, h := range op.Hunks {
				next, fail := applyHunk(&f, h, cursor)
				if fail != nil {
					v := opVars(patchText(fail.key, fail.vars))
					v["hunk"] = strconv.Itoa(j + 1)
					v["header"] = ""
					if h.Header != "" {
						v["header"] = patchText("hunk_header", map[string]string{"header": h.Header})
					}
					return nil, errorNew(patchText("hunk_error", v))
				}
				cursor = next
			}
			ch := fileChange{Path: op.Path, Old: old, New: f.join(), Existed: true}
			if op.MoveTo != "" && op.MoveTo != op.Path {
				ch.Path, ch.From = op.MoveTo, op.Path
				seen[op.Path] = state{}
			}
			seen[ch.Path] = state{ch.New, true}
			changes = append(changes, ch)
		default:
			return nil, errorNew(patchText("op_error", opVars(patchText("unknown_kind", nil))))
		}
	}
	return changes, nil
}

// patchOpVars fills op_error for operation i (0-based). Out of line:
// applyPatchOps names an operation's failure from six places.
//
//go:noinline
func patchOpVars(i int, kind, path, reason string) map[string]string {
	return map[string]string{"op": strconv.Itoa(i + 1), "kind": kind, "path": path, "reason": reason}
}

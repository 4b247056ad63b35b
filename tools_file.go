package main

// The file tools: read, write, edit, multiedit. Every path is resolved
// (contain.go) before use; writes are atomic and keep the file's mode; a file
// must be read in the session before it is overwritten or edited, and must
// not have changed on disk since.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func init() {
	// read says an image is attached only to a model that sees images.
	toolFacts["read"] = func(tb *toolbox) map[string]string {
		note := ""
		if tb.vision {
			note = tb.spec.Tools["read"].text("images_note")
		}
		return map[string]string{"images": note}
	}
}

func init() {
	toolImpls["read"] = toolRead
	toolImpls["write"] = toolWrite
	toolImpls["edit"] = toolEdit
	toolImpls["multiedit"] = toolMultiEdit
}

// fileSystem is where the file tools read and write text files: the disk,
// or (ACP) an editor that serves its open buffers, unsaved changes
// included. Stats, images and deletes always go to the disk.
type fileSystem interface {
	readFile(abs string) ([]byte, error)
	writeFile(abs string, data []byte, perm os.FileMode) error
}

type osFS struct{}

func (osFS) readFile(abs string) ([]byte, error) { return readFileNoLinks(abs) }
func (osFS) writeFile(abs string, data []byte, perm os.FileMode) error {
	return writeFileNoLinks(abs, data, perm) // fs_nolinks.go
}

// files is the session's fileSystem: the disk unless a front end set one,
// behind a last check on every write.
//
//go:noinline
func (tb *toolbox) files() fileSystem {
	var f fileSystem = osFS{}
	if tb.fsys != nil {
		f = tb.fsys
	}
	return guardedFS{f, tb}
}

// guardedFS resolves a path once more at the moment it is written: the
// permission check resolved it before the call ran, and a process left in
// the background could have turned a folder into a link to a protected
// file since. Where openat2 is (Linux), the write itself refuses any link
// on the way (fs_nolinks.go), which closes that window.
type guardedFS struct {
	fileSystem
	tb *toolbox
}

func (g guardedFS) writeFile(abs string, data []byte, perm os.FileMode) error {
	if g.tb.protected != nil && g.tb.protected(evalExisting(abs)) {
		return errorNew(theSpec().Loop.ToolErrors["protected_now"])
	}
	return g.fileSystem.writeFile(abs, data, perm)
}

// judgedKey carries the paths a call was judged by (decision.Paths).
type judgedKey struct{}

func withJudged(ctx context.Context, paths []string) context.Context {
	if paths == nil {
		return ctx
	}
	return context.WithValue(ctx, judgedKey{}, paths)
}

// toolPath resolves a tool's path p and refuses it when the call was
// judged by other paths: a link on the way changed since.
func (tb *toolbox) toolPath(ctx context.Context, p string) (string, error) {
	abs, _ := resolvePath(tb.root, p) // "" is the root, as the check's "." is
	if j, ok := ctx.Value(judgedKey{}).([]string); ok && !slices.Contains(j, abs) {
		return abs, errorNew(loopText(theSpec().Loop.ToolErrors, "path_changed", "path", p))
	}
	return abs, nil
}

func errResult(text string) toolResult { return toolResult{Text: text, IsError: true} }

// fsError turns an OS error into one sentence naming the path as given.
func fsError(shown string, err error) toolResult {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errResult(loopText(theSpec().Loop.ToolErrors, "no_such_file", "path", shown))
	case errors.Is(err, fs.ErrPermission):
		return errResult(loopText(theSpec().Loop.ToolErrors, "permission_denied", "path", shown))
	}
	return errResult(fmt.Sprintf("%s: %v", shown, err))
}

var imageMimes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}

func (tb *toolbox) stamp(abs string) {
	if st, err := os.Stat(abs); err == nil {
		tb.mu.Lock()
		tb.reads[abs] = fileStamp{st.Size(), st.ModTime().UnixNano()}
		tb.mu.Unlock()
	}
}

// checkFresh says whether abs may be overwritten: it was read in this
// session and has not changed since. texts is the calling tool's.
func (tb *toolbox) checkFresh(t *toolSpec, abs, shown string, st os.FileInfo) *toolResult {
	tb.mu.Lock()
	s, ok := tb.reads[abs]
	tb.mu.Unlock()
	if !ok {
		r := errResult(t.text("read_first", "path", shown))
		return &r
	}
	if s.size != st.Size() || s.modTime != st.ModTime().UnixNano() {
		r := errResult(t.text("changed_since_read", "path", shown))
		return &r
	}
	return nil
}

func toolRead(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	json.Unmarshal(raw, &a)
	t := tb.spec.Tools["read"]
	abs, err := tb.toolPath(ctx, a.Path)
	if err != nil {
		return errResult(err.Error())
	}
	shown := a.Path
	st, err := os.Stat(abs)
	if err != nil {
		return fsError(shown, err)
	}
	if st.IsDir() {
		return toolResult{Text: t.text("directory", "path", shown), Paths: []string{abs}}
	}
	if mime, ok := imageMimes[strings.ToLower(filepath.Ext(abs))]; ok {
		if !tb.vision {
			return toolResult{Text: t.text("image_no_vision", "path", shown)}
		}
		if st.Size() > int64(t.limit("max_image_bytes")) {
			return errResult(t.text("image_too_big", "path", shown, "size", st.Size(), "max", t.limit("max_image_bytes")))
		}
		data, err := readFileNoLinks(abs)
		if err != nil {
			return fsError(shown, err)
		}
		return toolResult{Text: t.text("image_attached", "path", shown, "size", len(data)),
			Images: []imagePart{{mime, base64.StdEncoding.EncodeToString(data)}}, Paths: []string{abs}}
	}
	data, err := tb.files().readFile(abs)
	if err != nil {
		return fsError(shown, err)
	}
	probe := data
	if n := t.limit("binary_probe_bytes"); len(probe) > n {
		probe = probe[:n]
	}
	if bytes.IndexByte(probe, 0) >= 0 {
		return toolResult{Text: t.text("binary", "path", shown, "size", len(data))}
	}
	tb.stamp(abs)
	if len(data) == 0 {
		return toolResult{Text: t.text("empty", "path", shown), Paths: []string{abs}}
	}
	text := strings.TrimSuffix(string(data), "\n")
	lines := strings.Split(text, "\n")
	total := len(lines)
	start := 1
	if a.Offset > 0 {
		start = a.Offset
	}
	if start > total {
		return errResult(t.text("past_end", "path", shown, "total", total, "offset", start))
	}
	limit := t.limit("max_lines")
	if a.Limit > 0 {
		limit = a.Limit
	}
	end := start - 1 + limit
	if end > total {
		end = total
	}
	maxLine := t.limit("max_line_chars")
	var b strings.Builder
	for i := start; i <= end; i++ {
		line := strings.TrimSuffix(lines[i-1], "\r")
		if len(line) > maxLine {
			line = cutUTF8(line, maxLine) + t.text("line_cut", "max", maxLine)
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\t')
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if end < total {
		b.WriteString(t.text("more", "shown", end-start+1, "total", total, "next", end+1))
	}
	sum := sha256.Sum256(data)
	return toolResult{Text: strings.TrimSuffix(b.String(), "\n"), Paths: []string{abs},
		Read: &readInfo{Start: start, End: end, Total: total, Hash: hex.EncodeToString(sum[:])}}
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}

func toolWrite(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	json.Unmarshal(raw, &a)
	t := tb.spec.Tools["write"]
	abs, err := tb.toolPath(ctx, a.Path)
	if err != nil {
		return errResult(err.Error())
	}
	perm := os.FileMode(0o644)
	existed := false
	if st, err := os.Stat(abs); err == nil {
		if st.IsDir() {
			return errResult(t.text("is_directory", "path", a.Path))
		}
		if r := tb.checkFresh(t, abs, a.Path, st); r != nil {
			return *r
		}
		old, err := tb.files().readFile(abs)
		if err == nil && string(old) == a.Content {
			return toolResult{Text: t.text("unchanged", "path", a.Path), Paths: []string{abs}}
		}
		perm = st.Mode().Perm()
		existed = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fsError(a.Path, err)
	}
	tb.snapshot(abs)
	if err := tb.files().writeFile(abs, []byte(a.Content), perm); err != nil {
		return fsError(a.Path, err)
	}
	tb.stamp(abs)
	n := strings.Count(a.Content, "\n")
	if a.Content != "" && !strings.HasSuffix(a.Content, "\n") {
		n++
	}
	key := "created"
	if existed {
		key = "written"
	}
	return toolResult{Text: t.text(key, "path", a.Path, "lines", n), Paths: []string{abs}}
}

type editOp struct {
	Old        string `json:"old_string"`
	New        string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func toolEdit(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Path string `json:"path"`
		editOp
	}
	json.Unmarshal(raw, &a)
	return tb.editFile(ctx, a.Path, []editOp{a.editOp}, false)
}

func toolMultiEdit(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Path  string   `json:"path"`
		Edits []editOp `json:"edits"`
	}
	json.Unmarshal(raw, &a)
	return tb.editFile(ctx, a.Path, a.Edits, true)
}

// editFile applies edits in order to one file, all or nothing, and answers
// with the diff of what changed.
func (tb *toolbox) editFile(ctx context.Context, path string, edits []editOp, multi bool) toolResult {
	t := tb.spec.Tools["edit"]
	if len(edits) == 0 {
		return errResult(t.text("no_edits"))
	}
	abs, err := tb.toolPath(ctx, path)
	if err != nil {
		return errResult(err.Error())
	}
	st, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return errResult(t.text("missing", "path", path))
	}
	if err != nil {
		return fsError(path, err)
	}
	if r := tb.checkFresh(t, abs, path, st); r != nil {
		return *r
	}
	data, err := tb.files().readFile(abs)
	if err != nil {
		return fsError(path, err)
	}
	orig := string(data)
	content := orig
	crlf := strings.Contains(orig, "\r\n")
	count := 0
	var diffs []string
	for i, e := range edits {
		n, next, d, msg := applyEdit(t, path, content, e, crlf)
		if msg != "" {
			if multi {
				msg = t.text("edit_n", "n", i+1, "total", len(edits), "error", msg)
			}
			return errResult(msg)
		}
		count += n
		content = next
		diffs = append(diffs, d...)
	}
	tb.snapshot(abs)
	if err := tb.files().writeFile(abs, []byte(content), st.Mode().Perm()); err != nil {
		return fsError(path, err)
	}
	tb.stamp(abs)
	return toolResult{Text: t.text("edited", "path", path, "count", count) + "\n" + strings.Join(diffs, "\n"), Paths: []string{abs}}
}

// applyEdit makes one replacement in content. In a CRLF file the model's
// \n line ends are taken as \r\n, so an edit neither fails on nor mixes
// line endings. It returns the count, the new content, a diff per
// replacement (at most three), or the error text.
func applyEdit(t *toolSpec, path, content string, e editOp, crlf bool) (int, string, []string, string) {
	if e.Old == "" {
		return 0, "", nil, t.text("empty_old")
	}
	if e.Old == e.New {
		return 0, "", nil, t.text("same")
	}
	old, repl := e.Old, e.New
	if crlf && !strings.Contains(old, "\r\n") {
		old = strings.ReplaceAll(old, "\n", "\r\n")
		repl = strings.ReplaceAll(strings.ReplaceAll(repl, "\r\n", "\n"), "\n", "\r\n")
	}
	n := strings.Count(content, old)
	if n == 0 {
		if content == "" {
			return 0, "", nil, t.text("not_found_empty", "path", path)
		}
		return 0, "", nil, t.text("not_found", "path", path, "nearest", nearestLines(content, e.Old, t.limit("nearest_lines")))
	}
	if n > 1 && !e.ReplaceAll {
		var lines []string
		off := 0
		for i := 0; i < n && i < 10; i++ {
			j := strings.Index(content[off:], old)
			lines = append(lines, strconv.Itoa(1+strings.Count(content[:off+j], "\n")))
			off += j + len(old)
		}
		return 0, "", nil, t.text("several", "count", n, "path", path, "lines", strings.Join(lines, ", "))
	}
	var diffs []string
	off := 0
	var b strings.Builder
	for i := 0; i < n; i++ {
		j := strings.Index(content[off:], old)
		line := 1 + strings.Count(b.String(), "\n") + strings.Count(content[off:off+j], "\n")
		if len(diffs) < 3 {
			diffs = append(diffs, wholeLineDiff(content, off+j, old, repl, line))
		}
		b.WriteString(content[off : off+j])
		b.WriteString(repl)
		off += j + len(old)
	}
	b.WriteString(content[off:])
	return n, b.String(), diffs, ""
}

// wholeLineDiff shows the replacement of old at pos in content as a hunk
// of the whole lines it touches, before and after.
func wholeLineDiff(content string, pos int, old, repl string, newLine int) string {
	start := strings.LastIndexByte(content[:pos], '\n') + 1
	end := pos + len(old)
	if strings.HasSuffix(old, "\n") {
		end--
	}
	if i := strings.IndexByte(content[end:], '\n'); i >= 0 {
		end += i
	} else {
		end = len(content)
	}
	suffix := ""
	if pos+len(old) <= end {
		suffix = content[pos+len(old) : end]
	}
	before := content[start:end]
	after := content[start:pos] + repl + suffix
	return miniDiff(1+strings.Count(content[:start], "\n"), newLine, before, after)
}

// miniDiff shows one replacement as a unified diff hunk: where it is in
// the file before and after, the removed lines and the added ones
// (context.md §2.6: edits answer with their diff).
func miniDiff(oldLine, newLine int, old, new string) string {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")
	}
	ol, nl := split(old), split(new)
	// An empty side starts, as in diff -u, at the line before.
	os, ns := oldLine, newLine
	if len(nl) == 0 {
		ns--
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", os, len(ol), ns, len(nl))
	for _, l := range ol {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range nl {
		b.WriteString("+" + l + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// nearestLines finds where old_string most nearly is in content and shows
// that stretch with line numbers, so the model can copy it exactly.
func nearestLines(content, old string, n int) string {
	lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
	want := ""
	for _, l := range strings.Split(old, "\n") {
		if strings.TrimSpace(l) != "" {
			want = strings.TrimSpace(l)
			break
		}
	}
	best, bestScore := 0, -1
	for i, l := range lines {
		if s := similarity(strings.TrimSpace(l), want); s > bestScore {
			best, bestScore = i, s
		}
	}
	from := best - n/2
	if from < 0 {
		from = 0
	}
	to := from + n
	if to > len(lines) {
		to = len(lines)
	}
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%d\t%s\n", i+1, lines[i])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// similarity scores two lines by their longest common run of bytes plus
// shared words: cheap, and good at finding a line that differs in spacing
// or one word.
func similarity(a, b string) int {
	if len(a) > 300 {
		a = a[:300]
	}
	if len(b) > 300 {
		b = b[:300]
	}
	best := 0
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1] + 1
				if cur[j] > best {
					best = cur[j]
				}
			} else {
				cur[j] = 0
			}
		}
		prev, cur = cur, prev
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(a) {
		words[w] = true
	}
	for _, w := range strings.Fields(b) {
		if words[w] {
			best += 2
		}
	}
	return best
}

func init() { toolImpls["apply_patch"] = toolApplyPatch }

// patchPaths lists the paths a patch touches, for the permission check; a
// patch that does not parse touches nothing yet (it fails when run).
func patchPaths(input string) []string {
	ops, err := parsePatch(input)
	if err != nil {
		return nil
	}
	var out []string
	for _, op := range ops {
		out = append(out, op.Path)
		if op.MoveTo != "" {
			out = append(out, op.MoveTo)
		}
	}
	return out
}

// toolApplyPatch works out every change first (tools_patch.go), then
// writes them; if a write fails, the files already written are put back,
// so the patch applies whole or not at all.
func toolApplyPatch(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Input string `json:"input"`
	}
	json.Unmarshal(raw, &a)
	t := tb.spec.Tools["apply_patch"]
	ops, err := parsePatch(a.Input)
	if err != nil {
		return errResult(err.Error())
	}
	resolved := map[string]string{}
	for _, p := range patchPaths(a.Input) {
		r, err := tb.toolPath(ctx, p)
		if err != nil {
			return errResult(err.Error())
		}
		resolved[p] = r
	}
	abs := func(p string) string { // every path the changes name is one patchPaths listed
		if r, ok := resolved[p]; ok {
			return r
		}
		r, _ := resolvePath(tb.root, p)
		return r
	}
	changes, err := applyPatchOps(ops, func(p string) (string, bool, error) {
		data, err := tb.files().readFile(abs(p))
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		return string(data), err == nil, err
	})
	if err != nil {
		return errResult(err.Error())
	}
	type undo struct {
		path    string
		old     []byte
		existed bool
		perm    os.FileMode
	}
	var done []undo
	rollback := func() {
		for i := len(done) - 1; i >= 0; i-- {
			u := done[i]
			if u.existed {
				tb.files().writeFile(u.path, u.old, u.perm)
			} else {
				removeNoLinks(u.path)
			}
		}
	}
	save := func(p string) {
		tb.snapshot(p)
		u := undo{path: p, perm: 0o644}
		if st, err := os.Stat(p); err == nil {
			u.existed, u.perm = true, st.Mode().Perm()
			u.old, _ = tb.files().readFile(p)
		}
		done = append(done, u)
	}
	var lines, paths []string
	for _, c := range changes {
		dst := abs(c.Path)
		switch {
		case c.Delete:
			save(dst)
			if err := removeNoLinks(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
				rollback()
				return errResult(t.text("write_failed", "path", c.Path, "error", err))
			}
			lines = append(lines, t.text("deleted", "path", c.Path))
		default:
			perm := os.FileMode(0o644)
			src := dst
			if c.From != "" {
				src = abs(c.From)
			}
			if st, err := os.Stat(src); err == nil {
				perm = st.Mode().Perm()
			}
			save(dst)
			if err := tb.files().writeFile(dst, []byte(c.New), perm); err != nil {
				rollback()
				return errResult(t.text("write_failed", "path", c.Path, "error", err))
			}
			tb.stamp(dst)
			switch {
			case c.From != "":
				save(src)
				removeNoLinks(src)
				lines = append(lines, t.text("moved", "from", c.From, "path", c.Path))
			case c.Existed:
				lines = append(lines, t.text("updated", "path", c.Path))
			default:
				lines = append(lines, t.text("added", "path", c.Path))
			}
		}
		paths = append(paths, dst)
	}
	return toolResult{Text: t.text("applied", "summary", strings.Join(lines, "\n")), Paths: paths}
}

// snapshot is the one call a file tool makes before it changes abs.
func (tb *toolbox) snapshot(abs string) {
	if tb.snap != nil {
		tb.snap(abs)
	}
}

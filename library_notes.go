package main

// The local library's two kinds of document: notes the model keeps
// (note_manage, note_view, notes_search), each a file under the state
// folder's library/notes/, with this project's scope or a global one; and
// knowledge documents the person adds (`lembas library add FILE|DIR`),
// referred to where they are and re-read when they change
// (knowledge_search, knowledge_get). Both are searched through
// library_index.go.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func libraryDir() string { return filepath.Join(stateDir(), "library") }

// note is one note file.
type note struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Scope   string    `json:"scope"`             // project or global
	Project string    `json:"project,omitempty"` // a project note's project
	Content string    `json:"content"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func notesDir() string { return filepath.Join(libraryDir(), "notes") }

// validNoteID keeps ids to the shape we make (n + hex), so an id from a
// model never names a path.
func validNoteID(id string) bool {
	if len(id) < 2 || len(id) > 40 || id[0] != 'n' {
		return false
	}
	_, err := hex.DecodeString(id[1:])
	return err == nil
}

func newNoteID() string {
	var b [4]byte
	rand.Read(b[:])
	return "n" + hex.EncodeToString(b[:])
}

func readNote(id string) (*note, error) {
	if !validNoteID(id) {
		return nil, fs.ErrNotExist
	}
	data, err := os.ReadFile(filepath.Join(notesDir(), id+".json"))
	if err != nil {
		return nil, err
	}
	var n note
	if err := json.Unmarshal(data, &n); err != nil || n.ID != id {
		return nil, errorf("note file %s.json is corrupt; remove it", id)
	}
	return &n, nil
}

func saveNote(n *note) error {
	data, _ := json.MarshalIndent(n, "", "  ")
	return writeFileAtomic(filepath.Join(notesDir(), n.ID+".json"), append(data, '\n'), 0o600)
}

// noteVisible says whether a session in root sees a note.
func noteVisible(n *note, root string) bool { return n.Scope == "global" || n.Project == root }

// noteSources are every note, as documents for the notes index.
func noteSources() []docSource {
	names, _ := filepath.Glob(filepath.Join(notesDir(), "n*.json"))
	sort.Strings(names)
	var out []docSource
	for _, p := range names {
		id := strings.TrimSuffix(filepath.Base(p), ".json")
		n, err := readNote(id)
		st, serr := os.Stat(p)
		if err != nil || serr != nil {
			continue
		}
		out = append(out, docSource{ID: id, Path: p, Title: n.Title, Scope: n.Scope, Owner: n.Project,
			Size: st.Size(), MTime: st.ModTime().UnixNano(),
			read: func() ([]byte, error) { return []byte(n.Title + "\n\n" + n.Content), nil }})
	}
	return out
}

// libraryEmbedder is the configured embedder, or nil; a config that names
// a model no connection has is an error the caller reports.
func libraryEmbedder() (embedder, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	return embedderFor(cfg, os.Getenv)
}

// howText says how a search was made, for its answer.
func howText(emb embedder) string {
	if emb == nil {
		return theLibrarySpec().Library.HowBM25
	}
	return fillPairs(theLibrarySpec().Library.HowBoth, "model", emb.name())
}

func init() {
	sessionTools["note_manage"] = toolNoteManage
	sessionTools["note_view"] = toolNoteView
	sessionTools["notes_search"] = toolNotesSearch
	sessionTools["knowledge_search"] = toolKnowledgeSearch
	sessionTools["knowledge_get"] = toolKnowledgeGet
}

func toolNoteManage(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct{ Action, ID, Title, Content, Old, New, Scope string }
	json.Unmarshal(raw, &a)
	max := t.limit("max_bytes")
	now := time.Now()
	var n *note
	if a.Action != "create" {
		if a.ID == "" {
			return errResult(t.text("need_id", "action", a.Action))
		}
		var err error
		n, err = readNote(strings.TrimSpace(a.ID))
		if err != nil || !noteVisible(n, e.perm.root) {
			return errResult(t.text("unknown", "id", a.ID))
		}
	}
	switch a.Action {
	case "create":
		if strings.TrimSpace(a.Title) == "" || strings.TrimSpace(a.Content) == "" {
			return errResult(t.text("need_content"))
		}
		n = &note{ID: newNoteID(), Title: oneLineText(a.Title), Scope: "project", Project: e.perm.root, Content: a.Content, Created: now, Updated: now}
		if a.Scope == "global" {
			n.Scope, n.Project = "global", ""
		}
	case "edit":
		if a.Title != "" {
			n.Title = oneLineText(a.Title)
		}
		switch {
		case a.Old != "":
			if strings.Count(n.Content, a.Old) != 1 {
				return errResult(t.text("old_not_found"))
			}
			n.Content = strings.Replace(n.Content, a.Old, a.New, 1)
		case a.Content != "":
			n.Content = a.Content
		}
		if a.Scope == "global" {
			n.Scope, n.Project = "global", ""
		} else if a.Scope == "project" {
			n.Scope, n.Project = "project", e.perm.root
		}
		n.Updated = now
	case "delete":
		if err := os.Remove(filepath.Join(notesDir(), n.ID+".json")); err != nil {
			return errResult(err.Error())
		}
		return toolResult{Text: t.text("deleted", "id", n.ID, "title", n.Title)}
	default:
		return errResult(t.text("need_id", "action", a.Action))
	}
	if size := len(n.Title) + len(n.Content); size > max {
		return errResult(t.text("too_big", "max", max, "size", size))
	}
	if err := saveNote(n); err != nil {
		return errResult(err.Error())
	}
	key := "created"
	if a.Action == "edit" {
		key = "edited"
	}
	return toolResult{Text: t.text(key, "id", n.ID, "title", n.Title)}
}

func toolNoteView(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct{ ID string }
	json.Unmarshal(raw, &a)
	n, err := readNote(strings.TrimSpace(a.ID))
	if err != nil || !noteVisible(n, e.perm.root) {
		return errResult(t.text("unknown", "id", a.ID))
	}
	return toolResult{Text: t.text("head", "id", n.ID, "title", n.Title, "scope", n.Scope, "date", n.Updated.Format("2006-01-02")) + "\n" + n.Content}
}

func toolNotesSearch(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Query string
		Limit int
	}
	json.Unmarshal(raw, &a)
	emb, err := libraryEmbedder()
	if err != nil {
		return errResult(err.Error())
	}
	srcs := noteSources()
	if len(srcs) == 0 {
		return toolResult{Text: t.text("empty")}
	}
	ix := openIndex("notes", emb)
	st := ix.update(ctx, srcs, nil)
	root := e.perm.root
	hits, serr := ix.search(ctx, a.Query, func(d *docIndex) bool { return d.Scope == "global" || d.Owner == root })
	hits = bestPerDoc(hits)
	how := howText(emb)
	if serr != nil || len(st.Errors) > 0 {
		how = theLibrarySpec().Library.HowBM25
	}
	if len(hits) == 0 {
		return toolResult{Text: t.text("none", "query", fmt.Sprintf("%q", a.Query))}
	}
	hits = hits[:min(len(hits), clampLimit(a.Limit, t.limit("default_limit"), t.limit("max_limit")))]
	lines := []string{t.text("head", "n", len(hits), "query", fmt.Sprintf("%q", a.Query), "how", how)}
	for _, h := range hits {
		lines = append(lines, t.text("row", "id", h.doc.ID, "title", h.doc.Title, "scope", h.doc.Scope,
			"snippet", snippet(h.doc.Pieces[h.n-1].Text, a.Query, theLibrarySpec().Library.SnippetChars)))
	}
	return toolResult{Text: strings.Join(lines, "\n")}
}

// indexNotice tells the front ends when a search had to index changed
// documents first (the person added or edited some since the last look).
func (e *toolHost) indexNotice(st updateStats, emb embedder) {
	if st.Changed == 0 && st.Removed == 0 && len(st.Errors) == 0 {
		return
	}
	ls := theLibrarySpec().Library
	e.send(event{Type: evNotice, Text: fillPairs(ls.ProgressDone, "files", st.Files, "changed", st.Changed, "removed", st.Removed, "pieces", st.Pieces, "how", howText(emb))})
	for _, msg := range st.Errors {
		e.send(event{Type: evNotice, Text: msg})
	}
}

// bestPerDoc keeps each document's best piece, in rank order (a note is
// found once).
func bestPerDoc(hits []hit) []hit {
	seen := map[string]bool{}
	var out []hit
	for _, h := range hits {
		if !seen[h.doc.ID] {
			seen[h.doc.ID] = true
			out = append(out, h)
		}
	}
	return out
}

// knowledgeSource is one path the person added.
type knowledgeSource struct {
	ID    string    `json:"id"`
	Path  string    `json:"path"`
	Added time.Time `json:"added"`
}

func sourcesFile() string { return filepath.Join(libraryDir(), "sources.json") }

func loadSources() ([]knowledgeSource, error) {
	data, err := os.ReadFile(sourcesFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f struct {
		Sources []knowledgeSource `json:"sources"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, errorf("%s is not valid JSON (%v); fix or remove it", sourcesFile(), err)
	}
	return f.Sources, nil
}

func saveSources(s []knowledgeSource) error {
	if s == nil {
		s = []knowledgeSource{}
	}
	data, _ := json.MarshalIndent(map[string]any{"sources": s}, "", "  ")
	return writeFileAtomic(sourcesFile(), append(data, '\n'), 0o600)
}

// knowledgeDocs walks the sources into documents: a file is one, a
// folder gives its files of the known kinds (hidden ones and those over
// max_file_bytes left out), at most max_files in all. A source that is gone
// gives none, so its documents leave the index.
func knowledgeDocs(sources []knowledgeSource) []docSource {
	ls := theLibrarySpec().Library
	exts := map[string]bool{}
	for _, x := range ls.Extensions {
		exts[x] = true
	}
	seen := map[string]bool{}
	var out []docSource
	add := func(p string, st fs.FileInfo) {
		if seen[p] || len(out) >= ls.MaxFiles || st.Size() > int64(ls.MaxFileBytes) {
			return
		}
		seen[p] = true
		path := p
		out = append(out, docSource{ID: "k" + libHash(p, 8), Path: p, Title: filepath.Base(p),
			Size: st.Size(), MTime: st.ModTime().UnixNano(), read: func() ([]byte, error) { return os.ReadFile(path) }})
	}
	for _, s := range sources {
		st, err := os.Stat(s.Path)
		if err != nil {
			continue
		}
		if !st.IsDir() {
			add(s.Path, st)
			continue
		}
		filepath.WalkDir(s.Path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if p != s.Path && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !exts[strings.ToLower(filepath.Ext(p))] {
				return nil
			}
			if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
				add(p, info)
			}
			return nil
		})
	}
	return out
}

// updateKnowledge brings the knowledge index up to date with the sources.
func updateKnowledge(ctx context.Context, progress func(done, total, pieces int)) (*libIndex, embedder, updateStats, error) {
	emb, err := libraryEmbedder()
	if err != nil {
		return nil, nil, updateStats{}, err
	}
	srcs, err := loadSources()
	if err != nil {
		return nil, nil, updateStats{}, err
	}
	ix := openIndex("knowledge", emb)
	st := ix.update(ctx, knowledgeDocs(srcs), progress)
	return ix, emb, st, nil
}

func toolKnowledgeSearch(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Query string
		Limit int
	}
	json.Unmarshal(raw, &a)
	ix, emb, st, err := updateKnowledge(ctx, nil)
	if err != nil {
		return errResult(err.Error())
	}
	e.indexNotice(st, emb)
	if st.Files == 0 {
		return toolResult{Text: t.text("empty")}
	}
	hits, serr := ix.search(ctx, a.Query, nil)
	how := howText(emb)
	if serr != nil {
		how = theLibrarySpec().Library.HowBM25
	}
	if len(hits) == 0 {
		return toolResult{Text: t.text("none", "query", fmt.Sprintf("%q", a.Query))}
	}
	hits = hits[:min(len(hits), clampLimit(a.Limit, t.limit("default_limit"), t.limit("max_limit")))]
	lines := []string{t.text("head", "n", len(hits), "query", fmt.Sprintf("%q", a.Query), "how", how)}
	for _, h := range hits {
		p := h.doc.Pieces[h.n-1]
		lines = append(lines, t.text("row", "id", h.doc.ID, "piece", h.n, "path", h.doc.Path, "from", p.From, "to", p.To,
			"snippet", snippet(p.Text, a.Query, theLibrarySpec().Library.SnippetChars)))
	}
	return toolResult{Text: strings.Join(lines, "\n")}
}

func toolKnowledgeGet(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct{ ID string }
	json.Unmarshal(raw, &a)
	id, pieceStr, hasPiece := strings.Cut(strings.TrimSpace(a.ID), "#")
	ix, _, _, err := updateKnowledge(ctx, nil)
	if err != nil {
		return errResult(err.Error())
	}
	var d *docIndex
	for _, doc := range ix.load().docs {
		if doc.ID == id {
			d = doc
		}
	}
	if d == nil {
		return errResult(t.text("unknown", "id", a.ID))
	}
	if hasPiece {
		n, err := strconv.Atoi(pieceStr)
		if err != nil || n < 1 || n > len(d.Pieces) {
			return errResult(t.text("no_piece", "id", id, "n", len(d.Pieces), "piece", pieceStr))
		}
		p := d.Pieces[n-1]
		total := 0
		if len(d.Pieces) > 0 {
			total = d.Pieces[len(d.Pieces)-1].To
		}
		return toolResult{Text: t.text("head", "id", a.ID, "path", d.Path, "from", p.From, "to", p.To, "total", total) + "\n" + p.Text}
	}
	data, err := os.ReadFile(d.Path)
	if err != nil {
		return errResult(t.text("gone", "id", id, "path", d.Path, "error", err))
	}
	text := string(data)
	total := strings.Count(text, "\n") + 1
	max := t.limit("max_chars")
	out := t.text("head", "id", id, "path", d.Path, "from", 1, "to", total, "total", total) + "\n"
	if len(text) > max {
		return toolResult{Text: out + cutUTF8(text, max) + "\n" + t.text("more", "max", max)}
	}
	return toolResult{Text: out + text}
}

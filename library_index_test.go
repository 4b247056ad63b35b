package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type corpusQuery struct {
	Query string `json:"query"`
	Doc   string `json:"doc"`
}

func loadQueries(t testing.TB) []corpusQuery {
	data, err := os.ReadFile(filepath.Join("testdata", "library", "queries.json"))
	if err != nil {
		t.Fatal(err)
	}
	var qs []corpusQuery
	if err := json.Unmarshal(data, &qs); err != nil {
		t.Fatal(err)
	}
	return qs
}

func corpusDir(t testing.TB) string {
	abs, err := filepath.Abs(filepath.Join("testdata", "library", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// addSourcesForTest records knowledge sources as `lembas library add` does.
func addSourcesForTest(t testing.TB, paths ...string) {
	var srcs []knowledgeSource
	for _, p := range paths {
		srcs = append(srcs, knowledgeSource{ID: "s" + libHash(p, 6), Path: p, Added: time.Now()})
	}
	if err := saveSources(srcs); err != nil {
		t.Fatal(err)
	}
}

// TestLibrarySearchQuality: on the shipped corpus each query finds its
// document first — by words alone (no embedding model), and with the fake
// embedder over loopback, where the meaning ranking alone must find it
// first too (so the vectors, not only BM25, do the work).
func TestLibrarySearchQuality(t *testing.T) {
	qs := loadQueries(t)
	for _, mode := range []string{"bm25", "embeddings"} {
		t.Run(mode, func(t *testing.T) {
			var fe *fakeEmbedder
			if mode == "embeddings" {
				fe = newFakeEmbedder(t, 0)
			}
			libEnv(t, fe)
			addSourcesForTest(t, corpusDir(t))
			ix, emb, st, err := updateKnowledge(context.Background(), nil)
			if err != nil || len(st.Errors) > 0 || st.Files != 12 || st.Changed != 12 {
				t.Fatalf("update: %v %+v", err, st)
			}
			if (emb != nil) != (mode == "embeddings") {
				t.Fatalf("embedder %v in mode %s", emb, mode)
			}
			for _, q := range qs {
				hits, err := ix.search(context.Background(), q.Query, nil)
				if err != nil || len(hits) == 0 || hits[0].doc.Title != q.Doc {
					got := ""
					if len(hits) > 0 {
						got = hits[0].doc.Title
					}
					t.Errorf("%q: first %q, want %q (%v)", q.Query, got, q.Doc, err)
				}
				if fe != nil {
					v, _ := emb.embed(context.Background(), []string{q.Query})
					if c := ix.load().cosine(v[0], nil); len(c) == 0 || c[0].doc.Title != q.Doc {
						t.Errorf("%q by meaning alone: first %q, want %q", q.Query, c[0].doc.Title, q.Doc)
					}
				}
			}
			if fe != nil && fe.inputs.Load() < 12 {
				t.Errorf("the embedder saw %d inputs", fe.inputs.Load())
			}
		})
	}
}

// TestLibraryIndexRefusingEmbedder: an embedder that refuses input over 40
// tokens: the pieces are split until they fit, every token of every
// document is still in a piece, and search still works.
func TestLibraryIndexRefusingEmbedder(t *testing.T) {
	fe := newFakeEmbedder(t, 40)
	libEnv(t, fe)
	addSourcesForTest(t, corpusDir(t))
	ix, _, st, err := updateKnowledge(context.Background(), nil)
	if err != nil || len(st.Errors) > 0 || st.Files != 12 {
		t.Fatalf("update: %v %+v", err, st)
	}
	if fe.refused.Load() == 0 || fe.longest > 40 {
		t.Fatalf("refused %d, longest accepted %d", fe.refused.Load(), fe.longest)
	}
	for _, loaded := range ix.load().docs {
		d := ix.readDoc(loaded.ID) // the file, vectors and all
		data, _ := os.ReadFile(d.Path)
		toks := tokenize(string(data))
		covered := make([]bool, len(toks))
		for _, p := range d.Pieces {
			if n := len(tokenize(p.Text)); n > 40 || len(decodeVec(p.Vec)) != fe.dim {
				t.Errorf("%s: a piece of %d tokens, vector %v", d.Title, n, p.Vec != "")
			}
			for i, tk := range toks {
				if tk.start >= p.Start && tk.end <= p.End {
					covered[i] = true
				}
			}
		}
		for i, c := range covered {
			if !c {
				t.Errorf("%s: token %d (%q) is in no piece", d.Title, i, string(data)[toks[i].start:toks[i].end])
				break
			}
		}
	}
	hits, _ := ix.search(context.Background(), "queen cells swarm", nil)
	if len(hits) == 0 || hits[0].doc.Title != "beekeeping.md" {
		t.Errorf("search after splitting: %+v", hits)
	}
}

// refuseAll is an embedder that takes nothing: a single token refused is
// an error for that document, which is then kept out — and reported.
type refuseAll struct{}

func (refuseAll) embed(ctx context.Context, texts []string) ([][]float32, error) {
	return nil, errRefused
}
func (refuseAll) name() string { return "refuse/all" }

func TestLibraryIndexSingleTokenRefused(t *testing.T) {
	libEnv(t, nil)
	ix := openIndex("knowledge", refuseAll{})
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "a.md"), "one two three")
	st := ix.update(context.Background(), knowledgeDocs([]knowledgeSource{{Path: dir}}), nil)
	if len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "refused a single token") || st.Changed != 0 {
		t.Errorf("%+v", st)
	}
}

// TestLibraryIndexIncremental: an unchanged document is not re-read, a
// changed one is rebuilt, a removed one dropped, a touched one kept, and a
// new embedding model rebuilds every document.
func TestLibraryIndexIncremental(t *testing.T) {
	fe := newFakeEmbedder(t, 0)
	cfg, _ := libEnv(t, fe)
	dir := t.TempDir()
	for i := 0; i < 5; i++ {
		writeTestFile(t, filepath.Join(dir, fmt.Sprintf("d%d.md", i)), fmt.Sprintf("document %d about topic%d", i, i))
	}
	writeTestFile(t, filepath.Join(dir, ".hidden", "x.md"), "hidden")
	writeTestFile(t, filepath.Join(dir, "image.png"), "not text")
	addSourcesForTest(t, dir)
	ctx := context.Background()
	_, _, st, _ := updateKnowledge(ctx, nil)
	if st.Files != 5 || st.Changed != 5 {
		t.Fatalf("first: %+v", st)
	}
	calls := fe.calls.Load()
	if _, _, st, _ = updateKnowledge(ctx, nil); st.Changed != 0 || st.Removed != 0 || fe.calls.Load() != calls {
		t.Fatalf("second: %+v, %d embed calls", st, fe.calls.Load()-calls)
	}
	writeTestFile(t, filepath.Join(dir, "d1.md"), "document one now about volcanoes")
	os.Remove(filepath.Join(dir, "d2.md"))
	later := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, "d3.md"), later, later) // touched, same bytes
	ix, _, st, _ := updateKnowledge(ctx, nil)
	if st.Files != 4 || st.Changed != 1 || st.Removed != 1 {
		t.Fatalf("third: %+v", st)
	}
	if hits, _ := ix.search(ctx, "volcanoes", nil); len(hits) == 0 || hits[0].doc.Title != "d1.md" {
		t.Errorf("changed doc not found: %+v", hits)
	}
	if hits, _ := ix.search(ctx, "topic2", nil); len(hits) != 0 && hits[0].doc.Title == "d2.md" {
		t.Errorf("removed doc still found")
	}
	// Another embedding model: every document again.
	writeTestFile(t, filepath.Join(cfg, "lembas", "config.yaml"),
		"connections:\n  emb:\n    base_url: "+fe.url()+"\nembedding: emb/other\n")
	if _, _, st, _ = updateKnowledge(ctx, nil); st.Changed != 4 {
		t.Errorf("new model: %+v", st)
	}
	// No model: words only, rebuilt without vectors.
	os.Remove(filepath.Join(cfg, "lembas", "config.yaml"))
	ix, emb, st, _ := updateKnowledge(ctx, nil)
	if emb != nil || st.Changed != 4 {
		t.Errorf("no model: %v %+v", emb, st)
	}
	for _, loaded := range ix.load().docs {
		for _, p := range ix.readDoc(loaded.ID).Pieces {
			if p.Vec != "" {
				t.Errorf("%s keeps a vector", loaded.Title)
			}
		}
	}
}

// TestLibraryCommand: lembas library add, list, rm and reindex, with the
// closing line on stderr.
func TestLibraryCommand(t *testing.T) {
	libEnv(t, nil)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "a.md"), "alpha beta")
	writeTestFile(t, filepath.Join(dir, "sub", "b.txt"), "gamma delta")
	var out, errb bytes.Buffer
	if code := run([]string{"library", "add", dir}, nil, &out, &errb); code != 0 {
		t.Fatalf("add: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "added "+dir) || !strings.Contains(errb.String(), "indexed 2 files (2 changed, 0 removed)") || !strings.Contains(errb.String(), "words only") {
		t.Errorf("add:\n%s\n%s", out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	run([]string{"library", "add", dir}, nil, &out, &errb)
	if !strings.Contains(out.String(), "already in the library") || !strings.Contains(errb.String(), "(0 changed") {
		t.Errorf("add again:\n%s\n%s", out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"library", "list"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), filepath.Join(dir, "sub", "b.txt")) || !strings.Contains(out.String(), "1 pieces") {
		t.Errorf("list: %d\n%s", code, out.String())
	}
	srcs, _ := loadSources()
	out.Reset()
	errb.Reset()
	if code := run([]string{"library", "rm", srcs[0].ID}, nil, &out, &errb); code != 0 || !strings.Contains(errb.String(), "indexed 0 files (0 changed, 2 removed)") {
		t.Errorf("rm: %d\n%s\n%s", code, out.String(), errb.String())
	}
	if code := run([]string{"library", "rm", "nope"}, nil, &out, &errb); code != 1 {
		t.Errorf("rm nope: %d", code)
	}
	if code := run([]string{"library", "frob"}, nil, &out, &errb); code != 2 {
		t.Errorf("frob: %d", code)
	}
	if code := run([]string{"library", "add", filepath.Join(dir, "missing")}, nil, &out, &errb); code != 1 {
		t.Errorf("add missing: %d", code)
	}
}

// TestLibraryNotesAndKnowledgeTools: note_manage, note_view and
// notes_search through the engine, scopes included; knowledge_search and
// knowledge_get over an added folder.
func TestLibraryNotesAndKnowledgeTools(t *testing.T) {
	fe := newFakeEmbedder(t, 0)
	libEnv(t, fe)
	f := newFakeModel(t)
	e, _ := newTestEngine(t, f, "edit", nil)
	r := runLibTool(t, e, "note_manage", map[string]any{"action": "create", "title": "Deploy checklist", "content": "Bump the version, tag, then run make ship."})
	if r.IsError {
		t.Fatal(r.Text)
	}
	id := strings.TrimSuffix(strings.Fields(r.Text)[2], "")
	runLibTool(t, e, "note_manage", map[string]any{"action": "create", "title": "Global vim tip", "content": "Use ciw to change a word.", "scope": "global"})
	if r := runLibTool(t, e, "notes_search", map[string]any{"query": "how do we ship a release tag"}); !strings.Contains(strings.SplitN(r.Text, "\n", 3)[1], id) || !strings.Contains(r.Text, "meaning") {
		t.Errorf("notes_search:\n%s", r.Text)
	}
	if r := runLibTool(t, e, "note_manage", map[string]any{"action": "edit", "id": id, "old": "make ship", "new": "make release"}); r.IsError {
		t.Errorf("edit: %s", r.Text)
	}
	if r := runLibTool(t, e, "note_view", map[string]any{"id": id}); !strings.Contains(r.Text, "make release") {
		t.Errorf("view: %s", r.Text)
	}
	if r := runLibTool(t, e, "note_view", map[string]any{"id": "../../x"}); !r.IsError {
		t.Errorf("view a path: %s", r.Text)
	}
	// Another project sees the global note only.
	f2 := newFakeModel(t)
	e2, _ := newTestEngine(t, f2, "edit", nil)
	r = runLibTool(t, e2, "notes_search", map[string]any{"query": "deploy checklist vim word"})
	if strings.Contains(r.Text, id) || !strings.Contains(r.Text, "Global vim tip") {
		t.Errorf("other project:\n%s", r.Text)
	}
	if r := runLibTool(t, e2, "note_view", map[string]any{"id": id}); !r.IsError {
		t.Errorf("other project viewed a project note")
	}
	if r := runLibTool(t, e, "note_manage", map[string]any{"action": "delete", "id": id}); r.IsError {
		t.Errorf("delete: %s", r.Text)
	}
	if r := runLibTool(t, e, "notes_search", map[string]any{"query": "deploy checklist"}); strings.Contains(r.Text, id) {
		t.Errorf("deleted note found:\n%s", r.Text)
	}
	// Knowledge.
	if r := runLibTool(t, e, "knowledge_search", map[string]any{"query": "x"}); !strings.Contains(r.Text, "no knowledge documents") {
		t.Errorf("empty library: %s", r.Text)
	}
	addSourcesForTest(t, corpusDir(t))
	r = runLibTool(t, e, "knowledge_search", map[string]any{"query": "hermit crabs swap shells", "limit": 2})
	if r.IsError || !strings.Contains(strings.SplitN(r.Text, "\n", 3)[1], "tidepools.md") || strings.Count(r.Text, "\n- ") != 2 {
		t.Fatalf("knowledge_search:\n%s", r.Text)
	}
	ref := strings.Fields(strings.SplitN(r.Text, "\n", 3)[1])[1]
	if r := runLibTool(t, e, "knowledge_get", map[string]any{"id": ref}); r.IsError || !strings.Contains(r.Text, "hermit crabs") {
		t.Errorf("knowledge_get %s: %s", ref, r.Text)
	}
	doc, _, _ := strings.Cut(ref, "#")
	if r := runLibTool(t, e, "knowledge_get", map[string]any{"id": doc}); r.IsError || !strings.Contains(r.Text, "# Life in tide pools") {
		t.Errorf("knowledge_get %s: %s", doc, r.Text)
	}
	if r := runLibTool(t, e, "knowledge_get", map[string]any{"id": doc + "#99"}); !r.IsError {
		t.Errorf("piece 99: %s", r.Text)
	}
}

// FuzzChunkSpans: for any text and limits, the pieces cover every token
// in order, none is longer than max, and neighbours share exactly the
// overlap (as chunkSpans clamps it).
func FuzzChunkSpans(f *testing.F) {
	f.Add("a.b, c! naïve café 日本", 4, 1)
	f.Add(strings.Repeat("word ", 1000), 480, 64)
	f.Add("", 3, 5)
	f.Fuzz(func(t *testing.T, text string, max, overlap int) {
		if max <= 0 || max > 2000 || overlap < 0 || overlap > 2000 {
			t.Skip()
		}
		toks := tokenize(text)
		for i, tk := range toks {
			if tk.start >= tk.end || tk.end > len(text) || (i > 0 && tk.start < toks[i-1].end) {
				t.Fatalf("token %d %+v", i, tk)
			}
			if utf8.ValidString(text) && !utf8.ValidString(text[tk.start:tk.end]) {
				t.Fatalf("token %d cuts a rune", i)
			}
		}
		spans := chunkSpans(0, len(toks), max, overlap)
		ov := min(overlap, max-1)
		next := 0
		for i, s := range spans {
			if s.To-s.From > max || s.From >= s.To {
				t.Fatalf("span %d %+v", i, s)
			}
			if i > 0 && s.From != spans[i-1].To-ov {
				t.Fatalf("span %d starts at %d, want %d", i, s.From, spans[i-1].To-ov)
			}
			if s.From > next {
				t.Fatalf("tokens %d-%d in no piece", next, s.From)
			}
			next = s.To
		}
		if next != len(toks) {
			t.Fatalf("pieces end at %d of %d tokens", next, len(toks))
		}
	})
}

// FuzzParseFrontMatter: hostile SKILL.md text never panics, and a skill
// written by renderSkill reads back with its name and description.
func FuzzParseFrontMatter(f *testing.F) {
	f.Add("---\nname: a\ndescription: b\n---\nbody", "run-tests", "what it does")
	f.Add("---\r\nname: x\r\n---", "a", "b")
	f.Add("---", "a", "b")
	f.Add("---\n---\n", "a", "b")
	f.Fuzz(func(t *testing.T, data, name, desc string) {
		parseFrontMatter(data)
		if !validSkillName(name) || strings.TrimSpace(oneLineText(desc)) == "" || strings.Contains(desc, "---") || !utf8.ValidString(desc) {
			return
		}
		keys, _ := parseFrontMatter(renderSkill(name, desc, "body"))
		if keys["name"] != name || keys["description"] != strings.Trim(oneLineText(desc), `"'`) && keys["description"] != oneLineText(desc) {
			t.Fatalf("round trip: %q %q → %v", name, desc, keys)
		}
	})
}

// FuzzParseEmbeddings: whatever an embedding server answers, the parse
// gives one vector per input of one length, or an error.
func FuzzParseEmbeddings(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,2]}]}`), 2)
	f.Add([]byte(`{"data":[{"index":5,"embedding":[1]}]}`), 1)
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1,2]}]}`), 2)
	f.Add([]byte(`nope`), 1)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n < 0 || n > 64 {
			t.Skip()
		}
		vecs, err := parseEmbeddings(data, n)
		if err != nil {
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for %d inputs", len(vecs), n)
		}
		for _, v := range vecs {
			if len(v) == 0 || len(v) != len(vecs[0]) {
				t.Fatalf("vector lengths %d, %d", len(v), len(vecs[0]))
			}
		}
	})
}

// FuzzInstructionImports: any instruction file text, with imports of
// itself and of a neighbour, stacks without a crash or a loop, and never
// pulls in a file from outside the project.
func FuzzInstructionImports(f *testing.F) {
	f.Add("@AGENTS.md\n@b.md", "@AGENTS.md")
	f.Add("@../outside.md", "x")
	f.Add("@b.md\n@b.md", "@b.md")
	f.Add("@~/x", "@/etc/passwd")
	f.Fuzz(func(t *testing.T, a, b string) {
		base := t.TempDir()
		root := filepath.Join(base, "p")
		os.MkdirAll(root, 0o755)
		os.WriteFile(filepath.Join(base, "outside.md"), []byte("OUTSIDE-SECRET"), 0o644)
		os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte(a), 0o644)
		os.WriteFile(filepath.Join(root, "b.md"), []byte(b), 0o644)
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "cfg"))
		t.Setenv("XDG_STATE_HOME", filepath.Join(base, "state"))
		out := renderInstructions(instructionStack(root))
		if strings.Contains(out, "OUTSIDE-SECRET") && !strings.Contains(a+b, "OUTSIDE-SECRET") {
			t.Fatalf("pulled in a file outside the project:\n%s", out)
		}
	})
}

// TestLibraryProgressLine: on a terminal the progress is one line drawn
// over itself and wiped at the end; on a pipe nothing but the closing line
// (which cmdLibrary writes) appears.
func TestLibraryProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := &indexProgress{w: &b, tty: true}
	p.update(1, 3, 2)
	p.update(3, 3, 7)
	p.end()
	if got := b.String(); got != "\rindexing 1/3 files · 2 pieces\x1b[K\rindexing 3/3 files · 7 pieces\x1b[K\r\x1b[K" {
		t.Errorf("tty: %q", got)
	}
	b.Reset()
	p = newIndexProgress(&b)
	p.update(1, 1, 1)
	p.end()
	if b.Len() != 0 {
		t.Errorf("pipe: %q", b.String())
	}
}

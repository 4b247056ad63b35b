package main

// Benchmarks of the library (README, "The library": the numbers there are
// these, on the machine named there):
//
//	go test -run XXX -bench 'BenchmarkLibrary' -benchtime 3x .
//	go test -run TestLibraryPromptBytes -v .

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// synthDocs writes n documents of about words words each, drawn with a
// fixed seed from the shipped corpus's vocabulary, so every run indexes
// the same text.
func synthDocs(t testing.TB, dir string, n, words int) {
	var vocab []string
	names, _ := filepath.Glob(filepath.Join("testdata", "library", "corpus", "*.md"))
	for _, p := range names {
		data, _ := os.ReadFile(p)
		vocab = append(vocab, strings.Fields(string(data))...)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		var b strings.Builder
		for j := 0; j < words; j++ {
			b.WriteString(vocab[rng.Intn(len(vocab))])
			if j%12 == 11 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
		writeTestFile(t, filepath.Join(dir, fmt.Sprintf("doc%05d.md", i)), b.String())
	}
}

// benchIndex indexes docs documents from scratch b.N times and reports
// documents per second.
func benchIndex(b *testing.B, withEmbedder bool) {
	var fe *fakeEmbedder
	if withEmbedder {
		fe = newFakeEmbedder(b, 0)
	}
	libEnv(b, fe)
	src := b.TempDir()
	const docs, words = 200, 600
	synthDocs(b, src, docs, words)
	addSourcesForTest(b, src)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.RemoveAll(filepath.Join(stateDir(), "library", "index"))
		resetLibIndexes()
		_, _, st, err := updateKnowledge(context.Background(), nil)
		if err != nil || st.Changed != docs {
			b.Fatalf("%v %+v", err, st)
		}
	}
	b.ReportMetric(float64(docs*b.N)/b.Elapsed().Seconds(), "docs/s")
}

func BenchmarkLibraryIndexBM25(b *testing.B)     { benchIndex(b, false) }
func BenchmarkLibraryIndexEmbedder(b *testing.B) { benchIndex(b, true) }

var (
	query10kOnce sync.Once
	query10kDir  string
)

// benchQuery searches an index of 10,000 pieces (1,000 documents of ten
// pieces), loaded once, as a session's second search would.
func benchQuery(b *testing.B, withEmbedder bool) {
	var fe *fakeEmbedder
	if withEmbedder {
		fe = newFakeEmbedder(b, 0)
	}
	libEnv(b, fe)
	src := b.TempDir()
	ls := theLibrarySpec().Library
	// Ten pieces a document: 10 × (chunk − overlap) + overlap tokens, at
	// about 1.25 tokens a word of this vocabulary (its punctuation).
	synthDocs(b, src, 1000, (10*(ls.ChunkTokens-ls.OverlapTokens)+ls.OverlapTokens)*4/5)
	addSourcesForTest(b, src)
	ix, _, st, err := updateKnowledge(context.Background(), nil)
	if err != nil || len(st.Errors) > 0 {
		b.Fatalf("%v %+v", err, st)
	}
	si := ix.load()
	if len(si.pieces) < 9000 || len(si.pieces) > 11500 {
		b.Fatalf("%d pieces", len(si.pieces))
	}
	qs := loadQueries(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ix.search(context.Background(), qs[i%len(qs)].Query, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(si.pieces)), "pieces")
}

func BenchmarkLibraryQuery10kBM25(b *testing.B)     { benchQuery(b, false) }
func BenchmarkLibraryQuery10kEmbedder(b *testing.B) { benchQuery(b, true) }

// TestLibraryPromptBytes measures what the library adds to a session's
// first request: the ten tools' definitions and the library block (every
// session), and for a project with two instruction files and five skills,
// their part of the system prompt. It checks the parts are there and logs
// the sizes (go test -run TestLibraryPromptBytes -v).
func TestLibraryPromptBytes(t *testing.T) {
	cfg, _ := libEnv(t, nil)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	bare, err := systemPrompt(root, "manual", "/bin/bash", nil)
	if err != nil {
		t.Fatal(err)
	}
	readme, _ := os.ReadFile("CONTRIBUTING.md")
	writeTestFile(t, filepath.Join(root, "AGENTS.md"), string(readme))
	writeTestFile(t, filepath.Join(cfg, "lembas", "AGENTS.md"), "Answer in British English. Keep commits small.\n")
	for i, d := range []string{"cut a release: tag, changelog, push", "triage new issues by label", "run the benchmarks and compare",
		"update the dependencies safely", "write a migration for the database"} {
		name := fmt.Sprintf("skill-%d", i)
		writeTestFile(t, filepath.Join(root, ".agent", "skills", name, "SKILL.md"), "---\nname: "+name+"\ndescription: "+d+"\n---\n"+strings.Repeat("A step.\n", 50))
	}
	full, _ := systemPrompt(root, "manual", "/bin/bash", nil)
	tb, err := newToolbox(root, false)
	if err != nil {
		t.Fatal(err)
	}
	var defs []json.RawMessage
	json.Unmarshal(tb.defs, &defs)
	lib := map[string]bool{"memory": true, "skills_list": true, "skill_view": true, "skill_manage": true, "session_search": true,
		"notes_search": true, "note_view": true, "note_manage": true, "knowledge_search": true, "knowledge_get": true}
	toolBytes, n := 0, 0
	for _, d := range defs {
		var x struct{ Function struct{ Name string } }
		json.Unmarshal(d, &x)
		if lib[x.Function.Name] {
			toolBytes += len(d) + 1
			n++
		}
	}
	if n != 10 || !strings.Contains(full, "skill-4: write a migration") || !strings.Contains(full, "British English") {
		t.Fatalf("%d library tools; prompt:\n%s", n, full)
	}
	instr, skills := len(stackedInstructions(root)), len(skillsPrompt(root))
	t.Logf("library tools' definitions: %d bytes (of %d for all %d tools)", toolBytes, len(tb.defs), len(defs))
	t.Logf("library block in the system prompt: %d bytes; system prompt with no files: %d bytes", len(libraryBlock()), len(bare))
	t.Logf("two instruction files (%d + 47 bytes of text): %d bytes; five skills: %d bytes; system prompt then: %d bytes (+%d)",
		len(strings.TrimSpace(string(readme))), instr, skills, len(full), len(full)-len(bare))
}

// BenchmarkLibraryTaskBytes is the bytes a -p task sends the model when it
// does use the library (issue "Lean again", item 1): the real binary, a
// library of testdata/library/corpus added with lembas library add (BM25),
// and a scripted model that searches it, reads the first hit's piece and
// answers. Reported: the first request's bytes and the run's total (the
// library's ten tools and its block are offered only where there is a
// library, notes or skills), and the same first request in a session with
// no library beside it (lib-off-first-request-bytes).
func BenchmarkLibraryTaskBytes(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("POSIX paths")
	}
	corpus, _ := filepath.Abs(filepath.Join("testdata", "library", "corpus"))
	var first, total, bare float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg, st := libEnv(b, nil)
		proj := copyProject(b, "basic")
		fm := newFakeModel(b)
		env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + st, "XDG_CONFIG_HOME=" + cfg}
		fm.push(textReply("none"))
		if r := runLembas(b, env, proj, "", "--mode", "auto", "-p", "what about varroa?"); r.code != 0 {
			b.Fatalf("-p without a library: %d\n%s", r.code, r.stderr)
		}
		bare = float64(len(fm.got()[0].Raw))
		if r := runLembas(b, env, proj, "", "library", "add", corpus); r.code != 0 {
			b.Fatalf("library add: %d\n%s", r.code, r.stderr)
		}
		fm = newFakeModel(b)
		env[0] = "OPENAI_BASE_URL=" + fm.url()
		fm.route = func(req fakeRequest) fakeReply {
			switch res := toolResults(req); len(res) {
			case 0:
				return callsReply(fakeCall{"knowledge_search", map[string]any{"query": "mite drop on a sticky board"}})
			case 1:
				id := ""
				if m := regexp.MustCompile(`k[0-9a-f]+#[0-9]+`).FindString(res[0]); m != "" {
					id = m
				}
				return callsReply(fakeCall{"knowledge_get", map[string]any{"id": id}})
			}
			return textReply("Count the mites on the sticky board after 24 hours.")
		}
		b.StartTimer()
		r := runLembas(b, env, proj, "", "--mode", "auto", "-p", "what about varroa?")
		b.StopTimer()
		got := fm.got()
		if r.code != 0 || len(got) != 3 || !strings.Contains(strings.Join(toolResults(got[2]), "\n"), "sticky") {
			b.Fatalf("-p with the library: %d, %d requests\n%s", r.code, len(got), r.stderr)
		}
		first, total = float64(len(got[0].Raw)), 0
		for _, q := range got {
			total += float64(len(q.Raw))
		}
		b.StartTimer()
	}
	b.ReportMetric(first, "first-request-bytes")
	b.ReportMetric(total, "total-bytes")
	b.ReportMetric(bare, "lib-off-first-request-bytes")
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeEmbedder is an OpenAI-compatible /v1/embeddings server over real
// HTTP with zero latency. Its vectors are a real, if simple, embedding:
// each of the library's words but the commonest (and each long word's
// letter trigrams, so "indexing" is near "index") hashed into one of dim
// buckets with a sign — deterministic, answer-blind. An input over refuseOver tokens (when set)
// is refused with HTTP 400, as a server refuses input longer than its
// model takes.
type fakeEmbedder struct {
	srv        *httptest.Server
	dim        int
	refuseOver int
	calls      atomic.Int64
	inputs     atomic.Int64
	refused    atomic.Int64
	mu         sync.Mutex
	longest    int // the most tokens of an input it accepted
}

func newFakeEmbedder(t testing.TB, refuseOver int) *fakeEmbedder {
	f := startFakeEmbedder(refuseOver)
	t.Cleanup(f.srv.Close)
	return f
}

// startFakeEmbedder starts one the caller closes.
func startFakeEmbedder(refuseOver int) *fakeEmbedder {
	f := &fakeEmbedder{dim: 512, refuseOver: refuseOver}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *fakeEmbedder) url() string { return f.srv.URL + "/v1" }

func (f *fakeEmbedder) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || !strings.HasSuffix(r.URL.Path, "/embeddings") {
		http.NotFound(w, r)
		return
	}
	f.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" {
		http.Error(w, `{"error":{"message":"bad request"}}`, 500)
		return
	}
	var data []map[string]any
	for i, in := range req.Input {
		n := len(tokenize(in))
		if f.refuseOver > 0 && n > f.refuseOver {
			f.refused.Add(1)
			http.Error(w, fmt.Sprintf(`{"error":{"message":"input is %d tokens, more than the %d this model takes"}}`, n, f.refuseOver), 400)
			return
		}
		f.mu.Lock()
		f.longest = max(f.longest, n)
		f.mu.Unlock()
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": bagOfWords(in, f.dim)})
	}
	f.inputs.Add(int64(len(req.Input)))
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

// bagOfWords is the fake embedder's vector of a text.
func bagOfWords(text string, dim int) []float32 {
	v := make([]float32, dim)
	add := func(s string, weight float32) {
		h := fnv.New32a()
		h.Write([]byte(s))
		x := h.Sum32()
		sign := float32(1)
		if x&1 == 1 {
			sign = -1
		}
		v[(x>>1)%uint32(dim)] += sign * weight
	}
	for _, w := range terms(text) {
		if len(w) < 3 || embedStopwords[w] {
			continue
		}
		add(w, 1)
		if len(w) > 4 {
			for i := 0; i+3 <= len(w); i++ {
				add("#"+w[i:i+3], 0.3)
			}
		}
	}
	return v
}

// embedStopwords are words too common to mean anything, which a bag of
// words leaves out.
var embedStopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("the and for are but not you your with this that from they have has had was were will would can could should its it's into onto than then them their there what when where which who why how all any each few more most other some such only own same too very just also does did doing our out off over under again once here about above below between after before during my mine me we us i is be been being do of to in on at by or as an a if so up no yes it") {
		embedStopwords[w] = true
	}
}

// libEnv points the config and state folders at fresh temp folders and,
// when emb is set, writes a config.yaml whose embedding: is its model.
func libEnv(t testing.TB, emb *fakeEmbedder) (cfgDir, stDir string) {
	cfgDir, stDir = t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgDir)
	t.Setenv("XDG_STATE_HOME", stDir)
	t.Setenv("OPENAI_BASE_URL", "")
	if emb != nil {
		writeTestFile(t, filepath.Join(cfgDir, "lembas", "config.yaml"),
			"connections:\n  emb:\n    base_url: "+emb.url()+"\n    models: [chat]\nembedding: emb/hashbag\n")
	}
	resetLibIndexes()
	return cfgDir, stDir
}

// resetLibIndexes forgets the process's loaded indexes, as a new process
// would.
func resetLibIndexes() {
	libIndexMu.Lock()
	libIndexes = map[string]*libIndex{}
	libIndexMu.Unlock()
}

func writeTestFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runSessionTool runs one of the library's tools through the engine's own
// path for session tools: arguments checked, then run.
func runLibTool(t *testing.T, e *engine, name string, args any) toolResult {
	t.Helper()
	raw, _ := json.Marshal(args)
	tool := e.tb.lookup(name)
	if tool == nil {
		t.Fatalf("no tool %s", name)
	}
	fixed, err := checkArgs(tool, raw, theSpec().Purpose.Schema)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return e.runSessionTool(context.Background(), sessionTools[name], tool, fixed)
}

func init() {
	conformanceRunners["instructions"] = runInstructionsCase
	conformanceRunners["memory"] = runMemoryCase
	conformanceRunners["chunk_tokens"] = runChunkCase
}

// runInstructionsCase lays out a folder tree (files, a .git marker, trust
// answers), then stacks its instruction files through the real code.
func runInstructionsCase(in json.RawMessage) (any, error) {
	var c struct {
		Files   map[string]string `json:"files"`  // path under the tree → content ("global/" is the config folder)
		Repeat  map[string]int    `json:"repeat"` // path → repeat its content this many times
		Git     string            `json:"git"`    // folder holding .git, "" for none
		Project string            `json:"project"`
		Trust   map[string]bool   `json:"trust"`
		Summary bool              `json:"summary"` // answer with names and the cut line, not the whole text
		Skills  *bool             `json:"skills"`  // answer with the skills found instead (trusted: the project's are looked for)
	}
	if err := json.Unmarshal(in, &c); err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "instr")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	base, _ = filepath.EvalSymlinks(base)
	oldCfg, oldState := os.Getenv("XDG_CONFIG_HOME"), os.Getenv("XDG_STATE_HOME")
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "cfg"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(base, "state"))
	defer os.Setenv("XDG_CONFIG_HOME", oldCfg)
	defer os.Setenv("XDG_STATE_HOME", oldState)
	tree := filepath.Join(base, "tree")
	for p, content := range c.Files {
		if n := c.Repeat[p]; n > 0 {
			content = strings.Repeat(content, n)
		}
		abs := filepath.Join(tree, filepath.FromSlash(p))
		if strings.HasPrefix(p, "global/") {
			abs = filepath.Join(base, "cfg", "lembas", filepath.FromSlash(strings.TrimPrefix(p, "global/")))
		}
		os.MkdirAll(filepath.Dir(abs), 0o755)
		if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	if c.Git != "" {
		os.MkdirAll(filepath.Join(tree, c.Git, ".git"), 0o755)
	}
	root := filepath.Join(tree, filepath.FromSlash(c.Project))
	os.MkdirAll(root, 0o755)
	for dir, ok := range c.Trust {
		setTrust(filepath.Join(tree, filepath.FromSlash(dir)), ok)
	}
	if c.Skills != nil {
		out := []string{}
		for _, sk := range discoverSkills(root, *c.Skills) {
			rel, _ := filepath.Rel(tree, sk.Path)
			if sk.Where == "user" {
				rel = "global/" + strings.TrimPrefix(filepath.ToSlash(sk.Path), filepath.ToSlash(filepath.Join(base, "cfg", "lembas"))+"/")
			}
			out = append(out, sk.Name+": "+sk.Description+" ("+filepath.ToSlash(rel)+")")
		}
		return map[string]any{"skills": out}, nil
	}
	files := instructionStack(root)
	text := renderInstructions(files)
	var order []string
	for _, f := range files {
		order = append(order, f.Shown)
	}
	if order == nil {
		order = []string{}
	}
	if c.Summary {
		cut := ""
		if i := strings.LastIndex(text, "\n["); i >= 0 {
			cut = text[i+1:]
		}
		return map[string]any{"order": order, "cut": cut, "bytes_at_most": len(text) <= theLibrarySpec().Instructions.MaxBytes+1024}, nil
	}
	return map[string]any{"order": order, "prompt": text}, nil
}

// runMemoryCase applies a case's changes to its records through the real
// batch code, against the memory tool's limits (or the case's).
func runMemoryCase(in json.RawMessage) (any, error) {
	var c struct {
		Records map[string][]string `json:"records"`
		Changes []memChange         `json:"changes"`
		Limits  map[string]int      `json:"limits"`
	}
	if err := json.Unmarshal(in, &c); err != nil {
		return nil, err
	}
	t := theSpec().Tools["memory"]
	limits := memLimits(t)
	for k, v := range c.Limits {
		limits[k] = v
	}
	recs := map[string][]memRecord{}
	for target, texts := range c.Records {
		for _, s := range texts {
			recs[target] = append(recs[target], memRecord{Text: s})
		}
	}
	out, err := applyMemory(t, recs, c.Changes, limits, time.Time{})
	if err != nil {
		return map[string]any{"error": err.Error()}, nil
	}
	res := map[string][]string{}
	for _, target := range theLibrarySpec().Memory.Targets {
		res[target] = []string{}
		for _, r := range out[target] {
			res[target] = append(res[target], r.Text)
		}
	}
	return map[string]any{"records": res}, nil
}

// runChunkCase cuts a text into pieces through the real code, embedding
// them with the fake embedder (which refuses over refuse_over tokens) when
// the case says so; it answers with each piece's token range.
func runChunkCase(in json.RawMessage) (any, error) {
	var c struct {
		Text       string `json:"text"`
		Words      int    `json:"words"` // instead of text: w1 w2 … wN
		Max        int    `json:"max"`   // 0: library.json's chunk_tokens
		Overlap    *int   `json:"overlap"`
		RefuseOver int    `json:"refuse_over"`
	}
	if err := json.Unmarshal(in, &c); err != nil {
		return nil, err
	}
	ls := theLibrarySpec().Library
	text := c.Text
	if c.Words > 0 {
		w := make([]string, c.Words)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", i)
		}
		text = strings.Join(w, " ")
	}
	max, overlap := ls.ChunkTokens, ls.OverlapTokens
	if c.Max > 0 {
		max = c.Max
	}
	if c.Overlap != nil {
		overlap = *c.Overlap
	}
	toks := tokenize(text)
	spans := chunkSpans(0, len(toks), max, overlap)
	if c.RefuseOver > 0 {
		fe := startFakeEmbedder(c.RefuseOver)
		defer fe.srv.Close()
		emb := &httpEmbedder{base: fe.url(), model: "hashbag", ref: "fake/hashbag", client: http.DefaultClient}
		var err error
		spans, _, err = embedSpans(context.Background(), emb, text, toks, spans)
		if err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
	}
	out := [][2]int{}
	for _, s := range spans {
		out = append(out, [2]int{s.From, s.To})
	}
	return map[string]any{"tokens": len(toks), "pieces": out}, nil
}

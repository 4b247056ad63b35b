package main

// The library's index: documents split into pieces of at most chunk_tokens
// tokens (overlap_tokens repeated between neighbours), each piece scored by
// words (BM25) and, with an embedding model, by meaning (cosine of
// OpenAI-compatible /v1/embeddings vectors); both rankings are joined by
// reciprocal rank. The index is one JSON file per document under the state
// folder's library/index/<collection>/, written atomically, rewritten only
// when its document changed and removed with it.
//
//	sources ──stat──► unchanged? keep : read → pieces → embed (refused? split, retry) → write file
//	query ──► BM25 over pieces ─┐
//	      └─► embed → cosine ───┴─► reciprocal rank ──► top pieces

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// token is one token of a text: bytes start to end.
type token struct{ start, end int }

// tokenize splits text into the library's tokens: a run of letters or
// digits, or one other character that is not a space. It is the unit of
// the piece limit and of BM25's words, so the two agree.
func tokenize(text string) []token {
	var out []token
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
			i += n
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i + n
			for j < len(text) {
				r2, n2 := utf8.DecodeRuneInString(text[j:])
				if !(unicode.IsLetter(r2) || unicode.IsDigit(r2)) {
					break
				}
				j += n2
			}
			out = append(out, token{i, j})
			i = j
		default:
			out = append(out, token{i, i + n})
			i += n
		}
	}
	return out
}

// span is a piece: tokens [From, To) of its document's token list.
type span struct{ From, To int }

// chunkSpans cuts n tokens into pieces of at most max tokens, each
// starting overlap tokens before the previous one ended. An overlap of
// max or more would never advance, so it is kept below max.
func chunkSpans(from, to, max, overlap int) []span {
	if max < 1 {
		max = 1
	}
	if overlap >= max {
		overlap = max - 1
	}
	if overlap < 0 {
		overlap = 0
	}
	var out []span
	for i := from; i < to; {
		j := min(i+max, to)
		out = append(out, span{i, j})
		if j == to {
			break
		}
		i = j - overlap
	}
	return out
}

// errRefused is an embedder refusing an input (too long for it): the
// piece is split and tried again, never dropped.
var errRefused = errors.New("the embedder refused the input")

// embedder turns texts into vectors.
type embedder interface {
	embed(ctx context.Context, texts []string) ([][]float32, error)
	name() string
}

// httpEmbedder is an OpenAI-compatible /v1/embeddings endpoint.
type httpEmbedder struct {
	base, key, model, ref string
	client                *http.Client
}

func (h *httpEmbedder) name() string { return h.ref }

// embed posts one batch. A 400, 413 or 422 is the server refusing the
// input (most often: longer than the model takes) and is errRefused, which
// the caller answers by splitting; anything else is an error.
func (h *httpEmbedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(map[string]any{"model": h.model, "input": texts})
	ctx, cancel := context.WithTimeout(ctx, time.Duration(theLibrarySpec().Library.EmbedTimeoutS)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", h.base+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.key != "" {
		req.Header.Set("Authorization", "Bearer "+h.key)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, errorf("embedding with %s: %v", h.ref, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	switch resp.StatusCode {
	case 200:
	case 400, 413, 422:
		return nil, errRefused
	default:
		return nil, errorf("embedding with %s: HTTP %d: %s", h.ref, resp.StatusCode, oneLine(string(data), 200))
	}
	vecs, err := parseEmbeddings(data, len(texts))
	if err != nil {
		return nil, errorf("embedding with %s: %v", h.ref, err)
	}
	return vecs, nil
}

// parseEmbeddings reads an /embeddings answer for n inputs: every input
// gets one vector, of one length for all, normalised; anything else is an
// error, never a crash.
func parseEmbeddings(data []byte, n int) ([][]float32, error) {
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, errorf("the answer is not JSON: %v", err)
	}
	vecs := make([][]float32, n)
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= n {
			return nil, errorf("the answer has index %d for %d inputs", d.Index, n)
		}
		vecs[d.Index] = normalize(d.Embedding)
	}
	for i, v := range vecs {
		if len(v) == 0 {
			return nil, errorf("no vector for input %d", i)
		}
		if len(v) != len(vecs[0]) {
			return nil, errorf("vectors of %d and %d numbers in one answer", len(vecs[0]), len(v))
		}
	}
	return vecs, nil
}

// normalize scales a vector to length 1, so cosine is a dot product.
func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	n := float32(1 / math.Sqrt(s))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * n
	}
	return out
}

// embeddingRef is config.yaml's embedding: (a <connection>/<model> ref, or
// a bare model name), or "".
func embeddingRef(cfg *config) string {
	if m, ok := cfg.Raw.(map[string]any); ok {
		if s, ok := m["embedding"].(string); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// embedderFor makes the embedder config.yaml names, or nil when it names
// none. A bare name is taken from the first connection.
func embedderFor(cfg *config, getenv func(string) string) (embedder, error) {
	ref := embeddingRef(cfg)
	if ref == "" {
		return nil, nil
	}
	conns := connections(cfg, getenv)
	connName, model, ok := strings.Cut(ref, "/")
	var c *connection
	if ok {
		c = findConn(conns, connName)
	} else if len(conns) > 0 {
		c, model = conns[0], ref
	}
	if c == nil || model == "" {
		return nil, errorf("%s", fillPairs(theLibrarySpec().Library.NoEmbeddingModel, "ref", ref))
	}
	return &httpEmbedder{base: c.BaseURL, key: c.APIKey, model: model, ref: c.Name + "/" + model, client: c.http}, nil
}

// piece is one indexed piece of a document.
type piece struct {
	From  int    `json:"from"` // first line (1-based)
	To    int    `json:"to"`   // last line
	Text  string `json:"text"`
	Vec   string `json:"vec,omitempty"` // base64 little-endian float32, normalised
	Start int    `json:"start"`         // byte offsets in the document
	End   int    `json:"end"`

	vec []float32
}

// docIndex is one document's index file.
type docIndex struct {
	ID     string  `json:"id"`
	Path   string  `json:"path"`
	Title  string  `json:"title"`
	Scope  string  `json:"scope,omitempty"` // notes: project or global
	Owner  string  `json:"owner,omitempty"` // notes: the project a project note belongs to
	Size   int64   `json:"size"`
	MTime  int64   `json:"mtime"`
	SHA    string  `json:"sha"`
	Model  string  `json:"model,omitempty"`
	Pieces []piece `json:"pieces"`
}

// embedSpans embeds the pieces of one document. A batch the embedder
// refuses is tried piece by piece; a piece it refuses is split in two
// halves (no overlap between them: the piece's own neighbours already
// share its edges) and each half tried again, down to a single token,
// which when refused is an error — a piece is never dropped.
func embedSpans(ctx context.Context, emb embedder, text string, toks []token, spans []span) ([]span, [][]float32, error) {
	batch := max(theLibrarySpec().Library.EmbedBatch, 1)
	var outS []span
	var outV [][]float32
	var one func(s span) error
	one = func(s span) error {
		v, err := emb.embed(ctx, []string{spanText(text, toks, s)})
		if err == nil {
			outS, outV = append(outS, s), append(outV, v[0])
			return nil
		}
		if !errors.Is(err, errRefused) {
			return err
		}
		if s.To-s.From <= 1 {
			return errRefused
		}
		mid := s.From + (s.To-s.From+1)/2
		if err := one(span{s.From, mid}); err != nil {
			return err
		}
		return one(span{mid, s.To})
	}
	for i := 0; i < len(spans); i += batch {
		group := spans[i:min(i+batch, len(spans))]
		texts := make([]string, len(group))
		for j, s := range group {
			texts[j] = spanText(text, toks, s)
		}
		vecs, err := emb.embed(ctx, texts)
		if err == nil {
			outS, outV = append(outS, group...), append(outV, vecs...)
			continue
		}
		if !errors.Is(err, errRefused) {
			return nil, nil, err
		}
		for _, s := range group {
			if err := one(s); err != nil {
				return nil, nil, err
			}
		}
	}
	return outS, outV, nil
}

func spanText(text string, toks []token, s span) string {
	return text[toks[s.From].start:toks[s.To-1].end]
}

// buildPieces makes a document's pieces, embedded when emb is set.
func buildPieces(ctx context.Context, emb embedder, text string) ([]piece, error) {
	ls := theLibrarySpec().Library
	toks := tokenize(text)
	spans := chunkSpans(0, len(toks), ls.ChunkTokens, ls.OverlapTokens)
	var vecs [][]float32
	if emb != nil && len(spans) > 0 {
		var err error
		spans, vecs, err = embedSpans(ctx, emb, text, toks, spans)
		if err != nil {
			return nil, err
		}
	}
	lineAt := lineStarts(text)
	out := make([]piece, len(spans))
	for i, s := range spans {
		start, end := toks[s.From].start, toks[s.To-1].end
		p := piece{Text: text[start:end], Start: start, End: end, From: lineOf(lineAt, start), To: lineOf(lineAt, end-1)}
		if vecs != nil {
			p.vec = vecs[i]
			p.Vec = encodeVec(vecs[i])
		}
		out[i] = p
	}
	return out, nil
}

func lineStarts(text string) []int {
	at := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			at = append(at, i+1)
		}
	}
	return at
}

func lineOf(starts []int, off int) int {
	return sort.Search(len(starts), func(i int) bool { return starts[i] > off })
}

func encodeVec(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decodeVec(s string) []float32 {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// libIndex is one collection's index folder (knowledge or notes).
type libIndex struct {
	dir string
	emb embedder

	mu     mutex
	loaded *searchIndex // nil: load on next search
}

var (
	libIndexMu mutex
	libIndexes = map[string]*libIndex{}
)

// openIndex is the collection's index, shared by every session of the
// process so a search loads it once.
func openIndex(collection string, emb embedder) *libIndex {
	dir := filepath.Join(stateDir(), "library", "index", collection)
	libIndexMu.Lock()
	defer libIndexMu.Unlock()
	ix := libIndexes[dir]
	if ix == nil {
		ix = &libIndex{dir: dir}
		libIndexes[dir] = ix
	}
	ix.mu.Lock()
	if embName(ix.emb) != embName(emb) {
		ix.loaded = nil
	}
	ix.emb = emb
	ix.mu.Unlock()
	return ix
}

//go:noinline
func embName(e embedder) string {
	if e == nil {
		return ""
	}
	return e.name()
}

// docSource is a document the index should hold: its id, where it is, and
// how to read it.
type docSource struct {
	ID, Path, Title, Scope, Owner string
	Size, MTime                   int64
	read                          func() ([]byte, error)
}

// updateStats is what one update did.
type updateStats struct {
	Files, Changed, Removed, Pieces int
	Errors                          []string
}

func (ix *libIndex) file(id string) string { return filepath.Join(ix.dir, id+".json") }

// readDoc reads one index file; a broken one is as good as missing and is
// rebuilt.
func (ix *libIndex) readDoc(id string) *docIndex {
	data, err := os.ReadFile(ix.file(id))
	if err != nil {
		return nil
	}
	var d docIndex
	if json.Unmarshal(data, &d) != nil || d.ID != id {
		return nil
	}
	return &d
}

// update brings the index in line with sources: an unchanged document
// (same size and time, or the same bytes, and the same embedding model) is
// kept, a changed one rebuilt, one no longer among sources removed.
// Documents are done index_workers at a time, so one's fsync or embedding
// request overlaps another's; progress is told after each. A document that
// fails (unreadable, the embedder down) is reported and kept out until the
// next update.
func (ix *libIndex) update(ctx context.Context, sources []docSource, progress func(done, total, pieces int)) updateStats {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var st updateStats
	model := embName(ix.emb)
	want := map[string]bool{}
	var mu mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(theLibrarySpec().Library.IndexWorkers, 1))
	done := 0
	for _, src := range sources {
		want[src.ID] = true
		st.Files++
		wg.Add(1)
		sem <- struct{}{}
		go func(src docSource) {
			defer wg.Done()
			defer func() { <-sem }()
			n, changed, err := ix.updateOne(ctx, src, model)
			mu.Lock()
			defer mu.Unlock()
			done++
			if err != nil {
				st.Errors = append(st.Errors, fmt.Sprintf("%s: %v", src.Path, err))
				return
			}
			st.Pieces += n
			if changed {
				st.Changed++
				ix.loaded = nil
			}
			if progress != nil {
				progress(done, len(sources), st.Pieces)
			}
		}(src)
	}
	wg.Wait()
	sort.Strings(st.Errors)
	names, _ := filepath.Glob(filepath.Join(ix.dir, "*.json"))
	for _, n := range names {
		id := strings.TrimSuffix(filepath.Base(n), ".json")
		if !want[id] {
			if os.Remove(n) == nil {
				st.Removed++
				ix.loaded = nil
			}
		}
	}
	return st
}

// updateOne brings one document's index file up to date; it says how
// many pieces the document has and whether they were built anew.
func (ix *libIndex) updateOne(ctx context.Context, src docSource, model string) (int, bool, error) {
	old := ix.readDoc(src.ID)
	if old != nil && old.Model == model && old.Size == src.Size && old.MTime == src.MTime && old.Path == src.Path && old.Title == src.Title {
		return len(old.Pieces), false, nil
	}
	data, err := src.read()
	if err != nil {
		return 0, false, err
	}
	sha := hashText(data)
	d := &docIndex{ID: src.ID, Path: src.Path, Title: src.Title, Scope: src.Scope, Owner: src.Owner, Size: src.Size, MTime: src.MTime, SHA: sha, Model: model}
	changed := false
	if old != nil && old.SHA == sha && old.Model == model {
		d.Pieces = old.Pieces // touched, not changed: keep the pieces
	} else {
		d.Pieces, err = buildPieces(ctx, ix.emb, string(data))
		if err != nil {
			if errors.Is(err, errRefused) {
				err = errorf("%s", fillPairs(theLibrarySpec().Library.EmbedRefusedToken, "path", src.Path))
			}
			return 0, false, err
		}
		changed = true
	}
	out, _ := json.Marshal(d)
	if err := writeFileAtomic(ix.file(src.ID), out, 0o600); err != nil {
		return 0, false, err
	}
	if old != nil && !changed {
		changed = old.Scope != d.Scope || old.Owner != d.Owner
	}
	return len(d.Pieces), changed, nil
}

// searchIndex is a collection loaded for searching: every piece, its BM25
// postings and its vector.
type searchIndex struct {
	docs     []*docIndex
	pieces   []searchPiece
	postings map[string][]posting
	avgLen   float64
	model    string
}

type searchPiece struct {
	doc    *docIndex
	n      int     // the piece's number in its document, 1-based
	length int     // terms
	norm   float64 // BM25's length normalisation, k1·(1 − b + b·length/avg)
	vec    []float32
}

// rankDepth is how deep each ranking goes: reciprocal rank with k = 60
// gives rank 200 a weight under a quarter of rank 1's, and no answer
// shows more than max_limit pieces.
const rankDepth = 200

type posting struct {
	piece int
	tf    int
}

// terms are a text's BM25 words: its letter-or-digit tokens, lower-cased,
// with a plural s taken off long words so "tests" finds "test".
func terms(text string) []string {
	var out []string
	for _, t := range tokenize(text) {
		w := text[t.start:t.end]
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			continue
		}
		w = strings.ToLower(w)
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	return out
}

// load reads every index file of the collection into a searchIndex.
func (ix *libIndex) load() *searchIndex {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.loaded != nil {
		return ix.loaded
	}
	si := &searchIndex{postings: map[string][]posting{}, model: embName(ix.emb)}
	names, _ := filepath.Glob(filepath.Join(ix.dir, "*.json"))
	sort.Strings(names)
	total := 0
	for _, n := range names {
		d := ix.readDoc(strings.TrimSuffix(filepath.Base(n), ".json"))
		if d == nil {
			continue
		}
		si.docs = append(si.docs, d)
		for i := range d.Pieces {
			p := &d.Pieces[i]
			sp := searchPiece{doc: d, n: i + 1}
			if d.Model == si.model && p.Vec != "" {
				sp.vec = decodeVec(p.Vec)
			}
			p.Vec = "" // the loaded copy keeps the vector decoded only
			tf := map[string]int{}
			for _, w := range terms(p.Text) {
				tf[w]++
				sp.length++
			}
			idx := len(si.pieces)
			for w, c := range tf {
				si.postings[w] = append(si.postings[w], posting{idx, c})
			}
			total += sp.length
			si.pieces = append(si.pieces, sp)
		}
	}
	if len(si.pieces) > 0 {
		si.avgLen = float64(total) / float64(len(si.pieces))
	}
	ls := theLibrarySpec().Library
	for i := range si.pieces {
		si.pieces[i].norm = ls.BM25K1 * (1 - ls.BM25B + ls.BM25B*float64(si.pieces[i].length)/si.avgLen)
	}
	ix.loaded = si
	return si
}

// hit is one piece found, with its score.
type hit struct {
	doc   *docIndex
	n     int
	score float64
}

// bm25 ranks the pieces (those keep allows) by the query's words.
func (si *searchIndex) bm25(query string, keep func(*docIndex) bool) []hit {
	ls := theLibrarySpec().Library
	scores := make([]float64, len(si.pieces))
	N := float64(len(si.pieces))
	seen := map[string]bool{}
	for _, w := range terms(query) {
		if seen[w] {
			continue
		}
		seen[w] = true
		ps := si.postings[w]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (N-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			scores[p.piece] += idf * tf * (ls.BM25K1 + 1) / (tf + si.pieces[p.piece].norm)
		}
	}
	return si.top(scores, keep)
}

// cosine ranks the pieces that have vectors by their closeness to q.
func (si *searchIndex) cosine(q []float32, keep func(*docIndex) bool) []hit {
	scores := make([]float64, len(si.pieces))
	for i := range si.pieces {
		sp := &si.pieces[i]
		if sp.vec == nil || len(sp.vec) != len(q) {
			continue
		}
		var s float32
		for j, x := range q {
			s += x * sp.vec[j]
		}
		scores[i] = float64(s) + 2 // cosine is in [-1, 1]; 0 means "not scored"
	}
	return si.top(scores, keep)
}

// top is the best rankDepth pieces with a score, best first (ties by
// document id and piece), those keep allows.
func (si *searchIndex) top(scores []float64, keep func(*docIndex) bool) []hit {
	less := func(a, b hit) bool { // a ranks below b
		if a.score != b.score {
			return a.score < b.score
		}
		if a.doc.ID != b.doc.ID {
			return a.doc.ID > b.doc.ID
		}
		return a.n > b.n
	}
	var heap []hit // a min-heap of the best so far, worst at the root
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(heap) && less(heap[l], heap[m]) {
				m = l
			}
			if r := l + 1; r < len(heap) && less(heap[r], heap[m]) {
				m = r
			}
			if m == i {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	for i, s := range scores {
		if s <= 0 {
			continue
		}
		sp := &si.pieces[i]
		if keep != nil && !keep(sp.doc) {
			continue
		}
		h := hit{sp.doc, sp.n, s}
		if len(heap) < rankDepth {
			heap = append(heap, h)
			for j := len(heap) - 1; j > 0; {
				p := (j - 1) / 2
				if !less(heap[j], heap[p]) {
					break
				}
				heap[j], heap[p] = heap[p], heap[j]
				j = p
			}
			continue
		}
		if less(heap[0], h) {
			heap[0] = h
			down(0)
		}
	}
	sort.Slice(heap, func(a, b int) bool { return less(heap[b], heap[a]) })
	return heap
}

// fuse joins rankings by reciprocal rank: each list adds 1/(k + rank).
func fuse(k float64, lists ...[]hit) []hit {
	type key struct {
		id string
		n  int
	}
	score := map[key]float64{}
	docs := map[key]*docIndex{}
	for _, l := range lists {
		for r, h := range l {
			kk := key{h.doc.ID, h.n}
			score[kk] += 1 / (k + float64(r+1))
			docs[kk] = h.doc
		}
	}
	out := make([]hit, 0, len(score))
	for kk, s := range score {
		out = append(out, hit{docs[kk], kk.n, s})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].score != out[b].score {
			return out[a].score > out[b].score
		}
		if out[a].doc.ID != out[b].doc.ID {
			return out[a].doc.ID < out[b].doc.ID
		}
		return out[a].n < out[b].n
	})
	return out
}

// search finds the best pieces for a query: by words alone without an
// embedder, both joined with one. An embedder that fails at query time
// leaves the words alone, and the error is returned beside the hits.
func (ix *libIndex) search(ctx context.Context, query string, keep func(*docIndex) bool) ([]hit, error) {
	si := ix.load()
	words := si.bm25(query, keep)
	if ix.emb == nil {
		return words, nil
	}
	vecs, err := ix.emb.embed(ctx, []string{query})
	if err != nil {
		return words, err
	}
	return fuse(theLibrarySpec().Library.RRFK, words, si.cosine(vecs[0], keep)), nil
}

// snippet is a short piece of text around the query's longest word that
// is in it (the longest is the likeliest to be the point of the query,
// where "on" or "the" would be anywhere).
func snippet(text, query string, n int) string {
	lower := strings.ToLower(text)
	at, best := -1, 0
	for _, w := range terms(query) {
		if i := strings.Index(lower, w); i >= 0 && len(w) > best {
			at, best = i, len(w)
		}
	}
	start := 0
	if at > n/3 {
		start = at - n/3
		for start > 0 && !utf8.RuneStart(text[start]) {
			start--
		}
	}
	s := oneLineText(cutUTF8(text[start:], n))
	if start > 0 {
		s = "…" + s
	}
	if start+n < len(text) {
		s += "…"
	}
	return s
}

package main

// The file picker: the files a partial name could mean, for the REPL's @
// completion and the link's _lembas/files/search. One index per project,
// built on first use from walkProject (the search tools' own walk, so the
// same files are seen: ignore files honoured, .git skipped, symlinks not
// followed), kept up to date by looking again only at folders whose
// modification time changed (a folder's time changes when an entry in it
// is added, removed or renamed), bounded in size, and ranked by a fuzzy
// match nudged by frecency — how often and how lately the person picked a
// file, kept in a small file per project. The numbers are
// harness/picker.json's.

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// pickerSpec is harness/picker.json.
type pickerSpec struct {
	Numbers struct {
		MaxPaths        int `json:"max_paths"`
		RefreshMS       int `json:"refresh_ms"`
		DefaultLimit    int `json:"default_limit"`
		MaxLimit        int `json:"max_limit"`
		PicksKept       int `json:"picks_kept"`
		CompletionFuzzy int `json:"completion_fuzzy"`
	} `json:"numbers"`
	Score    pickerScore `json:"score"`
	Frecency []struct {
		Hours  float64 `json:"hours"`
		Weight float64 `json:"weight"`
	} `json:"frecency"`
}

// pickerScore is how a match is ranked (harness/picker.json "score").
type pickerScore struct {
	Match         float64 `json:"match"`
	WordStart     float64 `json:"word_start"`
	Consecutive   float64 `json:"consecutive"`
	InName        float64 `json:"in_name"`
	NamePrefix    float64 `json:"name_prefix"`
	ExactName     float64 `json:"exact_name"`
	Gap           float64 `json:"gap"`
	LengthPer32   float64 `json:"length_per_32"`
	FrecencyScale float64 `json:"frecency_scale"`
}

var pickerSpecOnce = sync.OnceValue(func() *pickerSpec {
	var p pickerSpec
	data, err := harnessFS.ReadFile("harness/picker.json")
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	if err != nil {
		panic("harness: picker.json: " + err.Error()) // TestPickerSpec catches it at build time
	}
	return &p
})

// fileIndex is one project's files.
type fileIndex struct {
	root string

	mu      mutex
	built   bool
	byDir   map[string]map[string]bool // folder (rel, "" the root) → its file names
	mtimes  map[string]time.Time       // folder → modification time when last listed
	count   int
	partial bool
	checked time.Time
	list    []string // sorted paths, made again when dirty
	lower   []string
	masks   []uint64 // which letters each path holds, to turn most paths away at once
	dirty   bool

	picks       map[string][]int64 // rel → unix seconds of the latest picks
	picksLoaded bool
}

var fileIndexes sync.Map // clean absolute root → *fileIndex

// projectIndex is root's index, made (empty) on first use.
func projectIndex(root string) *fileIndex {
	root = filepath.Clean(root)
	if x, ok := fileIndexes.Load(root); ok {
		return x.(*fileIndex)
	}
	x, _ := fileIndexes.LoadOrStore(root, &fileIndex{root: root})
	return x.(*fileIndex)
}

// pickFiles returns at most limit project-relative file paths under root
// that match query, best first. An empty query gives the recent picks,
// then the first files.
func pickFiles(ctx context.Context, root, query string, limit int) ([]string, error) {
	n := pickerSpecOnce().Numbers
	if limit <= 0 {
		limit = n.DefaultLimit
	}
	limit = min(limit, n.MaxLimit)
	x := projectIndex(root)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.ensure(ctx); err != nil {
		return nil, err
	}
	return x.query(query, limit, time.Now()), nil
}

// ensure builds the index on first use, else looks again at changed
// folders when refresh_ms has passed since the last look.
func (x *fileIndex) ensure(ctx context.Context) error {
	if !x.built {
		x.byDir, x.mtimes = map[string]map[string]bool{}, map[string]time.Time{}
		if st, err := os.Stat(x.root); err == nil {
			x.mtimes[""] = st.ModTime()
		}
		if err := x.scan(ctx, ""); err != nil {
			x.byDir, x.mtimes, x.count = nil, nil, 0
			return err
		}
		x.built, x.checked = true, time.Now()
		return nil
	}
	if time.Since(x.checked) < time.Duration(pickerSpecOnce().Numbers.RefreshMS)*time.Millisecond {
		return nil
	}
	x.checked = time.Now()
	var changed, gone []string
	for dir, was := range x.mtimes {
		st, err := os.Lstat(filepath.Join(x.root, filepath.FromSlash(dir)))
		switch {
		case err != nil || !st.IsDir():
			gone = append(gone, dir)
		case !st.ModTime().Equal(was):
			changed = append(changed, dir)
			x.mtimes[dir] = st.ModTime()
		}
	}
	for _, dir := range gone {
		x.dropDir(dir)
	}
	sort.Strings(changed) // parents before children
	for _, dir := range changed {
		if _, still := x.mtimes[dir]; !still {
			continue // dropped with a parent that went away
		}
		if err := x.scan(ctx, dir); err != nil {
			return err
		}
	}
	return nil
}

// scan lists dir again: its own files afresh, folders it did not hold
// before walked whole, folders it no longer holds dropped. Known
// subfolders are not entered: their own times say when they change.
func (x *fileIndex) scan(ctx context.Context, dir string) error {
	max := pickerSpecOnce().Numbers.MaxPaths
	x.count -= len(x.byDir[dir])
	x.byDir[dir] = map[string]bool{}
	x.dirty = true
	seenSub := map[string]bool{}
	start := filepath.Join(x.root, filepath.FromSlash(dir))
	err := walkProject(x.root, start, func(rel string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if path.Dir(rel) == dirOrDot(dir) {
				seenSub[rel] = true
			}
			if _, known := x.mtimes[rel]; known && rel != dir {
				return fs.SkipDir
			}
			if info, err := d.Info(); err == nil {
				x.mtimes[rel] = info.ModTime()
			}
			if x.byDir[rel] == nil {
				x.byDir[rel] = map[string]bool{}
			}
			return nil
		}
		if x.count >= max {
			x.partial = true
			return nil
		}
		parent := path.Dir(rel)
		if parent == "." {
			parent = ""
		}
		if x.byDir[parent] == nil {
			x.byDir[parent] = map[string]bool{}
		}
		x.byDir[parent][path.Base(rel)] = true
		x.count++
		return nil
	})
	if err != nil {
		return err
	}
	// Folders dir held before and holds no more.
	for sub := range x.mtimes {
		if sub != dir && path.Dir(sub) == dirOrDot(dir) && !seenSub[sub] {
			x.dropDir(sub)
		}
	}
	return nil
}

func dirOrDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// dropDir forgets a folder and everything under it.
//
//go:noinline
func (x *fileIndex) dropDir(dir string) {
	for d := range x.mtimes {
		if d == dir || strings.HasPrefix(d, dir+"/") {
			x.count -= len(x.byDir[d])
			delete(x.byDir, d)
			delete(x.mtimes, d)
		}
	}
	x.dirty = true
}

// paths is the sorted list of every indexed file, made again only after
// a change.
func (x *fileIndex) paths() ([]string, []string) {
	if !x.dirty && x.list != nil {
		return x.list, x.lower
	}
	list := make([]string, 0, x.count)
	for dir, names := range x.byDir {
		for name := range names {
			if dir == "" {
				list = append(list, name)
			} else {
				list = append(list, dir+"/"+name)
			}
		}
	}
	sort.Strings(list)
	lower := make([]string, len(list))
	masks := make([]uint64, len(list))
	for i, p := range list {
		lower[i] = strings.ToLower(p)
		masks[i] = letterMask(lower[i])
	}
	x.list, x.lower, x.masks, x.dirty = list, lower, masks, false
	return list, lower
}

// letterMask has a bit for each kind of byte s holds: a query can match
// only a path whose mask holds all of the query's.
func letterMask(s string) uint64 {
	var m uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z':
			m |= 1 << (c - 'a')
		case '0' <= c && c <= '9':
			m |= 1 << (26 + c - '0')
		default:
			m |= 1 << (36 + c%28)
		}
	}
	return m
}

// has says whether rel is an indexed file.
func (x *fileIndex) has(rel string) bool {
	dir := path.Dir(rel)
	if dir == "." {
		dir = ""
	}
	return x.byDir[dir][path.Base(rel)]
}

// query ranks the index against q.
func (x *fileIndex) query(q string, limit int, now time.Time) []string {
	x.loadPicks()
	list, lower := x.paths()
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" {
		out := x.recent(now, limit)
		seen := map[string]bool{}
		for _, p := range out {
			seen[p] = true
		}
		for _, p := range list {
			if len(out) >= limit {
				break
			}
			if !seen[p] {
				out = append(out, p)
			}
		}
		return out
	}
	sc := &pickerSpecOnce().Score
	h := &pickHeap{}
	qm := letterMask(q)
	scratch := make([]int, 2*len(q))
	for i, lp := range lower {
		if x.masks[i]&qm != qm {
			continue
		}
		s, ok := fuzzyScore(list[i], lp, q, sc, scratch)
		if !ok {
			continue
		}
		if len(x.picks) > 0 {
			s += sc.FrecencyScale * x.frecency(list[i], now)
		}
		if h.Len() < limit {
			heap.Push(h, pickHit{list[i], s})
		} else if betterPick(pickHit{list[i], s}, (*h)[0]) {
			(*h)[0] = pickHit{list[i], s}
			heap.Fix(h, 0)
		}
	}
	out := make([]string, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(pickHit).path
	}
	return out
}

type pickHit struct {
	path  string
	score float64
}

// better orders hits: higher score, then the shorter path, then by name.
func betterPick(a, b pickHit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if len(a.path) != len(b.path) {
		return len(a.path) < len(b.path)
	}
	return a.path < b.path
}

// pickHeap keeps the best hits with the worst on top.
type pickHeap []pickHit

func (h pickHeap) Len() int           { return len(h) }
func (h pickHeap) Less(i, j int) bool { return betterPick(h[j], h[i]) }
func (h pickHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pickHeap) Push(v any)        { *h = append(*h, v.(pickHit)) }
func (h *pickHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// fuzzyScore says whether every letter of q (lower case) appears in order
// in lp (p in lower case), and how well. The letters are placed in the
// file's name when they all fit there, else across the whole path; two
// placements are scored and the better kept: the tightest (letters in a
// row count) and one that takes the start of a word wherever it can
// (initials: "ts" for tools_shell.go).
func fuzzyScore(p, lp, q string, sc *pickerScore, scratch []int) (float64, bool) {
	if len(scratch) < 2*len(q) {
		scratch = make([]int, 2*len(q))
	}
	end := subsequenceEnd(lp, q, 0)
	if end < 0 {
		return 0, false
	}
	base := strings.LastIndexByte(lp, '/') + 1
	from := 0
	if e := subsequenceEnd(lp, q, base); e >= 0 {
		end, from = e, base
	}
	pos := scratch[:len(q)]
	j := len(q) - 1
	for i := end; i >= from && j >= 0; i-- {
		if lp[i] == q[j] {
			pos[j] = i
			j--
		}
	}
	best := placementScore(p, lp, q, pos, base, sc)
	if words, ok := wordStartPlacement(p, lp, q, from, scratch[len(q):2*len(q)]); ok {
		best = max(best, placementScore(p, lp, q, words, base, sc))
	}
	return best, true
}

// wordStart says whether offset i of p starts a word.
func wordStart(p, lp string, i int) bool {
	return i == 0 || strings.IndexByte("/_-. ", lp[i-1]) >= 0 || (isUpper(p[i]) && !isUpper(p[i-1]))
}

// wordStartPlacement places each letter at the next start of a word that
// holds it, else at its next occurrence.
func wordStartPlacement(p, lp, q string, from int, pos []int) ([]int, bool) {
	i := from
	for k := 0; k < len(q); k++ {
		at := -1
		for j := i; j < len(lp); j++ {
			if lp[j] == q[k] && wordStart(p, lp, j) {
				at = j
				break
			}
		}
		if at < 0 {
			j := strings.IndexByte(lp[i:], q[k])
			if j < 0 {
				return nil, false
			}
			at = i + j
		}
		pos[k] = at
		i = at + 1
	}
	return pos, true
}

// placementScore scores letters of q placed at pos in p.
func placementScore(p, lp, q string, pos []int, base int, sc *pickerScore) float64 {
	score := 0.0
	for k, i := range pos {
		score += sc.Match
		if wordStart(p, lp, i) {
			score += sc.WordStart
		}
		if k > 0 && i == pos[k-1]+1 {
			score += sc.Consecutive
		}
		if i >= base {
			score += sc.InName
		}
	}
	score += sc.Gap * float64(pos[len(pos)-1]-pos[0]+1-len(q))
	name := lp[base:]
	switch {
	case name == q || strings.TrimSuffix(name, path.Ext(name)) == q:
		score += sc.ExactName
	case strings.HasPrefix(name, q):
		score += sc.NamePrefix
	}
	score += sc.LengthPer32 * float64(len(lp)/32)
	return score
}

// subsequenceEnd is where the last letter of q lands when q is matched
// greedily in s from offset from, or -1.
func subsequenceEnd(s, q string, from int) int {
	i := from
	for k := 0; k < len(q); k++ {
		j := strings.IndexByte(s[i:], q[k])
		if j < 0 {
			return -1
		}
		i += j + 1
	}
	return i - 1
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// The frecency of picks: weights by age from harness/picker.json.

// frecency is rel's weight from its picks.
func (x *fileIndex) frecency(rel string, now time.Time) float64 {
	w := 0.0
	for _, at := range x.picks[rel] {
		age := now.Sub(time.Unix(at, 0)).Hours()
		for _, b := range pickerSpecOnce().Frecency {
			if age <= b.Hours {
				w += b.Weight
				break
			}
		}
	}
	return w
}

// recent is the picked files that still exist, most frecent first.
func (x *fileIndex) recent(now time.Time, limit int) []string {
	var hs []pickHit
	for rel := range x.picks {
		if x.has(rel) {
			hs = append(hs, pickHit{rel, x.frecency(rel, now)})
		}
	}
	sort.Slice(hs, func(i, j int) bool { return betterPick(hs[i], hs[j]) })
	out := []string{}
	for i := 0; i < len(hs) && i < limit; i++ {
		out = append(out, hs[i].path)
	}
	return out
}

// picksFile is where a project's picks are kept: one small file per
// project, named by a hash of its path.
func (x *fileIndex) picksFile() string {
	sum := sha256.Sum256([]byte(x.root))
	return filepath.Join(stateDir(), "picks", hex.EncodeToString(sum[:8])+".json")
}

type picksOnDisk struct {
	Root  string             `json:"root"`
	Picks map[string][]int64 `json:"picks"`
}

func (x *fileIndex) loadPicks() {
	if x.picksLoaded {
		return
	}
	x.picksLoaded = true
	x.picks = map[string][]int64{}
	data, err := os.ReadFile(x.picksFile())
	if err != nil {
		return
	}
	var d picksOnDisk
	if json.Unmarshal(data, &d) == nil && d.Root == x.root && d.Picks != nil {
		x.picks = d.Picks
	}
}

// notePicked records that the person picked these files (mentioned them
// with @ in a prompt), so they rank higher next time. The file is small
// and rewritten whole, atomically; a failure to keep it costs only the
// ranking, so it is not reported.
func notePicked(root string, rels ...string) {
	if len(rels) == 0 {
		return
	}
	x := projectIndex(root)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.loadPicks()
	now := time.Now().Unix()
	for _, rel := range rels {
		ts := append(x.picks[rel], now)
		if len(ts) > 10 {
			ts = ts[len(ts)-10:]
		}
		x.picks[rel] = ts
	}
	if kept := pickerSpecOnce().Numbers.PicksKept; len(x.picks) > kept {
		type last struct {
			rel string
			at  int64
		}
		var ls []last
		for rel, ts := range x.picks {
			ls = append(ls, last{rel, ts[len(ts)-1]})
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i].at > ls[j].at })
		for _, l := range ls[kept:] {
			delete(x.picks, l.rel)
		}
	}
	data, _ := json.Marshal(picksOnDisk{x.root, x.picks})
	p := x.picksFile()
	// The picks only order the picker's list: a failed write costs the
	// next run its memory of what was picked, never a record of work.
	if os.MkdirAll(filepath.Dir(p), 0o700) == nil {
		writeFileAtomic(p, data, 0o600)
	}
}

// fuzzyCompletions is what Tab offers for an @ word that no entry of its
// folder starts with: files of the whole project that the word matches
// fuzzily, escaped as a mention reads them. A word with a slash is a
// path being typed, not a fuzzy query.
func fuzzyCompletions(root, partial string) []string {
	if partial == "" || strings.ContainsAny(partial, `/\`) {
		return nil
	}
	got, err := pickFiles(context.Background(), root, partial, pickerSpecOnce().Numbers.CompletionFuzzy)
	if err != nil {
		return nil
	}
	for i, p := range got {
		got[i] = escapeMentionPath(p)
	}
	return got
}

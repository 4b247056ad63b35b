package main

// The file picker: the paths a partial name could mean, for the REPL's @
// completion and the link's _lembas/files/search. This first version walks
// the project on every call; the search issue replaces it with an index.

import (
	"context"
	"io/fs"
	"sort"
	"strings"
)

// pickFiles returns at most limit project-relative file paths under root
// that match query as a fuzzy subsequence, best first. An empty query
// gives the first files found.
func pickFiles(ctx context.Context, root, query string, limit int) ([]string, error) {
	type hit struct {
		path  string
		score int
	}
	var hits []hit
	q := strings.ToLower(query)
	err := walkProject(root, root, func(rel string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if s, ok := fuzzyScore(strings.ToLower(rel), q); ok {
			hits = append(hits, hit{rel, s})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].path < hits[j].path
	})
	out := []string{}
	for i := 0; i < len(hits) && i < limit; i++ {
		out = append(out, hits[i].path)
	}
	return out, nil
}

// fuzzyScore says whether every rune of q appears in s in order, and how
// well: runs of adjacent matches and matches in the last path element
// count more.
func fuzzyScore(s, q string) (int, bool) {
	if q == "" {
		return 0, true
	}
	base := strings.LastIndexByte(s, '/') + 1
	score, j, prev := 0, 0, -2
	qr := []rune(q)
	for i, r := range s {
		if j < len(qr) && r == qr[j] {
			score++
			if i == prev+1 {
				score += 2
			}
			if i >= base {
				score++
			}
			prev = i
			j++
		}
	}
	return score - len(s)/16, j == len(qr)
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestWalkProjectParallel: the parallel walk visits exactly what the
// ordered one does (ignore files at several depths, a negation, a
// symlink, .git, a skipped folder), and an error from fn ends it.
func TestWalkProjectParallel(t *testing.T) {
	root := t.TempDir()
	writeTestFile(t, filepath.Join(root, ".gitignore"), "*.log\nbuild/\n")
	writeTestFile(t, filepath.Join(root, ".git", "config"), "x")
	for i := range 40 {
		d := filepath.Join(root, fmt.Sprintf("d%02d", i), fmt.Sprintf("e%d", i%3))
		writeTestFile(t, filepath.Join(d, "a.go"), "x")
		writeTestFile(t, filepath.Join(d, "b.log"), "x")
		if i%5 == 0 {
			writeTestFile(t, filepath.Join(d, ".gitignore"), "a.go\n!b.log\n")
			writeTestFile(t, filepath.Join(d, "deeper", "c.txt"), "x")
		}
	}
	writeTestFile(t, filepath.Join(root, "build", "out.bin"), "x")
	writeTestFile(t, filepath.Join(root, "skip", "inner.txt"), "x")
	os.Symlink(filepath.Join(root, "d00"), filepath.Join(root, "link"))
	for _, start := range []string{root, filepath.Join(root, "d05"), filepath.Join(root, "d05", "e2", "a.go")} {
		visit := func(walk func(string, string, func(string, fs.DirEntry) error) error) []string {
			var mu sync.Mutex
			var got []string
			if err := walk(root, start, func(rel string, d fs.DirEntry) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, rel)
				if rel == "skip" {
					return fs.SkipDir
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			return got
		}
		want := visit(walkProject)
		for _, workers := range []int{1, 2, 7} {
			got := visit(func(r, s string, fn func(string, fs.DirEntry) error) error {
				return walkProjectParallel(r, s, workers, fn)
			})
			if !slices.Equal(got, want) {
				t.Errorf("from %s with %d workers:\n got %v\nwant %v", start, workers, got, want)
			}
		}
		if len(want) == 0 {
			t.Errorf("from %s the walk found nothing", start)
		}
	}
	if got := len(func() []string { // the fixture is what the cases say it is
		var n []string
		walkProject(root, root, func(rel string, d fs.DirEntry) error { n = append(n, rel); return nil })
		return n
	}()); got < 100 {
		t.Fatalf("the fixture walks to %d entries", got)
	}
	stop := errors.New("stop")
	var mu sync.Mutex
	calls := 0
	err := walkProjectParallel(root, root, 4, func(rel string, d fs.DirEntry) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Errorf("the error was not returned: %v", err)
	}
	if calls > 4 {
		t.Errorf("the walk went on after its error: %d calls", calls)
	}
}

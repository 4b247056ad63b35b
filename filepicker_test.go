package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func pickerFixture(t testing.TB, files ...string) string {
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	return root
}

func pick(t *testing.T, root, q string, limit int) []string {
	t.Helper()
	got, err := pickFiles(context.Background(), root, q, limit)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestPickerOrder is the ranking a person expects: the file's own name
// before a folder that happens to hold the letters, an exact name first,
// the start of words, letters in a row, shorter paths on a tie.
func TestPickerOrder(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := pickerFixture(t,
		"src/main.go", "cmd/lembas/main_test.go", "docs/domain.md", "internal/mainframe/x.go",
		"README.md", "src/maintenance.go", "engine.go", "engine_test.go", "tools_shell.go",
		"permission_rules.go", "harness/tools/bash.json", "testdata/streams/ollama.txt",
		".gitignore", "build/out.bin", "vendor/github.com/x/main.go",
	)
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("build/\n"), 0o644)
	cases := []struct {
		q    string
		want []string
	}{
		{"main.go", []string{"src/main.go", "vendor/github.com/x/main.go"}},
		{"engine", []string{"engine.go", "engine_test.go"}},
		{"ts", []string{"tools_shell.go", "engine_test.go"}},
		{"bash", []string{"harness/tools/bash.json"}},
		{"permrul", []string{"permission_rules.go"}},
		{"README", []string{"README.md"}},
		{"zzz", []string{}},
		{"out.bin", []string{}}, // ignored by .gitignore
	}
	for _, c := range cases {
		got := pick(t, root, c.q, len(c.want)+0)
		if len(c.want) == 0 {
			got = pick(t, root, c.q, 5)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.q, got, c.want)
		}
	}
	// "mai" names main.go files before mainframe's folder and maintenance.
	got := pick(t, root, "main", 3)
	if got[0] != "src/main.go" {
		t.Errorf("main: got %q, want src/main.go first", got)
	}
}

// TestPickerIncremental changes the tree under an index and wants each
// change seen at the next look, without a new walk of what did not
// change.
func TestPickerIncremental(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := pickerFixture(t, "a/one.txt", "a/b/two.txt", "c/three.txt")
	if got := pick(t, root, "", 10); !reflect.DeepEqual(got, []string{"a/b/two.txt", "a/one.txt", "c/three.txt"}) {
		t.Fatalf("first build: %q", got)
	}
	x := projectIndex(root)
	look := func() []string {
		x.mu.Lock()
		x.checked = time.Time{} // as if refresh_ms had passed
		x.mu.Unlock()
		return pick(t, root, "", 20)
	}
	os.WriteFile(filepath.Join(root, "a/b/new.txt"), nil, 0o644)
	os.MkdirAll(filepath.Join(root, "d/e"), 0o755)
	os.WriteFile(filepath.Join(root, "d/e/deep.txt"), nil, 0o644)
	os.Remove(filepath.Join(root, "a/one.txt"))
	os.RemoveAll(filepath.Join(root, "c"))
	want := []string{"a/b/new.txt", "a/b/two.txt", "d/e/deep.txt"}
	if got := look(); !reflect.DeepEqual(got, want) {
		t.Errorf("after changes: %q, want %q", got, want)
	}
	// An ignore file added to a folder is seen with the folder's change.
	os.WriteFile(filepath.Join(root, "a/b/.gitignore"), []byte("new.txt\n"), 0o644)
	want = []string{"a/b/.gitignore", "a/b/two.txt", "d/e/deep.txt"}
	if got := look(); !reflect.DeepEqual(got, want) {
		t.Errorf("after an ignore file: %q, want %q", got, want)
	}
}

// TestPickerFrecency: a picked file comes first for an empty query and
// moves up among equal matches; the picks survive a new process (the
// file), and a picked file that is gone is not offered.
func TestPickerFrecency(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := pickerFixture(t, "x/util_a.go", "x/util_b.go", "x/util_c.go", "gone.go")
	if got := pick(t, root, "util", 3); got[0] != "x/util_a.go" {
		t.Fatalf("before picks: %q", got)
	}
	notePicked(root, "x/util_c.go")
	notePicked(root, "x/util_c.go", "gone.go")
	if got := pick(t, root, "util", 3); got[0] != "x/util_c.go" {
		t.Errorf("after picks: %q, want util_c first", got)
	}
	os.Remove(filepath.Join(root, "gone.go"))
	fileIndexes.Delete(filepath.Clean(root)) // a new process: the index and picks read again
	got := pick(t, root, "", 2)
	if !reflect.DeepEqual(got, []string{"x/util_c.go", "x/util_a.go"}) {
		t.Errorf("empty query after a restart: %q", got)
	}
}

// TestPickerBounded: past max_paths the index stops growing and says it
// is partial.
func TestPickerBounded(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var files []string
	for i := 0; i < 50; i++ {
		files = append(files, fmt.Sprintf("f%02d.txt", i))
	}
	root := pickerFixture(t, files...)
	n := &pickerSpecOnce().Numbers
	defer func(v int) { n.MaxPaths = v }(n.MaxPaths)
	n.MaxPaths = 20
	got := pick(t, root, "", 100)
	x := projectIndex(root)
	if len(got) != 20 || !x.partial || x.count != 20 {
		t.Errorf("got %d paths, partial %v, count %d; want 20, true, 20", len(got), x.partial, x.count)
	}
}

// TestReplTabFuzzy: Tab on an @ word that starts no entry of its folder
// completes from the whole project, fuzzily; a word that does start one
// completes as before.
func TestReplTabFuzzy(t *testing.T) {
	h := startRepl(t, newFakeModel(t), "manual", false, yes())
	line, pos, ok := h.r.complete("look at @libgo", len("look at @libgo"), '\t')
	if !ok || line != "look at @src/lib.go" || pos != len(line) {
		t.Errorf("fuzzy Tab: %q %d %v", line, pos, ok)
	}
	line, _, ok = h.r.complete("@RE", 3, '\t')
	if !ok || line != "@README.md" {
		t.Errorf("prefix Tab: %q %v", line, ok)
	}
	h.exit()
}

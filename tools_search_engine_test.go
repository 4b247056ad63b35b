package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// plainLines is the meaning every shortcut of lineMatcher must keep: each
// line (without its "\r\n" or "\n") tried with the regexp.
func plainLines(re *regexp.Regexp, data []byte, rel string) []grepMatch {
	var out []grepMatch
	if len(data) == 0 {
		return nil // an empty file has no lines, as ripgrep sees it
	}
	lines := strings.Split(string(data), "\n")
	if strings.HasSuffix(string(data), "\n") {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		if re.MatchString(l) {
			out = append(out, grepMatch{rel, i + 1, l})
		}
	}
	return out
}

func matchBoth(t testing.TB, pattern string, fold bool, data []byte) ([]grepMatch, []grepMatch, bool) {
	expr := pattern
	if fold {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, nil, false
	}
	m := newLineMatcher(re, pattern, fold)
	got, _ := m.match(data, "f", nil, nil)
	return got, plainLines(re, data, "f"), true
}

// TestLineMatcherShortcuts checks each fast path against the plain loop:
// literals, required literals, folded case (with the letters whose folds
// leave ASCII), anchors, CRLF, a last line without a newline.
func TestLineMatcherShortcuts(t *testing.T) {
	data := []byte("alpha beta\r\nBETA gamma\nkelvin \u212a and \u017fs\nfoo.bar(x)\n\nline ^ with $ signs\nlast beta")
	patterns := []string{
		"beta", "BETA", "beta$", "^beta", "^BETA", "a b", "gamma|alpha", "(beta)+", "foo\\.bar\\(", "x\\)$",
		"be.a", "\\bbeta\\b", "Kelvin", "kelvin", "s", "\\^ with", "\\$", "^$", "$", "", "a\\s+b", "ta\r", "e(ta|lvin)",
		"last beta$", "gamma\\z", "\\Aalpha", "(?i)beta", "ß", "\u212a",
	}
	for _, p := range patterns {
		for _, fold := range []bool{false, true} {
			got, want, ok := matchBoth(t, p, fold, data)
			if ok && !reflect.DeepEqual(got, want) {
				t.Errorf("%q fold=%v:\n got  %v\n want %v", p, fold, got, want)
			}
		}
	}
}

// FuzzLineMatcher holds lineMatcher to the plain loop for any pattern and
// any bytes.
func FuzzLineMatcher(f *testing.F) {
	f.Add("beta", false, []byte("alpha beta\r\nBETA\n"))
	f.Add("k", true, []byte("K \u212a k\n"))
	f.Add("^a|b$", false, []byte("a\nb\r\nab"))
	f.Fuzz(func(t *testing.T, pattern string, fold bool, data []byte) {
		if len(pattern) > 64 {
			return
		}
		got, want, ok := matchBoth(t, pattern, fold, data)
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q fold=%v on %q:\n got  %v\n want %v", pattern, fold, data, got, want)
		}
	})
}

// TestGrepEnginesAgree searches one fixture with the Go engine and with
// ripgrep and wants the same answer: ignore files at three depths with
// negations, binary files (a NUL early and one late), protected files, a
// symlink to a file and to a folder, names that are not UTF-8, CRLF.
func TestGrepEnginesAgree(t *testing.T) {
	if rgPath() == "" {
		t.Skip("ripgrep is not on PATH")
	}
	files := map[string]string{
		".gitignore":          "*.tmp\nbuild/\n!keep.tmp\n",
		"a.txt":               "needle one\r\nno\nneedle two",
		"keep.tmp":            "needle kept",
		"x.tmp":               "needle ignored",
		"build/b.txt":         "needle in build",
		"src/.gitignore":      "gen/\n*.out\n",
		"src/main.go":         "package main // needle\n",
		"src/gen/g.go":        "needle generated",
		"src/z.out":           "needle out",
		"src/deep/.ignore":    "secret.md\n!*.keep\n",
		"src/deep/secret.md":  "needle secret",
		"src/deep/note.keep":  "needle note",
		"src/deep/more/m.txt": "NEEDLE upper\nneedle lower\n",
		"bin/early.dat":       "\x00needle",
		"bin/late.dat":        strings.Repeat("x", 20000) + "\x00needle",
		"bin/text.dat":        "needle text dat",
		".env":                "needle=secret",
		"keys/id_rsa":         "needle key",
		"\xff\xfeodd.txt":     "needle odd name",
		"sp ace/é.txt":        "needle accent",
		".hidden/h.txt":       "needle hidden",
		".git/config":         "needle git",
	}
	tb := newTestToolbox(t, files)
	home, _ := os.UserHomeDir()
	tb.protected = func(abs string) bool { _, ok := protectedPath(abs, tb.root, home, nil); return ok }
	os.Symlink(filepath.Join(tb.root, "a.txt"), filepath.Join(tb.root, "link.txt"))
	os.Symlink(filepath.Join(tb.root, "src"), filepath.Join(tb.root, "linkdir"))
	limits := theSpec().Tools["grep"].Limits
	defer func(v float64) { limits["rg_above_files"] = v }(limits["rg_above_files"])
	cases := []map[string]any{
		{"pattern": "needle"},
		{"pattern": "needle", "ignore_case": true},
		{"pattern": "ne+dle (one|two)"},
		{"pattern": "^needle"},
		{"pattern": "two$"},
		{"pattern": "needle", "include": "*.txt"},
		{"pattern": "needle", "path": "src"},
		{"pattern": "needle", "path": "src/deep"},
		{"pattern": "[Nn]EEDLE"},
	}
	for _, c := range cases {
		t.Setenv("LEMBAS_NO_RG", "1")
		treeSizes.Delete(tb.root)
		goAns := call(t, tb, "grep", c)
		t.Setenv("LEMBAS_NO_RG", "")
		limits["rg_above_files"] = 0
		treeSizes.Store(tb.root, 1<<30) // straight to ripgrep
		rgAns := call(t, tb, "grep", c)
		limits["rg_above_files"] = 2000
		if goAns.Text != rgAns.Text {
			t.Errorf("%v:\n go:\n%s\n rg:\n%s", c, goAns.Text, rgAns.Text)
		}
		if c["pattern"] == "needle" && c["path"] == nil && c["include"] == nil && c["ignore_case"] == nil {
			for _, must := range []string{"a.txt:1:needle one", "a.txt:3:needle two", "keep.tmp:1:", "src/deep/note.keep:1:", "bin/text.dat:1:", "sp ace/é.txt:1:", "\xff\xfeodd.txt:1:"} {
				if !strings.Contains(goAns.Text, must) {
					t.Errorf("go answer lacks %q:\n%s", must, goAns.Text)
				}
			}
			for _, mustNot := range []string{"x.tmp", "build/", "src/gen", "z.out", "secret.md", "early.dat", "late.dat", ".env", "id_rsa", ".git/", "link"} {
				if strings.Contains(goAns.Text, mustNot) {
					t.Errorf("go answer has %q:\n%s", mustNot, goAns.Text)
				}
			}
		}
	}
}

// TestGrepEngineChoice checks that the engine is picked without a walk
// when git's index or an earlier search tells the tree's size.
func TestGrepEngineChoice(t *testing.T) {
	root := t.TempDir()
	if estimateFiles(root) != -1 {
		t.Fatal("a folder with nothing known should be unknown")
	}
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "index"), []byte("DIRC\x00\x00\x00\x02\x00\x01\x86\xa0"), 0o644)
	if n := estimateFiles(root); n != 100000 {
		t.Errorf("git index estimate %d, want 100000", n)
	}
	rememberTree(root, 12)
	if n := estimateFiles(root); n != 12 {
		t.Errorf("remembered %d, want 12", n)
	}
	treeSizes.Delete(root)
}

// countdownCtx is cancelled once its Err has been asked n times: a cancel
// that lands in the middle of a walk, at a known point.
type countdownCtx struct {
	context.Context
	left atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestGrepCancel cancels a search of a big tree part way and wants it to
// stop with the context's error, having looked at fewer files than the
// tree holds.
func TestGrepCancel(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 3000; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%50))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte("hit\n"), 0o644)
	}
	ctx := &countdownCtx{Context: context.Background()}
	ctx.left.Store(200)
	re := regexp.MustCompile("hit")
	out, seen, err := grepTree(ctx, root, root, newLineMatcher(re, "hit", false), nil, 1<<20, 0)
	if err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if seen >= 3000 || len(out) >= 3000 {
		t.Errorf("walked %d files and matched %d after a cancel within the first 200 checks", seen, len(out))
	}
}

// TestGlobShortcuts holds the glob matcher's fast paths to the regular
// expression the glob means (a name at any depth when it has no slash).
func TestGlobShortcuts(t *testing.T) {
	globs := []string{"*.go", "*_test.go", "main*", "Makefile", "*", "a}", "*.{go,md}", "?.go", "[ab].txt", "**/*.go", "src/*.go", "*.g*", "x\\*y", ".env", "*.", "./*.go"}
	paths := []string{"main.go", "src/main.go", "src/main_test.go", "Makefile", "docs/Makefile.am", "a}", "b/a}", "x.md", "a.txt",
		"c.txt", "x*y", "d/x*y", ".env", "a/.env", "foo.", "go", ".go", "deep/a/b.go", "mainline/x.go"}
	for _, g := range globs {
		m, err := compileGlob(g)
		if err != nil {
			t.Fatalf("%q: %v", g, err)
		}
		gg := strings.TrimPrefix(g, "./")
		expr := "^" + globRegexp(gg) + "$"
		if !strings.Contains(gg, "/") {
			expr = "(^|/)" + globRegexp(gg) + "$"
		}
		re := regexp.MustCompile(expr)
		for _, p := range paths {
			if got, want := m.MatchString(p), re.MatchString(p); got != want {
				t.Errorf("glob %q on %q: %v, want %v", g, p, got, want)
			}
		}
	}
}

// TestGrepHandOverReadsNothing: a walk that passes the hand-over size
// (ripgrep takes the search) has read no file first, so the person does
// not wait for a part of the search done twice.
func TestGrepHandOverReadsNothing(t *testing.T) {
	root := t.TempDir()
	for i := range 40 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%02d.txt", i)), []byte("needle\n"), 0o644)
	}
	re := regexp.MustCompile("needle")
	out, seen, err := grepTree(context.Background(), root, root, newLineMatcher(re, "needle", false), nil, 1<<20, 30)
	if err != errTreeTooBig || len(out) != 0 || seen != 31 {
		t.Errorf("past the hand-over: err %v, %d matches found first, %d seen", err, len(out), seen)
	}
	out, _, err = grepTree(context.Background(), root, root, newLineMatcher(re, "needle", false), nil, 1<<20, 100)
	if err != nil || len(out) != 40 {
		t.Errorf("under the hand-over: err %v, %d matches", err, len(out))
	}
}

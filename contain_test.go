package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPathText gives resolvePathIn any text a model could send as a path:
// it never panics, an error never comes with inside, and a path judged
// inside really is under the project after resolving.
func FuzzPathText(f *testing.F) {
	for _, s := range []string{"~", "~/x", "~root/.ssh", "$HOME/a", "${HOME}", "a\u200bb", "../..", "file://~/x", "~\u202e/x", strings.Repeat("a/", 3000), "loop/x", "\x00", "\xff"} {
		f.Add(s)
	}
	base := f.TempDir()
	base, _ = filepath.EvalSymlinks(base)
	root := filepath.Join(base, "proj")
	os.MkdirAll(root, 0o755)
	os.Symlink(filepath.Join(root, "loop"), filepath.Join(root, "loop"))
	home := filepath.Join(base, "home")
	f.Fuzz(func(t *testing.T, p string) {
		abs, inside, err := resolvePathIn(root, home, p)
		if err != nil && inside {
			t.Fatalf("%q: error %v but inside", p, err)
		}
		if inside && !within(root, evalExisting(abs)) {
			t.Fatalf("%q: judged inside, resolves to %s", p, abs)
		}
	})
}

// TestExpandHome pins how a model's home spellings are read.
func TestExpandHome(t *testing.T) {
	home := filepath.FromSlash("/h/me")
	for in, want := range map[string]string{
		"~": home, "~/x": home + "/x", "$HOME/x": home + "/x", "${HOME}": home, "./~/x": "./~/x",
		"~x!/y": "~x!/y", "$HOMEX/y": "$HOMEX/y", "a/~/b": "a/~/b",
	} {
		if got := expandHome(in, home); got != want {
			t.Errorf("expandHome(%q) = %q, want %q", in, got, want)
		}
	}
	if got := expandHome("~nosuchuser-lembas/x", home); got != filepath.Join(filepath.Dir(home), "nosuchuser-lembas")+"/x" {
		t.Errorf("~name of nobody: %q", got)
	}
}

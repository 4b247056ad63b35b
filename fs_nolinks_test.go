//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoLinksRefuseSwappedFolder: a folder of a resolved path swapped for
// a link after the path was judged: the file tools' reads, writes and
// removes refuse it, and nothing outside is read, made or removed.
func TestNoLinksRefuseSwappedFolder(t *testing.T) {
	root, out := evalExisting(t.TempDir()), evalExisting(t.TempDir())
	os.WriteFile(filepath.Join(out, "key"), []byte("secret"), 0o600)
	if err := os.Symlink(out, filepath.Join(root, "d")); err != nil {
		t.Skip("no symlinks here")
	}
	judged := filepath.Join(root, "d", "key") // as resolved while d was a folder
	if b, err := readFileNoLinks(judged); err == nil {
		t.Errorf("read through the link: %q", b)
	}
	if err := writeFileNoLinks(filepath.Join(root, "d", "sub", "new"), []byte("x"), 0o644); err == nil {
		t.Error("wrote through the link")
	}
	if err := removeNoLinks(judged); err == nil {
		t.Error("removed through the link")
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Errorf("outside now holds %d entries", len(ents))
	}
	if err := writeFileNoLinks(filepath.Join(root, "e", "f", "new"), []byte("x"), 0o644); err != nil {
		t.Errorf("an ordinary write with folders to make: %v", err)
	}
	if b, _ := readFileNoLinks(filepath.Join(root, "e", "f", "new")); string(b) != "x" {
		t.Errorf("read back %q", b)
	}
}

// TestToolPathJudged: a file tool refuses a path that resolves now to
// another than its call was judged by.
func TestToolPathJudged(t *testing.T) {
	tb := newTestToolbox(t, map[string]string{"sub/a.txt": "x\n"})
	ctx := withJudged(context.Background(), []string{filepath.Join(tb.root, "other", "a.txt")})
	raw, _ := json.Marshal(map[string]any{"path": "sub/a.txt"})
	r := tb.run(ctx, tb.lookup("read"), raw)
	if !r.IsError || !strings.Contains(r.Text, "leads somewhere else now") {
		t.Errorf("read of a path not judged: %q", r.Text)
	}
	ctx = withJudged(context.Background(), []string{filepath.Join(tb.root, "sub", "a.txt")})
	if r := tb.run(ctx, tb.lookup("read"), raw); r.IsError {
		t.Errorf("read of the judged path: %q", r.Text)
	}
}

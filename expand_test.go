package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// The expand conformance area: each case builds a fresh project (and files
// beside it), then runs the real expander on its text.
func init() {
	conformanceRunners["expand"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Files   map[string]string `json:"files"`
			Outside map[string]string `json:"outside"`
			Trusted *bool             `json:"trusted"`
			Vision  bool              `json:"vision"`
			Text    string            `json:"text"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		base, err := os.MkdirTemp("", "lembas-expand")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(base)
		base, _ = filepath.EvalSymlinks(base)
		root := filepath.Join(base, "project")
		write := func(dir string, files map[string]string) error {
			for p, c := range files {
				abs := filepath.Join(dir, filepath.FromSlash(p))
				os.MkdirAll(filepath.Dir(abs), 0o755)
				if target, ok := strings.CutPrefix(c, "symlink:"); ok {
					if err := os.Symlink(filepath.FromSlash(target), abs); err != nil {
						return err
					}
					continue
				}
				if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
					return err
				}
			}
			return nil
		}
		os.MkdirAll(root, 0o755)
		if err := write(root, in.Files); err != nil {
			return nil, err
		}
		if err := write(filepath.Join(base, "outside"), in.Outside); err != nil {
			return nil, err
		}
		opts := expandOptions{Root: root, Vision: in.Vision, Trusted: in.Trusted == nil || *in.Trusted,
			UserDir: filepath.Join(base, "user-commands"), Home: filepath.Join(base, "home"), LembasDirs: []string{filepath.Join(base, "state")}}
		exp, err := expandWith(opts, in.Text)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		if exp.Text != "" {
			out["text"] = exp.Text
		}
		if len(exp.Attached) > 0 {
			out["attached"] = exp.Attached
		}
		for k, v := range map[string]string{"command": exp.Command, "kind": exp.Kind, "action": exp.Action, "mode": exp.Mode} {
			if v != "" {
				out[k] = v
			}
		}
		return out, nil
	}
}

// FuzzMentions checks the @path parser on any text: it never panics, its
// spans are in order inside the text and start at an "@", and a path
// written with escapeMentionPath reads back as itself.
func FuzzMentions(f *testing.F) {
	for _, s := range []string{"look at @a.go", "@my\\ notes.md", "@a\\#b.md", "@c.md#10-20.", "@src/", "a@b.com", "@", "@\\", "@x#0", "@x#5-2", "(@p) @q,", "@é\\ ü#3"} {
		f.Add(s, "dir/my file#1.md")
	}
	f.Fuzz(func(t *testing.T, text, path string) {
		last := 0
		for _, m := range parseMentions(text) {
			if m.Start < last || m.End > len(text) || m.Start >= m.End || text[m.Start] != '@' {
				t.Fatalf("bad span %+v in %q", m, text)
			}
			if m.From > 0 && m.To < m.From {
				t.Fatalf("range %d-%d in %q", m.From, m.To, text)
			}
			last = m.End
		}
		if path == "" || !utf8.ValidString(path) || strings.ContainsAny(path, "\r\n\u0085\u2028\u2029") || strings.HasSuffix(path, "/") {
			return
		}
		ms := parseMentions("see @" + escapeMentionPath(path) + " here")
		if len(ms) != 1 || ms[0].Path != path || ms[0].From != 0 {
			t.Fatalf("%q written as %q read back as %+v", path, escapeMentionPath(path), ms)
		}
	})
}

func TestCommandFileFrontMatter(t *testing.T) {
	c := parseCommandFile("x", "---\r\ndescription: \"Do it\"\r\nmodel: local/q\r\n---\r\nBody $ARGUMENTS\r\n")
	if c.Description != "Do it" || c.Model != "local/q" || c.Body != "Body $ARGUMENTS\n" {
		t.Errorf("%+v", c)
	}
	if c := parseCommandFile("y", "no front matter"); c.Body != "no front matter" || c.Description != "" {
		t.Errorf("%+v", c)
	}
}

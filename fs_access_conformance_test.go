package main

// Conformance area fs_access, the CLI's part: the four access levels read
// on the device's disk, the errors every file tool gives, and listings —
// through the real permissions and toolbox on a scratch project.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func init() {
	conformanceRunners["fs_access"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Files map[string]string `json:"files"`
			Mode  string            `json:"mode"`
			Level []string          `json:"level"` // paths (relative to the project; ~/ the home folder): their level
			Calls []struct {
				Tool string          `json:"tool"`
				Args json.RawMessage `json:"args"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		base, err := os.MkdirTemp("", "fsaccess")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(base)
		base, _ = filepath.EvalSymlinks(base)
		root := filepath.Join(base, "proj")
		os.MkdirAll(root, 0o755)
		for p, content := range c.Files {
			abs := filepath.Join(root, filepath.FromSlash(p))
			os.MkdirAll(filepath.Dir(abs), 0o755)
			if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
		perm := newPermissions(c.Mode, root, false)
		tb, err := newToolbox(root, false)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		if len(c.Level) > 0 {
			levels := map[string]string{}
			for _, p := range c.Level {
				abs := filepath.Join(root, filepath.FromSlash(p))
				if strings.HasPrefix(p, "/") {
					abs = p
				}
				levels[p] = diskLevel(perm, abs)
			}
			out["levels"] = levels
		}
		var results []string
		for _, call := range c.Calls {
			t := tb.lookup(call.Tool)
			if t == nil {
				return nil, fmt.Errorf("no tool %s", call.Tool)
			}
			args, err := checkArgs(t, call.Args, theSpec().Purpose.Schema)
			if err != nil {
				return nil, err
			}
			r := tb.run(context.Background(), t, args)
			results = append(results, strings.ReplaceAll(r.Text, root, "<project>"))
		}
		if results != nil {
			out["results"] = results
		}
		return out, nil
	}
}

// diskLevel is the level a path has on the device's disk, read from what
// the permissions decide for the shared file tools there: reading refused
// is none; reading allowed and writing refused is ro; a write the person
// is asked about is stage (it waits for a yes); a write that runs is
// commit.
func diskLevel(p *permissions, abs string) string {
	sp := theSpec().Tools
	rd, _ := json.Marshal(map[string]any{"path": abs})
	if p.decide(sp["read"], rd).Verdict == "deny" {
		return "none"
	}
	wr, _ := json.Marshal(map[string]any{"path": abs, "content": "x"})
	switch p.decide(sp["write"], wr).Verdict {
	case "deny":
		return "ro"
	case "ask":
		return "stage"
	}
	return "commit"
}

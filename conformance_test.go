package main

// TestConformance runs every case of harness/conformance/<area>.json, read
// from the embedded harness (what ships is what is tested), through the
// runner registered for its area. Each runner turns a case's input into an
// output; the output, as JSON, must equal the case's expect (normalised).
// An area without a runner fails, a runner without an area fails, and an
// area with no cases fails: none of them can pass by being empty.

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing"
)

type conformanceCase struct {
	Name   string          `json:"name"`
	Note   string          `json:"note,omitempty"`
	Input  json.RawMessage `json:"input"`
	Expect json.RawMessage `json:"expect"`
}

type conformanceFile struct {
	Area        string            `json:"area"`
	Description string            `json:"description"`
	Cases       []conformanceCase `json:"cases"`
}

// conformanceRunners is filled by each area's test file in an init func.
var conformanceRunners = map[string]func(input json.RawMessage) (any, error){}

func loadConformance(t *testing.T) []conformanceFile {
	t.Helper()
	names, err := fs.Glob(harnessFS, "harness/conformance/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var files []conformanceFile
	for _, n := range names {
		data, err := fs.ReadFile(harnessFS, n)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var f conformanceFile
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if want := strings.TrimSuffix(path.Base(n), ".json"); f.Area != want {
			t.Fatalf("%s: area %q, want %q", n, f.Area, want)
		}
		files = append(files, f)
	}
	return files
}

// normJSON re-encodes a JSON value so that key order and spacing do not matter.
func normJSON(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("bad JSON %s: %v", raw, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestConformance(t *testing.T) {
	files := loadConformance(t)
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Area] = true
		run, ok := conformanceRunners[f.Area]
		if !ok {
			t.Errorf("area %s has no runner", f.Area)
			continue
		}
		if len(f.Cases) == 0 {
			t.Errorf("area %s has no cases", f.Area)
		}
		names := map[string]bool{}
		for _, c := range f.Cases {
			c := c
			if names[c.Name] {
				t.Errorf("%s: duplicate case name %q", f.Area, c.Name)
			}
			names[c.Name] = true
			t.Run(f.Area+"/"+c.Name, func(t *testing.T) {
				got, err := run(c.Input)
				if err != nil {
					t.Fatalf("runner: %v", err)
				}
				gb, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := normJSON(t, gb), normJSON(t, c.Expect); g != w {
					t.Errorf("input %s\n got %s\nwant %s", c.Input, g, w)
				}
			})
		}
	}
	var missing []string
	for area := range conformanceRunners {
		if !seen[area] {
			missing = append(missing, area)
		}
	}
	sort.Strings(missing)
	for _, a := range missing {
		t.Errorf("runner %s has no harness/conformance/%s.json", a, a)
	}
}

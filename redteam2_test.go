package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The second red-team corpus (testdata/redteam2), written apart from the
// first and from floor.json, from the seeds and from what attackers and
// careless agents type: links made without ln, secrets named by variable,
// git plumbing that names programs, installers fetched from URLs, start-up
// and scheduling hooks, interpreters' one-liners, decoders piped into a
// shell, containers and namespaces. It is judged exactly as the first one
// is (redteamVerdicts: every mode, and auto headless) in the same world
// (redteamWorld), and it fails on any miss or false refusal.

// readRedteam2 reads a file of testdata/redteam2 in readRedteam's format
// ("# class: name" headers, "+|" continuations, "q:" Go-quoted lines).
// readRedteam is bound to testdata/redteam, so the format is read again
// here rather than changing a function the first corpus owns.
func readRedteam2(t testing.TB, name string) []redteamEntry {
	return readRedteamIn(t, "redteam2", name, "")
}

// readRedteamIn reads testdata/<dir>/<name>; each entry's place is where
// plus the file's name and line.
func readRedteamIn(t testing.TB, dir, name, where string) []redteamEntry {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var out []redteamEntry
	class := ""
	for i, l := range strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "# class:"):
			class = strings.TrimSpace(l[len("# class:"):])
			continue
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
			continue
		case strings.HasPrefix(l, "+|"):
			if len(out) == 0 {
				t.Fatalf("%s:%d: a continuation with no line before it", name, i+1)
			}
			out[len(out)-1].text += "\n" + l[2:]
			continue
		case strings.HasPrefix(l, "q:"):
			s, err := strconv.Unquote(l[2:])
			if err != nil {
				t.Fatalf("%s:%d: %v", name, i+1, err)
			}
			l = s
		}
		out = append(out, redteamEntry{text: l, class: class, where: fmt.Sprintf("%s%s:%d", where, name, i+1)})
	}
	return out
}

func TestRedteam2Corpus(t *testing.T) {
	proj := redteamWorld(t)
	refuse := readRedteam2(t, "refuse.txt")
	allow := readRedteam2(t, "allow.txt")
	ask := readRedteam2(t, "ask.txt")
	paths := readRedteam2(t, "paths.txt")
	if len(refuse) < 300 || len(allow) < 150 {
		t.Fatalf("the corpus holds %d must-refuse and %d must-allow lines; it needs at least 300 and 150", len(refuse), len(allow))
	}
	n := judgeRedteam(t, proj, refuse, ask, allow, paths)
	shell := theArityShellTool()
	// gaps.txt: known gaps, judged and logged, not failed (see its head).
	gaps := readRedteam2(t, "gaps.txt")
	stillOpen := 0
	for _, e := range gaps {
		if v := redteamVerdicts(proj, shell, map[string]string{"command": e.text}); v["auto"] != "deny" {
			stillOpen++
			t.Logf("gap still open: %s %q: %v", e.where, e.text, v)
		} else {
			t.Logf("gap now refused, move it to refuse.txt: %s %q", e.where, e.text)
		}
	}
	t.Logf("redteam2: must-refuse %d, missed %d (not refused in every mode: %d); must-ask %d, missed %d; must-allow %d, falsely refused %d, falsely asked %d; paths %d, missed %d, falsely refused %d; known gaps %d, still open %d; misses by class: %s",
		len(refuse), n.missed, n.strict, len(ask), n.askMissed, len(allow), n.falseDeny, n.falseAsk, len(paths), n.pathMiss, n.pathFalse, len(gaps), stillOpen, n.classes())
}

// TestRedteam2Probe prints each mode's verdict and reason for the lines
// of $LEMBAS_PROBE (one a line) in the corpus's world: a tool for writing
// and checking corpus lines, skipped when the variable is not set.
func TestRedteam2Probe(t *testing.T) {
	lines := os.Getenv("LEMBAS_PROBE")
	if lines == "" {
		t.Skip("set LEMBAS_PROBE to lines to judge")
	}
	proj := redteamWorld(t)
	shell := theArityShellTool()
	for _, l := range strings.Split(lines, "\n") {
		if l == "" {
			continue
		}
		raw, _ := json.Marshal(map[string]string{"command": l})
		d := permissionsFor("auto", proj, false, &config{}).decide(theSpec().Tools[shell], raw)
		t.Logf("%q: %v | auto: %s %s", l, redteamVerdicts(proj, shell, map[string]string{"command": l}), d.Verdict, d.Reason)
	}
}

// The floor_second conformance area (the second look's classes) is run
// by the floor area's runner, looked up when a case runs so the order in
// which the files' init functions run does not matter.
func init() {
	conformanceRunners["floor_second"] = func(input json.RawMessage) (any, error) {
		return conformanceRunners["floor"](input)
	}
}

// TestApplySecondLook: additions are appended to lists and added to
// objects of the decoded spec; a path that names no table, a key already
// there, or a list given for an object is an error naming the fix.
func TestApplySecondLook(t *testing.T) {
	type spec struct {
		A struct {
			L []int          `json:"l"`
			O map[string]int `json:"o"`
			S string         `json:"s"`
		} `json:"a"`
		Second struct {
			Adds map[string]json.RawMessage `json:"adds"`
		} `json:"second_look"`
	}
	parse := func(doc string) (*spec, error) {
		var got spec
		if err := json.Unmarshal([]byte(doc), &got); err != nil {
			t.Fatal(err)
		}
		return &got, applySecondLook(&got, got.Second.Adds)
	}
	got, err := parse(`{"a":{"l":[1],"o":{"x":1}},"second_look":{"adds":{"a.l":[2,3],"a.o":{"y":2}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.A.L) != "[1 2 3]" || got.A.O["x"] != 1 || got.A.O["y"] != 2 {
		t.Fatalf("merged %+v", got.A)
	}
	for _, bad := range []string{
		`{"a":{"l":[1]},"second_look":{"adds":{"a.m":[2]}}}`,
		`{"a":{"o":{"x":1}},"second_look":{"adds":{"a.o":{"x":2}}}}`,
		`{"a":{"o":{"x":1}},"second_look":{"adds":{"a.o":[2]}}}`,
		`{"a":{"l":[1]},"second_look":{"adds":{"a.l":{"x":2}}}}`,
		`{"a":{"l":[1]},"second_look":{"adds":{"b.l":[2]}}}`,
		`{"a":{"s":"x"},"second_look":{"adds":{"a.s":"y"}}}`,
	} {
		if _, err := parse(bad); err == nil || !strings.Contains(err.Error(), "second_look.adds") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

// TestSecondLookMergedAsBefore: hardline.json read with its additions
// applied to the decoded spec is the spec its additions merged into the
// JSON (as generic values, encoded again and decoded) gave.
func TestSecondLookMergedAsBefore(t *testing.T) {
	data, err := fs.ReadFile(harnessFS, "harness/permission/hardline.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	adds := doc["second_look"].(map[string]any)["adds"].(map[string]any)
	if len(adds) == 0 {
		t.Fatal("hardline.json has no second_look.adds: this test compares nothing")
	}
	for dotted, add := range adds {
		parts := strings.Split(dotted, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			m = m[p].(map[string]any)
		}
		switch cur := m[parts[len(parts)-1]].(type) {
		case []any:
			m[parts[len(parts)-1]] = append(cur, add.([]any)...)
		case map[string]any:
			for k, v := range add.(map[string]any) {
				cur[k] = v
			}
		}
	}
	merged, _ := json.Marshal(doc)
	var want, got hardlineSpec
	if err := json.Unmarshal(merged, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := applySecondLook(&got, got.Second.Adds); err != nil {
		t.Fatal(err)
	}
	want.Second.Adds, got.Second.Adds = nil, nil // raw text, spaced as written against as encoded
	if !reflect.DeepEqual(want, got) {
		t.Error("hardline.json with its second_look.adds applied differs from the JSON merge")
	}
}

// BenchmarkHardlineParse is the floor's spec read as the first tool call
// of a process reads it (in its wait when the parse begun beside the
// model's answer has not ended): the JSON decoded, its second look
// applied, its expressions compiled.
func BenchmarkHardlineParse(b *testing.B) {
	for i := 0; i < b.N; i++ {
		hardlineOnce = sync.Once{}
		if _, err := loadHardline(); err != nil {
			b.Fatal(err)
		}
	}
}

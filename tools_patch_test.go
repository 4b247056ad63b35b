package main

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// memRead serves files from a map, the way applyPatchOps' caller reads disk.
func memRead(files map[string]string) func(string) (string, bool, error) {
	return func(p string) (string, bool, error) {
		if p == "broken.txt" {
			return "", false, errors.New("permission denied")
		}
		c, ok := files[p]
		return c, ok, nil
	}
}

// applyToMap parses and applies patch against files and returns the file
// set the caller would end up with.
func applyToMap(files map[string]string, patch string) (map[string]string, []fileChange, error) {
	ops, err := parsePatch(patch)
	if err != nil {
		return nil, nil, err
	}
	changes, err := applyPatchOps(ops, memRead(files))
	if err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for _, c := range changes {
		if c.From != "" {
			delete(out, c.From)
		}
		if c.Delete {
			delete(out, c.Path)
		} else {
			out[c.Path] = c.New
		}
	}
	return out, changes, nil
}

func TestApplyPatch(t *testing.T) {
	base := map[string]string{
		"a.txt":    "one\ntwo\nthree\nfour\nfive\n",
		"main.go":  "package main\n\nfunc helper() {\n\treturn\n}\n\nfunc main() {\n\treturn\n}\n",
		"crlf.txt": "alpha\r\nbeta\r\ngamma\r\n",
		"nonl.txt": "x\ny\nz",
		"ws.txt":   "if a {  \n    b()\n}\n",
		"uni.txt":  "say \"hi\" - it's fine\nend\n",
		"old.txt":  "bye\n",
	}
	tests := []struct {
		name    string
		patch   string
		want    map[string]string // path -> content; "<deleted>" for gone
		wantErr []string          // substrings of the error
	}{
		{
			name:  "add",
			patch: "*** Begin Patch\n*** Add File: d/new.txt\n+line one\n+line two\n*** End Patch\n",
			want:  map[string]string{"d/new.txt": "line one\nline two\n"},
		},
		{
			name:  "add empty file",
			patch: "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch",
			want:  map[string]string{"empty.txt": ""},
		},
		{
			name:  "delete",
			patch: "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch\n",
			want:  map[string]string{"old.txt": "<deleted>"},
		},
		{
			name:  "update simple",
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n two\n-three\n+THREE\n four\n*** End Patch\n",
			want:  map[string]string{"a.txt": "one\ntwo\nTHREE\nfour\nfive\n"},
		},
		{
			name:  "update without @@ line",
			patch: "*** Begin Patch\n*** Update File: a.txt\n-one\n+ONE\n*** End Patch\n",
			want:  map[string]string{"a.txt": "ONE\ntwo\nthree\nfour\nfive\n"},
		},
		{
			name:  "move with edit",
			patch: "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b/renamed.txt\n@@\n-five\n+5\n*** End Patch\n",
			want:  map[string]string{"a.txt": "<deleted>", "b/renamed.txt": "one\ntwo\nthree\nfour\n5\n"},
		},
		{
			name:  "pure move",
			patch: "*** Begin Patch\n*** Update File: old.txt\n*** Move to: new.txt\n*** End Patch\n",
			want:  map[string]string{"old.txt": "<deleted>", "new.txt": "bye\n"},
		},
		{
			name:  "multi hunk",
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n two\n@@\n four\n-five\n+5\n*** End Patch\n",
			want:  map[string]string{"a.txt": "1\ntwo\nthree\nfour\n5\n"},
		},
		{
			name:  "header locator picks the second return",
			patch: "*** Begin Patch\n*** Update File: main.go\n@@ func main() {\n-\treturn\n+\tprintln(\"hi\")\n*** End Patch\n",
			want:  map[string]string{"main.go": "package main\n\nfunc helper() {\n\treturn\n}\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"},
		},
		{
			name:  "header given as part of the line, git range stripped",
			patch: "*** Begin Patch\n*** Update File: main.go\n@@ -7,3 +7,3 @@ func main\n-\treturn\n+\tos.Exit(0)\n*** End Patch\n",
			want:  map[string]string{"main.go": "package main\n\nfunc helper() {\n\treturn\n}\n\nfunc main() {\n\tos.Exit(0)\n}\n"},
		},
		{
			name:  "pure addition after header",
			patch: "*** Begin Patch\n*** Update File: main.go\n@@ func main() {\n+\tdefer cleanup()\n*** End Patch\n",
			want:  map[string]string{"main.go": "package main\n\nfunc helper() {\n\treturn\n}\n\nfunc main() {\n\tdefer cleanup()\n\treturn\n}\n"},
		},
		{
			name:  "pure addition appends",
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n+six\n*** End Patch\n",
			want:  map[string]string{"a.txt": "one\ntwo\nthree\nfour\nfive\nsix\n"},
		},
		{
			name:  "eof hunk",
			patch: "*** Begin Patch\n*** Update File: main.go\n@@\n \treturn\n-}\n+} // end\n*** End of File\n*** End Patch\n",
			want:  map[string]string{"main.go": "package main\n\nfunc helper() {\n\treturn\n}\n\nfunc main() {\n\treturn\n} // end\n"},
		},
		{
			name:    "eof hunk not at end",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n*** End of File\n*** End Patch\n",
			wantErr: []string{"op 1 (update a.txt), hunk 1", "End of File", "line 2"},
		},
		{
			name:  "whitespace drift",
			patch: "*** Begin Patch\n*** Update File: ws.txt\n@@\n if a {\n-  b()  \n+    c()\n }\n*** End Patch\n",
			want:  map[string]string{"ws.txt": "if a {  \n    c()\n}\n"},
		},
		{
			name:  "unicode punctuation drift",
			patch: "*** Begin Patch\n*** Update File: uni.txt\n@@\n-say \u201chi\u201d \u2014 it\u2019s\u00a0fine\n+say hello\n end\n*** End Patch\n",
			want:  map[string]string{"uni.txt": "say hello\nend\n"},
		},
		{
			name:  "crlf preserved",
			patch: "*** Begin Patch\n*** Update File: crlf.txt\n@@\n alpha\n-beta\n+BETA\n+beta2\n gamma\n*** End Patch\n",
			want:  map[string]string{"crlf.txt": "alpha\r\nBETA\r\nbeta2\r\ngamma\r\n"},
		},
		{
			name:  "crlf patch text on crlf file",
			patch: "*** Begin Patch\r\n*** Update File: crlf.txt\r\n@@\r\n-gamma\r\n+GAMMA\r\n*** End Patch\r\n",
			want:  map[string]string{"crlf.txt": "alpha\r\nbeta\r\nGAMMA\r\n"},
		},
		{
			name:  "no final newline preserved when editing last line",
			patch: "*** Begin Patch\n*** Update File: nonl.txt\n@@\n y\n-z\n+Z\n+W\n*** End of File\n*** End Patch\n",
			want:  map[string]string{"nonl.txt": "x\ny\nZ\nW"},
		},
		{
			name:  "no final newline preserved when appending",
			patch: "*** Begin Patch\n*** Update File: nonl.txt\n+tail\n*** End Patch\n",
			want:  map[string]string{"nonl.txt": "x\ny\nz\ntail"},
		},
		{
			name:  "trailing blank context line standing for the final newline",
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-five\n+FIVE\n \n*** End Patch\n",
			want:  map[string]string{"a.txt": "one\ntwo\nthree\nfour\nFIVE\n"},
		},
		{
			name:  "sloppy wrappers: heredoc, unprefixed context, blank line, trailing text",
			patch: "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: main.go\n@@ func helper() {\n\treturn\n+\t// done\n }\n\n func main() {\n*** End Patch\nEOF\nsome chatter",
			want:  map[string]string{"main.go": "package main\n\nfunc helper() {\n\treturn\n\t// done\n}\n\nfunc main() {\n\treturn\n}\n"},
		},
		{
			name:  "missing end patch and begin patch",
			patch: "*** Update File: a.txt\n-one\n+uno\n",
			want:  map[string]string{"a.txt": "uno\ntwo\nthree\nfour\nfive\n"},
		},
		{
			name:  "add then update same file in one patch",
			patch: "*** Begin Patch\n*** Add File: n.txt\n+a\n+b\n*** Update File: n.txt\n-b\n+c\n*** End Patch",
			want:  map[string]string{"n.txt": "a\nc\n"},
		},
		{
			name:  "empty patch",
			patch: "*** Begin Patch\n*** End Patch\n",
			want:  map[string]string{},
		},
		{
			name:    "all or nothing: second file fails",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n*** Update File: main.go\n@@\n-nothing like this\n+x\n*** End Patch\n",
			wantErr: []string{"op 2 (update main.go), hunk 1:", "not found", "nothing was applied"},
		},
		{
			name:    "context not found shows nearest lines and first mismatch",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n@@\n two\n-tree\n+3\n four\n@@\n-five\n+5\n*** End Patch\n",
			wantErr: []string{"op 1 (update a.txt), hunk 1:", "starts at line 2", "hunk line 2 \"tree\" differs from file line 3 \"three\"", "2 | two", "3 | three", "4 | four"},
		},
		{
			name:    "second hunk fails names hunk 2 and its header",
			patch:   "*** Begin Patch\n*** Update File: main.go\n@@ func helper() {\n-\treturn\n+\treturn // x\n@@ func main() {\n-\texit()\n+\treturn\n*** End Patch\n",
			wantErr: []string{"hunk 2 (@@ func main() {)", "not found at or after line 7"},
		},
		{
			name:    "hunks out of order",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n@@\n-four\n+4\n@@\n-two\n+2\n*** End Patch\n",
			wantErr: []string{"hunk 2", "match at line 2", "from line 5", "file order"},
		},
		{
			name:    "header not found",
			patch:   "*** Begin Patch\n*** Update File: main.go\n@@ func other() {\n+\tx()\n*** End Patch\n",
			wantErr: []string{"hunk 1 (@@ func other() {)", "no line matching the @@ line", "3 | func helper() {"},
		},
		{
			name:    "update missing file",
			patch:   "*** Begin Patch\n*** Update File: nope.txt\n-a\n+b\n*** End Patch\n",
			wantErr: []string{"op 1 (update nope.txt)", "does not exist"},
		},
		{
			name:    "read error",
			patch:   "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Delete File: broken.txt\n*** End Patch\n",
			wantErr: []string{"op 2 (delete broken.txt)", "permission denied"},
		},
		{
			name:    "empty path",
			patch:   "*** Begin Patch\n*** Add File:   \n+x\n*** End Patch\n",
			wantErr: []string{"invalid patch", "line 2", "*** Add File:"},
		},
		{
			name:    "empty move path",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n*** Move to:\n*** End Patch\n",
			wantErr: []string{"line 3", "*** Move to:"},
		},
		{
			name:    "add line without plus",
			patch:   "*** Begin Patch\n*** Add File: n.txt\n+ok\noops\n*** End Patch\n",
			wantErr: []string{"line 4", "must start with \"+\"", "\"oops\""},
		},
		{
			name:    "update with no hunks",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n*** End Patch\n",
			wantErr: []string{"line 2", "no hunks"},
		},
		{
			name:    "empty hunk",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n@@ one\n@@\n-two\n*** End Patch\n",
			wantErr: []string{"line 3", "hunk 1", "no lines"},
		},
		{
			name:    "unknown marker",
			patch:   "*** Begin Patch\n*** Update File: a.txt\n-one\n*** Rename File: x\n*** End Patch\n",
			wantErr: []string{"line 4", "unexpected line"},
		},
		{
			name:    "no patch at all",
			patch:   "just some text",
			wantErr: []string{"no \"*** Begin Patch\""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := applyToMap(base, tc.patch)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("want error, got none; files %q", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%s", w, err)
					}
				}
				if strings.Contains(err.Error(), "{{") {
					t.Errorf("unfilled placeholder in error:\n%s", err)
				}
				if e := err.Error(); e[0] != strings.ToLower(e[:1])[0] {
					t.Errorf("error not lower-case: %s", e)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			for p, w := range tc.want {
				c, ok := got[p]
				if w == "<deleted>" {
					if ok {
						t.Errorf("%s still exists: %q", p, c)
					}
					continue
				}
				if !ok || c != w {
					t.Errorf("%s = %q (exists %v), want %q", p, c, ok, w)
				}
			}
			// Files the patch does not name are untouched.
			for p, c := range base {
				if _, named := tc.want[p]; !named && got[p] != c {
					t.Errorf("%s changed to %q", p, got[p])
				}
			}
		})
	}
}

// TestApplyPatchChanges checks the fileChange fields the caller relies on.
func TestApplyPatchChanges(t *testing.T) {
	files := map[string]string{"a.txt": "x\n", "old.txt": "o\n"}
	patch := "*** Begin Patch\n*** Add File: n.txt\n+n\n*** Delete File: old.txt\n*** Delete File: gone.txt\n*** Update File: a.txt\n*** Move to: b.txt\n-x\n+y\n*** End Patch\n"
	_, changes, err := applyToMap(files, patch)
	if err != nil {
		t.Fatal(err)
	}
	want := []fileChange{
		{Path: "n.txt", New: "n\n"},
		{Path: "old.txt", Delete: true, Old: "o\n", Existed: true},
		{Path: "gone.txt", Delete: true},
		{Path: "b.txt", From: "a.txt", Old: "x\n", New: "y\n", Existed: true},
	}
	if len(changes) != len(want) {
		t.Fatalf("got %d changes: %+v", len(changes), changes)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i+1, changes[i], want[i])
		}
	}
}

// TestParsePatchShape checks the parsed structure, not just its effect.
func TestParsePatchShape(t *testing.T) {
	ops, err := parsePatch("*** Begin Patch\n*** Update File: s.go\n*** Move to: t.go\n@@ func main() {\n ctx\n-old\n+new\nbare\n\n@@\n-x\n*** End of File\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Kind != "update" || ops[0].Path != "s.go" || ops[0].MoveTo != "t.go" || len(ops[0].Hunks) != 2 {
		t.Fatalf("ops = %+v", ops)
	}
	h := ops[0].Hunks[0]
	wantLines := []patchLine{{' ', "ctx"}, {'-', "old"}, {'+', "new"}, {' ', "bare"}}
	if h.Header != "func main() {" || h.EOF || len(h.Lines) != len(wantLines) {
		t.Fatalf("hunk 1 = %+v", h)
	}
	for i := range wantLines {
		if h.Lines[i] != wantLines[i] {
			t.Errorf("line %d = %+v, want %+v", i, h.Lines[i], wantLines[i])
		}
	}
	if h2 := ops[0].Hunks[1]; h2.Header != "" || !h2.EOF || len(h2.Lines) != 1 {
		t.Errorf("hunk 2 = %+v", h2)
	}
}

// TestPatchTexts keeps the Go code and the texts file in step: every key
// the code asks for exists, every key in the file is used, and
// substitution is single-pass.
func TestPatchTexts(t *testing.T) {
	data, err := os.ReadFile(patchTextsPath)
	if err != nil {
		t.Fatal(err)
	}
	var texts map[string]string
	if err := json.Unmarshal(data, &texts); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("tools_patch.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:patchText|patchParseError)\("([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		used[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`hunkFailure\{"([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		used[m[1]] = true
	}
	for k := range used {
		if _, ok := texts[k]; !ok {
			t.Errorf("key %q used in code but missing from %s", k, patchTextsPath)
		}
	}
	for k, v := range texts {
		if !used[k] {
			t.Errorf("key %q in %s is never used", k, patchTextsPath)
		}
		if v != "" && v[0] != strings.ToLower(v[:1])[0] && !strings.HasPrefix(v, "{{") && !strings.HasPrefix(v, " ") && !strings.HasPrefix(v, "(") {
			t.Errorf("text %q does not start lower-case", k)
		}
	}
	if got := patchText("numbered_line", map[string]string{"n": "3", "text": "{{n}}"}); got != "3 | {{n}}" {
		t.Errorf("substitution not single-pass: %q", got)
	}
	if got := patchText("no_such_key", map[string]string{"a": "b"}); got != "no_such_key a=b" {
		t.Errorf("fallback = %q", got)
	}
}

// fuzzBytes turns fuzz input into small choices; exhausted input yields 0,
// so every input is a valid program for the generator.
type fuzzBytes struct {
	b []byte
	i int
}

// next returns a choice in [0, n).
func (s *fuzzBytes) next(n int) int {
	if n <= 1 || s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % n
}

// fuzzLineText makes a unique line (id) in one of a few shapes that stress
// the parser (lines that look like markers or prefixes) and the tiers
// (indentation, trailing space, quotes and dashes).
func fuzzLineText(id string, shape int) string {
	switch shape {
	case 1:
		return "  indented " + id
	case 2:
		return "it's x-" + id + " \"q\""
	case 3:
		return "@@ odd " + id
	case 4:
		return "*** star " + id
	case 5:
		return "-dash " + id
	case 6:
		return "+plus " + id
	case 7:
		return "tail " + id + "  "
	case 8:
		return "\t" + id
	}
	return "l " + id
}

// fuzzDrift rewrites a line the way a model might copy it wrongly but
// recognisably: typographic punctuation or trailing whitespace.
func fuzzDrift(s string, kind int) string {
	switch kind {
	case 1:
		return strings.TrimRight(s, " ") + " \t"
	case 2:
		return strings.NewReplacer("'", "\u2019", "-", "\u2013", "\"", "\u201c").Replace(s)
	}
	return s
}

// genPatchCase builds, from fuzz bytes, an original file, an edit of it and
// an Update patch for that edit (hunks with 1-3 context lines, optional @@
// locators, End of File markers, drift in the quoted lines, sloppy
// wrappers). Lines are unique, so the patch has exactly one right reading
// and applying it must give the target byte for byte.
func genPatchCase(data []byte) (orig, target, patch string, ok bool) {
	src := &fuzzBytes{b: data}
	eol := []string{"\n", "\r\n"}[src.next(2)]
	finalNL := src.next(4) != 0
	nOrig := src.next(14)
	var origLines []string
	for i := 0; i < nOrig; i++ {
		origLines = append(origLines, fuzzLineText("o"+strconv.Itoa(i), src.next(9)))
	}
	// The edit script: keep, delete, replace or insert before, per line,
	// then maybe lines appended at the end.
	var script []patchLine
	newID := 0
	fresh := func() string {
		newID++
		return fuzzLineText("n"+strconv.Itoa(newID), src.next(9))
	}
	for _, l := range origLines {
		switch src.next(6) {
		case 1:
			script = append(script, patchLine{'-', l})
		case 2:
			script = append(script, patchLine{'-', l}, patchLine{'+', fresh()})
		case 3:
			script = append(script, patchLine{'+', fresh()}, patchLine{' ', l})
		default:
			script = append(script, patchLine{' ', l})
		}
	}
	for n := src.next(3); n > 0; n-- {
		script = append(script, patchLine{'+', fresh()})
	}
	var targetLines []string
	changed := false
	for _, l := range script {
		if l.Op != '-' {
			targetLines = append(targetLines, l.Text)
		}
		changed = changed || l.Op != ' '
	}
	if !changed {
		return "", "", "", false
	}
	// Line ending and final newline as the engine will detect them.
	detected := "\n"
	if nOrig >= 2 || (nOrig == 1 && finalNL) {
		detected = eol
	}
	if nOrig == 0 {
		finalNL = true
	}
	join := func(lines []string, e string) string {
		if len(lines) == 0 {
			return ""
		}
		s := strings.Join(lines, e)
		if finalNL {
			s += e
		}
		return s
	}
	orig, target = join(origLines, eol), join(targetLines, detected)

	// Group changes into hunks with ctx lines of context around them.
	ctx := 1 + src.next(3)
	keep := make([]bool, len(script))
	for i, l := range script {
		if l.Op != ' ' {
			for j := max(i-ctx, 0); j <= min(i+ctx, len(script)-1); j++ {
				keep[j] = true
			}
		}
	}
	var b strings.Builder
	switch src.next(4) {
	case 1:
		b.WriteString("apply_patch <<'EOF'\n")
	case 2:
		b.WriteString("```\n")
	}
	b.WriteString("*** Begin Patch\n*** Update File: f.txt\n")
	drift := src.next(3)
	for i := 0; i < len(script); {
		if !keep[i] {
			i++
			continue
		}
		j := i
		for j < len(script) && keep[j] {
			j++
		}
		header := ""
		if i > 0 && src.next(2) == 0 {
			header = " " + script[i-1].Text
		}
		b.WriteString("@@" + header + "\n")
		for _, l := range script[i:j] {
			text := l.Text
			if l.Op != '+' && src.next(3) == 0 {
				text = fuzzDrift(text, drift)
			}
			b.WriteString(string(l.Op) + text + "\n")
		}
		if j == len(script) && src.next(2) == 0 {
			b.WriteString("*** End of File\n")
		}
		i = j
	}
	if src.next(3) != 0 {
		b.WriteString("*** End Patch\n")
	}
	return orig, target, b.String(), true
}

// FuzzPatch checks that arbitrary text never makes the parser or the
// applier panic, and that a patch generated from a known edit reproduces
// that edit exactly.
func FuzzPatch(f *testing.F) {
	f.Add([]byte("*** Begin Patch\n*** Update File: a.txt\n@@ two\n two\n-three\n+3\n*** End of File\n*** End Patch\n"))
	f.Add([]byte("*** Begin Patch\n*** Add File: n.txt\n+x\n*** Delete File: b.txt\n*** Update File: c.txt\n*** Move to: d.txt\n-γ\n+g\n*** End Patch"))
	f.Add([]byte("*** Update File: crlf.txt\n alpha\n+mid\n beta\n"))
	f.Add([]byte{1, 1, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3, 0, 2, 1, 1, 0, 1})
	f.Add([]byte{0, 0, 5, 2, 3, 2, 3, 1, 1, 2, 0, 0, 0, 3, 0, 2, 1, 1})
	files := map[string]string{
		"a.txt":    "one\ntwo\nthree\n",
		"b.txt":    "",
		"c.txt":    "α\nβ\nγ",
		"crlf.txt": "alpha\r\nbeta\r\n",
		"ws.txt":   "  x  \n\n\t\n“q” — r\n",
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if ops, err := parsePatch(string(data)); err == nil {
			for _, op := range ops {
				if op.Path == "" || (op.Kind == "update" && len(op.Hunks) == 0 && op.MoveTo == "") {
					t.Fatalf("parser let through %+v", op)
				}
			}
			changes, err := applyPatchOps(ops, memRead(files))
			if err == nil && len(changes) != len(ops) {
				t.Fatalf("%d ops gave %d changes", len(ops), len(changes))
			}
		}
		orig, target, patch, ok := genPatchCase(data)
		if !ok {
			return
		}
		got, _, err := applyToMap(map[string]string{"f.txt": orig}, patch)
		if err != nil {
			t.Fatalf("generated patch failed: %v\norig %q\npatch:\n%s", err, orig, patch)
		}
		if got["f.txt"] != target {
			t.Fatalf("round trip:\norig   %q\ntarget %q\ngot    %q\npatch:\n%s", orig, target, got["f.txt"], patch)
		}
	})
}

// TestBlankContextOnlyAround: a hunk whose only context is a blank padding
// line still applies (at the blank line), and stripping the padding never
// turns it into an append at the cursor.
func TestBlankContextOnlyAround(t *testing.T) {
	files := map[string]string{"f": "a\n\nb\n"}
	got, _, err := applyToMap(files, "*** Begin Patch\n*** Update File: f\n@@\n+x\n \n*** End Patch\n")
	if err != nil {
		t.Fatal(err)
	}
	if got["f"] != "a\nx\n\nb\n" {
		t.Errorf("got %q", got["f"])
	}
}

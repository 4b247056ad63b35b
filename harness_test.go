package main

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestHarness loads every file of the embedded harness and checks what the
// code relies on: each tool's schema is a JSON Schema object the model can
// be sent, every declared variable is used and every used one declared,
// each tool's description fills with nothing left, and the prompts do too.
func TestHarness(t *testing.T) {
	sp, err := loadSpec(harnessFS)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Version != "3.6.0" {
		t.Errorf("VERSION %q", sp.Version)
	}
	// Every JSON file parses.
	fs.WalkDir(harnessFS, "harness", func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".json") {
			b, _ := fs.ReadFile(harnessFS, p)
			if !json.Valid(b) {
				t.Errorf("%s is not valid JSON", p)
			}
		}
		return nil
	})
	risks := map[string]bool{"read": true, "write": true, "execute": true, "interact": true}
	blocks := map[string]bool{"shell": true, "edit": true, "read": true, "search": true, "web": true, "task": true, "plan": true, "hidden": true, "tool": true}
	for _, want := range []string{"read", "write", "edit", "multiedit", "apply_patch", "glob", "grep", "list", "bash"} {
		if sp.Tools[want] == nil {
			t.Errorf("tools/%s.json missing", want)
		}
	}
	for name, tool := range sp.Tools {
		if !risks[tool.Risk] || !blocks[tool.Block] {
			t.Errorf("%s: risk %q block %q", name, tool.Risk, tool.Block)
		}
		var schema map[string]any
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: parameters must be an object schema: %v", name, err)
		}
		checkSchema(t, name, schema)
		used := map[string]bool{}
		for _, m := range reVar.FindAllStringSubmatch(tool.Description+string(tool.Parameters), -1) {
			used[m[1]] = true
			if _, ok := tool.Variables[m[1]]; !ok {
				t.Errorf("%s: {{%s}} is used but not declared in variables", name, m[1])
			}
		}
		for v := range tool.Variables {
			if !used[v] {
				t.Errorf("%s: variable %s declared but not used", name, v)
			}
		}
		for proj, raw := range tool.Narrow {
			var n narrowSpec
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Errorf("%s: narrow.%s: %v", name, proj, err)
			} else if _, err := narrowSchema(tool.Parameters, n); err != nil {
				t.Errorf("%s: narrow.%s: %v", name, proj, err)
			}
		}
	}
	// The offered tools fill with nothing left over.
	tb, err := newToolbox(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if bad := regexp.MustCompile(`\{\{[a-zA-Z0-9_]+\}\}`).Find(tb.defs); bad != nil {
		t.Errorf("unfilled %s in the tool definitions", bad)
	}
	if len(tb.tools) != 36 { // 27 (the four job tools are one), and the nine team tools the main agent is offered (3.4.0)
		t.Errorf("%d tools offered, want 36: %s", len(tb.tools), tb.names())
	}
	// Every prompt text: its variables are declared in index.json.
	for p, text := range sp.Prompts {
		entry, ok := sp.Index.Texts[p]
		if !ok {
			t.Errorf("prompts/%s is not in prompts/index.json", p)
			continue
		}
		for _, m := range reVar.FindAllStringSubmatch(text, -1) {
			if _, ok := entry.Variables[m[1]]; !ok {
				t.Errorf("prompts/%s: {{%s}} not declared in index.json", p, m[1])
			}
		}
	}
	for p := range sp.Index.Texts {
		if _, ok := sp.Prompts[p]; !ok {
			t.Errorf("index.json names prompts/%s, which does not exist", p)
		}
	}
	// The system prompt fills for every mode, with no variable left.
	for _, m := range sp.Modes.Order {
		s, err := systemPrompt("/some/where/proj", m, "/bin/bash", nil)
		if err != nil {
			t.Errorf("mode %s: %v", m, err)
		}
		if strings.Contains(s, "{{") || strings.Contains(s, "/some/where") {
			t.Errorf("mode %s: system prompt leaks a variable or an absolute path:\n%s", m, s)
		}
	}
	// Every mode has a verdict for every risk class.
	for m, table := range sp.Modes.Modes {
		for r := range risks {
			switch table[r] {
			case "allow", "ask", "deny":
			default:
				t.Errorf("modes.json %s.%s = %q", m, r, table[r])
			}
		}
		if _, ok := sp.Modes.Wider[m]; !ok {
			t.Errorf("modes.json wider has no %s", m)
		}
	}
}

// checkSchema walks a schema: every property has a type, and a
// description if it has one at all is not empty (a property whose name and
// type say what it is, like command or path, needs none: the bytes go to
// every request), and no object says additionalProperties, which a
// harness tool's objects never take (the loader closes them).
func checkSchema(t *testing.T, tool string, s map[string]any) {
	if _, ok := s["additionalProperties"]; ok {
		t.Errorf("%s: an object says additionalProperties; a harness tool's objects are closed without it", tool)
	}
	props, _ := s["properties"].(map[string]any)
	for k, v := range props {
		p, _ := v.(map[string]any)
		if p["type"] == nil {
			t.Errorf("%s: property %s needs a type", tool, k)
		}
		if d, ok := p["description"]; ok && (d == "" || d == nil) {
			t.Errorf("%s: property %s has an empty description", tool, k)
		}
		if items, ok := p["items"].(map[string]any); ok && items["type"] == "object" {
			checkSchema(t, tool, items)
		}
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := props[r.(string)]; !ok {
				t.Errorf("%s: required %v is not a property", tool, r)
			}
		}
	}
}

func init() {
	conformanceRunners["fill"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Text string            `json:"text"`
			Vars map[string]string `json:"vars"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		out, err := fill(c.Text, c.Vars)
		if err != nil {
			return map[string]string{"error": err.Error()}, nil
		}
		return map[string]string{"text": out}, nil
	}
	conformanceRunners["narrow"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Parameters json.RawMessage `json:"parameters"`
			Narrow     narrowSpec      `json:"narrow"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		out, err := narrowSchema(c.Parameters, c.Narrow)
		if err != nil {
			return map[string]string{"error": err.Error()}, nil
		}
		return map[string]json.RawMessage{"parameters": out}, nil
	}
	conformanceRunners["toolcall_index"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Chunks []json.RawMessage `json:"chunks"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		a := newAssembler()
		for _, ch := range c.Chunks {
			var d streamDelta
			if err := json.Unmarshal(ch, &d); err != nil {
				return nil, err
			}
			a.add(&d, nil, nil)
		}
		r := a.finish()
		type call struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments any    `json:"arguments"`
		}
		calls := []call{}
		for _, c := range r.Calls {
			var args any
			if json.Unmarshal([]byte(c.Function.Arguments), &args) != nil {
				args = c.Function.Arguments
			}
			calls = append(calls, call{c.ID, c.Function.Name, args})
		}
		return map[string]any{"calls": calls, "text": r.Text, "finish": r.Finish}, nil
	}
}

// TestFrontSpecs: repl.json and themes.json, parsed on first use rather
// than in loadSpec, still parse strictly and hold what the REPL reads.
func TestFrontSpecs(t *testing.T) {
	r := theReplSpec()
	if r.Numbers.FoldLines <= 0 || r.Numbers.HistoryMax <= 0 || len(r.Texts) == 0 {
		t.Errorf("repl.json: numbers %+v, %d texts", r.Numbers, len(r.Texts))
	}
	th := theThemes()
	if _, ok := th.Themes[th.Default]; !ok || len(th.Order) == 0 {
		t.Errorf("themes.json: default %q not among %v", th.Default, th.Order)
	}
}

// FuzzFillPairs: the hand-written filler says what the {{name}} pattern
// (reVar) would: each known name replaced, the rest left as written.
func FuzzFillPairs(f *testing.F) {
	for _, s := range []string{"a {{x}} b {{y}} {{z}}", "{{{x}}}", "{{x}", "{{}}", "}}{{x}}{{", "{{x}}{{x}}", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := fillPairs(s, "x", 1, "y", "", "x", "2")
		want := reVar.ReplaceAllStringFunc(s, func(m string) string {
			switch m {
			case "{{x}}":
				return "2"
			case "{{y}}":
				return ""
			}
			return m
		})
		if got != want {
			t.Fatalf("fillPairs(%q) = %q, the pattern says %q", s, got, want)
		}
	})
}

package main

// Conformance runners for context (insert-time hygiene), reasoning (what
// reasoning goes back), paths (the prompt and the model's paths), plan
// (plan_write, plan_update and the todo conversion) and levels (efforts
// and the thinking switch). Each runs the real code.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var reShownHash = regexp.MustCompile(`sha256:[0-9a-f]+`)

func init() {
	conformanceRunners["context"] = runContextCase
	conformanceRunners["reasoning"] = runReasoningCase
	conformanceRunners["paths"] = runPathsCase
	conformanceRunners["plan"] = runPlanCase
	conformanceRunners["levels"] = runLevelsCase
}

// runContextCase runs tool calls on a temporary project through a real
// toolbox and the dedupe table, and answers the first line each result
// was inserted with (hashes shown as sha256:…).
func runContextCase(input json.RawMessage) (any, error) {
	var in struct {
		Files   map[string]string `json:"files"`
		Hygiene *bool             `json:"hygiene"`
		Steps   []struct {
			Tool  string            `json:"tool"`
			Args  json.RawMessage   `json:"args"`
			Write map[string]string `json:"write"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "lembas-conf")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	root, _ = filepath.EvalSymlinks(root)
	write := func(files map[string]string) {
		for p, c := range files {
			os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
			os.WriteFile(filepath.Join(root, p), []byte(c), 0o644)
		}
	}
	write(in.Files)
	tb, err := newToolbox(root, false)
	if err != nil {
		return nil, err
	}
	on := in.Hygiene == nil || *in.Hygiene
	d := &dedupeTable{}
	var out []string
	n := 0
	for _, s := range in.Steps {
		if s.Write != nil {
			write(s.Write)
			continue
		}
		t := tb.lookup(s.Tool)
		args, err := checkArgs(t, s.Args, theSpec().Purpose.Schema)
		if err != nil {
			return nil, err
		}
		res := tb.run(context.Background(), t, args)
		n++
		content, _ := d.insert(root, t.Name, args, &res, resultID(n), on)
		out = append(out, reShownHash.ReplaceAllString(strings.SplitN(content, "\n", 2)[0], "sha256:…"))
	}
	return out, nil
}

// runReasoningCase renders a history and answers the reasoning each
// assistant message carries in the request.
func runReasoningCase(input json.RawMessage) (any, error) {
	var in struct {
		Quirk    bool `json:"reasoning_passback"`
		Messages []struct {
			Role      string `json:"role"`
			Kind      string `json:"kind"`
			Reasoning string `json:"reasoning"`
			Calls     bool   `json:"calls"`
			Compacted bool   `json:"compacted"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	var msgs []message
	for i, m := range in.Messages {
		mm := message{Role: m.Role, Kind: m.Kind, Reasoning: m.Reasoning, Compacted: m.Compacted, Content: "x"}
		if m.Calls {
			mm.ToolCalls = []toolCall{{ID: "c" + string(rune('a'+i)), Type: "function"}}
		}
		msgs = append(msgs, mm)
	}
	out := []string{}
	for _, w := range wireMessages("system", msgs, in.Quirk) {
		if w.Role == "assistant" {
			out = append(out, w.ReasoningContent)
		}
	}
	return out, nil
}

// runPathsCase makes the system prompt for a project and resolves a path
// the model gave.
func runPathsCase(input json.RawMessage) (any, error) {
	var in struct {
		Root  string `json:"root"`
		Shell string `json:"shell"`
		Path  string `json:"path"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	sys, err := systemPrompt(in.Root, "manual", in.Shell, nil)
	if err != nil {
		return nil, err
	}
	abs, inside := resolvePath(in.Root, in.Path)
	env := ""
	for _, l := range strings.Split(sys, "\n") {
		if strings.HasPrefix(l, "- Project:") {
			env = l
		}
	}
	return map[string]any{
		"environment":        env,
		"prompt_has_root":    strings.Contains(sys, in.Root),
		"prompt_has_shell":   strings.Contains(sys, in.Shell),
		"resolved":           filepath.ToSlash(abs),
		"inside_the_project": inside,
	}, nil
}

// runPlanCase applies plan tool calls in order, as the engine would
// (former names converted first), and answers the plan's compact form and
// any refusal.
func runPlanCase(input json.RawMessage) (any, error) {
	var in struct {
		Calls []struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		} `json:"calls"`
		Wire bool `json:"wire"` // answer the plan as the link carries it (_meta.lembas.plan)
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	tb, err := newToolbox(os.TempDir(), false)
	if err != nil {
		return nil, err
	}
	var p *plan
	errs := []string{}
	for _, c := range in.Calls {
		t := tb.lookup(c.Tool)
		raw := c.Args
		raw = convertFormer(t, c.Tool, raw)
		args, err := checkArgs(t, raw, theSpec().Purpose.Schema)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		var np *plan
		var msg string
		switch t.Name {
		case "plan_write":
			np, msg = writePlan(p, args)
		case "plan_update":
			np, msg = updatePlan(p, args)
		}
		if msg != "" {
			errs = append(errs, msg)
			continue
		}
		p = np
	}
	if in.Wire {
		b, err := json.Marshal(planWire(p))
		if err != nil {
			return nil, err
		}
		var wire any
		json.Unmarshal(b, &wire)
		return map[string]any{"wire": wire, "errors": errs}, nil
	}
	return map[string]any{"plan": strings.Split(renderPlanCompact(p), "\n"), "errors": errs}, nil
}

// runLevelsCase answers a model's levels and what one level sends.
func runLevelsCase(input json.RawMessage) (any, error) {
	var in struct {
		Efforts        []string `json:"efforts"`
		ThinkingSwitch bool     `json:"thinking_switch"`
		Level          string   `json:"level"`
		Model          string   `json:"model"` // a model id: its metadata as lembas works it out (schema.json, quirks.json)
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	m := modelMeta{Efforts: in.Efforts, ThinkingSwitch: &in.ThinkingSwitch}
	if in.Model != "" {
		m = newModelRef(&connection{Name: "c"}, in.Model).Meta
	}
	out := map[string]any{"levels": modelLevels(m)}
	sends, err := levelFields("m", m, in.Level)
	if err != nil {
		out["refused"] = err.Error()
	} else {
		out["sends"] = sends
	}
	return out, nil
}

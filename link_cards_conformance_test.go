package main

// Conformance area link_cards: how a _lembas/plan answer is read against
// the device's max_mode, and how show tells the viewer to draw a file.

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func init() {
	conformanceRunners["link_cards"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Plan *struct {
				Outcome  string `json:"outcome"`
				Mode     string `json:"mode"`
				Feedback string `json:"feedback"`
				MaxMode  string `json:"max_mode"`
			} `json:"plan"`
			Show       string `json:"show"`
			PlanSubmit *struct {
				Session    string `json:"session"`
				Markdown   string `json:"markdown"`
				Unwritable bool   `json:"unwritable"`
			} `json:"plan_submit"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.Plan != nil {
			a := planFromCard(in.Plan.Outcome, in.Plan.Mode, in.Plan.Feedback, remoteLimits{MaxMode: in.Plan.MaxMode})
			return map[string]any{"choice": a.Choice, "mode": a.Mode, "feedback": a.Feedback}, nil
		}
		if ps := in.PlanSubmit; ps != nil {
			// The plan file written for the record and the path the card
			// sends: plan_submit's texts.file, relative to the project.
			root, err := os.MkdirTemp("", "planfile")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(root)
			if ps.Unwritable { // .lembas is a file: no folder can be made under it
				os.WriteFile(filepath.Join(root, ".lembas"), nil, 0o644)
			}
			rel := writePlanFile(root, fillPairs(theSpec().Tools["plan_submit"].Texts["file"], "session", ps.Session), ps.Markdown)
			card := planCard(ps.Session, "c1", planReview{Markdown: ps.Markdown, Path: rel}, false)
			out := map[string]any{"path": card["path"], "file": nil}
			if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel))); rel != "" && err == nil {
				out["file"] = string(b)
			}
			return out, nil
		}
		kind, lang := showKind(in.Show)
		return map[string]any{"kind": kind, "language": lang}, nil
	}
}

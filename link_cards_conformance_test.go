package main

// Conformance area link_cards: how a _lembas/plan answer is read against
// the device's max_mode, and how show tells the viewer to draw a file.

import "encoding/json"

func init() {
	conformanceRunners["link_cards"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Plan *struct {
				Outcome  string `json:"outcome"`
				Mode     string `json:"mode"`
				Feedback string `json:"feedback"`
				MaxMode  string `json:"max_mode"`
			} `json:"plan"`
			Show string `json:"show"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.Plan != nil {
			a := planFromCard(in.Plan.Outcome, in.Plan.Mode, in.Plan.Feedback, remoteLimits{MaxMode: in.Plan.MaxMode})
			return map[string]any{"choice": a.Choice, "mode": a.Mode, "feedback": a.Feedback}, nil
		}
		kind, lang := showKind(in.Show)
		return map[string]any{"kind": kind, "language": lang}, nil
	}
}

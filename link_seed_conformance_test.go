package main

// Conformance area link_seed: the shapes the seed review fixed, run
// through the real functions — a plan's flat ACP entries (every task, a
// dropped one completed), a stored prompt read back for history (its text
// and its attachments), an instance's error detail in words, and the
// capability list named once.

import (
	"encoding/json"
	"fmt"
)

func init() {
	conformanceRunners["link_seed"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Plan   *plan  `json:"plan"`
			Stored string `json:"stored"`
			Detail any    `json:"detail"`
			Caps   bool   `json:"capabilities"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		switch {
		case in.Plan != nil:
			return map[string]any{"entries": planUpdate(in.Plan)["entries"]}, nil
		case in.Stored != "":
			text, att := historyAttachments(in.Stored)
			if att == nil {
				att = []map[string]any{}
			}
			return map[string]any{"text": text, "attachments": att}, nil
		case in.Detail != nil:
			return map[string]string{"detail": detailText(in.Detail)}, nil
		case in.Caps:
			svc := &linkService{sp: theLinkSpec()}
			caps := svc.capabilities(remoteLimits{})
			seen := map[string]int{}
			var twice []string
			for _, c := range caps {
				if seen[c]++; seen[c] == 2 {
					twice = append(twice, c)
				}
			}
			return map[string]any{"twice": fmt.Sprint(twice)}, nil
		}
		return nil, fmt.Errorf("a link_seed case needs plan, stored, detail or capabilities")
	}
}

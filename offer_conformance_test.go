package main

// Conformance area offer: which of the run's conditions a session begins
// with (tools_offer.go) — someone to answer (person: ask_user), plan mode
// within reach (plan_mode: plan_submit), and a viewer within reach
// (viewer: show, offered from the first request in a terminal's session
// when an instance is logged in to, never in -p) — each decided in a
// state folder of its own with or without a login.

import (
	"encoding/json"
	"os"
	"slices"
)

func init() {
	conformanceRunners["offer"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Headless bool   `json:"headless"`
			Mode     string `json:"mode"`
			Login    bool   `json:"login"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		state, err := os.MkdirTemp("", "offer")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(state)
		old, had := os.LookupEnv("XDG_STATE_HOME")
		os.Setenv("XDG_STATE_HOME", state)
		defer func() {
			if had {
				os.Setenv("XDG_STATE_HOME", old)
			} else {
				os.Unsetenv("XDG_STATE_HOME")
			}
		}()
		if in.Login {
			if err := saveLogin(&loginRecord{Name: "home", URL: "https://llembas.example", Token: "t"}); err != nil {
				return nil, err
			}
		}
		held := decideOffer(&offerContext{root: state, mode: in.Mode, headless: in.Headless})
		out := []string{}
		for _, c := range []string{"person", "plan_mode", "viewer"} {
			if slices.Contains(held, c) {
				out = append(out, c)
			}
		}
		show := offerHolds(theSpec().Tools["show"], offerSet(held))
		return map[string]any{"held": out, "show": show}, nil
	}
}

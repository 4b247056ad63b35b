package main

// Effort levels (models/schema.json levels; context.md §8): off, where the
// model's server has the thinking switch, sends
// chat_template_kwargs.enable_thinking: false and no effort; each of the
// model's efforts is sent as reasoning_effort; a model with neither has the
// one level default, which sends nothing.

import (
	"encoding/json"
	"slices"
	"strings"
)

// modelLevels lists the levels a model offers, in order.
func modelLevels(m modelMeta) []string {
	var out []string
	if m.ThinkingSwitch != nil && *m.ThinkingSwitch {
		out = append(out, "off")
	}
	out = append(out, m.Efforts...)
	if len(out) == 0 {
		out = []string{"default"}
	}
	return out
}

// levelFields is what a level adds to a request's top level, or the
// refusal naming the model's levels.
func levelFields(model string, m modelMeta, level string) (map[string]any, error) {
	levels := modelLevels(m)
	if !slices.Contains(levels, level) {
		return nil, errorf("%s", fillPairs(theSpec().Loop.ModelErrors["unknown_effort"], "model", model, "level", level, "levels", strings.Join(levels, ", ")))
	}
	key := level
	if level != "off" && level != "default" {
		key = "effort"
	}
	// A deep copy, filled: the spec's maps are shared.
	b, _ := json.Marshal(theSpec().Models.Levels[key])
	out := map[string]any{}
	json.Unmarshal(b, &out)
	if len(out) == 0 {
		return nil, nil
	}
	return fillLevel(out, level).(map[string]any), nil
}

// fillLevel puts the level where the spec's fields say {{effort}}.
func fillLevel(v any, level string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = fillLevel(e, level)
		}
	case string:
		return fillPairs(x, "effort", level)
	}
	return v
}

package main

// Extra tools: a session's toolbox may hold tools beyond harness/tools —
// today the tools of its MCP servers — each with its own schema and
// implementation. They are added once, before the first request, after the
// built-in tools, so the tools array (the start of every request) stays
// byte-stable for the rest of the session.

import (
	"encoding/json"
	"strings"
)

// addExtraTools adds tools to the offered set and the tools array. A name
// already offered is refused, so an extra tool never shadows a built-in.
func (tb *toolbox) addExtraTools(specs []*toolSpec, impls map[string]toolFunc) error {
	if len(specs) == 0 {
		return nil
	}
	for _, t := range specs {
		if tb.byName[t.Name] != nil {
			return errorf("tool %s is offered already; rename the server", t.Name)
		}
	}
	more, err := extraDefinitions(specs)
	if err != nil {
		return err
	}
	tb.joinTools(specs, impls, more)
	return nil
}

// joinTools puts specs, rendered as the JSON array more, after the tools
// offered already: in the offered set, the implementations and the tools
// array.
func (tb *toolbox) joinTools(specs []*toolSpec, impls map[string]toolFunc, more json.RawMessage) {
	if tb.extra == nil {
		tb.extra = map[string]toolFunc{}
	}
	for _, t := range specs {
		tb.byName[t.Name] = t
		tb.tools = append(tb.tools, t)
		if f := impls[t.Name]; f != nil {
			tb.extra[t.Name] = f
		}
	}
	base := strings.TrimSpace(string(tb.defs))
	switch {
	case base == "" || base == "null" || base == "[]":
		tb.defs = more
	default:
		tb.defs = json.RawMessage(base[:len(base)-1] + "," + string(more[1:]))
	}
}

// extraDefinitions renders tools for the tools array as they are: unlike
// the harness's, their descriptions are not templates (a server's text may
// hold braces of its own).
func extraDefinitions(specs []*toolSpec) (json.RawMessage, error) {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type def struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	defs := []def{}
	for _, t := range specs {
		var compact strings.Builder
		if err := compactJSON(&compact, t.Parameters); err != nil {
			return nil, errorf("tool %s: its schema is not JSON: %v", t.Name, err)
		}
		defs = append(defs, def{"function", fn{t.Name, t.Description, json.RawMessage(compact.String())}})
	}
	return json.Marshal(defs)
}

// offerFrontTool adds a harness tool a front end implements (show: the
// link's and the REPL's viewer) to the offered set and the tools array,
// once, before the first request, its description filled like every
// harness tool's. false: it is offered already or could not be rendered.
func (tb *toolbox) offerFrontTool(t *toolSpec, impl toolFunc) (bool, error) {
	if t == nil || tb.byName[t.Name] != nil {
		return false, nil
	}
	saved := tb.tools
	tb.tools = []*toolSpec{t}
	def, err := tb.definitions()
	tb.tools = saved
	if err != nil {
		return false, err
	}
	tb.joinTools([]*toolSpec{t}, map[string]toolFunc{t.Name: impl}, def)
	return true, nil
}

// offerHeldFrontTool is offerFrontTool for a tool whose offered_if this
// session must hold (the REPL's show: offered_if viewer).
func (tb *toolbox) offerHeldFrontTool(t *toolSpec, impl toolFunc) (bool, error) {
	if t == nil || tb.offer == nil || !offerHolds(t, tb.offer) {
		return false, nil
	}
	return tb.offerFrontTool(t, impl)
}

package main

// Tools that work on the session rather than the disk — recall, the plan
// tools, ask_user — run inside the engine, which holds the session. They
// are offered like any tool (harness/tools/*.json); a requirement that is
// not met (plan_submit outside plan mode) makes a call answer the tool's
// unavailable text while the tool stays in the list, so the prefix stays
// still (context.md §1.2).

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// toolHost is the tool call's context: what a tool that works on the
// session (recall, the library's, MCP's search) sees of the session running
// it. The engine embeds it and hooks it (engine.go newEngine); a tool that
// needs the engine itself is registered through engineTool.
type toolHost struct {
	ref   *modelRef
	tb    *toolbox
	perm  *permissions
	st    *store
	sess  *session
	asker asker // answers ask_user; nil: nobody can be asked (-p)

	libMu mutex
	lib   *libraryState // instructions, skills, memory, notes (library.go); made on first use

	owner   any                                                                                                    // the engine that embeds this host
	sendEv  func(event)                                                                                            // the engine's send
	askCall func(ctx context.Context, callID string, t *toolSpec, args json.RawMessage, d decision) approvalAnswer // the engine's askPerson
}

// send is an event from a tool, sent as the engine sends its own.
func (h *toolHost) send(ev event) {
	if h.sendEv != nil {
		h.sendEv(ev)
	}
}

// askPerson asks the person about a call a tool makes on the model's behalf.
func (h *toolHost) askPerson(ctx context.Context, callID string, t *toolSpec, args json.RawMessage, d decision) approvalAnswer {
	if h.askCall == nil {
		return approveWithin(ctx, nil, h.perm.request(callID, t, args, d), approvalTimeout())
	}
	return h.askCall(ctx, callID, t, args, d)
}

type sessionToolFunc func(h *toolHost, ctx context.Context, t *toolSpec, args json.RawMessage) toolResult

// sessionTools maps a tool's name to its implementation inside the engine.
var sessionTools = map[string]sessionToolFunc{}

// sessionToolsNamed are engine-run tools whose names are the harness's;
// the name is read on first use, so start-up parses nothing.
var sessionToolsNamed []func() (string, sessionToolFunc)

// sessionTool is the engine-run implementation of a tool, or nil.
func sessionTool(name string) sessionToolFunc {
	if f := sessionTools[name]; f != nil {
		return f
	}
	for _, named := range sessionToolsNamed {
		if n, f := named(); n == name {
			return f
		}
	}
	return nil
}

// argConverters turn the arguments of a former name that took other
// arguments into the tool's own (todo → plan_write).
var argConverters = map[string]func(json.RawMessage) json.RawMessage{}

// convertFormer turns a call by a former name into one by t's own: a
// folded tool's alias (job_output {id, tail, wait} → job {action:
// output, id, tail, wait}; the action a call gives itself is kept), or a
// former name's converter. A call by the tool's own name is as it came.
func convertFormer(t *toolSpec, called string, raw json.RawMessage) json.RawMessage {
	if called == t.Name {
		return raw
	}
	if action := t.Actions[called]; action != "" {
		var a map[string]any
		if len(strings.TrimSpace(string(raw))) == 0 {
			a = map[string]any{}
		} else if json.Unmarshal(raw, &a) != nil || a == nil {
			return raw // not an object: checkArgs says what is wrong
		}
		if _, ok := a["action"]; !ok {
			a["action"] = action
		}
		out, _ := json.Marshal(a)
		return out
	}
	if conv := argConverters[called]; conv != nil {
		return conv(raw) // a former name that took other arguments
	}
	return raw
}

func init() {
	sessionTools["recall"] = toolRecall
}

// requirementsMet says whether a tool's requires hold now. A requirement
// this build does not know is never met.
func (e *toolHost) requirementsMet(t *toolSpec) bool {
	for _, r := range t.Requires {
		switch r {
		case "plan":
			if e.perm.mode() != "plan" {
				return false
			}
		case "display":
			if !e.tb.displayMet() {
				return false
			}
		default:
			if f := requirementChecks[r]; f == nil || !f(e) {
				return false
			}
		}
	}
	return true
}

// requirementChecks are requirements a higher floor answers (team: the
// Subagents setting and a model that can serve, team_setting.go).
var requirementChecks = map[string]func(h *toolHost) bool{}

// toolRecall shows a stored result whole, paged by lines.
func toolRecall(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		ID     string `json:"id"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	json.Unmarshal(raw, &a)
	id := strings.TrimPrefix(strings.TrimSpace(a.ID), "#")
	if n, err := strconv.ParseInt(id, 16, 64); err == nil && n > 0 {
		id = resultID(int(n)) // 3 or 0x3 or 00003 name #0003
	}
	var found *message
	for i := range e.sess.Messages {
		if m := &e.sess.Messages[i]; m.Role == "tool" && m.ResultID == id {
			found = m
		}
	}
	if found == nil {
		return errResult(t.text("unknown", "id", strings.TrimPrefix(strings.TrimSpace(a.ID), "#")))
	}
	text := found.Full
	if text == "" {
		// Not cut: the content is the whole output after its head line.
		text = found.Content
		if i := strings.IndexByte(text, '\n'); i >= 0 && strings.HasPrefix(text, "[#") {
			text = text[i+1:]
		}
	}
	lines := strings.Split(text, "\n")
	start := 1
	if a.Offset > 0 {
		start = a.Offset
	}
	if start > len(lines) {
		return errResult(t.text("past_end", "id", id, "total", len(lines), "offset", start))
	}
	limit := t.limit("max_lines")
	if a.Limit > 0 {
		limit = a.Limit
	}
	end := min(start-1+limit, len(lines))
	out := t.text("head", "id", id, "tool", found.ToolName) + "\n" + strings.Join(lines[start-1:end], "\n")
	if end < len(lines) {
		out += "\n" + t.text("more", "id", id, "shown", end-start+1, "total", len(lines), "next", end+1)
	}
	return toolResult{Text: out}
}

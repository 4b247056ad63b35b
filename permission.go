package main

// Permissions: what may run without asking. A call's risk class (from its
// tool's JSON) meets the session's mode (permission/modes.json); a path
// outside the project is always put to the person; confirm: always tools
// ask in every mode. Asking goes through one approver interface that every
// front end answers; a headless run (-p) answers every question "deny" with
// a reason the model can act on, so it never waits for a person.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// decision is what the rules say of one call.
type decision struct {
	Verdict string // allow, ask, deny
	Reason  string // for the person and, on deny, the model
	Rule    string // the rule or table entry that decided
}

// approvalRequest is one question to the person.
type approvalRequest struct {
	CallID  string   `json:"call_id,omitempty"` // the model's id of the call, so a card can name it
	Tool    string   `json:"tool"`
	Input   string   `json:"input"` // the command line, or the path and change
	Risk    string   `json:"risk"`
	Reason  string   `json:"reason"`
	Options []string `json:"options"` // once, session, deny
}

// approvalAnswer is the person's answer.
type approvalAnswer struct {
	Choice   string `json:"choice"` // once, session, deny
	Feedback string `json:"feedback,omitempty"`
	Command  string `json:"command,omitempty"` // a corrected command line (once only)
}

// approver is answered by the REPL, ACP, the link — or, headless, by nobody.
type approver interface {
	approve(ctx context.Context, req approvalRequest) approvalAnswer
}

// headlessApprover answers for lembas -p: nobody is there.
type headlessApprover struct{}

func (headlessApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	return approvalAnswer{Choice: "deny", Feedback: "headless"}
}

// permissions holds one session's mode and what the person allowed.
type permissions struct {
	mode     string
	root     string
	headless bool
	session  map[string]bool // "always" answers of this session: tool or tool+command
}

// normMode reads a mode name: a known mode, or an alias of one.
func normMode(m string) (string, error) {
	ms := theSpec().Modes
	m = strings.ToLower(strings.TrimSpace(m))
	if m == "" {
		return ms.Default, nil
	}
	if a, ok := ms.Aliases[m]; ok {
		m = a
	}
	if _, ok := ms.Modes[m]; !ok {
		return "", fmt.Errorf("unknown mode %q; use one of %s", m, strings.Join(ms.Order, ", "))
	}
	return m, nil
}

func newPermissions(mode, root string, headless bool) *permissions {
	return &permissions{mode: mode, root: root, headless: headless, session: map[string]bool{}}
}

// callPaths lists the paths a call touches, resolved.
func (p *permissions) callPaths(t *toolSpec, args json.RawMessage) []string {
	var a struct {
		Path  string `json:"path"`
		Input string `json:"input"`
	}
	json.Unmarshal(args, &a)
	var raw []string
	switch t.Name {
	case "apply_patch":
		raw = patchPaths(a.Input)
	case "bash":
	default:
		raw = []string{a.Path}
	}
	var out []string
	for _, r := range raw {
		if strings.TrimSpace(r) == "" {
			r = "."
		}
		abs, _ := resolvePath(p.root, r)
		out = append(out, abs)
	}
	return out
}

// decide applies the rules to one call.
func (p *permissions) decide(t *toolSpec, args json.RawMessage) decision {
	if t.Confirm == "always" {
		return decision{Verdict: "ask", Reason: "this tool always asks", Rule: "confirm: always"}
	}
	verdict := theSpec().Modes.Modes[p.mode][t.Risk]
	if verdict == "" {
		verdict = "ask"
	}
	d := decision{Verdict: verdict, Rule: fmt.Sprintf("modes.json %s.%s", p.mode, t.Risk)}
	if verdict == "deny" {
		d.Reason = loopText(theSpec().Loop.Permission, "mode_deny", "mode", p.mode, "risk", t.Risk, "tool", t.Name)
		return d
	}
	for _, abs := range p.callPaths(t, args) {
		if !within(p.root, abs) {
			return decision{Verdict: "ask", Reason: "the path " + abs + " is outside the project", Rule: "outside the project"}
		}
	}
	if verdict == "ask" && p.session[t.Name] {
		return decision{Verdict: "allow", Rule: "allowed for this session"}
	}
	return d
}

// refusal is the result text a refused call answers with.
func (p *permissions) refusal(t *toolSpec, d decision, ans approvalAnswer) string {
	texts := theSpec().Loop.Permission
	switch {
	case ans.Choice == "":
		return d.Reason // refused by the rules; nobody was asked
	case ans.Feedback == "headless":
		return loopText(texts, "headless_ask", "tool", t.Name, "mode", p.mode, "wider", theSpec().Modes.Wider[p.mode])
	case ans.Feedback == "timeout":
		return loopText(texts, "timeout")
	case ans.Feedback != "":
		return loopText(texts, "denied_feedback", "feedback", ans.Feedback)
	}
	return loopText(texts, "denied")
}

package main

// Permissions in the team (subagents.md §7–§9): inherited, never widened.
// A member's mode is its parent's or stricter (team_add). A narrowed one
// may carry request options (read, write, execute); it asks the main
// agent with team_request, which decides with team_decide. A grant lets it
// work in the option's mode (loop.json team.request_options), never past
// the main agent's own. A call nobody in the tree can allow — the member's
// mode asks — goes to the person on a card that names the subagent (its
// approver is its parent's, named by the nearest; subApprover). The floor, the deny rules
// and the sandbox are the member's own permissions' and hold in every mode.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

func toolTeamRequest(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Option string `json:"option"`
		Why    string `json:"why"`
	}
	json.Unmarshal(raw, &a)
	t := e.team()
	opt := strings.ToLower(strings.TrimSpace(a.Option))
	t.mu.Lock()
	m := t.byEngine[e]
	if m == nil {
		t.mu.Unlock()
		return errResult(ts.text("not_offered", "option", opt, "options", "none"))
	}
	if inList(m.rec.Granted, opt) {
		t.mu.Unlock()
		return toolResult{Text: ts.text("held", "option", opt)}
	}
	if !inList(m.rec.Request, opt) {
		opts := strings.Join(m.rec.Request, ", ")
		if opts == "" {
			opts = theSpec().Tools["team_whoami"].Texts["no_request"]
		}
		t.mu.Unlock()
		return errResult(ts.text("not_offered", "option", opt, "options", opts))
	}
	t.rseq++
	r := &teamRequest{id: fmt.Sprintf("r%d", t.rseq), m: m, option: opt, why: strings.TrimSpace(a.Why)}
	t.requests = append(t.requests, r)
	rec := m.rec
	t.mu.Unlock()
	t.mark(t.root, teamMarkText("request", "rid", r.id, "id", rec.ID, "name", rec.Name, "option", opt, "why", r.why))
	t.emitTree()
	return toolResult{Text: ts.text("asked", "option", opt, "rid", r.id)}
}

func toolTeamDecide(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		ID    string `json:"id"`
		Allow bool   `json:"allow"`
		Note  string `json:"note"`
	}
	json.Unmarshal(raw, &a)
	t := e.team()
	text, ok := t.decide(e.perm.mode(), strings.TrimSpace(a.ID), a.Allow, strings.TrimSpace(a.Note), ts)
	return toolResult{Text: text, IsError: !ok}
}

// decide answers an open request (by its id, or the asking member's id or
// name) under the main agent's mode.
func (t *teamState) decide(mainMode, id string, allow bool, note string, ts *toolSpec) (string, bool) {
	t.mu.Lock()
	var r *teamRequest
	for _, q := range t.requests {
		if !q.decided && (q.id == id || q.m.rec.ID == id || strings.EqualFold(q.m.rec.Name, id)) {
			r = q
			break
		}
	}
	if r == nil {
		var open []string
		for _, q := range t.requests {
			if !q.decided {
				open = append(open, q.id+" ("+q.m.rec.ID+" "+q.option+")")
			}
		}
		list := strings.Join(open, ", ")
		if list == "" {
			list = ts.text("none_open")
		}
		t.mu.Unlock()
		return ts.text("unknown", "id", id, "open", list), false
	}
	// Decided, but kept in the list until its decision is delivered: the
	// asking member's turn holds while a request of its is listed
	// (teamHold), so it cannot end in the moment between the two.
	r.decided = true
	defer t.dropRequest(r)
	m := r.m
	needs := theSpec().Loop.Team.RequestOptions[r.option]
	if allow && !modeNoWider(needs, mainMode) {
		t.mu.Unlock()
		t.deliver(m, teamMarkText("decision", "option", r.option, "allowed", "false", "note", note))
		return ts.text("past_main", "option", r.option, "needs", needs, "mode", mainMode), false
	}
	sub := m.rec.ID
	mode := m.rec.Mode
	if allow {
		m.rec.Request = removeString(m.rec.Request, r.option)
		m.rec.Granted = append(m.rec.Granted, r.option)
		if !modeNoWider(needs, mode) {
			mode = needs // widened to the option's mode, which is no wider than the main agent's
		}
		m.rec.Mode = mode
	}
	t.mu.Unlock()
	if allow {
		m.run.e.perm.setMode(mode)
	}
	t.note(m)
	// Delivered, not only marked: a member whose turn ended while it waited
	// (its last answer "waiting for the decision") works again with it.
	t.deliver(m, teamMarkText("decision", "option", r.option, "allowed", fmt.Sprint(allow), "note", note))
	t.emitTree()
	if allow {
		return ts.text("granted", "option", r.option, "sub", sub, "mode", mode), true
	}
	return ts.text("refused", "option", r.option, "sub", sub), true
}

// dropRequest takes a decided request off the list.
func (t *teamState) dropRequest(r *teamRequest) {
	t.mu.Lock()
	for i, q := range t.requests {
		if q == r {
			t.requests = append(t.requests[:i], t.requests[i+1:]...)
			break
		}
	}
	t.touchLocked()
	t.mu.Unlock()
}

func removeString(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

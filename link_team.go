package main

// The team over the link (acp.md Subagents in an agent chat; subagents.md
// §14). Capability tree: the team event (the whole tree at every change,
// as _lembas/event), _lembas/team (the tree now), _lembas/team/transcript
// (a subagent's transcript, read-only, as history), _lembas/team/findings
// (its findings, report and state), _lembas/team/stop (it and its subtree),
// and subagent on an approval card (acp_session.go). Capability agents: an
// agent chat's Subagents {min, max} comes down on session/new and every
// session/prompt, and said (the person's earlier words in the chat, which
// may name a model for subagents) on session/new.

import (
	"encoding/json"
	"strings"
)

// teamLinkCaps are listed in initialize: this build carries both whole.
var teamLinkCaps = []string{"tree", "agents"}

// linkAgents is _meta.lembas.agents.
type linkAgents struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// linkTeamStart is the team's part of a link's session/new.
func linkTeamStart(e *engine, a *linkAgents, said []string) {
	if a == nil && len(said) == 0 {
		return
	}
	t := e.team()
	t.mu.Lock()
	t.said = append(t.said, said...)
	t.mu.Unlock()
}

type linkTeamParams struct {
	SessionID string `json:"sessionId"`
	ID        string `json:"id"` // a subagent's id (s1, …) or name
}

// teamRequest answers the tree's methods.
func (svc *linkService) teamRequest(method string, raw json.RawMessage, lim remoteLimits) (any, error) {
	var p linkTeamParams
	ls, rerr := svc.paramsSession(method, raw, lim, &p, &p.SessionID)
	if rerr != nil {
		return nil, rerr
	}
	e := ls.s.e
	t := e.team()
	if method == "_lembas/team" {
		return map[string]any{"sessionId": ls.s.id, "team": t.tree()}, nil
	}
	t.mu.Lock()
	m := t.findLocked(p.ID)
	t.mu.Unlock()
	if m == nil {
		return nil, rpcErrorf(rpcInvalidParams, "%s", teamRefusal("unknown", "id", cutForError(strings.TrimSpace(p.ID), 64)))
	}
	switch method {
	case "_lembas/team/transcript":
		sess, err := newStore(stateDir(), nil).read(m.run.e.sess.ID)
		if err != nil {
			return nil, rpcErrorf(rpcInternalError, "reading %s's transcript: %v", m.rec.ID, err)
		}
		h := historyOf(sess, nil)
		h["id"] = m.rec.ID
		return h, nil
	case "_lembas/team/findings":
		t.mu.Lock()
		defer t.mu.Unlock()
		return map[string]any{"id": m.rec.ID, "name": m.rec.Name, "state": m.rec.State,
			"findings": append([]string{}, m.rec.Findings...), "report": m.rec.Report}, nil
	}
	t.mu.Lock()
	state := m.rec.State
	t.mu.Unlock()
	if !teamLive(state) {
		return map[string]any{"stopped": []string{}}, nil
	}
	ids := t.stopSubtree(m, "")
	t.emitTree()
	return map[string]any{"stopped": ids}, nil
}

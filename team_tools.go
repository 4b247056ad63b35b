package main

// The eleven team tools (harness/tools/team_*.json), run inside the engine.
// Who is offered which is the tools' data: offered main (team_add,
// team_assign, team_replace, team_stop, team_decide) never reaches a
// subagent, except that a sub-manager is given team_add and team_stop for
// its own part of the tree (team.go dress); offered subagent (team_finish,
// team_request) never reaches the main agent. All require team: while the
// Subagents setting allows the agent alone, a call answers the tools'
// unavailable text and the list stays the same.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

func init() {
	sessionTools["team_add"] = engineTool(toolTeamAdd)
	sessionTools["team_send"] = engineTool(toolTeamSend)
	sessionTools["team_read"] = engineTool(toolTeamRead)
	sessionTools["team_stop"] = engineTool(toolTeamStop)
	sessionTools["team_whoami"] = engineTool(toolTeamWhoami)
	sessionTools["team_finish"] = engineTool(toolTeamFinish)
	sessionTools["team_findings"] = engineTool(toolTeamFindings)
	sessionTools["team_request"] = engineTool(toolTeamRequest)
	sessionTools["team_decide"] = engineTool(toolTeamDecide)
	sessionTools["team_assign"] = engineTool(toolTeamAssign)
	sessionTools["team_replace"] = engineTool(toolTeamReplace)
}

// reach finds a member the calling engine may direct: the main agent any,
// a sub-manager those under it; a plain member only itself and its parent's
// view for reading (read: true).
func (t *teamState) reach(e *engine, idOrName string, read bool) (*teamMember, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.findLocked(idOrName)
	if m == nil {
		return nil, teamRefusal("unknown", "id", strings.TrimSpace(idOrName))
	}
	caller := t.byEngine[e]
	if caller == nil || t.underLocked(m, e) || (read && m == caller) {
		return m, ""
	}
	return nil, teamRefusal("outside", "id", m.rec.ID)
}

func toolTeamAdd(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a addArgs
	json.Unmarshal(raw, &a)
	t := e.team()
	text, _, ok := t.addMember(e, ctx, ts, a)
	return toolResult{Text: text, IsError: !ok}
}

func toolTeamSend(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		To      string `json:"to"`
		Parent  bool   `json:"parent"`
		Message string `json:"message"`
	}
	json.Unmarshal(raw, &a)
	if strings.TrimSpace(a.Message) == "" {
		return errResult(ts.text("empty"))
	}
	t := e.team()
	t.mu.Lock()
	from := t.idOfLocked(e)
	self := t.byEngine[e]
	t.mu.Unlock()
	mark := teamMarkText("message", "from", from, "message", a.Message)
	if a.Parent {
		if self == nil {
			return errResult(ts.text("no_parent"))
		}
		t.mark(self.parent, mark)
		t.mu.Lock()
		to := self.rec.Parent
		t.mu.Unlock()
		return toolResult{Text: ts.text("sent", "to", to)}
	}
	if strings.TrimSpace(a.To) == "" {
		return errResult(ts.text("no_target"))
	}
	m, why := t.reach(e, a.To, false)
	if m == nil {
		// A member may also write to its own parent by id.
		if self != nil && (a.To == self.rec.Parent) {
			t.mark(self.parent, mark)
			return toolResult{Text: ts.text("sent", "to", self.rec.Parent)}
		}
		return errResult(why)
	}
	if t.deliver(m, mark) {
		return toolResult{Text: ts.text("restarted", "to", m.rec.ID)}
	}
	return toolResult{Text: ts.text("sent", "to", m.rec.ID)}
}

func toolTeamRead(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		ID string `json:"id"`
	}
	json.Unmarshal(raw, &a)
	t := e.team()
	if strings.TrimSpace(a.ID) == "" {
		rows := t.rows(e, ts)
		if len(rows) == 0 {
			return toolResult{Text: ts.text("none")}
		}
		return toolResult{Text: strings.Join(rows, "\n")}
	}
	m, why := t.reach(e, a.ID, true)
	if m == nil {
		// Anyone may read its parent's and its siblings' places (not their transcripts).
		return errResult(why)
	}
	return toolResult{Text: t.readOne(m, ts)}
}

// rows are the tree's lines under an engine (all of it for the main agent).
func (t *teamState) rows(e *engine, ts *toolSpec) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var rows []string
	var walk func(p *engine, depth int)
	walk = func(p *engine, depth int) {
		for _, m := range t.members {
			if m.parent != p {
				continue
			}
			pos := m.rec.Position
			if pos == "" {
				pos = "member"
			}
			rows = append(rows, ts.text("row", "indent", strings.Repeat("  ", depth), "id", m.rec.ID, "name", m.rec.Name,
				"position", pos, "state", m.rec.State, "mode", m.rec.Mode, "task", oneLine(m.rec.Task, 80)))
			walk(m.run.e, depth+1)
		}
	}
	top := e
	if self := t.byEngine[e]; self != nil && !self.rec.Lead {
		top = self.parent // a member sees its own part of the team: its siblings
	}
	walk(top, 0)
	return rows
}

// readOne is one member: its place, findings, report and the end of its
// transcript, read from its session on disk (what a kill -9 leaves).
func (t *teamState) readOne(m *teamMember, ts *toolSpec) string {
	t.mu.Lock()
	rec := m.rec
	rec.Findings = append([]string(nil), m.rec.Findings...)
	t.mu.Unlock()
	pos := rec.Position
	if pos == "" {
		pos = "member"
	}
	parts := []string{ts.text("head", "id", rec.ID, "name", rec.Name, "position", pos, "parent", rec.Parent, "state", rec.State,
		"mode", rec.Mode, "model", rec.Model, "task", rec.Task)}
	if len(rec.Findings) > 0 {
		parts = append(parts, ts.text("findings", "findings", numbered(rec.Findings)))
	} else {
		parts = append(parts, ts.text("no_findings"))
	}
	if rec.Report != "" {
		parts = append(parts, ts.text("report", "report", rec.Report))
	}
	if tail := t.transcriptTail(m); tail != "" {
		parts = append(parts, ts.text("transcript", "transcript", tail))
	}
	return strings.Join(parts, "\n\n")
}

// transcriptTail is the last lines of a member's transcript as stored.
func (t *teamState) transcriptTail(m *teamMember) string {
	text := memberTranscript(m.run.e.st, m.run.e.sess.ID)
	if _, body, ok := strings.Cut(text, "\n\n"); ok {
		text = body // its head (session, project, model) is not the transcript
	} else {
		text = ""
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	n := theSpec().Loop.Team.TranscriptTail
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// memberTranscript is a member's transcript as the store has it.
func memberTranscript(st *store, id string) string {
	s, err := st.read(id)
	if err != nil {
		return ""
	}
	var b strings.Builder
	showSession(&b, s)
	return b.String()
}

func numbered(list []string) string {
	var b strings.Builder
	for i, f := range list {
		fmt.Fprintf(&b, "%d. %s\n", i+1, f)
	}
	return strings.TrimRight(b.String(), "\n")
}

func toolTeamStop(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		ID  string `json:"id"`
		Why string `json:"why"`
	}
	json.Unmarshal(raw, &a)
	t := e.team()
	m, why := t.reach(e, a.ID, false)
	if m == nil {
		return errResult(why)
	}
	t.mu.Lock()
	state := m.rec.State
	t.mu.Unlock()
	if !teamLive(state) {
		return errResult(ts.text("already", "id", m.rec.ID, "state", state))
	}
	ids := t.stopSubtree(m, a.Why)
	t.emitTree()
	return toolResult{Text: ts.text("stopped", "ids", strings.Join(ids, ", "))}
}

func toolTeamWhoami(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	t := e.team()
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.byEngine[e]
	if m == nil {
		return toolResult{Text: ts.text("main", "mode", e.perm.mode(), "model", e.ref.String(), "size", t.sizeLocked(), "max", t.max)}
	}
	req := strings.Join(m.rec.Request, ", ")
	if req == "" {
		req = ts.text("no_request")
	}
	lead := ""
	if m.rec.Lead {
		lead = ts.text("lead")
	}
	pos := m.rec.Position
	if pos == "" {
		pos = "member"
	}
	return toolResult{Text: ts.text("member", "id", m.rec.ID, "name", m.rec.Name, "position", pos, "lead", lead, "parent", m.rec.Parent,
		"mode", e.perm.mode(), "request", req, "model", m.rec.Model, "task", m.rec.Task)}
}

func toolTeamFinish(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Report string `json:"report"`
	}
	json.Unmarshal(raw, &a)
	t := e.team()
	t.mu.Lock()
	m := t.byEngine[e]
	if m == nil {
		t.mu.Unlock()
		return errResult(ts.text("empty"))
	}
	if strings.TrimSpace(a.Report) == "" {
		t.mu.Unlock()
		return errResult(ts.text("empty"))
	}
	if live := t.liveUnderLocked(e); len(live) > 0 {
		t.mu.Unlock()
		return errResult(ts.text("members_working", "ids", strings.Join(live, ", ")))
	}
	m.finishing = true
	m.rec.Report = strings.TrimSpace(a.Report)
	parent := m.rec.Parent
	t.mu.Unlock()
	if err := t.save(m); err != nil {
		// The report stays in memory and reaches the parent at the end;
		// the model hears its record is not on disk.
		return toolResult{Text: ts.text("done", "parent", parent) + "\n" + teamText("not_saved", "error", err)}
	}
	return toolResult{Text: ts.text("done", "parent", parent)}
}

func toolTeamFindings(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Add string `json:"add"`
		ID  string `json:"id"`
	}
	json.Unmarshal(raw, &a)
	t := e.team()
	if add := strings.TrimSpace(a.Add); add != "" {
		m := t.member(e)
		if m == nil {
			return errResult(ts.text("main_add"))
		}
		t.mu.Lock()
		m.rec.Findings = append(m.rec.Findings, add)
		n := len(m.rec.Findings)
		t.mu.Unlock()
		err := t.save(m) // on disk before the model hears it is saved
		t.emitTree()
		if err != nil {
			return errResult(teamText("not_saved", "error", err))
		}
		return toolResult{Text: ts.text("saved", "n", n)}
	}
	if strings.TrimSpace(a.ID) == "" {
		return errResult(ts.text("say"))
	}
	m, why := t.reach(e, a.ID, true)
	if m == nil {
		return errResult(why)
	}
	t.mu.Lock()
	list := append([]string(nil), m.rec.Findings...)
	t.mu.Unlock()
	if len(list) == 0 {
		return toolResult{Text: ts.text("none", "id", m.rec.ID)}
	}
	return toolResult{Text: ts.text("list", "id", m.rec.ID, "findings", numbered(list))}
}

func toolTeamAssign(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		ID   string `json:"id"`
		Task string `json:"task"`
	}
	json.Unmarshal(raw, &a)
	if strings.TrimSpace(a.Task) == "" {
		return errResult(teamRefusal("empty_task"))
	}
	t := e.team()
	m, why := t.reach(e, a.ID, false)
	if m == nil {
		return errResult(why)
	}
	t.mu.Lock()
	m.rec.Task = strings.TrimSpace(a.Task)
	from := t.idOfLocked(e)
	t.mu.Unlock()
	if t.deliver(m, teamMarkText("task", "from", from, "task", a.Task)) {
		return toolResult{Text: ts.text("restarted", "id", m.rec.ID)}
	}
	t.note(m)
	t.emitTree()
	return toolResult{Text: ts.text("assigned", "id", m.rec.ID)}
}

func toolTeamReplace(e *engine, ctx context.Context, ts *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		ID    string `json:"id"`
		Task  string `json:"task"`
		Name  string `json:"name"`
		Model string `json:"model"`
	}
	json.Unmarshal(raw, &a)
	t := e.team()
	old, why := t.reach(e, a.ID, false)
	if old == nil {
		return errResult(why)
	}
	t.stopSubtree(old, "replaced")
	t.mu.Lock()
	rec := old.rec
	findings := append([]string(nil), old.rec.Findings...)
	parent := old.parent
	t.mu.Unlock()
	task := strings.TrimSpace(a.Task)
	if task == "" {
		task = rec.Task
	}
	if len(findings) > 0 {
		task += "\n\n" + ts.text("findings_head", "old", rec.ID, "findings", numbered(findings))
	}
	name := strings.TrimSpace(a.Name)
	if name == "" {
		name = rec.Name
	}
	parentID := ""
	if pm := t.member(parent); pm != nil {
		parentID = pm.rec.ID
	}
	req := append(append([]string(nil), rec.Request...), rec.Granted...)
	mode := rec.Mode
	if !modeNoWider(mode, parent.perm.mode()) {
		mode = ""
	}
	text, m, ok := t.addMember(e, ctx, theSpec().Tools["team_add"], addArgs{Name: name, Position: rec.Position, Task: task,
		Parent: parentID, Lead: rec.Lead, Mode: mode, Request: req, Model: a.Model})
	if !ok {
		return errResult(text)
	}
	return toolResult{Text: ts.text("replaced", "old", rec.ID, "id", m.rec.ID, "name", m.rec.Name) + "\n" + text}
}

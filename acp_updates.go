package main

// The engine's events as ACP session updates: text and reasoning as
// message and thought chunks; each tool call as tool_call (pending) →
// tool_call_update (in_progress) → tool_call_update (completed or failed)
// with its output as text, or for an edit the diff of every file it
// changed; notices as notice updates for a client that takes them. A
// stored conversation is replayed in the same shapes for session/load.

import (
	"encoding/json"
	"sort"
	"strings"
)

// acpTool is what the client was told of one call.
type acpTool struct {
	info   map[string]any
	block  string
	paths  []string
	before map[string]*string // an edit's files before it ran (nil: absent)
}

// onEvent is the session's engine's emit.
func (s *acpSession) onEvent(ev event) {
	if ev.Type == evJob {
		s.jobUpdate(ev) // acp_jobs.go: a job outlives its turn
		return
	}
	if ev.Type == evTeam {
		s.a.mu.Lock()
		ok := s.a.team
		s.a.mu.Unlock()
		if ok && ev.Team != nil { // the tree, as stream-json and the link carry it (team.go)
			s.update(map[string]any{"sessionUpdate": "team", "_meta": map[string]any{"lembas": map[string]any{"team": ev.Team}}})
		}
		return
	}
	if ev.Agent != "" {
		return // a subagent's own stream: plain ACP shows one conversation
	}
	s.mu.Lock()
	active := s.active
	s.mu.Unlock()
	if !active {
		return // no update for a turn after its prompt's answer
	}
	switch ev.Type {
	case evText:
		s.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": textBlock(ev.Text)})
	case evReasoning:
		s.update(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": textBlock(ev.Text)})
	case evToolStart:
		s.toolStart(ev.Tool)
	case evToolEnd:
		s.toolEnd(ev.Tool)
	case evToolOutput:
		// A running command's latest output: ACP replaces a call's content
		// with each update, so the editor shows the tail as it grows.
		s.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": ev.Tool.ID, "status": "in_progress",
			"content": []map[string]any{{"type": "content", "content": textBlock(ev.Text)}}})
	case evPlan:
		if ev.Plan != nil {
			s.update(planUpdate(ev.Plan))
		}
	case evNotice, evRetry:
		s.notice(ev)
	}
}

//go:noinline
func textBlock(s string) map[string]string { return map[string]string{"type": "text", "text": s} }

// announce tells the client of a call once (tool_call, pending) and
// returns what it was told.
func (s *acpSession) announce(id, name string, args json.RawMessage) map[string]any {
	s.mu.Lock()
	if t, ok := s.tools[id]; ok {
		s.mu.Unlock()
		return t.info
	}
	info, block, paths := toolCallInfo(s.root, id, name, args)
	s.tools[id] = &acpTool{info: info, block: block, paths: paths}
	s.mu.Unlock()
	u := map[string]any{"sessionUpdate": "tool_call", "status": "pending"}
	for k, v := range info {
		u[k] = v
	}
	s.update(u)
	return info
}

func (s *acpSession) tool(id string) *acpTool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools[id]
}

// toolStart marks a call in progress; for an edit it first keeps the
// files as they are, for the diff at its end.
func (s *acpSession) toolStart(te *toolEvent) {
	s.announce(te.ID, te.Name, json.RawMessage(te.Input))
	t := s.tool(te.ID)
	if t.block == "edit" && t.before == nil {
		before := map[string]*string{}
		for _, p := range t.paths {
			if data, err := s.e.tb.files().readFile(p); err == nil && len(data) <= s.a.sp.DiffMaxBytes {
				txt := string(data)
				before[p] = &txt
			} else {
				before[p] = nil
			}
		}
		s.mu.Lock()
		t.before = before
		s.mu.Unlock()
	}
	s.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": te.ID, "status": "in_progress"})
}

// toolEnd reports how a call ended: a diff per changed file for an edit
// that completed, else its output as text.
func (s *acpSession) toolEnd(te *toolEvent) {
	s.announce(te.ID, te.Name, json.RawMessage(te.Input))
	t := s.tool(te.ID)
	status := "failed"
	if te.Status == "completed" {
		status = "completed"
	}
	var content []map[string]any
	if status == "completed" && t.block == "edit" {
		content = s.diffs(t)
	}
	if len(content) == 0 && te.Output != "" {
		content = []map[string]any{{"type": "content", "content": textBlock(te.Output)}}
	}
	u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": te.ID, "status": status,
		"_meta": map[string]any{"lembas": map[string]string{"status": te.Status, "result_id": te.ResultID}}}
	if content != nil {
		u["content"] = content
	}
	s.update(u)
	s.mu.Lock()
	delete(s.tools, te.ID) // some servers use one id again in a later step
	s.mu.Unlock()
}

// diffs compares an edit's files now with before; a file too big to
// diff, or unchanged, is left out.
func (s *acpSession) diffs(t *acpTool) []map[string]any {
	var out []map[string]any
	for _, p := range t.paths {
		old, known := t.before[p]
		if !known {
			continue
		}
		now, err := s.e.tb.files().readFile(p)
		if err != nil {
			now = nil // deleted
		}
		if len(now) > s.a.sp.DiffMaxBytes || (old != nil && *old == string(now)) {
			continue
		}
		d := map[string]any{"type": "diff", "path": p, "newText": string(now), "oldText": nil}
		if old != nil {
			d["oldText"] = *old
		}
		out = append(out, d)
	}
	return out
}

// notice shows a notice to a client that said it takes them, and logs it
// otherwise (stdout carries only protocol messages).
func (s *acpSession) notice(ev event) {
	s.a.mu.Lock()
	ok := s.a.notices
	s.a.mu.Unlock()
	if !ok {
		s.a.log(ev.Text)
		return
	}
	sev := "info"
	if ev.Type == evRetry {
		sev = "warning"
	}
	s.update(map[string]any{"sessionUpdate": "notice", "severity": sev, "title": ev.Text})
}

// toolCallInfo describes a call for an editor: its kind (from the tool's
// block, acp.json's kinds), a title, the raw input, and the files it
// touches as locations. It returns the block and the absolute paths too.
func toolCallInfo(root, id, name string, args json.RawMessage) (map[string]any, string, []string) {
	sp := theACPSpec()
	block := "other"
	if t := theSpec().Tools[name]; t != nil {
		block = t.Block
	}
	kind := sp.Kinds[block]
	if kind == "" {
		kind = "other"
	}
	var a map[string]any
	var raw any
	if json.Unmarshal(args, &a) == nil && a != nil {
		raw = a
	} else if json.Unmarshal(args, &raw) != nil {
		raw = string(args)
	}
	vars := []any{"tool", name}
	var paths []string
	line := 0
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := a[k].(string); ok {
			vars = append(vars, k, oneLine(v, 120))
		}
	}
	switch name {
	case "bash":
	case "apply_patch":
		in, _ := a["input"].(string)
		for _, p := range patchPaths(in) {
			abs, _ := resolvePath(root, p)
			paths = append(paths, abs)
		}
	default:
		if p, ok := a["path"].(string); ok && p != "" {
			abs, _ := resolvePath(root, p)
			paths = append(paths, abs)
		}
		if off, ok := a["offset"].(float64); ok && name == "read" {
			line = int(off)
		}
	}
	var rel []string
	for _, p := range paths {
		rel = append(rel, relPath(root, p))
	}
	vars = append(vars, "paths", strings.Join(rel, ", "))
	tmpl, ok := sp.Titles[name]
	if !ok {
		tmpl = sp.Titles["default"]
	}
	title := fillPairs(tmpl, vars...)
	if reVar.MatchString(title) {
		title = fillPairs(sp.Titles["default"], vars...)
	}
	locs := []map[string]any{}
	for _, p := range paths {
		l := map[string]any{"path": p}
		if line > 0 {
			l["line"] = line
		}
		locs = append(locs, l)
	}
	info := map[string]any{"toolCallId": id, "title": title, "kind": kind, "rawInput": raw, "locations": locs}
	return info, block, paths
}

// replay sends a stored conversation as the updates it was made of, for
// session/load: the person's prompts, the answers and reasoning, and each
// call with how it ended.
func (s *acpSession) replay() {
	results := map[string]message{}
	for _, m := range s.e.sess.Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m
		}
	}
	for _, m := range s.e.sess.Messages {
		switch m.Role {
		case "user":
			if m.Kind == "prompt" {
				s.update(map[string]any{"sessionUpdate": "user_message_chunk", "content": textBlock(m.Content)})
			}
		case "assistant":
			if m.Reasoning != "" {
				s.update(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": textBlock(m.Reasoning)})
			}
			if m.Content != "" {
				s.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": textBlock(m.Content)})
			}
			for _, c := range m.ToolCalls {
				info, _, _ := toolCallInfo(s.root, c.ID, c.Function.Name, json.RawMessage(c.Function.Arguments))
				u := map[string]any{"sessionUpdate": "tool_call", "status": "failed"}
				for k, v := range info {
					u[k] = v
				}
				if r, ok := results[c.ID]; ok {
					if r.Status == "" || r.Status == "completed" {
						u["status"] = "completed"
					}
					u["content"] = []map[string]any{{"type": "content", "content": textBlock(r.Content)}}
				}
				s.update(u)
			}
		}
	}
}

// acpPlanStatus maps a task's status to an ACP plan entry's; every task is
// listed, a dropped one as completed, ACP having no word for it (acp.md).
var acpPlanStatus = map[string]string{"todo": "pending", "doing": "in_progress", "done": "completed", "dropped": "completed"}

// planUpdate is the plan session update: flat entries for an editor, the
// structure itself in _meta.lembas.plan.
func planUpdate(p *plan) map[string]any {
	entries := []map[string]any{}
	for _, ph := range p.Phases {
		for _, t := range ph.Tasks {
			st, ok := acpPlanStatus[t.Status]
			if !ok {
				continue
			}
			entries = append(entries, map[string]any{"content": t.Text, "priority": "medium", "status": st})
		}
	}
	return map[string]any{"sessionUpdate": "plan", "entries": entries, "_meta": map[string]any{"lembas": map[string]any{"plan": planWire(p)}}}
}

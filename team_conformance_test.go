package main

// Conformance runners for team (the tree, its tools, size, slots, marks and
// ends) and delegation (permissions inherited and never widened, request
// options, the main agent's decisions, the person's cards). Each case is a
// list of steps run on a real tree of engines in a temp project: tool calls
// go through the engine's own runCalls (requirements, the manager refusal,
// permissions), so what a case sees is what a model would. A member's loop
// is not run (no model): a step ends it as its loop would.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

func init() {
	conformanceRunners["team"] = runTeamCase
	conformanceRunners["delegation"] = runTeamCase
}

// teamPerson is the person: every card is denied and recorded.
type teamPerson struct {
	mu    sync.Mutex
	cards []string
}

func (r *teamPerson) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	who := req.Agent
	if who == "" {
		who = "main"
	}
	r.cards = append(r.cards, who+" asks for "+req.Tool)
	return approvalAnswer{Choice: "deny"}
}

type teamStep struct {
	As       string          `json:"as"` // main, or a member's id
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	End      string          `json:"end"`   // a member's id: its loop ends
	State    string          `json:"state"` // as what (finished, out_of_context, failed)
	Report   string          `json:"report"`
	Marks    string          `json:"marks"` // main or an id: the marks waiting for it, taken
	Task     string          `json:"task"`  // "start": a task subagent runs in the tree; "done": it ends (task_done)
	Set      *[2]int         `json:"set"`   // the Subagents setting (Min, Max) changes
	Tools    string          `json:"tools"` // main or an id: the team tools it is offered
	Mode     string          `json:"mode"`  // with as: that agent's mode now
	System   string          `json:"system"`
	Contains string          `json:"contains"`
}

func runTeamCase(input json.RawMessage) (any, error) {
	var in struct {
		Mode     string     `json:"mode"`
		Parallel int        `json:"parallel"`
		Setting  [2]int     `json:"setting"`
		Steps    []teamStep `json:"steps"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lembas-team")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	root := dir
	st := newStore(dir+"/state", nil)
	defer st.close()
	sess, err := st.create(root)
	if err != nil {
		return nil, err
	}
	held := map[string]bool{"team": true}
	tb, err := newToolboxFor(root, false, held)
	if err != nil {
		return nil, err
	}
	mode := in.Mode
	if mode == "" {
		mode = "edit"
	}
	perm := newPermissions(mode, root, false)
	ref := newModelRef(&connection{Name: "local", BaseURL: "http://127.0.0.1:9/v1"}, "mock")
	ref.Meta.Parallel = in.Parallel
	e := newEngine(ref, tb, perm, st, sess, 20)
	person := &teamPerson{}
	e.ask = person
	t := e.team()
	t.run = func(t *teamState, m *teamMember) { t.mu.Lock(); m.running = false; t.mu.Unlock() }
	defer e.stopJobs()
	t.mu.Lock()
	t.min, t.max = in.Setting[0], in.Setting[1]
	t.mu.Unlock()
	engineOf := func(id string) (*engine, error) {
		if id == "" || id == "main" {
			return e, nil
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if m := t.findLocked(id); m != nil {
			return m.run.e, nil
		}
		return nil, fmt.Errorf("no agent %s", id)
	}
	var taskJob *job
	var out []string
	for i, s := range in.Steps {
		switch {
		case s.Tool != "":
			ag, err := engineOf(s.As)
			if err != nil {
				return nil, err
			}
			args := string(s.Args)
			if args == "" {
				args = "{}"
			}
			c := toolCall{ID: fmt.Sprintf("c%d", i), Type: "function"}
			c.Function.Name, c.Function.Arguments = s.Tool, args
			if _, err := ag.runCalls(context.Background(), []toolCall{c}); err != nil {
				return nil, err
			}
			msg := ag.sess.Messages[len(ag.sess.Messages)-1]
			text := msg.Content
			if k := strings.IndexByte(text, '\n'); k >= 0 && strings.HasPrefix(text, "[#") {
				text = text[k+1:]
			}
			out = append(out, s.As+" "+s.Tool+": "+strings.TrimSpace(text))
		case s.End != "":
			t.mu.Lock()
			m := t.findLocked(s.End)
			if m == nil {
				t.mu.Unlock()
				return nil, fmt.Errorf("no member %s", s.End)
			}
			if m.rec.State == "working" || m.rec.State == "waiting" {
				m.rec.State = s.State
				if s.Report != "" && m.rec.Report == "" {
					m.rec.Report = s.Report
				}
			}
			t.mu.Unlock()
			t.end(m)
			out = append(out, "end "+s.End)
		case s.Marks != "":
			ag, err := engineOf(s.Marks)
			if err != nil {
				return nil, err
			}
			ag.jx.mu.Lock()
			marks := ag.jx.marks
			ag.jx.marks = nil
			ag.jx.mu.Unlock()
			out = append(out, "marks "+s.Marks+": "+strings.Join(marks, " | "))
		case s.Task == "start":
			j, err := e.jobs().add("subagent", "a task", e)
			if err != nil {
				return nil, err
			}
			j.sub = &subagentRun{e: &engine{toolHost: toolHost{ref: ref}}, job: j}
			taskJob = j
			out = append(out, "task started")
		case s.Task == "done":
			taskJob.finish("done", 0, false)
			out = append(out, "task_done")
		case s.Set != nil:
			e.setTeamRange(s.Set[0], s.Set[1])
			out = append(out, fmt.Sprintf("set %d %d", s.Set[0], s.Set[1]))
		case s.Tools != "":
			ag, err := engineOf(s.Tools)
			if err != nil {
				return nil, err
			}
			var names []string
			for _, x := range ag.tb.tools {
				if strings.HasPrefix(x.Name, "team_") {
					names = append(names, x.Name)
				}
			}
			out = append(out, "tools "+s.Tools+": "+strings.Join(names, " "))
		case s.Mode != "":
			ag, err := engineOf(s.Mode)
			if err != nil {
				return nil, err
			}
			out = append(out, "mode "+s.Mode+": "+ag.perm.mode())
		case s.System != "":
			ag, err := engineOf(s.System)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("system %s has %q: %v", s.System, s.Contains, strings.Contains(ag.sess.System, s.Contains)))
		}
	}
	var tree []string
	for _, n := range t.tree().Agents[1:] {
		lead := ""
		if n.Lead {
			lead = " lead"
		}
		tree = append(tree, fmt.Sprintf("%s %s under %s: %s %s%s", n.ID, n.Name, n.Parent, n.State, n.Mode, lead))
	}
	person.mu.Lock()
	cards := person.cards
	person.mu.Unlock()
	return map[string]any{"steps": out, "tree": tree, "cards": cards}, nil
}

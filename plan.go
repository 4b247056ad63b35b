package main

// The plan (context.md §6): one structure per session — title, summary,
// findings, objectives, phases of tasks with a status each — kept in the
// store. Ids are given here, never by the model. The model changes it with
// plan_write and plan_update and sees every change in their results; a
// change by the person reaches it as a session note; the system prompt has
// it only as it was when the prompt was made. plan_submit, in plan mode,
// puts it to the person for approval.
//
// The session floor (4): its record is plan_record.go (the ground), so the
// store and the events carry it without reaching up.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

var planStatuses = map[string]string{"todo": "[ ]", "doing": "[~]", "done": "[x]", "dropped": "[-]"}

// todoStatuses maps the former todo tool's statuses to the plan's.
var todoStatuses = map[string]string{"pending": "todo", "in_progress": "doing", "completed": "done", "cancelled": "dropped"}

// planReview is what the person is shown to approve.
type planReview struct {
	Plan     *plan  `json:"plan"`
	Markdown string `json:"markdown"`
	Note     string `json:"note,omitempty"`
	Path     string `json:"path,omitempty"` // the plan file written for the record, relative to the project; "" none
}

// planAnswer is the person's decision on a submitted plan.
type planAnswer struct {
	Choice   string `json:"choice"`             // approve, revise, dismissed
	Mode     string `json:"mode,omitempty"`     // approve: edit or manual
	Feedback string `json:"feedback,omitempty"` // revise
}

// planReviewer is answered by the REPL, ACP, the link — like the approver.
type planReviewer interface {
	reviewPlan(ctx context.Context, r planReview) planAnswer
}

func init() {
	sessionTools["plan_write"] = engineTool(toolPlanWrite)
	sessionTools["plan_update"] = engineTool(toolPlanUpdate)
	sessionTools["plan_submit"] = engineTool(toolPlanSubmit)
	for _, a := range []string{"todo", "todo_write", "TodoWrite"} {
		argConverters[a] = convertTodo
	}
}

// convertTodo turns the former todo tool's arguments — todos[] with
// content and status — into plan_write's: one phase called "Work", the
// statuses mapped. Arguments already in plan_write's shape pass through.
func convertTodo(raw json.RawMessage) json.RawMessage {
	var a struct {
		Todos []struct {
			Content string `json:"content"`
			Text    string `json:"text"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(raw, &a) != nil || a.Todos == nil {
		return raw
	}
	var tasks []map[string]string
	for _, td := range a.Todos {
		text := td.Content
		if text == "" {
			text = td.Text
		}
		st := td.Status
		if m, ok := todoStatuses[st]; ok {
			st = m
		}
		if st == "" {
			st = "todo"
		}
		tasks = append(tasks, map[string]string{"text": text, "status": st})
	}
	out, _ := json.Marshal(map[string]any{"phases": []any{map[string]any{
		"title": theSpec().Tools["plan_write"].text("work_phase"), "tasks": tasks}}})
	return out
}

// writePlan builds the new plan from plan_write's arguments on top of the
// old one: a phase with the same title and a task with the same text keep
// their ids, everything else gets the next one.
func writePlan(old *plan, raw json.RawMessage) (*plan, string) {
	t := theSpec().Tools["plan_write"]
	var a struct {
		Title      string   `json:"title"`
		Summary    string   `json:"summary"`
		Findings   []string `json:"findings"`
		Objectives []string `json:"objectives"`
		Phases     []struct {
			Title string `json:"title"`
			Tasks []struct {
				Text   string `json:"text"`
				Status string `json:"status"`
			} `json:"tasks"`
		} `json:"phases"`
	}
	json.Unmarshal(raw, &a)
	p := &plan{Title: a.Title, Summary: a.Summary, Findings: a.Findings, Objectives: a.Objectives, NextPhase: 1, NextTask: 1}
	phaseIDs, taskIDs := map[string][]string{}, map[string][]string{}
	if old != nil {
		p.NextPhase, p.NextTask = old.NextPhase, old.NextTask
		for _, ph := range old.Phases {
			phaseIDs[ph.Title] = append(phaseIDs[ph.Title], ph.ID)
			for _, tk := range ph.Tasks {
				taskIDs[tk.Text] = append(taskIDs[tk.Text], tk.ID)
			}
		}
	}
	take := func(m map[string][]string, key string, next *int, prefix string) string {
		if ids := m[key]; len(ids) > 0 {
			m[key] = ids[1:]
			return ids[0]
		}
		id := fmt.Sprintf("%s%d", prefix, *next)
		*next++
		return id
	}
	count := 0
	for _, ph := range a.Phases {
		np := planPhase{ID: take(phaseIDs, ph.Title, &p.NextPhase, "p"), Title: ph.Title, Tasks: []planTask{}}
		for _, tk := range ph.Tasks {
			st := tk.Status
			if st == "" {
				st = "todo"
			}
			if _, ok := planStatuses[st]; !ok {
				return nil, t.text("bad_status", "status", st)
			}
			np.Tasks = append(np.Tasks, planTask{ID: take(taskIDs, tk.Text, &p.NextTask, "t"), Text: tk.Text, Status: st})
			count++
		}
		p.Phases = append(p.Phases, np)
	}
	if count == 0 && p.Title == "" {
		return nil, t.text("empty")
	}
	if max := t.limit("max_tasks"); count > max {
		return nil, t.text("too_many", "max", max, "count", count)
	}
	if p.Phases == nil {
		p.Phases = []planPhase{}
	}
	return p, ""
}

func toolPlanWrite(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	p, msg := writePlan(e.sess.Plan, raw)
	if msg != "" {
		return errResult(msg)
	}
	e.setPlan(p)
	return toolResult{Text: t.text("written", "plan", renderPlan(p))}
}

// updatePlan applies plan_update's arguments to a copy of the plan.
func updatePlan(old *plan, raw json.RawMessage) (*plan, string) {
	t := theSpec().Tools["plan_update"]
	if old == nil {
		return nil, t.text("none")
	}
	var a struct {
		Tasks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Text   string `json:"text"`
		} `json:"tasks"`
		Add []struct {
			Phase  string `json:"phase"`
			Text   string `json:"text"`
			Status string `json:"status"`
		} `json:"add"`
		Findings []string `json:"findings"`
	}
	json.Unmarshal(raw, &a)
	if len(a.Tasks) == 0 && len(a.Add) == 0 && len(a.Findings) == 0 {
		return nil, t.text("nothing")
	}
	p := clonePlan(old)
	for _, u := range a.Tasks {
		tk := p.task(u.ID)
		if tk == nil {
			return nil, t.text("unknown", "id", u.ID, "ids", strings.Join(p.ids(), ", "))
		}
		if u.Status != "" {
			if _, ok := planStatuses[u.Status]; !ok {
				return nil, t.text("bad_status", "status", u.Status)
			}
			tk.Status = u.Status
		}
		if u.Text != "" {
			tk.Text = u.Text
		}
	}
	for _, ad := range a.Add {
		var ph *planPhase
		for i := range p.Phases {
			if p.Phases[i].ID == ad.Phase || p.Phases[i].Title == ad.Phase {
				ph = &p.Phases[i]
			}
		}
		if ph == nil {
			var ids []string
			for _, x := range p.Phases {
				ids = append(ids, x.ID)
			}
			return nil, t.text("no_phase", "phase", ad.Phase, "ids", strings.Join(ids, ", "))
		}
		st := ad.Status
		if st == "" {
			st = "todo"
		}
		if _, ok := planStatuses[st]; !ok {
			return nil, t.text("bad_status", "status", st)
		}
		ph.Tasks = append(ph.Tasks, planTask{ID: fmt.Sprintf("t%d", p.NextTask), Text: ad.Text, Status: st})
		p.NextTask++
	}
	p.Findings = append(p.Findings, a.Findings...)
	return p, ""
}

func toolPlanUpdate(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	p, msg := updatePlan(e.sess.Plan, raw)
	if msg != "" {
		return errResult(msg)
	}
	e.setPlan(p)
	return toolResult{Text: t.text("updated", "plan", renderPlan(p))}
}

// toolPlanSubmit puts the plan to the person (plan mode only: the engine
// answered the unavailable text otherwise).
func toolPlanSubmit(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Note string `json:"note"`
	}
	json.Unmarshal(raw, &a)
	if e.sess.Plan == nil {
		return errResult(t.text("none"))
	}
	if nobodyToAsk(e.planner) {
		return errResult(nobodyText(e.planner, t))
	}
	rv := planReview{Plan: clonePlan(e.sess.Plan), Markdown: renderPlan(e.sess.Plan), Note: a.Note}
	rv.Path = writePlanFile(e.perm.root, fillPairs(t.Texts["file"], "session", e.sess.ID), rv.Markdown)
	ans := e.planner.reviewPlan(ctx, rv)
	switch ans.Choice {
	case "approve":
		mode := ans.Mode
		if mode != "manual" {
			mode = "edit"
		}
		e.setMode(mode)
		e.sess.NoteMode = mode // told here, in the result
		return toolResult{Text: t.text("approved", "mode", mode)}
	case "revise":
		if strings.TrimSpace(ans.Feedback) == "" {
			return toolResult{Text: t.text("revise_plain")}
		}
		return toolResult{Text: t.text("revise", "feedback", ans.Feedback)}
	}
	return toolResult{Text: t.text("dismissed")}
}

// writePlanFile writes the submitted plan as markdown for the record (acp.md
// _lembas/plan's path): rel under the project, rewritten at each submit.
// It answers rel, or "" when it could not be written (the card goes
// without a path; the plan itself is in the session).
func writePlanFile(root, rel, markdown string) string {
	if root == "" || rel == "" {
		return ""
	}
	abs := filepath.Join(root, filepath.FromSlash(rel))
	if os.MkdirAll(filepath.Dir(abs), 0o755) != nil || writeFileAtomic(abs, []byte(markdown+"\n"), 0o644) != nil {
		return ""
	}
	return rel
}

// planWire is the plan as the link and ACP carry it (_meta.lembas.plan,
// _lembas/plan, status): the seed's shape — version, title, summary,
// findings, objectives, phases with their tasks, and steps (every task in
// order, with its phase: what a client without phases draws) — and never
// the record's own counters. nil is null.
func planWire(p *plan) any {
	if p == nil {
		return nil
	}
	phases := []map[string]any{}
	steps := []map[string]any{}
	for _, ph := range p.Phases {
		tasks := []map[string]any{}
		for _, t := range ph.Tasks {
			tasks = append(tasks, map[string]any{"id": t.ID, "text": t.Text, "status": t.Status})
			steps = append(steps, map[string]any{"id": t.ID, "phase": ph.ID, "text": t.Text, "status": t.Status})
		}
		phases = append(phases, map[string]any{"id": ph.ID, "title": ph.Title, "tasks": tasks})
	}
	orEmpty := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return map[string]any{"version": p.Version, "title": p.Title, "summary": p.Summary, "findings": orEmpty(p.Findings),
		"objectives": orEmpty(p.Objectives), "phases": phases, "steps": steps}
}

// setPlan stores the model's change of the plan and tells the front ends.
// Each change is a version of its own, so a client can tell a newer plan
// from an older one that arrives late.
func (e *engine) setPlan(p *plan) {
	if p != nil {
		v := 0
		if e.sess.Plan != nil {
			v = e.sess.Plan.Version
		}
		p.Version = v + 1
	}
	e.sess.Plan = p
	e.send(event{Type: evPlan, Plan: clonePlan(p)})
}

// personPlan is a change of the plan by the person (the REPL, a client):
// the model hears of it in a session note on the next user message.
func (e *engine) personPlan(p *plan) error {
	nt := theSpec().Loop.Context.Note
	if p == nil {
		e.sess.Notes = append(e.sess.Notes, nt["plan_cleared"])
	} else {
		e.sess.Notes = append(e.sess.Notes, fillPairs(nt["plan"], "plan", renderPlan(p)))
	}
	e.setPlan(p)
	return e.st.save(e.sess)
}

func clonePlan(p *plan) *plan {
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p)
	var c plan
	json.Unmarshal(b, &c)
	return &c
}

func (p *plan) task(id string) *planTask {
	for i := range p.Phases {
		for j := range p.Phases[i].Tasks {
			if p.Phases[i].Tasks[j].ID == id {
				return &p.Phases[i].Tasks[j]
			}
		}
	}
	return nil
}

func (p *plan) ids() []string {
	var ids []string
	for _, ph := range p.Phases {
		for _, tk := range ph.Tasks {
			ids = append(ids, tk.ID)
		}
	}
	return ids
}

// renderPlan writes the plan as markdown: what the model reads in the
// tools' results and notes, and what a front end shows in full.
func renderPlan(p *plan) string {
	if p == nil {
		return ""
	}
	t := theSpec().Tools["plan_write"]
	var b strings.Builder
	title := p.Title
	if title == "" {
		title = t.text("untitled")
	}
	b.WriteString("# " + title + "\n")
	if p.Summary != "" {
		b.WriteString("\n" + p.Summary + "\n")
	}
	list := func(head string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n## " + head + "\n")
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
	}
	list(t.text("md_findings"), p.Findings)
	list(t.text("md_objectives"), p.Objectives)
	for _, ph := range p.Phases {
		b.WriteString("\n## " + t.text("md_phase", "id", ph.ID, "title", ph.Title) + "\n")
		for _, tk := range ph.Tasks {
			b.WriteString("- " + planStatuses[tk.Status] + " " + tk.ID + " " + tk.Text + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// renderPlanCompact is the form the REPL shows above its prompt: a head
// line, then one line per task.
func renderPlanCompact(p *plan) string {
	if p == nil {
		return ""
	}
	t := theSpec().Tools["plan_write"]
	done, total := 0, 0
	var lines []string
	for _, ph := range p.Phases {
		for _, tk := range ph.Tasks {
			total++
			if tk.Status == "done" {
				done++
			}
			lines = append(lines, planStatuses[tk.Status]+" "+tk.ID+" "+tk.Text)
		}
	}
	title := p.Title
	if title == "" {
		title = t.text("untitled")
	}
	return strings.Join(append([]string{t.text("compact_head", "title", title, "done", done, "total", total)}, lines...), "\n")
}

// planContext is {{plan_context}}: the plan when the system prompt is
// made, or nothing.
func planContext(p *plan) string {
	if p == nil {
		return ""
	}
	return theSpec().Tools["plan_write"].text("context", "plan", renderPlan(p))
}

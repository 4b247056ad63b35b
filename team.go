package main

// The team (harness/team.md, harness/subagents.md §5–§13): the main agent
// of a session directs a tree of subagents. Each member is a subagent
// (subagents.go) — a fresh conversation with a transcript of its own —
// with a place in the tree: an id (s1, s2, …), a name, a position, a
// parent (the main agent, or a sub-manager: a member with lead: true), a
// task, a mode no wider than its parent's, and a model.
//
//	team_add ──► size and model checks ──► member (waiting | working)
//	                                          │ its loop (teamMember.loop)
//	           slot frees ◄── ends ◄──────────┤ team_finish / its turn ends / stopped / out of context
//	                           │              └ one final turn to save findings, then out_of_context
//	                           └──► <team-report> mark to its parent; the tree event to the front ends
//
// A manager whose reply ends while members under it work waits for their
// reports in the same turn (teamHold, called by the engine), so a sub-
// manager reports only once its part is done, and -p returns once the
// whole tree has. What a member leaves (its place, state, findings and
// report) is kept in its transcript's session (session.Team), saved at
// every change: a kill -9 loses none of it.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// teamState is a session's team, kept by its job manager (shared by the
// whole tree, reset with it by /new).
type teamState struct {
	mu       mutex
	root     *engine
	seq      int // s-ids
	rseq     int // r-ids of requests
	members  []*teamMember
	byEngine map[*engine]*teamMember
	requests []*teamRequest
	min, max int
	said     []string      // the person's earlier words in an agent chat (the link's said)
	changed  chan struct{} // closed and replaced at every change (teamHold waits on it)
	// run starts a member's loop; nil is `go m.loop(t)` (a conformance
	// case leaves the loop to its steps and sets its own).
	run     func(t *teamState, m *teamMember)
	saidErr string // the last save fault told to the person (told once)
}

// teamMember is one subagent of the tree.
type teamMember struct {
	rec     teamRecord // guarded by the team's mu
	run     *subagentRun
	parent  *engine // its manager: the main agent or a sub-manager
	ref     *modelRef
	added   time.Time
	started time.Time
	ended   time.Time

	finishing bool   // team_finish was called in this run
	finalTurn bool   // its one final turn after running out of context
	ooc       bool   // it ran out of context
	stopBy    string // who stopped it, and why
	pending   string // the prompt of its next run (a task, a message)
	running   bool   // its loop goroutine is running
	reporting bool   // it ended and its report is not yet marked to its parent
}

// teamRequest is a request a subagent made with team_request.
type teamRequest struct {
	id      string
	m       *teamMember
	option  string
	why     string
	decided bool // answered; off the list once the decision is delivered
}

func teamRefusal(key string, kv ...any) string {
	return loopText(theSpec().Loop.Team.Refusals, key, kv...)
}
func teamText(key string, kv ...any) string { return loopText(theSpec().Loop.Team.Texts, key, kv...) }
func teamMarkText(key string, kv ...any) string {
	return loopText(theSpec().Loop.Team.Marks, key, kv...)
}

// team is the session's team, made on first use with the setting.
func (e *engine) team() *teamState {
	root := e.rootEngine()
	m := root.jobs()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.team == nil {
		mn, mx := subagentSettingNow()
		m.team = &teamState{root: root, byEngine: map[*engine]*teamMember{}, min: mn, max: mx, changed: make(chan struct{})}
	}
	return m.team
}

// teamOf is the team if one was made, without making it.
func (e *engine) teamOf() *teamState {
	m := e.rootEngine().jobs()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.team
}

// member is the team member an engine runs, or nil (the main agent, a task).
func (t *teamState) member(e *engine) *teamMember {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byEngine[e]
}

// touchLocked wakes whoever waits for a change.
func (t *teamState) touchLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// find is a member by id or name, or nil.
func (t *teamState) findLocked(idOrName string) *teamMember {
	k := strings.TrimSpace(idOrName)
	for _, m := range t.members {
		if m.rec.ID == k {
			return m
		}
	}
	for _, m := range t.members {
		if strings.EqualFold(m.rec.Name, k) {
			return m
		}
	}
	return nil
}

// idOf is how an engine is named in the tree: "main" or its member's id.
//
//go:noinline
func (t *teamState) idOfLocked(e *engine) string {
	if m := t.byEngine[e]; m != nil {
		return m.rec.ID
	}
	return teamText("main")
}

// under says whether m is in the subtree of the engine (a member placed
// under it, or under one of those).
func (t *teamState) underLocked(m *teamMember, e *engine) bool {
	for p := m; p != nil; p = t.byEngine[p.parent] {
		if p.parent == e {
			return true
		}
	}
	return false
}

// live is a state that holds a place in the team.
func teamLive(state string) bool { return state == "waiting" || state == "working" }

// sizeLocked counts the tree: the main agent, its members waiting or
// working, and task subagents running.
func (t *teamState) sizeLocked() int {
	n := 1
	for _, m := range t.members {
		if teamLive(m.rec.State) {
			n++
		}
	}
	for _, j := range t.root.jobs().list() {
		if st, _, _ := j.status(); st == "running" && j.sub != nil && t.byEngine[j.sub.e] == nil {
			n++
		}
	}
	return n
}

// workingOnLocked counts the subagents working on a model: members and
// task subagents (a waiting member holds no slot).
func (t *teamState) workingOnLocked(ref string) int {
	n := 0
	for _, j := range t.root.jobs().list() {
		if st, _, _ := j.status(); st != "running" || j.sub == nil || j.sub.e.ref.String() != ref {
			continue
		}
		if m := t.byEngine[j.sub.e]; m != nil && m.rec.State != "working" {
			continue
		}
		n++
	}
	return n
}

// hasSlotLocked says whether one more subagent may work on ref now: the
// model's capacity (parallel) less the session's own agent on its model.
func (t *teamState) hasSlotLocked(ref *modelRef) bool {
	p := ref.Meta.Parallel
	if p == 0 {
		return true
	}
	own := 0
	if ref.String() == t.root.ref.String() {
		own = 1
	}
	return own+t.workingOnLocked(ref.String())+1 <= p
}

// tree is the team as the front ends see it.
func (t *teamState) tree() *teamTree {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.treeLocked()
}

func (t *teamState) treeLocked() *teamTree {
	root := t.root
	tr := &teamTree{Min: t.min, Max: t.max}
	rootPhase, rootSince := root.phaseNow()
	tr.Agents = append(tr.Agents, teamNode{ID: teamText("main"), Name: teamText("main"), Mode: root.perm.mode(), Model: root.ref.String(),
		State: "working", Phase: rootPhase, Since: rootSince, Session: root.sess.ID})
	for _, m := range t.members {
		since := m.added
		if !m.started.IsZero() {
			since = m.started
		}
		phase, _ := m.run.e.phaseNow()
		if !teamLive(m.rec.State) {
			phase = ""
		}
		tr.Agents = append(tr.Agents, teamNode{ID: m.rec.ID, Name: m.rec.Name, Position: m.rec.Position, Parent: m.rec.Parent,
			Task: m.rec.Task, Mode: m.rec.Mode, Model: m.rec.Model, Lead: m.rec.Lead, State: m.rec.State, Phase: phase,
			Since: since.UTC().Format(time.RFC3339), Session: m.run.e.sess.ID, Request: m.rec.Request, Granted: m.rec.Granted,
			Findings: len(m.rec.Findings)})
	}
	return tr
}

// phaseNow is the engine's progress phase (its since is the member's start).
func (e *engine) phaseNow() (string, string) {
	e.jx.mu.Lock()
	defer e.jx.mu.Unlock()
	return e.jx.progress.cur, ""
}

// emitTree tells the front ends the tree changed (the team event).
func (t *teamState) emitTree() {
	tr := t.tree()
	t.root.send(event{Type: evTeam, Team: tr})
}

// saveMember keeps a member's record in its transcript's session.
func (t *teamState) saveMemberLocked(m *teamMember) {
	rec := m.rec
	rec.Findings = append([]string(nil), m.rec.Findings...)
	m.run.e.sess.Team = &rec
}

// save is called where the member's own engine is not running (before its
// loop starts, at its end) or from its own tool calls. A failed save is
// told to the person once per fault (the record stays in memory, and the
// next save writes it whole) and returned for a tool to tell its model.
func (t *teamState) save(m *teamMember) error {
	t.mu.Lock()
	t.saveMemberLocked(m)
	id := m.rec.ID
	t.mu.Unlock()
	err := m.run.e.st.save(m.run.e.sess)
	if err != nil {
		text := teamText("save_failed", "id", id, "error", err)
		t.mu.Lock()
		said := t.saidErr == err.Error()
		t.saidErr = err.Error()
		t.mu.Unlock()
		if !said {
			t.root.send(event{Type: evNotice, Text: text})
		}
	}
	return err
}

// note keeps a change another agent made (a grant, a new task) in the
// member's session while its own engine may be running: the record is set
// under the store's lock, so the member's next save — at its next message —
// writes it; a member not running is saved at once.
func (t *teamState) note(m *teamMember) {
	t.mu.Lock()
	running := m.running
	rec := m.rec
	rec.Findings = append([]string(nil), m.rec.Findings...)
	t.mu.Unlock()
	if !running {
		t.save(m) // a fault is told by save, and the next save writes the record whole
		return
	}
	st := m.run.e.st
	st.mu.Lock()
	m.run.e.sess.Team = &rec
	st.mu.Unlock()
}

// mark gives a mark to an engine of the tree for its next step (waking an
// idle main agent) and wakes whoever waits in teamHold.
func (t *teamState) mark(to *engine, text string) {
	to.markJob(text)
	t.mu.Lock()
	t.touchLocked()
	t.mu.Unlock()
}

// teamHold is the engine's hook where a reply ends its turn: a manager
// with members still waiting or working under it waits, in the same turn,
// for a mark (their reports, a request) and then goes on (true). False:
// nothing to wait for, the turn ends.
func (e *engine) teamHold(ctx context.Context) bool {
	t := e.teamOf()
	if t == nil {
		return false
	}
	for {
		if e.pendingMarks() {
			return true
		}
		t.mu.Lock()
		if m := t.byEngine[e]; m != nil && m.finishing {
			t.mu.Unlock()
			return false
		}
		live := 0
		for _, m := range t.members {
			// A member whose loop still runs or whose report is still on
			// its way counts: its state leaves working before end() marks
			// the report, and a manager that looked in between ended its
			// turn without it (the lead's report lost, 1 run in 60).
			if m.parent == e && (teamLive(m.rec.State) || m.running || m.reporting) {
				live++
			}
		}
		for _, r := range t.requests {
			if r.m.run.e == e {
				live++ // a member waits for the main agent's decision
			}
		}
		ch := t.changed
		t.mu.Unlock()
		if live == 0 {
			return e.pendingMarks()
		}
		e.setPhase("waiting_for_subagents", map[string]any{"count": live})
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// teamEnded says whether the engine's run should end after this step: a
// member that called team_finish.
func (e *engine) teamEnded() bool {
	t := e.teamOf()
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.byEngine[e]
	return m != nil && m.finishing
}

// teamWorkRefusal is the fixed text a manager's own work tools answer
// while it directs members: the main agent while a member waits or works,
// a sub-manager always. Its tool list stays the same.
func (e *engine) teamWorkRefusal(ts *toolSpec) string {
	t := e.teamOf()
	if t == nil || !inList(theSpec().Loop.Team.WorkRisks, ts.Risk) {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.byEngine[e]; m != nil {
		if m.rec.Lead {
			return teamRefusal("manager_work")
		}
		return ""
	}
	if e.jx.sub != nil {
		return "" // a task subagent
	}
	for _, m := range t.members {
		if teamLive(m.rec.State) {
			return teamRefusal("manager_work")
		}
	}
	return ""
}

// addArgs are team_add's (and team_replace's) arguments.
type addArgs struct {
	Name     string   `json:"name"`
	Position string   `json:"position"`
	Task     string   `json:"task"`
	Parent   string   `json:"parent"`
	Lead     bool     `json:"lead"`
	Mode     string   `json:"mode"`
	Request  []string `json:"request"`
	Model    string   `json:"model"`
}

// addMember checks and adds a member; its result text is the call's.
func (t *teamState) addMember(e *engine, ctx context.Context, ts *toolSpec, a addArgs) (string, *teamMember, bool) {
	sp := theSpec()
	a.Name, a.Task, a.Position = strings.TrimSpace(a.Name), strings.TrimSpace(a.Task), strings.TrimSpace(a.Position)
	if a.Task == "" {
		return teamRefusal("empty_task"), nil, false
	}
	t.mu.Lock()
	caller := t.byEngine[e]
	parent := e
	if p := strings.TrimSpace(a.Parent); p != "" && p != teamText("main") {
		pm := t.findLocked(p)
		if pm == nil {
			t.mu.Unlock()
			return teamRefusal("unknown", "id", p), nil, false
		}
		if caller != nil && pm != caller && !t.underLocked(pm, e) {
			t.mu.Unlock()
			return teamRefusal("outside", "id", pm.rec.ID), nil, false
		}
		if !pm.rec.Lead {
			t.mu.Unlock()
			return teamRefusal("not_lead", "parent", pm.rec.ID), nil, false
		}
		parent = pm.run.e
	}
	parentM := t.byEngine[parent]
	if a.Lead && parentM != nil {
		t.mu.Unlock()
		return teamRefusal("lead_depth"), nil, false
	}
	if a.Name == "" {
		a.Name = fmt.Sprintf("s%d", t.seq+1)
	}
	if other := t.findLocked(a.Name); other != nil && strings.EqualFold(other.rec.Name, a.Name) && teamLive(other.rec.State) {
		t.mu.Unlock()
		return teamRefusal("name_taken", "name", a.Name, "id", other.rec.ID), nil, false
	}
	if size := t.sizeLocked(); size+1 > t.max {
		t.mu.Unlock()
		return teamRefusal("full", "size", size, "max", t.max), nil, false
	}
	t.mu.Unlock()
	mode := parent.perm.mode()
	if strings.TrimSpace(a.Mode) != "" {
		m, err := normMode(a.Mode)
		if err != nil {
			return subRefusal("unknown_mode", "asked", a.Mode), nil, false
		}
		if !modeNoWider(m, parent.perm.mode()) {
			return teamRefusal("wider_mode", "mode", parent.perm.mode(), "asked", m), nil, false
		}
		mode = m
	}
	var req []string
	for _, o := range a.Request {
		o = strings.ToLower(strings.TrimSpace(o))
		if _, ok := sp.Loop.Team.RequestOptions[o]; !ok {
			return teamRefusal("bad_option", "option", o), nil, false
		}
		if !inList(req, o) {
			req = append(req, o)
		}
	}
	root := t.root
	ref := root.ref
	check := modelCheck{Session: modelID{root.ref.Conn.Name, root.ref.Model}, Said: e.personSaid(),
		Parallel: root.ref.Meta.Parallel, OneModel: oneModelServer(root.ref.Conn)}
	if strings.TrimSpace(a.Model) != "" {
		r, err := e.resolveSubModel(ctx, a.Model)
		if err != nil {
			return subRefusal("unknown_model", "error", err.Error()), nil, false
		}
		check.Asked = &modelID{r.Conn.Name, r.Model}
		ref = r
	}
	if why := subagentModelRefusal(check); why != "" { // a member waits for a full model; it is refused only for these
		return why, nil, false
	}
	j, err := root.jobs().add("subagent", a.Name, parent)
	if err != nil {
		return err.Error(), nil, false
	}
	j.mu.Lock()
	j.quiet = true // its end is told by its report, not a job mark
	j.mu.Unlock()
	run, err := parent.newSubagent(j, sp.Loop.Subagents.Agents[0], mode, ref, a.Name)
	if err != nil {
		j.finish("failed", 0, false)
		return err.Error(), nil, false
	}
	t.mu.Lock()
	t.seq++
	id := fmt.Sprintf("s%d", t.seq)
	if a.Name == "" {
		a.Name = id
	}
	parentID := t.idOfLocked(parent)
	m := &teamMember{run: run, parent: parent, ref: ref, added: time.Now(), pending: a.Task,
		rec: teamRecord{ID: id, Name: a.Name, Position: a.Position, Parent: parentID, Task: a.Task, Mode: mode,
			Model: ref.String(), Lead: a.Lead, Request: req, State: "waiting"}}
	t.members = append(t.members, m)
	t.byEngine[run.e] = m
	t.mu.Unlock()
	if err := t.dress(m); err != nil {
		t.mu.Lock()
		m.rec.State = "failed"
		t.mu.Unlock()
		j.finish("failed", 0, false)
		return err.Error(), nil, false
	}
	started := t.startWaiting()
	t.emitTree()
	where := parentID
	if parentM != nil {
		where = parentID + " " + parentM.rec.Name
	}
	pos := a.Position
	if pos == "" {
		pos = "member"
	}
	waiting := !inListPtr(started, m)
	key := "added"
	switch {
	case parentM != nil && waiting:
		key = "added_waiting_under"
	case parentM != nil:
		key = "added_under"
	case waiting:
		key = "added_waiting"
	}
	t.mu.Lock()
	working := t.workingOnLocked(ref.String())
	t.mu.Unlock()
	return ts.text(key, "id", id, "name", a.Name, "position", pos, "parent", where, "mode", mode, "model", ref.String(), "working", working), m, true
}

func inListPtr(list []*teamMember, m *teamMember) bool {
	for _, x := range list {
		if x == m {
			return true
		}
	}
	return false
}

// dress makes a new subagent a team member: its system prompt (the member
// or sub-manager block), its tools (a sub-manager's include team_add and
// team_stop for its own part), its events named by its id, its cards
// naming it, and its record in its session.
func (t *teamState) dress(m *teamMember) error {
	sp := theSpec()
	e := m.run.e
	parent := m.parent
	t.mu.Lock()
	rec := m.rec
	parentName := t.idOfLocked(parent)
	if pm := t.byEngine[parent]; pm != nil {
		parentName = pm.rec.ID + " (" + pm.rec.Name + ")"
	}
	t.mu.Unlock()
	block := "blocks/team_member.md"
	if rec.Lead {
		block = "blocks/team_submanager.md"
	}
	request := strings.Join(rec.Request, ", ")
	if request == "" {
		request = sp.Tools["team_whoami"].Texts["no_request"]
	}
	pos := rec.Position
	if pos == "" {
		pos = "member"
	}
	vars := map[string]string{"id": rec.ID, "name": rec.Name, "position": pos, "parent": parentName,
		"project": filepath.Base(parent.tb.root), "os": runtime.GOOS + "/" + runtime.GOARCH, "shell": filepath.Base(parent.tb.shell), "mode": rec.Mode, "request": request,
		"agent": strings.TrimSpace(sp.Prompts["agents/"+sp.Loop.Subagents.Agents[0]+".md"])}
	sys, err := fill(sp.Prompts[block], vars)
	if err != nil {
		return errorf("prompts/%s: %v", block, err)
	}
	e.sess.System = strings.TrimSpace(sys)
	e.sess.Agent = rec.ID + " " + rec.Name
	tb, err := parent.tb.forSubagent(false, false)
	if err != nil {
		return err
	}
	// The team tools a member has (the subagent-only ones are not the
	// parent's offer, so forSubagent leaves them out of the list), and a
	// sub-manager's team_add and team_stop for its own part.
	listed := map[string]bool{}
	for _, x := range tb.tools {
		listed[x.Name] = true
	}
	for _, n := range sp.ToolNames {
		ts := sp.Tools[n]
		if !strings.HasPrefix(n, "team_") || listed[n] || sessionTool(n) == nil {
			continue
		}
		if ts.Offered == "main" && !(rec.Lead && (n == "team_add" || n == "team_stop")) {
			continue
		}
		tb.byName[n] = ts
		tb.tools = append(tb.tools, ts)
	}
	if tb.defs, err = tb.definitions(); err != nil {
		return err
	}
	tb.protected, tb.privateWeb, tb.webAllowed = e.tb.protected, e.tb.privateWeb, e.tb.webAllowed
	e.tb = tb
	e.ask = subApprover{inner: parent.ask, agent: rec.ID + " " + rec.Name}
	up := parent.emit
	e.emit = func(ev event) {
		t.watch(m, ev)
		if up != nil {
			if ev.Agent == "" {
				ev.Agent = rec.ID
			}
			up(ev)
		}
	}
	j := m.run.job
	j.stop = func() { t.stopOne(m, "", false) }
	t.save(m) // a fault is told by save, and the next save writes the record whole
	return nil
}

// startWaiting starts every waiting member a slot is free for, in the
// order they were added.
func (t *teamState) startWaiting() []*teamMember {
	t.mu.Lock()
	var go_ []*teamMember
	for _, m := range t.members {
		if m.rec.State != "waiting" || m.running {
			continue
		}
		if !t.hasSlotLocked(m.ref) {
			continue
		}
		m.rec.State, m.started, m.running = "working", time.Now(), true
		go_ = append(go_, m)
	}
	t.touchLocked()
	t.mu.Unlock()
	for _, m := range go_ {
		t.save(m) // a fault is told by save, and the next save writes the record whole
		if t.run != nil {
			t.run(t, m)
		} else {
			go m.loop(t)
		}
	}
	return go_
}

// watch counts a member's context: one request's input past the share of
// its model's window, or its token budget spent, is out of context — it
// is paused (its run cancelled) for its one final turn.
func (t *teamState) watch(m *teamMember, ev event) {
	if ev.Type != evUsage || ev.Usage == nil || ev.Agent != "" { // its own requests, not its members'
		return
	}
	r := m.run
	window := m.ref.Meta.Context
	if window <= 0 {
		window = theSpec().Models.Defaults.Context
	}
	r.mu.Lock()
	r.tokens += ev.Usage.Input + ev.Usage.Output
	spent := r.tokens > theSpec().Loop.Subagents.MaxTokens
	cancel := r.cancel
	r.mu.Unlock()
	full := float64(ev.Usage.Input) >= theSpec().Loop.Team.ContextShare*float64(window)
	t.mu.Lock()
	hit := (spent || full) && !m.finalTurn && !m.ooc && !m.finishing
	if hit {
		m.ooc = true
	}
	t.mu.Unlock()
	if hit && cancel != nil {
		cancel()
	}
}

// loop runs a member: its task, then whatever it is sent while working,
// until it ends; then its report goes to its parent and a slot frees.
func (m *teamMember) loop(t *teamState) {
	r := m.run
	e := r.e
	base := t.root.jobs().base
	for {
		t.mu.Lock()
		prompt := m.pending
		m.pending = ""
		stopped := m.stopBy != ""
		t.mu.Unlock()
		if stopped {
			break
		}
		ctx, cancel := context.WithCancel(base)
		r.mu.Lock()
		r.cancel = cancel
		r.mu.Unlock()
		out := e.runTurn(ctx, prompt)
		cancel()
		t.root.jx.mu.Lock()
		t.root.jx.subUsage.add(out.Usage)
		t.root.jx.mu.Unlock()
		t.mu.Lock()
		ooc, stopped := m.ooc && !m.finalTurn, m.stopBy != ""
		t.mu.Unlock()
		if ooc && !stopped {
			// Paused: one final turn to save its findings and tell its parent.
			t.mu.Lock()
			m.finalTurn = true
			t.mu.Unlock()
			ctx, cancel := context.WithCancel(base)
			r.mu.Lock()
			r.cancel = cancel
			r.mu.Unlock()
			steps := e.maxSteps
			e.maxSteps = theSpec().Loop.Team.FinalTurnSteps
			fin := e.runTurn(ctx, teamText("out_of_context"))
			e.maxSteps = steps
			cancel()
			t.mu.Lock()
			if m.rec.Report == "" {
				m.rec.Report = strings.TrimSpace(fin.Answer)
			}
			if m.rec.Report == "" {
				m.rec.Report = teamText("out_of_context_report")
			}
			m.rec.State = "out_of_context"
			t.mu.Unlock()
			break
		}
		t.mu.Lock()
		switch {
		case stopped:
		case m.finishing:
			m.rec.State = "finished"
		case out.Err != nil:
			m.rec.State = "failed"
			m.rec.Report = strings.TrimSpace(out.Answer + "\n" + out.Err.Error())
		default:
			m.rec.State = "finished"
			m.rec.Report = strings.TrimSpace(out.Answer)
		}
		again := m.pending != "" && !stopped && m.rec.State == "finished" && !m.finishing
		if again {
			m.rec.State = "working"
		}
		t.mu.Unlock()
		if !again {
			break
		}
	}
	t.end(m)
}

// end is a member's end: its state and report kept, its job finished, its
// report marked to its parent (unless that was stopped with it), a slot
// freed and the tree told.
func (t *teamState) end(m *teamMember) {
	r := m.run
	r.e.jobs().stopOwned(r.e)
	t.mu.Lock()
	if m.stopBy != "" {
		m.rec.State = "stopped"
		if m.rec.Report == "" {
			m.rec.Report = stoppedReport(m.stopBy)
		}
	}
	if m.rec.Report == "" && m.rec.State == "out_of_context" {
		m.rec.Report = teamText("out_of_context_report")
	}
	if m.rec.Report == "" {
		m.rec.Report = teamText("no_report")
	}
	m.running, m.ended = false, time.Now()
	rec := m.rec
	parentGone := false
	if pm := t.byEngine[m.parent]; pm != nil && pm.stopBy != "" {
		parentGone = true // stopped with its subtree: the report stays with it
	}
	m.reporting = !parentGone
	t.mu.Unlock()
	t.save(m) // a fault is told by save; the report still reaches the parent below
	if rec.Report != "" {
		r.job.Write([]byte(rec.Report + "\n")) // the job's output buffer, in memory: it never fails
	}
	st := "done"
	switch rec.State {
	case "stopped", "out_of_context":
		st = "stopped"
	case "failed":
		st = "failed"
	}
	r.mu.Lock()
	r.answer, r.status = rec.Report, st
	r.mu.Unlock()
	r.job.finish(st, 0, false)
	if !parentGone {
		m.parent.markJob(teamMarkText("report", "id", rec.ID, "name", rec.Name, "status", rec.State, "report", rec.Report))
	}
	t.mu.Lock()
	m.reporting = false
	t.touchLocked() // wakes a manager in teamHold: the mark is there
	t.mu.Unlock()
	t.startWaiting()
	t.emitTree()
}

// restart runs a member that ended again with a prompt (a message, a new
// task); a working one gets it at its next step. It says which it did.
func (t *teamState) deliver(m *teamMember, prompt string) (restarted bool) {
	t.mu.Lock()
	if m.rec.State == "working" || m.rec.State == "waiting" {
		if m.rec.State == "waiting" {
			m.pending = strings.TrimSpace(m.pending + "\n\n" + prompt)
			t.mu.Unlock()
			return false
		}
		t.mu.Unlock()
		t.mark(m.run.e, prompt)
		return false
	}
	m.pending, m.finishing, m.ooc, m.finalTurn, m.stopBy = prompt, false, false, false, ""
	m.rec.State, m.rec.Report = "waiting", ""
	j := m.run.job
	t.mu.Unlock()
	j.mu.Lock()
	j.state, j.coded, j.settled = "running", false, false
	j.changedLocked()
	j.mu.Unlock()
	t.startWaiting()
	t.emitTree()
	return true
}

// stopSubtree stops a member and everything under it, deepest first; the
// ids it stopped.
func (t *teamState) stopSubtree(m *teamMember, why string) []string {
	t.mu.Lock()
	var order []*teamMember
	var walk func(p *teamMember)
	walk = func(p *teamMember) {
		for _, c := range t.members {
			if c.parent == p.run.e {
				walk(c)
			}
		}
		order = append(order, p)
	}
	walk(m)
	if why == "" {
		why = " "
	}
	for _, c := range order {
		if teamLive(c.rec.State) {
			c.stopBy = why // all at once: a report of one stopped with its parent stays with it
		}
	}
	t.mu.Unlock()
	var ids []string
	for _, c := range order {
		if t.stopOne(c, why, true) {
			ids = append(ids, c.rec.ID)
		}
	}
	return ids
}

// stopOne stops one member: a waiting one at once, a working one by
// cancelling its run (its loop reports); wait: until its loop has ended.
func (t *teamState) stopOne(m *teamMember, why string, wait bool) bool {
	t.mu.Lock()
	if !teamLive(m.rec.State) {
		t.mu.Unlock()
		return false
	}
	if m.stopBy == "" {
		m.stopBy = why
	}
	if m.stopBy == "" {
		m.stopBy = " "
	}
	running := m.running
	t.touchLocked()
	t.mu.Unlock()
	r := m.run
	if !running {
		t.end(m) // waiting: it ends at once, and its parent is told
		return true
	}
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if wait {
		<-r.job.doneCh()
	}
	return true
}

// descendantsLive are the ids of members under e still waiting or working.
func (t *teamState) liveUnderLocked(e *engine) []string {
	var ids []string
	for _, c := range t.members {
		if c.parent == e && teamLive(c.rec.State) {
			ids = append(ids, c.rec.ID)
		}
	}
	return ids
}

// stoppedReport is the report of a member stopped before it finished.
func stoppedReport(why string) string {
	if why = strings.TrimSpace(why); why != "" {
		why = ": " + why
	}
	return teamText("stopped_report", "why", why)
}

// showTeamRecord prints what a member's session keeps of its place in the
// team (lembas sessions show).
func showTeamRecord(w io.Writer, s *session) {
	if s.Team == nil {
		return
	}
	r := s.Team
	fmt.Fprintln(w, teamText("repl_show", "id", r.ID, "name", r.Name, "session", s.ID, "state", r.State))
	if len(r.Findings) > 0 {
		fmt.Fprintln(w, teamText("repl_findings", "findings", numbered(r.Findings)))
	}
	if r.Report != "" {
		fmt.Fprintln(w, teamText("repl_report", "report", r.Report))
	}
}

// teamMember says whether the engine runs a team member: one that is not
// compacted, but runs out of context (its final turn, then a report).
func (e *engine) teamMember() bool {
	t := e.teamOf()
	return t != nil && t.member(e) != nil
}

// treeRows are /agents's lines: the main agent, then every subagent under
// its parent — id, name, position, state, phase and elapsed time.
func (t *teamState) treeRows(now time.Time) []string {
	tr := t.tree()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.members) == 0 {
		return nil
	}
	main := tr.Agents[0]
	rows := []string{teamText("repl_main", "mode", main.Mode, "state", main.State, "phase", phaseLabel(main.Phase), "elapsed", "")}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, n := range tr.Agents[1:] {
			if n.Parent != parent {
				continue
			}
			m := t.findLocked(n.ID)
			from, to := m.added, now
			if !m.started.IsZero() {
				from = m.started
			}
			if !m.ended.IsZero() {
				to = m.ended
			}
			pos := n.Position
			if pos == "" {
				pos = "member"
			}
			rows = append(rows, strings.TrimRight(teamText("repl_row", "indent", strings.Repeat("  ", depth+1), "id", n.ID, "name", n.Name, "position", pos,
				"state", n.State, "phase", phaseLabel(n.Phase), "elapsed", to.Sub(from).Round(time.Second).String()), " "))
			walk(n.ID, depth+1)
		}
	}
	walk(teamText("main"), 0)
	return rows
}

// phaseLabel is a phase's English text, or "" for none.
func phaseLabel(p string) string {
	if p == "" {
		return "-"
	}
	if txt, ok := theSpec().Loop.Progress.Phases[p]; ok && !strings.Contains(txt, "{{") {
		return txt
	}
	return p
}

// memberView is what /agents sN shows: its place, transcript and findings.
func (t *teamState) memberView(idOrName string) (string, bool) {
	t.mu.Lock()
	m := t.findLocked(idOrName)
	t.mu.Unlock()
	if m == nil {
		return "", false
	}
	var b strings.Builder
	text := memberTranscript(m.run.e.st, m.run.e.sess.ID)
	b.WriteString(text)
	s := &session{ID: m.run.e.sess.ID}
	t.mu.Lock()
	rec := m.rec
	rec.Findings = append([]string(nil), m.rec.Findings...)
	t.mu.Unlock()
	s.Team = &rec
	showTeamRecord(&b, s)
	return b.String(), true
}

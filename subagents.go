package main

// Subagents (harness README 2.0.0, 3.3.0, 3.4.0 §5–§13): task gives a piece
// of work to a fresh conversation — blocks/subagent.md and an agent's text
// (agents/<name>.md) as its system prompt, the task as its one prompt — run
// by the same engine in the same project. Its answer comes back as the
// call's result with its id; with background: true it is a job and its
// answer comes as the job's end mark. The rules:
//   - the model is the session's unless the person named another in this
//     session's own prompts; the capacity refusals come first (subagentModel);
//   - its mode is its parent's or stricter, and its approvals go to the same
//     front end (the parent's approver) with the subagent named on the card;
//   - depth, count, step and token limits (loop.json subagents);
//   - its usage is added to the parent's turn; cancelling the parent's call
//     cancels it and its commands (the context runs through);
//   - its transcript is a session of its own (Parent set), kept by the store
//     and shown by /agents and lembas sessions show.
// Every subagent has a parent engine, so a team's members (the next issue)
// are subagents whose parent may itself be a subagent.
//
// The session floor (4): it registers its tools through engineTool and
// calls the workers, the store and the ground.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"unicode"
)

// subagentInfo is where a subagent engine sits in its tree.
type subagentInfo struct {
	id     string // its job id
	agent  string
	parent *engine
	depth  int // 1 for the main agent's subagents
	run    *subagentRun
}

// subagentRun is one subagent: its engine and how its runs went.
type subagentRun struct {
	e    *engine
	job  *job
	desc string

	mu     mutex
	answer string
	status string // of its last run: done, failed, stopped
	steps  int
	tokens int
	over   bool // its token budget ran out
	cancel context.CancelFunc
}

func (r *subagentRun) lastAnswer() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answer
}

func subText(key string, kv ...any) string {
	return loopText(theSpec().Loop.Subagents.Texts, key, kv...)
}
func subRefusal(key string, kv ...any) string {
	if t, ok := theSpec().Models.Capacity.Texts[key]; ok {
		return fillPairs(t, kv...) // the capacity refusals are models/schema.json's (3.3.0)
	}
	return loopText(theSpec().Loop.Subagents.Refusals, key, kv...)
}

func init() {
	sessionTools["task"] = engineTool(toolTask)
	sessionTools["report"] = engineTool(toolReport)
}

// depth is how deep this engine is among subagents (0: the main agent).
func (e *engine) depth() int {
	if e.jx.sub == nil {
		return 0
	}
	return e.jx.sub.depth
}

// rootEngine is the main agent of this engine's tree.
func (e *engine) rootEngine() *engine {
	for e.jx.sub != nil {
		e = e.jx.sub.parent
	}
	return e
}

// modeNoWider says whether mode is the parent's or stricter.
func modeNoWider(mode, parent string) bool {
	order := theSpec().Loop.Subagents.Strictness
	rank := func(m string) int {
		for i, o := range order {
			if o == m {
				return i
			}
		}
		return len(order)
	}
	return rank(mode) <= rank(parent)
}

// personNamed says whether the person's own words name a model: its
// served id or its id at its connection, as a whole word, without case.
func personNamed(said []string, names ...string) bool {
	for _, text := range said {
		low := strings.ToLower(text)
		for _, n := range names {
			n = strings.ToLower(strings.TrimSpace(n))
			if n == "" {
				continue
			}
			for i := 0; ; {
				k := strings.Index(low[i:], n)
				if k < 0 {
					break
				}
				at, end := i+k, i+k+len(n)
				if !wordRuneBefore(low, at) && !wordRuneAfter(low, end) {
					return true
				}
				i = at + 1
			}
		}
	}
	return false
}

// isModelRune is a rune that belongs to a model's name: a word is not
// ended by a hyphen or underscore (qwen3 is not qwen3-coder).
func isModelRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_'
}

func wordRuneBefore(s string, at int) bool {
	if at == 0 {
		return false
	}
	r := rune(s[at-1])
	if r >= 0x80 {
		return true // inside a longer non-ASCII word
	}
	return isModelRune(r) || r == '.' || r == '/' || r == ':'
}

func wordRuneAfter(s string, end int) bool {
	if end >= len(s) {
		return false
	}
	r := rune(s[end])
	if r == '.' || r == '/' || r == ':' {
		return end+1 < len(s) && isModelRune(rune(s[end+1])) // a dot that ends the sentence ends the word
	}
	return r >= 0x80 || isModelRune(r)
}

// modelCheck is what subagentModel decides from: the session's model, the
// one asked for (nil: none), the person's words, and the capacity.
type modelCheck struct {
	Session  modelID
	Asked    *modelID
	Said     []string
	Parallel int  // the session's model's capacity (0: no limit known)
	Running  int  // subagents already running on the session's model
	OneModel bool // the session's connection holds one model at a time
}

type modelID struct {
	Conn  string `json:"conn"`
	Model string `json:"model"`
}

// subagentModelRefusal applies 3.3.0's rules; "" means the subagent may
// run on the chosen model (the asked one, else the session's).
func subagentModelRefusal(c modelCheck) string {
	target := c.Session
	if c.Asked != nil {
		target = *c.Asked
		same := target.Conn == c.Session.Conn && strings.EqualFold(target.Model, c.Session.Model)
		if !same && !personNamed(c.Said, target.Model, target.Conn+"/"+target.Model) {
			return subRefusal("model_not_named")
		}
		if !same && target.Conn == c.Session.Conn && c.OneModel {
			return subRefusal("same_server")
		}
		if !same {
			return ""
		}
	}
	_ = target
	if c.Parallel != 0 && c.Parallel < 2+c.Running {
		return subRefusal("one_at_a_time")
	}
	return ""
}

// personSaid is the person's own prompts of this session (never a
// machine turn's, the model's text or a tool's output).
func (e *engine) personSaid() []string {
	root := e.rootEngine()
	var said []string
	if t := root.teamOf(); t != nil {
		t.mu.Lock()
		said = append(said, t.said...) // an agent chat's earlier words (the link's said, capability agents)
		t.mu.Unlock()
	}
	for _, t := range root.sess.Turns {
		if t.By == "" {
			said = append(said, t.Prompt)
		}
	}
	return said
}

// oneModelServer says whether a connection holds one model at a time.
func oneModelServer(c *connection) bool {
	for _, n := range theSpec().Loop.Subagents.OneModelServers {
		if c != nil && c.Name == n {
			return true
		}
	}
	return false
}

// resolveSubModel finds the model a task asked for: through the session's
// resolver (all connections) when it has one, else on its connection.
func (e *engine) resolveSubModel(ctx context.Context, name string) (*modelRef, error) {
	if f := e.rootEngine().jx.models; f != nil {
		return f(ctx, name)
	}
	name = strings.TrimPrefix(strings.TrimSpace(name), e.ref.Conn.Name+"/")
	return newModelRef(e.ref.Conn, name), nil
}

// runningOn counts the session's subagents running on a model.
func (m *jobManager) runningOn(ref string) int {
	n := 0
	for _, j := range m.list() {
		if st, _, _ := j.status(); st == "running" && j.sub != nil && j.sub.e.ref.String() == ref {
			n++
		}
	}
	return n
}

func toolTask(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Description string `json:"description"`
		Prompt      string `json:"prompt"`
		Agent       string `json:"agent"`
		Mode        string `json:"mode"`
		Model       string `json:"model"`
		Background  bool   `json:"background"`
	}
	json.Unmarshal(raw, &a)
	sp := theSpec().Loop.Subagents
	if strings.TrimSpace(a.Prompt) == "" {
		return errResult(subRefusal("empty"))
	}
	if d := e.depth(); d >= sp.MaxDepth {
		return errResult(subRefusal("depth", "max", sp.MaxDepth))
	}
	agent := strings.ToLower(strings.TrimSpace(a.Agent))
	if agent == "" {
		agent = sp.Agents[0]
	}
	if !inList(sp.Agents, agent) {
		return errResult(subRefusal("unknown_agent", "agent", a.Agent, "agents", strings.Join(sp.Agents, ", ")))
	}
	mode := e.perm.mode()
	if strings.TrimSpace(a.Mode) != "" {
		m, err := normMode(a.Mode)
		if err != nil {
			return errResult(subRefusal("unknown_mode", "asked", a.Mode))
		}
		if !modeNoWider(m, e.perm.mode()) {
			return errResult(subRefusal("wider_mode", "mode", e.perm.mode(), "asked", m))
		}
		mode = m
	}
	m := e.jobs()
	ref := e.ref
	check := modelCheck{Session: modelID{e.ref.Conn.Name, e.ref.Model}, Said: e.personSaid(),
		Parallel: e.ref.Meta.Parallel, Running: m.runningOn(e.ref.String()), OneModel: oneModelServer(e.ref.Conn)}
	if strings.TrimSpace(a.Model) != "" {
		r, err := e.resolveSubModel(ctx, a.Model)
		if err != nil {
			return errResult(subRefusal("unknown_model", "error", err.Error()))
		}
		check.Asked = &modelID{r.Conn.Name, r.Model}
		ref = r
	}
	if why := subagentModelRefusal(check); why != "" {
		return errResult(why)
	}
	m.mu.Lock()
	running := m.runningLocked("subagent")
	m.mu.Unlock()
	if running >= sp.MaxRunning {
		return errResult(subRefusal("too_many", "max", sp.MaxRunning))
	}
	desc := strings.TrimSpace(a.Description)
	if desc == "" {
		desc = oneLine(a.Prompt, 60)
	}
	j, err := m.add("subagent", desc, e)
	if err != nil {
		return errResult(err.Error())
	}
	run, err := e.newSubagent(j, agent, mode, ref, desc)
	if err != nil {
		j.finish("failed", 0, false)
		return errResult(err.Error())
	}
	j.emitJob()
	if a.Background {
		go run.runOnce(m.base, a.Prompt)
		return toolResult{Text: subText("started", "id", j.ID, "name", agent, "description", desc)}
	}
	j.mu.Lock()
	j.quiet = true // its answer is this call's result, not a mark
	j.mu.Unlock()
	e.setPhase("waiting_for_subagents", map[string]any{"count": m.runningOnAll()})
	run.runOnce(ctx, a.Prompt)
	return run.result()
}

// runningOnAll counts the session's running subagents.
func (m *jobManager) runningOnAll() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runningLocked("subagent")
}

//go:noinline
func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// newSubagent makes a subagent's session and engine: a fresh conversation
// in the project, its own tools (read-only for a read-only agent; task only
// while the depth allows), its mode, and the parent's front end for asks.
func (e *engine) newSubagent(j *job, agent, mode string, ref *modelRef, desc string) (*subagentRun, error) {
	sp := theSpec()
	root := e.tb.root
	sess, err := e.st.create(root)
	if err != nil {
		return nil, err
	}
	sess.Parent = e.sess.ID
	sess.Agent = j.ID + " " + agent
	sess.Title = desc
	sess.Model = ref.String()
	sess.Mode = mode
	vars := map[string]string{
		"project": filepath.Base(root),
		"os":      runtime.GOOS + "/" + runtime.GOARCH,
		"shell":   filepath.Base(e.tb.shell),
		"mode":    mode,
		"agent":   strings.TrimSpace(sp.Prompts["agents/"+agent+".md"]),
	}
	sys, err := fill(sp.Prompts["blocks/subagent.md"], vars)
	if err != nil {
		return nil, errorf("prompts/blocks/subagent.md: %v", err)
	}
	sess.System = strings.TrimSpace(sys)
	sess.NoteMode = mode
	depth := e.depth() + 1
	tb, err := e.tb.forSubagent(inList(sp.Loop.Subagents.ReadOnlyAgents, agent), depth < sp.Loop.Subagents.MaxDepth)
	if err != nil {
		return nil, err
	}
	perm := newPermissions(mode, e.perm.root, e.perm.headless)
	perm.setSandbox(e.perm.sandboxMissing())
	e.perm.mu.Lock()
	perm.session = append(perm.session, e.perm.session...) // what the person allowed for this session holds for its subagents
	e.perm.mu.Unlock()
	tb.protected = func(abs string) bool { _, ok := perm.protectedFor(abs); return ok }
	tb.privateWeb = func(host string) bool { _, ok := perm.privateWebRule("webfetch", host); return ok }
	tb.webAllowed, perm.net = perm.webAllowRule, e.perm.net
	steps := sp.Loop.Subagents.MaxSteps
	if e.maxSteps < steps {
		steps = e.maxSteps
	}
	child := newEngine(ref, tb, perm, e.st, sess, steps)
	child.hygiene, child.ask = e.hygiene, subApprover{inner: e.ask, agent: j.ID + " " + agent}
	if ref == e.ref {
		child.extra = e.extra
	}
	run := &subagentRun{e: child, job: j, desc: desc}
	child.jx.sub = &subagentInfo{id: j.ID, agent: agent, parent: e, depth: depth, run: run}
	child.jx.mgr = e.jobs()
	up := e.emit
	child.emit = func(ev event) {
		run.watch(ev)
		if up != nil {
			if ev.Agent == "" {
				ev.Agent = j.ID // its events go up the tree, marked (stream-json, the link); the REPL and ACP draw only their own
			}
			up(ev)
		}
	}
	j.sub = run
	j.stop = func() {
		run.mu.Lock()
		cancel := run.cancel
		run.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		<-j.doneCh()
	}
	return run, e.st.save(sess)
}

// watch counts a subagent's tokens against its budget and stops the run
// when they are spent. Its events then go up to the parent's front end
// with agent set to its job id: stream-json prints them, the link forwards
// them, and the REPL and ACP, which show one conversation, leave them out.
func (r *subagentRun) watch(ev event) {
	if ev.Type != evUsage || ev.Usage == nil {
		return
	}
	r.mu.Lock()
	r.tokens += ev.Usage.Input + ev.Usage.Output
	over := r.tokens > theSpec().Loop.Subagents.MaxTokens && !r.over
	if over {
		r.over = true
	}
	cancel := r.cancel
	r.mu.Unlock()
	if over && cancel != nil {
		cancel()
	}
}

// runOnce runs one turn of the subagent (its task, or a message sent to a
// finished one) and ends its job with the result.
func (r *subagentRun) runOnce(ctx context.Context, prompt string) {
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	r.cancel = cancel
	r.over = false
	r.mu.Unlock()
	defer cancel()
	out := r.e.runTurn(ctx, prompt)
	r.e.jobs().stopOwned(r.e) // its own background commands end with its run
	parent := r.e.jx.sub.parent
	parent.jx.mu.Lock()
	parent.jx.subUsage.add(out.Usage)
	parent.jx.mu.Unlock()
	r.mu.Lock()
	r.answer = strings.TrimSpace(out.Answer)
	r.steps = r.e.curTurn().Steps
	over := r.over
	switch {
	case over:
		r.status = "stopped"
		r.answer = strings.TrimSpace(r.answer + "\n" + subText("budget", "max", theSpec().Loop.Subagents.MaxTokens))
	case out.StopReason == "cancelled":
		r.status = "stopped"
	case out.Err != nil:
		r.status = "failed"
		r.answer = strings.TrimSpace(r.answer + "\n" + out.Err.Error())
	default:
		r.status = "done"
	}
	status, answer := r.status, r.answer
	r.mu.Unlock()
	if answer != "" {
		r.job.Write([]byte(answer + "\n"))
	}
	r.job.finish(status, 0, false)
}

// result is a foreground task's answer, headed by its id and how it went.
func (r *subagentRun) result() toolResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	ans := r.answer
	if ans == "" {
		ans = subText("no_answer")
	}
	text := subText("answer", "id", r.job.ID, "name", r.e.jx.sub.agent, "status", r.status, "steps", r.steps, "tokens", r.tokens, "answer", ans)
	res := toolResult{Text: text, IsError: r.status == "failed"}
	if r.status == "stopped" && !r.over {
		res.Status = "cancelled"
		res.IsError = true
	}
	return res
}

// restart runs a finished subagent again with its context and a message,
// as a job whose end is marked.
func (j *job) restart(message string) bool {
	j.mu.Lock()
	if j.state == "running" {
		j.mu.Unlock()
		return false
	}
	j.state, j.coded, j.quiet, j.settled = "running", false, false, false
	j.changedLocked()
	j.mu.Unlock()
	go j.sub.runOnce(j.mgr.base, message)
	return true
}

func toolJobSend(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	j, a, bad := jobTool(e, t, raw)
	if bad != nil {
		return *bad
	}
	if j.sub == nil {
		return errResult(t.text("not_subagent", "id", j.ID))
	}
	msg, _ := a["message"].(string)
	if st, _, _ := j.status(); st == "running" {
		j.sub.e.steer(msg)
		return toolResult{Text: t.text("queued", "id", j.ID)}
	}
	if !j.restart(msg) {
		j.sub.e.steer(msg)
		return toolResult{Text: t.text("queued", "id", j.ID)}
	}
	return toolResult{Text: t.text("restarted", "id", j.ID)}
}

// toolReport is a subagent's message to its parent before its answer: a
// mark for the parent's next step (waking an idle main agent), and a line
// in its job's output.
func toolReport(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Message string `json:"message"`
	}
	json.Unmarshal(raw, &a)
	if strings.TrimSpace(a.Message) == "" {
		return errResult(t.text("empty"))
	}
	sub := e.jx.sub
	if sub == nil {
		return errResult(t.text("empty"))
	}
	sub.run.job.Write([]byte(a.Message + "\n"))
	sub.parent.markJob(fillPairs(theSpec().Loop.Jobs.Marks["report"], "id", sub.id, "name", sub.agent, "message", a.Message))
	return toolResult{Text: t.text("sent")}
}

// subApprover puts a subagent's approvals to the parent's front end, with
// the subagent named on the card — the one that asks: up a team's tree the
// card keeps the nearest name.
type subApprover struct {
	inner approver
	agent string
}

// unattended: a subagent's approver asks nobody when its session's does not.
func (s subApprover) unattended() bool { return nobodyApproves(s.inner) }

// refusedHost passes a host refused unasked to the session's approver, so
// -p's closing word names a subagent's refused host too.
func (s subApprover) refusedHost(host string) {
	if l, ok := s.inner.(hostRefusals); ok {
		l.refusedHost(host)
	}
}

func (s subApprover) logsHosts() bool {
	l, ok := s.inner.(hostRefusals)
	return ok && l.logsHosts()
}

func (s subApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	if req.Agent == "" { // the asking subagent, not a sub-manager it passes through
		req.Agent = s.agent
	}
	if s.inner == nil {
		return headlessApprover{}.approve(ctx, req)
	}
	return s.inner.approve(ctx, req)
}

// forSubagent is the toolbox of a subagent: the same project and shell,
// the tools offered to subagents (report among them), only the readers
// for a read-only agent, and task only while the depth allows.
func (tb *toolbox) forSubagent(readOnly, canTask bool) (*toolbox, error) {
	sp := tb.spec
	sub := &toolbox{root: tb.root, spec: sp, byName: map[string]*toolSpec{}, shell: tb.shell, vision: tb.vision,
		fsys: tb.fsys, reads: map[string]fileStamp{}, snap: tb.snap, sandbox: tb.sandbox} // the session's world, shared
	parentOffers := map[string]bool{}
	for _, t := range tb.tools {
		parentOffers[t.Name] = true
	}
	for _, name := range sp.ToolNames {
		t := sp.Tools[name]
		if !(t.Scope == "shared" || t.Scope == "cli") || !(t.Sessions == "agent" || t.Sessions == "both") || t.Offered == "main" {
			continue
		}
		if toolImpls[name] == nil && sessionTools[name] == nil {
			continue
		}
		switch {
		case name == "ask_user" || name == "plan_submit":
			continue // nobody to ask: the subagent decides and says so
		case name == "task" && !canTask:
			continue
		case readOnly && t.Risk != "read" && name != "report":
			continue
		}
		sub.byName[name] = t
		for _, a := range t.Aliases["cli"] {
			sub.byName[a] = t
		}
		if len(t.OfferedIf) > 0 && !parentOffers[name] {
			continue // the session's offer rules hold for its subagents (tools_offer.go): callable by name, not listed
		}
		sub.tools = append(sub.tools, t)
	}
	defs, err := sub.definitions()
	if err != nil {
		return nil, err
	}
	sub.defs = defs
	return sub, nil
}

// subagentRows is the session's subagents for a person (/agents).
func subagentRows(m *jobManager) []string {
	if m == nil {
		return nil
	}
	var rows []string
	for _, j := range m.list() {
		if j.sub == nil {
			continue
		}
		st, _, _ := j.status()
		j.sub.mu.Lock()
		steps := j.sub.steps
		j.sub.mu.Unlock()
		rows = append(rows, subText("repl_row", "id", j.ID, "name", j.sub.e.jx.sub.agent, "status", st, "steps", steps,
			"session", j.sub.e.sess.ID, "description", oneLine(j.Title, 60)))
	}
	return rows
}

func init() {
	// task's description names the agents and loop.json's limits.
	toolFacts["task"] = func(*toolbox) map[string]string {
		vars := map[string]string{}
		taskVars(vars)
		return vars
	}
}

// taskVars fill task's description: the agents and the limits.
func taskVars(vars map[string]string) {
	sp := theSpec().Loop.Subagents
	var agents []string
	for _, a := range sp.Agents {
		agents = append(agents, subText("agent_list", "name", a, "about", sp.AboutAgents[a]))
	}
	vars["agents"] = strings.Join(agents, "; ")
	vars["max_steps"] = fmt.Sprint(sp.MaxSteps)
	vars["max_running"] = fmt.Sprint(sp.MaxRunning)
}

// showSubagents prints, under a session, the transcripts of its subagents
// (lembas sessions show): each is a session of its own, read the same way.
func showSubagents(w io.Writer, st *store, id string) error {
	all, err := st.list()
	if err != nil {
		return err
	}
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		kid := all[i]
		if kid.Parent != id {
			continue
		}
		status := ""
		if n := len(kid.Turns); n > 0 {
			status = kid.Turns[n-1].Status
		}
		fmt.Fprintln(w, "\n"+subText("show_head", "agent", kid.Agent, "session", kid.ID, "status", status, "title", kid.Title))
		showSession(w, kid)
		showTeamRecord(w, kid)                               // a team member's state, findings and report (team.go)
		if err := showSubagents(w, st, kid.ID); err != nil { // a sub-manager's members
			return err
		}
	}
	return nil
}

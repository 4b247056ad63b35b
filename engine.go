package main

// One prompt's loop.
//
//	prompt ──► store (durable) ──► request ──► model streams ──► assistant message (stored)
//	                 ▲                                                   │
//	                 │                                   tool calls? ────┤ no ──► done
//	                 │                                                   ▼
//	                 └──── results (ids, caps, stored) ◄── run ◄── permission (ask?)
//
// Typed events (events.go) are the engine's only output. Read-only calls of
// one step run in parallel, others in order; the step backstop and the
// wrap-up come from loop.json; a cancel stops the stream, kills running
// commands and records the turn as cancelled; a tool that fails or panics
// becomes an error result, never a crash.
//
// The session floor (4): front ends call it; it calls the workers (tools,
// permissions, the model client, MCP), the store and the ground, and
// reaches the person only through ask.go's seam.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

type engine struct {
	toolHost // what a tool call sees of the session (tools_session.go)
	ask      approver
	emit     func(event)
	maxSteps int

	steerMu mutex
	steerQ  []string // messages typed during the turn, for its next step
	snapMu  mutex    // guards snapshots taken from tool goroutines

	hygiene bool           // insert-time stubs (context_hygiene.go)
	extra   map[string]any // the effort level's request fields (levels.go)
	planner planReviewer   // answers plan_submit; nil: nobody can (-p)

	jx jobsState // background jobs, subagents, progress (jobs.go)
}

// callRecord is one call of a turn, for -p's JSON output.
type callRecord struct {
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Status   string          `json:"status"`
	ResultID string          `json:"result_id,omitempty"`
}

// outcome is how a turn ended.
type outcome struct {
	Answer     string
	StopReason string
	Usage      usage
	Calls      []callRecord
	Err        error
	Unsent     []string // steer messages the turn ended before taking in
}

func (e *engine) send(ev event) {
	ev.Session = e.sess.ID
	ev.Turn = len(e.sess.Turns)
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if e.emit != nil {
		e.emit(ev)
		e.progressFor(ev)
	}
}

// appendMsg adds a message and saves the session before anything else
// happens: what the person has seen is on disk.
func (e *engine) appendMsg(m message) error {
	m.Turn = len(e.sess.Turns)
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	e.sess.Messages = append(e.sess.Messages, m)
	return e.st.save(e.sess)
}

// recordCut stores a prompt a restart cut off before it reached the
// session (the device was killed between taking the prompt and writing
// it): the person's words are kept as an interrupted turn, with no
// answer, so the conversation holds what they sent and `-c` finds it.
func (e *engine) recordCut(prompt string) error {
	now := time.Now()
	e.sess.Turns = append(e.sess.Turns, turn{N: len(e.sess.Turns) + 1, Prompt: prompt, Started: now, Ended: now,
		Status: "interrupted", StopReason: "cancelled"})
	if e.sess.Title == "" {
		e.sess.Title = titleOf(prompt)
	}
	return e.appendMsg(message{Role: "user", Content: prompt, Kind: "prompt", Time: now})
}

func (e *engine) curTurn() *turn { return &e.sess.Turns[len(e.sess.Turns)-1] }

// runTurn runs one prompt to its end. images go with the prompt (a front
// end's attachments, for a vision model).
func (e *engine) runTurn(ctx context.Context, prompt string, images ...imagePart) (out outcome) {
	lp := theSpec().Loop
	ctx = withAnswering(ctx, warmCallSpecs) // the first call's specs parse while the model answers (startup.go)
	e.sess.Turns = append(e.sess.Turns, turn{N: len(e.sess.Turns) + 1, Prompt: prompt, Started: time.Now(), Status: "running"})
	by := ""
	if e.turnStarted() {
		by = "machine"
		e.curTurn().By = by
	}
	defer e.turnEnded()
	e.tb.snap = e.snapshot
	if e.sess.Title == "" {
		e.sess.Title = titleOf(prompt)
	}
	defer func() { e.closeTurn(&out, recover()) }()
	if err := e.promptFits(prompt); err != nil {
		return outcome{StopReason: "error", Err: err} // refused before anything is sent (context.go)
	}
	e.awaitMCP(ctx) // MCP tools join before the first request (mcp_tools.go)
	e.autoCompact(ctx, false)
	if err := e.appendMsg(message{Role: "user", Content: e.withNote(prompt, time.Now()), Kind: "prompt", Images: images}); err != nil {
		return outcome{StopReason: "error", Err: err}
	}
	e.send(event{Type: evPrompt, Text: prompt, By: by})
	nudges := 0
	wrapped := false
	for step := 1; ; step++ {
		if step > 1 {
			e.autoCompact(ctx, true)
		}
		if step > e.maxSteps {
			e.send(event{Type: evNotice, Text: fillPairs(lp.Steps.BackstopReached, "steps", e.maxSteps)})
			out.StopReason = "max_turn_requests"
			return out
		}
		if !wrapped && e.maxSteps > lp.Steps.WrapupBefore && step == e.maxSteps-lp.Steps.WrapupBefore+1 {
			wrapped = true
			if err := e.appendMsg(message{Role: "user", Content: lp.Steps.Wrapup, Kind: "wrapup"}); err != nil {
				return outcome{StopReason: "error", Err: err, Usage: out.Usage, Calls: out.Calls}
			}
		}
		e.curTurn().Steps = step
		if err := e.takeSteer(); err != nil {
			out.StopReason, out.Err = "error", err
			return out
		}
		if err := e.takeJobMarks(); err != nil {
			out.StopReason, out.Err = "error", err
			return out
		}
		e.send(event{Type: evStep, Step: step})
		var seen strings.Builder
		rep, err := e.request(ctx, "step",
			func(s string) { seen.WriteString(s); e.send(event{Type: evText, Text: s}) },
			func(s string) { e.send(event{Type: evReasoning, Text: s}) })
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				if seen.Len() > 0 {
					e.appendMsg(message{Role: "assistant", Content: seen.String(), Status: "cancelled"})
				}
				out.StopReason = "cancelled"
				out.Answer = seen.String()
				return out
			}
			out.StopReason = "error"
			out.Err = err
			return out
		}
		out.Usage.add(rep.Usage)
		u := rep.Usage
		// The reply is stored before usage says it is whole: a front end
		// that shows it as ended (stream-json, the REPL's end of line) has
		// it on disk, even under kill -9 (the soak, soak_test.go).
		if err := e.appendMsg(message{Role: "assistant", Content: rep.Text, Reasoning: rep.Reasoning, ToolCalls: rep.Calls}); err != nil {
			out.StopReason, out.Err = "error", err
			return out
		}
		e.send(event{Type: evUsage, Usage: &u})
		if len(rep.Calls) == 0 {
			if e.teamHold(ctx) { // a manager waits for its members' reports in the same turn (team.go)
				continue
			}
			if strings.TrimSpace(rep.Text) == "" && nudges < lp.Nudges.EmptyReplyMax {
				nudges++
				e.send(event{Type: evNotice, Text: lp.Nudges.EmptyReply})
				if err := e.appendMsg(message{Role: "user", Content: lp.Nudges.EmptyReply, Kind: "nudge"}); err != nil {
					out.StopReason, out.Err = "error", err
					return out
				}
				continue
			}
			out.Answer, out.StopReason = rep.Text, stopReasonOf(rep.Finish)
			return out
		}
		calls, err := e.runCalls(ctx, rep.Calls)
		out.Calls = append(out.Calls, calls...)
		out.Usage.add(e.takeSubUsage())
		if err != nil {
			out.StopReason, out.Err = "error", err
			return out
		}
		if ctx.Err() != nil {
			out.StopReason = "cancelled"
			return out
		}
		if e.teamEnded() { // a member called team_finish (team.go)
			out.StopReason = "end_turn"
			return out
		}
	}
}

// closeTurn ends the turn however it ended: a panic anywhere in it (a
// tool's is already its own error result) ends it failed with a sentence —
// the session and the process live, the stack goes to the log —, the turn
// record is kept, steer messages it never took are handed back, and the
// front end hears the end.
func (e *engine) closeTurn(out *outcome, p any) {
	if p != nil {
		e.tb.logf(fmt.Sprintf("the turn panicked: %v\n%s", p, debug.Stack()))
		*out = outcome{StopReason: "error", Usage: out.Usage, Calls: out.Calls,
			Err: errorNew(loopText(theSpec().Loop.ToolErrors, "turn_panic", "error", p))}
	}
	tr := e.curTurn()
	tr.Ended = time.Now()
	tr.StopReason = out.StopReason
	tr.Answer = out.Answer
	tr.Usage = out.Usage
	switch {
	case out.StopReason == "cancelled":
		tr.Status = "cancelled"
	case out.Err != nil:
		tr.Status = "failed"
		tr.Error = out.Err.Error()
	default:
		tr.Status = "done"
	}
	if err := e.st.save(e.sess); err != nil && out.Err == nil {
		out.Err = err
	}
	out.Unsent = e.drainSteer()
	if out.Err != nil && out.StopReason != "cancelled" {
		e.send(event{Type: evError, Text: out.Err.Error()})
	}
	e.send(event{Type: evDone, StopReason: out.StopReason, Text: out.Answer, Usage: &out.Usage})
}

// stopReasonOf is ACP's stop reason for the model's finish reason.
func stopReasonOf(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// titleOf makes a session title from its first prompt.
func titleOf(prompt string) string {
	line := strings.TrimSpace(strings.SplitN(strings.TrimSpace(prompt), "\n", 2)[0])
	if r := []rune(line); len(r) > 60 {
		line = string(r[:60]) + "…"
	}
	return line
}

// pendingCall is one call on its way through permission and running.
type pendingCall struct {
	call toolCall
	t    *toolSpec
	args json.RawMessage
	res  *toolResult
	bare bool // the person approved this one call outside the OS sandbox (sandbox.go)
	// asked is the command the model asked for when the person edited it
	// at the card: the result and the tool line say what ran instead.
	asked string

	purpose string   // what the model said the call is for (purpose.json), shown on its card
	judged  []string // the paths the call was judged by: the only ones a file tool acts on (fs_nolinks.go)
}

// runCalls answers every call of one step, in the order they were made:
// consecutive read-only calls run together, anything else alone. Every
// call gets a result, even when the turn is cancelled half way, so the
// conversation stays valid.
func (e *engine) runCalls(ctx context.Context, calls []toolCall) ([]callRecord, error) {
	lp := theSpec().Loop
	ps := make([]*pendingCall, len(calls))
	var batch []*pendingCall
	flush := func() {
		e.runParallel(ctx, batch)
		batch = nil
	}
	for i, c := range calls {
		p := &pendingCall{call: c}
		ps[i] = p
		if ctx.Err() != nil {
			p.res = &toolResult{Text: lp.ToolErrors["cancelled"], IsError: true, Status: "cancelled"}
			continue
		}
		t := e.tb.lookup(c.Function.Name)
		if t == nil {
			p.res = &toolResult{Text: loopText(lp.ToolErrors, "unknown_tool", "name", c.Function.Name, "tools", e.tb.names()), IsError: true, Status: "failed"}
			continue
		}
		p.t = t
		raw := json.RawMessage(c.Function.Arguments)
		raw = convertFormer(t, c.Function.Name, raw) // a former name that took other arguments
		p.purpose = callPurpose(t, raw)              // checkArgs takes it out of what the tool gets
		args, err := checkArgs(t, raw, theSpec().Purpose.Schema)
		if err != nil {
			p.res = &toolResult{Text: err.Error(), IsError: true, Status: "failed"}
			continue
		}
		p.args = args
		if !e.requirementsMet(t) {
			p.res = &toolResult{Text: e.tb.unavailableText(t), IsError: true, Status: "failed"}
			continue
		}
		if why := e.teamWorkRefusal(t); why != "" { // a manager's own work tools (team.go)
			p.res = &toolResult{Text: why, IsError: true, Status: "refused"}
			continue
		}
		d := e.perm.decideJudged(t, args, &p.judged)
		if d.Verdict == "allow" && batchable(t) {
			batch = append(batch, p)
			continue
		}
		flush()
		if d.Verdict == "ask" {
			ans := e.askPersonFor(ctx, c.ID, t, args, d, p.purpose)
			switch ans.Choice {
			case "once", "session", "project":
				if ans.Choice != "once" {
					if err := e.perm.remember(t, d, ans.Choice); err != nil {
						e.send(event{Type: evNotice, Text: permText("store_failed", "error", err)})
					}
				}
				if ans.Command != "" && t.Name == "bash" {
					// The person's own line still meets the floor and the deny rules.
					p.args = withCommand(args, ans.Command)
					var a struct{ Command string }
					json.Unmarshal(args, &a)
					if a.Command != ans.Command {
						p.asked = a.Command
					}
					if c := e.perm.decide(t, p.args); c.Verdict == "deny" {
						p.res = &toolResult{Text: permText("corrected_refused", "reason", c.Reason), IsError: true, Status: "refused"}
					}
				}
				d.Verdict = "allow"
				p.bare = ans.Choice == "once" && unsandboxedArg(p.args) != ""
			default:
				d.Verdict = "deny"
				p.res = &toolResult{Text: e.perm.refusal(t, d, ans), IsError: true, Status: "refused"}
			}
		} else if d.Verdict == "deny" {
			p.res = &toolResult{Text: e.perm.refusal(t, d, approvalAnswer{}), IsError: true, Status: "refused"}
		}
		if p.res == nil {
			e.runOne(ctx, p)
			if p.asked != "" && p.res != nil {
				var a struct{ Command string }
				json.Unmarshal(p.args, &a)
				p.res.Text = permText("edited_ran", "asked", p.asked, "ran", a.Command) + "\n" + p.res.Text
			}
		}
	}
	flush()
	var recs []callRecord
	var images []message
	for _, p := range ps {
		id, err := e.storeResult(p)
		if err != nil {
			return recs, err
		}
		recs = append(recs, callRecord{Name: p.call.Function.Name, Input: json.RawMessage(p.call.Function.Arguments), Status: p.res.Status, ResultID: id})
		if len(p.res.Images) > 0 {
			images = append(images, message{Role: "user", Content: loopText(lp.ToolErrors, "image_from", "id", id), Images: p.res.Images, Kind: "image"})
		}
	}
	for _, m := range images {
		if err := e.appendMsg(m); err != nil {
			return recs, err
		}
	}
	return recs, nil
}

// askPerson puts one call to the person through the approver; no answer
// within the approval timeout is a denial.
func (e *engine) askPerson(ctx context.Context, callID string, t *toolSpec, args json.RawMessage, d decision) approvalAnswer {
	return e.askPersonFor(ctx, callID, t, args, d, "")
}

// askPersonFor is askPerson for a call that said what it is for: the card
// carries its purpose.
func (e *engine) askPersonFor(ctx context.Context, callID string, t *toolSpec, args json.RawMessage, d decision, purpose string) approvalAnswer {
	defer e.waitingForPerson(t.Name)()
	req := e.perm.request(callID, t, args, d)
	req.Purpose = purpose
	return approveWithin(ctx, e.ask, req, approvalLimit(e.ask))
}

// batchable says whether an allowed call may run beside the step's other
// allowed calls: a reader, when loop.json allows parallel reads, and never
// a tool whose JSON says exclusive — that one runs alone, the calls before
// it finished and the ones after it not yet started.
func batchable(t *toolSpec) bool {
	return t.Risk == "read" && theSpec().Loop.Parallel.ReadOnly && !t.Exclusive
}

// withCommand is a bash call's arguments with its command line replaced.
func withCommand(args json.RawMessage, line string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil || m == nil {
		m = map[string]any{}
	}
	m["command"] = line
	out, _ := json.Marshal(m)
	return out
}

// runParallel runs read-only calls together, at most loop.json's max at once.
func (e *engine) runParallel(ctx context.Context, ps []*pendingCall) {
	if len(ps) == 0 {
		return
	}
	max := theSpec().Loop.Parallel.Max
	sem := make(chan struct{}, max)
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		sem <- struct{}{}
		go func(p *pendingCall) {
			defer wg.Done()
			defer func() { <-sem }()
			e.runOne(ctx, p)
		}(p)
	}
	wg.Wait()
}

func (e *engine) runOne(ctx context.Context, p *pendingCall) {
	ctx = withCallID(ctx, p.call.ID) // a card is keyed by its call (link_cards.go)
	e.send(event{Type: evToolStart, Tool: &toolEvent{ID: p.call.ID, Name: p.t.Name, Block: p.t.Block, Risk: p.t.Risk, Input: string(p.args)}})
	if f := sessionTool(p.t.Name); f != nil {
		r := e.runSessionTool(ctx, f, p.t, p.args)
		p.res = &r
		return
	}
	id, name, block := p.call.ID, p.t.Name, p.t.Block
	ctx = withSandboxCall(ctx, e.perm.mode(), p.bare)
	ctx = withJudged(ctx, p.judged)
	ctx = withNetAsker(ctx, e.ask) // a host not allowed is asked through it (sandbox_netask.go)
	ctx = withJobs(ctx, e)
	ctx = withLive(ctx, func(tail string) {
		e.send(event{Type: evToolOutput, Text: tail, Tool: &toolEvent{ID: id, Name: name, Block: block}})
	})
	t0 := time.Now()
	r := e.tb.run(ctx, p.t, p.args)
	traceSince(t0, "tool %s: %d bytes", name, len(r.Text))
	p.res = &r
}

// storeResult gives a call's result its id, caps it, stores it, and tells
// the front ends.
func (e *engine) storeResult(p *pendingCall) (string, error) {
	n := e.sess.NextResult
	if n < 1 {
		n = 1
	}
	e.sess.NextResult = n + 1
	id := resultID(n)
	shown, full := e.insertResult(p, id)
	m := message{Role: "tool", ToolCallID: p.call.ID, ToolName: p.call.Function.Name, ResultID: id,
		Content: shown, Full: full, Status: p.res.Status}
	if err := e.appendMsg(m); err != nil {
		return id, err
	}
	name, block := p.call.Function.Name, "tool"
	if p.t != nil {
		name, block = p.t.Name, p.t.Block
	}
	if p.t == nil || p.res.Status == "refused" || p.args == nil {
		// It never started: say so once, for front ends that pair events.
		e.send(event{Type: evToolStart, Tool: &toolEvent{ID: p.call.ID, Name: name, Block: block, Input: p.call.Function.Arguments}})
	}
	input := p.call.Function.Arguments
	if p.asked != "" {
		input = string(p.args) // what ran: the person's edited line
	}
	end := event{Type: evToolEnd, Tool: &toolEvent{ID: p.call.ID, Name: name, Block: block, Input: input,
		ResultID: id, Output: shown, IsError: p.res.IsError, Status: p.res.Status, Edited: p.asked != ""}}
	e.send(end)
	if n := prototypeNotice(end, e.tb.displayMet()); n != "" { // named in every transcript (session_prototypes.go)
		e.send(event{Type: evNotice, Text: n})
	}
	return id, nil
}

// steer queues a message for the running turn's next step and says how
// many are waiting (seed: _lembas/steer).
func (e *engine) steer(text string) int {
	e.steerMu.Lock()
	defer e.steerMu.Unlock()
	e.steerQ = append(e.steerQ, text)
	return len(e.steerQ)
}

// drainSteer empties the queue.
func (e *engine) drainSteer() []string {
	e.steerMu.Lock()
	defer e.steerMu.Unlock()
	q := e.steerQ
	e.steerQ = nil
	return q
}

// takeSteer gives the queued messages to the model before its next request,
// each a user message of kind steer, and tells the front ends.
func (e *engine) takeSteer() error {
	for _, text := range e.drainSteer() {
		if err := e.appendMsg(message{Role: "user", Content: text, Kind: "steer"}); err != nil {
			return err
		}
		e.send(event{Type: evSteered, Text: text})
	}
	return nil
}

// newEngine makes an engine on a tool host, and hooks the host to it: what
// a tool sends goes out as the engine's events, and a call a tool makes on
// the person's behalf is asked as the engine asks.
//
//go:noinline
func newEngine(ref *modelRef, tb *toolbox, perm *permissions, st *store, sess *session, maxSteps int) *engine {
	e := &engine{toolHost: toolHost{ref: ref, tb: tb, perm: perm, st: st, sess: sess}, maxSteps: maxSteps}
	e.owner, e.sendEv, e.askCall = e, e.send, e.askPerson
	return e
}

// engineTool is a session tool that needs the engine itself (the plan, jobs,
// subagents, ask_user): the host it is called on is always an engine's.
//
//go:noinline
func engineTool(f func(e *engine, ctx context.Context, t *toolSpec, args json.RawMessage) toolResult) sessionToolFunc {
	return func(h *toolHost, ctx context.Context, t *toolSpec, args json.RawMessage) toolResult {
		return f(h.owner.(*engine), ctx, t, args)
	}
}

// runSessionTool runs one, turning a panic into an error result like any
// tool's.
func (e *engine) runSessionTool(ctx context.Context, f sessionToolFunc, t *toolSpec, args json.RawMessage) (res toolResult) {
	defer func() {
		if p := recover(); p != nil {
			res = toolResult{Text: loopText(theSpec().Loop.ToolErrors, "panic", "name", t.Name, "error", p), IsError: true, Status: "failed"}
		}
	}()
	res = f(&e.toolHost, ctx, t, args)
	if res.Status == "" {
		res.Status = "completed"
		if res.IsError {
			res.Status = "failed"
		}
	}
	return res
}

// awaitMCP is the engine's hook at the start of a turn: the first time, it
// waits for the servers and adds their tools to the toolbox (or the search
// tool when they would not fit the budget); every time, it turns a changed
// tool list into a session note.
func (e *engine) awaitMCP(ctx context.Context) {
	m := e.tb.mcp
	if m == nil {
		return
	}
	m.mu.Lock()
	fixed := m.fixed
	m.mu.Unlock()
	sp := theMCP()
	if !fixed {
		m.approveHeld(ctx, e.ask, m.root, func(t string) { e.send(event{Type: evNotice, Text: t}) }) // mcp_approve.go
		for _, s := range m.servers {
			s.scope = func() string { return e.sess.ID } // read at each call: /new changes the session
			s.mu.Lock()
			s.person = func() asker { return e.asker }                           // elicitation (mcp_elicit.go)
			s.notice = func(t string) { e.send(event{Type: evNotice, Text: t}) } // logins, elicitation notices
			s.mu.Unlock()
		}
		m.wait(ctx)
		if ctx.Err() != nil {
			return // cancelled while waiting: the next turn waits again, the list not yet fixed
		}
		for _, n := range m.fix() {
			e.send(event{Type: evNotice, Text: n})
		}
		var specs []*toolSpec
		impls := map[string]toolFunc{}
		for _, t := range m.tools {
			ts := m.toolSpecOf(t)
			specs = append(specs, ts)
			impls[ts.Name] = m.impl(t)
		}
		if len(specs) > 0 {
			window := e.ref.Meta.Context
			if window <= 0 {
				window = theSpec().Models.Defaults.Context
			}
			budget := sp.num("schema_share") * float64(window) * sp.num("chars_per_token")
			if float64(mcpDefsBytes(specs)) > budget {
				m.mu.Lock()
				m.search = true
				m.mu.Unlock()
				specs, impls = []*toolSpec{m.searchSpec()}, nil
			}
			if err := e.tb.addExtraTools(specs, impls); err != nil {
				e.send(event{Type: evNotice, Text: err.Error()})
			}
		}
	}
	for _, s := range m.servers {
		s.mu.Lock()
		tell := s.changed && !s.noted
		s.noted = s.noted || tell
		s.mu.Unlock()
		if tell {
			e.sess.Notes = append(e.sess.Notes, sp.text("list_changed_note", "server", s.cfg.Name))
			e.send(event{Type: evNotice, Text: sp.text("list_changed_notice", "server", s.cfg.Name)})
		}
	}
}

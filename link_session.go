package main

// The link's requests: initialize at protocol 3, sessions opened under the
// device's limits on the instance's own model, prompts deduplicated by
// turn id, and the _lembas/* methods. The ACP work itself (a session's
// queue, its updates, approvals) is acp_agent.go's and acp_session.go's;
// this file decides what the link allows and adds what only the link has:
// turn ids, _lembas/event, the instance's context, deletes.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// linkSession is what the link adds to one acpSession.
type linkSession struct {
	svc *linkService
	s   *acpSession

	mu         mutex
	pending    []string                   // turn ids in arrival order; the first runs
	contexts   map[string]instanceContext // turn id → the context it brought
	system     string                     // the instance's instructions now in the prompt
	person     *personalization
	presetSaid string          // the instance's preset name last checked (unknownPreset)
	library    *linkLibrary    // the knowledge bases the chat may search (capability library)
	prototypes *linkPrototypes // whether the chat offers prototypes (capability prototypes)
	compacting bool            // a compaction runs: prompts wait for none, they are refused
	running    string
	baseSystem string // the session's system prompt before the instance's instructions
	lastTitle  string
	effort     string    // the level the client chose (session/new, configure); "": none
	sched      *schedRun // a scheduled run's session (link_scheduled.go); nil: any other
}

// linkPromptMeta is session/prompt's _meta.lembas (and session/new's).
type linkContext struct {
	TurnID          string           `json:"turnId"`
	SystemPrompt    *string          `json:"system_prompt"`
	Personalization *personalization `json:"personalization"`
	Library         *linkLibrary     `json:"library"`    // capability library (link_library.go)
	Prototypes      *linkPrototypes  `json:"prototypes"` // capability prototypes (link_prototypes.go)
	Scheduled       *schedParams     `json:"scheduled"`  // session/new of a scheduled run (link_scheduled.go)
	Agents          *linkAgents      `json:"agents"`     // capability agents: the chat's Subagents {min, max} (link_team.go)
	Said            []string         `json:"said"`       // capability agents, session/new: the person's earlier words
}

// instanceContext is what a prompt brought of the instance's context; a
// field left nil keeps what the session had.
type instanceContext struct {
	system     *string
	person     *personalization
	library    *linkLibrary
	prototypes *linkPrototypes
}

type linkNewParams struct {
	Cwd  string `json:"cwd"`
	Meta struct {
		Mode        string      `json:"mode"`
		LembasModel string      `json:"lembas_model"`
		Effort      string      `json:"effort"`
		Lembas      linkContext `json:"lembas"`
	} `json:"_meta"`
}

type linkPromptParams struct {
	SessionID string `json:"sessionId"`
	Meta      struct {
		Lembas linkContext `json:"lembas"`
	} `json:"_meta"`
}

type linkIDParams struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	Title     string `json:"title"`
	Text      string `json:"text"`
	MessageID string `json:"messageId"`
	Model     string `json:"model"`
	Effort    string `json:"effort"`
	Path      string `json:"path"`
	Cwd       string `json:"cwd"`
	Query     string `json:"query"`
	Limit     int    `json:"limit"`
}

// capabilities is what initialize lists: link.json's set, plus terminal
// and shell only when the build has terminals and remote.terminal is on,
// plus progress when the engine emits that event kind.
func (svc *linkService) capabilities(lim remoteLimits) []string {
	caps := append([]string{}, svc.sp.Capabilities...)
	if svc.newTerm != nil && lim.Terminal {
		caps = append(caps, "terminal", "shell")
	}
	caps = append(caps, "progress")                     // the 3.4.0 progress event (progress.go)
	caps = append(caps, teamLinkCaps...)                // tree, agents (link_team.go)
	caps = append(caps, theCardsSpec().Capabilities...) // ask, plan, show, jobs (link_cards.go)
	svc.mu.Lock()
	lib, proto := svc.libraryCap, svc.prototypesCap
	svc.mu.Unlock()
	if proto {
		caps = append(caps, "prototypes") // _meta.lembas.prototypes read (link_prototypes.go)
	}
	if lib {
		caps = append(caps, "library") // the instance's library is this device's (link_library.go)
	}
	// Once each: link.json and cards.json both name progress, and a client
	// reading the list as a set must not see a name twice.
	seen := map[string]bool{}
	out := caps[:0]
	for _, c := range caps {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func (svc *linkService) hasCap(lim remoteLimits, c string) bool {
	for _, x := range svc.capabilities(lim) {
		if x == c {
			return true
		}
	}
	return false
}

// methodCaps names the capability each _lembas method needs.
var methodCaps = map[string]string{
	"_lembas/directories": "directories", "_lembas/configure": "configure", "_lembas/steer": "steer",
	"_lembas/session/status": "status", "_lembas/session/delete": "delete", "_lembas/session/compact": "compact",
	"_lembas/session/title": "title", "_lembas/files/search": "files", "_lembas/commands": "commands",
	"_lembas/session/rewind": "rewind", "_lembas/session/history": "sessions",
	"_lembas/terminal/open": "terminal", "_lembas/terminal/input": "terminal", "_lembas/terminal/resize": "terminal",
	"_lembas/terminal/close": "terminal",
	"_lembas/jobs":           "jobs", "_lembas/job/output": "jobs", "_lembas/job/stop": "jobs",
	"_lembas/job/send": "jobs", "_lembas/job/transcript": "jobs",
	"_lembas/monitor": "scheduled",
}

// request routes one request of the link. Like acp_agent.go's, it runs on
// the read loop: what must keep arrival order is decided here; what is
// slow runs in a goroutine. At most ws.max_inflight requests are worked
// on at once; one more is refused at once, so a flood costs no memory.
func (svc *linkService) request(c *rpcCall) {
	svc.touched()
	sock := svc.pipe.socket()
	if sock != nil {
		c.to = &socketWriter{s: sock}
	}
	if svc.inflight.Add(1) > int64(svc.sp.WS.MaxInflight) {
		svc.inflight.Add(-1)
		c.reply(nil, rpcErrorf(rpcInternalError, "too many requests at once (%d); wait for answers before sending more", svc.sp.WS.MaxInflight))
		return
	}
	if sw, ok := c.to.(*socketWriter); ok {
		sw.after = func(b []byte) []byte { svc.inflight.Add(-1); return b }
	} else {
		c.to = &socketWriter{s: nil, after: func(b []byte) []byte { svc.inflight.Add(-1); return b }}
	}
	lim, lerr := readRemoteLimits()
	if lerr != nil {
		svc.log(lerr.Error())
	}
	svc.agent.mu.Lock()
	ready := svc.agent.initialized
	svc.agent.mu.Unlock()
	if c.Method != "initialize" && !ready {
		c.reply(nil, &rpcError{Code: rpcInvalidRequest, Message: svc.agent.sp.Errors["not_initialized"]})
		return
	}
	if need, ok := methodCaps[c.Method]; ok && !svc.hasCap(lim, need) {
		c.reply(nil, rpcErrorf(rpcMethodNotFound, "%s", loopText(svc.sp.Errors, "unknown_method", "method", methodForError(c.Method))))
		return
	}
	if err := svc.refuseScheduledRequest(c.Method, c.Params, lim); err != nil { // link_scheduled.go
		c.reply(nil, err)
		return
	}
	async := func(f func() (any, error)) {
		svc.agent.wg.Add(1)
		go func() {
			defer svc.agent.wg.Done()
			defer c.recovered()
			c.reply(f())
		}()
	}
	switch c.Method {
	case "initialize":
		res, err := svc.initialize(c.Params, lim)
		c.reply(res, err)
		if svc.refused() && sock != nil {
			sock.closeWith(4400) // after the answer: both go through one queue
		}
		svc.mu.Lock()
		lembas := svc.lembas
		svc.mu.Unlock()
		if err == nil && lembas {
			// After the answer, which is already queued; both are the
			// agent's, so shutdown waits for them.
			svc.agent.wg.Add(2)
			go func() { defer svc.agent.wg.Done(); svc.sendDeletes() }()
			go func() { defer svc.agent.wg.Done(); svc.announceAll() }() // link_share.go: the terminals' shared sessions
		}
	case "authenticate":
		c.reply(struct{}{}, nil)
	case "session/new":
		svc.agent.wg.Add(1)
		go func() {
			defer svc.agent.wg.Done()
			defer c.recovered()
			res, after, err := svc.newSession(c.Params, lim)
			c.reply(res, err)
			if after != nil {
				after() // the session's updates follow its answer (acp.md)
			}
		}()
	case "session/prompt":
		svc.prompt(c, lim)
	case "session/set_mode":
		var p acpModeParams
		if err := decodeParams(c.Method, c.Params, &p); err != nil {
			c.reply(nil, err)
			return
		}
		m, err := normMode(p.ModeID)
		if err != nil {
			c.reply(nil, paramErr("mode", "mode", p.ModeID, "modes", strings.Join(theSpec().Modes.Order, ", ")))
			return
		}
		p.ModeID = lim.lowerMode(m)
		if err := svc.schedSetMode(p.SessionID, p.ModeID); err != nil {
			c.reply(nil, err)
			return
		}
		res, rerr := svc.agent.setMode(rawJSON(p))
		if rerr == nil {
			svc.event(p.SessionID, map[string]any{"type": "mode", "mode": p.ModeID})
		}
		c.reply(res, rerr)
	case "_lembas/directories":
		var p linkIDParams
		if err := decodeParams(c.Method, c.Params, &p); err != nil {
			c.reply(nil, err)
			return
		}
		c.reply(lim.directories(p.Path))
	case "_lembas/commands":
		svc.agent.request(c)
	case "_lembas/files/search":
		async(func() (any, error) { return svc.filesSearch(c.Params, lim) })
	case "_lembas/steer":
		c.reply(svc.steer(c.Params))
	case "_lembas/session/status":
		c.reply(svc.status(c.Params))
	case "_lembas/session/history":
		c.reply(svc.history(c.Params))
	case "_lembas/session/delete":
		async(func() (any, error) { return svc.deleteSession(c.Params, lim) })
	case "_lembas/session/title":
		c.reply(svc.setTitle(c.Params))
	case "_lembas/session/compact":
		async(func() (any, error) { return svc.compact(c.Params) })
	case "_lembas/session/rewind":
		c.reply(svc.rewind(c.Params))
	case "_lembas/configure":
		async(func() (any, error) { return svc.configure(c.Params) })
	case "_lembas/jobs", "_lembas/job/output", "_lembas/job/stop", "_lembas/job/send", "_lembas/job/transcript":
		async(func() (any, error) { return svc.jobRequest(c.Method, c.Params, lim) })
	case "_lembas/terminal/open", "_lembas/terminal/input", "_lembas/terminal/resize", "_lembas/terminal/close":
		svc.terminalRequest(c, async)
	case "_lembas/monitor":
		async(func() (any, error) { return svc.monitor(c.Params, lim) }) // link_monitor.go
	case "_lembas/team", "_lembas/team/transcript", "_lembas/team/findings", "_lembas/team/stop":
		async(func() (any, error) { return svc.teamRequest(c.Method, c.Params, lim) }) // capability tree (link_team.go)
	default:
		c.reply(nil, rpcErrorf(rpcMethodNotFound, "%s", loopText(svc.sp.Errors, "unknown_method", "method", methodForError(c.Method))))
	}
}

// notification handles session/cancel and the terminals' notifications.
func (svc *linkService) notification(method string, params json.RawMessage) {
	svc.touched()
	switch method {
	case "_lembas/terminal/input", "_lembas/terminal/resize", "_lembas/terminal/close":
		svc.terminalNotification(method, params)
	case "session/cancel":
		if !svc.sharedCancel(params) { // a terminal's shared session: its REPL cancels (link_share_prompts.go)
			svc.agent.notification(method, params)
		}
	default:
		svc.agent.notification(method, params)
	}
}

// initialize answers at protocol 3; a client on another protocol is
// refused and the link closed with 4400. Every delete kept while no link
// was up follows the answer.
func (svc *linkService) initialize(raw json.RawMessage, lim remoteLimits) (any, error) {
	if err := checkProtocolVersion(raw); err != nil {
		return nil, err
	}
	var p struct {
		ClientCapabilities struct {
			Meta struct {
				Lembas json.RawMessage `json:"lembas"`
			} `json:"_meta"`
		} `json:"clientCapabilities"`
	}
	if err := decodeParams("initialize", raw, &p); err != nil {
		return nil, err
	}
	lembas := len(p.ClientCapabilities.Meta.Lembas) > 0 && jsonKind(p.ClientCapabilities.Meta.Lembas) != '0'
	wantsPrototypes := false
	if lembas {
		var lp struct {
			Protocol     json.RawMessage `json:"protocol"`
			Capabilities []string        `json:"capabilities"` // what the client asks of the device beyond the set (prototypes)
		}
		json.Unmarshal(p.ClientCapabilities.Meta.Lembas, &lp)
		wantsPrototypes = contains(lp.Capabilities, "prototypes")
		got := strings.TrimSpace(string(lp.Protocol))
		if jsonKind(p.ClientCapabilities.Meta.Lembas) != 'o' || got != "3" {
			if got == "" {
				got = "1"
			}
			svc.mu.Lock()
			svc.stopErr = errStop4400
			svc.mu.Unlock()
			return nil, &rpcError{Code: rpcInvalidParams, Message: loopText(svc.sp.Errors, "client_protocol", "protocol", cutForError(got, 16))}
		}
	}
	res, err := svc.agent.initialize(raw)
	if err != nil {
		return nil, err
	}
	svc.mu.Lock()
	svc.lembas = lembas
	svc.prototypesCap = wantsPrototypes // link_prototypes.go: listed only for a client that asks
	svc.cards = linkCardState{}
	disc := svc.disc
	svc.mu.Unlock()
	if lembas {
		svc.sched.linked() // a scheduled approval waiting for a link asks again (link_scheduled.go)
	}
	m := res.(map[string]any)
	m["agentCapabilities"].(map[string]any)["loadSession"] = false
	// The link's session/new takes no mcpServers (the device's own MCP
	// config applies), so it offers no MCP transport to the client.
	m["agentCapabilities"].(map[string]any)["mcpCapabilities"] = map[string]bool{"http": false, "sse": false}
	meta := m["_meta"].(map[string]any)["lembas"].(map[string]any)
	meta["protocol"] = svc.sp.Protocol
	meta["limits"] = lim.announced()
	meta["connection"] = svc.login.Name
	svc.mu.Lock()
	svc.libraryCap = libraryOverLogin(svc.login) // link_library.go: fixed for the link, as the others are
	svc.mu.Unlock()
	meta["capabilities"] = svc.capabilities(lim)
	if disc != nil {
		meta["instance"] = disc.Name
	}
	return m, nil
}

// newSession answers session/new: the folder judged by the limits, the
// model the instance's (no other), the mode lowered to max_mode. after
// sends the session's first updates; the caller runs it once the answer is
// queued, since a client learns the session id from the answer and may drop
// updates for an id it does not know yet.
func (svc *linkService) newSession(raw json.RawMessage, lim remoteLimits) (res any, after func(), err error) {
	var p linkNewParams
	if err := decodeParams("session/new", raw, &p); err != nil {
		return nil, nil, err
	}
	if sp := p.Meta.Lembas.Scheduled; sp != nil {
		return svc.newScheduledSession(p, *sp, lim) // link_scheduled.go
	}
	return svc.openLinkSession(p, lim, nil)
}

// openLinkSession opens the session session/new asked for; run marks a
// scheduled run's.
func (svc *linkService) openLinkSession(p linkNewParams, lim remoteLimits, run *schedRun) (res any, after func(), err error) {
	dir, jerr := lim.judgeDir(p.Cwd)
	if jerr != nil {
		return nil, nil, jerr
	}
	served, err := svc.login.servedModels(svc.agent.ctx)
	if err != nil {
		return nil, nil, rpcErrorf(rpcInternalError, "listing the instance's models: %v", err)
	}
	if p.Meta.LembasModel == "" || !slices.Contains(served, p.Meta.LembasModel) {
		return nil, nil, linkErr("model", "model", cutForError(p.Meta.LembasModel, 200), "served", strings.Join(served, ", "))
	}
	mode := lim.MaxMode
	if p.Meta.Mode != "" {
		m, err := normMode(p.Meta.Mode)
		if err != nil {
			return nil, nil, paramErr("mode", "mode", p.Meta.Mode, "modes", strings.Join(theSpec().Modes.Order, ", "))
		}
		mode = lim.lowerMode(m)
	}
	f := &sessionOpts{cwd: dir, mode: mode, model: svc.login.Name + "/" + p.Meta.LembasModel, effort: p.Meta.Effort, linkOpened: true}
	if a := p.Meta.Lembas.Agents; a != nil {
		f.agents = []int{a.Min, a.Max} // the team tools' offer is decided with the chat's setting
	} else if run != nil && run.Agents != nil {
		f.agents = []int{run.Agents.Min, run.Agents.Max} // a scheduled run: the schedule's Min/Max, as an agent chat's
	}
	e, cleanup, err := newSessionEngine(svc.agent.ctx, f, false, svc.log)
	if err != nil {
		return nil, nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
	}
	if run != nil {
		if err := markScheduled(e.sess.ID, *run); err != nil {
			// Opened again without its mark, the session would not be
			// scheduled any more: it is not opened at all.
			cleanup()
			return nil, nil, &rpcError{Code: rpcInternalError, Message: err.Error() + "; free the disk or fix the state folder's permissions, then run it again"}
		}
	}
	ls := svc.adopt(e, cleanup)
	ls.applyContext(instanceContext{system: p.Meta.Lembas.SystemPrompt, person: p.Meta.Lembas.Personalization, library: p.Meta.Lembas.Library, prototypes: p.Meta.Lembas.Prototypes})
	markGiven(ls.s.id, svc.log)
	linkTeamStart(e, p.Meta.Lembas.Agents, p.Meta.Lembas.Said) // link_team.go
	ls.effort = p.Meta.Effort
	res = map[string]any{
		"sessionId": ls.s.id,
		"modes":     modeState(e.perm.mode()),
		"_meta": map[string]any{"lembas": map[string]any{"model": p.Meta.LembasModel, "mode": e.perm.mode(),
			"effort": nilIfEmpty(p.Meta.Effort), "instance": true}},
	}
	after = func() {
		ls.s.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": availableCommands(ls.s.root)})
		if e.sess.Plan != nil {
			ls.s.update(planUpdate(e.sess.Plan))
		}
	}
	return res, after, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// adopt makes an engine one of the link's sessions: an acpSession (its
// updates, approvals and queue) whose events also go out as _lembas/event.
func (svc *linkService) adopt(e *engine, cleanup func()) *linkSession {
	s := svc.agent.newSession(e, cleanup)
	ls := &linkSession{svc: svc, s: s, contexts: map[string]instanceContext{},
		baseSystem: baseSystemPrompt(e.sess.System), lastTitle: e.sess.Title}
	acpEmit := e.emit
	e.emit = func(ev event) {
		ls.onEngineEvent(ev)
		acpEmit(ev)
	}
	e.ask = &linkApprover{s: s, svc: svc}
	ls.sched = scheduledMark(s.id)
	ls.hookCards()
	if ls.sched != nil {
		ls.hookScheduled() // link_scheduled.go
	}
	svc.agent.mu.Lock()
	svc.agent.sessions[s.id] = s
	svc.agent.mu.Unlock()
	svc.mu.Lock()
	svc.linkSess[s.id] = ls
	svc.mu.Unlock()
	return ls
}

// applyContext puts the instance's instructions, and the account's
// personalization, after the session's own prompt, the newer replacing
// the older. Called where no request is being built: before the first
// turn, or on the engine's own goroutine.
func (ls *linkSession) applyContext(c instanceContext) {
	if c.system != nil {
		ls.system = *c.system
	}
	if c.person != nil {
		ls.person = c.person
	}
	if c.library != nil {
		ls.library = c.library
	}
	if c.prototypes != nil {
		ls.prototypes = c.prototypes
	}
	sys := withKnowledgeScope(withoutPersonalization(ls.baseSystem), ls.library) // link_library.go
	sys = withPrototypes(sys, ls.prototypes)                                     // link_prototypes.go
	if strings.TrimSpace(ls.system) != "" {
		name := ls.svc.login.Name
		if d := ls.svc.disc; d != nil && d.Name != "" {
			name = d.Name
		}
		sys += "\n\n" + linkText("instructions_heading", "instance", name) + "\n\n" + strings.TrimSpace(ls.system)
	}
	p := ls.person
	if p == nil {
		p = localPersonalization() // null from the client: the device's own (config_personality.go)
	} else if c.person != nil && p.Personality != ls.presetSaid {
		ls.presetSaid = p.Personality // once per name, not on every prompt that resends it
		if n := unknownPreset(p, ls.svc.login.Name); n != "" {
			ls.svc.event(ls.s.id, map[string]any{"type": evNotice, "text": n}) // the person sees why the preset is missing
		}
	}
	ls.s.e.sess.System = withPersonalization(sys, p)
}

// onEngineEvent runs on the engine's goroutine for every event: it marks
// the head turn running at its prompt, applies the context that turn
// brought, and forwards the event (with the turn's id) as _lembas/event.
func (ls *linkSession) onEngineEvent(ev event) {
	if ev.Agent != "" { // a subagent's event: forwarded as it is, never the session's turn (its prompt, its done)
		ls.svc.event(ls.s.id, eventMap(ev))
		return
	}
	ls.mu.Lock()
	tid := ls.running
	if ev.Type == evPrompt && len(ls.pending) > 0 {
		tid = ls.pending[0]
		ls.running = tid
	}
	ctx, hasCtx := ls.contexts[tid]
	ls.mu.Unlock()
	id := ls.s.id
	if ev.Type == evPrompt {
		if hasCtx {
			ls.applyContext(ctx)
		}
		ls.svc.turns.running(id, tid, len(ls.s.e.sess.Turns))
		ls.svc.event(id, map[string]any{"type": "task", "state": "start", "turnId": tid})
	}
	m := eventMap(ev)
	linkEventExtras(ev, m)
	if ev.Type == evPlan {
		m["plan"] = planWire(ev.Plan) // the seed's shape, not the record's (plan.go)
	}
	if ev.Type == evSteered {
		ls.svc.steeredEvent(id, ev, m) // link_steer.go
	}
	if ev.Type == evDone {
		ls.svc.steers.forget(id)
	}
	if ev.Type == evPrompt || ev.Type == evDone {
		m["turnId"] = tid
	}
	if ev.Type == evPrompt {
		showPrompt(id, tid, m) // link_attachments.go
	}
	if ev.Type == evProgress {
		if tid != "" {
			m["turnId"] = tid // which turn the phase is of, as queued's says
		}
		ls.svc.progressEvents(id, m) // the phase event beside the old one (link_cards.go)
	} else {
		ls.svc.event(id, m)
	}
	if ev.Type == evDone {
		if t := ls.s.e.sess.Title; t != ls.lastTitle {
			ls.lastTitle = t
			ls.svc.event(id, map[string]any{"type": "title", "id": id, "title": t})
		}
		ls.svc.event(id, map[string]any{"type": "task", "state": "end", "turnId": tid})
	}
}

// eventMap is an engine event as the link sends it: its own fields, by
// kind, whatever the kind — kinds added later go through unchanged.
func eventMap(ev event) map[string]any {
	var m map[string]any
	json.Unmarshal(rawJSON(ev), &m)
	delete(m, "session_id")
	return m
}

// event sends one _lembas/event to a client that said _meta.lembas.
func (svc *linkService) event(sessionID string, ev map[string]any) {
	svc.mu.Lock()
	lembas := svc.lembas && svc.sock != nil
	svc.mu.Unlock()
	if lembas {
		svc.conn.notify("_lembas/event", map[string]any{"sessionId": sessionID, "event": ev})
	}
}

// approvalTimeout is remote.approval_timeout as it is now.
func (svc *linkService) approvalTimeout() int {
	lim, _ := readRemoteLimits()
	return lim.ApprovalTimeout
}

// paramsSession decodes a method's params into p and finds the session
// whose id they put in *id (a field of p): the start every per-session
// method shares.
func (svc *linkService) paramsSession(method string, raw json.RawMessage, lim remoteLimits, p any, id *string) (*linkSession, *rpcError) {
	if err := decodeParams(method, raw, p); err != nil {
		return nil, err
	}
	return svc.session(*id, lim)
}

// session finds a session of the link, opening it from the store (under
// the limits as they are now) when it is not in memory.
func (svc *linkService) session(id string, lim remoteLimits) (*linkSession, *rpcError) {
	svc.mu.Lock()
	ls := svc.linkSess[id]
	svc.mu.Unlock()
	if ls != nil {
		return ls, nil
	}
	if !validID(id) {
		return nil, linkErr("no_session", "id", cutForError(id, 64))
	}
	sess, err := newStore(stateDir(), svc.log).read(id)
	if err != nil {
		return nil, linkErr("no_session", "id", id)
	}
	if _, jerr := lim.judgeDir(sess.Project); jerr != nil {
		return nil, jerr
	}
	model := sess.Model
	if !strings.HasPrefix(model, svc.login.Name+"/") {
		return nil, linkErr("model", "model", model, "served", "")
	}
	e, cleanup, err := newSessionEngine(svc.agent.ctx, &sessionOpts{cwd: sess.Project, sessionID: id, mode: lim.lowerMode(sess.Mode), linkOpened: true}, false, svc.log)
	if err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
	}
	svc.mu.Lock()
	if other := svc.linkSess[id]; other != nil { // opened meanwhile
		svc.mu.Unlock()
		cleanup()
		return other, nil
	}
	svc.mu.Unlock()
	ls = svc.adopt(e, cleanup)
	go func() {
		ls.s.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": availableCommands(ls.s.root)})
		if e.sess.Plan != nil {
			ls.s.update(planUpdate(e.sess.Plan))
		}
	}()
	return ls, nil
}

// newTurnID makes a turn id for a prompt that brought none.
func newTurnID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "turn_" + hex.EncodeToString(b)
}

// prompt takes a session/prompt: a known turn id gets the original's
// answer (at once, or when it ends) and never runs again; a new one is
// recorded, and the prompt goes to the session's queue, its answer kept
// in the turns file on its way out.
func (svc *linkService) prompt(c *rpcCall, lim remoteLimits) {
	var p linkPromptParams
	if err := decodeParams(c.Method, c.Params, &p); err != nil {
		c.reply(nil, err)
		return
	}
	tid := p.Meta.Lembas.TurnID
	if tid == "" {
		tid = newTurnID()
	}
	if len(tid) > 200 || !utf8.ValidString(tid) {
		c.reply(nil, rpcErrorf(rpcInvalidParams, "a turnId is at most 200 bytes of UTF-8"))
		return
	}
	if sc := svc.shares.conn(p.SessionID); sc != nil {
		svc.sharedPrompt(c, lim, sc, p.SessionID, tid) // a terminal's shared session: the REPL runs it (link_share_prompts.go)
		return
	}
	ls, err := svc.session(p.SessionID, lim)
	if err != nil {
		c.reply(nil, err)
		return
	}
	if err := ls.refuseScheduled(lim); err != nil {
		c.reply(nil, err)
		return
	}
	id := ls.s.id
	ls.mu.Lock()
	compacting := ls.compacting
	ls.mu.Unlock()
	if compacting {
		c.reply(nil, linkErr("busy", "id", id))
		return
	}
	before := svc.turns.state(id, tid)
	fresh, answer, wait := svc.turns.claim(id, tid)
	if !fresh {
		if before == "queued" && answer != nil {
			ls.keepCutPrompt(c.Params) // a restart cut it off before the session had it (link_turns.go)
		}
		svc.replyKnownTurn(c, answer, wait)
		return
	}
	ls.mu.Lock()
	ls.pending = append(ls.pending, tid)
	ahead := len(ls.pending) - 1
	if a := p.Meta.Lembas.Agents; a != nil {
		ls.s.e.setTeamRange(a.Min, a.Max) // capability agents: the chat's setting on every turn
	}
	if c := p.Meta.Lembas; c.SystemPrompt != nil || c.Personalization != nil || c.Library != nil || c.Prototypes != nil {
		ls.contexts[tid] = instanceContext{system: c.SystemPrompt, person: c.Personalization, library: c.Library, prototypes: c.Prototypes}
	}
	ls.mu.Unlock()
	if ahead > 0 {
		ls.sendQueued(tid, ahead)
	}
	notePromptShown(id, tid, c.Params) // link_attachments.go
	sw, _ := c.to.(*socketWriter)
	prev := sw.after
	sw.after = func(b []byte) []byte {
		b = ls.finishTurn(tid, b)
		return prev(b)
	}
	svc.agent.prompt(c)
}

// finishTurn takes a prompt's answer on its way out: the turn id goes into
// its _meta.lembas, and the answer into the turns file for a prompt sent
// again; the turn leaves the session's pending list.
func (ls *linkSession) finishTurn(tid string, frame []byte) []byte {
	var m rpcMessage
	if json.Unmarshal(frame, &m) != nil {
		return frame
	}
	var res map[string]any
	if m.Result != nil {
		json.Unmarshal(m.Result, &res)
	}
	if res == nil {
		msg := "the turn failed"
		if m.Error != nil {
			msg = m.Error.Message
		}
		res = map[string]any{"stopReason": "end_turn", "_meta": map[string]any{"lembas": map[string]any{"error": msg}}}
	}
	meta, _ := res["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		res["_meta"] = meta
	}
	lm, _ := meta["lembas"].(map[string]any)
	if lm == nil {
		lm = map[string]any{}
		meta["lembas"] = lm
	}
	lm["turnId"] = tid
	ls.reportRun(res, lm, m.Error != nil) // a scheduled run's report (link_scheduled.go)
	answer := rawJSON(res)
	ls.mu.Lock()
	for i, t := range ls.pending {
		if t == tid {
			ls.pending = append(ls.pending[:i], ls.pending[i+1:]...)
			break
		}
	}
	if ls.running == tid {
		ls.running = ""
	}
	delete(ls.contexts, tid)
	forgetPromptShown(ls.s.id, tid)
	ls.mu.Unlock()
	ls.svc.turns.finish(ls.s.id, tid, answer)
	if m.Error != nil {
		return frame // the client still hears the error as it was
	}
	m.Result = answer
	out, err := json.Marshal(m)
	if err != nil {
		return frame
	}
	return out
}

// steer gives a message to the running turn at its next step.
func (svc *linkService) steer(raw json.RawMessage) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/steer", raw, &p); err != nil {
		return nil, err
	}
	if sc := svc.shares.conn(p.SessionID); sc != nil {
		return svc.sharedSteer(sc, p.Text)
	}
	ls, err := svc.openSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	ls.s.mu.Lock()
	busy := ls.s.active
	ls.s.mu.Unlock()
	if !busy {
		return nil, linkErr("idle", "id", p.SessionID)
	}
	svc.steers.add(p.SessionID, p.Text, p.MessageID) // link_steer.go
	return map[string]int{"queued": ls.s.e.steer(p.Text)}, nil
}

// status answers _lembas/session/status, for a session held here or one
// only in the store.
func (svc *linkService) status(raw json.RawMessage) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/session/status", raw, &p); err != nil {
		return nil, err
	}
	id := p.SessionID
	out := map[string]any{"sessionId": id, "exists": false, "held": "none", "busy": false, "title": "", "queued": []string{}, "plan": nil}
	svc.mu.Lock()
	ls := svc.linkSess[id]
	svc.mu.Unlock()
	if ls != nil {
		ls.mu.Lock()
		pend := append([]string{}, ls.pending...)
		running := ls.running
		ls.mu.Unlock()
		out["exists"], out["held"], out["busy"], out["title"] = true, "here", len(pend) > 0, ls.s.e.sess.Title
		if len(pend) > 0 {
			head := pend[0]
			if running == head || svc.turns.state(id, head) == "running" {
				out["turnId"] = head
				pend = pend[1:]
			}
		}
		out["queued"] = pend
		out["progress"], out["jobs"] = ls.progressNow(), jobsOf(ls.s.e) // capabilities progress, jobs
		if ls.s.e.sess.Plan != nil {
			out["plan"] = planWire(ls.s.e.sess.Plan)
		}
	} else if a, ok := svc.shares.find(id); ok {
		out["exists"], out["held"], out["busy"], out["title"] = true, "terminal", a.Busy, a.Title // a terminal shares it (link_share.go)
	} else if validID(id) {
		if sess, err := newStore(stateDir(), svc.log).read(id); err == nil && svc.mayRead(sess) {
			out["exists"], out["title"] = true, sess.Title
			if sess.Plan != nil {
				out["plan"] = planWire(sess.Plan)
			}
		}
	}
	if validID(id) {
		if last := svc.turns.lastDone(id); last != "" {
			out["lastTurnId"] = last
		}
	}
	return out, nil
}

// history answers _lembas/session/history from the stored conversation.
func (svc *linkService) history(raw json.RawMessage) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/session/history", raw, &p); err != nil {
		return nil, err
	}
	svc.mu.Lock()
	ls := svc.linkSess[p.SessionID]
	svc.mu.Unlock()
	var sess *session
	if ls != nil {
		sess = ls.s.e.sess
	} else if validID(p.SessionID) {
		if st, err := newStore(stateDir(), svc.log).read(p.SessionID); err == nil && svc.mayRead(st) {
			sess = st
		}
	}
	if sess == nil {
		return nil, linkErr("no_session", "id", cutForError(p.SessionID, 64))
	}
	return historyOf(sess, svc.turns.byTurn(sess.ID)), nil
}

// historyOf is a session as _lembas/session/history gives it: the person's
// prompts (with the client's turn ids, where ids has them) and the
// assistant's answers with their tool calls and results; undone turns left
// out.
func historyOf(sess *session, ids map[int]string) map[string]any {
	results := map[string]message{}
	for _, m := range sess.Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m
		}
	}
	turns := []map[string]any{}
	for _, m := range sess.Messages {
		if m.Undone {
			continue
		}
		switch {
		case m.Role == "user" && m.Kind == "prompt":
			t := map[string]any{"role": "user", "text": turnPrompt(sess, m)}
			if text, att := historyAttachments(t["text"].(string)); len(att) > 0 {
				t["text"], t["attachments"] = text, att // link_attachments.go
			}
			if tid := ids[m.Turn]; tid != "" {
				t["turnId"] = tid
			}
			turns = append(turns, t)
		case m.Role == "assistant":
			tools := []map[string]any{}
			for _, c := range m.ToolCalls {
				tc := map[string]any{"id": c.ID, "name": c.Function.Name, "args": c.Function.Arguments}
				if r, ok := results[c.ID]; ok {
					tc["output"] = r.Content
					tc["isError"] = r.Status != "" && r.Status != "completed"
				}
				tools = append(tools, tc)
			}
			turns = append(turns, map[string]any{"role": "assistant", "text": m.Content, "reasoning": m.Reasoning, "tools": tools})
		}
	}
	return map[string]any{"sessionId": sess.ID, "title": sess.Title, "root": sess.Project, "turns": turns}
}

// turnPrompt is the prompt of a message's turn as the person typed it
// (the stored message may carry a session note before it).
func turnPrompt(sess *session, m message) string {
	if m.Turn >= 1 && m.Turn <= len(sess.Turns) {
		return sess.Turns[m.Turn-1].Prompt
	}
	return m.Content
}

// setTitle answers _lembas/session/title.
func (svc *linkService) setTitle(raw json.RawMessage) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/session/title", raw, &p); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(p.Title) > svc.sp.TitleMax {
		return nil, linkErr("title", "max", svc.sp.TitleMax)
	}
	ls, err := svc.idleSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	ls.s.e.sess.Title = p.Title
	ls.lastTitle = p.Title
	if err := ls.s.e.st.save(ls.s.e.sess); err != nil {
		return nil, err
	}
	svc.event(p.SessionID, map[string]any{"type": "title", "id": p.SessionID, "title": p.Title})
	return map[string]string{"title": p.Title}, nil
}

// compact answers _lembas/session/compact, between turns only.
func (svc *linkService) compact(raw json.RawMessage) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/session/compact", raw, &p); err != nil {
		return nil, err
	}
	ls, err := svc.openSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	ls.mu.Lock()
	busy := len(ls.pending) > 0 || ls.compacting
	ls.compacting = !busy
	ls.mu.Unlock()
	if busy {
		return nil, linkErr("busy", "id", p.SessionID)
	}
	defer func() { ls.mu.Lock(); ls.compacting = false; ls.mu.Unlock() }()
	if err := ls.s.e.compact(svc.agent.ctx); err != nil {
		return nil, err
	}
	summary := ""
	for _, m := range ls.s.e.sess.Messages {
		if m.Kind == "summary" {
			summary = m.Content
		}
	}
	svc.event(p.SessionID, map[string]any{"type": "compacted", "summary": summary})
	return map[string]string{"summary": summary}, nil
}

// openSession is the linked session id names, or the error that says it
// is not open here.
func (svc *linkService) openSession(id string) (*linkSession, error) {
	svc.mu.Lock()
	ls := svc.linkSess[id]
	svc.mu.Unlock()
	if ls == nil {
		return nil, linkErr("no_session", "id", cutForError(id, 64))
	}
	return ls, nil
}

// idleSession is openSession for a change made between prompts: a session
// at work is refused as busy.
func (svc *linkService) idleSession(id string) (*linkSession, error) {
	ls, err := svc.openSession(id)
	if err == nil && ls.busy() {
		return nil, linkErr("busy", "id", id)
	}
	return ls, err
}

// rewind marks the turn turnId and every later one as undone: they leave
// the conversation and the history. Files are not touched.
func (svc *linkService) rewind(raw json.RawMessage) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/session/rewind", raw, &p); err != nil {
		return nil, err
	}
	ls, err := svc.idleSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	n := 0
	for k, tid := range svc.turns.byTurn(p.SessionID) {
		if tid == p.TurnID {
			n = k
		}
	}
	if n == 0 {
		return nil, linkErr("no_turn", "id", p.SessionID, "turn", cutForError(p.TurnID, 64))
	}
	sess := ls.s.e.sess
	reverted := 0
	for i := range sess.Turns {
		if sess.Turns[i].N >= n && !sess.Turns[i].Undone {
			sess.Turns[i].Undone = true
			reverted++
		}
	}
	for i := range sess.Messages {
		if sess.Messages[i].Turn >= n && !sess.Messages[i].Compacted {
			sess.Messages[i].Undone = true
		}
	}
	if err := ls.s.e.st.save(sess); err != nil {
		return nil, err
	}
	return map[string]int{"reverted": reverted}, nil
}

// configure changes a session's model (one the instance serves) or effort
// between prompts.
func (svc *linkService) configure(raw json.RawMessage) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/configure", raw, &p); err != nil {
		return nil, err
	}
	ls, err := svc.idleSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	e := ls.s.e
	changed := false
	if p.Model != "" && p.Model != e.ref.Model {
		served, err := svc.login.servedModels(svc.agent.ctx)
		if err != nil {
			return nil, rpcErrorf(rpcInternalError, "listing the instance's models: %v", err)
		}
		if !slices.Contains(served, p.Model) {
			return nil, linkErr("model", "model", cutForError(p.Model, 200), "served", strings.Join(served, ", "))
		}
		e.ref = newModelRef(e.ref.Conn, p.Model)
		e.sess.Model = e.ref.String()
		changed = true
	}
	// A configure that names only the model keeps the effort the session
	// had, and answers it: the client reads the answer as the state now.
	effort := ls.effort
	if p.Effort != "" {
		extra, err := levelFields(e.ref.String(), e.ref.Meta, p.Effort)
		if err != nil {
			return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
		}
		e.extra = extra
		effort, ls.effort = p.Effort, p.Effort
		changed = true
	}
	if changed {
		svc.event(p.SessionID, map[string]any{"type": "model", "ref": e.ref.Model, "effort": nilIfEmpty(effort),
			"connection": svc.login.Name, "instance": true})
	}
	return map[string]any{"model": e.ref.Model, "effort": nilIfEmpty(effort)}, nil
}

// filesSearch answers _lembas/files/search through the file picker.
func (svc *linkService) filesSearch(raw json.RawMessage, lim remoteLimits) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/files/search", raw, &p); err != nil {
		return nil, err
	}
	root := ""
	svc.mu.Lock()
	ls := svc.linkSess[p.SessionID]
	svc.mu.Unlock()
	switch {
	case ls != nil:
		root = ls.s.root
	case p.SessionID != "":
		return nil, linkErr("no_session", "id", cutForError(p.SessionID, 64))
	default:
		dir, jerr := lim.judgeDir(p.Cwd)
		if jerr != nil {
			return nil, jerr
		}
		root = dir
	}
	limit := p.Limit
	if limit <= 0 {
		limit = svc.sp.Files.DefaultLimit
	}
	if limit > svc.sp.Files.MaxLimit {
		limit = svc.sp.Files.MaxLimit
	}
	paths, err := pickFiles(svc.agent.ctx, root, p.Query, limit)
	if err != nil {
		return nil, err
	}
	files := []map[string]string{}
	for _, f := range paths {
		kind := "file"
		if strings.HasSuffix(f, "/") {
			kind, f = "dir", strings.TrimSuffix(f, "/")
		}
		files = append(files, map[string]string{"path": filepath.ToSlash(f), "kind": kind})
	}
	return map[string]any{"root": root, "files": files}, nil
}

// deleteSession answers _lembas/session/delete: for a session the client
// was ever given, or one whose root is inside the roots (trust is not
// asked: deleting runs nothing there).
func (svc *linkService) deleteSession(raw json.RawMessage, lim remoteLimits) (any, error) {
	var p linkIDParams
	if err := decodeParams("_lembas/session/delete", raw, &p); err != nil {
		return nil, err
	}
	id := p.SessionID
	if !validID(id) {
		return map[string]bool{"deleted": false}, nil
	}
	svc.mu.Lock()
	ls := svc.linkSess[id]
	svc.mu.Unlock()
	st := newStore(stateDir(), svc.log)
	sess, rerr := st.read(id)
	if ls == nil && rerr != nil {
		return map[string]bool{"deleted": false}, nil
	}
	allowed := ls != nil || wasGiven(id)
	if !allowed && sess != nil && lim.Enabled {
		for _, r := range lim.Roots {
			allowed = allowed || within(r, evalExisting(sess.Project))
		}
	}
	if !allowed {
		return nil, linkErr("not_given", "id", id)
	}
	svc.sharedRelease(id) // a terminal sharing it starts a new session first (link_share_prompts.go)
	if ls != nil {
		ls.s.cancelAll()
		svc.waitIdle(ls)
		svc.mu.Lock()
		delete(svc.linkSess, id)
		svc.mu.Unlock()
		svc.agent.mu.Lock()
		delete(svc.agent.sessions, id)
		svc.agent.mu.Unlock()
		ls.s.cleanup()
	}
	if err := st.remove(id); err != nil && rerr == nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(stateDir(), "attachments", id)); err != nil {
		// The session is deleted; what it was sent stays as bytes the
		// person may want gone: said, not failed.
		svc.log("deleting session " + id + "'s attachments: " + err.Error())
	}
	svc.turns.forget(id)
	forgetGiven(id, svc.log)
	forgetScheduled(id)
	return map[string]bool{"deleted": true}, nil
}

// waitIdle waits for a cancelled session's queue to empty.
func (svc *linkService) waitIdle(ls *linkSession) {
	for i := 0; ; i++ {
		ls.s.mu.Lock()
		n := len(ls.s.queue)
		ls.s.mu.Unlock()
		if n == 0 {
			return
		}
		sleepCtx(context.Background(), 10_000_000) // 10 ms; the turn is already cancelled
	}
}

// linkApprover asks the instance through the session's ACP approvals,
// under remote.approval_timeout as it is at the moment of the question.
type linkApprover struct {
	s   *acpSession
	svc *linkService
}

func (a *linkApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	tctx, cancel := context.WithTimeout(ctx, time.Duration(a.svc.approvalTimeout())*time.Second)
	defer cancel()
	ans := a.s.approve(tctx, req)
	if tctx.Err() != nil && req.CallID != "" {
		// No longer waited for (the time ran out, the turn was cancelled):
		// the client takes the card down.
		a.svc.conn.notify("_lembas/permission/settled", map[string]string{"sessionId": a.s.id, "toolCallId": req.CallID})
	}
	return ans
}

// refused says whether this link's client was refused for its protocol.
func (svc *linkService) refused() bool {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.stopErr != nil
}

// stopAnswer is a prompt's answer: its stop reason, and the steer messages
// the turn ended before taking in (capability steer), to be sent next.
//
//go:noinline
func stopAnswer(reason string, unsent []string) map[string]any {
	a := map[string]any{"stopReason": reason}
	if len(unsent) > 0 {
		a["_meta"] = map[string]any{"lembas": map[string]any{"unsent": unsent}}
	}
	return a
}

// baseSystemPrompt is a stored session's system prompt without the
// instance's context a link added to it (a session opened from the store
// gets that context again from its next prompt).
func baseSystemPrompt(sys string) string {
	for _, head := range []string{strings.SplitN(theLinkSpec().Texts["instructions_heading"], "{{", 2)[0], thePersonalitySpec().Heading} {
		if i := strings.Index(sys, "\n\n"+head); i >= 0 {
			sys = sys[:i]
		}
	}
	return sys
}

// busy says whether a prompt of the link is queued or running in the
// session. A turn leaves the list as its answer goes out, so a client that
// has its answer may call between-turn methods at once.
func (ls *linkSession) busy() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.pending) > 0 || ls.compacting
}

// mayRead says whether the client may see a stored session it does not
// hold: one it was given, or one whose project is inside the roots now
// (the rule deletes follow). Any other is answered as if it were not there.
func (svc *linkService) mayRead(sess *session) bool {
	if wasGiven(sess.ID) {
		return true
	}
	lim, _ := readRemoteLimits()
	for _, r := range lim.Roots {
		if within(r, evalExisting(sess.Project)) {
			return true
		}
	}
	return false
}

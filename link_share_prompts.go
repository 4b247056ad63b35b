package main

// The web UI working a terminal's shared session (harness/acp.md, "A
// terminal's session on the link"). The session stays the terminal's — its
// lock, its engine, its screen — so the service hands each request to the
// REPL over share.sock and relays what comes back:
//
//	session/prompt       ──► prompt line ──► the REPL runs it as a turn (shown as from the web UI)
//	                     ◄── prompt_done line ◄── its answer, recorded in turns/<id>.json
//	session/cancel       ──► cancel line       the turn running now stops
//	_lembas/steer        ──► steer line        a message for the running turn
//	_lembas/session/delete ► delete line ──► the REPL starts a new session, lets go of the old (released)
//	                                          then the service deletes it as any other
//	the REPL's events    ◄── event lines ◄── _lembas/event for the shared session
//
// A prompt's turn id is claimed in the service's turn book as a link
// prompt's is, so one sent again gets the first answer and never runs
// twice; a REPL that goes away mid-turn answers it as interrupted.

import (
	"encoding/json"
	"strings"
	"time"
)

// sharePrompt is a prompt line's payload: the text (blocks joined as a
// link prompt's are), its turn id, and the limits the REPL expands it
// under (@paths only inside the roots, a command's mode lowered).
type sharePrompt struct {
	Text    string   `json:"text"`
	TurnID  string   `json:"turnId"`
	MaxMode string   `json:"maxMode"`
	Roots   []string `json:"roots"`
}

// conn is the connection sharing sessionID now, nil if none.
func (t *shareTable) conn(sessionID string) *shareConn {
	if sessionID == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, sc := range t.by {
		sc.mu.Lock()
		id := sc.last.SessionID
		sc.mu.Unlock()
		if id == sessionID {
			return sc
		}
	}
	return nil
}

// send queues a line to the REPL; false when the connection ended or its
// queue is full (a REPL that stopped reading).
func (sc *shareConn) send(l shareLine) bool {
	b, _ := json.Marshal(l)
	select {
	case sc.out <- append(b, '\n'):
		return true
	case <-sc.done:
	default:
	}
	return false
}

// sharedText is a prompt's blocks as the text a terminal takes: text
// blocks joined by a blank line, a resource_link as "(see <uri>)". Any
// other block (an image, an embedded file) is refused: the terminal's
// session takes text from the web UI.
func sharedText(raw json.RawMessage) (string, error) {
	var p acpPromptParams
	if err := decodeParams("session/prompt", raw, &p); err != nil {
		return "", err
	}
	var parts []string
	for _, b := range p.Prompt {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			parts = append(parts, "(see "+b.URI+")")
		default:
			return "", linkErr("shared_text_only", "type", cutForError(b.Type, 32))
		}
	}
	if strings.TrimSpace(strings.Join(parts, "")) == "" {
		return "", paramErr("empty_prompt")
	}
	return strings.Join(parts, "\n\n"), nil
}

// sharedPrompt is session/prompt for a session a terminal shares.
func (svc *linkService) sharedPrompt(c *rpcCall, lim remoteLimits, sc *shareConn, id, tid string) {
	if !lim.Enabled {
		c.reply(nil, linkErr("roots_off"))
		return
	}
	text, err := sharedText(c.Params)
	if err != nil {
		c.reply(nil, err)
		return
	}
	fresh, answer, wait := svc.turns.claim(id, tid)
	if !fresh {
		svc.replyKnownTurn(c, answer, wait)
		return
	}
	ch := make(chan json.RawMessage, 1)
	sc.mu.Lock()
	if sc.prompts == nil {
		sc.prompts = map[string]chan json.RawMessage{}
	}
	sc.prompts[tid] = ch
	sc.mu.Unlock()
	if !sc.send(shareLine{Type: "prompt", ID: tid, Prompt: &sharePrompt{Text: text, TurnID: tid, MaxMode: lim.MaxMode, Roots: lim.Roots}}) {
		close(ch) // the terminal is gone: answered as interrupted below
	}
	svc.agent.wg.Add(1)
	go func() {
		defer svc.agent.wg.Done()
		defer c.recovered()
		var a json.RawMessage
		select {
		case a = <-ch:
		case <-sc.done:
		case <-svc.agent.ctx.Done():
			c.reply(map[string]string{"stopReason": "cancelled"}, nil)
			return
		}
		if a == nil {
			a = interruptedAnswer(tid) // the REPL went away before the turn ended
		}
		svc.turns.finish(id, tid, a)
		c.reply(a, nil)
	}()
}

// replyKnownTurn answers a prompt whose turn id is known: its answer at
// once, or when the turn that has it ends.
func (svc *linkService) replyKnownTurn(c *rpcCall, answer json.RawMessage, wait <-chan json.RawMessage) {
	if answer != nil {
		c.reply(answer, nil)
		return
	}
	svc.agent.wg.Add(1)
	go func() {
		defer svc.agent.wg.Done()
		defer c.recovered()
		select {
		case a := <-wait:
			c.reply(a, nil)
		case <-svc.agent.ctx.Done():
			c.reply(map[string]string{"stopReason": "cancelled"}, nil)
		}
	}()
}

// promptDone takes the REPL's answer to a prompt the web UI sent. An
// answer that is not a JSON object is taken as interrupted.
func (sc *shareConn) promptDone(tid string, result json.RawMessage) {
	sc.mu.Lock()
	ch := sc.prompts[tid]
	delete(sc.prompts, tid)
	sc.mu.Unlock()
	if ch == nil {
		return
	}
	var obj map[string]any
	if json.Unmarshal(result, &obj) != nil || obj == nil {
		result = nil
	}
	ch <- result
}

// sharedSteer is _lembas/steer for a shared session: refused while it is
// idle (send a prompt instead), else handed to the terminal's turn.
func (svc *linkService) sharedSteer(sc *shareConn, text string) (any, error) {
	sc.mu.Lock()
	a := sc.last
	sc.mu.Unlock()
	if !a.Busy {
		return nil, linkErr("idle", "id", a.SessionID)
	}
	if !sc.send(shareLine{Type: "steer", Text: text}) {
		return nil, linkErr("no_session", "id", a.SessionID)
	}
	return map[string]int{"queued": 1}, nil
}

// sharedCancel is session/cancel for a shared session: it names one.
func (svc *linkService) sharedCancel(params json.RawMessage) bool {
	var p linkIDParams
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	sc := svc.shares.conn(p.SessionID)
	if sc == nil {
		return false
	}
	sc.send(shareLine{Type: "cancel"})
	return true
}

// sharedRelease asks the terminal sharing id to let go of it before it is
// deleted: it starts a new session and answers released (or goes away).
// Bounded by share.release_timeout_s.
func (svc *linkService) sharedRelease(id string) {
	sc := svc.shares.conn(id)
	if sc == nil {
		return
	}
	ch := make(chan struct{})
	sc.mu.Lock()
	sc.release = ch
	sc.mu.Unlock()
	if !sc.send(shareLine{Type: "delete", ID: id}) {
		return
	}
	select {
	case <-ch:
	case <-sc.done:
	case <-time.After(time.Duration(theLinkSpec().Share.ReleaseTimeoutS) * time.Second):
		svc.log(linkText("share_release_timeout", "id", id))
	}
}

// released is the REPL's answer to a delete line.
func (sc *shareConn) released() {
	sc.mu.Lock()
	ch := sc.release
	sc.release = nil
	sc.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// relayEvent forwards one of the REPL's engine events as _lembas/event for
// the session this connection shares (never another).
func (svc *linkService) relayEvent(sc *shareConn, ev map[string]any) {
	sc.mu.Lock()
	id := sc.last.SessionID
	sc.mu.Unlock()
	if id != "" && ev != nil {
		svc.event(id, ev)
	}
}

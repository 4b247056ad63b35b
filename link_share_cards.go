package main

// A shared session's cards in the web UI (harness/acp.md, "A terminal's
// session on the link"): an approval, a question or a plan the terminal
// shows is put to the instance at the same time, patient (the client does
// not time it out: the person may answer at the terminal). First answer
// wins:
//
//	web answers first ──► answer line to the REPL ──► the terminal's card comes down
//	terminal answers   ──► settled line ──► the call to the client is dropped ──► _lembas/permission/settled
//	REPL gone          ──► every card it had open is settled in the web UI
//
// A card open while no lembas client is linked waits, and is put right
// after the next initialize; one whose link drops before the answer is put
// again on the next link. A client that cannot answer it (an error, or one
// without cards for questions and plans) gets an answer line with none
// set, and the terminal's card alone decides. A show call's file (kind
// show) races nothing: only the web UI can show it, so with no lembas
// client linked it is answered none at once and the model hears so.

import (
	"context"
	"encoding/json"
	"errors"
)

// shareCard is what a REPL's card line carries: the engine's own request,
// which the service turns into the link's (the same builders a link
// session uses).
type shareCard struct {
	Kind       string           `json:"kind"` // approval, question, plan, show
	SessionID  string           `json:"sessionId"`
	ToolCallID string           `json:"toolCallId"`
	Cwd        string           `json:"cwd"`
	Approval   *approvalRequest `json:"approval,omitempty"`
	Questions  []question       `json:"questions,omitempty"`
	Plan       *planReview      `json:"plan,omitempty"`
	Show       *showRequest     `json:"show,omitempty"` // the file for the web UI's viewer (link_cards.go)
}

// shareAnswer is the web UI's answer, as the engine reads it; None: the web
// UI cannot answer this card.
type shareAnswer struct {
	None     bool            `json:"none,omitempty"`
	Approval *approvalAnswer `json:"approval,omitempty"`
	Question *askAnswer      `json:"question,omitempty"`
	Plan     *planAnswer     `json:"plan,omitempty"`
	Show     *showResult     `json:"show,omitempty"`
}

// shareCardState is one open card on the service's side.
type shareCardState struct {
	id       string
	card     *shareCard
	ctx      context.Context
	cancel   context.CancelFunc
	inFlight bool // put to the current link, not yet answered
}

// openCard takes a card line. One the session this connection shares does
// not own, or of an unknown kind, is answered none at once.
func (svc *linkService) openCard(sc *shareConn, id string, card *shareCard) {
	sc.mu.Lock()
	own := card != nil && id != "" && card.SessionID != "" && card.SessionID == sc.last.SessionID && card.ToolCallID != "" && validCard(card)
	_, dup := sc.cards[id]
	if !own || dup {
		sc.mu.Unlock()
		if id != "" && !dup {
			sc.answer(id, &shareAnswer{None: true})
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sc.cards[id] = &shareCardState{id: id, card: card, ctx: ctx, cancel: cancel}
	sc.mu.Unlock()
	svc.putCards(sc)
}

func validCard(c *shareCard) bool {
	switch c.Kind {
	case "approval":
		return c.Approval != nil
	case "question":
		return len(c.Questions) > 0
	case "plan":
		return c.Plan != nil
	case "show":
		return c.Show != nil && c.Show.Path != ""
	}
	return false
}

// settle is the terminal's answer (or its end of waiting): the card's call
// to the client is dropped, which takes the card down there.
func (sc *shareConn) settle(id string) {
	sc.mu.Lock()
	cs := sc.cards[id]
	delete(sc.cards, id)
	sc.mu.Unlock()
	if cs != nil {
		cs.cancel()
	}
}

// settleAll is the REPL gone: every card it had open comes down.
func (sc *shareConn) settleAll() {
	sc.mu.Lock()
	all := sc.cards
	sc.cards = map[string]*shareCardState{}
	sc.mu.Unlock()
	for _, cs := range all {
		cs.cancel()
	}
}

// answer queues an answer line to the REPL. A full queue (a REPL that
// stopped reading) drops it: that terminal's card decides alone.
func (sc *shareConn) answer(id string, a *shareAnswer) {
	b, _ := json.Marshal(shareLine{Type: "answer", ID: id, Answer: a})
	select {
	case sc.out <- append(b, '\n'):
	case <-sc.done:
	default:
	}
}

// writeAnswers writes the queued answer lines until the connection ends.
func (sc *shareConn) writeAnswers() {
	for {
		select {
		case b := <-sc.out:
			if _, err := sc.c.Write(b); err != nil {
				return
			}
		case <-sc.done:
			return
		}
	}
}

// cardsLinked says whether a card of kind can be put now: a lembas client
// is linked, and for questions and plans it takes cards.
func (svc *linkService) cardsLinked(kind string) (sock *linkSocket, ok bool) {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if !svc.lembas || svc.sock == nil {
		return nil, false
	}
	return svc.sock, kind == "approval" || !svc.cards.off
}

// putCards puts every card of sc not yet on the current link.
func (svc *linkService) putCards(sc *shareConn) {
	sc.mu.Lock()
	var todo []*shareCardState
	for _, cs := range sc.cards {
		if !cs.inFlight && cs.ctx.Err() == nil {
			todo = append(todo, cs)
		}
	}
	sc.mu.Unlock()
	for _, cs := range todo {
		sock, ok := svc.cardsLinked(cs.card.Kind)
		if sock == nil && cs.card.Kind != "show" {
			return // the next initialize puts them
		}
		if !ok { // show with no client linked too: nothing shows it, and the model is told at once
			sc.drop(cs.id)
			sc.answer(cs.id, &shareAnswer{None: true})
			continue
		}
		sc.mu.Lock()
		if cs.inFlight || sc.cards[cs.id] != cs {
			sc.mu.Unlock()
			continue
		}
		cs.inFlight = true
		sc.mu.Unlock()
		go svc.askCard(sc, cs, sock)
	}
}

// drop forgets a card without cancelling anything.
func (sc *shareConn) drop(id string) {
	sc.mu.Lock()
	delete(sc.cards, id)
	sc.mu.Unlock()
}

// askCard puts one card to the client on sock's link and waits for the
// first of: its answer (sent to the REPL), the terminal's (settled sent to
// the client), the link dropping (put again on the next one), or an error
// (the terminal alone decides).
func (svc *linkService) askCard(sc *shareConn, cs *shareCardState, sock *linkSocket) {
	c := cs.card
	var ans shareAnswer
	var err error
	switch c.Kind {
	case "approval":
		req := *c.Approval
		req.CallID = c.ToolCallID
		tc, _, _ := toolCallInfo(c.Cwd, c.ToolCallID, req.Tool, approvalArgs(req))
		params := permissionParams(c.SessionID, req, tc)
		params["_meta"].(map[string]any)["lembas"].(map[string]any)["patient"] = true
		var res acpPermissionAnswer
		if err = svc.conn.call(cs.ctx, "session/request_permission", params, &res); err == nil {
			a := permissionAnswer(req, res, nil, false)
			ans.Approval = &a
		}
	case "question":
		params, full := questionCard(c.SessionID, c.ToolCallID, c.Questions, true)
		var res questionResult
		if err = svc.conn.call(cs.ctx, "_lembas/question", params, &res); err == nil {
			a := res.answer(c.Questions, full)
			ans.Question = &a
		}
	case "plan":
		var res planResult
		if err = svc.conn.call(cs.ctx, "_lembas/plan", planCard(c.SessionID, c.ToolCallID, *c.Plan, true), &res); err == nil {
			a := res.answer(svc)
			ans.Plan = &a
		}
	case "show":
		var res showResult
		if err = svc.conn.call(cs.ctx, "_lembas/show", c.Show.params(c.SessionID, c.ToolCallID), &res); err == nil {
			ans.Show = &res
		}
	}
	switch {
	case err == nil:
		sc.drop(cs.id)
		sc.answer(cs.id, &ans)
	case cs.ctx.Err() != nil:
		// The terminal answered, or the REPL is gone: take the card down.
		svc.shareNote("_lembas/permission/settled", map[string]string{"sessionId": c.SessionID, "toolCallId": c.ToolCallID})
	case svc.linkChanged(sock):
		sc.mu.Lock()
		cs.inFlight = false
		sc.mu.Unlock()
		svc.putCards(sc) // a link already up again takes it now; else the next initialize does
	default:
		var re *rpcError
		if errors.As(err, &re) && re.Code == rpcMethodNotFound && c.Kind != "approval" {
			svc.mu.Lock()
			svc.cards.off = true
			svc.mu.Unlock()
		}
		svc.log(c.Kind + " card of a shared session: " + err.Error() + "; the terminal's card decides")
		sc.drop(cs.id)
		sc.answer(cs.id, &shareAnswer{None: true})
	}
}

// linkChanged says whether the link a call went out on is gone.
func (svc *linkService) linkChanged(sock *linkSocket) bool {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.sock != sock
}

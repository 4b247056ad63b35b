package main

// The REPL's side of /share (link_share.go has the service's): the
// connection to share.sock, the session announced on it, and the cards
// raced between the terminal and the web UI. While shared, every
// approval, question and plan review is shown at the terminal and put to
// the web UI at once; whichever answers first decides, and the other card
// comes down (settled from here, or the terminal's card cancelled when the
// web UI's answer arrives).

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// replShare is a REPL's share: the connection to the service and the
// cards waiting for the web UI's answer.
type replShare struct {
	mu   mutex
	c    net.Conn
	next int
	wait map[string]chan *shareAnswer
	web  chan shareWork // the web UI's prompts and deletes, for the REPL's loop (made with the REPL)

	stop    chan struct{}  // closed when the share ends: a reader waiting to hand work over gives up
	readers sync.WaitGroup // the connection's reader (readShare), which endShare waits for
}

// shareWork is what the web UI asks of a shared session: a prompt to run,
// or its deletion (the REPL starts a new session and lets go of it).
type shareWork struct {
	prompt *sharePrompt
	delete string // the session to let go of
}

// share handles /share (on) and /share off.
func (r *repl) share(args string) {
	rs := &r.link.shareConn
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if args == "off" {
		if rs.c == nil {
			r.say("status", replLinkText("share_not_shared"))
			return
		}
		rs.closeLocked()
		r.say("status", replLinkText("share_off"))
		return
	}
	if rs.c == nil {
		c, err := net.Dial("unix", shareSocketPath())
		if err != nil {
			r.say("error", replLinkText("share_no_service"))
			return
		}
		rs.c = c
		rs.stop = make(chan struct{})
		rs.readers.Add(1)
		go func(stop chan struct{}) {
			defer rs.readers.Done()
			r.readShare(c, stop)
		}(rs.stop)
	}
	if err := r.sendShareLocked(false); err != nil {
		rs.closeLocked()
		r.say("error", replLinkText("share_no_service"))
		return
	}
	r.say("status", replLinkText("share_on", "session", r.e.sess.ID))
}

// endShare ends a share as the REPL ends, and waits for its reader.
func (r *repl) endShare() {
	rs := &r.link.shareConn
	rs.mu.Lock()
	rs.closeLocked()
	rs.mu.Unlock()
	rs.readers.Wait()
}

// closeLocked ends the share: the service hears the connection's end
// (left, and its cards taken down in the web UI), and every card waiting
// for the web UI is the terminal's alone.
func (rs *replShare) closeLocked() {
	if rs.c != nil {
		rs.c.Close()
		rs.c = nil
	}
	if rs.stop != nil {
		close(rs.stop)
		rs.stop = nil
	}
	for id, ch := range rs.wait {
		close(ch)
		delete(rs.wait, id)
	}
}

// readShare takes the service's answer lines until the connection ends. A
// service that went away ends the share, and says so.
func (r *repl) readShare(c net.Conn, stop chan struct{}) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), theLinkSpec().WS.MaxMessageBytes)
	rs := &r.link.shareConn
	for sc.Scan() {
		var l shareLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch l.Type {
		case "answer":
			if l.Answer == nil {
				continue
			}
			rs.mu.Lock()
			ch := rs.wait[l.ID]
			delete(rs.wait, l.ID)
			rs.mu.Unlock()
			if ch != nil {
				ch <- l.Answer
			}
		case "prompt":
			if l.Prompt == nil || l.Prompt.TurnID == "" {
				continue
			}
			select {
			case rs.web <- shareWork{prompt: l.Prompt}:
			default: // a full queue: answered at once, nothing run
				r.promptDone(l.Prompt.TurnID, rawJSON(map[string]any{"stopReason": "refusal",
					"_meta": map[string]any{"lembas": map[string]any{"turnId": l.Prompt.TurnID, "error": replLinkText("share_web_full", "n", cap(rs.web))}}}))
			}
		case "delete":
			// Handed over here, not from a goroutine of its own: one that
			// waited on a REPL no longer reading would wait forever. The
			// share's end (stop) releases this reader.
			select {
			case rs.web <- shareWork{delete: l.ID}:
			case <-stop:
			}
		case "cancel":
			r.mu.Lock()
			cancel := r.cancel
			r.mu.Unlock()
			if cancel != nil {
				r.say("notice", replLinkText("share_web_cancel"))
				cancel()
			}
		case "steer":
			if strings.TrimSpace(l.Text) != "" {
				r.e.steer(l.Text)
				r.say("notice", replLinkText("share_web_steer", "text", oneLine(l.Text, 200)))
			}
		}
	}
	rs.mu.Lock()
	mine := rs.c == c // not ended by /share off
	if mine {
		rs.closeLocked()
	}
	rs.mu.Unlock()
	if mine {
		r.say("notice", replLinkText("share_service_gone"))
	}
}

// sendShareLocked sends the session as it is now. Called with the share's
// mu held.
func (r *repl) sendShareLocked(busy bool) error {
	e := r.e
	a := shareAnnounce{SessionID: e.sess.ID, Cwd: e.tb.root, Title: e.sess.Title, Model: e.ref.String(), Mode: e.perm.mode(), Effort: r.level, Busy: busy}
	if l := loginOfRef(e.ref); l != nil {
		a.Instance, a.Model = true, e.ref.Model // the instance names its own models by served id
	}
	return r.link.shareConn.writeLocked(shareLine{Type: "announce", Session: a})
}

func (rs *replShare) writeLocked(l shareLine) error {
	b, _ := json.Marshal(l)
	_, err := rs.c.Write(append(b, '\n'))
	return err
}

// reannounce sends the session again if it is shared: a turn began or
// ended (busy), or what the announce says changed.
func (r *repl) reannounce(busy bool) {
	rs := &r.link.shareConn
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.c != nil {
		r.sendShareLocked(busy)
	}
}

// put sends a card to the service when the session is shared. It returns
// the card's id and where the web UI's answer comes; "" when not shared.
func (rs *replShare) put(card shareCard) (string, chan *shareAnswer) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.c == nil {
		return "", nil
	}
	rs.next++
	id := "card-" + strconv.Itoa(rs.next)
	if err := rs.writeLocked(shareLine{Type: "card", ID: id, Card: &card}); err != nil {
		return "", nil
	}
	if rs.wait == nil {
		rs.wait = map[string]chan *shareAnswer{}
	}
	ch := make(chan *shareAnswer, 1)
	rs.wait[id] = ch
	return id, ch
}

// settle tells the service the terminal decided (or stopped waiting), so
// the web UI's card comes down.
func (rs *replShare) settle(id string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.wait, id)
	if rs.c != nil {
		rs.writeLocked(shareLine{Type: "settled", ID: id})
	}
}

// cardRaceKey marks a terminal card's context while it races the web UI's.
type cardRaceKey struct{}

// cardRace is a terminal card's side of the race: down is set when the web
// UI answered first (the card comes down without saying it was denied);
// decided is closed once the person picked an answer here, which wins
// even while they still type its feedback or corrected command.
type cardRace struct {
	down    atomic.Bool
	once    sync.Once
	decided chan struct{}
}

func takenDown(ctx context.Context) bool {
	c, _ := ctx.Value(cardRaceKey{}).(*cardRace)
	return c != nil && c.down.Load()
}

// cardDecided says the person answered at the terminal: from now on the web
// UI's answer is not taken, and its card comes down.
func cardDecided(ctx context.Context) {
	if c, _ := ctx.Value(cardRaceKey{}).(*cardRace); c != nil {
		c.once.Do(func() { close(c.decided) })
	}
}

// raceCard shows a card at the terminal (here) and, when the session is
// shared, in the web UI too; the first answer wins. web reads the web UI's
// answer (false: not one for this card, so the terminal's decides).
func raceCard[T any](r *repl, ctx context.Context, card shareCard, here func(context.Context) T, web func(*shareAnswer) (T, bool)) T {
	return raceCardAny(r, ctx, card, func(c context.Context) any { return here(c) }, func(a *shareAnswer) (any, bool) { return web(a) }).(T)
}

// raceCardAny is raceCard once for every kind of answer: a generic body
// is compiled again for each (six copies of 1 KB and more).
func raceCardAny(r *repl, ctx context.Context, card shareCard, here func(context.Context) any, web func(*shareAnswer) (any, bool)) any {
	rs := &r.link.shareConn
	card.SessionID, card.Cwd = r.e.sess.ID, r.e.tb.root
	id, ch := rs.put(card)
	if id == "" {
		return here(ctx)
	}
	race := &cardRace{decided: make(chan struct{})}
	hctx, cancel := context.WithCancel(context.WithValue(ctx, cardRaceKey{}, race))
	defer cancel()
	hch := make(chan any, 1)
	go func() { hch <- here(hctx) }()
	decided := race.decided
	for {
		select {
		case v := <-hch:
			rs.settle(id)
			return v
		case <-decided:
			decided = nil
			ch = nil // the terminal's answer wins
			rs.settle(id)
		case a, ok := <-ch:
			ch = nil // one answer a card
			if !ok || a == nil || a.None {
				continue // the web UI cannot answer it: the terminal's card decides
			}
			v, good := web(a)
			if !good {
				continue
			}
			race.down.Store(true)
			cancel()
			<-hch // the terminal's card is down and its keys released
			return v
		}
	}
}

// approve is the approval card, raced with the web UI's when shared.
func (r *repl) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	callID := req.CallID
	if callID == "" {
		callID = cardID(ctx)
	}
	return raceCard(r, ctx, shareCard{Kind: "approval", ToolCallID: callID, Approval: &req},
		func(ctx context.Context) approvalAnswer { return r.approveHere(ctx, req) },
		func(a *shareAnswer) (approvalAnswer, bool) {
			if a.Approval == nil {
				return approvalAnswer{}, false
			}
			r.say("notice", replLinkText("share_answered_web", "answer", a.Approval.Choice))
			return *a.Approval, true
		})
}

// askUser is ask_user's questions, raced with the web UI's card when
// shared.
func (r *repl) askUser(ctx context.Context, qs []question) askAnswer {
	return raceCard(r, ctx, shareCard{Kind: "question", ToolCallID: cardID(ctx), Questions: qs},
		func(ctx context.Context) askAnswer { return r.askUserHere(ctx, qs) },
		func(a *shareAnswer) (askAnswer, bool) {
			if a.Question == nil {
				return askAnswer{}, false
			}
			key := "share_question_answered_web"
			if a.Question.Dismissed {
				key = "share_question_dismissed_web"
			}
			r.say("notice", replLinkText(key))
			return *a.Question, true
		})
}

// reviewPlan is plan_submit's review, raced with the web UI's card when
// shared.
func (r *repl) reviewPlan(ctx context.Context, rv planReview) planAnswer {
	return raceCard(r, ctx, shareCard{Kind: "plan", ToolCallID: cardID(ctx), Plan: &rv},
		func(ctx context.Context) planAnswer { return r.reviewPlanHere(ctx, rv) },
		func(a *shareAnswer) (planAnswer, bool) {
			if a.Plan == nil {
				return planAnswer{}, false
			}
			r.say("notice", replLinkText("share_answered_web", "answer", strings.TrimSpace(a.Plan.Choice+" "+a.Plan.Mode)))
			return *a.Plan, true
		})
}

// offerShow puts show in the session's tools from its first request when
// an instance is logged in to (tools_offer.go's viewer, kept with the
// session), so the list never changes when the session is shared. Until
// it is, a call answers show's unavailable text and how to share; shared,
// the file goes to the web UI's viewer as a card of kind show.
func (r *repl) offerShow() {
	tb := r.e.tb
	t := theSpec().Tools["show"]
	if ok, err := tb.offerHeldFrontTool(t, r.toolShow); !ok {
		if err != nil {
			r.say("error", r.text("error", "text", "show: "+err.Error()))
		}
		return
	}
	rs := &r.link.shareConn
	tb.display = func() bool {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return rs.c != nil
	}
	if tb.unmetNote == nil {
		tb.unmetNote = map[string]string{}
	}
	tb.unmetNote[t.Name] = t.text("unshared")
}

// toolShow sends a file of the project to the web UI's viewer through the
// service, and waits for its answer: at most the approval timeout, the
// turn's end, or the share's.
func (r *repl) toolShow(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	req, asked, bad := readShow(tb, raw)
	if bad != nil {
		return *bad
	}
	rs := &r.link.shareConn
	id, ch := rs.put(shareCard{Kind: "show", SessionID: r.e.sess.ID, ToolCallID: cardID(ctx), Cwd: tb.root, Show: &req})
	if id == "" { // the share ended since the call was allowed
		t := theSpec().Tools["show"]
		return errResult(tb.unavailableText(t))
	}
	wait := time.NewTimer(approvalLimit(r))
	defer wait.Stop()
	select {
	case a, ok := <-ch:
		if ok && a != nil && a.Show != nil {
			return showAnswered(asked, a.Show)
		}
	case <-ctx.Done():
		rs.settle(id)
	case <-wait.C:
		rs.settle(id)
	}
	return showAnswered(asked, nil)
}

// promptDone sends a web prompt's answer back to the service.
func (r *repl) promptDone(tid string, ans json.RawMessage) {
	rs := &r.link.shareConn
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.c != nil {
		rs.writeLocked(shareLine{Type: "prompt_done", ID: tid, Result: ans})
	}
}

// shareWork runs what the web UI asked, between turns.
func (r *repl) shareWork(w shareWork) {
	if w.delete != "" {
		r.deletedFromWeb(w.delete)
		return
	}
	r.promptDone(w.prompt.TurnID, r.webPrompt(w.prompt))
}

// webDuringTurn is the web UI's work arriving while a turn runs: a prompt
// waits its turn; a delete stops the turn first.
func (r *repl) webDuringTurn(w shareWork, cancel context.CancelFunc) {
	if w.delete != "" {
		cancel()
	} else {
		r.say("notice", replLinkText("share_web_queued", "text", oneLine(w.prompt.Text, 200)))
	}
	r.webQueue = append(r.webQueue, w)
}

// webPrompt runs the web UI's prompt as a turn of this session, expanded as
// a link prompt is: a shared command is that command (its mode lowered to
// the device's max_mode), and @paths are attached only inside the
// project and — when the device has roots — only when the project is
// inside one of them.
func (r *repl) webPrompt(p *sharePrompt) json.RawMessage {
	tid := p.TurnID
	r.say("notice", replLinkText("share_web_prompt", "text", oneLine(p.Text, 200)))
	opts := r.expandOptions()
	opts.NoMentions = len(p.Roots) > 0 && !insideAny(p.Roots, r.e.perm.root)
	exp, err := expandWith(opts, p.Text)
	if err != nil {
		r.say("error", r.text("error", "text", err.Error()))
		return rawJSON(map[string]any{"stopReason": "refusal", "_meta": map[string]any{"lembas": map[string]any{"turnId": tid, "error": oneLine(err.Error(), 500)}}})
	}
	if exp.Mode != "" {
		if m := (remoteLimits{MaxMode: p.MaxMode}).lowerMode(exp.Mode); m != r.e.perm.mode() {
			r.setMode(m)
		}
	}
	done := rawJSON(map[string]any{"stopReason": "end_turn", "_meta": map[string]any{"lembas": map[string]any{"turnId": tid}}})
	switch exp.Action {
	case "undo":
		r.undo()
		return done
	case "compact":
		r.compactNow()
		return done
	case "plan":
		return done
	}
	for _, path := range exp.Read {
		r.e.tb.stamp(path)
	}
	return r.runTurnAs(tid, exp.Text, exp.Images...)
}

// insideAny says whether dir (symlinks resolved) is inside one of roots.
func insideAny(roots []string, dir string) bool {
	d := evalExisting(dir)
	for _, root := range roots {
		if within(root, d) {
			return true
		}
	}
	return false
}

// deletedFromWeb is the web UI deleting the shared session: the terminal
// goes on in a new session (announced in its place) and lets go of the
// old one, which the service then deletes.
func (r *repl) deletedFromWeb(id string) {
	rs := &r.link.shareConn
	if id == r.e.sess.ID {
		r.switchSession("")
		r.say("notice", replLinkText("share_web_deleted", "old", id))
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.c != nil {
		r.sendShareLocked(false)
		rs.writeLocked(shareLine{Type: "released", ID: id})
	}
}

// forwardEvent sends one engine event of a shared session to the service,
// shaped as a link session's: the turn's id on prompt and done, task start
// and end around them, a title event when the title changed.
func (rl *replLink) forwardEvent(ev event) {
	rs := &rl.shareConn
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.c == nil {
		return
	}
	rl.mu.Lock()
	tid := rl.turnID
	rl.mu.Unlock()
	send := func(m map[string]any) { rs.writeLocked(shareLine{Type: "event", Event: m}) }
	if ev.Type == evPrompt {
		send(map[string]any{"type": "task", "state": "start", "turnId": tid})
	}
	m := eventMap(ev)
	linkEventExtras(ev, m)
	if ev.Type == evPrompt || ev.Type == evDone {
		m["turnId"] = tid
	}
	send(m)
	if ev.Type == evDone {
		if t := rl.r.e.sess.Title; t != rl.lastTitle {
			rl.lastTitle = t
			send(map[string]any{"type": "title", "id": rl.r.e.sess.ID, "title": t})
		}
		send(map[string]any{"type": "task", "state": "end", "turnId": tid})
	}
}

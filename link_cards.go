package main

// The link's cards and the display: ask_user and plan_submit put to the
// web UI (_lembas/question, _lembas/plan, capabilities ask and plan), the
// shared show tool (_lembas/show, capability show), the progress phases
// only the link can see (queued, reading_prompt), and jobs on the link
// (capability jobs). harness/acp.md is the contract, harness/cards.json
// the numbers and texts. A card waits at most remote.approval_timeout,
// like an approval; a card no longer waited for is taken down with
// _lembas/permission/settled, as approvals are.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// cardsSpec is harness/cards.json.
type cardsSpec struct {
	About        string   `json:"about"`
	Capabilities []string `json:"capabilities"`
	Question     struct {
		LabelMax int `json:"label_max"`
	} `json:"question"`
	Progress struct {
		About                 string `json:"about"`
		ReadingPromptMinBytes int    `json:"reading_prompt_min_bytes"`
	} `json:"progress"`
	Show struct {
		Kinds     map[string]string `json:"kinds"`
		Languages map[string]string `json:"languages"`
	} `json:"show"`
	Jobs struct {
		OutputTailLines int `json:"output_tail_lines"`
	} `json:"jobs"`
	Texts  map[string]string `json:"texts"`
	Errors map[string]string `json:"errors"`
}

//go:noinline
func theCardsSpec() *cardsSpec { return cardsSpecFile.get() }

var cardsSpecFile = &harnessFile[cardsSpec]{name: "harness/cards.json"}

// linkCardState is a link's memory of its client's cards: off after the
// client answered one with method-not-found, until the next initialize.
type linkCardState struct {
	off bool
}

// linkCards answers ask_user and plan_submit for one link session.
type linkCards struct{ ls *linkSession }

func (c linkCards) cardsOff() bool {
	svc := c.ls.svc
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return !svc.lembas || svc.cards.off
}

// card puts one card to the client and waits for its answer, at most
// remote.approval_timeout. false: no answer (timed out, cancelled, the
// link gone, or a client that does not know the method — which turns the
// cards off for the rest of the link, as acp.md says).
func (c linkCards) card(ctx context.Context, method, callID string, params map[string]any, out any) bool {
	svc := c.ls.svc
	tctx, cancel := context.WithTimeout(ctx, time.Duration(svc.approvalTimeout())*time.Second)
	defer cancel()
	err := svc.conn.call(tctx, method, params, out)
	if err == nil {
		return true
	}
	var re *rpcError
	if errors.As(err, &re) && re.Code == rpcMethodNotFound {
		svc.mu.Lock()
		svc.cards.off = true
		svc.mu.Unlock()
		svc.log(method + ": the client does not answer cards; questions and plans go unasked on this link")
		return false
	}
	if tctx.Err() != nil {
		svc.conn.notify("_lembas/permission/settled", map[string]string{"sessionId": c.ls.s.id, "toolCallId": callID})
	}
	return false
}

// askUser is _lembas/question: the questions as the seed shapes them, the
// first option the recommended one, each label cut for the card and read
// back as the whole label the model wrote.
func (c linkCards) askUser(ctx context.Context, qs []question) askAnswer {
	defer c.ls.s.e.waitingForPerson("ask_user")()
	callID := cardID(ctx)
	params, full := questionCard(c.ls.s.id, callID, qs, false)
	var res questionResult
	if !c.card(ctx, "_lembas/question", callID, params, &res) {
		return askAnswer{Dismissed: true}
	}
	return res.answer(qs, full)
}

// questionCard is _lembas/question's params for qs, and for each question
// the map from a label as cut for the card back to the whole one. patient:
// a person may also answer at the terminal (a shared session).
func questionCard(sessionID, callID string, qs []question, patient bool) (map[string]any, []map[string]string) {
	max := theCardsSpec().Question.LabelMax
	full := make([]map[string]string, len(qs))
	var cards []map[string]any
	for i, q := range qs {
		full[i] = map[string]string{}
		opts := []map[string]any{}
		for j, o := range q.Options {
			label := cutRunes(o.Label, max)
			full[i][label] = o.Label
			opt := map[string]any{"label": label, "description": o.Description}
			if j == 0 {
				opt["recommended"] = true
			}
			opts = append(opts, opt)
		}
		cards = append(cards, map[string]any{"header": "", "question": q.Question, "multiple": q.Multiple, "options": opts})
	}
	return map[string]any{"sessionId": sessionID, "toolCallId": callID, "questions": cards,
		"_meta": map[string]any{"lembas": map[string]any{"patient": patient}}}, full
}

// questionResult is _lembas/question's answer.
type questionResult struct {
	Outcome string           `json:"outcome"`
	Answers []questionAnswer `json:"answers"`
}

// answer reads the client's answer as the engine's: each option label
// back to the whole one, anything unknown as dismissed.
func (res questionResult) answer(qs []question, full []map[string]string) askAnswer {
	if res.Outcome != "answered" {
		return askAnswer{Dismissed: true}
	}
	ans := askAnswer{}
	for i := range qs {
		a := questionAnswer{Kind: "skipped"}
		if i < len(res.Answers) {
			a = res.Answers[i]
		}
		switch a.Kind {
		case "options":
			for k, l := range a.Labels {
				if f, ok := full[i][l]; ok {
					a.Labels[k] = f
				}
			}
		case "custom", "back", "skipped":
		default:
			return askAnswer{Dismissed: true} // anything else reads as dismissed
		}
		ans.Answers = append(ans.Answers, a)
	}
	return ans
}

// reviewPlan is _lembas/plan: the plan as markdown and, for a client with
// plan_state, as its structure. An approval's mode is lowered to
// remote.max_mode; where even manual is beyond it nothing is decided.
func (c linkCards) reviewPlan(ctx context.Context, rv planReview) planAnswer {
	defer c.ls.s.e.waitingForPerson("plan_submit")()
	callID := cardID(ctx)
	var res planResult
	if !c.card(ctx, "_lembas/plan", callID, planCard(c.ls.s.id, callID, rv, false), &res) {
		return planAnswer{Choice: "dismissed"}
	}
	ans := res.answer(c.ls.svc)
	if ans.Choice == "approve" {
		// plan_submit puts the session in this mode as soon as this
		// returns (plan.go); the client hears it as it hears set_mode's.
		m := ans.Mode
		if m != "manual" {
			m = "edit"
		}
		c.ls.s.update(map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": m})
		c.ls.svc.event(c.ls.s.id, map[string]any{"type": "mode", "mode": m})
	}
	return ans
}

// planCard is _lembas/plan's params.
func planCard(sessionID, callID string, rv planReview, patient bool) map[string]any {
	m := map[string]any{"sessionId": sessionID, "toolCallId": callID, "text": rv.Markdown, "plan": planWire(rv.Plan),
		"_meta": map[string]any{"lembas": map[string]any{"patient": patient}}}
	if rv.Path != "" {
		m["path"] = rv.Path // the plan file written for the record (plan.go)
	}
	return m
}

// planResult is _lembas/plan's answer.
type planResult struct {
	Outcome  string `json:"outcome"`
	Mode     string `json:"mode"`
	Feedback string `json:"feedback"`
}

// answer reads it under the device's limits as they are now.
func (res planResult) answer(svc *linkService) planAnswer {
	lim, _ := readRemoteLimits()
	ans := planFromCard(res.Outcome, res.Mode, res.Feedback, lim)
	if res.Outcome == "approve" && ans.Choice != "approve" {
		svc.log(theCardsSpec().Texts["plan_beyond_max"])
	}
	return ans
}

// planFromCard reads a _lembas/plan result: an approval's mode lowered to
// the device's max_mode (nothing decided where even manual is beyond it),
// anything unknown as dismissed.
func planFromCard(outcome, mode, feedback string, lim remoteLimits) planAnswer {
	switch outcome {
	case "approve":
		m := "edit"
		if mode == "manual" {
			m = "manual"
		}
		if m = lim.lowerMode(m); m != "edit" && m != "manual" {
			return planAnswer{Choice: "dismissed"}
		}
		return planAnswer{Choice: "approve", Mode: m}
	case "revise":
		return planAnswer{Choice: "revise", Feedback: feedback}
	}
	return planAnswer{Choice: "dismissed"}
}

// showKind is how the viewer draws a file, by its extension.
func showKind(name string) (kind, lang string) {
	cs := theCardsSpec()
	ext := strings.ToLower(filepath.Ext(name))
	kind, lang = cs.Show.Kinds[ext], cs.Show.Languages[ext]
	if kind == "" {
		kind = "text"
		if lang != "" {
			kind = "code"
		}
	}
	return kind, lang
}

// cardID is the call a card answers; a made one when the tool ran without
// a call id (never in a turn, where runOne gives it).
func cardID(ctx context.Context) string {
	if id := callIDOf(ctx); id != "" {
		return id
	}
	return "card_" + newTurnID()[5:]
}

// hookCards makes a link session's engine ask its questions and plans of
// the web UI, offers it the show tool, and wakes it for a job that ends.
func (ls *linkSession) hookCards() {
	e := ls.s.e
	cards := linkCards{ls}
	e.asker = cards
	e.planner = cards
	if ls.sched == nil {
		ls.offerShow() // a scheduled run is shown nowhere (link_scheduled.go)
	}
	e.jx.mu.Lock()
	e.jx.wake = ls.wakeMachine
	e.jx.mu.Unlock()
}

// ---- show ----

// offerShow adds the show tool to a link session's toolbox before its
// first request, so the tools array stays byte-stable; -p and plain ACP
// never offer it (no implementation is registered for them), the REPL
// only when an instance is logged in to (repl_share.go). Its requirement,
// display, holds while the link's client said _meta.lembas.
func (ls *linkSession) offerShow() {
	tb := ls.s.e.tb
	if _, err := tb.offerFrontTool(theSpec().Tools["show"], ls.toolShow); err != nil {
		ls.svc.log("show: " + err.Error())
		return
	}
	tb.display = func() bool { return !linkCards{ls}.cardsOff() }
}

// showRequest is the file a show call sends to the viewer: _lembas/show's
// params less the session and the call (acp.md), and what a shared
// session's show card carries to the service.
type showRequest struct {
	Path      string `json:"path"` // relative to the project, slash-separated
	Title     string `json:"title,omitempty"`
	Kind      string `json:"kind"`
	Language  string `json:"language,omitempty"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
}

// showResult is _lembas/show's answer.
type showResult struct {
	Shown  bool   `json:"shown"`
	Reason string `json:"reason,omitempty"`
}

// params is _lembas/show's params for one call.
//
//go:noinline
func (r showRequest) params(sessionID, callID string) map[string]any {
	p := map[string]any{"sessionId": sessionID, "toolCallId": callID, "path": r.Path, "kind": r.Kind,
		"content": r.Content, "truncated": r.Truncated}
	if r.Title != "" {
		p["title"] = r.Title
	}
	if r.Language != "" {
		p["language"] = r.Language
	}
	return p
}

// readShow reads the file a show call names, as the viewer is sent it: at
// most limits.max_bytes, never cut inside a character; a directory, a
// binary file or one that cannot be read is the call's answer (bad).
func readShow(tb *toolbox, raw json.RawMessage) (req showRequest, asked string, bad *toolResult) {
	t := theSpec().Tools["show"]
	var a struct {
		Path  string `json:"path"`
		Title string `json:"title"`
	}
	json.Unmarshal(raw, &a)
	fail := func(r toolResult) (showRequest, string, *toolResult) { return showRequest{}, a.Path, &r }
	abs, _ := resolvePath(tb.root, a.Path)
	st, err := os.Stat(abs)
	if err != nil {
		return fail(fsError(a.Path, err))
	}
	if st.IsDir() {
		return fail(errResult(t.text("directory", "path", a.Path)))
	}
	data, err := tb.files().readFile(abs)
	if err != nil {
		return fail(fsError(a.Path, err))
	}
	max := t.limit("max_bytes")
	truncated := len(data) > max
	if truncated {
		data = data[:max]
		for len(data) > 0 && !utf8.Valid(data) { // not in the middle of a character
			data = data[:len(data)-1]
		}
	}
	if !utf8.Valid(data) || strings.IndexByte(string(data), 0) >= 0 {
		return fail(errResult(t.text("binary", "path", a.Path)))
	}
	kind, lang := showKind(abs)
	rel, err := filepath.Rel(tb.root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = abs
	}
	return showRequest{Path: filepath.ToSlash(rel), Title: a.Title, Kind: kind, Language: lang,
		Content: string(data), Truncated: truncated}, a.Path, nil
}

// showAnswered is a show call's answer to the model for the viewer's
// result (nil: no answer came).
func showAnswered(asked string, res *showResult) toolResult {
	t := theSpec().Tools["show"]
	if res == nil {
		return errResult(t.text("not_shown", "path", asked, "reason", t.text("no_answer")))
	}
	if !res.Shown {
		reason := strings.TrimSpace(res.Reason)
		if reason == "" {
			reason = t.text("no_answer")
		}
		return errResult(t.text("not_shown", "path", asked, "reason", cutRunes(reason, 500)))
	}
	return toolResult{Text: t.text("shown", "path", asked)}
}

// toolShow sends a file of the project to the client's viewer.
func (ls *linkSession) toolShow(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	req, asked, bad := readShow(tb, raw)
	if bad != nil {
		return *bad
	}
	callID := cardID(ctx)
	var res showResult
	if !(linkCards{ls}).card(ctx, "_lembas/show", callID, req.params(ls.s.id, callID), &res) {
		return showAnswered(asked, nil)
	}
	return showAnswered(asked, &res)
}

// ---- progress the link sees ----

// sendQueued tells the client a prompt waits behind ahead others of its
// session: the turn's own progress event, which leaves the running turn's
// phase alone.
func (ls *linkSession) sendQueued(tid string, ahead int) {
	now := time.Now()
	data := map[string]any{"ahead": ahead}
	ls.svc.progressEvents(ls.s.id, map[string]any{"type": theLinkSpec().ProgressEvent, "turnId": tid, "time": now,
		"progress": &phase{Phase: "queued", Since: now, Data: data, Text: phaseText("queued", data)}})
}

// progressEvents sends one progress change under both of its names
// (acp.md, capability progress): the 3.4.0 phase event the harness README
// names — { phase, since, text, data } with the data's fields beside them —
// and the old progress event, which keeps its status text (text) and the
// phase nested under progress for a client of the older event list. m is
// the old event as eventMap makes it.
func (svc *linkService) progressEvents(sessionID string, m map[string]any) {
	var p phase
	json.Unmarshal(rawJSON(m["progress"]), &p)
	m["text"] = p.Text
	svc.event(sessionID, m)
	ph := map[string]any{}
	for k, v := range p.Data {
		ph[k] = v
	}
	for k, v := range m { // type, turnId, time: as the old event has them
		if k != "progress" {
			ph[k] = v
		}
	}
	ph["type"] = theLinkSpec().PhaseEvent
	ph["phase"], ph["since"], ph["text"] = p.Phase, p.Since, p.Text
	if len(p.Data) > 0 {
		ph["data"] = p.Data
	}
	svc.event(sessionID, ph)
}

// readingPrompt sets reading_prompt while a prompt with something to read
// (attachments, @ mentions, a big text) is turned into the model's text.
func (s *acpSession) readingPrompt(blocks []acpBlock) {
	min := theCardsSpec().Progress.ReadingPromptMinBytes
	n, heavy := 0, false
	for _, b := range blocks {
		n += len(b.Text) + len(b.Data)
		if b.Type == "resource" || b.Type == "image" || strings.Contains(b.Text, "@") {
			heavy = true
		}
	}
	if !heavy && n < min {
		return
	}
	s.e.jx.mu.Lock()
	s.e.jx.progress.key = "" // a new turn: sent again even when the last one stopped here
	s.e.jx.mu.Unlock()
	s.e.setPhase("reading_prompt", nil)
}

// progressNow is the session's phase for status, while it works.
func (ls *linkSession) progressNow() any {
	if !ls.busy() {
		return nil
	}
	e := ls.s.e
	e.jx.mu.Lock()
	defer e.jx.mu.Unlock()
	if e.jx.progress.cur == "" {
		return nil
	}
	return map[string]any{"phase": e.jx.progress.cur, "data": e.jx.progress.data,
		"text": phaseText(e.jx.progress.cur, e.jx.progress.data)}
}

// linkEventExtras adds what the link's event kinds carry beyond the
// engine's: machine on a prompt lembas started, job_note for the marks a
// job's end gave the model.
func linkEventExtras(ev event, m map[string]any) {
	if ev.Type == evPrompt && ev.By == "machine" {
		m["machine"] = true
	}
	if ev.Type == evJob && ev.Job == nil {
		m["type"] = "job_note"
	}
}

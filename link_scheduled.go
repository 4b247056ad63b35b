package main

// Scheduled work on a linked computer (harness 3.5.0; acp.md "Scheduled
// work", loop.json scheduled). A schedule on the instance runs as an agent
// turn here, in a folder of this device, while nobody watches:
//
//	consent   remote.scheduled (off by default; lembas service scheduled on|off),
//	          sent as limits.scheduled and judged again at every request
//	session   session/new with _meta.lembas.scheduled { schedule, run, mode?,
//	          approval_wait?, agents? }: the mode the schedule's (edit when none,
//	          plan refused), lowered to remote.max_mode; no show tool; ask_user and
//	          plan_submit answer that nobody is there
//	approval  session/request_permission carries _meta.lembas.scheduled and waits
//	          the schedule's wait, asked again on the next link when one drops
//	report    the prompt's answer carries _meta.lembas.scheduled { status, text }
//
// The folder, the trust, the floor and the sandbox are those of every link
// session. The watch command of a monitor is link_monitor.go's.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// schedSpec is loop.json's scheduled.
type schedSpec struct {
	About   string `json:"about"`
	Setting struct {
		Key     string `json:"key"`
		Label   string `json:"label"`
		Default bool   `json:"default"`
	} `json:"setting"`
	Modes struct {
		Allowed []string `json:"allowed"`
		Default string   `json:"default"`
		Refused []string `json:"refused"`
	} `json:"modes"`
	ApprovalWait struct {
		DefaultS int `json:"default_s"`
		MinS     int `json:"min_s"`
		MaxS     int `json:"max_s"`
	} `json:"approval_wait"`
	Sentinel string   `json:"sentinel"`
	Statuses []string `json:"statuses"`
	Watch    struct {
		TimeoutDefaultS int `json:"timeout_default_s"`
		TimeoutMaxS     int `json:"timeout_max_s"`
		MaxOutputBytes  int `json:"max_output_bytes"`
		ExcerptBytes    int `json:"excerpt_bytes"`
		CommandMaxBytes int `json:"command_max_bytes"`
	} `json:"watch"`
	IDMax    int               `json:"id_max"`
	Texts    map[string]string `json:"texts"`
	Refusals map[string]string `json:"refusals"`
}

var (
	schedSpecOnce sync.Once
	schedSpecVal  *schedSpec
)

// theSchedSpec decodes loop.json's scheduled once, strictly; a broken one
// is a build-time bug TestScheduledSpec catches.
func theSchedSpec() *schedSpec {
	schedSpecOnce.Do(func() {
		dec := json.NewDecoder(bytes.NewReader(theSpec().Loop.Scheduled))
		dec.DisallowUnknownFields()
		schedSpecVal = &schedSpec{}
		if err := dec.Decode(schedSpecVal); err != nil {
			panic("harness: loop.json scheduled: " + err.Error())
		}
	})
	return schedSpecVal
}

func schedText(key string, kv ...any) string { return loopText(theSchedSpec().Texts, key, kv...) }

// schedRefusal is a -32602 with one of loop.json's scheduled refusals.
func schedRefusal(key string, kv ...any) *rpcError {
	return &rpcError{Code: rpcInvalidParams, Message: loopText(theSchedSpec().Refusals, key, kv...)}
}

func init() {
	linkKeys = append(linkKeys, "scheduled", "schedule", "run", "approval_wait", "agents", "min", "max",
		"command", "timeout", "cwd", "mode")
}

// schedParams is _meta.lembas.scheduled on session/new, as the instance
// sends it.
type schedParams struct {
	Schedule     string          `json:"schedule"`
	Run          string          `json:"run"`
	Mode         string          `json:"mode"`
	ApprovalWait json.RawMessage `json:"approval_wait"`
	Agents       json.RawMessage `json:"agents"`
}

// schedRun is a scheduled session as the device keeps it (a mark in
// <state>/link/scheduled.json, so a session opened again from the store is
// still one).
type schedRun struct {
	Schedule     string       `json:"schedule"`
	Run          string       `json:"run"`
	Mode         string       `json:"mode"`  // lowered to remote.max_mode
	Asked        string       `json:"asked"` // the schedule's own mode
	ApprovalWait int          `json:"approval_wait"`
	Agents       *schedAgents `json:"agents,omitempty"`
}

type schedAgents struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// schedMode judges a schedule's mode: edit when none was chosen, plan and
// anything unknown refused, then lowered to max_mode (under max_mode plan
// nothing scheduled can run).
func schedMode(lim remoteLimits, mode string) (asked, lowered string, err *rpcError) {
	sp := theSchedSpec()
	if strings.TrimSpace(mode) == "" {
		mode = sp.Modes.Default
	}
	m, nerr := normMode(mode)
	if nerr != nil {
		return "", "", schedRefusal("mode", "mode", cutForError(mode, 32))
	}
	if inList(sp.Modes.Refused, m) {
		return "", "", schedRefusal("plan")
	}
	if !inList(sp.Modes.Allowed, m) {
		return "", "", schedRefusal("mode", "mode", cutForError(mode, 32))
	}
	low := lim.lowerMode(m)
	if !inList(sp.Modes.Allowed, low) {
		return "", "", schedRefusal("max_mode_plan")
	}
	return m, low, nil
}

// judgeScheduled decides a scheduled session/new under the limits as they
// are now: the consent first, then the ids, the mode, the wait and the
// agents.
func judgeScheduled(lim remoteLimits, p schedParams) (schedRun, *rpcError) {
	sp := theSchedSpec()
	if !lim.Scheduled {
		return schedRun{}, schedRefusal("off")
	}
	okID := func(s string) bool {
		return s != "" && utf8.ValidString(s) && utf8.RuneCountInString(s) <= sp.IDMax && strings.TrimSpace(s) == s
	}
	if !okID(p.Schedule) || !okID(p.Run) {
		return schedRun{}, schedRefusal("ids", "max", sp.IDMax, "schedule", quoteCut(p.Schedule), "run", quoteCut(p.Run))
	}
	asked, mode, err := schedMode(lim, p.Mode)
	if err != nil {
		return schedRun{}, err
	}
	r := schedRun{Schedule: p.Schedule, Run: p.Run, Mode: mode, Asked: asked, ApprovalWait: sp.ApprovalWait.DefaultS}
	if raw := bytes.TrimSpace(p.ApprovalWait); len(raw) > 0 && string(raw) != "null" {
		n, ok := wholeNumber(raw)
		if !ok || n < sp.ApprovalWait.MinS || n > sp.ApprovalWait.MaxS {
			return schedRun{}, schedRefusal("wait", "min", sp.ApprovalWait.MinS, "max", sp.ApprovalWait.MaxS, "got", cutForError(string(raw), 32))
		}
		r.ApprovalWait = n
	}
	if raw := bytes.TrimSpace(p.Agents); len(raw) > 0 && string(raw) != "null" {
		var a struct {
			Min json.RawMessage `json:"min"`
			Max json.RawMessage `json:"max"`
		}
		json.Unmarshal(raw, &a)
		lo, ok1 := wholeNumber(a.Min)
		hi, ok2 := wholeNumber(a.Max)
		if !ok1 || !ok2 || lo < 1 || hi < lo {
			var c bytes.Buffer
			json.Compact(&c, raw)
			return schedRun{}, schedRefusal("agents", "got", cutForError(c.String(), 64))
		}
		r.Agents = &schedAgents{Min: lo, Max: hi}
	}
	return r, nil
}

func quoteCut(s string) string { return fmt.Sprintf("%q", cutForError(s, 40)) }

// wholeNumber reads a JSON whole number (1800, 1800.0), nothing else.
func wholeNumber(raw json.RawMessage) (int, bool) {
	var f float64
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &f) != nil || f != float64(int64(f)) || f > 1<<31 || f < -(1<<31) {
		return 0, false
	}
	return int(f), true
}

// newScheduledSession answers a session/new marked scheduled: judged as a
// scheduled run, then opened as any link session is (the folder in the
// roots and trusted, the instance's model), in the run's mode.
func (svc *linkService) newScheduledSession(p linkNewParams, sp schedParams, lim remoteLimits) (any, func(), error) {
	run, rerr := judgeScheduled(lim, sp)
	if rerr != nil {
		return nil, nil, rerr
	}
	p.Meta.Mode = run.Mode
	res, after, err := svc.openLinkSession(p, lim, &run)
	if err != nil {
		return nil, nil, err
	}
	lm := res.(map[string]any)["_meta"].(map[string]any)["lembas"].(map[string]any)
	lm["scheduled"] = run
	return res, after, nil
}

// ---- the marks ----

// A scheduled session's mark is <state>/link/scheduled/<id>.json: one small
// file each, so a device that runs a schedule every hour reads and writes
// one mark per run, never a list of them all.

func schedMarksDir() string { return filepath.Join(linkStateDir(), "scheduled") }

func schedMarkPath(id string) string { return filepath.Join(schedMarksDir(), id+".json") }

// markScheduled keeps id's run, so the session stays scheduled (its mode
// lowered, Plan refused) when it is opened again from the store; the
// error is the write's, and a session whose mark is not kept is not
// opened. forgetScheduled drops it with the session.
func markScheduled(id string, r schedRun) error {
	if !validID(id) {
		return errorf("keeping the scheduled run of %q: not a session id", id)
	}
	if err := os.MkdirAll(schedMarksDir(), 0o700); err != nil {
		return errorf("keeping the scheduled run of %s: %w", id, err)
	}
	b, _ := json.Marshal(r) // a struct of strings: it always encodes
	if err := writeFileAtomic(schedMarkPath(id), b, 0o600); err != nil {
		return errorf("keeping the scheduled run of %s: %w", id, err)
	}
	return nil
}

func forgetScheduled(id string) {
	if validID(id) {
		// The session is gone: a mark a failed remove leaves behind names
		// no session, and opening one reads the session first.
		os.Remove(schedMarkPath(id))
	}
}

// scheduledMark is id's run, or nil for a session that is not scheduled.
func scheduledMark(id string) *schedRun {
	if !validID(id) {
		return nil
	}
	b, err := os.ReadFile(schedMarkPath(id))
	if err != nil {
		return nil
	}
	var r schedRun
	if json.Unmarshal(b, &r) != nil || r.Run == "" {
		return nil
	}
	return &r
}

// sweepSchedMarks removes the marks of sessions no longer in the store
// (pruned, or deleted while no service ran), at the service's start.
func sweepSchedMarks() int {
	names, _ := filepath.Glob(filepath.Join(schedMarksDir(), "*.json"))
	st := newStore(stateDir(), func(string) {})
	n := 0
	for _, p := range names {
		id := strings.TrimSuffix(filepath.Base(p), ".json")
		_, e1 := os.Stat(st.path(id))
		_, e2 := os.Stat(st.oldPath(id))
		if os.IsNotExist(e1) && os.IsNotExist(e2) && os.Remove(p) == nil {
			n++
		}
	}
	return n
}

// ---- what a scheduled session's engine is given ----

// hookScheduled makes a scheduled session's engine ask its approvals with
// the schedule's wait, and answer ask_user and plan_submit with nobody.
func (ls *linkSession) hookScheduled() {
	e := ls.s.e
	e.ask = &schedApprover{ls: ls, run: ls.sched}
	e.asker = schedNobody{}
	e.planner = schedNobody{}
}

// schedNobody is the person of a scheduled run: not there.
type schedNobody struct{}

func (schedNobody) askUser(context.Context, []question) askAnswer { return askAnswer{Dismissed: true} }
func (schedNobody) reviewPlan(context.Context, planReview) planAnswer {
	return planAnswer{Choice: "dismissed"}
}
func (schedNobody) cardsOff() bool { return true }
func (schedNobody) nobody(tool string) string {
	if k := tool + "_nobody"; theSchedSpec().Texts[k] != "" {
		return schedText(k)
	}
	return ""
}

// schedApprover asks the instance (which puts the card to the person's
// phone) and waits the schedule's wait. A link that drops while it waits
// does not end the wait: the request is sent again on the next link that
// comes up, until the wait runs out; then it counts as denied and the
// turn goes on.
type schedApprover struct {
	ls  *linkSession
	run *schedRun
}

func (a *schedApprover) waitLimit() time.Duration {
	return time.Duration(a.run.ApprovalWait) * time.Second
}

// approve is called by approveWithin, whose context ends at the wait.
func (a *schedApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	s, svc := a.ls.s, a.ls.svc
	allowed, id, tc := s.beginApproval(req)
	if allowed {
		return approvalAnswer{Choice: "once"}
	}
	params := permissionParams(s.id, req, tc)
	params["_meta"].(map[string]any)["lembas"].(map[string]any)["scheduled"] = map[string]any{
		"schedule": a.run.Schedule, "run": a.run.Run, "wait": a.run.ApprovalWait}
	var last *linkSocket
	for {
		sock := svc.sched.waitLinked(ctx, svc, last)
		if sock == nil {
			break // the wait ran out, or the turn was cancelled
		}
		var ans acpPermissionAnswer
		err := svc.conn.call(ctx, "session/request_permission", params, &ans)
		if err == nil {
			return permissionAnswer(req, ans, nil, false)
		}
		if ctx.Err() != nil {
			break
		}
		if svc.pipe.socket() == sock {
			// The client answered with an error, on a link still up: a denial.
			svc.log(fmt.Sprintf("session/request_permission: %v; taken as a denial", err))
			return approvalAnswer{Choice: "deny"}
		}
		last = sock // the link dropped: ask again on the next one
	}
	svc.conn.notify("_lembas/permission/settled", map[string]string{"sessionId": s.id, "toolCallId": id})
	if ctx.Err() == context.DeadlineExceeded {
		return approvalAnswer{Choice: "deny", Why: "timeout"}
	}
	return approvalAnswer{Choice: "deny", Why: "cancelled"}
}

// schedLinkState wakes a scheduled approval waiting for a link: each
// initialize of a client that said _meta.lembas closes ready.
type schedLinkState struct {
	mu    mutex
	ready chan struct{}
}

// linked is called when a client initialized.
func (st *schedLinkState) linked() {
	st.mu.Lock()
	if st.ready != nil {
		close(st.ready)
	}
	st.ready = nil
	st.mu.Unlock()
}

// waitLinked waits for a link other than not whose client said
// _meta.lembas, and gives its socket; nil when ctx ended first.
func (st *schedLinkState) waitLinked(ctx context.Context, svc *linkService, not *linkSocket) *linkSocket {
	for {
		st.mu.Lock()
		if st.ready == nil {
			st.ready = make(chan struct{})
		}
		ch := st.ready
		st.mu.Unlock()
		svc.mu.Lock()
		sock, lembas := svc.sock, svc.lembas
		svc.mu.Unlock()
		if sock != nil && lembas && sock != not {
			return sock
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
	}
}

// ---- the run's report ----

// runReport is what a scheduled prompt's answer says of the run: its
// status and the final reply's text, the sentinel stripped.
func runReport(stopReason string, failed bool, reply string) map[string]any {
	status, text := "ok", strings.TrimSpace(reply)
	switch {
	case failed:
		status = "failed"
	case stopReason == "cancelled":
		status = "cancelled"
	default:
		if t, silent := stripSentinel(text); silent {
			status, text = "silent", t
		}
	}
	return map[string]any{"status": status, "text": text}
}

// stripSentinel finds the sentinel on the reply's first or last line (its
// first line starting with it, or its last line ending with it, spaces
// around not counted) and takes it out; anywhere else it is text.
func stripSentinel(text string) (string, bool) {
	mark := theSchedSpec().Sentinel
	lines := strings.Split(strings.TrimSpace(text), "\n")
	first := strings.TrimSpace(lines[0])
	last := strings.TrimSpace(lines[len(lines)-1])
	switch {
	case strings.HasPrefix(first, mark):
		lines[0] = strings.TrimSpace(strings.TrimPrefix(first, mark))
	case strings.HasSuffix(last, mark):
		lines[len(lines)-1] = strings.TrimSpace(strings.TrimSuffix(last, mark))
	default:
		return text, false
	}
	return strings.TrimSpace(strings.Join(lines, "\n")), true
}

// finalReply is the text of the turn's last answer: the last assistant
// message with text after the prompt that started the turn.
func finalReply(sess *session) string {
	text := ""
	for i := len(sess.Messages) - 1; i >= 0; i-- {
		m := sess.Messages[i]
		if m.Role == "user" && m.Kind == "prompt" {
			break
		}
		if m.Role == "assistant" && strings.TrimSpace(m.Content) != "" && text == "" {
			text = m.Content
		}
	}
	return text
}

// reportRun adds the run's report to a scheduled prompt's answer.
func (ls *linkSession) reportRun(res map[string]any, lm map[string]any, rpcFailed bool) {
	if ls.sched == nil {
		return
	}
	stop, _ := res["stopReason"].(string)
	_, errored := lm["error"]
	rep := runReport(stop, rpcFailed || errored, finalReply(ls.s.e.sess))
	rep["schedule"], rep["run"] = ls.sched.Schedule, ls.sched.Run
	lm["scheduled"] = rep
}

// interruptedReport adds a scheduled run's report to the answer of a turn
// a restart cut off: cancelled, with no text.
func interruptedReport(sessionID string, answer json.RawMessage) json.RawMessage {
	run := scheduledMark(sessionID)
	if run == nil {
		return answer
	}
	var res map[string]any
	if json.Unmarshal(answer, &res) != nil {
		return answer
	}
	meta, _ := res["_meta"].(map[string]any)
	lm, _ := meta["lembas"].(map[string]any)
	if lm == nil {
		return answer
	}
	rep := runReport("cancelled", false, "")
	rep["schedule"], rep["run"] = run.Schedule, run.Run
	lm["scheduled"] = rep
	return rawJSON(res)
}

// refuseScheduled is the judgement again at a request for a scheduled
// session: while remote.scheduled is off, the one fixed text.
func (ls *linkSession) refuseScheduled(lim remoteLimits) *rpcError {
	if ls.sched != nil && !lim.Scheduled {
		return schedRefusal("off")
	}
	return nil
}

// schedWorkMethods are the requests that make a scheduled session work;
// while remote.scheduled is off each is refused. Cancel, status, history
// and delete still answer, so the instance can stop and clean up.
var schedWorkMethods = map[string]bool{"session/prompt": true, "session/set_mode": true, "_lembas/steer": true,
	"_lembas/configure": true, "_lembas/session/compact": true, "_lembas/session/rewind": true, "_lembas/job/send": true}

// refuseScheduledRequest judges a request for a scheduled session again,
// under the limits as they are now.
func (svc *linkService) refuseScheduledRequest(method string, params json.RawMessage, lim remoteLimits) *rpcError {
	if !schedWorkMethods[method] || lim.Scheduled {
		return nil
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(params, &p)
	svc.mu.Lock()
	ls := svc.linkSess[p.SessionID]
	svc.mu.Unlock()
	if (ls != nil && ls.sched != nil) || (ls == nil && scheduledMark(p.SessionID) != nil) {
		return schedRefusal("off")
	}
	return nil
}

// schedSetMode refuses plan mode for a scheduled session.
func (svc *linkService) schedSetMode(id, mode string) *rpcError {
	svc.mu.Lock()
	ls := svc.linkSess[id]
	svc.mu.Unlock()
	if ls != nil && ls.sched != nil && !inList(theSchedSpec().Modes.Allowed, mode) {
		return schedRefusal("set_mode_plan", "id", id)
	}
	return nil
}

// ---- lembas service scheduled on|off, and status ----

// cmdServiceScheduled sets remote.scheduled in config.yaml, in place and
// atomically (config set's editor keeps the comments); a running service
// sees the limits change and relinks.
func cmdServiceScheduled(args []string, stdout func(string)) error {
	if len(args) != 1 || (args[0] != "on" && args[0] != "off") {
		return usageError{schedText("usage")}
	}
	on := args[0] == "on"
	if err := configSet(configPath(), theSchedSpec().Setting.Key, fmt.Sprint(on)); err != nil {
		return err
	}
	lim, err := readRemoteLimits()
	if err != nil {
		return err
	}
	if lim.Scheduled != on {
		return errorf("%s did not read back as %v; check %s", theSchedSpec().Setting.Key, on, configPath())
	}
	if on {
		stdout(schedText("set_on"))
	} else {
		stdout(schedText("set_off"))
	}
	return nil
}

// scheduledStatusLine is service status's line for the setting, as
// config.yaml says it now.
func scheduledStatusLine() string {
	lim, _ := readRemoteLimits()
	state := schedText("refused")
	if lim.Scheduled {
		state = schedText("accepted")
	}
	return schedText("status", "state", state)
}

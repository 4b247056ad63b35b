package main

// Jobs on the link (capability jobs, harness README 2.0.0): a job's start
// and end reach the client as the job event and the marks given to the
// model as job_note (link_cards.go linkEventExtras); _lembas/jobs lists a
// session's jobs, _lembas/job/output gives a job's tail (without moving
// the model's read offset), _lembas/job/stop stops one; a job that ends
// while its session is idle wakes it with a turn of lembas's own, marked
// machine on its prompt event, run in the session's queue so prompts that
// come meanwhile wait behind it.

import (
	"context"
	"encoding/json"
	"strings"
)

// wakeMachine runs the machine's turn in the session's queue when nothing
// of the link runs or waits there; otherwise the marks wait for the next
// step or the end of the running turn (which wakes again).
func (ls *linkSession) wakeMachine() {
	s := ls.s
	ls.mu.Lock()
	s.mu.Lock()
	if len(ls.pending) > 0 || len(s.queue) > 0 || ls.compacting || !s.e.pendingMarks() {
		s.mu.Unlock()
		ls.mu.Unlock()
		return
	}
	tid := newTurnID()
	t := &acpTurn{ready: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(s.a.ctx)
	close(t.ready)
	s.queue = append(s.queue, t)
	ls.pending = append(ls.pending, tid)
	s.mu.Unlock()
	ls.mu.Unlock()
	ls.svc.turns.claim(s.id, tid)
	s.a.wg.Add(1)
	go func() {
		defer s.a.wg.Done()
		defer s.finish(t)
		s.mu.Lock()
		s.active = true
		s.tools = map[string]*acpTool{}
		s.mu.Unlock()
		out, _ := s.e.runMachineTurn(t.ctx)
		s.mu.Lock()
		s.active = false
		s.mu.Unlock()
		reason := out.StopReason
		if t.ctx.Err() != nil || reason == "" {
			reason = "cancelled"
		}
		ls.finishTurn(tid, rawJSON(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage("0"), Result: rawJSON(stopAnswer(reason, out.Unsent))}))
	}()
}

// jobsOf lists a session's jobs as the job event carries them.
func jobsOf(e *engine) []*jobInfo {
	out := []*jobInfo{}
	for _, j := range e.jobs().list() {
		out = append(out, j.info())
	}
	return out
}

type linkJobParams struct {
	SessionID string `json:"sessionId"`
	JobID     string `json:"jobId"`
	Text      string `json:"text"` // _lembas/job/send
}

// jobRequest answers _lembas/jobs, _lembas/job/output, _lembas/job/stop,
// _lembas/job/send and _lembas/job/transcript.
func (svc *linkService) jobRequest(method string, raw json.RawMessage, lim remoteLimits) (any, error) {
	var p linkJobParams
	ls, rerr := svc.paramsSession(method, raw, lim, &p, &p.SessionID)
	if rerr != nil {
		return nil, rerr
	}
	e := ls.s.e
	if method == "_lembas/jobs" {
		return map[string]any{"sessionId": ls.s.id, "jobs": jobsOf(e)}, nil
	}
	j := e.jobs().get(p.JobID)
	if j == nil {
		return nil, rpcErrorf(rpcInvalidParams, "%s", loopText(theCardsSpec().Errors, "no_job", "id", ls.s.id, "job", cutForError(p.JobID, 64)))
	}
	switch method {
	case "_lembas/job/send":
		return jobSendFromClient(ls.s.id, j, p.Text)
	case "_lembas/job/transcript":
		return jobTranscript(ls.s.id, j)
	}
	if method == "_lembas/job/stop" {
		st, _, _ := j.status()
		if st == "running" && j.stop != nil {
			j.stop()
			return map[string]any{"stopped": true}, nil
		}
		return map[string]any{"stopped": false}, nil
	}
	j.mu.Lock()
	tail := j.out.tail(theCardsSpec().Jobs.OutputTailLines)
	j.mu.Unlock()
	return map[string]any{"job": j.info(), "output": tail}, nil
}

// jobSendFromClient is _lembas/job/send: the person's message to a
// subagent — given to it at its next step while it runs, else it starts
// again with its context, as the job_send tool does for the model.
func jobSendFromClient(sessionID string, j *job, text string) (any, error) {
	if j.sub == nil {
		return nil, rpcErrorf(rpcInvalidParams, "%s", loopText(theCardsSpec().Errors, "not_subagent", "id", sessionID, "job", j.ID))
	}
	if strings.TrimSpace(text) == "" {
		return nil, rpcErrorf(rpcInvalidParams, "%s", loopText(theCardsSpec().Errors, "empty_send", "job", j.ID))
	}
	if st, _, _ := j.status(); st != "running" && j.restart(text) {
		return map[string]any{"restarted": true, "queued": false}, nil
	}
	j.sub.e.steer(text)
	return map[string]any{"restarted": false, "queued": true}, nil
}

// jobTranscript is _lembas/job/transcript: a subagent's own session (its
// transcript, kept by the store as a child session) shaped as history.
func jobTranscript(sessionID string, j *job) (any, error) {
	if j.sub == nil {
		return nil, rpcErrorf(rpcInvalidParams, "%s", loopText(theCardsSpec().Errors, "not_subagent", "id", sessionID, "job", j.ID))
	}
	sess, err := newStore(stateDir(), nil).read(j.sub.e.sess.ID)
	if err != nil {
		return nil, rpcErrorf(rpcInternalError, "reading job %s's transcript: %v", j.ID, err)
	}
	h := historyOf(sess, nil)
	h["jobId"] = j.ID
	return h, nil
}

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
}

// jobRequest answers _lembas/jobs, _lembas/job/output and _lembas/job/stop.
func (svc *linkService) jobRequest(method string, raw json.RawMessage, lim remoteLimits) (any, error) {
	var p linkJobParams
	if err := decodeParams(method, raw, &p); err != nil {
		return nil, err
	}
	ls, rerr := svc.session(p.SessionID, lim)
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

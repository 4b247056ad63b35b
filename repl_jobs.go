package main

// The REPL's side of background work: /jobs and /agents, a line when a job
// ends, and the turn lembas runs when a job ends while the person is not
// typing (the machine's turn, drawn like any other with its mark as the
// prompt). The wake is a channel the session loop selects on; nothing
// polls.

import (
	"strings"
	"time"
)

// hookJobs connects the session's jobs to the REPL: the line when one
// ends, and the wake when the session is idle.
func (r *repl) hookJobs() {
	r.wakeCh = make(chan struct{}, 1)
	m := r.e.jobs()
	m.mu.Lock()
	m.onEnd = func(j *job) { r.say("notice", endedLine(j)) }
	m.mu.Unlock()
	r.e.jx.mu.Lock()
	r.e.jx.wake = func() {
		select {
		case r.wakeCh <- struct{}{}:
		default: // one wake is waiting already
		}
	}
	r.e.jx.mu.Unlock()
}

// machineTurn runs the turn a job's end asks for, if marks still wait.
func (r *repl) machineTurn() {
	prompt, ok := r.e.takeMachinePrompt()
	if !ok {
		return
	}
	r.runTurn(prompt)
}

// jobsCommand is /jobs: the session's jobs, oldest first.
func (r *repl) jobsCommand() {
	rows := jobRows(r.e.jobs())
	if len(rows) == 0 {
		r.say("status", jobText("repl_none"))
		return
	}
	r.say("status", strings.Join(rows, "\n"))
}

// agentsCommand is /agents: the session's subagents, or one's transcript
// (/agents j2).
func (r *repl) agentsCommand(args string) {
	m := r.e.jobs()
	if t := r.e.teamOf(); t != nil { // the team's tree (team.go): one line each, a member by its id
		if id := strings.TrimSpace(args); id != "" {
			if view, ok := t.memberView(id); ok {
				r.mu.Lock()
				r.writeLinesLocked(strings.TrimRight(view, "\n") + "\n")
				r.mu.Unlock()
				return
			}
		} else if rows := t.treeRows(time.Now()); len(rows) > 0 {
			r.say("status", strings.Join(rows, "\n"))
			return
		}
	}
	if id := strings.TrimSpace(args); id != "" {
		j := m.get(id)
		if j == nil || j.sub == nil {
			r.say("error", r.text("error", "text", theSpec().Tools["job"].text("unknown", "id", id)))
			return
		}
		var b strings.Builder
		showSession(&b, j.sub.e.sess)
		r.say("status", subText("repl_show", "id", j.ID, "session", j.sub.e.sess.ID))
		r.mu.Lock()
		r.writeLinesLocked(strings.TrimRight(b.String(), "\n") + "\n")
		r.mu.Unlock()
		return
	}
	rows := subagentRows(m)
	if len(rows) == 0 {
		r.say("status", subText("repl_none"))
		return
	}
	r.say("status", strings.Join(rows, "\n"))
}

// answerCard gives a line typed between turns to a card that waits for
// one — a background subagent's approval asks while no turn runs — so it
// is answered, not taken as a prompt (and never left to time out).
func (r *repl) answerCard(line string) bool {
	r.mu.Lock()
	w := r.waiter
	r.waiter = nil
	if w == nil && r.heldLocked(line) {
		r.mu.Unlock()
		return true
	}
	r.mu.Unlock()
	if w == nil {
		return false
	}
	w <- line
	return true
}

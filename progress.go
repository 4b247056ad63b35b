package main

// Progress phases (harness README 3.4.0): one fixed set of phases every
// front end shows the same way — an event {phase, since, data} with an
// English text from loop.json progress, drawn as "text · elapsed". The
// engine does not call these by hand at every point: progressFor reads the
// events it already sends (a step starts: waiting for the model; reasoning
// streams: thinking; text: writing; a tool starts: running it; a retry;
// the end) and only the waits the events cannot see are set where they
// happen (an approval card, subagents, a compaction). A phase is sent once
// when it changes, never on a timer.
//
// Emitted today: waiting_for_model, loading_model (a retry whose error says
// the model is loading), thinking, writing, running_tool,
// waiting_for_person, waiting_for_subagents, compacting, retrying,
// stopped, failed. queued and reading_prompt have their texts but no
// source yet: lembas runs one turn per session at a time, and an
// OpenAI-style stream says nothing of how far the prompt has been read.

import (
	"strings"
	"time"
)

// progressState is an engine's current phase (guarded by jobsState.mu).
type progressState struct {
	cur     string
	data    map[string]any
	key     string
	retries int
}

// phaseText is a phase's English text, filled from its data.
func phaseText(name string, data map[string]any) string {
	t, ok := theSpec().Loop.Progress.Phases[name]
	if !ok {
		panic("harness: loop.json progress has no phase " + name)
	}
	var kv []any
	for k, v := range data {
		kv = append(kv, k, v)
	}
	return fillPairs(t, kv...)
}

// progressLine is what a front end draws: text · elapsed, elapsed in
// whole seconds (1m5s past a minute).
func progressLine(p *phase, now time.Time) string {
	d := now.Sub(p.Since)
	if d < 0 {
		d = 0
	}
	return fillPairs(theSpec().Loop.Progress.Line, "text", p.Text, "elapsed", d.Truncate(time.Second).String())
}

// progressFor turns an event the engine sent into the phase it means.
func (e *engine) progressFor(ev event) {
	switch ev.Type {
	case evStep:
		e.jx.mu.Lock()
		e.jx.progress.retries = 0
		e.jx.mu.Unlock()
		e.setPhase("waiting_for_model", nil)
	case evReasoning:
		e.setPhase("thinking", nil)
	case evText:
		e.setPhase("writing", nil)
	case evToolStart:
		// A call that never ran (refused, bad arguments) is announced
		// after the fact without its risk (engine.storeResult): no phase.
		switch {
		case ev.Tool != nil && ev.Tool.Name == "ask_user":
			// A question to the person runs nothing: it waits for them.
			e.setPhase("waiting_for_person", map[string]any{"tool": ev.Tool.Name})
		case ev.Tool != nil && ev.Tool.Risk != "":
			e.setPhase("running_tool", map[string]any{"tool": ev.Tool.Name})
		}
	case evRetry:
		e.jx.mu.Lock()
		e.jx.progress.retries++
		n := e.jx.progress.retries
		e.jx.mu.Unlock()
		low := strings.ToLower(ev.Text)
		for _, m := range theSpec().Loop.Progress.LoadingMatch {
			if strings.Contains(low, m) {
				e.setPhase("loading_model", nil)
				return
			}
		}
		e.setPhase("retrying", map[string]any{"attempt": n + 1})
	case evDone:
		switch ev.StopReason {
		case "error":
			e.setPhase("failed", nil)
		case "cancelled", "max_turn_requests":
			e.setPhase("stopped", nil)
		}
		e.jx.mu.Lock()
		e.jx.progress = progressState{}
		e.jx.mu.Unlock()
	}
}

// setPhase sends a progress event when the phase (or its data) changed.
func (e *engine) setPhase(name string, data map[string]any) {
	if e.emit == nil {
		return
	}
	if data == nil { // the common case, once per streamed piece: no allocation
		e.jx.mu.Lock()
		same := e.jx.progress.key == name
		e.jx.mu.Unlock()
		if same {
			return
		}
	}
	var b strings.Builder
	b.WriteString(name)
	for _, k := range []string{"tool", "attempt", "count", "name"} {
		if v, ok := data[k]; ok {
			b.WriteString("|" + k + "=")
			b.WriteString(strings.TrimSpace(fillPairs("{{v}}", "v", v)))
		}
	}
	key := b.String()
	e.jx.mu.Lock()
	if e.jx.progress.key == key {
		e.jx.mu.Unlock()
		return
	}
	e.jx.progress.cur, e.jx.progress.data, e.jx.progress.key = name, data, key
	e.jx.mu.Unlock()
	now := time.Now()
	ev := event{Type: evProgress, Progress: &phase{Phase: name, Since: now, Data: data, Text: phaseText(name, data)}, Time: now}
	if e.sess != nil {
		ev.Session = e.sess.ID
		ev.Turn = len(e.sess.Turns)
	}
	if e.jx.sub != nil {
		ev.Agent = e.jx.sub.id
	}
	e.emit(ev)
}

// waitingForPerson sets the phase while an approval card waits, holds the
// tree's card lock, and gives the function that lets it go and puts the
// previous phase back.
func (e *engine) waitingForPerson(tool string) func() {
	if nobodyAsked(e.ask) {
		return func() {} // -p: the answer is at once, and nobody waits
	}
	// One card at a time in a tree: a background subagent may ask while
	// its parent does, and a front end shows one card.
	root := e.rootEngine()
	root.jx.askMu.Lock()
	e.jx.mu.Lock()
	prev, data := e.jx.progress.cur, e.jx.progress.data
	e.jx.mu.Unlock()
	e.setPhase("waiting_for_person", map[string]any{"tool": tool})
	return func() {
		root.jx.askMu.Unlock()
		if prev != "" && prev != "waiting_for_person" {
			e.setPhase(prev, data)
		}
	}
}

// nobodyAsked says whether an approver answers without a person (-p), a
// subagent's included.
func nobodyAsked(a approver) bool {
	switch x := a.(type) {
	case headlessApprover:
		return true
	case subApprover:
		return x.inner == nil || nobodyAsked(x.inner)
	}
	return false
}

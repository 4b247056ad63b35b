package main

// Compaction (context.md §5): when the history nears the model's context
// window, or on /compact, the model is asked for a summary as the next turn
// of the same conversation — same system prompt, same tools, same
// messages, so the server's prompt cache is reused — and the history sent
// becomes the system prompt, the summary with a table of the reads it
// covers, and what comes after. The original messages stay in the store,
// marked compacted; the dedupe table is emptied.

import (
	"context"
	"strings"
)

// compactAt is the token count at which a model with this context window
// is compacted: the share loop.json's table gives for the largest window
// size not above it.
func compactAt(window int) int {
	cs := theSpec().Loop.Context.Compaction
	at := 0.0
	best := -1
	for _, row := range cs.Table {
		if row.Context <= window && row.Context > best {
			best, at = row.Context, row.At
		}
	}
	return int(at * float64(window))
}

// needCompact says whether the last request came near the window: its
// tokens as the server counted them, else its size in bytes over
// chars_per_token. A compaction's own request never calls for another.
func (e *engine) needCompact() bool {
	if len(e.sess.Requests) == 0 || e.ref.Meta.Context <= 0 {
		return false
	}
	last := e.sess.Requests[len(e.sess.Requests)-1]
	if last.Kind == "compact" {
		return false
	}
	tokens := last.Usage.Input + last.Usage.Output
	if tokens == 0 {
		tokens = last.Bytes / max(1, theSpec().Loop.Context.Compaction.CharsPerToken)
	}
	return tokens >= compactAt(e.ref.Meta.Context)
}

// autoCompact compacts when needCompact says so; a compaction that fails
// is told to the person and the turn goes on uncompacted.
func (e *engine) autoCompact(ctx context.Context, midTurn bool) {
	if !e.needCompact() || e.teamMember() { // a team member runs out of context instead (team.go)
		return
	}
	last := e.sess.Requests[len(e.sess.Requests)-1]
	e.setPhase("compacting", nil)
	if err := e.compactNow(ctx, midTurn); err != nil {
		e.send(event{Type: evNotice, Text: err.Error()})
		return
	}
	e.send(event{Type: evNotice, Text: fillPairs(theSpec().Loop.Context.Compaction.Notice,
		"tokens", last.Usage.Input+last.Usage.Output, "context", e.ref.Meta.Context)})
}

// compact is /compact: the history so far becomes a summary now.
func (e *engine) compact(ctx context.Context) error {
	return e.compactNow(ctx, false)
}

// compactNow asks for the summary and rebuilds the history around it.
// midTurn adds the line that tells the model to carry on with the task.
func (e *engine) compactNow(ctx context.Context, midTurn bool) error {
	cs := theSpec().Loop.Context.Compaction
	visible := 0
	for _, m := range e.sess.Messages {
		if !m.Compacted {
			visible++
		}
	}
	if visible == 0 {
		return nil
	}
	if err := e.appendMsg(message{Role: "user", Content: cs.Ask, Kind: "compact"}); err != nil {
		return err
	}
	ask := len(e.sess.Messages) - 1
	rep, err := e.request(ctx, "compact", nil, nil)
	if err == nil && strings.TrimSpace(rep.Text) == "" {
		err = errorNew(cs.Empty)
	}
	if err != nil {
		// The ask was only ever sent in this request: take it back out.
		e.sess.Messages[ask].Compacted = true
		e.st.save(e.sess)
		return err
	}
	// Tool calls in the summary's answer are not run: it is kept as text.
	if err := e.appendMsg(message{Role: "assistant", Content: rep.Text, Reasoning: rep.Reasoning, Kind: "compact"}); err != nil {
		return err
	}
	for i := range e.sess.Messages {
		e.sess.Messages[i].Compacted = true
	}
	summary := fillPairs(cs.Summary, "summary", strings.TrimSpace(rep.Text))
	if t := e.sess.Dedupe.readsTable(); t != "" {
		summary += "\n\n" + t
	}
	if midTurn {
		summary += "\n\n" + cs.Continue
	}
	e.sess.Dedupe = &dedupeTable{}
	return e.appendMsg(message{Role: "user", Content: summary, Kind: "summary"})
}

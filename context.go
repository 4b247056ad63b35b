package main

// What a request carries: the system prompt made once per session (no
// clock in it, so the prefix stays still and a server's prompt cache
// works), the stored history in wire form, and tool results with their ids,
// capped head and tail as loop.json says.
//
// The session floor (4): it calls the workers (tools, model), the store and
// the ground.

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// systemPrompt fills prompts/system/default.md for a session. It is made
// once, stored with the session, and re-sent byte for byte: the mode and
// the plan are in it only as they were now, and no clock and no absolute
// path of the machine is (context.md §1, §4).
func systemPrompt(root, mode, shell string, p *plan) (string, error) {
	sp := theSpec()
	vars := map[string]string{
		"project":      filepath.Base(root),
		"os":           runtime.GOOS + "/" + runtime.GOARCH,
		"shell":        filepath.Base(shell),
		"instructions": projectInstructions(root),
		"plan_context": planContext(p),
		"mode_text":    strings.TrimSpace(sp.Prompts["modes/"+mode+".md"]),
		"skills":       skillsPrompt(root),
		"memory":       memoryPrompt(root),
		"library":      libraryBlock(),
		"context":      strings.TrimSpace(sp.Prompts["blocks/context.md"]),
	}
	s, err := fill(sp.Prompts["system/default.md"], vars)
	if err != nil {
		return "", errorf("prompts/system/default.md: %v", err)
	}
	return withPersonalization(strings.TrimSpace(s), localPersonalization()), nil // config_personality.go
}

// projectInstructions is the instruction files for the system prompt,
// stacked from the boundary down to the project (library.go) — none from a
// folder the person said not to trust. A folder never asked about is used:
// a script or an editor runs where its person chose to run it; the REPL
// asks before the prompt is made.
func projectInstructions(root string) string {
	return stackedInstructions(root)
}

// capOutput keeps the head and tail of an output over loop.json's line or
// character cap, with a line saying how much was left out and the id under
// which the whole output is kept.
func capOutput(text, id string) (string, bool) {
	c := theSpec().Loop.Context
	lines := strings.Split(text, "\n")
	if len(lines) > c.OutputCap.Lines {
		head := lines[:c.OutputCap.HeadLines]
		tail := lines[len(lines)-c.OutputCap.TailLines:]
		n := len(lines) - len(head) - len(tail)
		text = strings.Join(head, "\n") + "\n" + fillPairs(c.Elided, "n", n, "id", id) + "\n" + strings.Join(tail, "\n")
		if len(text) <= c.OutputCap.Chars {
			return text, true
		}
	}
	if len(text) > c.OutputCap.Chars {
		half := c.OutputCap.Chars / 2
		head := cutUTF8(text, half)
		tailStart := len(text) - half
		for tailStart < len(text) && (text[tailStart]&0xC0) == 0x80 {
			tailStart++
		}
		n := tailStart - len(head)
		return head + "\n" + fillPairs(c.ElidedChars, "n", n, "id", id) + "\n" + text[tailStart:], true
	}
	return text, len(lines) > c.OutputCap.Lines
}

// wireMessages renders the history for a request. Compacted messages are
// not sent. Reasoning goes back only for assistant messages after the last
// message that started a turn (a prompt, or a compaction's summary) —
// unless the connection has the reasoning_passback quirk, where every
// assistant message that made tool calls keeps its reasoning for good.
func wireMessages(system string, msgs []message, keepToolReasoning bool) []wireMessage {
	out := make([]wireMessage, 0, len(msgs)+1)
	out = append(out, wireMessage{Role: "system", Content: system})
	turnStart := -1
	for i, m := range msgs {
		if !m.Undone && !m.Compacted && (m.Kind == "prompt" || m.Kind == "summary") {
			turnStart = i
		}
	}
	for i, m := range msgs {
		if m.Undone || m.Compacted {
			continue // taken back by /undo, or covered by a compaction
		}
		w := wireMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		switch m.Role {
		case "assistant":
			w.ToolCalls = m.ToolCalls
			if i > turnStart || (keepToolReasoning && len(m.ToolCalls) > 0) {
				w.ReasoningContent = m.Reasoning
			}
		case "user":
			if len(m.Images) > 0 {
				parts := []map[string]any{{"type": "text", "text": m.Content}}
				for _, im := range m.Images {
					parts = append(parts, map[string]any{"type": "image_url",
						"image_url": map[string]string{"url": "data:" + im.Mime + ";base64," + im.Data}})
				}
				w.Content = parts
			}
		}
		out = append(out, w)
	}
	return out
}

// promptFits refuses a prompt that alone is larger than the model's
// window — a pasted log, a whole file attached — before it is sent, where
// the server would refuse it after the upload (or cut it without a word).
// The size is estimated at loop.json's chars_per_token.
func (e *engine) promptFits(prompt string) error {
	window := e.ref.Meta.Context
	if window <= 0 {
		return nil
	}
	tokens := len(prompt) / max(1, theSpec().Loop.Context.Compaction.CharsPerToken)
	if tokens <= window {
		return nil
	}
	return &modelError{Kind: "context_length", Msg: fillPairs(theSpec().Loop.ModelErrors["prompt_too_big"],
		"model", e.ref.String(), "tokens", tokens, "limit", window)}
}

// maxOut is the answer limit of a request: the loop's budget, lowered to
// what the model can write.
func (e *engine) maxOut() int {
	maxOut := theSpec().Loop.Budgets["cli"].MaxOutputTokens
	if o := e.ref.Meta.Output; o > 0 && o < maxOut {
		maxOut = o
	}
	return maxOut
}

// request sends the history as it stands and records the request's usage
// in the session. A request quirk learned from the server's refusal
// (quirks.json requests) is remembered and the request built again with it
// and retried, once: the loop never special-cases a server.
func (e *engine) request(ctx context.Context, kind string, onText, onReasoning func(string)) (reply, error) {
	build := func() *chatRequest {
		return &chatRequest{Messages: wireMessages(e.sess.System, e.sess.Messages, e.quirkOn("reasoning_passback")),
			Tools: e.tb.defs, MaxTokens: e.maxOut(), Extra: e.extra}
	}
	onRetry := func(attempt int, wait time.Duration, err error) {
		e.send(event{Type: evRetry, Text: fillPairs(theSpec().Loop.Retry.Notice, "error", err.Error(), "wait", wait.Round(time.Millisecond),
			"n", attempt+1, "max", theSpec().Loop.Retry.Attempts)})
	}
	req := build()
	rep, err := e.ref.stream(ctx, req, onText, onReasoning, onRetry)
	if id := learnedQuirk(err); id != "" && !e.quirkOn(id) {
		e.learnQuirk(id)
		e.send(event{Type: evRetry, Text: err.Error() + " — retrying with the " + id + " quirk"})
		req = build()
		rep, err = e.ref.stream(ctx, req, onText, onReasoning, onRetry)
	}
	if err != nil {
		return rep, err
	}
	body, _ := marshalRequest(req)
	e.sess.Requests = append(e.sess.Requests, requestRecord{Turn: len(e.sess.Turns), Kind: kind, Bytes: len(body), Usage: rep.Usage, Time: time.Now()})
	return rep, nil
}

// withNote puts the session note, if anything changed since the model was
// last told, before the words of a message that starts a turn. What the
// note says is stored with the message, so it is sent the same way ever
// after (context.md §1.3).
func (e *engine) withNote(prompt string, now time.Time) string {
	nt := theSpec().Loop.Context.Note
	var parts []string
	if date := now.Format("Monday, 2 January 2006"); date != e.sess.NoteDate {
		parts = append(parts, fillPairs(nt["date"], "date", date))
		e.sess.NoteDate = date
	}
	if e.sess.NoteMode == "" {
		e.sess.NoteMode = e.perm.mode()
	}
	if e.perm.mode() != e.sess.NoteMode {
		parts = append(parts, fillPairs(nt["mode"], "mode", e.perm.mode(),
			"mode_text", strings.TrimSpace(theSpec().Prompts["modes/"+e.perm.mode()+".md"])))
		e.sess.NoteMode = e.perm.mode()
	}
	parts = append(parts, e.libraryNotes()...)
	parts = append(parts, e.sess.Notes...)
	e.sess.Notes = nil
	if len(parts) == 0 {
		return prompt
	}
	return fillPairs(nt["wrap"], "text", strings.Join(parts, "\n")) + "\n\n" + prompt
}

// setMode changes the session's permission mode (the REPL's /mode, an
// approved plan). The system prompt keeps the mode it was made with; the
// model hears of the change in the next session note.
func (e *engine) setMode(mode string) {
	e.perm.setMode(mode)
	e.sess.Mode = mode
}

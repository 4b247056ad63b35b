package main

// What a request carries: the system prompt made once per session (no
// clock in it, so the prefix stays still and a server's prompt cache
// works), the stored history in wire form, and tool results with their ids,
// capped head and tail as loop.json says.

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// systemPrompt fills prompts/system/default.md for a session. It is made
// once, stored with the session, and re-sent byte for byte.
func systemPrompt(root, mode, shell string) (string, error) {
	sp := theSpec()
	vars := map[string]string{
		"project":      filepath.Base(root),
		"os":           runtime.GOOS + "/" + runtime.GOARCH,
		"shell":        filepath.Base(shell),
		"instructions": "",
		"plan_context": "",
		"mode_text":    strings.TrimSpace(sp.Prompts["modes/"+mode+".md"]),
	}
	s, err := fill(sp.Prompts["system/default.md"], vars)
	if err != nil {
		return "", fmt.Errorf("prompts/system/default.md: %v", err)
	}
	return strings.TrimSpace(s), nil
}

// resultID is a result's id: its number in the session, in hex, at least
// loop.json's digits wide.
func resultID(n int) string {
	return fmt.Sprintf("%0*x", theSpec().Loop.Context.ResultIDDigits, n)
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

// wireMessages renders the history for a request. Reasoning goes back only
// for assistant messages after the message that started the current turn.
func wireMessages(system string, msgs []message) []wireMessage {
	out := make([]wireMessage, 0, len(msgs)+1)
	out = append(out, wireMessage{Role: "system", Content: system})
	turnStart := 0
	for i, m := range msgs {
		if m.Kind == "prompt" && !m.Undone {
			turnStart = i
		}
	}
	for i, m := range msgs {
		if m.Undone {
			continue // taken back by /undo
		}
		w := wireMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		switch m.Role {
		case "assistant":
			w.ToolCalls = m.ToolCalls
			if i > turnStart {
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

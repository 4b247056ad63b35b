package main

// store_show.go: a stored session as a person reads it (lembas sessions
// show, a subagent's transcript).

import (
	"fmt"
	"io"
	"strings"
)

// showSession prints a conversation for a person: prompts, tool calls in
// one line each, and each final answer verbatim.
func showSession(w io.Writer, s *session) {
	fmt.Fprintf(w, "session %s\nproject %s\nmodel %s\n", s.ID, s.Project, s.Model)
	for _, m := range s.Messages {
		switch m.Role {
		case "user":
			if m.Kind == "prompt" {
				fmt.Fprintf(w, "\n> %s\n", strings.ReplaceAll(m.Content, "\n", "\n> "))
			}
		case "assistant":
			for _, c := range m.ToolCalls {
				fmt.Fprintf(w, "  · %s %s\n", c.Function.Name, oneLine(c.Function.Arguments, 120))
			}
			if m.Content != "" && len(m.ToolCalls) > 0 {
				fmt.Fprintf(w, "  %s\n", oneLine(m.Content, 200))
			}
		case "tool":
			if m.Status != "" && m.Status != "completed" {
				fmt.Fprintf(w, "    (%s)\n", m.Status)
			}
		}
	}
	for _, t := range s.Turns {
		fmt.Fprintf(w, "\n--- turn %d: %s", t.N, t.Status)
		if t.StopReason != "" {
			fmt.Fprintf(w, " (%s)", t.StopReason)
		}
		fmt.Fprintln(w)
		if t.Answer != "" {
			fmt.Fprintln(w, t.Answer)
		}
		if t.Error != "" {
			fmt.Fprintln(w, "error: "+t.Error)
		}
	}
}

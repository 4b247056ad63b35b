package main

// store_show.go: a stored session as a person reads it (lembas sessions
// show, a subagent's transcript, the REPL's resume recap).

import (
	"fmt"
	"io"
	"strings"
)

// attachedBlock is a file or folder attached to a prompt
// (harness/commands.json attach texts): <file path="p" ...>…</file>.
var attachedBlock = lazyRE(`(?s)<(file|directory) path="([^"]*)"(?: lines="([^"]*)")?>\n.*?\n</(?:file|directory)>`)

// promptForPerson is a stored prompt as the person wrote it: without the
// <session-note> lembas put in front of it, and each attached file or
// folder in one line instead of its whole content.
func promptForPerson(s string) string {
	s = stripNote(s)
	tx := theStoreSpec().Texts
	return attachedBlock.ReplaceAllStringFunc(s, func(b string) string {
		m := attachedBlock.FindStringSubmatch(b)
		if m[1] == "directory" {
			return loopText(tx, "attached_dir", "path", m[2])
		}
		lines := ""
		if m[3] != "" {
			lines = loopText(tx, "attached_lines", "range", m[3])
		}
		return loopText(tx, "attached", "path", m[2], "lines", lines)
	})
}

// stripNote takes the <session-note> blocks (harness/loop.json
// context.note.wrap) off a prompt.
func stripNote(s string) string {
	open, closeTag, ok := strings.Cut(theSpec().Loop.Context.Note["wrap"], "{{text}}")
	open, closeTag = strings.TrimSpace(open), strings.TrimSpace(closeTag)
	if !ok || open == "" || closeTag == "" {
		return s
	}
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], closeTag)
		if j < 0 {
			return s
		}
		s = strings.TrimSpace(s[:i] + s[i+j+len(closeTag):])
	}
}

// showSession prints a conversation for a person, turn by turn: the
// prompt, its tool calls in one line each, then how the turn ended and
// its final answer verbatim.
func showSession(w io.Writer, s *session) {
	fmt.Fprintf(w, "session %s\nproject %s\nmodel %s\n", s.ID, s.Project, s.Model)
	byTurn := map[int][]message{}
	for _, m := range s.Messages {
		byTurn[m.Turn] = append(byTurn[m.Turn], m)
	}
	for _, t := range s.Turns {
		prompted := false
		for _, m := range byTurn[t.N] {
			switch m.Role {
			case "user":
				if m.Kind == "prompt" {
					prompted = true
					fmt.Fprintf(w, "\n> %s\n", strings.ReplaceAll(promptForPerson(m.Content), "\n", "\n> "))
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
		if !prompted && t.Prompt != "" {
			fmt.Fprintf(w, "\n> %s\n", strings.ReplaceAll(promptForPerson(t.Prompt), "\n", "\n> "))
		}
		fmt.Fprintf(w, "--- turn %d: %s", t.N, t.Status)
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

package main

// ask_user (context.md §7): the model asks the person up to four questions
// of up to six options each, the recommended option first. Front ends
// answer through the asker interface, as they answer approvals through the
// approver; the REPL asks inline. With -p there is no asker: nobody can be
// asked, and the tool says so.

import (
	"context"
	"encoding/json"
	"strings"
)

func init() { sessionTools["ask_user"] = engineTool(toolAskUser) }

// checkQuestions holds a call to the tool's limits.
func checkQuestions(t *toolSpec, qs []question) string {
	if len(qs) == 0 {
		return t.text("no_questions")
	}
	if max := t.limit("max_questions"); len(qs) > max {
		return t.text("too_many_questions", "max", max, "count", len(qs))
	}
	for i, q := range qs {
		if max := t.limit("max_options"); len(q.Options) > max {
			return t.text("too_many_options", "n", i+1, "count", len(q.Options), "max", max)
		}
	}
	return ""
}

// renderAnswers writes the person's answers as the tool's result.
func renderAnswers(t *toolSpec, qs []question, a askAnswer) string {
	if a.Dismissed {
		return t.text("dismissed")
	}
	var lines []string
	for i, q := range qs {
		qa := questionAnswer{Kind: "skipped"}
		if i < len(a.Answers) {
			qa = a.Answers[i]
		}
		switch qa.Kind {
		case "options":
			lines = append(lines, t.text("answer_options", "n", i+1, "question", q.Question, "labels", strings.Join(qa.Labels, ", ")))
		case "custom":
			lines = append(lines, t.text("answer_custom", "n", i+1, "question", q.Question, "text", qa.Text))
		case "back":
			lines = append(lines, t.text("answer_back", "n", i+1, "question", q.Question, "text", qa.Text))
		default:
			lines = append(lines, t.text("answer_skipped", "n", i+1, "question", q.Question))
		}
	}
	return strings.Join(lines, "\n")
}

func toolAskUser(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Questions []question `json:"questions"`
	}
	json.Unmarshal(raw, &a)
	if msg := checkQuestions(t, a.Questions); msg != "" {
		return errResult(msg)
	}
	if nobodyToAsk(e.asker) {
		return errResult(nobodyText(e.asker, t))
	}
	return toolResult{Text: renderAnswers(t, a.Questions, e.asker.askUser(ctx, a.Questions))}
}

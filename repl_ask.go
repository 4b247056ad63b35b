package main

// The REPL's answers to the model's questions (ask_user) and to a plan
// submitted for approval (plan_submit), asked inline like the approval
// card: the question, its numbered options, and one line of answer.

import (
	"context"
	"strconv"
	"strings"
)

// askUserHere answers ask_user inline (askUser, in repl_share.go, races
// it with the web UI's card when shared). For each question: numbers (comma
// separated) pick options, a line starting with "?" asks a question back,
// other text is a custom answer, an empty line skips it. Cancelling the
// turn or the end of input dismisses the whole call.
func (r *repl) askUserHere(ctx context.Context, qs []question) askAnswer {
	var ans askAnswer
	for i, q := range qs {
		var b strings.Builder
		b.WriteString(r.text("ask_head", "n", i+1, "total", len(qs), "question", q.Question))
		for j, o := range q.Options {
			b.WriteString("\n" + r.text("ask_option", "n", j+1, "label", o.Label, "description", o.Description))
			if j == 0 {
				b.WriteString(r.text("ask_recommended"))
			}
		}
		line, ok := r.readTextAfter(ctx, "card", b.String(), r.text("ask_prompt"), "")
		if !ok {
			if !takenDown(ctx) {
				r.say("notice", r.text("ask_dismissed"))
			}
			return askAnswer{Dismissed: true}
		}
		cardDecided(ctx) // the first line typed is the terminal's answer (repl_share.go)
		ans.Answers = append(ans.Answers, parseAskLine(line, q))
	}
	return ans
}

// parseAskLine reads one typed answer to a question.
func parseAskLine(line string, q question) questionAnswer {
	line = strings.TrimSpace(line)
	switch {
	case line == "":
		return questionAnswer{Kind: "skipped"}
	case strings.HasPrefix(line, "?"):
		return questionAnswer{Kind: "back", Text: strings.TrimSpace(line[1:])}
	}
	var labels []string
	for _, f := range strings.FieldsFunc(line, func(c rune) bool { return c == ',' || c == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > len(q.Options) {
			return questionAnswer{Kind: "custom", Text: line}
		}
		labels = append(labels, q.Options[n-1].Label)
	}
	if len(labels) > 1 && !q.Multiple {
		labels = labels[:1]
	}
	return questionAnswer{Kind: "options", Labels: labels}
}

// reviewPlanHere shows a submitted plan and takes one key (reviewPlan, in
// repl_share.go, races it with the web UI's card when shared): a approve and go on
// in edit mode, m approve in manual mode, r revise (then a line of
// feedback), d dismiss.
func (r *repl) reviewPlanHere(ctx context.Context, rv planReview) planAnswer {
	keys := map[rune]string{'a': "edit", 'm': "manual", 'r': "revise", 'd': "dismissed"}
	in := r.listen()
	defer r.unlisten(in)
	r.say("plan", strings.TrimRight(rv.Markdown, "\n"))
	choice := ""
	for choice == "" {
		k, ok := r.readKey(ctx, in, r.text("plan_review_prompt"))
		if !ok {
			return planAnswer{Choice: "dismissed"}
		}
		choice = keys[k]
	}
	cardDecided(ctx) // the terminal answered first (repl_share.go)
	r.unlisten(in)
	switch choice {
	case "revise":
		fb, _ := r.readText(ctx, r.text("plan_review_feedback"), "")
		return planAnswer{Choice: "revise", Feedback: strings.TrimSpace(fb)}
	case "dismissed":
		return planAnswer{Choice: "dismissed"}
	}
	r.say("notice", r.text("plan_review_approved", "mode", choice))
	return planAnswer{Choice: "approve", Mode: choice}
}

// compactNow is /compact: the history so far becomes a summary.
func (r *repl) compactNow() {
	r.say("status", r.text("compacting"))
	// Compaction is a model request that may take minutes: Ctrl-C cancels
	// it as it cancels a turn, instead of quitting and then waiting for it.
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	r.mu.Lock()
	r.running, r.cancel = true, cancel
	r.mu.Unlock()
	err := r.e.compact(ctx)
	r.mu.Lock()
	r.running, r.cancel = false, nil
	r.updatePromptLocked()
	r.mu.Unlock()
	if ctx.Err() != nil && r.ctx.Err() == nil {
		r.say("notice", r.text("compact_cancelled"))
		return
	}
	if err != nil {
		r.say("error", r.text("error", "text", err.Error()))
		return
	}
	r.say("status", r.text("compacted"))
}

// effort is /effort [LEVEL]: shows the model's levels, or sets one for the
// rest of the session.
func (r *repl) effort(level string) {
	levels := modelLevels(r.e.ref.Meta)
	if level == "" {
		cur := r.level
		if cur == "" {
			cur = levels[len(levels)-1]
		}
		r.say("status", r.text("effort_now", "level", cur, "levels", strings.Join(levels, ", ")))
		return
	}
	extra, err := levelFields(r.e.ref.String(), r.e.ref.Meta, level)
	if err != nil {
		r.say("error", r.text("error", "text", err.Error()))
		return
	}
	r.e.extra = extra
	r.level = level
	r.say("status", r.text("effort_now", "level", level, "levels", strings.Join(levels, ", ")))
}

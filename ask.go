package main

// ask.go: the seam through which a turn asks the person, on the workers'
// floor. The engine, the tools and MCP (elicitation) ask through the
// interfaces here — asker for ask_user's questions, approver
// (permission_approve.go) for approvals, planReviewer (plan.go) for plans —
// and never name a front end: the REPL, ACP and the link each implement
// them, and a headless run (-p) implements none, so nobody is asked and the
// tool says so.
//
//	engine / tools / MCP ──► asker · approver · planReviewer ──► REPL | ACP | link
//	                              nil (headless) ──► "nobody to ask"

import (
	"context"
)

// question is one question of an ask_user call.
type question struct {
	Question string `json:"question"`
	Options  []struct {
		Label       string `json:"label"`
		Description string `json:"description,omitempty"`
	} `json:"options,omitempty"`
	Multiple bool `json:"multiple,omitempty"`
}

// questionAnswer is the answer to one question.
type questionAnswer struct {
	Kind   string   `json:"kind"`             // options, custom, back, skipped
	Labels []string `json:"labels,omitempty"` // options: the labels picked
	Text   string   `json:"text,omitempty"`   // custom: the person's words; back: their question
}

// askAnswer answers a whole call: one answer per question, or dismissed.
type askAnswer struct {
	Dismissed bool             `json:"dismissed,omitempty"`
	Answers   []questionAnswer `json:"answers,omitempty"`
}

// asker is answered by the REPL, ACP, the link — never by a headless run.
type asker interface {
	askUser(ctx context.Context, qs []question) askAnswer
}

// callIDKey carries the model's call id to an engine-run tool, so a card
// is keyed by the call it answers (acp.md: cards are keyed by toolCallId).
type callIDKey struct{}

func withCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

func callIDOf(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// cardsGate is a front end that can lose its person for a while: the link,
// whose client may be a plain ACP one, or one that answered a card with
// method-not-found.
type cardsGate interface{ cardsOff() bool }

// nobodyToAsk says whether ask_user or plan_submit has nobody to answer:
// no front end (-p), or a link whose client takes no cards now.
func nobodyToAsk(a any) bool {
	if a == nil {
		return true
	}
	g, ok := a.(cardsGate)
	return ok && g.cardsOff()
}

// nobodySays is a front end that says in its own words why nobody answers
// (the link's scheduled runs: nobody is there at all).
type nobodySays interface{ nobody(tool string) string }

// nobodyText is what ask_user or plan_submit answers when nobody can: the
// front end's own words, else the tool's nobody text.
func nobodyText(a any, t *toolSpec) string {
	if n, ok := a.(nobodySays); ok {
		if s := n.nobody(t.Name); s != "" {
			return s
		}
	}
	return t.text("nobody")
}

// displayMet is the show tool's requirement: a viewer is attached now.
func (tb *toolbox) displayMet() bool { return tb.display != nil && tb.display() }

// unavailableText is what a call answers while its tool's requirement is
// not met: the tool's unavailable text word for word, then what the front
// end says of how it comes to be met, if anything.
func (tb *toolbox) unavailableText(t *toolSpec) string {
	if n := tb.unmetNote[t.Name]; n != "" {
		return t.Unavailable + " " + n
	}
	return t.Unavailable
}

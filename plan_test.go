package main

// The plan and ask_user tools inside the engine, against the fake model:
// the todo former name, plan_submit's requirement and its answers, the
// person's plan change as a note, and ask_user's answers and limits.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type fakeReviewer struct {
	ans planAnswer
	got []planReview
}

func (r *fakeReviewer) reviewPlan(ctx context.Context, rv planReview) planAnswer {
	r.got = append(r.got, rv)
	return r.ans
}

type fakeAsker struct {
	ans askAnswer
	got [][]question
}

func (a *fakeAsker) askUser(ctx context.Context, qs []question) askAnswer {
	a.got = append(a.got, qs)
	return a.ans
}

func TestPlanTools(t *testing.T) {
	f := newFakeModel(t)
	e := testEngine(t, f, ctxProject(t), "manual")
	var plans []*plan
	e.emit = func(ev event) {
		if ev.Type == evPlan {
			plans = append(plans, ev.Plan)
		}
	}
	todo := map[string]any{"todos": []any{map[string]any{"content": "look", "status": "completed"}, map[string]any{"content": "fix", "status": "in_progress"}}}
	f.push(
		callsReply(fakeCall{"todo", todo}),
		callsReply(fakeCall{"plan_update", map[string]any{"tasks": []any{map[string]any{"id": "t2", "status": "done"}}}}),
		callsReply(fakeCall{"plan_submit", map[string]any{}}),
		textReply("ok"),
	)
	if out := e.runTurn(context.Background(), "plan it"); out.Err != nil {
		t.Fatal(out.Err)
	}
	res := toolResults(f.got()[3])
	if !strings.Contains(res[0], "## Work (p1)\n- [x] t1 look\n- [~] t2 fix") {
		t.Errorf("todo result: %q", res[0])
	}
	if !strings.Contains(res[1], "- [x] t2 fix") {
		t.Errorf("plan_update result: %q", res[1])
	}
	if want := theSpec().Tools["plan_submit"].Unavailable; !strings.HasSuffix(res[2], "\n"+want) {
		t.Errorf("plan_submit outside plan mode: %q", res[2])
	}
	if len(plans) != 2 || e.sess.Plan.task("t2").Status != "done" {
		t.Errorf("plan events %d, plan %+v", len(plans), e.sess.Plan)
	}
	if got := renderPlanCompact(e.sess.Plan); got != "Plan: (untitled) · 2/2 done\n[x] t1 look\n[x] t2 fix" {
		t.Errorf("compact form %q", got)
	}
	// In plan mode: nobody (-p), then revise, then approve.
	e.setMode("plan")
	rv := &fakeReviewer{}
	f.push(callsReply(fakeCall{"plan_submit", map[string]any{"note": "small"}}), textReply("ok"))
	e.runTurn(context.Background(), "submit")
	if r := toolResults(f.got()[5])[3]; !strings.Contains(r, "Nobody can approve a plan in this run") {
		t.Errorf("headless plan_submit: %q", r)
	}
	e.planner = rv
	rv.ans = planAnswer{Choice: "revise", Feedback: "split t2"}
	f.push(callsReply(fakeCall{"plan_submit", map[string]any{}}), textReply("ok"))
	e.runTurn(context.Background(), "submit")
	if r := toolResults(f.got()[7])[4]; !strings.Contains(r, "The person wants the plan changed: split t2") {
		t.Errorf("revise: %q", r)
	}
	rv.ans = planAnswer{Choice: "approve", Mode: "edit"}
	f.push(callsReply(fakeCall{"plan_submit", map[string]any{}}), textReply("ok"))
	e.runTurn(context.Background(), "submit")
	if r := toolResults(f.got()[9])[5]; !strings.Contains(r, "now in edit mode") || e.perm.mode() != "edit" || e.sess.Mode != "edit" {
		t.Errorf("approve: %q, mode %s", r, e.perm.mode())
	}
	if len(rv.got) != 2 || !strings.Contains(rv.got[0].Markdown, "t2 fix") {
		t.Errorf("the reviewer saw %+v", rv.got)
	}
	// Approval told the model the mode: no mode note on the next turn.
	f.push(textReply("ok"))
	e.runTurn(context.Background(), "go")
	last := f.got()[10].messages()
	if c := last[len(last)-1]["content"].(string); strings.Contains(c, "permission mode") {
		t.Errorf("a mode note after the approval already said it: %q", c)
	}
	// The plan as the system prompt holds it only when made.
	if s, _ := systemPrompt("/x/p", "manual", "sh", e.sess.Plan); !strings.Contains(s, "t1 look") || strings.Contains(e.sess.System, "t1 look") {
		t.Error("{{plan_context}}")
	}
}

func TestAskUser(t *testing.T) {
	f := newFakeModel(t)
	e := testEngine(t, f, ctxProject(t), "manual")
	q := func(n, opts int) []any {
		var qs []any
		for i := 0; i < n; i++ {
			var os []any
			for j := 0; j < opts; j++ {
				os = append(os, map[string]any{"label": string(rune('A' + j))})
			}
			qs = append(qs, map[string]any{"question": "Q" + string(rune('1'+i)) + "?", "options": os})
		}
		return qs
	}
	f.push(callsReply(fakeCall{"ask_user", map[string]any{"questions": q(1, 2)}}), textReply("ok"))
	e.runTurn(context.Background(), "ask")
	if r := toolResults(f.got()[1])[0]; !strings.Contains(r, "Nobody can be asked in this run") {
		t.Errorf("headless ask_user: %q", r)
	}
	a := &fakeAsker{ans: askAnswer{Answers: []questionAnswer{{Kind: "options", Labels: []string{"A"}}, {Kind: "custom", Text: "my way"}, {Kind: "back", Text: "why?"}}}}
	e.asker = a
	f.push(callsReply(fakeCall{"ask_user", map[string]any{"questions": q(4, 6)}}),
		callsReply(fakeCall{"ask_user", map[string]any{"questions": q(5, 2)}}),
		callsReply(fakeCall{"ask_user", map[string]any{"questions": q(1, 7)}}),
		textReply("ok"))
	e.runTurn(context.Background(), "ask")
	res := toolResults(f.got()[5])
	want := "1. Q1? → A\n2. Q2? → (in their own words) my way\n3. Q3? → the person asks back: why?\n4. Q4? → skipped"
	if !strings.HasSuffix(res[1], want) {
		t.Errorf("answers: %q", res[1])
	}
	if !strings.Contains(res[2], "Ask at most 4 questions in one call; this one has 5.") || !strings.Contains(res[3], "Question 1 has 7 options; offer at most 6.") {
		t.Errorf("limits: %q %q", res[2], res[3])
	}
	if len(a.got) != 1 || len(a.got[0]) != 4 || len(a.got[0][3].Options) != 6 {
		t.Errorf("the asker saw %+v", a.got)
	}
	a.ans = askAnswer{Dismissed: true}
	f.push(callsReply(fakeCall{"ask_user", map[string]any{"questions": q(1, 1)}}), textReply("ok"))
	e.runTurn(context.Background(), "ask")
	if r := toolResults(f.got()[7])[4]; !strings.Contains(r, "dismissed the questions") {
		t.Errorf("dismissed: %q", r)
	}
}

// FuzzConvertTodo: whatever a model sends under the former name, the
// conversion answers JSON, and todos[] always become one phase.
func FuzzConvertTodo(f *testing.F) {
	f.Add(`{"todos":[{"content":"a","status":"pending"}]}`)
	f.Add(`{"todos":[]}`)
	f.Add(`{"phases":[]}`)
	f.Add(`"{}"`)
	f.Add(`{"todos":[{"content":1}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		out := convertTodo(json.RawMessage(in))
		if string(out) == in {
			return
		}
		var v struct {
			Phases []struct {
				Title string `json:"title"`
			} `json:"phases"`
		}
		if err := json.Unmarshal(out, &v); err != nil || len(v.Phases) != 1 || v.Phases[0].Title != "Work" {
			t.Fatalf("convertTodo(%q) = %s", in, out)
		}
	})
}

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestOfferConditionsKnown: every offered_if in the harness names a
// condition this build decides; an unknown one would hide its tool.
func TestOfferConditionsKnown(t *testing.T) {
	sp := theSpec()
	for _, name := range sp.ToolNames {
		for _, c := range sp.Tools[name].OfferedIf {
			if offerConditions[c] == nil {
				t.Errorf("tools/%s.json: offered_if %q is not a known condition", name, c)
			}
		}
		for prop, conds := range sp.Tools[name].PropertiesIf {
			for _, c := range conds {
				if offerConditions[c] == nil {
					t.Errorf("tools/%s.json: properties_if %s: %q is not a known condition", name, prop, c)
				}
			}
		}
	}
	for _, c := range offerNamed(sp) {
		if offerConditions[c] == nil {
			t.Errorf("%q is not a known condition", c)
		}
	}
}

// TestOfferRules: a headless run in an empty library is offered neither
// the library's search tools nor ask_user and plan_submit, which a person
// or the library would make usable; the tools left out stay callable.
func TestOfferRules(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := t.TempDir()
	st := newStore(filepath.Join(t.TempDir(), "sessions"), nil)
	defer st.close()
	names := func(held map[string]bool) string {
		tb, err := newToolboxFor(root, false, held)
		if err != nil {
			t.Fatal(err)
		}
		if tb.lookup("knowledge_search") == nil || tb.lookup("ask_user") == nil {
			t.Fatal("a tool left out of the list is no longer callable")
		}
		var defs []struct{ Function struct{ Name string } }
		json.Unmarshal(tb.defs, &defs)
		var out []string
		for _, d := range defs {
			out = append(out, d.Function.Name)
		}
		return " " + strings.Join(out, " ") + " "
	}
	sess := &session{ID: "s1", Project: root}
	headless := names(sessionOffer(sess, root, "auto", true, st, false, nil))
	for _, not := range []string{"ask_user", "plan_submit", "knowledge_search", "knowledge_get", "notes_search", "note_view", "skills_list", "skill_view", "skill_manage", "session_search"} {
		if strings.Contains(headless, " "+not+" ") {
			t.Errorf("%s offered to a headless run in an empty library:%s", not, headless)
		}
	}
	if sess.Offer == nil || len(sess.Offer.Held) != 0 {
		t.Errorf("the session keeps %+v, want an empty decision", sess.Offer)
	}
	repl := names(sessionOffer(&session{ID: "s2", Project: root}, root, "auto", false, st, false, nil))
	for _, want := range []string{"ask_user", "plan_submit", "bash", "read", "note_manage"} {
		if !strings.Contains(repl, " "+want+" ") {
			t.Errorf("%s not offered to an interactive session:%s", want, repl)
		}
	}
	// A decision kept with the session holds on resume, whatever the library now has.
	kept := &session{ID: "s3", Project: root, Offer: &offerDecision{Held: []string{"knowledge"}}}
	if got := names(sessionOffer(kept, root, "plan", true, st, false, nil)); !strings.Contains(got, " knowledge_search ") || !strings.Contains(got, " plan_submit ") {
		t.Errorf("a kept decision or plan mode not honoured:%s", got)
	}
	// A session file whose offer has no held list (written by hand, or
	// torn) is an undecided one: every tool, not a panic.
	bare := &session{ID: "s4", Project: root, Offer: &offerDecision{}}
	if got := names(sessionOffer(bare, root, "auto", false, st, false, nil)); !strings.Contains(got, " session_search ") {
		t.Errorf("an offer without held must offer every tool:%s", got)
	}
	if all := names(nil); !strings.Contains(all, " session_search ") {
		t.Errorf("newToolbox without a decision must offer every tool:%s", all)
	}
}

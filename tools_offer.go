package main

// Which tools a session is offered. A tool's offered_if (harness/tools/*.json)
// names conditions that must all hold when the session begins; the answer
// is kept with the session, so the tool list — part of the fixed prefix —
// stays the same for the whole session, across -c too. A tool left out
// stays callable by name; it only costs no bytes in every request.

import (
	"os"
	"sort"
	"strings"
)

// offerConditions are the conditions offered_if may name. Each looks at
// as little as it can: the first document, note, skill or session found
// answers.
var offerConditions = map[string]func(o *offerContext) bool{
	// Someone can answer ask_user: every session but a headless run.
	"person": func(o *offerContext) bool { return !o.headless },
	// Plan mode can be on in this session: it is, or a person can turn it on.
	"plan_mode": func(o *offerContext) bool { return o.mode == "plan" || !o.headless },
	// The session can be shown where a file opens (show, requires display):
	// an instance is logged in to, so a terminal's session can be shared
	// with its web UI (/share) — never -p, a bare terminal for good. Kept
	// with the session, so show is in its tool list from the first request
	// and stays there, answering unavailable until the session is shared.
	"viewer": func(o *offerContext) bool { return !o.headless && len(readLogins()) > 0 },
	// What the session learns can be kept: a person is there to say what
	// is worth keeping (and to see it kept), or memory already holds a
	// record, which the model is shown and may keep up to date. A headless
	// run against an empty memory is a scripted task: it starts none.
	"memory_kept": func(o *offerContext) bool {
		if !o.headless {
			return true
		}
		m := memoryFor(o.root)
		for _, target := range []string{"user", "project"} {
			recs, err := m.load(target)
			if err != nil || len(recs) > 0 {
				return true // a broken memory file: offer, so the tool can say so
			}
		}
		return false
	},
	// Notes can be kept: a person is there, or a note this project can see
	// exists (the same rule as memory's).
	"notes_kept": func(o *offerContext) bool {
		return !o.headless || notesVisible(o)
	},
	// The library has knowledge sources (lembas library add).
	"knowledge": func(o *offerContext) bool {
		s, err := loadSources()
		return err != nil || len(s) > 0 // a broken sources file: offer, so the tool can say so
	},
	// A note this project can see exists.
	"notes": notesVisible,
	// The session's model edits by patch (models/schema.json patch, or
	// config.yaml's), known from its name when the session begins: kept,
	// so a later -c or /model does not change the tool list.
	"model_patches": func(o *offerContext) bool { return o.patches },
	// A skill this project can use exists.
	"skills": func(o *offerContext) bool {
		return len(discoverSkills(o.root, folderTrusted(o.root, o.root))) > 0
	},
	// webfetch can reach a host: someone is there to be asked about one,
	// or the network is on or a host is allowed (web.go webReaches). In a
	// headless run with neither, every fetch is refused.
	"web": func(o *offerContext) bool { return !o.headless || o.web == nil || o.web() },
	// The project has a session before this one.
	"earlier_session": func(o *offerContext) bool {
		return o.st != nil && o.st.projectHasOther(o.root, o.self) // one folder read (store_projects.go)
	},
}

// notesVisible says whether a note this project can see exists, read once
// a decision: notes and notes_kept both ask.
func notesVisible(o *offerContext) bool {
	if o.notes == nil {
		v := readNotesVisible(o.root)
		o.notes = &v
	}
	return *o.notes
}

func readNotesVisible(root string) bool {
	ents, err := os.ReadDir(notesDir())
	if err != nil {
		return false
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		n, err := readNote(id)
		if err != nil || noteVisible(n, root) {
			return true // a corrupt note: offer, so notes_search can say so
		}
	}
	return false
}

// offerContext is what the conditions look at.
type offerContext struct {
	root     string
	mode     string
	headless bool
	st       *store
	self     string      // the session being begun, not an earlier one
	patches  bool        // the model's name says it edits by patch (namePatches)
	notes    *bool       // notesVisible's answer, once asked
	web      func() bool // webReaches of the session's sandbox and rules; nil: not known, holds
}

// decideOffer answers every condition the harness's tools name, once;
// with only, just those it names (the rest are not asked, nor held).
func decideOffer(o *offerContext, only map[string]bool) []string {
	seen := map[string]bool{}
	var held []string
	sp := theSpec()
	for _, c := range offerNamed(sp) {
		if seen[c] {
			continue
		}
		seen[c] = true
		if only != nil && !only[c] {
			continue
		}
		if f := offerConditions[c]; f != nil && f(o) {
			held = append(held, c)
		}
	}
	if held == nil {
		held = []string{} // decided, none held (nil: not decided yet)
	}
	return held
}

// offerNamed is every condition the harness names, in order: the tools'
// offered_if and their properties_if (sorted).
func offerNamed(sp *spec) []string {
	var out []string
	for _, name := range sp.ToolNames {
		t := sp.Tools[name]
		out = append(out, t.OfferedIf...)
		props := make([]string, 0, len(t.PropertiesIf))
		for p := range t.PropertiesIf {
			props = append(props, p)
		}
		sort.Strings(props)
		for _, p := range props {
			out = append(out, t.PropertiesIf[p]...)
		}
	}
	return out
}

// offerSet is a decision as a set; nil stays nil (every condition holds).
func offerSet(held []string) map[string]bool {
	if held == nil {
		return nil
	}
	m := map[string]bool{}
	for _, c := range held {
		m[c] = true
	}
	return m
}

// offerHolds says whether a tool is offered under held; a condition this
// build does not know never holds (TestOfferConditionsKnown keeps the
// harness to the known ones).
func offerHolds(t *toolSpec, held map[string]bool) bool {
	if held == nil {
		return true
	}
	for _, c := range t.OfferedIf {
		if !held[c] || offerConditions[c] == nil {
			return false
		}
	}
	return true
}

// offerHeld says whether every condition of conds holds under the
// session's offer (nil: every one does), as offerHolds for a tool.
func (tb *toolbox) offerHeld(conds []string) bool {
	if tb.offer == nil {
		return true
	}
	for _, c := range conds {
		if !tb.offer[c] || offerConditions[c] == nil {
			return false
		}
	}
	return true
}

// propertiesNotOffered are t's properties whose properties_if does not hold
// in this session, in order: they are left out of the schema sent (a call
// may still give one, and is judged as ever).
func (tb *toolbox) propertiesNotOffered(t *toolSpec) []string {
	var out []string
	for name, conds := range t.PropertiesIf {
		if !tb.offerHeld(conds) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// trimLibraryBlock leaves out of a system prompt the library block's lines
// that name tools only of those not offered, and the whole block when no
// line is left: the model is not told of tools it does not have.
func trimLibraryBlock(system string, tb *toolbox) string {
	block := libraryBlock()
	if block == "" || !strings.Contains(system, block) {
		return system
	}
	lines := strings.Split(block, "\n")
	kept := lines[:1] // the heading
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "- ") || tb.namesOffered(l) {
			kept = append(kept, l)
		}
	}
	out := ""
	if len(kept) > 1 {
		out = strings.Join(kept, "\n")
	}
	system = strings.Replace(system, block, out, 1)
	for strings.Contains(system, "\n\n\n") {
		system = strings.ReplaceAll(system, "\n\n\n", "\n\n")
	}
	return strings.TrimSpace(system)
}

// namesOffered says whether a line names no harness tool (a name with an
// underscore, as the library's are), or at least one that is offered.
func (tb *toolbox) namesOffered(line string) bool {
	named := false
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z') }) {
		if !strings.Contains(w, "_") || tb.spec.Tools[w] == nil {
			continue // words like read or memory are the text's, not tool names
		}
		named = true
		for _, t := range tb.tools {
			if t.Name == w {
				return true
			}
		}
	}
	return !named
}

// offerPerRun are conditions about the run rather than the session (who
// is there to answer): decided again each time a session is opened.
var offerPerRun = map[string]bool{"person": true, "plan_mode": true, "memory_kept": true, "notes_kept": true, "web": true}

// sessionOffer is the conditions that hold for this session: the ones it
// was begun with, kept in it, and this run's own.
//
// A session that has its kept ones (resumed) asks only this run's: the
// others (a glob and a peek of every session, the notes folder, …) would
// be asked for nothing.
func sessionOffer(sess *session, root, mode string, headless bool, st *store, patches bool, web func() bool) map[string]bool {
	var only map[string]bool
	if sess.Offer != nil {
		only = offerPerRun
	}
	now := decideOffer(&offerContext{root: root, mode: mode, headless: headless, st: st, self: sess.ID, patches: patches, web: web}, only)
	if sess.Offer == nil {
		kept := []string{}
		for _, c := range now {
			if !offerPerRun[c] {
				kept = append(kept, c)
			}
		}
		sess.Offer = &offerDecision{Held: kept}
	}
	held := offerSet(sess.Offer.Held)
	if held == nil {
		return nil // a kept offer without its list (a hand-edited file): every tool, as undecided
	}
	for _, c := range now {
		if offerPerRun[c] {
			held[c] = true
		}
	}
	return held
}

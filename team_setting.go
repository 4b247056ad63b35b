package main

// The Subagents setting (Min, Max; loop.json subagents.setting;
// subagents.md §4): how many agents a session's team may hold, the
// session's own agent counted. It is config.yaml's subagents.min and
// subagents.max (the defaults are the setting's), /settings subagents MIN
// MAX in the REPL, and an agent chat's agents {min, max} over the link.
//
// The team tools are offered (offered_if team) when Max is above 1 at the
// session's start — the list then stays the same for the session — and a
// call works (requires team) while Max is above 1 and a model could serve
// a subagent: the session's own, with the capacity, or another usable one
// off its one-model server. When the session's model cannot serve one
// itself, context.note.team_own tells the model and subagents.setting.own
// the person.

import (
	"fmt"
	"strconv"
	"strings"
)

func init() {
	offerConditions["team"] = func(o *offerContext) bool {
		_, mx := subagentSettingNow()
		return mx > 1
	}
	requirementChecks["team"] = func(h *toolHost) bool {
		e, ok := h.owner.(*engine)
		if !ok {
			return false
		}
		t := e.team()
		t.mu.Lock()
		mx := t.max
		t.mu.Unlock()
		return mx > 1 && teamCanServe(e.rootEngine())
	}
}

// subagentSettingNow is the setting as config.yaml has it, else the
// defaults; out of range, the defaults.
func subagentSettingNow() (int, int) {
	st := theSpec().Loop.Subagents.Setting
	mn, mx := st.Min, st.Max
	cfg, err := loadConfig()
	if err != nil || cfg == nil {
		return mn, mx
	}
	top, _ := cfg.Raw.(map[string]any)
	sub, _ := top["subagents"].(map[string]any)
	if sub == nil {
		return mn, mx
	}
	a, okA := settingNumber(sub["min"])
	b, okB := settingNumber(sub["max"])
	if okA {
		mn = a
	}
	if okB {
		mx = b
	}
	if err := checkSubagentSetting(mn, mx); err != nil {
		return st.Min, st.Max
	}
	return mn, mx
}

func settingNumber(v any) (int, bool) {
	if v == nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(v)))
	return n, err == nil
}

// checkSubagentSetting says what is wrong with a Min and Max.
func checkSubagentSetting(mn, mx int) error {
	st := theSpec().Loop.Subagents.Setting
	if mn < 1 || mx < mn || mx > st.Cap {
		return errorf("%s", fillPairs(st.Bad, "cap", st.Cap))
	}
	return nil
}

// parseSubagentSetting reads "MIN MAX" (/settings subagents 1 4).
func parseSubagentSetting(args string) (int, int, error) {
	st := theSpec().Loop.Subagents.Setting
	f := strings.Fields(args)
	if len(f) != 2 {
		return 0, 0, errorf("%s", fillPairs(st.Bad, "cap", st.Cap))
	}
	mn, err1 := strconv.Atoi(f[0])
	mx, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0, errorf("%s", fillPairs(st.Bad, "cap", st.Cap))
	}
	return mn, mx, checkSubagentSetting(mn, mx)
}

// saveSubagentSetting writes the setting to config.yaml and gives it to
// the running session's team.
func saveSubagentSetting(e *engine, mn, mx int) (string, error) {
	if err := checkSubagentSetting(mn, mx); err != nil {
		return "", err
	}
	path := configPath()
	if err := configSet(path, "subagents.min", strconv.Itoa(mn)); err != nil {
		return "", err
	}
	if err := configSet(path, "subagents.max", strconv.Itoa(mx)); err != nil {
		return "", err
	}
	if e != nil {
		e.setTeamRange(mn, mx)
	}
	return fillPairs(theSpec().Loop.Subagents.Setting.Saved, "min", mn, "max", mx, "path", path), nil
}

// setTeamRange is the setting for this session from now (the link's
// agents on every turn, /settings).
func (e *engine) setTeamRange(mn, mx int) {
	if checkSubagentSetting(mn, mx) != nil {
		return
	}
	t := e.team()
	t.mu.Lock()
	changed := t.min != mn || t.max != mx
	t.min, t.max = mn, mx
	t.touchLocked()
	t.mu.Unlock()
	if changed {
		t.emitTree()
	}
}

// subagentSettingLine is what /settings says of the setting.
func subagentSettingLine(e *engine) string {
	st := theSpec().Loop.Subagents.Setting
	t := e.team()
	t.mu.Lock()
	mn, mx := t.min, t.max
	t.mu.Unlock()
	offer := st.Offered
	switch {
	case mx <= 1:
		offer = fillPairs(st.NotOffered, "why", st.WhyMax)
	case !teamCanServe(e.rootEngine()):
		offer = fillPairs(st.NotOffered, "why", st.WhyModel)
	}
	line := fillPairs(st.Now, "min", mn, "max", mx, "cap", st.Cap, "offer", offer)
	if mx > 1 && !teamOwnCanServe(e.rootEngine()) {
		line += "\n" + st.Own
	}
	return line
}

// teamOwnCanServe says whether the session's own model can serve a
// subagent beside the session: no limit known, or parallel ≥ 2.
func teamOwnCanServe(root *engine) bool {
	p := root.ref.Meta.Parallel
	return p == 0 || p >= 2
}

// teamCanServe says whether any model could serve a subagent: the
// session's with the capacity, or another usable one off its one-model
// server (a configured connection other than the session's, or another
// model on a connection that holds more than one).
func teamCanServe(root *engine) bool {
	if teamOwnCanServe(root) {
		return true
	}
	cfg, err := loadConfig()
	if err != nil || cfg == nil {
		return false
	}
	for _, c := range cfg.Connections {
		if c.Name != root.ref.Conn.Name && len(c.Models) > 0 {
			return true
		}
		if c.Name == root.ref.Conn.Name && !oneModelServer(root.ref.Conn) && len(c.Models) > 1 {
			return true
		}
	}
	return false
}

// teamOffered says whether this session was offered the team tools.
func teamOffered(tb *toolbox) bool {
	for _, t := range tb.tools {
		if t.Name == "team_add" {
			return true
		}
	}
	return false
}

// teamSessionStart is the team's part of opening a session: a new one
// that was offered the team tools gets blocks/team_lead.md in its system
// prompt and, on its first message, the size note (Min above 1 opens
// min − 1 slots from the start of the reply) and, when its model cannot
// serve a subagent itself, context.note.team_own; the person is told
// subagents.setting.own.
func teamSessionStart(e *engine, agents []int, warn func(string)) {
	if len(agents) == 2 {
		e.setTeamRange(agents[0], agents[1]) // the link's chat setting, not the device's config
	}
	if !teamOffered(e.tb) {
		return
	}
	t := e.team()
	t.mu.Lock()
	mn, mx := t.min, t.max
	t.mu.Unlock()
	nt := theSpec().Loop.Context.Note
	if len(e.sess.Messages) == 0 {
		if block, err := fill(theSpec().Prompts["blocks/team_lead.md"], map[string]string{"min": fmt.Sprint(mn), "max": fmt.Sprint(mx)}); err == nil &&
			!strings.Contains(e.sess.System, strings.SplitN(block, "\n", 2)[0]) {
			e.sess.System = strings.TrimSpace(e.sess.System + "\n\n" + strings.TrimSpace(block))
		}
		if mn > 1 {
			e.sess.Notes = append(e.sess.Notes, fillPairs(nt["team_size"], "min", mn, "max", mx, "slots", mn-1))
		}
		if !teamOwnCanServe(e) {
			e.sess.Notes = append(e.sess.Notes, nt["team_own"])
		}
	}
	if mx > 1 && !teamOwnCanServe(e) && warn != nil {
		warn(theSpec().Loop.Subagents.Setting.Own)
	}
}

// teamOfferFor decides the team condition of a new session with the
// link's agents {min, max}, when the chat gave one; kept with the rest.
func teamOfferFor(sess *session, held map[string]bool, agents []int) {
	if len(agents) != 2 || len(sess.Messages) > 0 || held == nil || sess.Offer == nil {
		return
	}
	on := checkSubagentSetting(agents[0], agents[1]) == nil && agents[1] > 1
	held["team"] = on
	kept := []string{}
	for _, c := range sess.Offer.Held {
		if c != "team" {
			kept = append(kept, c)
		}
	}
	if on {
		kept = append(kept, "team")
	}
	sess.Offer.Held = kept
}

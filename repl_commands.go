package main

// The REPL's own commands (/help, /model, /mode, /sessions, …) and what
// it keeps per person in the state folder: the line history, the REPL
// settings (theme, reasoning shown) and which project folders are trusted.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// start greets, asks about trust for a new folder, and shows the last
// turns of a resumed session.
func (r *repl) start() {
	if r.ed != nil {
		r.ed.show()
	}
	go r.readLines()
	root := r.e.perm.root
	trusted, known := trustOf(root)
	if !known {
		var ok bool
		if trusted, ok = r.askTrust(root); !ok {
			r.quit() // Ctrl-C or the end of input: nothing remembered
			return
		}
	}
	r.trusted = trusted
	if !known && len(r.e.sess.Messages) == 0 {
		// The prompt was made before the answer; a new session's is made
		// again, so an untrusted folder's instruction file is not in it.
		if sys, err := systemPrompt(root, r.e.perm.mode(), r.e.tb.shell, r.e.sess.Plan); err == nil {
			r.e.sess.System = sys
			r.keep(r.e.sess)
		}
	}
	r.say("status", r.text("banner", "version", version, "model", r.e.ref.String(), "mode", r.e.perm.mode(), "project", filepath.Base(root)))
	if r.f.cont || r.f.sessionID != "" {
		r.showResume()
	}
}

// askTrust asks whether a new folder is trusted and remembers the answer.
// On a terminal only y or n answers (any other key asks again; Ctrl-C
// quits, remembering nothing). On plain input nothing is asked — what is
// piped in is the prompt, never the answer —, and the folder is untrusted
// for this run, which is said once. ok is false when lembas should quit.
func (r *repl) askTrust(root string) (trusted, ok bool) {
	if r.ed == nil {
		untrustForRun(root)
		r.say("notice", r.text("trust_pipe", "project", root))
		return false, true
	}
	in := r.listen()
	defer r.unlisten(in)
	r.mu.Lock()
	r.asking = true
	r.sayLocked("notice", r.text("trust_ask", "project", root))
	r.setPromptNow(r.paint("card_keys", r.text("trust_keys")), false)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.asking = false
		r.updatePromptLocked()
		r.mu.Unlock()
	}()
	told := false // the keys are said again once: a line typed ahead does not print one a key
	for {
		var k rune
		select {
		case k = <-in.keys:
		case <-r.quitCh: // Ctrl-C: quit, and say nothing was kept
			r.say("notice", r.text("trust_quit"))
			return false, false
		}
		switch unicode.ToLower(k) {
		case 'y':
			if err := setTrust(root, true); err != nil {
				r.say("error", r.text("error", "text", err.Error()))
			}
			r.say("notice", r.text("trust_yes"))
			return true, true
		case 'n':
			if err := setTrust(root, false); err != nil {
				r.say("error", r.text("error", "text", err.Error()))
			}
			r.say("notice", r.text("trust_no"))
			return false, true
		case 4: // Ctrl-D
			return false, false
		}
		if !told {
			r.say("notice", r.text("trust_again"))
			told = true
		}
	}
}

// showResume prints the last turns of the session: prompt and answer.
func (r *repl) showResume() {
	s := r.e.sess
	r.say("status", r.text("resume_head", "id", s.ID, "title", s.Title))
	var live []turn
	for _, t := range s.Turns {
		if !t.Undone {
			live = append(live, t)
		}
	}
	n := theReplSpec().Numbers.ResumeTurns
	if len(live) > n {
		r.say("status", r.text("resume_more", "n", len(live)-n))
		live = live[len(live)-n:]
	}
	for _, t := range live {
		r.say("prompt", r.text("resume_turn", "prompt", promptForPerson(t.Prompt))) // attachments in one line each (store_show.go)
		if t.Answer != "" {
			r.mu.Lock()
			r.streamLocked("text", t.Answer)
			r.endLineLocked()
			r.mu.Unlock()
		}
		if t.Status == "cancelled" || t.Status == "interrupted" || t.Status == "failed" {
			r.say("notice", r.text("resume_ended", "status", t.Status))
		}
	}
}

func (r *repl) expandOptions() expandOptions {
	return defaultExpandOptions(r.e.perm.root, r.e.ref.Meta.vision(), r.trusted)
}

// terminalCommand runs one of the REPL's own commands.
func (r *repl) terminalCommand(name, args string) {
	r.mu.Lock()
	busy := r.running
	r.mu.Unlock()
	if busy {
		r.say("notice", r.text("busy"))
		return
	}
	e := r.e
	switch name {
	case "help":
		r.help()
	case "share":
		r.share(args) // link_share.go
	case "quit":
		r.quit()
	case "model":
		if args != "" {
			ref, err := chooseModel(r.ctx, r.cfg, args, os.Getenv)
			if err != nil {
				r.say("error", r.text("error", "text", err.Error()))
				return
			}
			e.ref = ref
			e.sess.Model = ref.String()
			r.keep(e.sess)
		}
		r.say("status", r.text("model_now", "model", e.ref.String()))
	case "effort":
		r.effort(strings.TrimSpace(args))
	case "mode":
		if args != "" {
			m, err := normMode(args)
			if err != nil {
				r.say("error", r.text("error", "text", err.Error()))
				return
			}
			r.setMode(m)
			return
		}
		r.say("status", r.text("mode_now", "mode", e.perm.mode(), "text", r.spec.Modes.Texts[e.perm.mode()]))
	case "title":
		if args != "" {
			e.sess.Title = args
			r.keep(e.sess)
		}
		r.say("status", r.text("title_now", "title", e.sess.Title))
	case "usage":
		var u usage
		for _, t := range e.sess.Turns {
			u.add(t.Usage)
		}
		r.say("status", r.text("usage", "turns", len(e.sess.Turns), "in", u.Input, "out", u.Output, "cached", u.Cached))
		for _, line := range usageLines() { // login_api.go: each instance's /v1/usage
			r.say("status", line)
		}
	case "settings":
		if r.link.settings(args) { // repl_link.go: a personalization field
			return
		}
		if args == "subagents" {
			r.say("status", subagentSettingLine(e))
			return
		}
		if k, v, ok := strings.Cut(args, " "); ok && k == "subagents" { // the Subagents (Min, Max) setting (team_setting.go)
			mn, mx, err := parseSubagentSetting(v)
			if err == nil {
				var msg string
				if msg, err = saveSubagentSetting(e, mn, mx); err == nil {
					r.say("status", msg)
				}
			}
			if err != nil {
				r.say("error", r.text("error", "text", err.Error()))
			}
			r.say("status", subagentSettingLine(e))
			return
		}
		if k, v, ok := strings.Cut(args, " "); ok && k == "reasoning" {
			on, err := parseOnOff("reasoning", v) // config.go: "maybe" is an error, not off
			if err != nil {
				r.say("error", r.text("error", "text", err.Error()))
				return
			}
			r.settings.Reasoning = &on
			if err := saveReplSettings(r.settings); err != nil {
				r.say("error", r.text("error", "text", err.Error()))
			}
		}
		r.say("status", r.text("settings", "path", replSettingsPath(), "theme", r.themeName(), "reasoning", onOff(r.settings.reasoningShown()),
			"mode", e.perm.mode(), "model", e.ref.String()))
	case "theme":
		if args != "" {
			if _, ok := theThemes().Themes[args]; !ok {
				r.say("error", r.text("error", "text", fmt.Sprintf("no theme %q; use one of %s", args, strings.Join(theThemes().Order, ", "))))
				return
			}
			r.settings.Theme = args
			if err := saveReplSettings(r.settings); err != nil {
				r.say("error", r.text("error", "text", err.Error()))
			}
			r.theme = pickTheme(args)
		}
		r.say("status", r.text("theme_now", "theme", r.themeName(), "themes", strings.Join(theThemes().Order, ", ")))
	case "permissions":
		r.permissionsCommand(args)
	case "mcp":
		r.write(mcpListText(e.tb.mcp))
	case "sessions":
		r.sessions(args)
	case "memory":
		r.replMemory(args)
	case "jobs":
		r.jobsCommand()
	case "agents":
		r.agentsCommand(args)
	case "new":
		r.switchSession("")
	case "delete":
		id := args
		if !r.confirmDelete(id) {
			return
		}
		if id == "" || id == e.sess.ID {
			old, empty := e.sess.ID, len(e.sess.Turns) == 0
			r.switchSession("")
			if err := e.st.remove(old); err != nil && !empty { // an empty one is gone already
				r.say("error", r.text("error", "text", err.Error()))
				return
			}
			if err := noteDeleted(old); err != nil { // link_deletes.go
				r.say("error", r.text("error", "text", err.Error()))
			}
			r.say("status", r.text("session_deleted", "id", old))
			return
		}
		if err := e.st.remove(id); err != nil {
			r.say("error", r.text("error", "text", err.Error()))
			return
		}
		r.say("status", r.text("session_deleted", "id", id))
	}
}

// permissionsCommand is /permissions: the listing (this session's answers
// too), /permissions revoke ID, and revoke --all after a y.
func (r *repl) permissionsCommand(args string) {
	p := r.e.perm
	f := strings.Fields(args)
	switch {
	case len(f) == 0 || f[0] == "list" && len(f) == 1:
		r.say("status", strings.Join(allowedLines(p.root, p.allowedList(true)), "\n"))
	case f[0] == "revoke" && len(f) == 2 && f[1] == "--all":
		if !r.confirmKey(permText("allowed_revoke_ask", "project", p.root)) {
			r.say("status", r.text("permissions_kept"))
			return
		}
		n, err := p.revokeAllAllowed()
		if err != nil {
			r.say("error", r.text("error", "text", err.Error()))
			return
		}
		r.say("status", permText("allowed_revoked_all", "n", n, "project", p.root))
	case f[0] == "revoke" && len(f) == 2:
		e, err := p.revokeAllowed(f[1], true)
		if err != nil {
			r.say("error", r.text("error", "text", err.Error()))
			return
		}
		r.say("status", permText("allowed_revoked", "id", e.ID, "what", e.Rule))
	default:
		r.say("error", r.text("permissions_usage"))
	}
}

// confirmKey asks a question one key answers: y is yes, any other no.
func (r *repl) confirmKey(ask string) bool {
	var k rune
	ok := true
	if r.ed == nil {
		// Plain lines, no turn running: the next line comes to the main
		// loop, which waits here.
		io.WriteString(r.out, ask)
		var line string
		if line, ok = <-r.lines; !ok {
			r.quit()
		}
		k, _ = utf8.DecodeRuneInString(strings.TrimSpace(line))
	} else {
		in := r.listen()
		shown := ask
		if w := r.cols(); stringWidth(ask) > w {
			shown = wrapWords(ask, w-1) + " " // broken at spaces, not where the row ends
		}
		r.write(shown)
		k, ok = r.readKey(r.ctx, in, ask)
		r.unlisten(in)
		r.write("\n")
	}
	return ok && (k == 'y' || k == 'Y')
}

// confirmDelete asks before /delete removes a session for good (id ""
// is the current one); one key, y deletes.
func (r *repl) confirmDelete(id string) bool {
	e := r.e
	turns := len(e.sess.Turns)
	if id == "" || id == e.sess.ID {
		id = e.sess.ID
	} else if s, err := e.st.read(id); err == nil {
		turns = len(s.Turns)
	} else {
		r.say("error", r.text("error", "text", err.Error()))
		return false
	}
	ask := r.text("delete_confirm", "id", id, "turns", turns,
		"turn_word", plural(turns, r.text("turn_one"), r.text("turn_many")))
	if !r.confirmKey(ask) {
		r.say("status", r.text("delete_kept", "id", id))
		return false
	}
	return true
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (r *repl) themeName() string {
	if _, ok := theThemes().Themes[r.settings.Theme]; ok {
		return r.settings.Theme
	}
	return theThemes().Default
}

// help lists every command: the shared built-ins, the terminal's own, and
// the custom ones.
func (r *repl) help() {
	cs := r.spec.Commands
	var b []string
	b = append(b, r.text("help_head"))
	for _, n := range cs.BuiltinOrder {
		c := cs.Builtin[n]
		hint := ""
		if c.Hint != "" {
			hint = " " + c.Hint
		}
		b = append(b, r.text("help_line", "name", n, "hint", hint, "description", c.Description))
	}
	for _, n := range cs.TerminalOrder {
		b = append(b, r.text("help_line", "name", n, "hint", "", "description", cs.Terminal[n]))
	}
	if cc := customCommands(r.expandOptions()); len(cc) > 0 {
		b = append(b, r.text("help_custom"))
		for _, c := range cc {
			b = append(b, r.text("help_line", "name", c.Name, "hint", "", "description", c.Description))
		}
	}
	if sk := skillCommands(r.e.perm.root); len(sk) > 0 {
		b = append(b, r.text("help_skills"))
		for _, s := range sk {
			b = append(b, r.text("help_line", "name", s.Name, "hint", "", "description", s.Description))
		}
	}
	b = append(b, r.text("help_keys"))
	r.say("status", strings.Join(b, "\n"))
}

// setMode switches the session's mode and tells the model at its next
// step (the system prompt, made once, still names the old one).
func (r *repl) setMode(m string) {
	e := r.e
	e.perm.setMode(m)
	e.sess.Mode = m
	r.keep(e.sess)
	note := r.text("mode_note", "mode", m, "text", strings.TrimSpace(r.spec.Prompts["modes/"+m+".md"]))
	r.mu.Lock()
	r.quiet[note] = true
	r.mu.Unlock()
	e.steer(note)
	e.sess.NoteMode = m // the steer note tells it: no session note again
	r.say("status", r.text("mode_now", "mode", m, "text", r.spec.Modes.Texts[m]))
}

// undo takes back the last turn and says what it restored and what not.
func (r *repl) undo() {
	rep, err := r.e.undoLast()
	if err != nil {
		r.say("error", r.text("error", "text", err.Error()))
	}
	if rep == nil {
		r.say("notice", r.text("undo_nothing"))
		return
	}
	r.say("notice", rep.text(r.text))
}

// projectSessions lists this project's sessions, newest first.
func (r *repl) projectSessions() []*session {
	all, _ := r.e.st.list()
	var out []*session
	for _, s := range all {
		if s.Project == r.e.perm.root {
			out = append(out, s)
		}
	}
	return out
}

// sessions lists this project's sessions; with a number or an id it
// opens one.
func (r *repl) sessions(args string) {
	list := r.projectSessions()
	if args == "" {
		if len(list) == 0 {
			r.say("status", r.text("sessions_none"))
			return
		}
		lines := []string{r.text("sessions_head", "project", filepath.Base(r.e.perm.root))}
		for i, s := range list {
			here := ""
			if s.ID == r.e.sess.ID {
				here = r.text("sessions_here")
			}
			lines = append(lines, r.text("sessions_line", "n", i+1, "id", s.ID, "when", s.Updated.Local().Format("2006-01-02 15:04"),
				"turns", len(s.Turns), "title", s.Title, "here", here))
		}
		r.say("status", strings.Join(lines, "\n"))
		return
	}
	id := args
	if n, err := strconv.Atoi(args); err == nil && n >= 1 && n <= len(list) {
		id = list[n-1].ID
	}
	r.switchSession(id)
}

// switchSession leaves the current session for another (id) or a new one
// (""), keeping the model and the mode.
func (r *repl) switchSession(id string) {
	e := r.e
	var sess *session
	var err error
	if id == "" {
		sess, err = e.st.create(e.perm.root)
		if err == nil {
			sess.System, err = systemPrompt(e.perm.root, e.perm.mode(), e.tb.shell, nil)
			sess.NoteMode = e.perm.mode()
		}
	} else {
		if id == e.sess.ID {
			return
		}
		sess, err = e.st.open(id)
		if err == nil && sess.Project != e.perm.root {
			e.st.unlock(id)
			err = errorf("session %s belongs to %s; open it from there", id, sess.Project)
		}
	}
	if err != nil {
		r.say("error", r.text("error", "text", err.Error()))
		return
	}
	old, oldSess := e.sess.ID, e.sess
	e.resetJobs() // the old session's jobs end with it
	e.sess = sess
	sess.Model, sess.Mode = e.ref.String(), e.perm.mode()
	r.keep(sess)
	if !e.st.dropEmpty(oldSess) { // a session left without a turn is not kept
		e.st.unlock(old)
	}
	if id == "" {
		r.say("status", r.text("session_new", "id", sess.ID))
		return
	}
	r.say("status", r.text("session_opened", "id", sess.ID, "title", sess.Title))
	r.showResume()
}

// replSettings is what the REPL remembers per person (state folder,
// repl.json).
type replSettings struct {
	Theme     string `json:"theme,omitempty"`
	Reasoning *bool  `json:"reasoning,omitempty"` // reasoning shown (default on)
}

func (s replSettings) reasoningShown() bool { return s.Reasoning == nil || *s.Reasoning }

func replSettingsPath() string { return filepath.Join(stateDir(), "repl.json") }

func loadReplSettings() replSettings {
	var s replSettings
	if data, err := os.ReadFile(replSettingsPath()); err == nil {
		json.Unmarshal(data, &s)
	}
	return s
}

// keep saves the session after a command changed it. A failed save is
// said, once per fault; the change stays in memory and the next save
// writes the session whole (a failed append drops the store's shadow).
func (r *repl) keep(sess *session) {
	err := r.e.st.save(sess)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != "" && msg != r.keepErr {
		r.say("error", r.text("error", "text", msg))
	}
	r.keepErr = msg
}

// saveReplSettings keeps the settings for the next REPL; the error says
// they hold for this one only.
func saveReplSettings(s replSettings) error {
	data, _ := json.MarshalIndent(s, "", "  ") // strings and bools: it always encodes
	err := os.MkdirAll(stateDir(), 0o700)
	if err == nil {
		err = writeFileAtomic(replSettingsPath(), append(data, '\n'), 0o600)
	}
	if err != nil {
		return errorf("the setting holds in this REPL, but could not be kept for the next: %v", err)
	}
	return nil
}

// fileHistory is the editor's history, kept per person across runs in the
// state folder: a journal (journal.go) of one JSON string per line, newest
// last, appended a line at a time and rewritten to the newest
// repl.json's history_max when it passes twice that. Two REPLs may share
// the file with no lock, so the reader skips a line it cannot parse (a
// torn one) instead of cutting the file under the other's append.
type fileHistory struct {
	mu      mutex
	path    string
	entries []string // oldest first
	max     int
}

func openHistory() *fileHistory {
	h := &fileHistory{path: filepath.Join(stateDir(), "history"), max: theReplSpec().Numbers.HistoryMax}
	data, err := os.ReadFile(h.path)
	if err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			var s string
			if json.Unmarshal([]byte(l), &s) == nil && s != "" {
				h.entries = append(h.entries, s)
			}
		}
	}
	if len(h.entries) > h.max {
		h.entries = h.entries[len(h.entries)-h.max:]
		h.rewrite()
	}
	return h
}

func (h *fileHistory) rewrite() {
	recs := make([][]byte, 0, len(h.entries))
	for _, e := range h.entries {
		j, _ := json.Marshal(e)
		recs = append(recs, j)
	}
	// The history only helps typing: a failed write costs the up arrow
	// some lines, never a record of work, and the next rewrite tries again.
	os.MkdirAll(filepath.Dir(h.path), 0o700)
	(&journal{path: h.path, perm: 0o600}).rewrite(recs)
}

// Add keeps a line typed, unless it is empty or repeats the last one.
func (h *fileHistory) Add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.TrimSpace(s) == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == s) {
		return
	}
	h.entries = append(h.entries, s)
	if len(h.entries) > h.max*2 {
		h.entries = h.entries[len(h.entries)-h.max:]
		h.rewrite()
		return
	}
	os.MkdirAll(filepath.Dir(h.path), 0o700)
	j, _ := json.Marshal(s)
	// One write and fsync. A torn line another REPL left before it only
	// costs that line: a leading newline keeps this one whole.
	recs := [][]byte{j}
	if endsTorn(h.path) {
		recs = [][]byte{{}, j} // a blank line first: skipped by every reader
	}
	(&journal{path: h.path, perm: 0o600}).append(recs...) // as rewrite: only the up arrow's lines
}

// endsTorn says whether the file's last byte is not a newline: an append
// there would glue onto a torn line.
func endsTorn(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false
	}
	_, err = f.ReadAt(b[:], st.Size()-1)
	return err == nil && b[0] != '\n'
}

func (h *fileHistory) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// At is the idx-th newest entry.
func (h *fileHistory) At(idx int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entries[len(h.entries)-1-idx]
}

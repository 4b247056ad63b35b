package main

// What the REPL draws: the engine's events as they come (text wrapped to
// the width, reasoning dimmed, one line per tool call with its result
// folded), the line after each turn, the approval card, and Tab
// completion. Colours come from harness/themes.json.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// pickTheme finds a theme's roles; an unknown name is the default theme.
func pickTheme(name string) map[string]string {
	ts := theThemes()
	if t, ok := ts.Themes[name]; ok {
		return t
	}
	return ts.Themes[ts.Default]
}

// onEvent draws one engine event. It is called from the engine's
// goroutines, so everything it touches is under r.mu.
func (r *repl) onEvent(ev event) {
	if ev.Agent != "" {
		return // a subagent's own stream (subagents.go): /agents shows its transcript
	}
	r.link.forwardEvent(ev) // a shared session's events reach the web UI (repl_share.go)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Type {
	case evReasoning:
		if !r.settings.reasoningShown() {
			return
		}
		if !r.inReason {
			r.endLineLocked()
			r.inReason = true
		}
		r.streamLocked("reasoning", ev.Text)
	case evText:
		if r.inReason {
			r.endLineLocked()
			r.inReason = false
		}
		r.progress = ""
		r.streamLocked("text", ev.Text)
	case evToolEnd:
		r.inReason = false
		r.sayLocked(r.toolRole(ev.Tool), toolLine(ev.Tool, theReplSpec().Numbers.ToolLineChars))
		if body := r.foldResult(ev.Tool); body != "" {
			r.writeLinesLocked(body)
		}
	case evProgress:
		// The one source of the progress line (progress.go): the phase's
		// text, whatever the turn does — a card waiting is "Waiting for you".
		switch {
		case ev.Progress == nil:
		case ev.Progress.Phase == "writing":
			r.progress = "" // the streamed text is its own progress, as before
		case ev.Progress.Phase == "waiting_for_person" && ev.Progress.Data["tool"] == "ask_user":
			r.setProgressLocked(r.text("progress_answer"))
		default:
			r.setProgressLocked(ev.Progress.Text)
		}
	case evNotice:
		r.sayLocked("notice", ev.Text)
	case evRetry:
		r.sayLocked("notice", r.text("retry", "text", ev.Text))
	case evError:
		r.sayLocked("error", r.text("error", "text", ev.Text))
	case evSteered:
		if r.quiet[ev.Text] {
			return
		}
		r.sayLocked("notice", r.text("steered", "text", ev.Text))
	case evDone:
		r.inReason = false
		if ev.StopReason == "cancelled" {
			r.sayLocked("notice", r.text("cancelled"))
		}
		u := usage{}
		if ev.Usage != nil {
			u = *ev.Usage
		}
		el := time.Since(r.turnStart).Round(100 * time.Millisecond)
		r.sayLocked("status", r.text("turn_line", "model", r.e.ref.String(), "in", u.Input, "out", u.Output, "cached", u.Cached, "elapsed", el)+r.link.usageSuffix())
	}
}

func (r *repl) toolRole(t *toolEvent) string {
	if t.IsError {
		return "tool_error"
	}
	return "tool"
}

func (r *repl) setProgressLocked(p string) {
	if r.progress == p {
		return
	}
	r.progress = p
	r.since = time.Now()
	r.shownWait = false
	r.updatePromptLocked()
}

// streamLocked writes streamed text, wrapped at word boundaries to the
// width. A word is held until it ends so it can move to the next line
// whole; a word longer than the width is broken.
func (r *repl) streamLocked(role, s string) {
	var b strings.Builder
	flush := func() {
		if len(r.word) == 0 {
			return
		}
		w := runesWidth(r.word) // columns: a wide character takes two
		if r.col > 0 && r.col+w > r.width {
			b.WriteString("\n")
			r.col = 0
		}
		for len(r.word) > 0 {
			n, cw := 0, 0
			for n < len(r.word) && (cw+runeWidth(r.word[n]) <= r.width-r.col || n == 0 && r.col == 0) {
				cw += runeWidth(r.word[n])
				n++
			}
			b.WriteString(r.paint(role, string(r.word[:n])))
			r.col += cw
			r.word = r.word[n:]
			if len(r.word) > 0 {
				b.WriteString("\n")
				r.col = 0
			}
		}
	}
	for _, c := range s {
		switch {
		case c == '\n':
			flush()
			b.WriteString("\n")
			r.col = 0
		case c == ' ' || c == '\t':
			flush()
			if r.col >= r.width {
				b.WriteString("\n")
				r.col = 0
			} else if r.col > 0 {
				b.WriteByte(' ')
				r.col++
			}
		case unicode.IsControl(c):
		default:
			r.word = append(r.word, c)
			if runesWidth(r.word) >= r.width {
				flush()
			}
		}
	}
	// A word at the end of a piece is written now when it fits, so text
	// shows as it arrives; one that may grow past the edge waits.
	if len(r.word) > 0 && r.col+runesWidth(r.word) < r.width-8 {
		flush()
	}
	if b.Len() == 0 {
		return
	}
	r.write(b.String())
	r.since = time.Now()
	r.shownWait = false
}

// endLineLocked finishes a line of streamed text, so what follows starts
// at the left.
func (r *repl) endLineLocked() {
	if len(r.word) > 0 {
		w := string(r.word)
		r.word = nil
		if r.col > 0 && r.col+stringWidth(w) > r.width {
			r.write("\n")
			r.col = 0
		}
		role := "text"
		if r.inReason {
			role = "reasoning"
		}
		r.write(r.paint(role, w))
		r.col += stringWidth(w)
	}
	if r.col > 0 {
		r.col = 0
		r.updatePromptLocked()
		r.write("\n")
	}
}

func (r *repl) writeLinesLocked(s string) {
	r.write(s + "\n")
	r.col = 0
	r.updatePromptLocked()
}

// toolLine is one call as one line, by its block kind: "$ make test",
// "edit src/a.go (+3 −1)", "read src/a.go:10-40", "grep TODO src/".
func toolLine(t *toolEvent, max int) string {
	var a map[string]any
	json.Unmarshal([]byte(t.Input), &a)
	str := func(k string) string {
		s, _ := a[k].(string)
		return s
	}
	num := func(k string) int {
		f, _ := a[k].(float64)
		return int(f)
	}
	var line string
	switch {
	case t.Block == "shell":
		line = "$ " + strings.ReplaceAll(str("command"), "\n", " ⏎ ")
	case t.Name == "read":
		line = "read " + str("path")
		if off, lim := num("offset"), num("limit"); off > 0 || lim > 0 {
			if off == 0 {
				off = 1
			}
			if lim > 0 {
				line += fmt.Sprintf(":%d-%d", off, off+lim-1)
			} else {
				line += fmt.Sprintf(":%d-", off)
			}
		}
	case t.Name == "edit":
		line = fmt.Sprintf("edit %s (+%d −%d)", str("path"), countLines(str("new_string")), countLines(str("old_string")))
	case t.Name == "multiedit":
		add, del := 0, 0
		edits, _ := a["edits"].([]any)
		for _, e := range edits {
			m, _ := e.(map[string]any)
			n, _ := m["new_string"].(string)
			o, _ := m["old_string"].(string)
			add += countLines(n)
			del += countLines(o)
		}
		line = fmt.Sprintf("edit %s (+%d −%d)", str("path"), add, del)
	case t.Name == "write":
		n := countLines(str("content"))
		line = fmt.Sprintf("write %s (%d %s)", str("path"), n, plural(n, "line", "lines"))
	case t.Name == "apply_patch":
		in := str("input")
		add, del := 0, 0
		for _, l := range strings.Split(in, "\n") {
			switch {
			case strings.HasPrefix(l, "+"):
				add++
			case strings.HasPrefix(l, "-"):
				del++
			}
		}
		line = fmt.Sprintf("patch %s (+%d −%d)", strings.Join(patchPaths(in), ", "), add, del)
	case t.Name == "ask_user":
		var q struct {
			Questions []struct {
				Question string `json:"question"`
			} `json:"questions"`
		}
		json.Unmarshal([]byte(t.Input), &q)
		line = "asked you"
		if len(q.Questions) > 0 {
			line += ": " + q.Questions[0].Question
			if n := len(q.Questions) - 1; n > 0 {
				line += fmt.Sprintf(" (+%d more)", n)
			}
		}
	case t.Block == "search":
		line = t.Name
		for _, k := range []string{"pattern", "path"} {
			if s := str(k); s != "" {
				line += " " + s
			}
		}
	default:
		line = t.Name + " " + t.Input
	}
	switch {
	case t.Status == "refused" || t.Status == "cancelled":
		line += " — " + t.Status
	case t.Edited:
		line += " — edited by you"
	case t.IsError && (t.Block == "edit" || t.Name == "write"):
		// Nothing changed: no counts as if it had.
		line = strings.SplitN(line, " (", 2)[0] + " — not applied"
	}
	if r := []rune(line); len(r) > max {
		line = string(r[:max-1]) + "…"
	}
	return line
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// foldResult shows the first lines of a result, indented, and how to see
// the rest (its id for recall).
func (r *repl) foldResult(t *toolEvent) string {
	n := theReplSpec().Numbers.FoldLines
	text := strings.TrimRight(t.Output, "\n")
	var lines []string
	if text != "" {
		lines = strings.Split(text, "\n")
	}
	more := 0
	if len(lines) > n {
		more = len(lines) - n
		lines = lines[:n]
	}
	var b strings.Builder
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if rl := []rune(l); len(rl) > r.width-4 && r.width > 8 {
			l = string(rl[:r.width-5]) + "…"
		}
		b.WriteString(r.paint(diffRole(l, "result"), "  │ "+l) + "\n")
	}
	tail := r.text("result_id", "id", t.ResultID)
	switch {
	case more == 1:
		tail = r.text("result_more_one", "id", t.ResultID)
	case more > 1:
		tail = r.text("result_more", "more", more, "id", t.ResultID)
	}
	if t.ResultID != "" {
		b.WriteString(r.paint("status", "  └ "+tail))
	}
	return strings.TrimRight(b.String(), "\n")
}

// planAbove draws the session's plan above the approval card and the
// prompt: its compact form, one line per task (plan.go).
func (r *repl) planAbove() string { return renderPlanCompact(r.e.sess.Plan) }

// approveHere is the approval card at the terminal (approve, in
// repl_share.go, races it with the web UI's when shared): what would run
// and why it asks, then one key answers — y once, a always (where
// offered), n deny (then an optional line for the model), e edit the
// command. Cancelling the turn, or the end of input, is a denial.
func (r *repl) approveHere(ctx context.Context, req approvalRequest) approvalAnswer {
	offered := map[string]bool{}
	for _, o := range req.Options {
		offered[o] = true
	}
	keys := map[rune]string{'y': "once", 'n': "deny"}
	parts := []string{r.text("card_keys_once")}
	if offered["session"] {
		keys['a'] = "session"
		parts = append(parts, r.text("card_keys_session"))
	}
	if offered["project"] {
		keys['p'] = "project"
		parts = append(parts, r.text("card_keys_project"))
	}
	parts = append(parts, r.text("card_keys_deny"))
	editable := req.Tool == "bash"
	if editable {
		keys['e'] = "edit"
		parts = append(parts, r.text("card_keys_edit"))
	}
	keyLine := strings.Join(parts, r.text("card_keys_sep"))
	// Listen before drawing, so a key pressed as soon as the card shows
	// is the card's.
	in := r.listen()
	defer r.unlisten(in)
	if in.lines != nil {
		r.mu.Lock()
		r.dialog++
		r.mu.Unlock()
		defer r.dialogDone()
	}
	r.mu.Lock()
	r.endLineLocked()
	var b strings.Builder
	if p := r.planAbove(); p != "" {
		b.WriteString(r.paint("plan", p) + "\n")
	}
	if req.Agent != "" {
		b.WriteString(r.paint("card", "┌ "+subText("card", "name", req.Agent)) + "\n") // a subagent asks (subagents.go)
	}
	// The head and the purpose are broken at spaces too, behind the
	// border: a long reason ran past the row, and on without it.
	head := func(first, s string) {
		if r.tty {
			s = wrapWords(s, r.cols()-2)
		}
		for i, l := range strings.Split(s, "\n") {
			if i > 0 {
				first = "│ "
			}
			b.WriteString(r.paint("card", first+l) + "\n")
		}
	}
	head("┌ ", r.text("card_head", "tool", req.Tool, "risk", req.Risk, "reason", req.Reason))
	if req.Purpose != "" {
		head("│ ", r.text("card_purpose", "purpose", req.Purpose))
	}
	for _, l := range r.cardBody(req) {
		b.WriteString(l + "\n")
	}
	// What each always answer would allow, in words, before its key.
	for _, o := range []struct{ opt, key string }{{"session", "card_scope_session"}, {"project", "card_scope_project"}} {
		if sc := req.Scopes[o.opt]; sc != "" && offered[o.opt] {
			for _, l := range strings.Split(wrapWords(r.text(o.key, "scope", sc), r.width-2), "\n") {
				b.WriteString(r.paint("card", "│ "+l) + "\n")
			}
		}
	}
	b.WriteString(r.paint("card_keys", "└ "+keyLine) + "\n")
	r.write(b.String())
	r.col = 0
	r.mu.Unlock()

	choice := ""
	for choice == "" {
		k, ok := r.readKey(ctx, in, r.text("card_plain_prompt", "keys", keyLine))
		if !ok {
			if !takenDown(ctx) { // answered in the web UI: approve says how
				r.say("notice", r.text("card_answer_deny"))
			}
			return approvalAnswer{Choice: "deny"}
		}
		choice = keys[unicode.ToLower(k)]
	}
	cardDecided(ctx) // the terminal answered first (repl_share.go)
	r.unlisten(in)
	switch choice {
	case "deny":
		fb, _ := r.readText(ctx, r.text("card_feedback"), "")
		r.say("notice", r.text("card_answer_deny"))
		return approvalAnswer{Choice: "deny", Feedback: strings.TrimSpace(fb)}
	case "edit":
		cmd, ok := r.readText(ctx, r.text("card_edit"), req.Input)
		if !ok || strings.TrimSpace(cmd) == "" {
			r.say("notice", r.text("card_answer_deny"))
			return approvalAnswer{Choice: "deny"}
		}
		r.say("notice", r.text("card_answer_edited", "command", cmd))
		return approvalAnswer{Choice: "once", Command: cmd}
	case "session":
		r.say("notice", r.text("card_answer_session"))
	case "project":
		r.say("notice", r.text("card_answer_project"))
	default:
		r.say("notice", r.text("card_answer_once"))
	}
	return approvalAnswer{Choice: choice}
}

// cardBody shows what a call would do: the command, or the change as a
// diff, or the arguments.
func (r *repl) cardBody(req approvalRequest) []string {
	var a map[string]any
	var lines []string
	add := func(role, s string) {
		if r.tty {
			// The terminal would break a long line where the row ends,
			// mid-word and without the card's border: break it at spaces,
			// each row behind the border.
			s = wrapWords(s, r.cols()-2)
		}
		for _, l := range strings.Split(s, "\n") {
			lines = append(lines, r.paint(role, "│ "+l))
		}
	}
	if req.Diff != "" {
		// The permission layer worked out the change as a unified diff.
		for _, l := range strings.Split(strings.TrimSuffix(req.Diff, "\n"), "\n") {
			add(diffRole(l, "text"), l)
		}
		return lines
	}
	if req.Tool == "bash" || json.Unmarshal([]byte(req.Input), &a) != nil {
		for _, l := range strings.Split(req.Input, "\n") {
			add("text", "$ "+l)
		}
		return lines
	}
	str := func(k string) string { s, _ := a[k].(string); return s }
	diff := func(old, new string) {
		for _, l := range strings.Split(strings.TrimSuffix(old, "\n"), "\n") {
			add("diff_del", "-"+l)
		}
		if new != "" {
			for _, l := range strings.Split(strings.TrimSuffix(new, "\n"), "\n") {
				add("diff_add", "+"+l)
			}
		}
	}
	switch req.Tool {
	case "edit":
		add("text", str("path"))
		diff(str("old_string"), str("new_string"))
	case "multiedit":
		add("text", str("path"))
		edits, _ := a["edits"].([]any)
		for _, e := range edits {
			m, _ := e.(map[string]any)
			o, _ := m["old_string"].(string)
			n, _ := m["new_string"].(string)
			diff(o, n)
		}
	case "write":
		add("text", str("path"))
		for _, l := range strings.Split(strings.TrimSuffix(str("content"), "\n"), "\n") {
			add("diff_add", "+"+l)
		}
	case "apply_patch":
		for _, l := range strings.Split(strings.TrimSuffix(str("input"), "\n"), "\n") {
			role := "text"
			if strings.HasPrefix(l, "+") {
				role = "diff_add"
			} else if strings.HasPrefix(l, "-") {
				role = "diff_del"
			}
			add(role, l)
		}
	default:
		add("text", req.Input)
	}
	return lines
}

// keyListener is where the next key (terminal) or line (plain) goes.
type keyListener struct {
	keys  chan rune
	lines chan string
}

// listen takes the next key or line for a card, away from the editor and
// from steering.
func (r *repl) listen() keyListener {
	if r.ed != nil {
		return keyListener{keys: r.listenKey()}
	}
	r.mu.Lock()
	w := r.waitLineLocked()
	r.mu.Unlock()
	return keyListener{lines: w}
}

func (r *repl) unlisten(l keyListener) {
	if l.keys != nil {
		r.unlistenKey()
		return
	}
	r.mu.Lock()
	if r.waiter == l.lines {
		r.waiter = nil
	}
	r.mu.Unlock()
}

// readKey waits for one key: on a terminal the next key pressed (the
// editor does not see it); on plain lines the first letter of the next
// line. ok is false when the turn was cancelled or input ended.
func (r *repl) readKey(ctx context.Context, in keyListener, plainPrompt string) (rune, bool) {
	if in.lines != nil {
		r.mu.Lock()
		r.write(plainPrompt)
		if !r.inputEnd {
			r.waiter = in.lines
		}
		r.mu.Unlock()
		select {
		case line, ok := <-in.lines:
			if !ok {
				return 0, false
			}
			k, _ := utf8.DecodeRuneInString(strings.TrimSpace(line))
			if k == 0 {
				k = ' '
			}
			return k, true
		case <-ctx.Done():
			return 0, false
		}
	}
	for {
		select {
		case c := <-in.keys:
			if c == 4 {
				return 0, false
			}
			return c, true
		case <-ctx.Done():
			return 0, false
		}
	}
}

// readText asks for one line — the editor's prompt becomes the question,
// and prefill is typed in for the person to change — and waits for it.
func (r *repl) readText(ctx context.Context, question, prefill string) (string, bool) {
	return r.readTextAfter(ctx, "", "", question, prefill)
}

// readTextAfter is readText with a card printed first, under the same lock
// that starts the wait, so a line typed as soon as the card shows is its
// answer and never a steer message.
func (r *repl) readTextAfter(ctx context.Context, role, card, question, prefill string) (string, bool) {
	r.mu.Lock()
	if card != "" {
		r.sayLocked(role, card)
	}
	w := r.waitLineLocked()
	if r.ed != nil {
		// The question is the prompt, with the pre-filled answer after it
		// and the cursor at its end, until it is answered.
		r.asking = true
		r.ed.setLine(prefill)
		r.setPromptNow(r.paint("card_keys", question), true)
	} else {
		r.write(question)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if r.waiter == w {
			r.waiter = nil
		}
		r.asking = false
		r.updatePromptLocked()
		r.mu.Unlock()
	}()
	select {
	case line, ok := <-w:
		return line, ok
	case <-ctx.Done():
		return "", false
	}
}

// complete is Tab: it completes a /command or an @path.
func (r *repl) complete(line string, pos int, key rune) (string, int, bool) {
	if key != '\t' {
		return "", 0, false
	}
	start := strings.LastIndexAny(line[:pos], " \t") + 1
	word := line[start:pos]
	var cands []string
	switch {
	case start == 0 && strings.HasPrefix(word, "/"):
		for _, n := range r.commandNames() {
			if strings.HasPrefix("/"+n, word) {
				cands = append(cands, "/"+n+" ")
			}
		}
	case strings.HasPrefix(word, "@"):
		cands = completePath(r.e.perm.root, word[1:])
		if len(cands) == 0 { // nothing starts so here: the project's files, fuzzily
			cands = fuzzyCompletions(r.e.perm.root, word[1:])
		}
		for i := range cands {
			cands[i] = "@" + cands[i]
		}
	default:
		return "", 0, false
	}
	if len(cands) == 0 {
		return "", 0, false
	}
	repl := commonPrefix(cands)
	if len(cands) > 1 {
		r.say("status", strings.Join(cands, "  "))
	}
	if len(repl) <= len(word) {
		return "", 0, false
	}
	return line[:start] + repl + line[pos:], start + len(repl), true
}

// commandNames is every name Tab offers: terminal, built-in and custom.
func (r *repl) commandNames() []string {
	cs := r.spec.Commands
	names := append([]string{}, cs.TerminalOrder...)
	names = append(names, cs.BuiltinOrder...)
	for _, c := range customCommands(r.expandOptions()) {
		names = append(names, c.Name)
	}
	for _, s := range skillCommands(r.e.perm.root) {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// completePath lists the project entries a partial @path could become,
// escaped as a mention reads them; folders end in a slash. Nothing
// outside the project is offered.
func completePath(root, partial string) []string {
	m, _ := parseMention("@"+partial+"x", 0) // undo escapes; the x keeps a trailing "\ "
	typed := strings.TrimSuffix(m.Path, "x")
	if m.Dir {
		typed += "/"
	}
	dir, prefix := filepath.Split(filepath.FromSlash(typed))
	abs, inside := resolvePath(root, dir)
	if !inside {
		return nil
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || e.Name() == ".git" || (strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(prefix, ".")) {
			continue
		}
		p := filepath.ToSlash(filepath.Join(dir, e.Name()))
		if e.IsDir() {
			p += "/"
		}
		out = append(out, escapeMentionPath(p))
	}
	sort.Strings(out)
	return out
}

func commonPrefix(s []string) string {
	p := s[0]
	for _, x := range s[1:] {
		for !strings.HasPrefix(x, p) {
			_, n := utf8.DecodeLastRuneInString(p)
			p = p[:len(p)-n]
		}
	}
	return p
}

// diffRole is the style of one line of a unified diff: added, removed, or
// other (the file headers "---"/"+++" are other).
func diffRole(l, other string) string {
	switch {
	case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
		return "diff_add"
	case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
		return "diff_del"
	}
	return other
}

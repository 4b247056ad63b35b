package main

// The floor beyond a command's words (hardline.json write_guarded,
// exfiltration, unknown_wrappers): what a shell line writes is judged by
// where it lands (through the links it names) and refused when that is a
// protected or write-guarded file; a line that sends a secret off the
// machine is refused; a program the floor does not know, given a floor
// command as its words, may run it. The floor proper (checkHardline) reads
// words only; these checks need the project, the home folder and the disk.

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

type writeGuardSpec struct {
	About        string           `json:"about"`
	Reason       string           `json:"reason"`
	ProtectedIDs []string         `json:"protected_ids"`
	ModeCommands []string         `json:"mode_commands"`
	Unlinkers    []string         `json:"unlinking_commands"`
	Readers      []string         `json:"mention_readers"`
	CodeReaders  []string         `json:"code_readers"`
	WritingReads []string         `json:"writing_readers"`
	LinkReason   string           `json:"link_reason"`
	Entries      []protectedEntry `json:"entries"`
	NotMentioned []string         `json:"not_mentioned"` // entries only writing guards: naming one (docker -v /etc/hosts:…:ro) is not unsure
}

type exfilSpec struct {
	About      string     `json:"about"`
	Reason     string     `json:"reason"`
	Senders    []string   `json:"senders"`
	SenderCmds [][]string `json:"sender_commands"`
	FileMarks  []string   `json:"file_prefixes"`
	EnvDumps   [][]string `json:"env_dumps"`
	Exports    [][]string `json:"secret_exports"`
	Secrets    []string   `json:"secret_mentions"`
	NetMarkers []string   `json:"net_markers"`
	NetFiles   []string   `json:"net_files"`
}

type holdersSpec struct {
	About  string `json:"about"`
	Reason string `json:"reason"`
}

type containersSpec struct {
	About       string   `json:"about"`
	Names       []string `json:"names"`
	Subcommands []string `json:"subcommands"`
	VolumeOpts  []string `json:"volume_options"`
	Privileged  []string `json:"privileged"`
	Classes     []string `json:"classes"`
	Reason      string   `json:"reason"`
}

type unknownWrapperSpec struct {
	About  string   `json:"about"`
	Reason string   `json:"reason"`
	Not    []string `json:"not_wrappers"`
}

// compileWrites checks the write_guarded, exfiltration and
// unknown_wrappers parts of the spec and prepares their patterns.
func (h *hardlineSpec) compileWrites() error {
	w := &h.WriteGuard
	if w.Reason == "" || w.LinkReason == "" || len(w.Entries) == 0 {
		return errorf("write_guarded needs reason, link_reason and entries")
	}
	for i := range w.Entries {
		e := &w.Entries[i]
		if e.Base != "home" && e.Base != "root" {
			return errorf("write_guarded %s: base %q (want home or root)", e.ID, e.Base)
		}
		e.pats = nil
		for _, p := range e.Patterns {
			e.pats = append(e.pats, splitPattern(strings.TrimPrefix(p, "/")))
		}
	}
	if h.Exfil.Reason == "" || len(h.Exfil.Senders) == 0 {
		return errorf("exfiltration needs reason and senders")
	}
	if h.UnknownWrappers.Reason == "" || h.Holders.Reason == "" || h.Containers.Reason == "" {
		return errorf("unknown_wrappers, holders and containers need a reason")
	}
	return nil
}

// writeGuarded says whether an absolute, clean path is one of
// write_guarded's files (shell start-up files, shell history), and which.
func (h *hardlineSpec) writeGuarded(abs, home string) (string, bool) {
	abs = filepath.ToSlash(abs)
	home = filepath.ToSlash(home)
	for _, e := range h.WriteGuard.Entries {
		rel, ok := "", false
		switch e.Base {
		case "home":
			rel, ok = relUnder(abs, home)
			if o := h.someonesHome(abs); !ok && o != "" {
				rel, ok = relUnder(abs, o)
			}
		case "root":
			rel, ok = strings.TrimPrefix(abs, "/"), strings.HasPrefix(abs, "/")
		}
		if !ok || rel == "." || rel == "" {
			continue
		}
		if anySegMatch(e.pats, splitName(windowsName(strings.ToLower(rel)))) {
			return e.ID, true
		}
	}
	return "", false
}

// floorBeyondWords is the part of the floor that needs the session: a
// refusal (or an unsure verdict) when a line writes a guarded file, sends
// a secret away, reaches a floor target through a link, or hands a floor
// command to a program the floor does not know.
func (p *permissions) floorBeyondWords(h *hardlineSpec, cmds []shellCmd, env shellEnv) (decision, bool) {
	all := cmds
	if sub, changed := substituteAssigns(cmds, env); changed {
		all = append(append([]shellCmd(nil), cmds...), sub...)
	}
	writes := [][]shellCmd{all}
	if linked, ok := p.throughLinks(h, all, env); ok {
		if hit := h.checkCommands(linked, env, false); hit != nil && !hit.Unsure {
			return decision{Verdict: "deny", Rule: "hardline.json " + hit.Rule + " (through a link)",
				Reason: permText("floor", "reason", hit.Reason+" "+h.WriteGuard.LinkReason, "command", hit.Command, "rule", hit.Rule)}, true
		}
		writes = append(writes, linked) // links the line makes (ln -s ~/.ssh k; > k/x)
	}
	for _, cmds := range writes {
		var found *decision
		p.eachAt(h, cmds, env, func(c shellCmd, cwd string) bool {
			follow := !contains(h.WriteGuard.Unlinkers, firstWord(c))
			for _, w := range h.writtenWords(c) {
				if d, ok := p.guardedWrite(h, cwd, w, follow); ok {
					found = &d
					return false
				}
			}
			return true
		})
		if found != nil {
			return *found, true
		}
	}
	for _, cmds := range writes {
		var found *decision
		p.eachAt(h, cmds, env, func(c shellCmd, cwd string) bool {
			if d, ok := p.removesHolder(h, c, cwd); ok {
				found = &d
				return false
			}
			return true
		})
		if found != nil {
			return *found, true
		}
	}
	for _, c := range all {
		if hit := h.containerGetsMachine(c, env); hit != nil {
			return p.unsureDecision(h, hit), true
		}
	}
	if d, ok := p.exfiltrates(h, all); ok {
		return d, true
	}
	for _, cmds := range writes {
		var found *hardlineHit
		p.eachAt(h, cmds, env, func(c shellCmd, cwd string) bool {
			found = p.mentionsGuarded(h, c, cwd)
			return found == nil
		})
		if found != nil {
			return p.unsureDecision(h, found), true
		}
	}
	for _, c := range all {
		if hit := h.codeNamesGuarded(c); hit != nil {
			return p.unsureDecision(h, hit), true
		}
		if hit := h.unknownWrapper(c, env); hit != nil {
			return p.unsureDecision(h, hit), true
		}
	}
	return decision{}, false
}

// eachAt calls f with each command of a line and the folder it runs in,
// as the line's cd, pushd and popd lead (the project at first); after a
// cd to a folder only known at run time, commands are read from the
// project still. f returns false to stop.
func (p *permissions) eachAt(h *hardlineSpec, cmds []shellCmd, env shellEnv, f func(c shellCmd, cwd string) bool) {
	cwd := p.root
	var dirs []string
	for _, c := range cmds {
		if len(c.Words) > 0 && contains(h.Unsure.dirCommands, c.Words[0]) {
			switch c.Words[0] {
			case "popd":
				if len(dirs) > 0 {
					cwd, dirs = dirs[len(dirs)-1], dirs[:len(dirs)-1]
				}
				continue
			case "pushd":
				dirs = append(dirs, cwd)
			}
			if next, known := nextDir(filepath.ToSlash(cwd), c.Words[1:], env); known {
				cwd = filepath.FromSlash(next)
			}
			continue
		}
		if !f(c, cwd) {
			return
		}
	}
}

func firstWord(c shellCmd) string {
	if len(c.Words) == 0 {
		return ""
	}
	return c.Words[0]
}

// pathAt is a word as an absolute path read from folder cwd, the way the
// shell would, without touching the disk.
func (p *permissions) pathAt(cwd, w string) string {
	if w == "~" || strings.HasPrefix(w, "~/") {
		w = p.home + w[1:]
	}
	w = filepath.FromSlash(w)
	if !filepath.IsAbs(w) {
		w = filepath.Join(cwd, w)
	}
	return filepath.Clean(w)
}

// spellings are the places a word read from cwd may name: as written, and
// through the links on the way (a dangling one to where it points). With
// follow false the last name is not followed: rm, mv and ln act on a link
// itself, unless the word ends in / (rm -rf link/ empties its target).
func (p *permissions) spellings(cwd, w string, follow bool) []string {
	if w == "" || len(w) > 4096 {
		return nil
	}
	abs := p.pathAt(cwd, w)
	out := []string{abs}
	if p.linkFree(abs) {
		return out
	}
	r := ""
	if follow || strings.HasSuffix(w, "/") || strings.HasSuffix(w, "/.") {
		r = evalExisting(abs)
	} else {
		r = filepath.Join(evalExisting(filepath.Dir(abs)), filepath.Base(abs))
	}
	if r != abs {
		out = append(out, r)
	}
	return out
}

// realRoots remembers which project folders are their own resolved path,
// so that linkFree can walk from the project instead of from /.
var realRoots sync.Map // root → bool

// linkFree says, cheaply, that an absolute path in the project goes
// through no link: walking down from the project (itself no link), each
// name is a plain entry until one does not exist. Most words of a line
// are not files at all and cost one Lstat here instead of a walk from /.
func (p *permissions) linkFree(abs string) bool {
	if !within(p.root, abs) {
		return false
	}
	real, ok := realRoots.Load(p.root)
	if !ok {
		real = evalExisting(p.root) == filepath.Clean(p.root)
		realRoots.Store(p.root, real)
	}
	if !real.(bool) {
		return false
	}
	cur := filepath.Clean(p.root)
	for _, part := range strings.Split(filepath.ToSlash(relPath(p.root, abs)), "/") {
		if part == "" || part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if err != nil {
			return os.IsNotExist(err)
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

// guardedWrite refuses a write to a protected file (the entries
// write_guarded.protected_ids names) or a write_guarded one.
func (p *permissions) guardedWrite(h *hardlineSpec, cwd, w string, follow bool) (decision, bool) {
	var cands []string
	if hasGlob(w) {
		matches, _ := filepath.Glob(p.pathAt(cwd, w))
		for i, m := range matches {
			if i < 1000 {
				cands = append(cands, p.spellings(cwd, m, follow)...)
			}
		}
	}
	cands = append(cands, p.spellings(cwd, w, follow)...)
	for _, abs := range cands {
		if p.plainProjectFile(abs) {
			continue
		}
		if id, ok := p.protectedAmong(h, abs, h.WriteGuard.ProtectedIDs); ok {
			return decision{Verdict: "deny", Rule: "hardline.json protected " + id, Reason: permText("protected_write", "path", relPath(p.root, abs), "reason", protectedReason(id))}, true
		}
		if id, ok := h.writeGuarded(abs, p.home); ok {
			return decision{Verdict: "deny", Rule: "hardline.json write_guarded " + id, Reason: permText("protected_write", "path", relPath(p.root, abs), "reason", h.WriteGuard.Reason)}, true
		}
	}
	return decision{}, false
}

// plainProjectFile says whether an absolute path is in the project and
// can be none of the guarded files: not in .git (however spelt), and the
// project neither the home folder nor holding it. Most of a line's
// writes are, and skip the pattern matching.
func (p *permissions) plainProjectFile(abs string) bool {
	if !within(p.root, abs) || within(p.root, p.home) {
		return false
	}
	return !strings.Contains(strings.ToLower(relPath(p.root, abs)), ".git")
}

// writtenWords are the words naming files a command writes, moves away
// or deletes, read once for every check (commandWrites,
// permission_boundary.go). Mode changers (write_guarded.mode_commands)
// change no content.
func (h *hardlineSpec) writtenWords(c shellCmd) []string {
	return h.commandWrites(c, false)
}

// throughLinks spells each path word and redirection target of the line
// through the links it goes through, those on disk and those the line
// makes itself with ln (ln -s ~ x && rm -rf x/), keeping a trailing /
// (rm -rf link/ deletes what the link points at). It says whether any
// word changed.
func (p *permissions) throughLinks(h *hardlineSpec, cmds []shellCmd, env shellEnv) ([]shellCmd, bool) {
	changed := false
	var out []shellCmd
	cwd := p.root
	made := map[string]string{} // links the line itself makes (ln -s T NAME): NAME's path to T's
	resolve := func(w string, follow bool) string {
		if w == "" || strings.HasPrefix(w, "-") || hasUnknown(w) || len(w) > 4096 {
			return w
		}
		abs := p.pathAt(cwd, w)
		for name, target := range made {
			if rest, ok := strings.CutPrefix(abs, name); ok && (rest == "" || rest[0] == filepath.Separator) && (follow || rest != "" || strings.HasSuffix(w, "/")) {
				changed = true
				r := filepath.ToSlash(target + rest)
				if strings.HasSuffix(w, "/") {
					r += "/"
				}
				return r
			}
		}
		sp := p.spellings(cwd, w, follow)
		if len(sp) < 2 {
			return w
		}
		r := filepath.ToSlash(sp[1])
		if strings.HasSuffix(w, "/") && !strings.HasSuffix(r, "/") {
			r += "/"
		}
		changed = true
		return r
	}
	for _, c := range cmds {
		if len(c.Words) > 0 && contains(h.Unsure.dirCommands, c.Words[0]) {
			if next, known := nextDir(filepath.ToSlash(cwd), c.Words[1:], env); known && c.Words[0] != "popd" {
				cwd = filepath.FromSlash(next)
			}
			out = append(out, c)
			continue
		}
		if firstWord(c) == "ln" {
			_, operands := h.options("ln", c.Words[1:])
			if len(operands) == 2 {
				made[p.pathAt(cwd, operands[1])] = p.pathAt(cwd, operands[0])
			}
		}
		follow := !contains(h.WriteGuard.Unlinkers, firstWord(c))
		n := shellCmd{Assigns: c.Assigns, Fed: c.Fed, fromFind: c.fromFind}
		for i, w := range c.Words {
			if i > 0 {
				if k, v, ok := strings.Cut(w, "="); ok && isShellName(k) {
					w = k + "=" + resolve(v, true)
				} else {
					w = resolve(w, follow)
				}
			}
			n.Words = append(n.Words, w)
		}
		for _, r := range c.Redirs {
			if !strings.Contains(r.Op, "<<") && !isFdTarget(r.Target) {
				r.Target = resolve(r.Target, true)
			}
			n.Redirs = append(n.Redirs, r)
		}
		out = append(out, n)
	}
	return out, changed
}

// exfiltrates refuses a line that sends a secret away: a sender
// (exfiltration.senders) given a protected file (as an operand, @file,
// key=@file, --opt=file or stdin), or a line running a sender (or code
// with a net marker) that also reads a protected file, dumps the
// environment or exports secret keys.
func (p *permissions) exfiltrates(h *hardlineSpec, cmds []shellCmd) (decision, bool) {
	ex := &h.Exfil
	deny := func(what string) (decision, bool) { return exfilDenial(ex.Reason, what), true }
	protected := func(w string) bool {
		for _, m := range ex.FileMarks {
			if i := strings.Index(w, m); i >= 0 && (i == 0 || m[0] == '=' || strings.HasPrefix(w, "-")) {
				w = w[i+len(m):]
				break
			}
		}
		if strings.HasPrefix(w, "-") {
			return false
		}
		for _, abs := range p.spellings(p.root, w, true) {
			if _, ok := p.protectedFor(abs); ok {
				return true
			}
		}
		return false
	}
	sends, secret := "", ""
	for _, c := range cmds {
		if len(c.Words) == 0 {
			c.Words = []string{""}
		}
		name := c.Words[0]
		for _, seq := range ex.SenderCmds {
			if wordsStart(c.Words, seq) {
				sends = strings.Join(seq, " ") // git push: its operands are refspecs, not files sent
			}
		}
		if contains(ex.Senders, name) && !localOpenssl(c) { // openssl req makes a key, sends nothing
			sends = name
			for _, w := range c.Words[1:] {
				if protected(w) {
					return deny(w)
				}
			}
			for _, r := range c.Redirs {
				if strings.TrimLeft(r.Op, "0123456789") == "<" && protected(r.Target) {
					return deny(r.Target)
				}
			}
		}
		for _, r := range c.Redirs {
			for _, f := range ex.NetFiles {
				if strings.HasPrefix(r.Target, f) {
					sends = r.Target
				}
			}
			if strings.HasSuffix(r.Op, "<<<") {
				// A here-string is words too: sftp's batch (put
				// ~/.ssh/id_rsa).
				for _, m := range ex.Secrets {
					if strings.Contains(r.Target, m) {
						secret = r.Target
					}
				}
			}
			if r.Body != "" && contains(ex.Senders, name) {
				// A here-document a sender reads (sftp's batch, ssh's
				// commands) is its words: a secret it names is sent.
				// (One an interpreter runs is its code, read as -c code
				// is, permission_heredoc.go; one only written to a file,
				// a commit message or a README, is data.)
				if s, n := h.textExfil(r.Body); s != "" || n {
					if s != "" {
						secret = s
					}
					if n {
						sends = name
					}
				}
			}
		}
		for _, w := range c.Words[1:] {
			for _, m := range ex.NetMarkers {
				if strings.Contains(w, m) {
					sends = name
				}
			}
			for _, s := range ex.Secrets {
				if strings.Contains(w, s) {
					secret = w
				}
			}
		}
	}
	if sends == "" {
		return decision{}, false // nothing leaves the machine
	}
	if secret != "" {
		return deny(secret)
	}
	for _, c := range cmds {
		if len(c.Words) == 0 {
			// A loop's or a group's redirection (while read l; do curl …;
			// done < ~/.ssh/id_rsa) feeds every command in it.
			if shown, _, ok := p.protectedOperand(c); ok {
				return deny(shown)
			}
			continue
		}
		if _, _, ok := p.protectedOperand(c); ok && !contains(ex.Senders, c.Words[0]) {
			return deny(strings.Join(c.Words, " "))
		}
		for _, seq := range append(append([][]string(nil), ex.EnvDumps...), ex.Exports...) {
			if wordsStart(c.Words, seq) {
				return deny(strings.Join(c.Words, " "))
			}
		}
	}
	return decision{}, false
}

// wordsStart says whether a command is seq: its name, then seq's other
// words among its arguments; a seq ending in "" wants no more arguments
// than seq has (env alone dumps the environment, env X=1 cmd does not).
func wordsStart(words, seq []string) bool {
	if len(seq) == 0 || len(words) == 0 || words[0] != seq[0] {
		return false
	}
	rest := seq[1:]
	exact := len(rest) > 0 && rest[len(rest)-1] == ""
	if exact {
		rest = rest[:len(rest)-1]
		if len(words)-1 != len(rest) {
			return false
		}
	}
	for _, s := range rest {
		if !contains(words[1:], s) {
			return false
		}
	}
	return true
}

// unknownWrapper finds a floor command among the words of a program the
// floor does not know as a wrapper (unbuffer rm -rf /, or one not yet
// written down): such a program may well run its words as a command, so
// the line is unsure. Known readers and not_wrappers only print theirs.
func (h *hardlineSpec) unknownWrapper(c shellCmd, env shellEnv) *hardlineHit {
	if len(c.Words) < 2 || contains(h.UnknownWrappers.Not, c.Words[0]) || contains(h.Unsure.Mentions.Readers, c.Words[0]) || contains(h.CodeLater.HarmlessPrograms.Names, c.Words[0]) {
		return nil
	}
	for i := 1; i < len(c.Words); i++ {
		name := commandName(c.Words[i])
		if _, ok := h.byName[name]; !ok {
			continue
		}
		sub := shellCmd{Words: append([]string{name}, c.Words[i+1:]...)}
		if hit := h.refusedAmong([]shellCmd{sub}, env, sub.Words, false, false); hit != nil {
			return &hardlineHit{Rule: hit.Rule, Unsure: true, Command: strings.Join(c.Words, " "),
				Reason: fillPairs(h.UnknownWrappers.Reason, "what", c.Words[0], "reason", hit.Reason)}
		}
	}
	return nil
}

// toolWriteGuarded refuses a file tool's write to a write_guarded file
// (abs is already resolved through links), as a shell write is refused.
func (p *permissions) toolWriteGuarded(t *toolSpec, abs string) (decision, bool) {
	if t.Risk == "read" {
		return decision{}, false
	}
	h, err := loadHardline()
	if err != nil {
		return decision{}, false
	}
	if id, ok := h.writeGuarded(abs, p.home); ok {
		return decision{Verdict: "deny", Rule: "hardline.json write_guarded " + id, Reason: permText("protected_write", "path", relPath(p.root, abs), "reason", h.WriteGuard.Reason)}, true
	}
	return decision{}, false
}

// protectedAmong says whether an absolute path is one of the protected
// entries ids names, in the person's home or in anyone's (hardline.json
// path_classes.homes: /root/.ssh is as much a key folder as ~/.ssh).
func (p *permissions) protectedAmong(h *hardlineSpec, abs string, ids []string) (string, bool) {
	abs = filepath.ToSlash(abs)
	homes := []string{filepath.ToSlash(p.home)}
	if o := h.someonesHome(abs); o != "" {
		homes = append(homes, o)
	}
	for _, home := range homes {
		for _, id := range protectedPaths(abs, filepath.ToSlash(p.root), home, slashAll(p.lembasDirs)) {
			if contains(ids, id) {
				return id, true
			}
		}
	}
	return "", false
}

// someonesHome is the home folder (path_classes.homes) an absolute path
// is in, or "".
func (h *hardlineSpec) someonesHome(abs string) string {
	segs := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	for n := 1; n <= len(segs) && n <= 3; n++ {
		pre := "/" + strings.Join(segs[:n], "/")
		for _, hp := range h.PathClass.Homes.Patterns {
			if pathGlobMatch(hp, pre, false) {
				return pre
			}
		}
	}
	return ""
}

// codeNamesGuarded finds code given to an interpreter (code_later.
// interpreters) that names a write_guarded file or a folder of the
// protected entries protected_ids names, by a home-relative spelling
// (~/.bashrc, /home/x/.ssh/…): the code may write it, which the floor
// cannot judge, so the line is unsure.
func (h *hardlineSpec) codeNamesGuarded(c shellCmd) *hardlineHit {
	if len(c.Words) < 2 {
		return nil
	}
	isInterp := false
	for _, in := range h.CodeLater.Interpreters {
		if nameMatches(in.Names, c.Words[0]) && len(in.CodeOptions) > 0 {
			isInterp = true
		}
	}
	if !isInterp {
		return nil
	}
	names := h.guardedNames()
	for _, w := range c.Words[1:] {
		lw := strings.ToLower(w)
		for _, n := range names {
			if strings.Contains(lw, "/"+n) {
				return &hardlineHit{Rule: "interpreter-names-guarded", Unsure: true, Command: strings.Join(c.Words, " "),
					Reason: fillPairs(h.CodeLater.InterpreterReason, "what", c.Words[0])}
			}
		}
	}
	return nil
}

// guardedNames are the literal home-relative names of write_guarded's
// entries and of the protected entries write_guarded.protected_ids
// names (.bashrc, .ssh, .aws): patterns with a glob give their literal
// first part.
func (h *hardlineSpec) guardedNames() []string {
	var out []string
	add := func(pat string) {
		lit := pat
		if i := strings.IndexAny(lit, "*?["); i >= 0 {
			lit = strings.TrimSuffix(lit[:i], "/")
		}
		if lit != "" && !strings.HasPrefix(lit, "**") {
			out = append(out, strings.ToLower(lit))
		}
	}
	for _, e := range h.WriteGuard.Entries {
		if e.Base == "home" {
			for _, p := range e.Patterns {
				add(p)
			}
		}
	}
	for _, e := range h.Protected.Entries {
		if e.Base == "home" && contains(h.WriteGuard.ProtectedIDs, e.ID) {
			for _, p := range e.Patterns {
				add(p)
			}
		}
	}
	return out
}

// removesHolder refuses deleting or moving away a folder that is or holds one
// of the person's key or credential folders or lembas's own (holders):
// rm -r's operands, what mv moves away, the folders find deletes from.
func (p *permissions) removesHolder(h *hardlineSpec, c shellCmd, cwd string) (decision, bool) {
	if len(c.Words) == 0 {
		return decision{}, false
	}
	name, args := c.Words[0], c.Words[1:]
	var words []string
	switch name {
	case "rm":
		if flags, operands := h.options(name, args); flags["recursive"] {
			words = operands
		}
	case "mv":
		_, operands := h.options(name, args)
		words = sourceOperands(operands, args)
	case "find":
		deletes := contains(args, "-delete")
		for i, a := range args {
			if (a == "-exec" || a == "-execdir") && i+1 < len(args) && contains([]string{"rm", "rmdir", "shred", "unlink"}, commandName(args[i+1])) {
				deletes = true
			}
		}
		if deletes {
			words = findStarts(args)
		}
	}
	if len(words) == 0 {
		return decision{}, false
	}
	var held []string
	for _, e := range h.Protected.Entries {
		if e.Base != "home" || !contains(h.WriteGuard.ProtectedIDs, e.ID) {
			continue
		}
		for _, pat := range e.Patterns {
			if lit := strings.TrimSuffix(pat, "/**"); !hasGlob(lit) {
				held = append(held, filepath.Join(p.home, filepath.FromSlash(lit)))
			}
		}
	}
	held = append(held, p.lembasDirs...)
	for _, w := range words {
		for _, abs := range p.spellings(cwd, strings.TrimSuffix(w, "/"), true) {
			for _, f := range held {
				if f != "" && within(abs, f) {
					return decision{Verdict: "deny", Rule: "hardline.json holders", Reason: permText("floor", "reason", fillPairs(h.Holders.Reason, "what", w, "held", f), "command", strings.Join(c.Words, " "), "rule", "holders")}, true
				}
			}
		}
	}
	return decision{}, false
}

// containerGetsMachine finds a container run (containers) given a
// literal /, system or home folder as a writable volume, or run
// privileged: unsure.
func (h *hardlineSpec) containerGetsMachine(c shellCmd, env shellEnv) *hardlineHit {
	ct := &h.Containers
	if len(c.Words) < 2 || !contains(ct.Names, c.Words[0]) {
		return nil
	}
	sub := -1
	for i, w := range c.Words[1:] {
		if contains(ct.Subcommands, w) {
			sub = i + 1
			break
		}
	}
	if sub < 0 {
		return nil
	}
	hit := func(how string) *hardlineHit {
		return &hardlineHit{Rule: "container-gets-machine", Unsure: true, Command: strings.Join(c.Words, " "), Reason: fillPairs(ct.Reason, "what", c.Words[0], "how", how)}
	}
	args := c.Words[sub+1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if contains(ct.Privileged, a) {
			return hit(a)
		}
		opt, val, hasVal := strings.Cut(a, "=")
		if !contains(ct.VolumeOpts, opt) {
			if len(a) > 2 && a[0] == '-' && a[1] != '-' && contains(ct.VolumeOpts, a[:2]) {
				opt, val, hasVal = a[:2], a[2:], true // -v/:/host
			} else {
				continue
			}
		}
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		src, ro := val, false
		if opt == "--mount" {
			src = ""
			for _, kv := range strings.Split(val, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "src", "source":
					src = v
				case "readonly", "ro":
					ro = v == "" || v == "true" || v == "1"
				}
			}
		} else {
			parts := strings.Split(val, ":")
			src = parts[0]
			ro = len(parts) > 2 && contains(strings.Split(parts[2], ","), "ro")
		}
		if src == "" || ro || hasUnknown(src) {
			continue
		}
		if h.inClass(src, ct.Classes, env) {
			return hit(opt + " " + val)
		}
	}
	return nil
}

// mentionsGuarded finds a guarded file (write_guarded's, or a protected
// one of protected_ids) named by a command that may write what it names:
// a word or option value of a program the floor does not know as a
// reader (sort -o ~/.bashrc, gpg --output …), or code of a code reader
// (sed 'w ~/.bashrc', awk '… > "/etc/passwd"'). The line is unsure.
func (p *permissions) mentionsGuarded(h *hardlineSpec, c shellCmd, cwd string) *hardlineHit {
	if len(c.Words) < 2 {
		return nil
	}
	name := c.Words[0]
	keys := p.keyWords(c, false) // a public key read is no secret (permission_boundary.go)
	hit := func() *hardlineHit { return guardedNameHit(h, c, name) }
	if contains(h.WriteGuard.CodeReaders, name) {
		names := h.guardedNames()
		for _, w := range c.Words[1:] {
			if !strings.ContainsAny(w, " \t;{}>") {
				continue // an operand, read; code holds spaces or braces
			}
			lw := strings.ToLower(w)
			for _, n := range names {
				if strings.Contains(lw, "/"+n) {
					return hit()
				}
			}
			for _, sf := range h.PathClass.SystemFiles.Patterns {
				if lit := strings.TrimSuffix(sf, "/**"); !hasGlob(lit) && strings.Contains(w, lit) {
					return hit()
				}
			}
		}
		return nil
	}
	if (contains(h.Unsure.Mentions.Readers, name) && !contains(h.WriteGuard.WritingReads, name)) || contains(h.WriteGuard.Readers, name) || contains(h.CodeLater.HarmlessPrograms.Names, name) {
		return nil
	}
	for _, w := range c.Words[1:] {
		if strings.HasPrefix(w, "-") {
			_, v, ok := strings.Cut(w, "=")
			if !ok {
				continue
			}
			w = v
		}
		if w == "" || !strings.ContainsAny(w, "/~") || keys[w] {
			continue
		}
		for _, abs := range p.spellings(cwd, w, true) {
			if p.plainProjectFile(abs) {
				continue
			}
			if _, ok := p.protectedAmong(h, abs, h.WriteGuard.ProtectedIDs); ok {
				return hit()
			}
			if id, ok := h.writeGuarded(abs, p.home); ok && !contains(h.WriteGuard.NotMentioned, id) {
				return hit()
			}
		}
	}
	return nil
}

package main

// The floor: commands refused in every mode, and paths never read into a
// prompt or written. "The floor" is the one word for it across the
// permission_floor*.go files; hardline.json is only its spec file's name
// (the harness README's), kept in the Go names that read that file. The rules are data (harness/permission/hardline.json);
// this file interprets their matchers over the plain spelling parseShell
// gives, so `sudo env \rm -rf "$HOME"` and `rm -rf ~` meet the same rule.

import (
	"errors"
	"path"
	"regexp"
	"slices"
	"strings"
)

// hardlineHit says which floor rule refused a line, why (for a person),
// and the plainly spelled command it refused.
type hardlineHit struct {
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
	Command string `json:"command"`
	// Unsure says the command could be what the rule refuses, or could
	// not be: refused where it would run unasked, asked elsewhere
	// (hardline.json unsure.by_mode).
	Unsure bool `json:"unsure,omitempty"`
}

type flagSpec struct {
	Short      map[string]string `json:"short"`
	Long       map[string]string `json:"long"`
	ValueShort []string          `json:"value_short"`
	ValueLong  []string          `json:"value_long"`
}

// hardlineRule is one refused-command matcher; every field given must
// hold for the rule to refuse.
type hardlineRule struct {
	ID             string              `json:"id"`
	Reason         string              `json:"reason"`
	Commands       []string            `json:"commands"`
	Flags          []string            `json:"flags"`
	Targets        []string            `json:"targets"`
	LeadingTargets []string            `json:"leading_targets"`
	Sources        []string            `json:"sources"` // classes any source operand (all but the destination) must hit
	Args           []string            `json:"args"`
	Operands       map[string][]string `json:"operands"`
	Pids           []string            `json:"pids"`
	Redirects      []string            `json:"redirects"`
	Dests          []string            `json:"dests"`        // classes the destination (last operand, or -t's folder) must hit
	FromFind       []string            `json:"from_find"`    // classes the folders of a find feeding the command must hit
	UnlessArgs     []string            `json:"unless_args"`  // any of these words among the arguments: no match (fdisk -l)
	UnlessFlags    []string            `json:"unless_flags"` // any of these options (flags names): no match (wipefs -n)
	NoOperands     bool                `json:"no_operands"`  // only with no operand beyond options: pkill -u name alone
	// EveryEntry: a target operand must be a pattern that matches every
	// entry of its folder (~/*, /usr/bin/?*), not some of them (~/*.log).
	EveryEntry bool `json:"every_entry"`
}

type protectedEntry struct {
	ID       string   `json:"id"`
	Base     string   `json:"base"`
	Patterns []string `json:"patterns"`
	Except   []string `json:"except"`
	Scope    string   `json:"scope"`
	Reason   string   `json:"reason"`

	pats, excepts [][]string // the patterns lower-cased and split, made once
}

type hardlineSpec struct {
	Second secondLookSpec `json:"second_look"` // permission_floor_second.go
	Third  thirdLookSpec  `json:"third_look"`  // permission_floor_third.go

	About     string    `json:"about"`
	Source    string    `json:"source"`
	Plain     plainSpec `json:"plain"`
	PathClass struct {
		About          string   `json:"about"`
		Top            []string `json:"top"`
		Devices        []string `json:"devices"`
		WriteRedirects []string `json:"write_redirects"`
		Homes          struct {
			About    string   `json:"about"`
			Patterns []string `json:"patterns"`
		} `json:"homes"`
		SystemFiles struct {
			About    string   `json:"about"`
			Patterns []string `json:"patterns"`
		} `json:"system_files"`
	} `json:"path_classes"`
	Flags struct {
		About    string              `json:"about"`
		Commands map[string]flagSpec `json:"commands"`
	} `json:"flags"`
	Refuse   []hardlineRule `json:"refuse"`
	ForkBomb struct {
		ID          string   `json:"id"`
		Reason      string   `json:"reason"`
		About       string   `json:"about"`
		Definitions []string `json:"definitions"`
		Pipes       []string `json:"pipes"`
		Runners     []string `json:"runners"`
	} `json:"fork_bomb"`
	Protected struct {
		About   string           `json:"about"`
		Entries []protectedEntry `json:"entries"`
	} `json:"protected"`
	Unsure    unsureSpec    `json:"unsure"`
	CodeLater codeLaterSpec `json:"code_later"`
	Unicode   unicodeSpec   `json:"unicode"`
	Paths     pathsSpec     `json:"paths"`

	WriteGuard      writeGuardSpec     `json:"write_guarded"`
	Exfil           exfilSpec          `json:"exfiltration"`
	UnknownWrappers unknownWrapperSpec `json:"unknown_wrappers"`
	Holders         holdersSpec        `json:"holders"`
	Containers      containersSpec     `json:"containers"`

	forkDefs []*regexp.Regexp
	top      map[string]bool
	byName   map[string][]int // the refuse rules that may match a command of that name, in order
	anyName  []int            // the rules for any name: patterns (mkfs.*) and redirections
}

// rulesFor lists, in the spec's order, the refuse rules that may match a
// command: those naming it, and those for any name.
func (h *hardlineSpec) rulesFor(c shellCmd) []int {
	if len(c.Words) == 0 {
		return h.anyName
	}
	if r, ok := h.byName[c.Words[0]]; ok {
		return r
	}
	return h.anyName
}

// indexRules fills byName and anyName, so that a command meets only the
// rules that can match it.
func (h *hardlineSpec) indexRules() {
	h.byName = map[string][]int{}
	for i, r := range h.Refuse {
		wild := len(r.Commands) == 0
		for _, n := range r.Commands {
			if strings.ContainsAny(n, "*?[") {
				wild = true
			}
		}
		if wild {
			h.anyName = append(h.anyName, i)
		}
	}
	for _, r := range h.Refuse {
		for _, n := range r.Commands {
			if !strings.ContainsAny(n, "*?[") {
				h.byName[n] = nil
			}
		}
	}
	for n := range h.byName {
		var list []int
		for i, r := range h.Refuse {
			if slices.Contains(h.anyName, i) || contains(r.Commands, n) {
				list = append(list, i)
			}
		}
		h.byName[n] = list
	}
}

// compile checks the spec once and prepares what checks use often.
func (h *hardlineSpec) compile() error {
	if err := h.Second.compile(); err != nil {
		return err
	}
	for _, d := range h.ForkBomb.Definitions {
		re, err := regexp.Compile(d)
		if err != nil {
			return errorf("fork_bomb definition %q: %w", d, err)
		}
		h.forkDefs = append(h.forkDefs, re)
	}
	h.top = map[string]bool{}
	for _, t := range h.PathClass.Top {
		h.top[t] = true
	}
	classes := map[string]bool{"root": true, "root_glob": true, "top": true, "top_glob": true, "home": true, "home_glob": true, "device": true, "system_file": true}
	for _, r := range h.Refuse {
		if r.ID == "" || r.Reason == "" {
			return errorf("a refuse rule needs an id and a reason")
		}
		for _, list := range [][]string{r.Targets, r.LeadingTargets, r.Sources, r.Redirects, r.Dests, r.FromFind} {
			for _, c := range list {
				if !classes[c] {
					return errorf("rule %s: unknown path class %q (want root, root_glob, top, top_glob, home, home_glob, device or system_file)", r.ID, c)
				}
			}
		}
	}
	if err := h.compileFloor(); err != nil {
		return err
	}
	if err := h.compileWrites(); err != nil {
		return err
	}
	h.indexRules()
	for i := range h.Protected.Entries {
		e := &h.Protected.Entries[i]
		for _, p := range e.Patterns {
			e.pats = append(e.pats, splitPattern(p))
		}
		for _, p := range e.Except {
			e.excepts = append(e.excepts, splitPattern(p))
		}
		switch e.Base {
		case "project", "home", "anywhere", "lembas":
		default:
			return errorf("protected %s: base %q (want project, home, anywhere or lembas)", e.ID, e.Base)
		}
	}
	if p := h.Plain.Limits; p.Depth <= 0 || p.Commands <= 0 || p.BraceWords <= 0 || p.Unwrap <= 0 || p.LineBytes <= 0 {
		return errorf("plain.limits needs depth, commands, brace_words, unwrap and line_bytes above 0")
	}
	return nil
}

// checkHardline says whether the floor refuses a line. A nil hit with a
// nil error means the floor lets it through (the mode and rules decide);
// an error means the line could not be spelled plainly, and the caller
// asks, or refuses where nobody can answer.
func checkHardline(line string, env shellEnv) (*hardlineHit, error) {
	h, err := loadHardline()
	if err != nil {
		return nil, err
	}
	cmds, err := parseShell(line, env)
	if err == nil {
		cmds = h.withWrittenScripts(cmds, env)
	}
	if hit := h.judge(line, cmds, err, env); hit != nil {
		return hit, nil
	}
	return nil, err
}

// judge is checkHardline for a line already parsed (cmds, err), so that
// the permission check spells a line plainly once.
func (h *hardlineSpec) judge(line string, cmds []shellCmd, err error, env shellEnv) *hardlineHit {
	if hit := h.forkBomb(line); hit != nil && (err != nil || h.runsText(cmds) || definesFunction(cmds)) {
		return hit
	}
	var uerr unicodeError
	if errors.As(err, &uerr) {
		return &hardlineHit{Rule: "unicode", Reason: uerr.Error(), Command: line}
	}
	if err != nil {
		return nil
	}
	cmds = h.loopVariants(line, cmds, env)
	if hit := h.checkCommands(cmds, env, false); hit != nil {
		return hit
	}
	sub, changed := substituteAssigns(cmds, env)
	if changed {
		if hit := h.checkCommands(sub, env, false); hit != nil {
			return hit
		}
	}
	if hit := h.codeLater(cmds, env); hit != nil {
		return hit
	}
	if changed {
		cmds = sub
	}
	if hit := h.checkCommands(cmds, env, true); hit != nil {
		return hit
	}
	if hit := h.aliasGivenWords(cmds, env); hit != nil {
		return hit
	}
	return h.secondLook(line, cmds)
}

// definesFunction says whether a parsed line defines a function.
func definesFunction(cmds []shellCmd) bool {
	for _, c := range cmds {
		if c.Defines != "" {
			return true
		}
	}
	return false
}

// loopVariants spells each command in the body of a for loop over words
// known when the line is read (for f in build dist; do rm -rf "$f";
// done) once for each word, so the floor reads what the loop runs — rm
// -rf build, rm -rf dist — and not a name known only at run time (which
// it tries as / and refuses). Its bounds are hardline.json
// third_look.loops: past them a command stays unknown.
func (h *hardlineSpec) loopVariants(line string, cmds []shellCmd, env shellEnv) []shellCmd {
	lp := &h.Third.Loops
	maxLoopValues, maxLoopVariants, maxLineVariants := lp.MaxValues, lp.MaxVariants, lp.MaxLine
	var out []shellCmd
	spelled := 0 // commands spelled again in the whole line: a bound on the parses
	for _, c := range cmds {
		if spelled > maxLineVariants {
			c.loops = nil // unknown for good: a second look (judge after decideLineAt) does not spell it either
		}
		if len(c.loops) == 0 {
			out = append(out, c)
			continue
		}
		variants := []shellCmd{c}
		for _, l := range c.loops {
			if len(l.values) > maxLoopValues || !h.loopVarFixed(line, cmds, l) {
				continue
			}
			var next []shellCmd
			vars := map[string]string{}
			for _, v := range variants {
				if !cmdMentions(v, l.name) {
					next = append(next, v)
					continue
				}
				for _, val := range l.values {
					vars[l.name] = val
					next = append(next, substituteCmd(v, vars, env)...)
				}
			}
			variants = next
			if len(variants) > maxLoopVariants {
				variants = []shellCmd{c}
				break
			}
		}
		spelled += len(variants)
		out = append(out, variants...)
	}
	return out
}

// loopVarFixed says whether a loop's variable holds only its words in
// the line (hardline.json third_look.loops): nothing else in it can set
// the name, and no word of the list splits or expands when used unquoted
// (for d in "build /"; rm -rf $d runs rm -rf build /). Where it is not,
// the variable stays unknown, as before.
func (h *hardlineSpec) loopVarFixed(line string, cmds []shellCmd, l loopVar) bool {
	lp := &h.Third.Loops
	for _, v := range l.values {
		if v == "" || strings.ContainsAny(v, lp.Splits) {
			return false
		}
	}
	if strings.Count(line, "for "+l.name) != 1 || strings.Contains(line, "for\t") {
		return false
	}
	for _, set := range []string{l.name + "=", l.name + "+=", l.name + ":=", l.name + ":-=", "{" + l.name + "="} {
		if strings.Contains(line, set) {
			return false
		}
	}
	for _, c := range cmds {
		if c.Defines != "" || c.fn != "" || len(c.Words) > 0 && slices.Contains(lp.Setters, c.Words[0]) {
			return false
		}
	}
	return true
}

// cmdMentions says whether a command's words or redirections hold $name
// (or ${name}).
func cmdMentions(c shellCmd, name string) bool {
	vars := map[string]string{name: "\x00"}
	for _, w := range c.Words {
		if expandKnownVars(w, vars) != w {
			return true
		}
	}
	for _, r := range c.Redirs {
		if expandKnownVars(r.Target, vars) != r.Target {
			return true
		}
	}
	return false
}

// substituteCmd is c with the known variables' values in its words and
// redirections, quoted and parsed again (so they are spelled plainly);
// the floor's own marks it carries (the function it is in) stay.
func substituteCmd(c shellCmd, vars map[string]string, env shellEnv) []shellCmd {
	nc := shellCmd{Assigns: c.Assigns}
	for _, w := range c.Words {
		nc.Words = append(nc.Words, expandKnownVars(w, vars))
	}
	for _, r := range c.Redirs {
		nc.Redirs = append(nc.Redirs, shellRedir{Op: r.Op, Target: expandKnownVars(r.Target, vars)})
	}
	again, err := parseShell(shellQuoteCmd(nc), env)
	if err != nil {
		nc.fn, nc.Fed, nc.replace, nc.fromFind = c.fn, c.Fed, c.replace, c.fromFind
		return []shellCmd{nc}
	}
	for i := range again {
		again[i].fn = c.fn
		if i == len(again)-1 {
			again[i].Fed, again[i].replace, again[i].fromFind = again[i].Fed || c.Fed, c.replace, c.fromFind
		}
	}
	return again
}

// substituteAssigns spells later commands of a line with the values the
// line itself gave its variables (X=/; rm -rf $X, export D=/; rm -rf ${D}),
// so a value set in one part cannot hide a target from the floor in
// another. A changed command is quoted and parsed again, so its words are
// spelled plainly like any other.
func substituteAssigns(cmds []shellCmd, env shellEnv) ([]shellCmd, bool) {
	vars := map[string]string{}
	// A value that splits or expands where it is used unquoted (X="build
	// /"; rm -rf $X is rm -rf build /) is not spelled in as one word: the
	// name stays known only at run time.
	set := func(k, v string) {
		if strings.ContainsAny(v, " \t\n*?[") {
			delete(vars, k)
			return
		}
		vars[k] = v
	}
	var out []shellCmd
	changed := false
	for _, c := range cmds {
		if len(c.Words) == 0 {
			for _, a := range c.Assigns {
				if k, v, ok := strings.Cut(a, "="); ok {
					if m, ok := mktempValue(v); ok {
						v = m // a fresh folder or file in the temp folder (permission_boundary.go)
					}
					set(k, v)
				}
			}
			out = append(out, c)
			continue
		}
		switch c.Words[0] {
		case "export", "declare", "readonly", "local", "typeset":
			for _, w := range c.Words[1:] {
				if k, v, ok := strings.Cut(w, "="); ok && isShellName(k) {
					if m, ok := mktempValue(v); ok {
						v = m
					}
					set(k, v)
				}
			}
		}
		if len(vars) == 0 {
			out = append(out, c)
			continue
		}
		nc := shellCmd{Assigns: c.Assigns}
		diff := false
		for _, w := range c.Words {
			nw := expandKnownVars(w, vars)
			diff = diff || nw != w
			nc.Words = append(nc.Words, nw)
		}
		for _, r := range c.Redirs {
			nt := expandKnownVars(r.Target, vars)
			diff = diff || nt != r.Target
			nc.Redirs = append(nc.Redirs, shellRedir{Op: r.Op, Target: nt})
		}
		if !diff {
			out = append(out, c)
			continue
		}
		again, err := parseShell(shellQuoteCmd(nc), env)
		if err != nil {
			out = append(out, nc)
		} else {
			out = append(out, again...)
		}
		changed = true
	}
	return out, changed
}

// expandKnownVars replaces $NAME and ${NAME} of the known variables in w.
func expandKnownVars(w string, vars map[string]string) string {
	if !strings.Contains(w, "$") {
		return w
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' || i+1 >= len(w) {
			b.WriteByte(w[i])
			continue
		}
		j, name := i+1, ""
		if w[j] == '{' {
			if k := strings.IndexByte(w[j:], '}'); k > 0 {
				name = w[j+1 : j+k]
				j += k + 1
			}
		} else {
			k := j
			for k < len(w) && (w[k] == '_' || w[k] >= 'a' && w[k] <= 'z' || w[k] >= 'A' && w[k] <= 'Z' || k > j && w[k] >= '0' && w[k] <= '9') {
				k++
			}
			name, j = w[j:k], k
		}
		if v, ok := vars[name]; ok && name != "" {
			b.WriteString(v)
			i = j - 1
			continue
		}
		b.WriteByte(w[i])
	}
	return b.String()
}

// isShellName says whether s is a shell variable name.
//
//go:noinline
func isShellName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// runsText says whether a parsed line runs a shell or eval, which could
// run a fork bomb the line only carries as text (echo '…' | bash). A line
// that parses, with no shell in it, holds a fork bomb's spelling only as
// data: echo ':(){ :|:& };:' or a commit message. A real definition never
// parses (the parser refuses function definitions), so it is refused.
func (h *hardlineSpec) runsText(cmds []shellCmd) bool {
	for _, c := range cmds {
		if len(c.Words) == 0 {
			continue
		}
		n := c.Words[0]
		if contains(h.Plain.Shells.Names, n) || contains(h.Plain.Eval, n) || contains(h.ForkBomb.Runners, n) {
			return true
		}
	}
	return false
}

// checkCommands runs the refuse rules over parsed commands: the first
// command a rule refuses is the hit.
// A cd to a known folder is followed, so that `cd / && rm -rf *` is read
// as rm -rf /*.
//
// With unsure set, the commands are read failing closed instead
// (hardline.json unsure): an operand only known at run time is tried as
// each of possibly, a command xargs feeds is given each of them too, and
// after a cd to an unknown folder relative words are read from /; a rule
// that then matches gives an unsure hit.
func (h *hardlineSpec) checkCommands(cmds []shellCmd, env shellEnv, unsure bool) *hardlineHit {
	cwd := env.Cwd
	lost := false                   // a cd led to a folder only known at run time
	var dirs []string               // pushd's stack
	var found []string              // what the last find starts from
	var exported map[string]string  // what the line's exports give later commands
	var funcs map[string][]shellCmd // the line's function bodies
	for _, c := range cmds {
		if c.fn != "" {
			if funcs == nil {
				funcs = map[string][]shellCmd{}
			}
			funcs[c.fn] = append(funcs[c.fn], c)
		}
		if len(c.Words) > 0 && c.fn != c.Words[0] && len(funcs[c.Words[0]]) > 0 && (!lost || unsure) {
			// A call runs the body where the call is: after a cd, its
			// relative words are read from there (from / where the
			// folder is only known at run time).
			at := env
			at.Cwd = cwd
			if lost {
				at.Cwd = "/"
			}
			if hit := h.checkCommands(funcs[c.Words[0]], at, unsure); hit != nil {
				return hit
			}
		}
		if len(c.Words) > 0 && contains(h.Unsure.dirCommands, c.Words[0]) {
			switch c.Words[0] {
			case "popd":
				if len(dirs) == 0 {
					cwd, lost = "", true
				} else {
					cwd, dirs = dirs[len(dirs)-1], dirs[:len(dirs)-1]
				}
				continue
			case "pushd":
				dirs = append(dirs, cwd)
			}
			next, known := nextDir(cwd, c.Words[1:], env)
			if lost && !known {
				continue
			}
			cwd, lost = next, !known
			continue
		}
		at := env // relative words are read from the folder the line is in
		at.Cwd = cwd
		exported = lineExports(c, exported)
		if rm, sure, ok := h.gitCleanAsRm(c, exported, env.Home); ok && sure {
			c = rm
		} else if ok && unsure {
			// git clean with no -f deletes where the config lets it.
			if hit := h.refusedAmong([]shellCmd{rm}, at, c.Words, false, true); hit != nil {
				return hit
			}
		}
		if f, ok := h.fdAsFind(c); ok {
			c = f // fd finds as find does (permission_floor_third.go)
		}
		fromFind := false
		if len(c.Words) > 0 && c.Words[0] == "find" {
			found = findStarts(c.Words[1:])
			if hit := h.checkExecs(c, found, at, cwd, unsure); hit != nil {
				return hit
			}
		} else if len(found) > 0 {
			// What xargs feeds it is what the find found, known.
			c, fromFind = h.withFound(c, found), true
			c.Fed = false
		}
		var tries []shellCmd
		if !unsure {
			tries = append(tries, c)
		} else {
			tries = h.possibly(c)
			if lost {
				at.Cwd = "/" // an unknown folder could be /
				if len(tries) == 0 {
					tries = []shellCmd{c}
				}
			}
		}
		if hit := h.refusedAmong(tries, at, c.Words, fromFind, unsure); hit != nil {
			return hit
		}
		if unsure {
			if hit := h.mentionsSystemFile(c); hit != nil {
				return hit
			}
		}
	}
	return nil
}

// refusedAmong is the first floor rule that refuses one of tries (the
// spellings a command may mean), shown as the words given; an unsure
// spelling's refusal says it was unsure.
func (h *hardlineSpec) refusedAmong(tries []shellCmd, env shellEnv, shown []string, fromFind, unsure bool) *hardlineHit {
	for _, t := range tries {
		t.fromFind = fromFind
		for _, i := range h.rulesFor(t) {
			if h.matches(&h.Refuse[i], t, env) {
				hit := &hardlineHit{Rule: h.Refuse[i].ID, Reason: h.Refuse[i].Reason, Command: strings.Join(shown, " ")}
				if unsure {
					hit.Unsure = true
					hit.Reason = fillPairs(h.Unsure.Reason, "rule", hit.Rule, "reason", hit.Reason)
				}
				return hit
			}
		}
	}
	return nil
}

// checkExecs checks what a find runs with -exec and the like, {} read as
// find's starting folders, so that the find command alone gets the verdict
// its whole line gets (the commands it runs are also checked on their own).
func (h *hardlineSpec) checkExecs(c shellCmd, found []string, env shellEnv, cwd string, unsure bool) *hardlineHit {
	ps, err := loadPlainSpec()
	if err != nil {
		return nil
	}
	opts := ps.ExecOptions.Commands[c.Words[0]]
	for i := 1; i < len(c.Words); i++ {
		if !contains(opts, c.Words[i]) {
			continue
		}
		j := i + 1
		for j < len(c.Words) && c.Words[j] != ";" && c.Words[j] != "+" {
			j++
		}
		if j > i+1 {
			sub := h.withFound(shellCmd{Words: append([]string{commandName(c.Words[i+1])}, c.Words[i+2:j]...)}, found)
			tries := []shellCmd{sub}
			if unsure {
				tries = h.possibly(sub)
			}
			if hit := h.refusedAmong(tries, env, sub.Words, true, unsure); hit != nil {
				return hit
			}
		}
		i = j
	}
	return nil
}

// findStarts returns the folders find starts from: its words before the
// first option or expression, after find's own leading options (-H, -L,
// -P, -O3, -D tree), which stand before the folders.
func findStarts(args []string) []string {
	for len(args) > 0 {
		a := args[0]
		if a == "-H" || a == "-L" || a == "-P" || (strings.HasPrefix(a, "-O") && len(a) > 2) {
			args = args[1:]
		} else if a == "-D" && len(args) > 1 {
			args = args[2:]
		} else {
			break
		}
	}
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
			break
		}
		out = append(out, a)
	}
	return out
}

// withFound reads a command after a find as acting on what find found:
// {} (find -exec rm -rf {} +) stands for find's starting folders, and a
// command with only options (find / | xargs rm -rf, its operands coming
// from find's output) takes them as operands. The command is only read
// so for the floor; what it stands for is everything under those folders.
func (h *hardlineSpec) withFound(c shellCmd, found []string) shellCmd {
	if len(c.Words) == 0 {
		return c
	}
	_, operands := h.options(c.Words[0], c.Words[1:])
	out := shellCmd{Redirs: c.Redirs, Assigns: c.Assigns, Fed: c.Fed}
	hadBraces := false
	for _, w := range c.Words {
		if w == "{}" || (c.replace != "" && w == c.replace) {
			out.Words = append(out.Words, found...)
			hadBraces = true
			continue
		}
		out.Words = append(out.Words, w)
	}
	if !hadBraces && len(operands) == 0 {
		out.Words = append(out.Words, found...)
	}
	return out
}

// nextDir is the folder a cd leads to and whether it can be known: an
// absolute folder, home (cd alone, ~), or a relative one under a known
// folder; cd -, an expansion or a relative folder under an unknown one
// cannot. -L, -P, -e and -@ are cd's options, not folders.
func nextDir(cwd string, args []string, env shellEnv) (string, bool) {
	for len(args) > 0 && len(args[0]) == 2 && args[0][0] == '-' && strings.IndexByte("LPe@", args[0][1]) >= 0 {
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) > 0 && (args[0] == "~" || strings.HasPrefix(args[0], "~/")) && env.Home != "" {
		args = append([]string{env.Home + args[0][1:]}, args[1:]...)
	}
	switch {
	case len(args) == 0:
		return env.Home, env.Home != ""
	case strings.ContainsAny(args[0], "$`") || strings.HasPrefix(args[0], "~") || args[0] == "-" || hasGlob(args[0]):
		return "", false
	case strings.HasPrefix(args[0], "/"):
		return path.Clean(args[0]), true
	case cwd != "" && !strings.HasPrefix(args[0], "-"):
		return path.Join(cwd, args[0]), true
	}
	return "", false
}

// forkBomb looks for a function that pipes itself into itself, on the raw
// line with quotes and backslashes taken out: the parser refuses function
// definitions, so this is the one check made on text.
func (h *hardlineSpec) forkBomb(line string) *hardlineHit {
	if !strings.Contains(line, "(") && !strings.Contains(line, "function") {
		return nil
	}
	text := strings.NewReplacer(`\`, "", `'`, "", `"`, "").Replace(line)
	for _, re := range h.forkDefs {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			name, body := m[1], strings.Join(strings.Fields(m[2]), "")
			for _, pipe := range h.ForkBomb.Pipes {
				if strings.Contains(body, name+pipe+name) {
					return &hardlineHit{Rule: h.ForkBomb.ID, Reason: h.ForkBomb.Reason, Command: strings.TrimSpace(m[0])}
				}
			}
		}
	}
	return nil
}

// matches says whether one rule refuses one command.
func (h *hardlineSpec) matches(r *hardlineRule, c shellCmd, env shellEnv) bool {
	if len(r.Redirects) > 0 {
		for _, rd := range c.Redirs {
			op := strings.TrimLeft(rd.Op, "0123456789")
			if !contains(h.PathClass.WriteRedirects, op) {
				continue
			}
			if op == ">&" && isFdTarget(rd.Target) {
				continue
			}
			if h.inClass(rd.Target, r.Redirects, env) {
				return true
			}
		}
		return false
	}
	if len(c.Words) == 0 || !nameMatches(r.Commands, c.Words[0]) {
		return false
	}
	args := c.Words[1:]
	flags, operands := h.options(c.Words[0], args)
	for _, f := range r.Flags {
		if !flags[f] {
			return false
		}
	}
	for _, f := range r.UnlessFlags {
		if flags[f] {
			return false
		}
	}
	if len(r.UnlessArgs) > 0 && anyIn(args, r.UnlessArgs) {
		return false
	}
	if len(r.FromFind) > 0 && (!c.fromFind || !h.anyInClass(operands, r.FromFind, env)) {
		return false
	}
	if len(r.Dests) > 0 && !h.anyInClass(destOperands(h, c.Words[0], operands, args), r.Dests, env) {
		return false
	}
	if len(r.Args) > 0 && !anyIn(args, r.Args) {
		return false
	}
	if len(r.Targets) > 0 && !h.anyInClass(operands, r.Targets, env) {
		return false
	}
	if r.EveryEntry && !h.anyEveryEntry(operands, r.Targets, env) {
		return false
	}
	if len(r.Sources) > 0 && !h.anyInClass(sourceOperands(operands, args), r.Sources, env) {
		return false
	}
	if len(r.LeadingTargets) > 0 {
		if !h.anyInClass(findStarts(args), r.LeadingTargets, env) {
			return false
		}
	}
	if len(r.Operands) > 0 {
		hit := false
		for _, a := range args {
			eq := strings.IndexByte(a, '=')
			if eq <= 0 {
				continue
			}
			if classes, ok := r.Operands[a[:eq]]; ok && h.inClass(a[eq+1:], classes, env) {
				hit = true
			}
		}
		if !hit {
			return false
		}
	}
	if len(r.Pids) > 0 && !anyIn(killPids(args), r.Pids) {
		return false
	}
	if r.NoOperands && len(operands) > 0 {
		return false
	}
	return true
}

//go:noinline
func isFdTarget(t string) bool {
	if t == "-" {
		return true
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return t != ""
}

// nameMatches says whether a command name is one of the rule's names
// (which may be patterns such as mkfs.*); no names means any command.
func nameMatches(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
		if strings.ContainsAny(n, "*?[") {
			if ok, _ := path.Match(n, name); ok {
				return true
			}
		}
	}
	return false
}

//go:noinline
func anyIn(words, list []string) bool {
	for _, w := range words {
		if contains(list, w) {
			return true
		}
	}
	return false
}

// options spells a command's options one way (hardline.json flags): -rf,
// -r -f, -R and --recursive --force all give {recursive, force}; the rest
// are its operands. Unknown options are kept as nothing, never operands.
func (h *hardlineSpec) options(cmd string, args []string) (map[string]bool, []string) {
	fs := h.Flags.Commands[cmd]
	flags := map[string]bool{}
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			operands = append(operands, a)
			continue
		}
		if strings.HasPrefix(a, "--") {
			name := a
			hasVal := false
			if eq := strings.IndexByte(a, '='); eq > 0 {
				name, hasVal = a[:eq], true
			}
			full := longOption(fs.Long, name)
			if full == "" {
				continue
			}
			flags[fs.Long[full]] = true
			if !hasVal && contains(fs.ValueLong, full) {
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			ch := a[j : j+1]
			if n, ok := fs.Short[ch]; ok {
				flags[n] = true
			}
			if contains(fs.ValueShort, ch) {
				if j == len(a)-1 {
					i++
				}
				break
			}
		}
	}
	return flags, operands
}

// longOption finds the long option a name spells: itself, or the one long
// option it is a unique prefix of (GNU accepts --recur for --recursive).
func longOption(long map[string]string, name string) string {
	if _, ok := long[name]; ok {
		return name
	}
	found := ""
	for k := range long {
		if strings.HasPrefix(k, name) && len(name) > 2 {
			if found != "" {
				return ""
			}
			found = k
		}
	}
	return found
}

// sourceOperands is what a mv-like command moves away: every operand but
// the destination, or all of them when -t/--target-directory names it.
func sourceOperands(operands, args []string) []string {
	for _, a := range args {
		if a == "-t" || a == "--target-directory" || strings.HasPrefix(a, "--target-directory=") || (strings.HasPrefix(a, "-t") && !strings.HasPrefix(a, "--")) {
			return operands
		}
	}
	if len(operands) > 1 {
		return operands[:len(operands)-1]
	}
	return nil
}

// killPids returns the process ids kill is given: after the signal (-9,
// -KILL, -s KILL, -n 9) and --. A lone signal word is returned too, so
// that `kill -1` reads as pid -1 when nothing follows.
func killPids(args []string) []string {
	i := 0
	if i < len(args) {
		switch a := args[i]; {
		case a == "-s" || a == "-n" || a == "--signal":
			i += 2
		case a == "--":
		case strings.HasPrefix(a, "-") && len(a) > 1:
			i++
			if i == len(args) {
				return []string{a}
			}
		}
	}
	if i < len(args) && args[i] == "--" {
		i++
	}
	if i >= len(args) {
		return nil
	}
	return args[i:]
}

// anyEveryEntry says whether one of words is in one of classes and is a
// pattern of only * and ? (~/*, /usr/bin/?*): it matches every entry of
// its folder, as ~/*.log does not.
func (h *hardlineSpec) anyEveryEntry(words, classes []string, env shellEnv) bool {
	for _, w := range words {
		base := path.Base(w)
		if strings.Trim(base, "*?") == "" && strings.Contains(base, "*") && h.inClass(w, classes, env) {
			return true
		}
	}
	return false
}

//go:noinline
func (h *hardlineSpec) anyInClass(words, classes []string, env shellEnv) bool {
	for _, w := range words {
		if h.inClass(w, classes, env) {
			return true
		}
	}
	return false
}

// inClass says whether a target word is in one of the path classes.
func (h *hardlineSpec) inClass(word string, classes []string, env shellEnv) bool {
	for _, c := range h.pathClasses(word, env) {
		if contains(classes, c) {
			return true
		}
	}
	return false
}

//go:noinline
func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// shellPattern is a shell glob as path.Match reads it: the shell's [!…]
// is path.Match's [^…] (path.Match reads ! as itself, so /[!.]* would
// seem to match no system folder).
func shellPattern(p string) string { return strings.ReplaceAll(p, "[!", "[^") }

// reachesTop says whether a pattern for a name right under / could match
// one of the system's folders (/u* does, /lembas-* does not).
func (h *hardlineSpec) reachesTop(seg string) bool {
	for _, t := range h.PathClass.Top {
		name, _, _ := strings.Cut(strings.TrimPrefix(t, "/"), "/")
		if ok, _ := path.Match(shellPattern(seg), name); ok {
			return true
		}
	}
	return false
}

// pathClasses names what a target word is: root, root_glob, top,
// top_glob, home, home_glob, device. .. is resolved, so /tmp/../etc is
// /etc; a ~ left unexpanded (no home known) still counts as home.
func (h *hardlineSpec) pathClasses(word string, env shellEnv) []string {
	p := word
	home := env.Home
	switch {
	case p == "~" || p == "$HOME" || p == "${HOME}":
		return []string{"home"}
	case strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "$HOME/") || strings.HasPrefix(p, "${HOME}/"):
		if home == "" {
			home = "/nonexistent-home"
		}
		p = home + p[strings.IndexByte(p, '/'):]
	case strings.HasPrefix(p, "~"):
		// ~name: that person's home folder, wherever it is.
		name, rest, _ := strings.Cut(p[1:], "/")
		switch {
		case name == env.User && home != "":
			p = home + "/" + rest
		case name == "root":
			p = "/root/" + rest
		default:
			p = "/home/" + name + "/" + rest
		}
	}
	if !strings.HasPrefix(p, "/") && env.Cwd != "" && p != "" && !strings.HasPrefix(p, "-") {
		p = env.Cwd + "/" + p
	}
	if !strings.HasPrefix(p, "/") {
		return nil
	}
	p = path.Clean(p)
	var out []string
	for _, hp := range h.PathClass.Homes.Patterns {
		if pathGlobMatch(hp, p, false) {
			out = append(out, "home")
			break
		}
	}
	if h.systemFile(p) {
		out = append(out, "system_file")
	}
	if p == "/" {
		out = append(out, "root")
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if p != "/" && hasGlob(segs[0]) && h.reachesTop(segs[0]) {
		out = append(out, "root_glob")
	}
	if h.top[p] {
		out = append(out, "top")
	}
	dir, base := path.Dir(p), path.Base(p)
	if hasGlob(base) && h.top[dir] {
		out = append(out, "top_glob")
	}
	if home != "" && home != "/" {
		hc := path.Clean(home)
		if p == hc || (p != "/" && strings.HasPrefix(hc, p+"/")) {
			// home, or a folder holding it (~/.. is at least home)
			out = append(out, "home")
		}
		if hasGlob(base) && (dir == hc || strings.HasPrefix(hc, dir+"/")) {
			out = append(out, "home_glob")
		}
	}
	for _, d := range h.PathClass.Devices {
		if pathGlobMatch(d, p, false) || (hasGlob(p) && globCovers(p, d)) {
			out = append(out, "device")
			break
		}
	}
	return out
}

// protectedPath says whether an absolute, already resolved path is one the
// floor keeps out of prompts and never writes, and by which rule. .git
// rules apply under the project; lembasDirs are lembas's own config folder,
// login token file and state folder.
func protectedPath(abs string, project, home string, lembasDirs []string) (string, bool) {
	if ids := protectedPaths(abs, project, home, lembasDirs); len(ids) > 0 {
		return ids[0], true
	}
	return "", false
}

// protectedPaths is every protected entry an absolute path is in, in the
// spec's order (~/.ssh/id_rsa is both a private key and in ~/.ssh).
func protectedPaths(abs string, project, home string, lembasDirs []string) []string {
	h, err := loadHardline()
	if err != nil {
		return []string{"hardline-spec"}
	}
	var ids []string
	abs = path.Clean(strings.ReplaceAll(abs, `\`, "/"))
	for _, e := range h.Protected.Entries {
		var rels []string
		switch e.Base {
		case "project":
			if r, ok := relUnder(abs, project); ok {
				rels = append(rels, r)
			}
		case "home":
			if r, ok := relUnder(abs, home); ok {
				rels = append(rels, r)
			}
		case "anywhere":
			rels = append(rels, path.Base(abs))
		case "lembas":
			for _, d := range lembasDirs {
				if d == "" {
					continue
				}
				if r, ok := relUnder(abs, d); ok {
					if r == "." {
						r = ""
					}
					rels = append(rels, r)
				}
			}
		}
		for _, rel := range rels {
			ns := splitName(windowsName(strings.ToLower(rel)))
			if anySegMatch(e.pats, ns) && !anySegMatch(e.excepts, ns) {
				ids = append(ids, e.ID)
				break
			}
		}
	}
	return ids
}

// windowsName spells a relative path the way Windows opens it: a name's
// trailing dots and spaces are dropped and what follows a ':' names a data
// stream of the same file, so ".git./hooks", ".env::$DATA" and ".env:x"
// are .git/hooks and .env there. Folding on every system only ever
// protects more, as matching without case does.
func windowsName(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ':'); j >= 0 {
			s = s[:j]
		}
		if t := strings.TrimRight(s, ". "); t != "" {
			s = t
		}
		segs[i] = s
	}
	return strings.Join(segs, "/")
}

// splitPattern and splitName split a pattern and a path the way
// pathGlobMatch does, so protected paths match without splitting their
// patterns on every call.
func splitPattern(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(strings.ToLower(p), "/")
}

func splitName(n string) []string {
	if n == "" || n == "." {
		return nil
	}
	return strings.Split(n, "/")
}

func anySegMatch(patterns [][]string, ns []string) bool {
	for _, p := range patterns {
		if segMatch(p, ns) {
			return true
		}
	}
	return false
}

// relUnder returns abs relative to base when it is base or inside it.
func relUnder(abs, base string) (string, bool) {
	if base == "" {
		return "", false
	}
	base = path.Clean(strings.ReplaceAll(base, `\`, "/"))
	if abs == base {
		return ".", true
	}
	prefix := base
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if strings.HasPrefix(abs, prefix) {
		return abs[len(prefix):], true
	}
	return "", false
}

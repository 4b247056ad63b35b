package main

// The floor failing closed (hardline.json unsure and code_later): where a
// line's commands reach only becomes known when it runs, a command is
// tried with its unknown parts as anything they could be, and code held
// for later (git's program-running options and configs, variables that
// name a program, an interpreter's code) is recognised. An unsure hit is
// refused where the line would otherwise run unasked and asked elsewhere;
// a hit in the code itself is refused like any other.

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

type unsureSpec struct {
	About          string            `json:"about"`
	Possibly       []string          `json:"possibly"`
	Written        []string          `json:"possibly_written"`
	DirCommands    []string          `json:"dir_commands"`
	ByMode         map[string]string `json:"by_mode"`
	Reason         string            `json:"reason"`
	UnparsedReason string            `json:"unparsed_reason"`
	Mentions       struct {
		About   string   `json:"about"`
		Readers []string `json:"readers"`
	} `json:"mentions"`

	dirCommands []string
}

type interpreterSpec struct {
	Names        []string `json:"names"`
	CodeOptions  []string `json:"code_options"` // + stands for a word starting with +
	ValueOptions []string `json:"value_options"`
	Markers      []string `json:"markers"` // this interpreter's own exec markers, instead of exec_markers
}

type codeLaterSpec struct {
	About             string              `json:"about"`
	Deferred          map[string]string   `json:"deferred"`
	GitReason         string              `json:"git_reason"`
	EnvReason         string              `json:"env_reason"`
	InterpreterReason string              `json:"interpreter_reason"`
	StdinReason       string              `json:"stdin_reason"`
	RunTimeMarkers    []string            `json:"run_time_markers"` // code holding one is only known when the line runs
	RunTimeReason     string              `json:"run_time_reason"`
	InfoOptions       []string            `json:"info_options"`
	GitConfigs        []string            `json:"git_configs"`
	GitConfigCommands []string            `json:"git_config_commands"`
	GitConfigRead     []string            `json:"git_config_read"`
	GitOptions        []string            `json:"git_options"`
	GitOptionSubs     map[string][]string `json:"git_option_subcommands"`
	GitValueOptions   []string            `json:"git_value_options"`
	GitSubcommands    [][]string          `json:"git_subcommands"`
	GitCloneConfig    []string            `json:"git_clone_config"`
	GitURLPrefixes    []string            `json:"git_url_prefixes"`
	HarmlessPrograms  struct {
		About string   `json:"about"`
		Names []string `json:"names"`
	} `json:"harmless_programs"`
	WrittenThenRun struct {
		About         string              `json:"about"`
		OutputOptions map[string][]string `json:"output_options"`
		KeepsTexts    struct {
			About    string   `json:"about"`
			Commands []string `json:"commands"`
		} `json:"keeps_texts"`
		Reason string `json:"reason"`
	} `json:"written_then_run"`
	CodeEnv      []string                   `json:"code_env"`
	EnvSetters   []string                   `json:"env_setters"`
	Interpreters map[string]interpreterSpec `json:"interpreters"`
	ExecMarkers  []string                   `json:"exec_markers"`
}

type unicodeSpec struct {
	About   string `json:"about"`
	Classes []struct {
		Name   string   `json:"name"`
		Ranges []string `json:"ranges"`
	} `json:"classes"`

	classes []unicodeClassRanges
}

type unicodeClassRanges struct {
	name   string
	ranges [][2]rune
}

// compileFloor checks the fail-closed parts of the spec and prepares them.
func (h *hardlineSpec) compileFloor() error {
	u := &h.Unsure
	if len(u.Possibly) == 0 || len(u.Written) == 0 || u.Reason == "" || u.UnparsedReason == "" {
		return errorf("unsure needs possibly, possibly_written, reason and unparsed_reason")
	}
	for m, v := range u.ByMode {
		if v != "ask" && v != "deny" {
			return errorf("unsure.by_mode.%s is %q; use ask or deny", m, v)
		}
	}
	u.dirCommands = u.DirCommands
	ps := &h.Paths
	if ps.MaxNameBytes <= 0 || ps.MaxPathBytes <= 0 || ps.MaxLinks <= 0 || ps.AgentConfig.Reason == "" {
		return errorf("paths needs max_name_bytes, max_path_bytes and max_links above 0 and agent_config.reason")
	}
	for _, pat := range ps.AgentConfig.Patterns {
		ps.AgentConfig.pats = append(ps.AgentConfig.pats, splitPattern(pat))
	}
	for _, c := range h.Unicode.Classes {
		cr := unicodeClassRanges{name: c.Name}
		for _, r := range c.Ranges {
			lo, hi, _ := strings.Cut(r, "-")
			a, err1 := codePoint(lo)
			b, err2 := a, error(nil)
			if hi != "" {
				b, err2 = codePoint(hi)
			}
			if err1 != nil || err2 != nil || b < a {
				return errorf("unicode class %q: range %q (want U+XXXX or U+XXXX-U+YYYY)", c.Name, r)
			}
			cr.ranges = append(cr.ranges, [2]rune{a, b})
		}
		h.Unicode.classes = append(h.Unicode.classes, cr)
	}
	return nil
}

func codePoint(s string) (rune, error) {
	if !strings.HasPrefix(s, "U+") {
		return 0, errorf("no U+")
	}
	n, err := strconv.ParseUint(s[2:], 16, 32)
	return rune(n), err
}

// unsureVerdict is what a mode does with an unsure line (unsure.by_mode):
// refused where nobody can answer, ask for a mode the table does not name.
func (h *hardlineSpec) unsureVerdict(mode string, headless bool) string {
	if headless {
		return "deny"
	}
	if v := h.Unsure.ByMode[mode]; v != "" {
		return v
	}
	return "ask"
}

//go:noinline
func hasUnknown(w string) bool { return strings.ContainsAny(w, "$`") }

// possibly is a command with what is only known at run time made each of
// unsure.possibly in turn: unknown parts of its words and redirection
// targets, and an operand more first and last when xargs feeds it. With
// nothing unknown there is nothing to try (after a cd to an unknown folder
// the caller tries the command as it is, its relative words read from /).
func (h *hardlineSpec) possibly(c shellCmd) []shellCmd {
	if len(c.Words) == 0 && len(c.Redirs) == 0 {
		return nil
	}
	unknown := false
	for i, w := range c.Words {
		if i > 0 && hasUnknown(w) {
			unknown = true
		}
	}
	for _, r := range c.Redirs {
		if !strings.HasPrefix(strings.TrimLeft(r.Op, "0123456789"), "<<") && hasUnknown(r.Target) {
			unknown = true
		}
	}
	if !unknown && !c.Fed {
		return nil // the plain pass has judged it as it is
	}
	var out []shellCmd
	if fed := fedWords(c); len(fed) > 0 {
		// A here-string xargs reads is known: it feeds exactly its words.
		t := c
		t.Words = append(append([]string(nil), c.Words...), fed...)
		out = append(out, t)
	}
	for _, wv := range h.Unsure.Written {
		v := wv // what an operand is tried as: a written value, or /
		if !contains(h.Unsure.Possibly, v) {
			v = "/"
		}
		t := shellCmd{Assigns: c.Assigns, Fed: c.Fed, fromFind: c.fromFind}
		for i, w := range c.Words {
			if i > 0 {
				if k, _, ok := strings.Cut(w, "="); ok && isShellName(k) {
					w = replaceUnknown(w, wv)
				} else {
					w = replaceUnknown(w, v)
				}
			}
			t.Words = append(t.Words, w)
		}
		for _, r := range c.Redirs {
			if !strings.HasPrefix(strings.TrimLeft(r.Op, "0123456789"), "<<") {
				r.Target = replaceUnknown(r.Target, wv)
			}
			t.Redirs = append(t.Redirs, r)
		}
		if c.Fed && len(t.Words) > 0 && v != "" {
			last := t
			last.Words = append(append([]string(nil), t.Words...), v)
			first := t
			first.Words = append([]string{t.Words[0], v}, t.Words[1:]...)
			out = append(out, last, first)
			continue
		}
		out = append(out, t)
	}
	return out
}

// fedWords are the words a command fed by xargs reads from a known
// here-string (xargs kill -9 <<< -1 runs kill -9 -1), or none.
func fedWords(c shellCmd) []string {
	if !c.Fed {
		return nil
	}
	if text, expands, ok := stdinText(c); ok && !expands && !hasUnknown(text) {
		return strings.Fields(text)
	}
	return nil
}

// replaceUnknown puts v in place of every expansion a word still holds
// ($X, ${…}, $(…), `…`, $1, $@): "$D"/* with / is //*, read as /*.
func replaceUnknown(w, v string) string {
	if !hasUnknown(w) {
		return w
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c == '`':
			j := strings.IndexByte(w[i+1:], '`')
			if j < 0 {
				i = len(w)
			} else {
				i += j + 1
			}
			b.WriteString(v)
		case c == '$' && i+1 < len(w) && w[i+1] == '{':
			j := matchBrace(w[i:])
			if j < 0 {
				i = len(w)
			} else {
				i += j
			}
			b.WriteString(v)
		case c == '$' && i+1 < len(w) && w[i+1] == '(':
			depth := 0
			j := i + 1
			for ; j < len(w); j++ {
				if w[j] == '(' {
					depth++
				} else if w[j] == ')' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			i = j
			b.WriteString(v)
		case c == '$' && i+1 < len(w) && isNameStart(w[i+1]):
			j := i + 1
			for j < len(w) && isNameByte(w[j]) {
				j++
			}
			i = j - 1
			b.WriteString(v)
		case c == '$' && i+1 < len(w) && strings.IndexByte("0123456789@*#?$!-", w[i+1]) >= 0:
			i++
			b.WriteString(v)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// systemFile says whether a clean absolute path is one of the system
// files, or a pattern that could match one.
func (h *hardlineSpec) systemFile(p string) bool {
	for _, sf := range h.PathClass.SystemFiles.Patterns {
		if pathGlobMatch(sf, p, false) {
			return true
		}
		if hasGlob(p) && globCovers(p, sf) {
			return true
		}
	}
	return false
}

// globCovers says whether a pattern word could match a file a class
// names: /etc/pass* covers /etc/passwd, /dev/sd? covers /dev/sd*.
func globCovers(word, target string) bool {
	t := strings.TrimSuffix(target, "/**")
	t = strings.ReplaceAll(t, "*", "x")
	ok, _ := path.Match(shellPattern(word), t)
	return ok
}

// mentionsSystemFile finds a system file named anywhere in the words of a
// command that is not a known reader (unsure.mentions): code given to an
// interpreter or an option's value can write it as well as an operand.
func (h *hardlineSpec) mentionsSystemFile(c shellCmd) *hardlineHit {
	if len(c.Words) == 0 || contains(h.Unsure.Mentions.Readers, c.Words[0]) {
		return nil
	}
	for _, w := range c.Words[1:] {
		for _, sf := range h.PathClass.SystemFiles.Patterns {
			lit := strings.TrimSuffix(sf, "/**")
			if hasGlob(lit) {
				continue
			}
			if strings.Contains(w, lit) {
				return h.unsureHit("system-file-write", c)
			}
		}
	}
	return nil
}

// unsureHit is an unsure hit of a refuse rule.
func (h *hardlineSpec) unsureHit(rule string, c shellCmd) *hardlineHit {
	reason := rule
	for _, r := range h.Refuse {
		if r.ID == rule {
			reason = r.Reason
			break
		}
	}
	return &hardlineHit{Rule: rule, Unsure: true, Command: strings.Join(c.Words, " "), Reason: fillPairs(h.Unsure.Reason, "rule", rule, "reason", reason)}
}

// codeLater looks for code a line hands to a program to run later or
// elsewhere: variables naming a program (code_env), git's program-running
// options, configs and subcommands, an interpreter's code. Code that is a
// shell line is checked by the floor and refused on a hit; otherwise the
// line is unsure.
func (h *hardlineSpec) codeLater(cmds []shellCmd, env shellEnv) *hardlineHit {
	cl := &h.CodeLater
	written := map[string]bool{} // files the line writes, as spelt, cleaned
	for _, c := range cmds {
		if what := h.runsWritten(c, written); what != "" && !c.scriptRead {
			// A script whose text the line spells out is read in
			// (withWrittenScripts): a shell's as the line's own commands,
			// an interpreter's as its code. Any other is only known when
			// the line runs.
			return &hardlineHit{Rule: "runs-written-file", Reason: fillPairs(cl.WrittenThenRun.Reason, "what", what), Unsure: true, Command: strings.Join(c.Words, " ")}
		}
		h.noteWritten(c, written)
		assigns := c.Assigns
		if len(c.Words) > 0 && contains(cl.EnvSetters, c.Words[0]) {
			assigns = append(append([]string(nil), assigns...), c.Words[1:]...)
		}
		for _, a := range assigns {
			name, val, ok := strings.Cut(a, "=")
			if ok && nameMatches(cl.CodeEnv, name) {
				if hit := h.codeHit("code-env", fillPairs(cl.EnvReason, "what", name), val, c, env); hit != nil {
					return hit
				}
			}
		}
		if len(c.Words) == 0 {
			continue
		}
		if c.Words[0] == "git" {
			if what, code, ok := h.gitRunsCode(c.Words[1:]); ok {
				if hit := h.codeHit("git-runs-code", fillPairs(cl.GitReason, "what", what), code, c, env); hit != nil {
					return hit
				}
			}
			continue
		}
		if hit := h.interpreterCode(c); hit != nil {
			return hit
		}
	}
	return nil
}

// noteWritten records the files a command writes: its redirection
// targets, and for the commands of written_then_run their output option's
// value (curl -o f) or, with no options listed, their last operand.
func (h *hardlineSpec) noteWritten(c shellCmd, written map[string]bool) {
	for _, r := range c.Redirs {
		if contains(h.PathClass.WriteRedirects, strings.TrimLeft(r.Op, "0123456789")) && !isFdTarget(r.Target) {
			written[path.Clean(r.Target)] = true
		}
	}
	if len(c.Words) < 2 {
		return
	}
	opts, ok := h.CodeLater.WrittenThenRun.OutputOptions[c.Words[0]]
	if !ok {
		return
	}
	if len(opts) == 0 {
		written[path.Clean(c.Words[len(c.Words)-1])] = true
		return
	}
	for i, w := range c.Words[1:] {
		for _, o := range opts {
			switch {
			case w == o && i+2 < len(c.Words):
				written[path.Clean(c.Words[i+2])] = true
			case strings.HasPrefix(w, o+"=") && strings.HasPrefix(o, "--"):
				written[path.Clean(w[len(o)+1:])] = true
			case len(o) == 2 && strings.HasPrefix(w, o) && len(w) > 2:
				written[path.Clean(w[2:])] = true
			case len(o) == 2 && len(w) > 2 && w[0] == '-' && w[1] != '-' && w[len(w)-1] == o[1] && i+2 < len(c.Words):
				written[path.Clean(c.Words[i+2])] = true // -sSLo f
			}
		}
	}
}

// runsWritten says which written file a command runs: as its own name
// (./x.sh), or as the script of a shell, of source or of an interpreter
// (python3 x.py).
func (h *hardlineSpec) runsWritten(c shellCmd, written map[string]bool) string {
	if len(c.Words) == 0 || len(written) == 0 {
		return ""
	}
	if _, script := h.interpreterScript(c); script != "" && (written[path.Clean(script)] || hasUnknown(script)) {
		return script // a script named at run time may be the one written
	}
	if written[path.Clean(c.Words[0])] {
		return c.Words[0]
	}
	for w := range written {
		// A command run by its full path is read by its name (/tmp/c is c).
		if strings.HasPrefix(w, "/") && path.Base(w) == c.Words[0] {
			return w
		}
	}
	ps := &h.Plain.Shells
	if !contains(ps.Names, c.Words[0]) && !contains(ps.Sources, c.Words[0]) {
		return ""
	}
	for i := 1; i < len(c.Words); i++ {
		w := c.Words[i]
		if contains(ps.ValueOptions, w) {
			i++
			continue
		}
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "+") {
			continue
		}
		if written[path.Clean(w)] || hasUnknown(w) {
			return w // a script named at run time ("$PWD/x.sh") may be the one written
		}
		return ""
	}
	return ""
}

// codeHit is the hit for code handed on: the floor's own hit when the code,
// read as a shell line, is refused by it; an unsure hit otherwise.
func (h *hardlineSpec) codeHit(rule, reason, code string, c shellCmd, env shellEnv) *hardlineHit {
	code = strings.TrimPrefix(strings.TrimSpace(code), "!")
	if code != "" {
		cmds, err := parseShell(code, env)
		if hit := h.judge(code, cmds, err, env); hit != nil && !hit.Unsure {
			return hit
		}
		if h.harmlessCode(cmds, err) {
			return nil
		}
	}
	return &hardlineHit{Rule: rule, Reason: reason, Unsure: true, Command: strings.Join(c.Words, " ")}
}

// harmlessCode says whether code handed on runs only harmless_programs.
func (h *hardlineSpec) harmlessCode(cmds []shellCmd, err error) bool {
	if err != nil || len(cmds) == 0 {
		return false
	}
	for _, k := range cmds {
		if len(k.Words) == 0 || len(k.Redirs) > 0 || len(k.Assigns) > 0 || !contains(h.CodeLater.HarmlessPrograms.Names, k.Words[0]) {
			return false
		}
	}
	return true
}

// harmlessValue is harmlessCode for a value not yet parsed.
func (h *hardlineSpec) harmlessValue(v string) bool {
	cmds, err := parseShell(strings.TrimPrefix(strings.TrimSpace(v), "!"), shellEnv{})
	return h.harmlessCode(cmds, err)
}

// gitRunsCode finds an option, config or subcommand of a git command
// (its words after git) that makes git run a program, and that program.
func (h *hardlineSpec) gitRunsCode(args []string) (what, code string, ok bool) {
	cl := &h.CodeLater
	configKey := func(kv string) (string, string, bool) {
		k, v, _ := strings.Cut(kv, "=")
		if gitConfigRuns(cl.GitConfigs, k) {
			return k, v, true
		}
		return "", "", false
	}
	i := 0
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		if strings.HasPrefix(a, "-c") && len(a) > 2 && !strings.HasPrefix(a, "--") {
			name, val, hasVal = "-c", a[2:], true
		}
		if contains(cl.GitValueOptions, name) && !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		switch name {
		case "-c":
			if k, v, ok := configKey(val); ok && !h.harmlessValue(v) {
				return "-c " + k, v, true
			}
		case "--config-env":
			if k, _, ok := configKey(val); ok {
				return "--config-env " + k, "", true
			}
		case "--exec-path":
			return "--exec-path", "", true
		}
		i++
	}
	if i >= len(args) {
		return "", "", false
	}
	sub, rest := args[i], args[i+1:]
	for _, w := range rest {
		for _, pre := range cl.GitURLPrefixes {
			if strings.HasPrefix(w, pre) {
				return sub + " " + pre + " URL", strings.TrimPrefix(w, pre), true
			}
		}
	}
	for _, seq := range cl.GitSubcommands {
		if len(seq) == 0 || seq[0] != sub || len(rest) < len(seq)-1 {
			continue
		}
		match := true
		for k, s := range seq[1:] {
			if rest[k] != s {
				match = false
			}
		}
		if match {
			body := rest[len(seq)-1:]
			if len(body) == 1 {
				return strings.Join(seq, " "), body[0], true
			}
			return strings.Join(seq, " "), shellQuote(body), true
		}
	}
	if contains(cl.GitConfigCommands, sub) {
		if anyIn(rest, cl.GitConfigRead) {
			return "", "", false
		}
		var words []string
		for j := 0; j < len(rest); j++ {
			w := rest[j]
			if w == "-f" || w == "--file" || w == "--blob" || w == "--type" || w == "--comment" || w == "--default" {
				j++
				continue
			}
			if strings.HasPrefix(w, "-") {
				continue
			}
			words = append(words, w)
		}
		if len(words) > 0 && (words[0] == "set" || words[0] == "add" || words[0] == "replace-all") {
			words = words[1:]
		}
		if len(words) > 0 && gitConfigRuns(cl.GitConfigs, words[0]) {
			v := ""
			if len(words) > 1 {
				v = words[1]
			}
			return "config " + words[0], v, true
		}
		return "", "", false
	}
	for j := 0; j < len(rest); j++ {
		w := rest[j]
		name, val, hasVal := strings.Cut(w, "=")
		if contains(cl.GitCloneConfig, name) && (sub == "clone" || sub == "submodule") {
			if !hasVal && j+1 < len(rest) {
				val = rest[j+1]
			}
			if k, v, ok := configKey(val); ok && !h.harmlessValue(v) {
				return sub + " " + name + " " + k, v, true
			}
		}
		if !contains(cl.GitOptions, name) {
			continue
		}
		if subs, limited := cl.GitOptionSubs[name]; limited && !contains(subs, sub) {
			continue
		}
		if !hasVal && j+1 < len(rest) {
			val = rest[j+1]
		}
		return sub + " " + name, val, true
	}
	return "", "", false
}

// gitConfigRuns says whether a config key is one git runs a program from:
// matched without case, * standing for one dotted part (a subsection
// may hold dots: filter.a.b.clean).
func gitConfigRuns(patterns []string, key string) bool {
	key = strings.ToLower(key)
	for _, p := range patterns {
		if p == key {
			return true
		}
		if pre, suf, ok := strings.Cut(p, "*"); ok && strings.HasPrefix(key, pre) && strings.HasSuffix(key, suf) && len(key) > len(pre)+len(suf) {
			return true
		}
	}
	return false
}

// reWholeVar is a program that is one variable: $CODE, ${CODE}.
var reWholeVar = lazyRE(`^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$`)

// interpreterCode finds code an interpreter is given that can start
// programs or delete files (code_later.exec_markers), or an interpreter
// that reads its program from stdin: both are unsure.
func (h *hardlineSpec) interpreterCode(c shellCmd) *hardlineHit {
	cl := &h.CodeLater
	name := c.Words[0]
	for _, in := range cl.Interpreters {
		if !nameMatches(in.Names, name) {
			continue
		}
		args := c.Words[1:]
		code, hasCode, script := "", false, false
		for j := 0; j < len(args) && !hasCode && !script; j++ {
			a := args[j]
			if contains(cl.InfoOptions, a) {
				script = true
				break
			}
			if v := valueOption(in.ValueOptions, a); v != "" {
				if a == v {
					j++ // its value is the next word
				}
				continue
			}
			if strings.HasPrefix(a, "+") && contains(in.CodeOptions, "+") {
				code, hasCode = a[1:], true
				break
			}
			if h.stdinScript(a) {
				break // its program comes from a pipe: read as stdin below
			}
			if !strings.HasPrefix(a, "-") || a == "-" {
				if len(in.CodeOptions) == 0 {
					code, hasCode = a, true // awk: the program is the first operand
				} else if a != "-" {
					script = true
				}
				break
			}
			for _, o := range in.CodeOptions {
				switch {
				case o == "+":
				case a == o:
					if j+1 < len(args) {
						code, hasCode = args[j+1], true
					}
				case strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"="):
					code, hasCode = a[len(o)+1:], true
				case len(o) == 2 && !strings.HasPrefix(a, "--") && strings.IndexByte(a[1:], o[1]) >= 0:
					k := strings.IndexByte(a[1:], o[1]) + 2
					if k < len(a) {
						code, hasCode = a[k:], true
					} else if j+1 < len(args) {
						code, hasCode = args[j+1], true
					}
				}
			}
		}
		if !hasCode && !script && len(in.Markers) == 0 {
			// Its program is its input: a here-document's body or a
			// here-string, when the line gives one, is that program.
			if text, expands, ok := stdinText(c); ok {
				if expands {
					return &hardlineHit{Rule: "interpreter-code-at-run-time", Reason: fillPairs(cl.RunTimeReason, "what", name), Unsure: true, Command: strings.Join(c.Words, " ")}
				}
				code, hasCode = text, true
			}
		}
		if hasCode {
			// Code made when the line runs — a substitution, or a variable
			// as the whole program — cannot be judged: unsure.
			if whole := strings.TrimSpace(code); reWholeVar.MatchString(whole) {
				return &hardlineHit{Rule: "interpreter-code-at-run-time", Reason: fillPairs(cl.RunTimeReason, "what", name), Unsure: true, Command: strings.Join(c.Words, " ")}
			}
			for _, m := range cl.RunTimeMarkers {
				if strings.Contains(code, m) {
					return &hardlineHit{Rule: "interpreter-code-at-run-time", Reason: fillPairs(cl.RunTimeReason, "what", name), Unsure: true, Command: strings.Join(c.Words, " ")}
				}
			}
			return h.codeMarks(in, name, code, c)
		}
		if !script && len(in.Markers) == 0 {
			return &hardlineHit{Rule: "interpreter-reads-stdin", Reason: fillPairs(cl.StdinReason, "what", name), Unsure: true, Command: strings.Join(c.Words, " ")}
		}
		return nil
	}
	return nil
}

// codeMarks is the hit for an interpreter's code that holds one of its
// exec markers (code_later.exec_markers, or its own), or nil.
func (h *hardlineSpec) codeMarks(in interpreterSpec, name, code string, c shellCmd) *hardlineHit {
	markers := h.CodeLater.ExecMarkers
	if len(in.Markers) > 0 {
		markers = in.Markers
	}
	for _, m := range markers {
		if strings.Contains(code, m) {
			return &hardlineHit{Rule: "interpreter-runs-code", Reason: fillPairs(h.CodeLater.InterpreterReason, "what", name), Unsure: true, Command: strings.Join(c.Words, " ")}
		}
	}
	return nil
}

// stdinText is what a command reads on its input when the line spells it
// out: a here-document's body or a here-string's text. expands says it
// holds a part only known when the line runs.
func stdinText(c shellCmd) (text string, expands, ok bool) {
	k, in := stdinRedir(c.Redirs)
	if k < 0 {
		return "", false, false
	}
	switch strings.TrimPrefix(in.Op, "0") {
	case "<<<":
		return in.Target, hasUnknown(in.Target), true
	case "<<", "<<-":
		return in.Body, in.Expands, true
	}
	return "", false, false
}

// stdinScript says whether an interpreter's script operand is a pipe:
// a process substitution (python3 <(curl …)) or one of the shells'
// stdin_files.
func (h *hardlineSpec) stdinScript(a string) bool {
	if strings.HasPrefix(a, "<(") {
		return true
	}
	for _, f := range h.Plain.Shells.StdinFiles {
		if pathGlobMatch(f, a, false) {
			return true
		}
	}
	return false
}

// valueOption is the option of opts that a word is or starts with (-MFile
// is -M File), or "".
func valueOption(opts []string, a string) string {
	for _, o := range opts {
		if a == o || (len(o) == 2 && strings.HasPrefix(a, o)) || (strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"=")) {
			return o
		}
	}
	return ""
}

// destOperands is what a copying command writes: its -t/--target-directory
// folder, or else its last operand (when it has two or more; rsync and
// scp too). ln with one operand links into the current folder.
func destOperands(h *hardlineSpec, cmd string, operands, args []string) []string {
	for i, a := range args {
		switch {
		case (a == "-t" || a == "--target-directory") && i+1 < len(args):
			return []string{args[i+1]}
		case strings.HasPrefix(a, "--target-directory="):
			return []string{a[len("--target-directory="):]}
		case strings.HasPrefix(a, "-t") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			return []string{a[2:]}
		}
	}
	if len(operands) >= 2 {
		return operands[len(operands)-1:]
	}
	return nil
}

// unsureDecision is what the session does with an unsure line: refused
// where it would otherwise run unasked (auto) and where nobody can
// answer, asked elsewhere; an answer to it is never remembered.
func (p *permissions) unsureDecision(h *hardlineSpec, hit *hardlineHit) decision {
	rule := "hardline.json unsure " + hit.Rule
	if p.headless {
		return decision{Verdict: "deny", Rule: rule, Reason: permText("headless_other", "reason", permText("unsure", "reason", hit.Reason, "command", hit.Command, "rule", hit.Rule))}
	}
	if h.unsureVerdict(p.mode(), false) == "deny" {
		return decision{Verdict: "deny", Rule: rule, Reason: permText("unsure_refused", "mode", p.mode(), "reason", hit.Reason, "command", hit.Command, "rule", hit.Rule)}
	}
	return decision{Verdict: "ask", Rule: rule, Reason: permText("unsure", "reason", hit.Reason, "command", hit.Command, "rule", hit.Rule)}
}

// loginName is the person's login name, as $USER and $LOGNAME give it (or
// the home folder's name), for the floor to expand $USER and ~name.
func loginName(home string) string {
	for _, k := range []string{"USER", "LOGNAME", "USERNAME"} {
		if v := os.Getenv(k); v != "" && !strings.ContainsAny(v, "/\\$`") {
			return v
		}
	}
	if home != "" {
		return filepath.Base(home)
	}
	return ""
}

// theAgentConfigReason is why agent and editor configuration is asked.
func theAgentConfigReason() string {
	if h, err := loadHardline(); err == nil {
		return h.Paths.AgentConfig.Reason
	}
	return "agent configuration"
}

// writesAgentConfig finds the project's agent or editor configuration
// among what a command writes, in the one reading every check uses
// (writtenWords). Words are judged as written, from the project folder.
func (p *permissions) writesAgentConfig(h *hardlineSpec, c shellCmd) (rel, pat string, ok bool) {
	for _, w := range h.writtenWords(c) {
		abs := p.lexicalPath(w)
		if !within(p.root, abs) {
			continue
		}
		r := relPath(p.root, abs)
		if pat, ok := agentConfig(r); ok {
			return r, pat, true
		}
	}
	return "", "", false
}

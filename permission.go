package main

// Permissions: what may run without asking. One call is judged in this
// order, the first that speaks deciding:
//
//	floor (hardline.json: refused in every mode) ─► unparseable line (ask;
//	refused headless) ─► protected path (never written; read only when
//	asked) ─► the mode's deny ─► deny rules ─► confirm: always (ask, never
//	remembered) ─► ask rules ─► a path outside the project (ask) ─► allow
//	rules, defaults and always answers ─► the mode (modes.json)
//
// A bash line is judged per simple command after it is spelled plainly: a
// deny for any part refuses the line, an ask for any part asks, and the line
// is allowed by rules only when every part is. The decision names the rule
// or table entry that decided, for approval cards and `permissions check`.
// Asking goes through one approver interface (permission_approve.go).
//
// A worker (floor 3): it calls the shell words (shellwords*.go, the floor's
// reading of a line), containment (contain.go), the config and the ground.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// decision is what the rules say of one call.
type decision struct {
	Verdict  string   // allow, ask, deny
	Reason   string   // for the person and, on deny, the model
	Rule     string   // the rule or table entry that decided
	Remember bool     // an answer may be remembered (session, project): only a mode's ask
	Patterns []string // bash: the always patterns of the line's commands
}

// permDefaultsSpec is harness/permission/defaults.json.
type permDefaultsSpec struct {
	About string `json:"about"`
	Keys  struct {
		About  string              `json:"about"`
		Groups map[string][]string `json:"groups"`
	} `json:"keys"`
	Allow       []string `json:"allow"`
	Ask         []string `json:"ask"`
	Deny        []string `json:"deny"`
	CommandDirs struct {
		About string   `json:"about"`
		Dirs  []string `json:"dirs"`
	} `json:"command_dirs"`
	Approval struct {
		About        string `json:"about"`
		TimeoutS     int    `json:"timeout_s"`
		ContextLines int    `json:"context_lines"`
		DiffMaxLines int    `json:"diff_max_lines"`
	} `json:"approval"`
	Texts map[string]string `json:"texts"`

	allow, ask, deny []permRule
}

var (
	permDefaultsOnce sync.Once
	permDefaultsVal  *permDefaultsSpec
	permDefaultsErr  error
)

// permDefaults reads defaults.json once, strictly, with its rules parsed.
func permDefaults() (*permDefaultsSpec, error) {
	permDefaultsOnce.Do(func() {
		var d permDefaultsSpec
		data, err := fs.ReadFile(harnessFS, "harness/permission/defaults.json")
		if err == nil {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			err = dec.Decode(&d)
		}
		if err != nil {
			permDefaultsErr = errorf("harness/permission/defaults.json: %w", err)
			return
		}
		for _, l := range []struct {
			in  []string
			out *[]permRule
		}{{d.Allow, &d.allow}, {d.Ask, &d.ask}, {d.Deny, &d.deny}} {
			for _, s := range l.in {
				r, err := parseRule(s)
				if err != nil {
					permDefaultsErr = errorf("harness/permission/defaults.json: %w", err)
					return
				}
				*l.out = append(*l.out, r)
			}
		}
		if d.Approval.TimeoutS <= 0 || d.Approval.DiffMaxLines <= 0 {
			permDefaultsErr = errorf("harness/permission/defaults.json: approval needs timeout_s and diff_max_lines above 0")
			return
		}
		permDefaultsVal = &d
	})
	return permDefaultsVal, permDefaultsErr
}

// theDefaults is permDefaults for code that runs after TestHarness has
// proved the file good: a broken file is a build bug, so it panics.
func theDefaults() *permDefaultsSpec {
	d, err := permDefaults()
	if err != nil {
		panic("harness: " + err.Error())
	}
	return d
}

// permText fills one of defaults.json's texts.
func permText(key string, kv ...any) string {
	s, ok := theDefaults().Texts[key]
	if !ok {
		panic("harness: permission/defaults.json has no text " + key)
	}
	return fillPairs(s, kv...)
}

// sourcedRule is a rule with where it came from: defaults, config,
// session or project (an always answer kept on disk).
type sourcedRule struct {
	permRule
	Source string
}

// label names a rule for a person: "config allow: bash: git status".
//
//go:noinline
func (r sourcedRule) label(kind string) string {
	switch r.Source {
	case "session", "project":
		return "always (" + r.Source + "): " + r.Text
	}
	return r.Source + " " + kind + ": " + r.Text
}

// permissions holds one session's mode, its rules and what the person
// allowed. It is safe for use by several goroutines.
type permissions struct {
	// The mode is read by every call and set by /mode, ACP, the link and
	// team_decide from other goroutines: mode() and setMode.
	modeV      atomic.Pointer[string]
	root       string // the project, resolved
	home       string // the home folder, resolved
	lembasDirs []string
	headless   bool
	allow      []sourcedRule // defaults, then config.yaml
	ask        []sourcedRule
	deny       []sourcedRule
	cmdDirs    []string

	mu          mutex
	session     []sourcedRule // always answers of this session
	project     []sourcedRule // always answers kept for the project
	projectFile string
	warnings    []string      // what could not be read (a corrupt always file, set aside)
	broken      error         // the person's rules could not be read: every call is refused
	bare        string        // why no OS sandbox is in force, "" when one is (setSandbox)
	bareLate    func() string // why the sandbox in force confines too little, asked at each decision (setSandboxLate)
	net         *sandbox      // the session's network rules, which webfetch follows (web.go); nil: none

	rootsOnce    sync.Once // writableRoots, made once (permission_boundary.go)
	roots, temps []string
}

// approvalAnswer is the person's answer.
type approvalAnswer struct {
	Choice   string `json:"choice"` // once, session, project, deny
	Feedback string `json:"feedback,omitempty"`
	Command  string `json:"command,omitempty"` // a corrected command line (once only)
	Why      string `json:"-"`                 // set by lembas, not a person: headless, timeout
}

// normMode reads a mode name: a known mode, or an alias of one.
func normMode(m string) (string, error) {
	ms := theSpec().Modes
	m = strings.ToLower(strings.TrimSpace(m))
	if m == "" {
		return ms.Default, nil
	}
	if a, ok := ms.Aliases[m]; ok {
		m = a
	}
	if _, ok := ms.Modes[m]; !ok {
		return "", errorf("unknown mode %q; use one of %s", m, strings.Join(ms.Order, ", "))
	}
	return m, nil
}

// newPermissions makes a session's permissions from the defaults, the
// person's config.yaml rules and the project's always answers. The caller
// has loaded the config already (a broken one stops the session there); if
// it cannot be read here, the permissions fail closed.
func newPermissions(mode, root string, headless bool) *permissions {
	cfg, err := loadConfig()
	if err != nil {
		p := &permissions{root: root, headless: headless, broken: err}
		p.setMode(mode)
		return p
	}
	return permissionsFor(mode, root, headless, cfg)
}

// permissionsFor is newPermissions with the config given.
func permissionsFor(mode, root string, headless bool, cfg *config) *permissions {
	p, err := newPermissionsFrom(mode, root, headless, cfg)
	if err != nil {
		// Fail closed: without the person's rules (a deny among them) no
		// call may run, and every refusal says which rule to fix.
		p = &permissions{root: root, headless: headless, broken: err}
		p.setMode(mode)
	}
	return p
}

// mode is the session's mode now: out of line, since some fifty places
// ask it and each inlined copy cost more than the call.
//
//go:noinline
func (p *permissions) mode() string {
	if m := p.modeV.Load(); m != nil {
		return *m
	}
	return ""
}

// setMode changes the session's mode; a call already being judged keeps
// the mode it read.
//
//go:noinline
func (p *permissions) setMode(m string) { p.modeV.Store(&m) }

// newPermissionsFrom is newPermissions with the config given; a rule that
// does not parse is an error naming it.
func newPermissionsFrom(mode, root string, headless bool, cfg *config) (*permissions, error) {
	d, err := permDefaults()
	if err != nil {
		return nil, err
	}
	p := &permissions{root: root, headless: headless, home: evalExisting(homeDir()), cmdDirs: d.CommandDirs.Dirs}
	p.setMode(mode)
	for _, dir := range []string{configDir(), stateDir()} {
		p.lembasDirs = append(p.lembasDirs, dir)
		if r := evalExisting(dir); r != dir {
			p.lembasDirs = append(p.lembasDirs, r)
		}
	}
	add := func(to *[]sourcedRule, rules []permRule, source string) {
		for _, r := range rules {
			*to = append(*to, sourcedRule{r, source})
		}
	}
	add(&p.allow, d.allow, "defaults")
	add(&p.ask, d.ask, "defaults")
	add(&p.deny, d.deny, "defaults")
	for _, l := range []struct {
		in  []string
		out *[]sourcedRule
		key string
	}{{cfg.Permissions.Allow, &p.allow, "allow"}, {cfg.Permissions.Ask, &p.ask, "ask"}, {cfg.Permissions.Deny, &p.deny, "deny"}} {
		for _, s := range l.in {
			r, err := parseRule(s)
			if err != nil {
				return nil, errorf("config.yaml permissions.%s: %w", l.key, err)
			}
			*l.out = append(*l.out, sourcedRule{r, "config"})
		}
	}
	p.loadProject()
	return p, nil
}

// shellEnv is what the floor and the rules know of the shell.
func (p *permissions) shellEnv() shellEnv {
	return shellEnv{Home: filepath.ToSlash(p.home), User: loginName(p.home), Cwd: filepath.ToSlash(p.root)}
}

// protectedFor says whether an absolute, resolved path is protected
// (hardline.json protected) for this session's project, home and lembas's
// own folders, and by which entry. expand.go uses it for @path.
func (p *permissions) protectedFor(abs string) (rule string, ok bool) {
	return protectedPath(filepath.ToSlash(abs), filepath.ToSlash(p.root), filepath.ToSlash(p.home), slashAll(p.lembasDirs))
}

func slashAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = filepath.ToSlash(s)
	}
	return out
}

// protectedReason is the person-readable reason of a protected entry.
func protectedReason(id string) string {
	h, err := loadHardline()
	if err == nil {
		for _, e := range h.Protected.Entries {
			if e.ID == id {
				return strings.TrimSuffix(e.Reason, ".")
			}
		}
	}
	return id
}

// covers says whether a rule's key names a tool: the tool itself, or a
// group of defaults.json keys (edit: every writing tool).
func ruleCovers(r permRule, tool string) bool {
	if r.Tool == tool || mcpRuleCovers(r.Tool, tool) {
		return true
	}
	return contains(theDefaults().Keys.Groups[r.Tool], tool)
}

// callPaths lists the paths a call touches, resolved; bash names none here
// (its words are judged in decideCommand).
func (p *permissions) callPaths(t *toolSpec, args json.RawMessage) []string {
	out, _ := p.callPathsErr(t, args)
	return out
}

// callPathsErr is callPaths with the first path that cannot be judged
// (hidden characters, too long, a symlink loop) as an error.
func (p *permissions) callPathsErr(t *toolSpec, args json.RawMessage) ([]string, error) {
	var a struct {
		Path  string `json:"path"`
		Input string `json:"input"`
	}
	json.Unmarshal(args, &a)
	var raw []string
	switch t.Name {
	case "apply_patch":
		raw = patchPaths(a.Input)
	case theArityShellTool():
		return nil, nil
	default:
		if !hasPathParam(t) {
			return nil, nil
		}
		raw = []string{a.Path}
	}
	var out []string
	var first error
	for _, r := range raw {
		if strings.TrimSpace(r) == "" {
			r = "."
		}
		abs, _, err := resolvePathErr(p.root, r)
		if err != nil && first == nil {
			first = errorf("%s: %w", r, err)
		}
		out = append(out, abs)
	}
	return out, first
}

// hasPathParam says whether a tool's parameters have a path.
func hasPathParam(t *toolSpec) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(t.Parameters, &s)
	_, ok := s.Properties["path"]
	return ok
}

// theArityShellTool is the shell tool's name (arity.json shell_tool).
//
//go:noinline
func theArityShellTool() string {
	if a, err := loadArity(); err == nil {
		return a.ShellTool
	}
	return "bash"
}

// modeEntry is what the mode does with a tool's risk, and its table entry.
func (p *permissions) modeEntry(t *toolSpec) (string, string) {
	if v, rule, ok := mcpModeEntry(p.mode(), t); ok {
		return v, rule
	}
	v := theSpec().Modes.Modes[p.mode()][t.Risk]
	if v == "" {
		v = "ask"
	}
	return v, fmt.Sprintf("modes.json %s.%s", p.mode(), t.Risk)
}

// decide applies the rules to one call.
func (p *permissions) decide(t *toolSpec, args json.RawMessage) decision {
	return p.decideJudged(t, args, nil)
}

// decideJudged is decide, setting *judged (when given) to the paths the
// call was judged by, resolved: the only ones its tool may act on
// (fs_nolinks.go).
func (p *permissions) decideJudged(t *toolSpec, args json.RawMessage, judged *[]string) decision {
	if p.broken != nil {
		return decision{Verdict: "deny", Rule: "config.yaml permissions", Reason: permText("rules_broken", "error", p.broken)}
	}
	if t.Name == "webfetch" {
		return p.decideWeb(t, args) // judged by host (web.go)
	}
	if t.Name == theArityShellTool() {
		var a struct {
			Command string `json:"command"`
		}
		json.Unmarshal(args, &a)
		return unsandboxedAsk(args, p.decideCommand(t, a.Command)) // sandbox.go: always asked
	}
	mv, mrule := p.modeEntry(t)
	paths, perr := p.callPathsErr(t, args)
	if judged != nil {
		*judged = paths
	}
	if perr != nil {
		return decision{Verdict: "deny", Rule: "hardline.json paths", Reason: permText("path_refused", "error", perr)}
	}
	if len(paths) == 0 {
		return p.decideTool(t, "", false, mv, mrule)
	}
	var first *decision
	var allowed []string
	for _, abs := range paths {
		if id, ok := p.protectedFor(abs); ok {
			shown := relPath(p.root, abs)
			if t.Risk != "read" {
				return decision{Verdict: "deny", Rule: "hardline.json protected " + id, Reason: permText("protected_write", "path", shown, "reason", protectedReason(id))}
			}
			if first == nil {
				first = &decision{Verdict: "ask", Rule: "hardline.json protected " + id, Reason: permText("protected_read", "path", shown, "reason", protectedReason(id))}
			}
			continue
		}
		if d, ok := p.toolWriteGuarded(t, abs); ok {
			return d // permission_floor_writes.go
		}
		inside := within(p.root, abs)
		rel := ""
		if inside {
			rel = relPath(p.root, abs)
		}
		d := p.decideTool(t, rel, !inside, mv, mrule)
		if !inside && d.Verdict == "allow" {
			d = decision{Verdict: "ask", Rule: "outside the project", Reason: permText("outside", "path", abs)}
		}
		if pat, ok := agentConfig(rel); ok && inside && t.Risk != "read" && d.Verdict != "deny" {
			// Asked in every mode, never remembered: see hardline.json paths.agent_config.
			d = decision{Verdict: "ask", Rule: "hardline.json agent_config " + pat, Reason: permText("agent_config", "path", rel, "reason", theAgentConfigReason())}
		} else if inside && t.Risk != "read" && d.Verdict != "deny" && gitConfigNamesPath(p.root, p.home, abs) {
			// What git's config names for git to run (husky's hooks, a
			// textconv's script): asked as the agent configuration is,
			// since the person's next commit would run it unseen.
			d = decision{Verdict: "ask", Rule: "sandbox.json git_config", Reason: permText("git_config_named", "path", rel)}
		}
		switch d.Verdict {
		case "deny":
			return d
		case "ask":
			if first == nil {
				first = &d
			}
		default:
			allowed = append(allowed, d.Rule)
		}
	}
	if first != nil {
		return *first
	}
	return decision{Verdict: "allow", Rule: strings.Join(uniq(allowed), "; ")}
}

// decideTool judges one call of a tool that is not the shell, for one path
// relative to the project (rel; empty with no path, or outside).
func (p *permissions) decideTool(t *toolSpec, rel string, outside bool, mv, mrule string) decision {
	if mv == "deny" {
		return decision{Verdict: "deny", Rule: mrule, Reason: loopText(theSpec().Loop.Permission, "mode_deny", "mode", p.mode(), "risk", t.Risk, "tool", t.Name)}
	}
	match := func(r sourcedRule) bool {
		if !ruleCovers(r.permRule, t.Name) {
			return false
		}
		if r.Pattern == "" {
			return true
		}
		return rel != "" && matchPathRule(r.permRule, rel)
	}
	for _, r := range p.deny {
		if match(r) {
			return decision{Verdict: "deny", Rule: r.label("deny"), Reason: permText("rule_deny", "rule", r.Text)}
		}
	}
	if t.Confirm == "always" {
		return decision{Verdict: "ask", Rule: "confirm: always", Reason: permText("confirm", "tool", t.Name)}
	}
	for _, r := range p.ask {
		if match(r) {
			return decision{Verdict: "ask", Rule: r.label("ask"), Reason: permText("rule_ask", "rule", r.Text)}
		}
	}
	if outside {
		return decision{Verdict: "allow"} // the caller asks
	}
	for _, r := range p.allowRules() {
		if match(r) {
			return decision{Verdict: "allow", Rule: r.label("allow")}
		}
	}
	return decision{Verdict: mv, Rule: mrule, Remember: mv == "ask"}
}

// allowRules is every rule that allows: defaults, config, then the always
// answers of the project and of the session.
func (p *permissions) allowRules() []sourcedRule {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]sourcedRule, 0, len(p.allow)+len(p.project)+len(p.session))
	out = append(out, p.allow...)
	out = append(out, p.project...)
	return append(out, p.session...)
}

// decideCommand judges a shell line: the floor first, then every simple
// command it runs; where no OS sandbox is in force, what it allows must be
// contained (permission_boundary.go).
func (p *permissions) decideCommand(t *toolSpec, line string) decision {
	return p.noSandboxCheck(line, p.decideLineAt(t, line, 0))
}

// decideLineAt is decideCommand for a line read at a depth of scripts (0:
// the call's own line).
func (p *permissions) decideLineAt(t *toolSpec, line string, depth int) decision {
	env := p.shellEnv()
	h, herr := loadHardline()
	if herr != nil {
		return decision{Verdict: "deny", Rule: "hardline.json", Reason: herr.Error()}
	}
	cmds, info, err := parseShellDirs(line, env)
	if err == nil {
		cmds = h.withWrittenScripts(cmds, env) // permission_heredoc.go
		cmds = h.loopVariants(line, cmds, env) // for f in a b: $f is a, then b (permission_floor_rules.go)
	}
	if d, ok := p.boundaryRefuses(line, cmds, err); ok {
		return d // fork loops, disk fills: refused in every mode (permission_boundary.go)
	}
	if hit := h.judge(line, cmds, err, env); hit != nil {
		if hit.Unsure {
			return p.unsureDecision(h, hit)
		}
		return decision{Verdict: "deny", Rule: "hardline.json " + hit.Rule,
			Reason: permText("floor", "reason", hit.Reason, "command", hit.Command, "rule", hit.Rule)}
	}
	if d, ok := p.boundaryFloor(h, line, cmds, err); ok {
		return d // permission_boundary.go, permission_winshell.go
	}
	if err != nil {
		// What was read before the part that cannot be spelled still
		// runs: a floor refusal or a secret sent in it is refused in
		// every mode, not asked (ssh host <<EOF with `cat ~/.ssh/id_rsa`).
		if part := parseShellPartial(line, env); len(part) > 0 {
			if hit := h.judge(line, part, nil, env); hit != nil && !hit.Unsure {
				return decision{Verdict: "deny", Rule: "hardline.json " + hit.Rule,
					Reason: permText("floor", "reason", hit.Reason, "command", hit.Command, "rule", hit.Rule)}
			}
			if d, ok := p.exfiltrates(h, part); ok {
				return d
			}
		}
		if p.headless {
			return decision{Verdict: "deny", Rule: "unparseable", Reason: permText("unparsed_headless", "error", err)}
		}
		if h.unsureVerdict(p.mode(), false) == "deny" {
			return decision{Verdict: "deny", Rule: "unparseable", Reason: permText("unparsed_refused", "error", err, "mode", p.mode())}
		}
		return decision{Verdict: "ask", Rule: "unparseable", Reason: permText("unparsed", "error", err)}
	}
	if d, ok := p.floorBeyondWords(h, cmds, env); ok {
		return d // permission_floor_writes.go
	}
	mv, mrule := p.modeEntry(t)
	if mv == "deny" {
		return decision{Verdict: "deny", Rule: mrule, Reason: loopText(theSpec().Loop.Permission, "mode_deny", "mode", p.mode(), "risk", t.Risk, "tool", t.Name)}
	}
	a, _ := loadArity()
	var parts []shellCmd
	var patterns []string
	for _, c := range cmds {
		if len(c.Words) == 0 && commandText(a, c) == "" {
			continue
		}
		parts = append(parts, c)
		if pat := alwaysPattern(c); pat != "" {
			patterns = append(patterns, pat)
		}
	}
	patterns = uniq(patterns)
	// Deny beats ask beats allow, across every part of the line.
	for _, c := range parts {
		for _, r := range p.deny {
			if ruleCovers(r.permRule, t.Name) && matchStrict(r.permRule, c) {
				return decision{Verdict: "deny", Rule: r.label("deny"), Reason: permText("rule_deny", "rule", r.Text)}
			}
		}
	}
	if t.Confirm == "always" {
		return decision{Verdict: "ask", Rule: "confirm: always", Reason: permText("confirm", "tool", t.Name)}
	}
	for _, c := range parts {
		for _, r := range p.ask {
			if ruleCovers(r.permRule, t.Name) && matchStrict(r.permRule, c) {
				return decision{Verdict: "ask", Rule: r.label("ask"), Reason: permText("rule_ask", "rule", r.Text)}
			}
		}
		if shown, id, ok := p.protectedOperand(c); ok {
			return decision{Verdict: "ask", Rule: "hardline.json protected " + id, Reason: permText("protected_command", "path", shown, "reason", protectedReason(id))}
		}
		if rel, pat, ok := p.writesAgentConfig(h, c); ok {
			return decision{Verdict: "ask", Rule: "hardline.json agent_config " + pat, Reason: permText("agent_config", "path", rel, "reason", theAgentConfigReason())}
		}
	}
	if d, ok := p.boundaryAsks(h, t, cmds, env, depth); ok {
		return d // permission_boundary.go
	}
	// A command run from an arbitrary folder, or as another user, is not
	// what an allow rule or always answer was given for: the mode decides.
	tainted := info.Privileged
	for _, d := range info.Dirs {
		if !contains(p.cmdDirs, d) {
			tainted = true
		}
	}
	var allowed []string
	all := len(parts) > 0 && !tainted
	if all {
		rules := p.allowRules()
		for _, c := range parts {
			r, ok := p.allowedBy(rules, t.Name, c)
			if !ok {
				all = false
				break
			}
			allowed = append(allowed, r.label("allow"))
		}
	}
	if all {
		return decision{Verdict: "allow", Rule: strings.Join(uniq(allowed), "; "), Patterns: patterns}
	}
	return decision{Verdict: mv, Rule: mrule, Remember: mv == "ask", Patterns: patterns}
}

// matchStrict is how deny and ask rules match: with the command's
// variables (X=1 curl) and without them, so that setting a variable never
// slips a command past a rule meant to stop it.
func matchStrict(r permRule, c shellCmd) bool {
	if matchCommandRule(r, c) {
		return true
	}
	if len(c.Assigns) == 0 {
		return false
	}
	bare := c
	bare.Assigns = nil
	return matchCommandRule(r, bare)
}

// allowedBy finds the allow rule covering one simple command. A command
// that writes a file by redirection is covered only by a rule that says
// so (its pattern holds ">"); the defaults and always answers cover it only
// when every path it names is inside the project, since "cat *" was meant
// for the project's files.
func (p *permissions) allowedBy(rules []sourcedRule, tool string, c shellCmd) (sourcedRule, bool) {
	writes := writesFile(c)
	widened := "" // an option that makes it more than the rule was for (boundary.json rule_widening)
	if b, err := loadBoundary(); err == nil {
		widened, _, _ = strings.Cut(b.widensRule(c), "=")
	}
	for _, r := range rules {
		if !ruleCovers(r.permRule, tool) || !matchCommandRule(r.permRule, c) {
			continue
		}
		if widened != "" && !strings.Contains(r.Pattern, widened) {
			continue
		}
		if writes && !strings.Contains(r.Pattern, ">") {
			continue
		}
		if r.Source != "config" && (p.namesOutside(c) || hasExpansion(c)) {
			continue
		}
		return r, true
	}
	return sourcedRule{}, false
}

// writesFile says whether a command redirects its output into a file.
func writesFile(c shellCmd) bool {
	h, err := loadHardline()
	a, err2 := loadArity()
	if err != nil || err2 != nil {
		return true
	}
	for _, r := range c.Redirs {
		op := strings.TrimLeft(r.Op, "0123456789")
		if !contains(h.PathClass.WriteRedirects, op) {
			continue
		}
		if (op == ">&" && isFdTarget(r.Target)) || contains(a.QuietTargets, r.Target) {
			continue
		}
		return true
	}
	return false
}

// pathWords are the words of a command that may name files: every word
// after the name that is not an option, and redirection targets.
func pathWords(c shellCmd) []string {
	var out []string
	for i, w := range c.Words {
		if i == 0 || w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		out = append(out, w)
	}
	for _, r := range c.Redirs {
		if !strings.Contains(r.Op, "<<") && !isFdTarget(r.Target) {
			out = append(out, r.Target)
		}
	}
	return out
}

// hasExpansion says whether a command's words still hold an expansion
// the parser could not know ($X from lembas's own environment): what such a
// word names is unknown, so the defaults and always answers leave it to the
// mode. A literal $ in quotes is read the same way, which only asks more.
func hasExpansion(c shellCmd) bool {
	for _, w := range c.Words[min(1, len(c.Words)):] {
		if strings.ContainsAny(w, "$`") {
			return true
		}
	}
	return false
}

// namesOutside says whether a command names a path outside the project.
// Words are judged as written (lexically): resolving symlinks for every
// word of every command would cost a system call each on every bash call.
func (p *permissions) namesOutside(c shellCmd) bool {
	for _, w := range pathWords(c) {
		if !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "~") && !strings.Contains(w, "..") {
			continue
		}
		if w == "/dev/null" {
			continue
		}
		if !within(p.root, p.lexicalPath(w)) {
			return true
		}
	}
	return false
}

// lexicalPath is a command's word as an absolute path, the way the shell
// would read it from the project folder, without touching the disk.
func (p *permissions) lexicalPath(w string) string {
	if w == "~" || strings.HasPrefix(w, "~/") {
		w = p.home + w[1:]
	}
	w = filepath.FromSlash(w)
	if !filepath.IsAbs(w) {
		w = filepath.Join(p.root, w)
	}
	return filepath.Clean(w)
}

// protectedOperand finds a protected path among the words of a command,
// as written and through the links they go through; making a symlink to
// a protected file names it, and so asks.
func (p *permissions) protectedOperand(c shellCmd) (shown, id string, ok bool) {
	keys := p.keyWords(c, true) // a key made, a public key read (permission_boundary.go)
	for _, w := range pathWords(c) {
		if len(w) > 4096 || keys[w] {
			continue
		}
		abs := p.lexicalPath(w)
		for _, sp := range p.spellings(p.root, w, true) { // through links too (permission_floor_writes.go)
			if id, ok := p.protectedFor(sp); ok {
				return relPath(p.root, sp), id, true
			}
		}
		if hasGlob(w) {
			if shown, id, ok := p.protectedMatch(abs); ok {
				return shown, id, true
			}
		}
	}
	return "", "", false
}

// protectedMatch looks for a protected file among what a pattern word
// (cat .e*) matches on disk. As in the shell, a * or ? at the start of a
// name does not match a leading dot.
func (p *permissions) protectedMatch(pattern string) (shown, id string, ok bool) {
	matches, _ := filepath.Glob(pattern)
	dotted := strings.HasPrefix(filepath.Base(pattern), ".")
	for i, m := range matches {
		if i >= 1000 {
			break
		}
		if !dotted && strings.HasPrefix(filepath.Base(m), ".") {
			continue
		}
		if id, ok := p.protectedFor(m); ok {
			return relPath(p.root, m), id, true
		}
	}
	return "", "", false
}

// refusal is the result text a refused call answers with.
func (p *permissions) refusal(t *toolSpec, d decision, ans approvalAnswer) string {
	texts := theSpec().Loop.Permission
	why := ans.Why
	switch {
	case ans.Choice == "":
		return d.Reason // refused by the rules; nobody was asked
	case why == "headless":
		if !d.Remember {
			// Not the mode's question: a wider mode would not help.
			return permText("headless_other", "reason", d.Reason)
		}
		return loopText(texts, "headless_ask", "tool", t.Name, "mode", p.mode(), "wider", theSpec().Modes.Wider[p.mode()])
	case why == "timeout":
		return loopText(texts, "timeout")
	case ans.Feedback != "":
		return loopText(texts, "denied_feedback", "feedback", ans.Feedback)
	}
	return loopText(texts, "denied")
}

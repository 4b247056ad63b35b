package main

// The boundary (harness/permission/boundary.json): checks run after the
// floor's that only ever add an ask or a refusal. git history a command
// would destroy is asked in every mode; a line whose writes land outside
// the writable roots is asked, as a file tool's write outside the project
// is; disk fills and fork loops are refused; a shell script the line runs
// from the project is read and judged as a line; and where no OS sandbox
// is in force, a command the floor cannot show reads only or stays inside
// the project is asked (refused in -p). The cmd.exe and PowerShell
// spellings are permission_winshell.go's.
//
// What a command writes is read once (commandWrites): the floor's
// guarded writes, the agent configuration check and the writable roots
// all use that one reading.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

type boundarySpec struct {
	About      string `json:"about"`
	GitHistory struct {
		About       string                     `json:"about"`
		Reason      string                     `json:"reason"`
		GlobalValue []string                   `json:"global_value_options"`
		ResetModes  []string                   `json:"reset_modes"`
		SameCommit  []string                   `json:"same_commit"`
		Subcommands map[string]gitHistoryEntry `json:"subcommands"`
		GitDirNames []string                   `json:"git_dir_names"`
		Deleters    []string                   `json:"deleters"`
		CodeMarkers []string                   `json:"code_markers"`
	} `json:"git_history"`
	Outside struct {
		About    string   `json:"about"`
		Reason   string   `json:"reason"`
		Listers  []string `json:"listers"`   // find DIR | xargs rm: the writer writes under DIR
		GitReads []string `json:"git_reads"` // git -C DIR SUB writes in DIR unless SUB is one of these
	} `json:"outside"`
	Writes struct {
		About    string              `json:"about"`
		Options  map[string][]string `json:"options"`
		GitOnly  map[string][]string `json:"git_subcommand_only"`
		Operands map[string]string   `json:"operands"`
		InPlace  map[string][]string `json:"in_place"`
		Extract  map[string][]string `json:"extract"`
	} `json:"writes"`
	Fills struct {
		About    string              `json:"about"`
		ID       string              `json:"id"`
		Reason   string              `json:"reason"`
		MaxBytes int64               `json:"max_bytes"`
		Sources  []string            `json:"endless_sources"`
		Endless  []string            `json:"endless_commands"`
		Streams  []string            `json:"stream_commands"`
		Limits   []string            `json:"limits"`
		Sized    map[string][]string `json:"sized"`
		Sparse   []string            `json:"sparse"`
	} `json:"fills"`
	ForkLoops forkLoopSpec `json:"fork_loops"`
	Windows   windowsSpec  `json:"windows"`
	Scripts   struct {
		About      string   `json:"about"`
		MaxBytes   int      `json:"max_bytes"`
		MaxDepth   int      `json:"max_depth"`
		Shells     []string `json:"shells"`
		ValueOpts  []string `json:"value_options"`
		Reason     string   `json:"reason"`
		Unreadable string   `json:"unreadable"`
		Make       makeSpec `json:"make"` // permission_boundary_make.go
		// PackageScripts: permission_boundary_npm.go
		PackageScripts packageScriptsSpec `json:"package_scripts"`
	} `json:"scripts"`
	NoSandbox struct {
		About     string   `json:"about"`
		Contained []string `json:"contained"`
		Reason    string   `json:"reason"`
		Headless  string   `json:"headless"`

		contained [][]string
	} `json:"no_sandbox"`
	RuleWidening struct {
		About   string              `json:"about"`
		Options map[string][]string `json:"options"`
		GitOnly map[string][]string `json:"git_subcommand_only"`
		Reason  string              `json:"reason"`
	} `json:"rule_widening"`
	Keys struct {
		About          string   `json:"about"`
		OpensslLocal   []string `json:"openssl_local"`
		OpensslOutputs []string `json:"openssl_outputs"`
		// OpensslKeyInputs: per openssl subcommand, the options naming a
		// key it reads to sign what it makes (req -key): not sent.
		OpensslKeyInputs map[string][]string `json:"openssl_key_inputs"`
		SSHPublic        []string            `json:"ssh_keygen_public"`
	} `json:"keys"`
}

// gitHistoryEntry is one subcommand of git_history.subcommands.
type gitHistoryEntry struct {
	Always  bool     `json:"always"`
	Options []string `json:"options"` // an option, or several (all needed) separated by spaces
	Words   []string `json:"words"`   // the words after the subcommand start so
	AnyWord []string `json:"any_word"`
}

var (
	boundaryOnce sync.Once
	boundaryVal  *boundarySpec
	boundaryErr  error
)

// loadBoundary reads boundary.json once, strictly.
func loadBoundary() (*boundarySpec, error) {
	boundaryOnce.Do(func() {
		b := &boundarySpec{}
		if err := decodeStrict(harnessFS, "harness/permission/boundary.json", b); err != nil {
			boundaryErr = err
			return
		}
		if b.GitHistory.Reason == "" || b.Outside.Reason == "" || b.Fills.Reason == "" || b.ForkLoops.Reason == "" || b.NoSandbox.Reason == "" || b.NoSandbox.Headless == "" || b.Scripts.MaxBytes <= 0 || b.Scripts.MaxDepth <= 0 || b.Fills.MaxBytes <= 0 {
			boundaryErr = errorf("harness/permission/boundary.json: every part needs its reason, and the limits must be above 0")
			return
		}
		for _, e := range b.NoSandbox.Contained {
			b.NoSandbox.contained = append(b.NoSandbox.contained, strings.Fields(e))
		}
		if err := b.Windows.compile(); err != nil {
			boundaryErr = errorf("harness/permission/boundary.json: %w", err)
			return
		}
		boundaryVal = b
	})
	return boundaryVal, boundaryErr
}

// theBoundary is loadBoundary for code that runs after TestHarness has
// proved the file good.
func theBoundary() *boundarySpec {
	b, err := loadBoundary()
	if err != nil {
		panic("harness: " + err.Error())
	}
	return b
}

// setSandbox tells the permissions whether an OS sandbox is in force for
// the session's commands: why is "" when one is, else why not (shown in
// the asks and refusals of no_sandbox).
func (p *permissions) setSandbox(why string) {
	p.mu.Lock()
	p.bare = why
	p.mu.Unlock()
}

// setSandboxLate sets what sandboxMissing asks at each decision that
// needs it: whether the sandbox in force confines too little to run
// unasked what the floor cannot read (sandboxWeakWhy). It is late so that
// a session that runs no command never pays the namespace probe.
func (p *permissions) setSandboxLate(f func() string) {
	p.mu.Lock()
	p.bareLate = f
	p.mu.Unlock()
}

// sandboxMissing is why no OS sandbox is in force, or "".
func (p *permissions) sandboxMissing() string {
	p.mu.Lock()
	bare, late := p.bare, p.bareLate
	p.mu.Unlock()
	if bare == "" && late != nil {
		// Asked each time (the namespace probe is made once and kept): a
		// world that failed to start leaves Landlock alone from then on.
		return late()
	}
	return bare
}

// sandboxWeakWhy is why a Landlock sandbox without a world confines too
// little to count as one for what auto runs unasked ("" when it does):
// with no user namespaces, Landlock and seccomp stop writes outside the
// writable roots, but credentials stay readable, /tmp and its Unix sockets
// are the person's, and a direct connection (the person's loopback
// services, any host) is not stopped — a script run by name would read a
// key and send it. The rule for no sandbox applies: what the floor
// cannot show is read-only or stays inside the project is asked.
func sandboxWeakWhy(sb *sandbox) string {
	if sb == nil || sb.probed().Kind != "landlock" {
		return ""
	}
	if ok, why := sb.namespaces(); !ok {
		if why == "" {
			why = "none here"
		}
		return sandboxText("weak_why", "why", strings.TrimSuffix(why, "."))
	}
	sb.worldMu.Lock()
	err := sb.worldErr
	sb.worldMu.Unlock()
	if err != nil && !sb.noWorld {
		return sandboxText("weak_why", "why", strings.TrimSuffix(err.Error(), "."))
	}
	return ""
}

// sandboxWhy says whether a session's sandbox is in force: "" when it is,
// else why not. A nil sandbox is none.
func sandboxWhy(sb *sandbox) string {
	if sb == nil {
		return "no sandbox was made for this session"
	}
	if p := sb.probed(); p.Kind == "" {
		if p.Why == "" {
			return "no sandbox on this system"
		}
		return strings.TrimSuffix(p.Why, ".")
	}
	return ""
}

// gitSplit splits a git command's words after git into its own options
// and the subcommand with its arguments.
func (b *boundarySpec) gitSplit(args []string) (global []string, sub string, rest []string) {
	i := 0
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		global = append(global, a)
		if contains(b.GitHistory.GlobalValue, a) && i+1 < len(args) {
			i++
			global = append(global, args[i])
		}
		i++
	}
	if i >= len(args) {
		return global, "", nil
	}
	return global, args[i], args[i+1:]
}

// hasGitOption says whether args hold an option, spelt alone, with a value
// after = or as part of a bundle of short options (-fu holds -f).
func hasGitOption(args []string, opt string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == opt || strings.HasPrefix(a, opt+"=") {
			return true
		}
		if len(opt) == 2 && opt[0] == '-' && opt[1] != '-' && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], opt[1]) >= 0 {
			return true
		}
	}
	return false
}

// gitHistory says what of git's history a git command would destroy, or "".
func (b *boundarySpec) gitHistory(c shellCmd) string {
	if commandName(firstWord(c)) != "git" {
		return ""
	}
	_, sub, rest := b.gitSplit(c.Words[1:])
	if sub == "" {
		return ""
	}
	gh := &b.GitHistory
	if sub == "reset" {
		mode := ""
		for _, m := range gh.ResetModes {
			if contains(rest, m) {
				mode = m
			}
		}
		if mode == "" {
			return ""
		}
		for _, a := range rest {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "-") {
				continue
			}
			if !contains(gh.SameCommit, a) {
				return "git reset " + mode + " " + a
			}
		}
		return ""
	}
	e, ok := gh.Subcommands[sub]
	if !ok {
		return ""
	}
	what := "git " + sub
	if e.Always {
		return what
	}
	for _, o := range e.Options {
		all := true
		for _, part := range strings.Fields(o) {
			all = all && hasGitOption(rest, part)
		}
		if all {
			return what + " " + o
		}
	}
	for _, w := range e.Words {
		ws := strings.Fields(w)
		if len(rest) >= len(ws) && strings.Join(rest[:len(ws)], " ") == w {
			return what + " " + w
		}
	}
	for _, a := range rest {
		for _, pre := range e.AnyWord {
			if strings.HasPrefix(a, pre) && len(a) > 1 {
				return what + " " + a
			}
		}
	}
	return ""
}

// gitDirWord says whether a word names the repository's own store (.git,
// its objects or refs) however spelt: ./.git, .git/, a/../.git, .GIT, .g*.
func (b *boundarySpec) gitDirWord(w string) bool {
	w = strings.ToLower(filepath.ToSlash(strings.Trim(w, `"'`)))
	for _, seg := range strings.Split(w, "/") {
		if seg == ".git" {
			return true
		}
		if strings.HasPrefix(seg, ".") && hasGlob(seg) {
			if ok, _ := filepath.Match(seg, ".git"); ok {
				return true
			}
		}
	}
	return false
}

// deletesGitDir says whether a command deletes or moves away the
// repository's store: a deleter naming it (rm -rf .git, find .git
// -delete, find . -name .git -exec rm -rf {} +, mv .git x), or code given
// to a program that names it beside a deletion (python -c
// "shutil.rmtree('.git')").
func (b *boundarySpec) deletesGitDir(c shellCmd, cwd, root string) string {
	if len(c.Words) == 0 {
		return ""
	}
	name := commandName(c.Words[0])
	gh := &b.GitHistory
	inGit := strings.Contains(strings.ToLower(filepath.ToSlash(cwd)), "/.git")
	if contains(gh.Deleters, name) && name != "git" {
		args := c.Words[1:]
		deletes := name != "find" && name != "rsync"
		if name == "find" {
			deletes = contains(args, "-delete")
			for i, a := range args {
				if (a == "-exec" || a == "-execdir" || a == "-ok") && i+1 < len(args) && contains([]string{"rm", "rmdir", "shred", "unlink", "mv"}, commandName(args[i+1])) {
					deletes = true
				}
			}
		}
		if name == "rsync" {
			deletes = anyIn(args, []string{"--delete", "--delete-before", "--delete-after", "--delete-during", "--remove-source-files"})
		}
		if !deletes {
			return ""
		}
		for _, a := range args {
			if inGit && !strings.HasPrefix(a, "-") && within(root, filepath.Join(cwd, a)) {
				return strings.Join(c.Words, " ")
			}
			v := a
			if _, after, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
				v = after
			}
			if b.gitDirWord(v) {
				return strings.Join(c.Words, " ")
			}
		}
		return ""
	}
	// Code handed to a program: a word with a deletion marker and .git.
	for _, w := range c.Words[1:] {
		lw := strings.ToLower(w)
		if !strings.Contains(lw, ".git") || !strings.ContainsAny(w, " ;()'\"") {
			continue
		}
		for _, m := range gh.CodeMarkers {
			if strings.Contains(lw, strings.ToLower(m)) && reGitInCode.MatchString(lw) {
				return strings.Join(c.Words, " ")
			}
		}
	}
	return ""
}

// reCmdSwitch is a cmd.exe switch: /s, /q, /a:h.
var reCmdSwitch = lazyRE(`^/[A-Za-z?](:.*)?$`)

// reGitInCode finds .git as a path in code: quoted, after a slash or a
// blank, followed by a quote, a slash, a blank or the end.
var reGitInCode = lazyRE(`(^|[\s'"/(,=])\.git($|[\s'"/),;])`)

// commandWrites is the one reading of what a command writes: the words
// naming files it writes, moves away or deletes (its write redirections'
// targets, the writers of the floor's system-file rules, dd of=, curl -o,
// wget -O, what mv moves away, tar -C, unzip -d, sed -i and perl -i's
// files, boundary.json writes). With meta, the files whose mode, owner
// or times it changes too (chmod, touch -d).
func (h *hardlineSpec) commandWrites(c shellCmd, meta bool) []string {
	var words []string
	for _, r := range c.Redirs {
		op := strings.TrimLeft(r.Op, "0123456789")
		if contains(h.PathClass.WriteRedirects, op) && !isFdTarget(r.Target) {
			words = append(words, r.Target)
		}
	}
	if len(c.Words) == 0 {
		return words
	}
	if rm, _, ok := h.gitCleanAsRm(c, nil, ""); ok {
		c = rm // git clean deletes where it runs (permission_floor_third.go)
	}
	name, args := commandName(c.Words[0]), c.Words[1:]
	if contains(h.WriteGuard.ModeCommands, name) && !meta {
		return words
	}
	b, err := loadBoundary()
	if err != nil {
		return words
	}
	bw := &b.Writes
	_, inPlaceCmd := bw.InPlace[name]
	for i := range h.Refuse {
		r := &h.Refuse[i]
		if !contains(r.Targets, "system_file") && !contains(r.Dests, "system_file") || !nameMatches(r.Commands, name) || inPlaceCmd {
			continue
		}
		if len(r.Args) > 0 && !anyIn(args, r.Args) {
			continue // awk -i inplace, not awk
		}
		flags, operands := h.options(name, args)
		miss := false
		for _, f := range r.Flags {
			miss = miss || !flags[f]
		}
		if miss {
			continue
		}
		if len(r.Dests) > 0 {
			words = append(words, destOperands(h, name, operands, args)...)
			if name == "mv" {
				words = append(words, sourceOperands(operands, args)...)
			}
		} else {
			words = append(words, operands...)
		}
	}
	if _, ok := h.CodeLater.WrittenThenRun.OutputOptions[name]; ok {
		out := map[string]bool{}
		h.noteWritten(shellCmd{Words: c.Words}, out) // curl -o f, wget -O f
		for w := range out {
			words = append(words, w)
		}
	}
	if contains([]string{"dd", "dcfldd", "dc3dd"}, name) {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				words = append(words, v)
			}
		}
	}
	if name == "ssh-keygen" && !anyIn(args, []string{"-l", "-lf", "-lv", "-lvf", "-y", "-e", "-i", "-B", "-Bf", "-F", "-R", "-L", "-Y", "-E"}) {
		for j, a := range args[:max(len(args)-1, 0)] {
			if a == "-f" {
				words = append(words, args[j+1]) // the key it makes
			}
		}
	}
	opts := bw.Options[name]
	sub := ""
	if name == "git" {
		_, sub, args = b.gitSplit(args)
	}
	for j := 0; j < len(args); j++ {
		a := args[j]
		for _, o := range opts {
			if only, ok := bw.GitOnly[o]; ok && name == "git" && !contains(only, sub) {
				continue
			}
			switch {
			case a == o && j+1 < len(args):
				words = append(words, args[j+1])
			case strings.HasPrefix(a, o+"=") && (strings.HasPrefix(o, "--") || name == "git"):
				words = append(words, a[len(o)+1:])
			case len(o) == 2 && o[1] != '-' && strings.HasPrefix(a, o) && len(a) > 2 && name != "git" && name != "openssl":
				words = append(words, a[2:])
			}
		}
	}
	if kind, ok := bw.Operands[name]; ok {
		_, operands := h.options(name, args)
		switch kind {
		case "all":
			words = append(words, operands...)
		case "rest":
			if len(operands) > 1 {
				words = append(words, operands[1:]...)
			}
		case "last":
			if len(operands) >= 2 {
				words = append(words, operands[len(operands)-1])
			}
		case "first":
			if len(operands) > 0 {
				words = append(words, operands[0])
			}
		}
	}
	if ip, ok := bw.InPlace[name]; ok {
		inPlace := false
		for _, a := range args {
			for _, o := range ip {
				if a == o || (strings.HasPrefix(a, o) && (o == "-i" || strings.HasPrefix(o, "--"))) {
					inPlace = true
				}
			}
		}
		if inPlace {
			_, operands := h.options(name, args)
			if anyIn(args, []string{"-e", "--expression", "-f", "--file", "-pie", "-pe", "-ne"}) {
				words = append(words, operands...) // the script was given by option
			} else if len(operands) > 1 {
				words = append(words, operands[1:]...) // the first is the script
			}
		}
	}
	if name == "find" {
		deletes := contains(args, "-delete")
		for i, a := range args {
			if (a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir") && i+1 < len(args) && contains([]string{"rm", "rmdir", "shred", "unlink", "mv", "truncate", "chmod", "chown", "touch"}, commandName(args[i+1])) {
				deletes = true
			}
		}
		if deletes {
			words = append(words, findStarts(args)...)
		}
	}
	if ex, ok := bw.Extract[name]; ok {
		extracts := len(ex) == 0
		for k, a := range args {
			for _, o := range ex {
				if a == o || (len(o) == 2 && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], o[1]) >= 0) || (name == "tar" && k == 0 && !strings.HasPrefix(a, "-") && len(o) == 2 && strings.IndexByte(a, o[1]) >= 0) {
					extracts = true
				}
			}
		}
		if extracts && !anyOption(args, bw.Options[name]) {
			words = append(words, ".") // into the folder it runs in
		}
	}
	return words
}

// anyOption says whether args hold one of opts.
func anyOption(args, opts []string) bool {
	for _, a := range args {
		for _, o := range opts {
			if a == o || strings.HasPrefix(a, o+"=") || (len(o) == 2 && strings.HasPrefix(a, o) && len(a) > 2) {
				return true
			}
		}
	}
	return false
}

// writableRoots are the folders a command may write unasked: the project,
// the build caches and devices of sandbox.json; and the temp folders.
func (p *permissions) writableRoots() (roots, temps []string) {
	p.rootsOnce.Do(func() {
		sp := theSandboxSpec()
		p.roots = []string{p.root}
		for _, e := range sp.Caches {
			if r, ok := expandRoot(e, os.Getenv, p.home); ok {
				p.roots = append(p.roots, r, evalExisting(r))
			}
		}
		p.roots = append(p.roots, sp.Devices...)
		for _, e := range sp.Temp {
			if r, ok := expandRoot(e, os.Getenv, p.home); ok {
				p.temps = append(p.temps, r, evalExisting(r))
			}
		}
		if t := os.TempDir(); t != "" {
			p.temps = append(p.temps, t, evalExisting(t))
		}
		p.roots, p.temps = uniq(p.roots), uniq(p.temps)
	})
	return p.roots, p.temps
}

// inWritableRoots says whether an absolute path is inside the writable
// roots. A temp folder that holds the home folder counts only outside
// home: its other folders are not temporary.
func (p *permissions) inWritableRoots(abs string) bool {
	roots, temps := p.writableRoots()
	for _, r := range roots {
		if r != "" && within(r, abs) {
			return true
		}
	}
	for _, t := range temps {
		if t == "" || !within(t, abs) {
			continue
		}
		if p.home != "" && within(t, p.home) && within(p.home, abs) {
			continue
		}
		return true
	}
	return false
}

// writesOutside finds a write of a line (the one reading, metadata too)
// that lands outside the writable roots, read from the folder each
// command runs in, through the links on the way. Words only known at run
// time are left to the floor's unsure reading; devices to its rules.
func (p *permissions) writesOutside(h *hardlineSpec, b *boundarySpec, cmds []shellCmd, env shellEnv) (string, bool) {
	found := ""
	outside := func(cwd, w string) bool {
		for _, abs := range p.spellings(cwd, w, true) {
			if !p.inWritableRoots(abs) {
				found = abs
				return true
			}
		}
		return false
	}
	for i, c := range cmds {
		// find ~/Downloads -type f | xargs rm -f: a writer fed its
		// operands down a pipe writes under what the lister was given.
		if !c.Fed || i == 0 || len(c.Words) == 0 || len(h.commandWrites(shellCmd{Words: append(append([]string(nil), c.Words...), "x")}, true)) == 0 {
			continue
		}
		prev := cmds[i-1]
		if len(prev.Words) == 0 || !contains(b.Outside.Listers, commandName(prev.Words[0])) {
			continue
		}
		for _, w := range prev.Words[1:] {
			if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "(") || strings.HasPrefix(w, "!") {
				break // find's expression starts: its paths came first
			}
			if !hasUnknown(w) && outside(p.root, w) {
				return found, true
			}
		}
	}
	p.eachAt(h, cmds, env, func(c shellCmd, cwd string) bool {
		if len(c.Words) > 1 && commandName(c.Words[0]) == "git" {
			// git -C ../other commit: git writes in the folder it is sent to,
			// unless the subcommand only reads.
			global, sub, _ := b.gitSplit(c.Words[1:])
			if sub != "" && !contains(b.Outside.GitReads, sub) {
				for j, g := range global {
					v := ""
					switch {
					case (g == "-C" || g == "--git-dir" || g == "--work-tree") && j+1 < len(global):
						v = global[j+1]
					case strings.HasPrefix(g, "--git-dir="), strings.HasPrefix(g, "--work-tree="):
						_, v, _ = strings.Cut(g, "=")
					}
					if v != "" && !hasUnknown(v) && outside(cwd, v) {
						return false
					}
				}
			}
		}
		follow := !contains(h.WriteGuard.Unlinkers, firstWord(c))
		for _, w := range h.commandWrites(c, true) {
			if w == "" || hasUnknown(w) || w == "-" || len(w) > 4096 || strings.HasPrefix(w, "/dev/") || strings.HasPrefix(w, "/proc/self/fd/") {
				continue // devices: the floor's own rules judge those
			}
			if contains(b.Windows.DeleteCmd, strings.ToLower(firstWord(c))) && reCmdSwitch.MatchString(w) {
				continue // rd /s /q: cmd.exe's switches, not folders
			}
			if strings.HasPrefix(w, "~") && w != "~" && !strings.HasPrefix(w, "~/") {
				found = w // ~name: someone's home
				return false
			}
			for _, abs := range p.spellings(cwd, w, follow) {
				if !p.inWritableRoots(abs) {
					found = abs
					return false
				}
			}
		}
		return true
	})
	return found, found != ""
}

// boundaryAsks is what the boundary asks of a parsed line (after the
// floor and the deny rules): git history destroyed, the repository's
// store deleted, writes outside the writable roots, and what the scripts
// it runs hold. depth counts the scripts read on the way here.
func (p *permissions) boundaryAsks(h *hardlineSpec, t *toolSpec, cmds []shellCmd, env shellEnv, depth int) (decision, bool) {
	b, err := loadBoundary()
	if err != nil {
		return decision{Verdict: "deny", Rule: "boundary.json", Reason: err.Error()}, true
	}
	all := cmds
	if sub, changed := substituteAssigns(cmds, env); changed {
		all = append(append([]shellCmd(nil), cmds...), sub...)
	}
	ask := func(rule, reason string) (decision, bool) {
		return decision{Verdict: "ask", Rule: "boundary.json " + rule, Reason: reason}, true
	}
	for _, c := range all {
		if what := b.gitHistory(c); what != "" {
			return ask("git_history", fillPairs(b.GitHistory.Reason, "what", what))
		}
	}
	var found string
	p.eachAt(h, all, env, func(c shellCmd, cwd string) bool {
		found = b.deletesGitDir(c, cwd, p.root)
		return found == ""
	})
	if found != "" {
		return ask("git_history", fillPairs(b.GitHistory.Reason, "what", found))
	}
	if abs, ok := p.writesOutside(h, b, all, env); ok {
		return ask("outside", fillPairs(b.Outside.Reason, "path", abs))
	}
	if d, ok := p.judgeScripts(h, b, t, cmds, env, depth); ok {
		return d, true
	}
	return decision{}, false
}

// judgeScripts reads the shell scripts a line runs that are files on disk
// (bash x.sh, ./x.sh, source x.sh) and judges each as a line: a refusal or
// an ask of the floor or the boundary in it is the line's; a script that
// cannot be read is asked. The mode's own verdict on the script is not
// carried: the line's mode decides the line.
func (p *permissions) judgeScripts(h *hardlineSpec, b *boundarySpec, t *toolSpec, cmds []shellCmd, env shellEnv, depth int) (decision, bool) {
	var out *decision
	p.eachAt(h, cmds, env, func(c shellCmd, cwd string) bool {
		if d := p.judgeMakefile(b, c, cwd, env); d != nil {
			out = d // what make runs from its Makefile (permission_boundary_make.go)
			return false
		}
		if d := p.judgePackageScripts(b, c, cwd, env); d != nil {
			out = d // what npm runs from package.json (permission_boundary_npm.go)
			return false
		}
		script := b.scriptOf(c)
		if script == "" || hasUnknown(script) {
			return true
		}
		abs := p.pathAt(cwd, script)
		st, err := os.Stat(abs)
		if err != nil || st.IsDir() {
			return true // not there yet: the line writes it (runs-written-file), or it fails
		}
		shown := relPath(p.root, abs)
		unreadable := func(why string) bool {
			out = &decision{Verdict: "ask", Rule: "boundary.json scripts", Reason: fillPairs(b.Scripts.Unreadable, "script", shown, "error", why)}
			return false
		}
		if depth >= b.Scripts.MaxDepth {
			return unreadable("scripts run scripts too deep")
		}
		if st.Size() > int64(b.Scripts.MaxBytes) {
			return unreadable(fmt.Sprintf("larger than %d bytes", b.Scripts.MaxBytes))
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return unreadable(err.Error())
		}
		if !utf8.Valid(data) || strings.IndexByte(string(data), 0) >= 0 {
			return unreadable("not text")
		}
		text := string(data)
		if strings.HasPrefix(text, "#!") {
			first, _, _ := strings.Cut(text, "\n")
			if !b.shellShebang(first) {
				return true // another language: the interpreter's code is not read here
			}
		}
		d := p.decideLineAt(t, text, depth+1)
		if d.Rule == "unparseable" {
			if p.sandboxMissing() == "" {
				return true // the sandbox bounds it; the mode decides
			}
			d = decision{Verdict: "ask", Rule: "unparseable", Reason: d.Reason}
		}
		if d.Verdict == "allow" || d.Remember {
			return true
		}
		out = &decision{Verdict: d.Verdict, Rule: "boundary.json scripts (" + shown + "): " + d.Rule, Reason: fillPairs(b.Scripts.Reason, "script", shown, "reason", d.Reason)}
		return false
	})
	if out != nil {
		return *out, true
	}
	return decision{}, false
}

// scriptOf is the script file a command runs as a shell script, or "".
func (b *boundarySpec) scriptOf(c shellCmd) string {
	if len(c.Words) == 0 {
		return ""
	}
	name := c.Words[0]
	if strings.Contains(name, "/") && !strings.HasPrefix(name, "/usr/") && !strings.HasPrefix(name, "/bin/") {
		return name // ./x.sh, scripts/x.sh
	}
	if !contains(b.Scripts.Shells, commandName(name)) {
		return ""
	}
	args := c.Words[1:]
	if commandName(name) == "busybox" {
		if len(args) == 0 || !contains([]string{"sh", "ash"}, args[0]) {
			return ""
		}
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if contains(b.Scripts.ValueOpts, a) {
			i++
			continue
		}
		if a == "-c" || a == "-s" || a == "-i" {
			return "" // code given, or read from stdin: judged elsewhere
		}
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+") {
			continue
		}
		return a
	}
	return ""
}

// shellShebang says whether a #! line runs a shell of scripts.shells.
func (b *boundarySpec) shellShebang(line string) bool {
	f := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(f) == 0 {
		return true
	}
	prog := commandName(f[0])
	if prog == "env" {
		for _, w := range f[1:] {
			if !strings.HasPrefix(w, "-") {
				prog = commandName(w)
				break
			}
		}
	}
	return contains(b.Scripts.Shells, prog)
}

// boundaryRefuses is the boundary's refusals, read before the floor's
// (a fork loop in perl is refused, not unsure) and before the line is
// known to parse: fork loops and disk fills.
func (p *permissions) boundaryRefuses(line string, cmds []shellCmd, perr error) (decision, bool) {
	b, err := loadBoundary()
	h, herr := loadHardline()
	if err != nil || herr != nil {
		return decision{Verdict: "deny", Rule: "boundary.json", Reason: fmt.Sprint(err, herr)}, true
	}
	code := perr != nil || h.runsText(cmds) || definesFunction(cmds)
	if h.forkBomb(line) != nil && code {
		return decision{}, false // the floor's own fork-bomb rule refuses it
	}
	if hit := b.forkLoop(line, cmds, code); hit != nil {
		return b.refused(hit), true
	}
	if hit := b.diskFill(line, cmds); hit != nil {
		return b.refused(hit), true
	}
	return decision{}, false
}

// boundaryFloor is the rest of the boundary's part of the floor, read
// before the line is known to parse: the cmd.exe and PowerShell reading
// (permission_winshell.go).
func (p *permissions) boundaryFloor(h *hardlineSpec, line string, cmds []shellCmd, perr error) (decision, bool) {
	b, err := loadBoundary()
	if err != nil {
		return decision{Verdict: "deny", Rule: "boundary.json", Reason: err.Error()}, true
	}
	if hit := b.windowsLine(line, p.root, 0); hit != nil {
		return p.windowsDecision(h, hit), true
	}
	return decision{}, false
}

func (b *boundarySpec) refused(hit *hardlineHit) decision {
	return decision{Verdict: "deny", Rule: "boundary.json " + hit.Rule,
		Reason: permText("floor", "reason", hit.Reason, "command", hit.Command, "rule", hit.Rule)}
}

// reLoop finds a while or until loop's condition and body on a raw line.
var reLoop = lazyRE(`\b(while|until)\s+(.*?)\s*;?\s*\bdo\b(.*?)\bdone\b`)

// reForEver finds a for loop that never ends: for ((;;)).
var reForEver = lazyRE(`\bfor\s*\(\(\s*;\s*;\s*\)\)\s*;?\s*do\b(.*?)\bdone\b`)

// reBackground finds a command started in the background: a & that is
// not part of && or &> or >&.
var reBackground = lazyRE(`(^|[^&>])&($|[^&>])`)

// reFuncDef finds a function definition: name() { body } (group 1) or
// function name { body } (group 2), the body group 3.
var reFuncDef = lazyRE(`(?:([^\s(){}|&;<>]+)\s*\(\s*\)|function\s+([^\s(){}|&;<>]+)\s*(?:\(\s*\))?)\s*\{([^}]*)\}`)

// reQuoted is a quoted string on a raw line, taken out where the line's
// text is data (echo ':(){ :|:& };:' > notes.txt).
var reQuoted = lazyRE(`'[^']*'|"(?:[^"\\]|\\.)*"`)

// forkLoop finds a fork bomb beyond the floor's piped function: a
// function that starts itself in the background or twice, an endless loop
// that starts something in the background, interpreter code that forks
// in a loop. Where the line runs its text as code (code: it does not
// parse, runs a shell, defines a function), quoted text is read too.
func (b *boundarySpec) forkLoop(line string, cmds []shellCmd, code bool) *hardlineHit {
	fl := &b.ForkLoops
	hit := func(what string) *hardlineHit {
		return &hardlineHit{Rule: fl.ID, Reason: fl.Reason, Command: what}
	}
	// Every shell shape starts something in the background or a pipe.
	if strings.ContainsAny(line, "&|") {
		if what := fl.shellShape(line, code); what != "" {
			return hit(what)
		}
	}
	for _, c := range cmds {
		if len(c.Words) < 2 || contains([]string{"echo", "printf", "git", "grep", "rg", "cat"}, commandName(c.Words[0])) {
			continue // text, not code
		}
		for _, w := range c.Words[1:] {
			lw := strings.ToLower(w)
			forks, loops := false, false
			for _, f := range fl.ForkCode {
				forks = forks || strings.Contains(lw, strings.ToLower(f))
			}
			for _, l := range fl.LoopCode {
				loops = loops || strings.Contains(lw, l)
			}
			if forks && loops && strings.ContainsAny(w, "();{} ") && !strings.HasPrefix(w, "-") {
				return hit(strings.Join(c.Words, " "))
			}
		}
	}
	return nil
}

// forkLoopSpec is boundary.json fork_loops.
type forkLoopSpec struct {
	About      string   `json:"about"`
	ID         string   `json:"id"`
	Reason     string   `json:"reason"`
	Conditions []string `json:"endless_conditions"`
	ForkCode   []string `json:"fork_code"`
	LoopCode   []string `json:"loop_code"`
}

// shellShape finds a fork bomb's shell shape on a raw line: an endless
// loop that starts something in the background, a function that starts
// itself in the background or twice. Quoted text is data unless the line
// runs its text as code.
func (fl *forkLoopSpec) shellShape(line string, code bool) string {
	flat := line
	if !code {
		flat = reQuoted.get().ReplaceAllString(flat, "''")
	}
	flat = strings.NewReplacer("\n", ";", "\\", "", "'", "", "\"", "").Replace(flat)
	for _, m := range reLoop.get().FindAllStringSubmatch(flat, -1) {
		cond := strings.TrimSpace(m[2])
		endless := contains(fl.Conditions, cond)
		if m[1] == "until" {
			endless = cond == "false" || cond == "/bin/false" || cond == "! true"
		}
		if endless && reBackground.get().MatchString(m[3]) {
			return m[0]
		}
	}
	for _, m := range reForEver.get().FindAllStringSubmatch(flat, -1) {
		if reBackground.get().MatchString(m[1]) {
			return m[0]
		}
	}
	for _, m := range reFuncDef.get().FindAllStringSubmatch(flat, -1) {
		name, body := m[1]+m[2], m[3]
		calls := 0
		for _, f := range strings.FieldsFunc(body, func(r rune) bool { return strings.ContainsRune(" \t;|&(){}", r) }) {
			if f == name {
				calls++
			}
		}
		if calls >= 2 || (calls >= 1 && reBackground.get().MatchString(body)) {
			return m[0]
		}
	}
	return ""
}

// diskFill finds an endless or huge write to a file.
func (b *boundarySpec) diskFill(line string, cmds []shellCmd) *hardlineHit {
	f := &b.Fills
	hit := func(what string) *hardlineHit {
		return &hardlineHit{Rule: f.ID, Reason: f.Reason, Command: what}
	}
	limited := false
	for _, c := range cmds {
		if contains(f.Limits, commandName(firstWord(c))) && !overLimit(c, f.MaxBytes) {
			limited = true
		}
		for _, w := range c.Words {
			for _, l := range f.Limits {
				if strings.HasSuffix(l, "=") && strings.HasPrefix(w, l) {
					limited = true
				}
			}
		}
	}
	endless, writes := "", false
	for _, c := range cmds {
		if len(c.Words) == 0 {
			continue
		}
		name, args := commandName(c.Words[0]), c.Words[1:]
		if name == "dd" || name == "dcfldd" || name == "dc3dd" {
			src, of, count, bs := "", "", int64(-1), int64(512)
			for _, a := range args {
				k, v, _ := strings.Cut(a, "=")
				switch k {
				case "if":
					src = v
				case "of":
					of = v
				case "count":
					count = sizeValue(v, 1)
				case "bs", "obs":
					bs = sizeValue(v, 1)
				}
			}
			if of != "" && !hasUnknown(of) && !strings.HasPrefix(of, "/dev/") && (contains(f.Sources, src) || src == "") {
				if count < 0 || (bs > 0 && count > f.MaxBytes/bs) {
					return hit(strings.Join(c.Words, " "))
				}
			}
			continue
		}
		if opts, ok := f.Sized[name]; ok && !contains(f.Sparse, name) {
			for i, a := range args {
				for _, o := range opts {
					v := ""
					switch {
					case o == "" && !strings.HasPrefix(a, "-"):
						v = a
					case a == o && i+1 < len(args):
						v = args[i+1]
					case o != "" && strings.HasPrefix(a, o+"="):
						v = a[len(o)+1:]
					case len(o) == 2 && strings.HasPrefix(a, o) && len(a) > 2:
						v = a[2:]
					}
					if v != "" && sizeValue(strings.TrimPrefix(v, "+"), 1) > f.MaxBytes {
						return hit(strings.Join(c.Words, " "))
					}
				}
			}
		}
		if contains(f.Endless, name) {
			endless = name
		}
		if contains(f.Streams, name) {
			for _, a := range args {
				if contains(f.Sources, a) {
					endless = a
				}
			}
		}
		for _, r := range c.Redirs {
			op := strings.TrimLeft(r.Op, "0123456789")
			if op == "<" && contains(f.Sources, r.Target) {
				endless = r.Target
			}
			if (op == ">" || op == ">>" || op == ">|" || op == "&>" || op == "&>>") && !strings.HasPrefix(r.Target, "/dev/") && !isFdTarget(r.Target) {
				writes = true
			}
		}
		if name == "tee" || name == "sponge" {
			writes = true
		}
	}
	if endless != "" && writes && !limited {
		return hit(line)
	}
	return nil
}

// overLimit says whether a limiting command (head -c 1000000000000) lets
// more than max bytes through: then it limits nothing.
func overLimit(c shellCmd, max int64) bool {
	args := c.Words[min(1, len(c.Words)):]
	for i, a := range args {
		v := ""
		switch {
		case (a == "-c" || a == "--bytes") && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, "--bytes="):
			v = a[len("--bytes="):]
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			v = a[2:]
		}
		if v != "" && sizeValue(strings.TrimPrefix(v, "+"), 1) > max {
			return true
		}
	}
	return false
}

// sizeValue reads a size as dd, fallocate and truncate spell it: 100G,
// 1M, 10GiB, 4k, 2x512; -1 when it is not one.
func sizeValue(s string, unit int64) int64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return -1
	}
	if a, c, ok := strings.Cut(s, "x"); ok {
		x, y := sizeValue(a, unit), sizeValue(c, unit)
		if x < 0 || y < 0 {
			return -1
		}
		if x > 0 && y > (1<<62)/x {
			return 1 << 62
		}
		return x * y
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return -1
	}
	suf := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s[i:], "B"), "b"))
	suf = strings.TrimSuffix(suf, "I")
	mult := map[string]float64{"": float64(unit), "C": 1, "W": 2, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
	m, ok := mult[suf]
	if !ok {
		return -1
	}
	v := n * m
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

// mktempValue is the path a variable set from mktemp holds, as the floor
// reads it: a fresh name in the folder mktemp makes it in (-p DIR,
// --tmpdir=DIR, a template with a folder, else $TMPDIR or /tmp). ok is
// false for any other value.
func mktempValue(v string) (string, bool) {
	v = strings.TrimSpace(v)
	var inner string
	switch {
	case strings.HasPrefix(v, "$(") && strings.HasSuffix(v, ")"):
		inner = v[2 : len(v)-1]
	case strings.HasPrefix(v, "`") && strings.HasSuffix(v, "`") && len(v) > 1:
		inner = v[1 : len(v)-1]
	default:
		return "", false
	}
	f := strings.Fields(inner)
	if len(f) == 0 || commandName(f[0]) != "mktemp" || strings.ContainsAny(inner, "$`;|&<>(") {
		return "", false
	}
	dir, tmpl, dirGiven := "/tmp", "", false
	if t := os.Getenv("TMPDIR"); t != "" && filepath.IsAbs(t) {
		dir = filepath.ToSlash(filepath.Clean(t))
	}
	for i := 1; i < len(f); i++ {
		a := f[i]
		switch {
		case (a == "-p" || a == "--tmpdir") && i+1 < len(f):
			dir, dirGiven = f[i+1], true
			i++
		case strings.HasPrefix(a, "--tmpdir="):
			dir, dirGiven = a[len("--tmpdir="):], true
		case strings.HasPrefix(a, "-p") && len(a) > 2:
			dir, dirGiven = a[2:], true
		case a == "--suffix" && i+1 < len(f):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			tmpl = a
		}
	}
	if tmpl != "" && strings.Contains(tmpl, "/") && !dirGiven {
		return strings.ReplaceAll(tmpl, "X", "x"), true
	}
	if !strings.HasPrefix(dir, "/") {
		return "", false
	}
	name := "tmp.lembasmktemp"
	if tmpl != "" {
		name = strings.ReplaceAll(filepath.Base(tmpl), "X", "x")
	}
	return strings.TrimSuffix(dir, "/") + "/" + name, true
}

// widensRule names the option of a command that makes it do more than an
// allow rule for it was given for (git log --output=f, git diff
// --ext-diff, git -c core.pager=… log), or "".
func (b *boundarySpec) widensRule(c shellCmd) string {
	if len(c.Words) < 2 {
		return ""
	}
	name := commandName(c.Words[0])
	opts, ok := b.RuleWidening.Options[name]
	if !ok {
		return ""
	}
	args := c.Words[1:]
	sub := ""
	if name == "git" {
		var global []string
		global, sub, args = b.gitSplit(args)
		for _, g := range global {
			o, _, _ := strings.Cut(g, "=")
			if strings.HasPrefix(o, "-c") && !strings.HasPrefix(o, "--") {
				o = "-c"
			}
			if contains(opts, o) {
				return o
			}
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		o, _, _ := strings.Cut(a, "=")
		if only, ok := b.RuleWidening.GitOnly[o]; ok && name == "git" && !contains(only, sub) {
			continue
		}
		if contains(opts, o) {
			return o
		}
		if name == "sed" && !strings.HasPrefix(a, "-") && (sedRunsCode(a) || sedWrites(a)) {
			return a
		}
	}
	return ""
}

// sedWrites says whether a sed script writes a file (w, W, or the s
// command's w flag).
func sedWrites(code string) bool { return sedScriptHas(code, []string{"w", "W"}, 'w') }

// keyWords are the words of a command that name a key it makes or a
// public key it reads (openssl req -keyout k, ssh-keygen -lf k.pub): not
// a secret sent, nor (for a key made inside the project) a protected file
// read. A public key in a protected folder is still asked to read
// (protectedRead), but is no secret.
func (p *permissions) keyWords(c shellCmd, protectedRead bool) map[string]bool {
	b, err := loadBoundary()
	if err != nil || len(c.Words) < 2 {
		return nil
	}
	out := map[string]bool{}
	switch commandName(c.Words[0]) {
	case "openssl":
		if !contains(b.Keys.OpensslLocal, c.Words[1]) {
			return nil
		}
		for i, a := range c.Words[:len(c.Words)-1] {
			// A key made (-keyout), or a project key read to sign what
			// is made (openssl req -key dev.key -out dev.csr): the output
			// is public, the key's bytes go nowhere.
			if contains(b.Keys.OpensslOutputs, a) || contains(b.Keys.OpensslKeyInputs[c.Words[1]], a) {
				v := c.Words[i+1]
				if within(p.root, p.lexicalPath(v)) && !strings.Contains(strings.ToLower(v), ".git") {
					out[v] = true
				}
			}
		}
	case "ssh-keygen":
		if protectedRead {
			return nil // a .pub in a protected folder (~/.ssh) is still asked to read
		}
		public := false
		for _, a := range c.Words[1:] {
			public = public || contains(b.Keys.SSHPublic, a)
		}
		if !public {
			return nil
		}
		for _, a := range c.Words[1:] {
			if strings.HasSuffix(strings.ToLower(a), ".pub") {
				out[a] = true
			}
		}
	}
	return out
}

// localOpenssl says whether an openssl command only works on local files
// (openssl req, genpkey, x509…): not a sender.
func localOpenssl(c shellCmd) bool {
	b, err := loadBoundary()
	return err == nil && len(c.Words) > 1 && commandName(c.Words[0]) == "openssl" && contains(b.Keys.OpensslLocal, c.Words[1])
}

// containedCommand says whether one command is among no_sandbox.contained
// and writes only inside the writable roots (read from cwd).
func (p *permissions) containedCommand(h *hardlineSpec, b *boundarySpec, c shellCmd, cwd string) bool {
	if len(c.Words) == 0 {
		return p.writesInside(h, c, cwd)
	}
	words := append([]string{commandName(c.Words[0])}, c.Words[1:]...)
	if words[0] == "git" {
		global, sub, rest := b.gitSplit(words[1:])
		if len(global) > 0 && b.widensRule(c) != "" {
			return false // git -c, -C, --git-dir: not the project's git as it is
		}
		words = append([]string{"git", sub}, rest...)
	}
	if (words[0] == "git" || words[0] == "find") && b.widensRule(c) != "" {
		return false // find -exec, git diff --ext-diff, git log --output
	}
	if words[0] == "sed" {
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") && (sedRunsCode(w) || sedWrites(w)) {
				return false // sed 'e cmd', sed 'w f'
			}
		}
	}
	if words[0] == "env" && len(words) > 1 {
		return false // env X=1 cmd runs cmd
	}
	match := false
	for _, e := range b.NoSandbox.contained {
		if len(words) >= len(e) && strings.Join(words[:len(e)], " ") == strings.Join(e, " ") {
			match = true
			break
		}
	}
	return match && p.writesInside(h, c, cwd)
}

// writesInside says whether every write of a command lands in the
// writable roots.
func (p *permissions) writesInside(h *hardlineSpec, c shellCmd, cwd string) bool {
	for _, w := range h.commandWrites(c, true) {
		if strings.HasPrefix(w, "/dev/") {
			continue
		}
		if hasUnknown(w) {
			return false
		}
		for _, abs := range p.spellings(cwd, w, true) {
			if !p.inWritableRoots(abs) {
				return false
			}
		}
	}
	return true
}

// noSandboxCheck is the last word where no OS sandbox is in force: an
// allowed line runs only when the person's own rules allowed it or every
// command of it is contained; otherwise it is asked (refused headless).
func (p *permissions) noSandboxCheck(line string, d decision) decision {
	why := p.sandboxMissing()
	if why == "" || d.Verdict != "allow" || personAllowed(d.Rule) {
		return d
	}
	h, err := loadHardline()
	if err != nil {
		return d
	}
	b := theBoundary()
	env := p.shellEnv()
	ask := func(pattern string) decision {
		if p.headless {
			return decision{Verdict: "deny", Rule: "boundary.json no_sandbox", Reason: fillPairs(b.NoSandbox.Headless, "why", why, "pattern", pattern)}
		}
		return decision{Verdict: "ask", Rule: "boundary.json no_sandbox", Reason: fillPairs(b.NoSandbox.Reason, "why", why), Patterns: d.Patterns, Remember: true}
	}
	cmds, info, err := parseShellDirs(line, env)
	if err != nil {
		return ask(line)
	}
	if info.Privileged {
		return ask(line) // sudo, doas: as another user
	}
	all := cmds
	if sub, changed := substituteAssigns(cmds, env); changed {
		all = sub // a temp folder by variable is known by its value
	}
	var bad *shellCmd
	p.eachAt(h, all, env, func(c shellCmd, cwd string) bool {
		if !p.containedCommand(h, b, c, cwd) {
			bad = &c
			return false
		}
		return true
	})
	if bad == nil {
		return d
	}
	pat := alwaysPattern(*bad)
	if pat == "" {
		pat = strings.Join(bad.Words, " ")
	}
	return ask(pat)
}

// personAllowed says whether an allow decision's rule is the person's own
// (config.yaml, an always answer), not a default or the mode.
func personAllowed(rule string) bool {
	if rule == "" {
		return false
	}
	for _, part := range strings.Split(rule, "; ") {
		if !strings.HasPrefix(part, "config allow:") && !strings.HasPrefix(part, "always (") {
			return false
		}
	}
	return true
}

package main

import (
	"path"
	"slices"
	"strings"
)

// The floor's third look (hardline.json third_look): classes an outside
// corpus found missing, read by what the command does.

// thirdLookSpec is hardline.json third_look.
type thirdLookSpec struct {
	About      string `json:"about"`
	AliasWords struct {
		About string `json:"about"`
		Words string `json:"words"`
	} `json:"alias_words"`
	Loops struct {
		About       string   `json:"about"`
		MaxValues   int      `json:"max_values"`
		MaxVariants int      `json:"max_variants"`
		MaxLine     int      `json:"max_line"`
		Setters     []string `json:"setters"`
		Splits      string   `json:"splits"`
	} `json:"loops"`
	Fd struct {
		About        string   `json:"about"`
		Names        []string `json:"names"`
		Exec         []string `json:"exec_options"`
		Batch        []string `json:"batch_options"`
		ValueOptions []string `json:"value_options"`
		PathOptions  []string `json:"path_options"`
		Placeholders []string `json:"placeholders"`
	} `json:"fd"`
	GitClean struct {
		About          string   `json:"about"`
		Subcommand     string   `json:"subcommand"`
		Force          []string `json:"force"`
		DryRun         []string `json:"dry_run"`
		ValueOptions   []string `json:"value_options"`
		GlobalValue    []string `json:"global_value_options"`
		Folders        []string `json:"folder_options"`
		WorkTreeEnv    string   `json:"work_tree_env"`
		WorkTreeConfig string   `json:"work_tree_config"`
		RequireForce   string   `json:"require_force_config"`
		FalseValues    []string `json:"false_values"`
		As             []string `json:"as"`
	} `json:"git_clean"`
}

// gitCleanAsRm reads git clean as the deletion it is: every untracked
// file under its pathspecs, or under its work tree, goes. The work tree is
// where it runs (git -C dir), or --work-tree, GIT_WORK_TREE (given to the
// command or exported by the line, in exported) or core.worktree given
// with -c. A cd to home and git clean -fdx is rm -rf of what home holds.
// sure is whether it deletes whatever the person's git config says: -f,
// or -c clean.requireForce=false; without them (and without -n) it deletes
// where that config is already false (git config --global, an earlier
// line) or where -i is answered, so it is read as the rm only failing
// closed. ok is false for any other command, and for a dry run.
func (h *hardlineSpec) gitCleanAsRm(c shellCmd, exported map[string]string, home string) (rm shellCmd, sure, ok bool) {
	gc := &h.Third.GitClean
	if len(c.Words) < 2 || c.Words[0] != "git" || len(gc.As) == 0 {
		return c, false, false
	}
	tilde := func(v string) string { // an assignment's ~ is the shell's to expand
		if home != "" && (v == "~" || strings.HasPrefix(v, "~/")) {
			return home + v[1:]
		}
		return v
	}
	w := c.Words[1:]
	dir, tree := "", ""
	if v, ok := exported[gc.WorkTreeEnv]; ok {
		tree = tilde(v)
	}
	for _, a := range c.Assigns {
		if k, v, ok := strings.Cut(a, "="); ok && k == gc.WorkTreeEnv {
			tree = tilde(v)
		}
	}
	i := 0
	for i < len(w) && strings.HasPrefix(w[i], "-") {
		name, val, hasVal := strings.Cut(w[i], "=")
		if contains(gc.GlobalValue, name) && !hasVal {
			if i+1 >= len(w) {
				return c, false, false
			}
			val, hasVal = w[i+1], true
			i++
		}
		switch {
		case hasVal && name == "-C":
			if dir == "" || strings.HasPrefix(val, "/") {
				dir = val
			} else {
				dir = path.Join(dir, val)
			}
		case hasVal && contains(gc.Folders, name):
			tree = val
		case hasVal && name == "-c":
			k, v, _ := strings.Cut(val, "=")
			switch strings.ToLower(k) {
			case strings.ToLower(gc.WorkTreeConfig):
				tree = v
			case strings.ToLower(gc.RequireForce):
				if contains(gc.FalseValues, strings.ToLower(v)) {
					sure = true // git clean deletes with no -f
				}
			}
		}
		i++
	}
	if tree != "" {
		if dir == "" || strings.HasPrefix(tree, "/") {
			dir = tree
		} else {
			dir = path.Join(dir, tree)
		}
	}
	if i >= len(w) || w[i] != gc.Subcommand {
		return c, false, false
	}
	dry := false
	var paths []string
	rest := w[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--":
			paths = append(paths, rest[j+1:]...)
			j = len(rest)
		case contains(gc.ValueOptions, a):
			j++
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a, "=")
			sure = sure || contains(gc.Force, name)
			dry = dry || contains(gc.DryRun, name)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k, r := range a[1:] {
				o := "-" + string(r)
				sure = sure || contains(gc.Force, o)
				dry = dry || contains(gc.DryRun, o)
				if contains(gc.ValueOptions, o) {
					if k+2 == len(a) {
						j++ // the value is the next word
					}
					break
				}
			}
		default:
			paths = append(paths, a)
		}
	}
	if dry {
		return c, false, false
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	out := shellCmd{Words: append([]string(nil), gc.As...), Redirs: c.Redirs, Assigns: c.Assigns, Fed: c.Fed}
	for _, p := range paths {
		if dir != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
			p = path.Join(dir, p)
		}
		out.Words = append(out.Words, p)
	}
	return out, sure, true
}

// lineExports notes the variables an export (or declare -x) in a line
// gives the commands after it, for git clean's GIT_WORK_TREE.
func lineExports(c shellCmd, exported map[string]string) map[string]string {
	if len(c.Words) == 0 {
		return exported
	}
	switch c.Words[0] {
	case "export":
	case "declare", "typeset":
		if !slices.Contains(c.Words, "-x") {
			return exported
		}
	default:
		return exported
	}
	for _, w := range c.Words[1:] {
		if k, v, ok := strings.Cut(w, "="); ok && isShellName(k) {
			if exported == nil {
				exported = map[string]string{}
			}
			exported[k] = v
		}
	}
	return exported
}

// aliasGivenWords judges what an alias runs when it is used with words of
// its own: alias x='rm -rf'; x ~ runs rm -rf ~, which the value as written
// (rm -rf, read as a line of its own by parseShell) does not show. Each
// value of an alias the line defines is judged followed by third_look
// alias_words, operands only known when the line runs. This is the
// floor's reading, not the line's: parseShell returns only what the line
// spells, so every other caller (allow rules, the command shown) sees no
// command the line does not hold.
func (h *hardlineSpec) aliasGivenWords(cmds []shellCmd, env shellEnv) *hardlineHit {
	aw := h.Third.AliasWords.Words
	if aw == "" {
		return nil
	}
	for _, c := range cmds {
		if len(c.Words) == 0 || h.CodeLater.Deferred[c.Words[0]] != "values" {
			continue
		}
		for _, w := range c.Words[1:] {
			name, v, ok := strings.Cut(w, "=")
			if !ok || strings.HasPrefix(w, "-") || strings.TrimSpace(v) == "" || !usedWithWords(cmds, name) {
				continue
			}
			body := v + " " + aw
			sub, err := parseShell(body, env)
			if hit := h.judge(body, sub, err, env); hit != nil {
				return hit
			}
		}
	}
	return nil
}

// usedWithWords says whether the line runs name with words of its own.
// An alias the line defines and never uses so runs nothing of its own
// (a bash -c line starts no other shell that keeps it; a shell start-up
// file it could be written into is guarded).
func usedWithWords(cmds []shellCmd, name string) bool {
	for _, c := range cmds {
		if len(c.Words) > 1 && c.Words[0] == name {
			return true
		}
	}
	return false
}

// fdAsFind reads fd (fdfind) as the find it stands for: fd [pattern]
// [path]... -x cmd runs cmd on everything found under the paths (. when
// none is given), the path added when cmd has no placeholder of its own;
// -X runs it once with them all. So fd . ~ -x rm -rf is find ~ -exec rm
// -rf {} ;, and fd . ~ | xargs rm -rf is what find ~ | xargs rm -rf is.
// Every placeholder ({//} is the found file's folder) is read as {}, find's
// starting folders. ok is false for any other command.
func (h *hardlineSpec) fdAsFind(c shellCmd) (shellCmd, bool) {
	fd := &h.Third.Fd
	if len(c.Words) == 0 || !contains(fd.Names, c.Words[0]) {
		return c, false
	}
	var paths, execs []string
	pattern := false
	w := c.Words[1:]
	for i := 0; i < len(w); i++ {
		a := w[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case a == "--":
			for _, p := range w[i+1:] {
				if pattern {
					paths = append(paths, p)
				}
				pattern = true
			}
			i = len(w)
		case contains(fd.Exec, name) || contains(fd.Batch, name):
			end := ";"
			if contains(fd.Batch, name) {
				end = "+"
			}
			j := i + 1
			for j < len(w) && w[j] != ";" {
				j++
			}
			cmd := w[i+1 : j]
			if len(cmd) == 0 {
				i = j
				continue
			}
			execs = append(execs, "-exec")
			placed := false
			for _, x := range cmd {
				if contains(fd.Placeholders, x) {
					x, placed = "{}", true
				}
				execs = append(execs, x)
			}
			if !placed {
				execs = append(execs, "{}")
			}
			execs = append(execs, end)
			i = j
		case contains(fd.PathOptions, name):
			if !hasVal && i+1 < len(w) {
				val = w[i+1]
				i++
			}
			paths = append(paths, val)
		case contains(fd.ValueOptions, name):
			if !hasVal {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// a flag, or short flags run together (-HI)
		case !pattern:
			pattern = true
		default:
			paths = append(paths, a)
		}
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	out := shellCmd{Words: append(append([]string{"find"}, paths...), execs...), Redirs: c.Redirs, Assigns: c.Assigns, Fed: c.Fed}
	return out, true
}

package main

import (
	"path"
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
	GitClean struct {
		About        string   `json:"about"`
		Subcommand   string   `json:"subcommand"`
		Force        []string `json:"force"`
		DryRun       []string `json:"dry_run"`
		ValueOptions []string `json:"value_options"`
		GlobalValue  []string `json:"global_value_options"`
		Folders      []string `json:"folder_options"`
		As           []string `json:"as"`
	} `json:"git_clean"`
}

// gitCleanAsRm reads git clean -f (with -d, -x or not) as the deletion it
// is: every untracked file under its pathspecs, or under the folder it
// runs in (git -C dir, --work-tree), goes. A cd to home and git clean -fdx
// is rm -rf of what home holds. ok is false for any other command.
func (h *hardlineSpec) gitCleanAsRm(c shellCmd) (shellCmd, bool) {
	gc := &h.Third.GitClean
	if len(c.Words) < 2 || c.Words[0] != "git" || len(gc.As) == 0 {
		return c, false
	}
	w := c.Words[1:]
	dir := ""
	i := 0
	for i < len(w) && strings.HasPrefix(w[i], "-") {
		name, val, hasVal := strings.Cut(w[i], "=")
		if contains(gc.GlobalValue, name) && !hasVal {
			if i+1 >= len(w) {
				return c, false
			}
			val, hasVal = w[i+1], true
			i++
		}
		if hasVal && contains(gc.Folders, name) {
			if dir == "" || strings.HasPrefix(val, "/") {
				dir = val
			} else {
				dir = path.Join(dir, val)
			}
		}
		i++
	}
	if i >= len(w) || w[i] != gc.Subcommand {
		return c, false
	}
	force, dry := false, false
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
			force = force || contains(gc.Force, name)
			dry = dry || contains(gc.DryRun, name)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k, r := range a[1:] {
				o := "-" + string(r)
				force = force || contains(gc.Force, o)
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
	if !force || dry {
		return c, false
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
	return out, true
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
			_, v, ok := strings.Cut(w, "=")
			if !ok || strings.HasPrefix(w, "-") || strings.TrimSpace(v) == "" {
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

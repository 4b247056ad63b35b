package main

// Skills: a folder holding SKILL.md (front matter with name and
// description, then the instructions). Found in a trusted project's
// .agent/skills, .agents/skills and .claude/skills — in the working folder
// and every folder above it up to the instruction files' boundary, nearest
// first — then in the person's
// ~/.config/lembas/skills; the first of a name wins. Only names and
// descriptions reach the system prompt (under a size cap); skill_view loads
// a body, skill_manage writes one, and every skill is a slash command.

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// skill is one SKILL.md found.
type skill struct {
	Name        string
	Description string
	Dir         string // the skill's folder
	Path        string // its SKILL.md
	Where       string // project or user
	Body        string // the text after the front matter
}

var (
	reSkillOnce sync.Once
	reSkill     *regexp.Regexp
)

// validSkillName applies the spec's name rule.
func validSkillName(name string) bool {
	reSkillOnce.Do(func() { reSkill = regexp.MustCompile(theLibrarySpec().Skills.NameRule) })
	return reSkill.MatchString(name)
}

// parseFrontMatter splits "---\nkey: value\n---\nbody" into its keys and
// body. Values may be quoted; keys are lower-cased; a file without front
// matter is all body. Only one-line values are read: a skill's name and
// description are one line each.
func parseFrontMatter(data string) (map[string]string, string) {
	data = strings.ReplaceAll(data, "\r\n", "\n")
	data = strings.TrimPrefix(data, "\ufeff")
	if !strings.HasPrefix(data, "---\n") {
		return nil, data
	}
	rest := data[4:]
	end := strings.Index(rest, "\n---")
	if end < 0 {
		if strings.HasPrefix(rest, "---") {
			end = -1
		} else {
			return nil, data
		}
	}
	var head, body string
	if end == -1 {
		head, body = "", rest[3:]
	} else {
		head = rest[:end]
		body = rest[end+4:]
	}
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = ""
	}
	keys := map[string]string{}
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		keys[strings.ToLower(strings.TrimSpace(k))] = v
	}
	return keys, body
}

// skillFolders are the folders skills are looked for in, in order, with
// where each is: a trusted project's first — in every folder from the
// working folder up to the boundary instruction files stop at (a
// repository's root), nearest first, so a session started in a subfolder
// has the repository's skills and a nearer one of a name wins; a folder
// the person said not to trust gives none — then the person's.
func skillFolders(root string, trusted bool) (dirs, where []string) {
	ss := theLibrarySpec().Skills
	if trusted && root != "" {
		boundary := instructionBoundary(root)
		for dir := root; ; dir = filepath.Dir(dir) {
			if folderTrusted(root, dir) {
				for _, f := range ss.ProjectFolders {
					dirs = append(dirs, filepath.Join(dir, filepath.FromSlash(f)))
					where = append(where, "project")
				}
			}
			if dir == boundary || filepath.Dir(dir) == dir {
				break
			}
		}
	}
	dirs = append(dirs, filepath.Join(configDir(), ss.UserFolder))
	where = append(where, "user")
	return dirs, where
}

// discoverSkills lists the skills a session sees, sorted by name, each name
// once. A SKILL.md whose name breaks the rule, or with no description, is
// not a skill (the name may come from the folder when the front matter has
// none).
func discoverSkills(root string, trusted bool) []skill {
	ss := theLibrarySpec().Skills
	dirs, where := skillFolders(root, trusted)
	seen := map[string]bool{}
	var out []skill
	for i, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, ent := range entries {
			dir := filepath.Join(d, ent.Name())
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				continue
			}
			p := filepath.Join(dir, ss.File)
			sk, ok := readSkill(p, dir, where[i])
			if !ok || seen[sk.Name] {
				continue
			}
			seen[sk.Name] = true
			out = append(out, sk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// readSkill reads one SKILL.md.
func readSkill(p, dir, where string) (skill, bool) {
	ss := theLibrarySpec().Skills
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > int64(ss.MaxBodyBytes) {
		return skill{}, false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return skill{}, false
	}
	keys, body := parseFrontMatter(string(data))
	name := keys["name"]
	if name == "" {
		name = filepath.Base(dir)
	}
	desc := strings.TrimSpace(keys["description"])
	if !validSkillName(name) || desc == "" {
		return skill{}, false
	}
	if len(desc) > ss.MaxDescription {
		desc = cutUTF8(desc, ss.MaxDescription) + "…"
	}
	return skill{Name: name, Description: desc, Dir: dir, Path: p, Where: where, Body: strings.TrimSpace(body)}, true
}

// skillsPrompt is the skills' part of the system prompt: a head and one
// line per skill, stopping before prompt_max_bytes with a line saying how
// many more skills_list shows.
func skillsPrompt(root string) string {
	ss := theLibrarySpec().Skills
	all := discoverSkills(root, folderTrusted(root, root))
	if len(all) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(ss.Head)
	for i, sk := range all {
		row := "\n" + fillPairs(ss.Row, "name", sk.Name, "description", oneLineText(sk.Description))
		if b.Len()+len(row) > ss.PromptMaxBytes {
			b.WriteString("\n" + fillPairs(ss.Cut, "n", len(all)-i))
			break
		}
		b.WriteString(row)
	}
	return b.String()
}

// oneLineText folds newlines and runs of space.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// findSkill finds a skill a session sees by name.
//
//go:noinline
func findSkill(root string, trusted bool, name string) (skill, bool) {
	for _, sk := range discoverSkills(root, trusted) {
		if sk.Name == name {
			return sk, true
		}
	}
	return skill{}, false
}

// skillCommand is a skill run as /name: its body as the prompt, with what
// the person typed after it. A built-in, a terminal command or a custom
// command of the same name wins.
func skillCommand(opts expandOptions, name, args string) (expansion, bool) {
	if reservedCommand(name) || findCustomCommand(opts, name) != nil {
		return expansion{}, false
	}
	sk, ok := findSkill(opts.Root, opts.Trusted, name)
	if !ok {
		return expansion{}, false
	}
	ss := theLibrarySpec().Skills
	after := ""
	if args != "" {
		after = fillPairs(ss.CommandArguments, "arguments", args)
	}
	exp := expansion{Command: name, Kind: "skill", Args: args,
		Text: strings.TrimSpace(fillPairs(ss.Command, "name", sk.Name, "body", sk.Body, "arguments", after))}
	attachMentions(opts, &exp, args)
	return exp, true
}

// skillCommands are the skills as commands for a front end's list
// (ACP's available_commands_update, kind skill).
func skillCommands(root string) []skill {
	opts := defaultExpandOptions(root, false, folderTrusted(root, root))
	var out []skill
	for _, sk := range discoverSkills(root, opts.Trusted) {
		if !reservedCommand(sk.Name) && findCustomCommand(opts, sk.Name) == nil {
			out = append(out, sk)
		}
	}
	return out
}

func init() {
	sessionTools["skills_list"] = toolSkillsList
	sessionTools["skill_view"] = toolSkillView
	sessionTools["skill_manage"] = toolSkillManage
}

func (e *toolHost) trusted() bool { return folderTrusted(e.perm.root, e.perm.root) }

func toolSkillsList(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	all := discoverSkills(e.perm.root, e.trusted())
	if len(all) == 0 {
		return toolResult{Text: t.text("none")}
	}
	lines := []string{t.text("head", "n", len(all))}
	for _, sk := range all {
		lines = append(lines, t.text("row", "name", sk.Name, "where", sk.Where, "description", oneLineText(sk.Description)))
	}
	return toolResult{Text: strings.Join(lines, "\n")}
}

// skillFiles lists a skill's supporting files, relative to its folder.
func skillFiles(sk skill) []string {
	var out []string
	filepath.WalkDir(sk.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == sk.Path || len(out) >= 100 {
			return nil
		}
		rel, _ := filepath.Rel(sk.Dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out
}

func toolSkillView(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct{ Name, File string }
	json.Unmarshal(raw, &a)
	sk, ok := findSkill(e.perm.root, e.trusted(), strings.TrimSpace(a.Name))
	if !ok {
		return errResult(t.text("unknown", "name", a.Name))
	}
	files := skillFiles(sk)
	shown := skillShownPath(e.perm.root, sk.Path)
	if a.File != "" {
		p, inside := resolvePath(sk.Dir, a.File)
		st, err := os.Stat(p)
		if !inside || err != nil || !st.Mode().IsRegular() {
			return errResult(t.text("no_file", "name", sk.Name, "file", a.File, "files", strings.Join(files, ", ")))
		}
		if st.Size() > int64(theLibrarySpec().Skills.MaxBodyBytes) {
			return errResult(t.text("too_big", "path", a.File, "size", st.Size(), "max", theLibrarySpec().Skills.MaxBodyBytes))
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return errResult(err.Error())
		}
		return toolResult{Text: t.text("head", "name", sk.Name, "path", skillShownPath(e.perm.root, p)) + "\n" + string(data)}
	}
	data, _ := os.ReadFile(sk.Path)
	out := t.text("head", "name", sk.Name, "path", shown) + "\n" + strings.TrimSpace(string(data))
	if len(files) > 0 {
		out += "\n\n" + t.text("files", "files", strings.Join(files, ", "))
	}
	return toolResult{Text: out}
}

// skillShownPath names a skill's file without an absolute path: relative
// to the project, or under ~/.config/lembas for the person's.
func skillShownPath(root, p string) string {
	if within(root, p) {
		r, _ := filepath.Rel(root, p)
		return filepath.ToSlash(r)
	}
	if within(configDir(), p) {
		r, _ := filepath.Rel(configDir(), p)
		return "~/.config/lembas/" + filepath.ToSlash(r)
	}
	return filepath.Base(p)
}

// renderSkill writes a SKILL.md.
func renderSkill(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + oneLineText(desc) + "\n---\n\n" + strings.TrimSpace(body) + "\n"
}

// toolSkillManage creates, edits and deletes skills. The engine has asked
// the person per the mode (risk write); a project skill is never written
// into a project the person said not to trust.
func toolSkillManage(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Action, Name, Description, Body, Old, New, Place, File, Content string
	}
	json.Unmarshal(raw, &a)
	name := strings.TrimSpace(a.Name)
	if !validSkillName(name) {
		return errResult(t.text("bad_name", "name", name))
	}
	trusted := e.trusted()
	sk, found := findSkill(e.perm.root, trusted, name)
	switch a.Action {
	case "create":
		if found {
			return errResult(t.text("exists", "name", name, "path", skillShownPath(e.perm.root, sk.Path)))
		}
		if strings.TrimSpace(a.Description) == "" {
			return errResult(t.text("need_description"))
		}
		if strings.TrimSpace(a.Body) == "" {
			return errResult(t.text("need_body", "action", a.Action))
		}
		var dir string
		if a.Place == "user" {
			dir = filepath.Join(configDir(), theLibrarySpec().Skills.UserFolder, name)
		} else {
			if !trusted {
				return errResult(t.text("untrusted"))
			}
			dir = filepath.Join(e.perm.root, filepath.FromSlash(theLibrarySpec().Skills.ProjectFolders[0]), name)
		}
		p := filepath.Join(dir, theLibrarySpec().Skills.File)
		if err := writeFileAtomic(p, []byte(renderSkill(name, a.Description, a.Body)), 0o644); err != nil {
			return errResult(err.Error())
		}
		return toolResult{Text: t.text("created", "name", name, "path", skillShownPath(e.perm.root, p)), Paths: []string{p}}
	case "edit", "delete", "write_file":
		if !found {
			return errResult(t.text("unknown", "name", name))
		}
	default:
		return errResult(t.text("need_body", "action", a.Action))
	}
	if sk.Where == "project" && !trusted {
		return errResult(t.text("untrusted"))
	}
	shown := skillShownPath(e.perm.root, sk.Path)
	switch a.Action {
	case "delete":
		if err := os.RemoveAll(sk.Dir); err != nil {
			return errResult(err.Error())
		}
		return toolResult{Text: t.text("deleted", "name", name, "path", shown)}
	case "write_file":
		rel := filepath.Clean(filepath.FromSlash(a.File))
		p, inside := resolvePath(sk.Dir, rel)
		if a.File == "" || filepath.IsAbs(a.File) || !inside || p == sk.Dir || p == sk.Path {
			return errResult(t.text("bad_file", "file", a.File))
		}
		if err := writeFileAtomic(p, []byte(a.Content), 0o644); err != nil {
			return errResult(err.Error())
		}
		return toolResult{Text: t.text("file_written", "file", a.File, "name", name), Paths: []string{p}}
	}
	desc, body := sk.Description, sk.Body
	if strings.TrimSpace(a.Description) != "" {
		desc = a.Description
	}
	switch {
	case a.Old != "":
		if strings.Count(body, a.Old) != 1 {
			return errResult(t.text("old_not_found"))
		}
		body = strings.Replace(body, a.Old, a.New, 1)
	case strings.TrimSpace(a.Body) != "":
		body = a.Body
	}
	if err := writeFileAtomic(sk.Path, []byte(renderSkill(name, desc, body)), 0o644); err != nil {
		return errResult(err.Error())
	}
	return toolResult{Text: t.text("edited", "name", name, "path", shown), Paths: []string{sk.Path}}
}

package main

// Expanding what a person typed before it becomes a prompt: a leading
// /command becomes its text, and @path mentions attach files from the
// project. Every front end (the REPL, ACP, the link) goes through here so
// they expand the same way; nothing here writes to a terminal.
//
// The rules (seed acp.md, session/prompt; harness/commands.json):
//   - "/name rest" where name is a built-in (compact, plan, undo, review,
//     changelog, init, continue) or a custom command is that command; any
//     other /word is sent as text, "/" and all.
//   - "@path" at the start of a word names a file or folder; a space, a "#"
//     or a backslash in a name is escaped with a backslash (@my\ notes.md,
//     @a\#b.md); an unescaped "#" followed by digits is a line range
//     (@c.md#10-20). Only a path inside the project (symlinks followed)
//     that is not protected is attached; any other @word stays text and is
//     not read. Mentions in a command's own body are never expanded.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// expansion is a prompt after expansion.
type expansion struct {
	Text     string      // what the model is sent ("" for an action)
	Images   []imagePart // images attached by @path (vision models only)
	Attached []string    // project-relative paths that were attached
	Read     []string    // absolute paths of text files attached: they count as read
	Command  string      // the command's name when the text was one
	Kind     string      // builtin, custom or skill
	Action   string      // compact, undo or plan: an action that sends nothing
	Args     string      // what followed the command's name
	Mode     string      // the mode the command asks for (/plan, a custom command's mode:)
	Model    string      // a custom command's model: for its prompt only
}

// expandOptions is what expansion needs to know of the session.
type expandOptions struct {
	Root       string   // the project (resolved)
	Vision     bool     // the model can see images
	Trusted    bool     // the project's own .agent/commands are used only when trusted
	UserDir    string   // the person's commands folder (~/.config/lembas/commands)
	Home       string   // for protected paths under the home folder
	LembasDirs []string // lembas's own folders: never attached
	NoMentions bool     // attach no @path at all (the web UI's prompt into a project outside the device's roots)
}

// defaultExpandOptions are the options of a trusted project with the
// person's usual folders.
func defaultExpandOptions(root string, vision, trusted bool) expandOptions {
	return expandOptions{Root: root, Vision: vision, Trusted: trusted, UserDir: filepath.Join(configDir(), "commands"),
		Home: homeDir(), LembasDirs: []string{configDir(), stateDir()}}
}

// expandPrompt expands text typed in the project at root, as a trusted
// project: the entry point every front end shares.
func expandPrompt(root, text string, vision bool) (expansion, error) {
	return expandWith(defaultExpandOptions(root, vision, true), text)
}

var reCommandName = lazyRE(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// splitCommand reads a leading "/name rest". ok is false when the text does
// not start with a slash and a possible command name.
func splitCommand(text string) (name, args string, ok bool) {
	t := strings.TrimLeft(text, " \t")
	if !strings.HasPrefix(t, "/") {
		return "", "", false
	}
	end := strings.IndexFunc(t, unicode.IsSpace)
	if end < 0 {
		end = len(t)
	}
	name = t[1:end]
	if !reCommandName.MatchString(name) {
		return "", "", false
	}
	return name, strings.TrimSpace(t[end:]), true
}

// expandWith expands text under opts.
func expandWith(opts expandOptions, text string) (expansion, error) {
	cs := theSpec().Commands
	name, args, isCmd := splitCommand(text)
	if isCmd {
		if b, ok := cs.Builtin[name]; ok {
			return expandBuiltin(opts, name, b, args)
		}
		if c := findCustomCommand(opts, name); c != nil {
			return expandCustom(opts, c, args)
		}
		if exp, ok := skillCommand(opts, name, args); ok {
			return exp, nil // a skill is a command too (library_skills.go)
		}
	}
	exp := expansion{Text: text}
	attachMentions(opts, &exp, text)
	return exp, nil
}

// expandBuiltin turns a shared built-in into its prompt text or action.
func expandBuiltin(opts expandOptions, name string, b builtinCommand, args string) (expansion, error) {
	exp := expansion{Command: name, Kind: "builtin", Args: args, Mode: b.Mode}
	if b.Action == "always" || (b.Action == "without_task" && args == "") {
		exp.Action = name
		return exp, nil
	}
	var vars map[string]string
	after := ""
	if args != "" {
		after = "\n\n" + args
	}
	switch name {
	case "review":
		t := ""
		if args != "" {
			t = " (target: " + args + ")"
		}
		vars = map[string]string{"target": t}
	case "changelog":
		s := ""
		if args != "" {
			s = " since " + args
		}
		vars = map[string]string{"since": s}
	case "plan":
		vars = map[string]string{"arguments": args}
	default:
		vars = map[string]string{"arguments": after}
	}
	text, err := fill(theSpec().Prompts["commands/"+name+".md"], vars)
	if err != nil {
		return exp, errorf("prompts/commands/%s.md: %v", name, err)
	}
	exp.Text = strings.TrimSpace(text)
	attachMentions(opts, &exp, args)
	return exp, nil
}

// expandCustom fills a custom command's body with what followed its name.
func expandCustom(opts expandOptions, c *customCommand, args string) (expansion, error) {
	exp := expansion{Command: c.Name, Kind: "custom", Args: args, Model: c.Model}
	if c.Mode != "" {
		m, err := normMode(c.Mode)
		if err != nil {
			return exp, errorf("command %s (%s): mode: %v", c.Name, c.Path, err)
		}
		exp.Mode = m
	}
	body := strings.TrimSpace(c.Body)
	switch {
	case strings.Contains(body, "$ARGUMENTS"):
		body = strings.ReplaceAll(body, "$ARGUMENTS", args)
	case args != "":
		body += "\n\n" + args
	}
	exp.Text = body
	attachMentions(opts, &exp, args)
	return exp, nil
}

// customCommand is one .agent/commands/<name>.md or
// ~/.config/lembas/commands/<name>.md.
type customCommand struct {
	Name, Description, Mode, Model, Body, Path string
	Project                                    bool // from the project's folder
}

// reservedCommand says whether a name belongs to a built-in or to the
// terminal's own commands; a custom command of that name is not one.
func reservedCommand(name string) bool {
	cs := theSpec().Commands
	_, b := cs.Builtin[name]
	_, t := cs.Terminal[name]
	return b || t
}

// customCommands lists the custom commands, the project's first (only in a
// trusted folder), each name once, sorted by name.
func customCommands(opts expandOptions) []*customCommand {
	var dirs []string
	if opts.Trusted && opts.Root != "" {
		dirs = append(dirs, filepath.Join(opts.Root, ".agent", "commands"))
	}
	if opts.UserDir != "" {
		dirs = append(dirs, opts.UserDir)
	}
	seen := map[string]bool{}
	var out []*customCommand
	for i, d := range dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*.md"))
		sort.Strings(names)
		for _, p := range names {
			name := strings.TrimSuffix(filepath.Base(p), ".md")
			if seen[name] || !reCommandName.MatchString(name) || reservedCommand(name) {
				continue
			}
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			c := parseCommandFile(name, string(data))
			c.Path = p
			c.Project = opts.Trusted && i == 0
			seen[name] = true
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func findCustomCommand(opts expandOptions, name string) *customCommand {
	if reservedCommand(name) {
		return nil
	}
	for _, c := range customCommands(opts) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// parseCommandFile reads a command file: an optional front matter between
// "---" lines with description, mode and model, then the body.
func parseCommandFile(name, data string) *customCommand {
	c := &customCommand{Name: name}
	data = strings.ReplaceAll(data, "\r\n", "\n")
	body := data
	if strings.HasPrefix(data, "---\n") {
		rest := data[4:]
		end := strings.Index(rest, "\n---")
		if end >= 0 {
			for _, line := range strings.Split(rest[:end], "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				v = strings.Trim(strings.TrimSpace(v), `"'`)
				switch strings.TrimSpace(k) {
				case "description":
					c.Description = v
				case "mode":
					c.Mode = v
				case "model":
					c.Model = v
				}
			}
			body = rest[end+4:]
			if i := strings.IndexByte(body, '\n'); i >= 0 {
				body = body[i+1:]
			} else {
				body = ""
			}
		}
	}
	c.Body = body
	return c
}

// mention is one @path in a text.
type mention struct {
	Start, End int    // the bytes of the mention in the text, "@" included
	Path       string // the path with escapes undone
	From, To   int    // a line range (@p#10-20); 0 when none
	Dir        bool   // written with a trailing slash
	trail      int    // trailing punctuation bytes that may not belong to the path
}

// mentionStart says whether an "@" at byte i of text starts a mention: at
// the start, or after a space or an opening bracket or quote (so an e-mail
// address is not a mention).
func mentionStart(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return unicode.IsSpace(r) || strings.ContainsRune("([{\"'`", r)
}

const mentionTrailing = ".,;:!?)]}'\"`"

// parseMentions finds every @path mention in text, in order.
func parseMentions(text string) []mention {
	var out []mention
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || !mentionStart(text, i) {
			continue
		}
		m, ok := parseMention(text, i)
		if !ok {
			continue
		}
		out = append(out, m)
		i = m.End - 1
	}
	return out
}

// parseMention reads the mention whose "@" is at byte at.
func parseMention(text string, at int) (mention, bool) {
	m := mention{Start: at}
	var p strings.Builder
	j := at + 1
	trail := 0
	for j < len(text) {
		r, n := utf8.DecodeRuneInString(text[j:])
		if unicode.IsSpace(r) {
			break
		}
		if r == '\\' && j+n < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[j+n:])
			if r2 != '\n' && r2 != '\r' {
				p.WriteRune(r2)
				j += n + n2
				trail = 0
				continue
			}
		}
		if r == '#' {
			if from, to, end, ok := parseRange(text, j+1); ok {
				m.From, m.To = from, to
				j = end
				break
			}
		}
		if strings.ContainsRune(mentionTrailing, r) {
			trail += n
		} else {
			trail = 0
		}
		p.WriteRune(r)
		j += n
	}
	m.Path = p.String()
	m.End = j
	m.trail = trail
	if m.From > 0 {
		m.trail = 0
	}
	if strings.HasSuffix(m.Path, "/") && len(m.Path) > 1 {
		m.Dir = true
		m.Path = strings.TrimRight(m.Path, "/")
		if m.Path == "" {
			m.Path = "/"
		}
	}
	return m, m.Path != ""
}

// parseRange reads "10" or "10-20" at byte i, followed by the end of the
// word or only trailing punctuation. end is where the range's digits stop.
func parseRange(text string, i int) (from, to, end int, ok bool) {
	digits := func(k int) (int, int) {
		s := k
		for k < len(text) && text[k] >= '0' && text[k] <= '9' && k-s < 9 {
			k++
		}
		if k == s {
			return 0, s
		}
		v, _ := strconv.Atoi(text[s:k])
		return v, k
	}
	from, k := digits(i)
	if k == i || from == 0 {
		return 0, 0, 0, false
	}
	to = from
	if k < len(text) && text[k] == '-' {
		v, k2 := digits(k + 1)
		if k2 == k+1 {
			return 0, 0, 0, false
		}
		to, k = v, k2
	}
	for r := k; r < len(text); r++ {
		c := text[r]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
		if !strings.ContainsRune(mentionTrailing, rune(c)) {
			return 0, 0, 0, false
		}
	}
	if to < from {
		to = from
	}
	return from, to, k, true
}

// escapeMentionPath writes a path as a mention reads it back.
func escapeMentionPath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r == '\\' || r == '#' || unicode.IsSpace(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// resolveMention finds what a mention names: an existing path inside the
// project and not protected. Trailing punctuation ("see @a.go.") is tried
// without when the whole does not exist.
func resolveMention(opts expandOptions, m mention) (abs string, st os.FileInfo, ok bool) {
	try := []string{m.Path}
	if m.trail > 0 && m.trail < len(m.Path) {
		try = append(try, m.Path[:len(m.Path)-m.trail])
	}
	for _, p := range try {
		a, inside, err := resolvePathIn(opts.Root, opts.Home, p)
		if err != nil || !inside {
			continue
		}
		s, err := os.Stat(a)
		if err != nil {
			continue
		}
		if _, prot := protectedPath(a, opts.Root, opts.Home, opts.LembasDirs); prot {
			return "", nil, false
		}
		return a, s, true
	}
	return "", nil, false
}

// attachMentions attaches what the mentions in typed name, after exp.Text.
func attachMentions(opts expandOptions, exp *expansion, typed string) {
	ms := parseMentions(typed)
	if len(ms) == 0 || opts.NoMentions {
		return
	}
	as := theSpec().Commands.Attach
	done := map[string]bool{}
	var blocks []string
	for _, m := range ms {
		abs, st, ok := resolveMention(opts, m)
		if !ok {
			continue
		}
		key := fmt.Sprintf("%s#%d-%d", abs, m.From, m.To)
		if done[key] {
			continue
		}
		if len(done) == as.MaxAttachments {
			blocks = append(blocks, fillPairs(as.Texts["too_many"], "max", as.MaxAttachments))
			break
		}
		done[key] = true
		rel := relPath(opts.Root, abs)
		if b := attachOne(opts, exp, abs, rel, st, m); b != "" {
			blocks = append(blocks, b)
			exp.Attached = append(exp.Attached, rel)
		}
	}
	if len(blocks) > 0 {
		exp.Text = strings.TrimRight(exp.Text, "\n") + "\n\n" + strings.Join(blocks, "\n\n")
	}
	notePicked(opts.Root, exp.Attached...) // the file picker ranks them higher next time
}

// attachOne renders one attachment: a folder's listing, an image, or a
// file's lines numbered as read shows them.
func attachOne(opts expandOptions, exp *expansion, abs, rel string, st os.FileInfo, m mention) string {
	as := theSpec().Commands.Attach
	tx := as.Texts
	if st.IsDir() {
		return fillPairs(tx["dir"], "path", rel+"/", "listing", dirListing(abs, as.MaxDirEntries))
	}
	size := st.Size()
	if mime, ok := imageMimes[strings.ToLower(filepath.Ext(abs))]; ok {
		if !opts.Vision || size > int64(as.MaxImageBytes) {
			return fillPairs(tx["image_no_vision"], "path", rel, "size", size)
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return ""
		}
		exp.Images = append(exp.Images, imagePart{Mime: mime, Data: base64.StdEncoding.EncodeToString(data)})
		return fillPairs(tx["image"], "path", rel, "size", size)
	}
	if size > int64(as.MaxFileBytes) {
		return fillPairs(tx["too_big"], "path", rel, "size", size, "max", as.MaxFileBytes)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return ""
	}
	probe := data
	if len(probe) > 8000 {
		probe = probe[:8000]
	}
	if bytes.IndexByte(probe, 0) >= 0 {
		return fillPairs(tx["binary"], "path", rel, "size", size)
	}
	exp.Read = append(exp.Read, abs)
	if len(data) == 0 {
		return fillPairs(tx["file"], "path", rel, "content", tx["empty"])
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	from, to := 1, len(lines)
	if m.From > 0 {
		from, to = min(m.From, len(lines)), min(m.To, len(lines))
	}
	end := min(to, from-1+as.MaxLines)
	var b strings.Builder
	for i := from; i <= end; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\t')
		b.WriteString(strings.TrimSuffix(lines[i-1], "\r"))
		b.WriteByte('\n')
	}
	if end < to {
		b.WriteString(fillPairs(tx["more_lines"], "shown", end-from+1, "total", len(lines), "next", end+1) + "\n")
	}
	content := strings.TrimSuffix(b.String(), "\n")
	if m.From > 0 {
		return fillPairs(tx["file_range"], "path", rel, "from", from, "to", to, "content", content)
	}
	return fillPairs(tx["file"], "path", rel, "content", content)
}

// dirListing lists a folder one level deep, folders with a slash, sorted,
// leaving out .git.
func dirListing(abs string, max int) string {
	ents, err := os.ReadDir(abs)
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, e := range ents {
		if e.Name() == ".git" {
			continue
		}
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return theSpec().Commands.Attach.Texts["empty"]
	}
	if len(names) > max {
		more := len(names) - max
		names = append(names[:max], fillPairs(theSpec().Commands.Attach.Texts["more_entries"], "more", more))
	}
	return strings.Join(names, "\n")
}

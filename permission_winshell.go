package main

// The floor's reading of cmd.exe and PowerShell (boundary.json windows):
// on Windows the bash tool may hand a line to either, and the floor's
// shell parser reads bash, where a backslash escapes and %VAR% is text.
// So the raw line is read again here, backslashes kept, split at the
// separators both shells share, each command's name matched without case
// and with .exe dropped: deletion of home, a drive or the system folders
// is refused (elsewhere outside the project asked), formatting refused,
// download-and-run and encoded commands unsure. cmd /c and powershell
// -Command strings are read again as lines.

import (
	"encoding/base64"
	"strings"
	"unicode/utf16"
)

type windowsSpec struct {
	About         string              `json:"about"`
	DeleteCmd     []string            `json:"delete_cmd"`
	DeletePS      []string            `json:"delete_ps"`
	RecursePS     []string            `json:"recurse_ps"`
	RecurseCmd    []string            `json:"recurse_cmd"`
	DeleteNet     []string            `json:"delete_net"`
	HomeWords     []string            `json:"home_words"`
	SystemWords   []string            `json:"system_words"`
	SystemTrees   []string            `json:"system_trees"` // every folder under these is a system folder (C:\Windows\System32)
	SaveOptions   []string            `json:"save_options"` // a fetcher's option naming the file it saves (-OutFile a.ps1)
	SaveLast      []string            `json:"save_last"`    // fetchers whose last argument is the file they save (certutil -urlcache -f URL a.exe)
	Launchers     []string            `json:"launchers"`    // what runs the program its first argument names (& .\a.ps1, Start-Process a.exe)
	OutsideWords  []string            `json:"outside_words"`
	DeleteReason  string              `json:"delete_reason"`
	OutsideReason string              `json:"outside_reason"`
	FormatCmds    []string            `json:"format_commands"`
	FormatWords   map[string][]string `json:"format_words"`
	FormatReason  string              `json:"format_reason"`
	Fetchers      []string            `json:"fetchers"`
	Runners       []string            `json:"runners"`
	Loaders       []string            `json:"loaders"`
	EncodedOpts   []string            `json:"encoded_options"`
	ShellsPS      []string            `json:"shells_ps"`
	ShellsCmd     []string            `json:"shells_cmd"`
	PSCodeOpts    []string            `json:"ps_code_options"`
	PSValueOpts   []string            `json:"ps_value_options"` // PowerShell's options that take the next word as their value
	PowerCmds     []string            `json:"power_commands"`   // shut the machine down or restart it (Stop-Computer)
	PowerReason   string              `json:"power_reason"`
	RunReason     string              `json:"run_reason"`
}

func (w *windowsSpec) compile() error {
	if w.DeleteReason == "" || w.FormatReason == "" || w.RunReason == "" || w.OutsideReason == "" || w.PowerReason == "" {
		return errorf("windows needs delete_reason, outside_reason, format_reason and run_reason")
	}
	return nil
}

// winHit is what the Windows reading found: refuse, ask or unsure.
type winHit struct {
	Verdict string
	Rule    string
	Reason  string
	Command string
}

// winCommands splits a raw line into commands at ; & && || | and line
// ends, outside quotes, each a list of words with the quotes taken off
// and backslashes kept.
func winCommands(line string) [][]string {
	out, _ := winPipeline(line)
	return out
}

// winPipeline is winCommands with, for each command, whether a pipe feeds
// it (Get-ChildItem $HOME | Remove-Item -Recurse: the paths come down the
// pipe).
func winPipeline(line string) ([][]string, []bool) {
	out, fed, _ := winScan(line)
	return out, fed
}

// winScan is winPipeline with where each command starts in the line.
func winScan(line string) ([][]string, []bool, []int) {
	var out [][]string
	var fed []bool
	var starts []int
	piped := false
	var cur []string
	curStart := -1
	var word strings.Builder
	inWord := false
	quote := byte(0)
	flushWord := func() {
		if inWord {
			cur = append(cur, word.String())
			word.Reset()
			inWord = false
		}
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			out = append(out, cur)
			fed = append(fed, piped)
			starts = append(starts, curStart)
			cur = nil
		}
		curStart = -1
		piped = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if curStart < 0 && quote == 0 && !strings.ContainsRune(" \t\r;&|\n{}()", rune(c)) {
			curStart = i
		}
		if quote != 0 {
			if c == quote {
				quote = 0
			} else {
				word.WriteByte(c)
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
			inWord = true
		case ' ', '\t', '\r':
			flushWord()
		case ';', '&', '|', '\n':
			flushCmd()
			piped = c == '|' && i+1 < len(line) && line[i+1] != '|' && (i == 0 || line[i-1] != '|')
		case '{', '}':
			if c == '{' && i > 0 && line[i-1] == '$' {
				// ${env:NAME}: one word
				if j := strings.IndexByte(line[i:], '}'); j > 0 {
					word.WriteString(line[i : i+j+1])
					i += j
					continue
				}
			}
			flushCmd() // a block: its words are commands of their own
		case '(', ')':
			flushWord()
			if c == '(' {
				flushCmd() // a sub-expression: its words are a command of their own
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flushCmd()
	return out, fed, starts
}

// winName is a command's name as both shells match it: without case,
// folder or .exe.
func winName(w string) string {
	w = strings.ToLower(w)
	if i := strings.LastIndexAny(w, `\/`); i >= 0 {
		w = w[i+1:]
	}
	return strings.TrimSuffix(w, ".exe")
}

// winTarget is the class of a deletion's target word: home, system,
// outside, or "".
func (w *windowsSpec) winTarget(word string) string {
	lw := strings.ToLower(strings.Trim(word, " ,;"))
	lw = strings.TrimRight(lw, `\/*. `)
	if lw == "" {
		return "system" // \, /, C:\*, .\* read at a drive's root
	}
	lw = strings.ReplaceAll(lw, "${env:", "$env:")
	lw = strings.ReplaceAll(lw, "}", "")
	for _, t := range w.SystemTrees {
		if strings.HasPrefix(lw, t) && (len(lw) == len(t) || lw[len(t)] == '\\' || lw[len(t)] == '/') {
			return "system"
		}
	}
	for _, s := range w.SystemWords {
		s = strings.TrimRight(strings.ToLower(s), `\/`)
		if lw == s || lw == s+"\\*" || (len(lw) == 2 && lw[1] == ':') {
			return "system"
		}
		if s != "" && strings.HasPrefix(lw, s) && len(s) > 3 && !strings.ContainsAny(lw[len(s):], `\/`) {
			return "system"
		}
	}
	for _, h := range w.HomeWords {
		h = strings.ToLower(h)
		if lw == h || strings.TrimRight(lw, `\/`) == h {
			return "home"
		}
		// one level under home, or a home's folder itself (C:\Users\x)
		if strings.HasPrefix(lw, h) {
			rest := strings.Trim(lw[len(h):], `\/`)
			if (h == "c:\\users" || h == "c:/users") && !strings.ContainsAny(rest, `\/`) {
				return "home"
			}
			if rest == "" {
				return "home"
			}
			return "outside"
		}
	}
	for _, o := range w.OutsideWords {
		if strings.HasPrefix(lw, strings.ToLower(o)) {
			return "outside"
		}
	}
	if len(lw) >= 2 && lw[1] == ':' {
		return "outside" // an absolute drive path
	}
	if strings.HasPrefix(lw, `\\`) || strings.HasPrefix(lw, "%") || strings.HasPrefix(lw, "$env:") {
		return "outside"
	}
	return ""
}

// windowsLine reads a raw line as cmd.exe and PowerShell would; depth
// bounds the strings read again.
func (b *boundarySpec) windowsLine(line, root string, depth int) *winHit {
	w := &b.Windows
	if depth > 3 {
		return nil
	}
	low := strings.ToLower(line)
	unsure := func(what string) *winHit { return downloadRunHit(w.RunReason, what, line) }
	for _, l := range w.Loaders {
		if strings.Contains(low, strings.ToLower(l)) {
			return unsure(strings.TrimSpace(l))
		}
	}
	fetch, run := "", ""
	for _, f := range w.Fetchers {
		if containsWord(low, f) {
			fetch = f
		}
	}
	for _, r := range w.Runners {
		if containsWord(low, strings.ToLower(r)) {
			run = r
		}
	}
	if fetch != "" && run != "" {
		return unsure(fetch + " … " + run)
	}
	for _, d := range w.DeleteNet {
		if strings.Contains(low, d) {
			for _, word := range winCommands(line) {
				for _, x := range word {
					if t := w.winTarget(x); t == "home" || t == "system" {
						return &winHit{Verdict: "refuse", Rule: "windows-delete", Reason: fillPairs(w.DeleteReason, "what", x), Command: line}
					}
				}
			}
		}
	}
	var ask *winHit
	cmds, fed, starts := winScan(line)
	feeds := winFeeds(line, cmds, fed, starts) // permission_winblocks.go
	saved := map[string]bool{}                 // files a fetcher saved earlier in the line
	written := map[string]*string{}            // files the line writes: their text, nil when unknown
	assigned := map[string][]string{}          // $name = words: what a variable was given
	for ci, c := range cmds {
		name := winName(c[0])
		args := c[1:]
		if saved[winName(strings.TrimPrefix(c[0], "&"))] || (len(args) > 0 && contains(w.Launchers, name) && saved[winName(args[0])]) {
			return unsure(c[0] + ", a file the line downloads")
		}
		if s := winEvalRead(cmds, fed, starts, ci, line); s != "" {
			// iex (Get-Content x.ps1 -Raw), Get-Content x.ps1 | iex: the
			// file's text is run.
			if hit := b.winScript(s, written, root, depth); hit != nil {
				return hit
			}
		}
		if s := w.winRuns(c); s != "" {
			if hit := b.winScript(s, written, root, depth); hit != nil {
				return hit
			}
		}
		var fedBy []string
		if fed[ci] && ci > 0 {
			fedBy = cmds[ci-1]
		}
		noteAssigned(c, cmds, ci, assigned)
		if f, t, known := winWritten(c, fedBy); f != "" {
			if known {
				written[f] = &t
			} else {
				written[f] = nil
			}
		}
		if contains(w.Fetchers, name) {
			for i, a := range args {
				if i+1 < len(args) && contains(w.SaveOptions, strings.ToLower(a)) {
					saved[winName(args[i+1])] = true
				}
			}
			if contains(w.SaveLast, name) {
				if n := len(args); n > 1 {
					saved[winName(args[n-1])] = true
				}
			}
		}
		// A shell given a command line: read it again.
		if contains(w.ShellsCmd, name) {
			for i, a := range args {
				la := strings.ToLower(a)
				if la == "/c" || la == "/k" || la == "/r" {
					if hit := b.windowsLine(strings.Join(args[i+1:], " "), root, depth+1); hit != nil {
						return hit
					}
					break
				}
			}
		}
		if contains(w.ShellsPS, name) {
			skip := false
			for i, a := range args {
				la := strings.ToLower(a)
				if contains(w.EncodedOpts, la) {
					if i+1 < len(args) {
						if code, ok := decodePSCommand(args[i+1]); ok {
							if hit := b.windowsLine(code, root, depth+1); hit != nil {
								return hit
							}
						}
					}
					return unsure(name + " " + a)
				}
				if contains(w.PSValueOpts, la) {
					skip = true // -ExecutionPolicy Bypass: its value is no command
					continue
				}
				if skip {
					skip = false
					continue
				}
				if code := contains(w.PSCodeOpts, la); code || !strings.HasPrefix(la, "-") && !strings.HasPrefix(la, "/") {
					// -Command's string, or the first word that is no
					// option: Windows PowerShell runs the words from there
					// as a command (pwsh as a script's path; read either way).
					from := i
					if code {
						from = i + 1
					}
					if hit := b.windowsLine(strings.Join(args[from:], " "), root, depth+1); hit != nil {
						return hit
					}
					break
				}
			}
		}
		if contains(w.PowerCmds, name) {
			return &winHit{Verdict: "refuse", Rule: "windows-power", Reason: fillPairs(w.PowerReason, "what", strings.Join(c, " ")), Command: strings.Join(c, " ")}
		}
		if contains(w.FormatCmds, name) {
			need := w.FormatWords[name]
			hit := len(need) == 0
			for _, a := range args {
				for _, n := range need {
					if strings.Contains(strings.ToLower(a), n) {
						hit = true
					}
				}
			}
			if hit {
				return &winHit{Verdict: "refuse", Rule: "windows-format", Reason: fillPairs(w.FormatReason, "what", strings.Join(c, " ")), Command: strings.Join(c, " ")}
			}
		}
		recursive := false
		switch {
		case contains(w.DeleteCmd, name) && anyFold(args, w.RecurseCmd):
			recursive = true
		case contains(w.DeletePS, name) && anyFold(args, w.RecursePS):
			recursive = true
		case (name == "del" || name == "erase") && anyFold(args, []string{"/q", "/f"}):
			recursive = true // del /f /q C:\* empties a folder
		case name == "remove-item" || name == "ri":
			recursive = true // -Force alone deletes a folder's files, and asks only on a console
		case winDeleteMethod(c):
			recursive = true // $_.Delete($true), (Get-Item $HOME).Delete($true)
			args = c
		}
		if !recursive {
			continue
		}
		if fed[ci] && ci > 0 && !anyOperand(args) {
			// No path of its own: it deletes what the command before the
			// pipe lists (gci C:\Windows -Recurse | ri -Force), or the
			// value piped ($_ | Remove-Item).
			args = cmds[ci-1][1:]
			if strings.HasPrefix(cmds[ci-1][0], "$") {
				args = cmds[ci-1]
			}
		}
		if !anyOperand(args) && ci+1 < len(cmds) && winInParens(line, starts[ci+1]) {
			// Remove-Item (Get-ChildItem $HOME) -Recurse: its operand is
			// what the sub-expression lists.
			args = append(append([]string(nil), args...), cmds[ci+1]...)
		}
		args = winExpand(args, feeds[ci], assigned)
		for _, a := range args {
			if strings.HasPrefix(a, "-") || (strings.HasPrefix(a, "/") && len(a) <= 3) {
				continue
			}
			if inRootSpelt(a, root) {
				continue
			}
			switch w.winTarget(a) {
			case "home", "system":
				return &winHit{Verdict: "refuse", Rule: "windows-delete", Reason: fillPairs(w.DeleteReason, "what", a), Command: strings.Join(c, " ")}
			case "outside":
				if ask == nil {
					ask = &winHit{Verdict: "ask", Rule: "windows-delete-outside", Reason: fillPairs(w.OutsideReason, "what", a), Command: strings.Join(c, " ")}
				}
			}
		}
	}
	return ask
}

// anyOperand says whether a Windows command's arguments hold a word that
// is not an option (-Force, /q).
func anyOperand(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !(strings.HasPrefix(a, "/") && len(a) <= 3) {
			return true
		}
	}
	return false
}

// containsWord says whether low holds s as a word of its own (not inside
// another word: irm, not firmware).
func containsWord(low, s string) bool {
	for i := 0; ; {
		j := strings.Index(low[i:], s)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(low[j-1])
		after := j+len(s) >= len(low) || !isWordByte(low[j+len(s)]) || !isWordByte(s[len(s)-1])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// anyFold says whether args hold one of opts, without case.
func anyFold(args, opts []string) bool {
	for _, a := range args {
		la := strings.ToLower(a)
		for _, o := range opts {
			if la == o {
				return true
			}
		}
	}
	return false
}

// decodePSCommand reads powershell -EncodedCommand's value: base64 of
// UTF-16LE text.
func decodePSCommand(s string) (string, bool) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw)%2 != 0 {
		return "", false
	}
	u := make([]uint16, len(raw)/2)
	for i := range u {
		u[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
	}
	return string(utf16.Decode(u)), true
}

// windowsDecision is the session's verdict on a Windows reading's hit.
func (p *permissions) windowsDecision(h *hardlineSpec, hit *winHit) decision {
	switch hit.Verdict {
	case "refuse":
		return decision{Verdict: "deny", Rule: "boundary.json " + hit.Rule,
			Reason: permText("floor", "reason", hit.Reason, "command", hit.Command, "rule", hit.Rule)}
	case "unsure":
		return p.unsureDecision(h, &hardlineHit{Rule: hit.Rule, Reason: hit.Reason, Command: hit.Command, Unsure: true})
	}
	return decision{Verdict: "ask", Rule: "boundary.json " + hit.Rule, Reason: hit.Reason}
}

// inRootSpelt says whether a word, as Windows spells paths (either slash,
// any case), names a path inside the project root.
func inRootSpelt(word, root string) bool {
	if root == "" {
		return false
	}
	w := strings.ToLower(strings.ReplaceAll(word, "\\", "/"))
	r := strings.ToLower(strings.TrimSuffix(strings.ReplaceAll(root, "\\", "/"), "/"))
	return w == r || strings.HasPrefix(w, r+"/")
}

// downloadRunHit is windowsLine's finding that line fetches and runs
// what. Out of line: windowsLine finds it in four places.
//
//go:noinline
func downloadRunHit(tmpl, what, line string) *winHit {
	return &winHit{Verdict: "unsure", Rule: "windows-download-run", Reason: fillPairs(tmpl, "what", what), Command: line}
}

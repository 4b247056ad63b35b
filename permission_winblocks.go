package main

// The Windows reading's blocks and scripts (boundary.json windows): a
// PowerShell script block run once per item a pipeline or a loop hands it
// (Get-ChildItem $HOME | ForEach-Object { Remove-Item $_ -Recurse }, the
// % alias, foreach ($f in …) { … }) deletes what was listed, so $_, $PSItem
// and the loop's variable in it stand for the lister's words; and a script
// the line writes (Set-Content, Out-File, echo … >) or finds on disk and
// then runs (-File x.ps1, & .\x.ps1, . .\x.ps1, Start-Process) is read
// again as a line, or, when its text is only known when the line runs,
// is unsure.
//
// A worker (floor 3), beside permission_winshell.go.

import (
	"os"
	"path/filepath"
	"strings"
)

// winBlock is one { … } of a line and the words each variable stands for
// inside it.
type winBlock struct {
	open, close int
	vars        map[string][]string
}

// winBraces pairs the line's { } and ( ) outside quotes (${…} is a
// variable, not a block): each opening's position to its closing's.
func winBraces(line string) map[int]int {
	match := map[int]int{}
	var stack []int
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '{':
			if i > 0 && line[i-1] == '$' {
				if j := strings.IndexByte(line[i:], '}'); j > 0 {
					i += j
					continue
				}
			}
			stack = append(stack, i)
		case '(':
			stack = append(stack, i)
		case '}', ')':
			if n := len(stack); n > 0 {
				o := stack[n-1]
				if (line[o] == '{') == (c == '}') {
					match[o] = i
					stack = stack[:n-1]
				}
			}
		}
	}
	return match
}

// winForEach names the commands that run a block once per item piped in.
var winForEach = []string{"foreach-object", "%", "foreach"}

// winFeeds is, for each command winScan read, the words its pipeline and
// loop variables stand for ("$_", "$psitem", "$f" → words), or nil.
func winFeeds(line string, cmds [][]string, fed []bool, starts []int) []map[string][]string {
	match := winBraces(line)
	closeOf := map[int]int{}
	for o, c := range match {
		closeOf[c] = o
	}
	var blocks []winBlock
	varsAt := func(pos int) map[string][]string {
		var out map[string][]string
		for _, b := range blocks { // outer first: an inner block's variables win
			if b.open < pos && pos < b.close {
				if out == nil {
					out = map[string][]string{}
				}
				for k, v := range b.vars {
					out[k] = v
				}
			}
		}
		return out
	}
	expand := func(words []string, pos int) []string {
		vars := varsAt(pos)
		var out []string
		for _, w := range words {
			if ws, ok := winVarWords(w, vars); ok {
				out = append(out, ws...)
			} else {
				out = append(out, w)
			}
		}
		return out
	}
	for o := 0; o < len(line); o++ {
		c, ok := match[o]
		if !ok || line[o] != '{' {
			continue
		}
		k := o - 1
		for k >= 0 && (line[k] == ' ' || line[k] == '\t') {
			k--
		}
		if k >= 0 && line[k] == ')' {
			// foreach ($f in EXPR) { … }
			m, ok := closeOf[k]
			if !ok {
				continue
			}
			e := m - 1
			for e >= 0 && (line[e] == ' ' || line[e] == '\t') {
				e--
			}
			b := e
			for b >= 0 && isWordByte(lowerByte(line[b])) {
				b--
			}
			if strings.ToLower(line[b+1:e+1]) != "foreach" {
				continue
			}
			head := line[m+1 : k]
			i := strings.Index(strings.ToLower(head), " in ")
			if i < 0 {
				continue
			}
			name := strings.ToLower(strings.TrimSpace(head[:i]))
			var feed []string
			for _, w := range winCommands(head[i+4:]) {
				feed = append(feed, w...)
			}
			blocks = append(blocks, winBlock{open: o, close: c, vars: map[string][]string{name: expand(feed, o)}})
			continue
		}
		// LISTER | … | ForEach-Object { … }: the command the { ends.
		ci := -1
		for j, s := range starts {
			if s >= 0 && s < o {
				ci = j
			}
		}
		if ci < 0 || !fed[ci] || !contains(winForEach, winName(cmds[ci][0])) {
			continue
		}
		src := -1
		for j := ci - 1; j >= 0; j-- {
			inner := false
			for _, b := range blocks {
				if b.open < starts[j] && starts[j] < b.close && b.close < o {
					inner = true // a block of an earlier stage (Where-Object { … })
				}
			}
			if inner {
				continue
			}
			for oo, cc := range match {
				if line[oo] == '{' && oo < starts[j] && starts[j] < cc && cc < o {
					inner = true
				}
			}
			if inner || fed[j] {
				continue
			}
			src = j
			break
		}
		if src < 0 {
			continue
		}
		feed := expand(cmds[src], o)
		blocks = append(blocks, winBlock{open: o, close: c, vars: map[string][]string{"$_": feed, "$psitem": feed}})
	}
	out := make([]map[string][]string, len(cmds))
	for i, s := range starts {
		if s >= 0 {
			out[i] = varsAt(s)
		}
	}
	return out
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// winVarWords is what a word that is one of vars stands for: $_,
// $_.FullName, $($_.FullName), "$f" (the quotes already off).
func winVarWords(w string, vars map[string][]string) ([]string, bool) {
	if len(vars) == 0 {
		return nil, false
	}
	lw := strings.ToLower(w)
	lw = strings.TrimSuffix(strings.TrimPrefix(lw, "$("), ")")
	lw = strings.TrimPrefix(lw, "-literalpath:")
	lw = strings.TrimPrefix(lw, "-path:")
	name := lw
	if i := strings.IndexAny(lw, ".[\\/"); i > 0 {
		name = lw[:i]
	}
	v, ok := vars[name]
	return v, ok
}

// winWriters are the PowerShell commands that write a file, and whether
// the text they write is what the line spells (Add-Content appends to
// what was there).
var winWriters = map[string]bool{"set-content": true, "sc": true, "new-item": true, "ni": true, "out-file": true, "tee-object": true, "tee": true, "add-content": false, "ac": false}

// winWritten notes the file a command writes and its text when the line
// spells it ("" with known false otherwise): Set-Content x.ps1 'text',
// 'text' | Out-File x.ps1, echo text > x.ps1.
func winWritten(c []string, fedBy []string) (file, text string, known bool) {
	name := winName(c[0])
	args := c[1:]
	for i, a := range args {
		if (a == ">" || a == ">>") && i+1 < len(args) {
			return winName(args[i+1]), strings.Join(args[:i], " "), a == ">" && (name == "echo" || name == "write-output")
		}
		if (strings.HasPrefix(a, ">") || strings.HasPrefix(a, "1>")) && len(strings.TrimLeft(a, "1>")) > 0 {
			return winName(strings.TrimLeft(a, "1>")), strings.Join(args[:i], " "), !strings.Contains(a, ">>") && (name == "echo" || name == "write-output")
		}
	}
	whole, ok := winWriters[name]
	if !ok {
		return "", "", false
	}
	var pos []string
	value, hasValue := "", false
	for i := 0; i < len(args); i++ {
		la := strings.ToLower(args[i])
		switch {
		case (la == "-path" || la == "-literalpath" || la == "-filepath" || la == "-lp") && i+1 < len(args):
			file = args[i+1]
			i++
		case la == "-value" && i+1 < len(args):
			value, hasValue = args[i+1], true
			i++
		case (la == "-encoding" || la == "-itemtype" || la == "-type" || la == "-name") && i+1 < len(args):
			i++
		case strings.HasPrefix(la, "-"):
		default:
			pos = append(pos, args[i])
		}
	}
	if file == "" && len(pos) > 0 {
		file, pos = pos[0], pos[1:]
	}
	if !hasValue && len(pos) > 0 {
		value, hasValue = strings.Join(pos, " "), true
	}
	if !hasValue && fedBy != nil {
		value, hasValue = strings.Join(fedBy, " "), true
	}
	if file == "" {
		return "", "", false
	}
	return winName(file), value, whole && hasValue
}

// winRuns is the script file a command runs, as winName spells it: a
// PowerShell given -File (or a .ps1 as its first operand), a launcher's
// first operand, . or & with a path, or the command's own name.
func (w *windowsSpec) winRuns(c []string) (shown string) {
	name := winName(strings.TrimPrefix(c[0], "&"))
	args := c[1:]
	if contains(w.ShellsPS, name) {
		for i, a := range args {
			la := strings.ToLower(a)
			if (la == "-file" || la == "-f" || la == "-fi" || la == "-fil") && i+1 < len(args) {
				return args[i+1]
			}
			if strings.HasSuffix(la, ".ps1") && !strings.HasPrefix(la, "-") {
				return a
			}
		}
		return ""
	}
	if (name == "." || contains(w.Launchers, name)) && len(args) > 0 {
		return args[0]
	}
	if strings.HasSuffix(name, ".ps1") || strings.HasSuffix(name, ".bat") || strings.HasSuffix(name, ".cmd") {
		return strings.TrimPrefix(c[0], "&")
	}
	return ""
}

// winScript reads a script a command runs: the text the line wrote into
// it, or the file on disk under the project; unknown text is unsure.
func (b *boundarySpec) winScript(script string, written map[string]*string, root string, depth int) *winHit {
	w := &b.Windows
	key := winName(script)
	if t, ok := written[key]; ok {
		if t == nil {
			return &winHit{Verdict: "unsure", Rule: "windows-runs-written-file", Reason: fillPairs(w.RunReason, "what", script+", a file the line writes"), Command: script}
		}
		return b.windowsLine(*t, root, depth+1)
	}
	if root == "" || strings.ContainsAny(script, "$%") {
		return nil
	}
	p := filepath.FromSlash(strings.ReplaceAll(script, "\\", "/"))
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Size() > int64(b.Scripts.MaxBytes) {
		return nil // not there: it fails; too large: the sandbox-less ask stands
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	return b.windowsLine(string(data), root, depth+1)
}

// winExpand spells a deletion's words with what its block's variables
// and the line's assignments stand for ($_ in gci $HOME | % { … }, $items
// after $items = gci $HOME), a variable given a variable read again.
func winExpand(args []string, vars, assigned map[string][]string) []string {
	for round := 0; round < 3; round++ {
		var ex []string
		changed := false
		for _, a := range args {
			if ws, ok := winVarWords(a, vars); ok {
				ex, changed = append(ex, ws...), true
			} else if ws, ok := winVarWords(a, assigned); ok {
				ex, changed = append(ex, ws...), true
			} else {
				ex = append(ex, a)
			}
		}
		args = ex
		if !changed {
			break
		}
	}
	return args
}

// noteAssigned records $name = words (or = (sub-expression), the command
// read next).
func noteAssigned(c []string, cmds [][]string, ci int, assigned map[string][]string) {
	if len(c) < 2 || c[1] != "=" || !strings.HasPrefix(c[0], "$") {
		return
	}
	name := strings.ToLower(c[0])
	val := c[2:]
	if len(val) == 0 && ci+1 < len(cmds) {
		val = cmds[ci+1]
	}
	assigned[name] = append([]string(nil), val...)
}

// winDeleteMethod says whether a command calls a .Delete method
// ($_.Delete($true), (Get-Item $HOME).Delete($true)): a deletion of what
// its words name.
func winDeleteMethod(c []string) bool {
	for _, w := range c {
		lw := strings.ToLower(w)
		if strings.HasSuffix(lw, ".delete") && !strings.Contains(lw, "::") {
			return true
		}
	}
	return false
}

// winInParens says whether the command starting at pos starts right
// after a ( (spaces between).
func winInParens(line string, pos int) bool {
	i := pos - 1
	for i >= 0 && (line[i] == ' ' || line[i] == '\t') {
		i--
	}
	return i >= 0 && line[i] == '('
}

// winEvalRead is the file a command reads for Invoke-Expression to run:
// Get-Content (gc, cat, type) of it in parentheses right after iex, or
// piped into iex; "" otherwise.
func winEvalRead(cmds [][]string, fed []bool, starts []int, ci int, line string) string {
	c := cmds[ci]
	readers := []string{"get-content", "gc", "cat", "type"}
	evals := []string{"iex", "invoke-expression"}
	first := func(args []string) string {
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				return a
			}
		}
		return ""
	}
	if contains(readers, winName(c[0])) && ci > 0 && contains(evals, winName(cmds[ci-1][0])) && winInParens(line, starts[ci]) {
		return first(c[1:])
	}
	if contains(evals, winName(c[0])) && fed[ci] && ci > 0 && contains(readers, winName(cmds[ci-1][0])) {
		return first(cmds[ci-1][1:])
	}
	return ""
}

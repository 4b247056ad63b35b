package main

// Taking wrappers off a command (sudo, env, nice, timeout, xargs, sh -c,
// eval …) until the command they run is reached, as
// harness/permission/hardline.json "plain" says, and spelling words back
// as a line (shellQuote).

import (
	"io/fs"
	"path"
	"strings"
	"sync"
)

// wrapperSpec is how one wrapper's options are read (hardline.json plain.wrappers).
type wrapperSpec struct {
	ValueOptions []string `json:"value_options"`
	SplitOptions []string `json:"split_options"`
	StopOptions  []string `json:"stop_options"`
	Assignments  bool     `json:"assignments"`
	Positionals  int      `json:"positionals"`
	Default      []string `json:"default"`
	// OutputOptions name a file the wrapper writes (time -o): its value is
	// read as a > redirection of the command, so the floor, the protected
	// paths and the allow rules see the write.
	OutputOptions []string `json:"output_options"`
	// Feeds says the wrapper gives the command it runs more operands
	// at run time (xargs): the floor reads them as possibly anything.
	Feeds bool `json:"feeds"`
	// ReplaceOptions give the word that stands for what the wrapper is
	// fed (xargs -I X, -iX, --replace=X), in the same word or the next
	// (the next only for the first of them).
	ReplaceOptions []string `json:"replace_options"`
}

type plainSpec struct {
	About  string `json:"about"`
	Limits struct {
		Depth      int `json:"depth"`
		Commands   int `json:"commands"`
		BraceWords int `json:"brace_words"`
		Unwrap     int `json:"unwrap"`
		LineBytes  int `json:"line_bytes"`
	} `json:"limits"`
	Wrappers map[string]wrapperSpec `json:"wrappers"`
	Shells   struct {
		About        string   `json:"about"`
		Names        []string `json:"names"`
		ValueOptions []string `json:"value_options"`
		Sources      []string `json:"sources"`
		StdinFiles   []string `json:"stdin_files"`
		Fd0Files     []string `json:"fd0_files"` // of stdin_files, those that name stdin itself
		StdinShells  struct {
			About    string     `json:"about"`
			Commands [][]string `json:"commands"`
		} `json:"stdin_shells"`
	} `json:"shells"`
	Eval       []string `json:"eval"`
	SwitchUser struct {
		About          string   `json:"about"`
		Names          []string `json:"names"`
		CommandOptions []string `json:"command_options"`
	} `json:"switch_user"`
	Privileged  []string `json:"privileged"`
	ExecOptions struct {
		About    string              `json:"about"`
		Commands map[string][]string `json:"commands"`
	} `json:"exec_options"`
	Keywords struct {
		Open   map[string]string `json:"open"`
		Middle map[string]string `json:"middle"`
		Close  []string          `json:"close"`
		Header []string          `json:"header"`
		Skip   []string          `json:"skip"`
		Refuse []string          `json:"refuse"`
	} `json:"keywords"`
}

var (
	hardlineOnce sync.Once
	hardlineData *hardlineSpec
	hardlineErr  error
)

// loadHardline reads harness/permission/hardline.json once; every check
// after the first uses the parsed, compiled tables.
func loadHardline() (*hardlineSpec, error) {
	hardlineOnce.Do(func() {
		data, err := fs.ReadFile(harnessFS, "harness/permission/hardline.json")
		if err != nil {
			hardlineErr = errorf("reading the hardline spec: %w", err)
			return
		}
		var h hardlineSpec
		if err := decodeHarnessFile("harness/permission/hardline.json", data, &h, false); err != nil {
			hardlineErr = errorf("parsing %w", err)
			return
		}
		if err := applySecondLook(&h, h.Second.Adds); err != nil {
			hardlineErr = errorf("harness/permission/hardline.json: %w", err)
			return
		}
		if err := h.compile(); err != nil {
			hardlineErr = errorf("harness/permission/hardline.json: %w", err)
			return
		}
		hardlineData = &h
	})
	return hardlineData, hardlineErr
}

func loadPlainSpec() (*plainSpec, error) {
	h, err := loadHardline()
	if err != nil {
		return nil, err
	}
	return &h.Plain, nil
}

// commandName is the name a command word runs under: an absolute path's
// folder is dropped (/bin/rm is rm); a relative one (./rm) is kept, since
// it names the project's own program.
func commandName(s string) string {
	if strings.HasPrefix(s, "/") && s != "/" {
		b := path.Base(s)
		if b != "/" && b != "." {
			return b
		}
	}
	return s
}

// noteDir records the folder of a command name given by its full path.
func (p *shParser) noteDir(word, name string) {
	if p.info != nil && word != name {
		p.info.Dirs = append(p.info.Dirs, path.Dir(word))
	}
}

// suBody finds the line su runs: the word after -c (or --command=…, or a
// cluster of short options ending in c, as in -lc), wherever it stands
// among su's other words; none means su itself is the command.
func suBody(args []sword, opts []string) (string, bool) {
	for i, w := range args {
		a := w.s
		if a == "--" {
			break
		}
		for _, o := range opts {
			if strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"=") {
				return a[len(o)+1:], true
			}
		}
		cluster := len(a) > 2 && a[0] == '-' && a[1] != '-' && a[len(a)-1] == 'c'
		if (contains(opts, a) || cluster) && i+1 < len(args) {
			return args[i+1].s, true
		}
	}
	return "", false
}

// emit unwraps a command and records what it runs; a shell's -c body and
// eval's words are parsed as lines of their own instead.
func (p *shParser) emit(words []sword, assigns []string, redirs []shellRedir) error {
	p.fed, p.replace = false, ""
	hds := p.binding // this command's here-documents, bound below once it is recorded
	p.binding = nil
	words, assigns, outs, body, err := p.unwrap(words, assigns)
	if err != nil {
		return err
	}
	fed, replace := p.fed, p.replace
	redirs = append(redirs, outs...)
	k, _ := stdinRedir(redirs)
	piped, from := p.pipedIn, p.pipeFrom
	p.pipedIn, p.pipeFrom = false, -1
	if len(words) > 0 && body == nil && (p.readsScript(words) || p.deferredWords(words) || (p.startsShell(words) && (k >= 0 || piped))) {
		// A shell fed its script on stdin, or a program that hands what
		// it reads to one (ssh host, tmux): a here-string's text is known
		// and read as a line of its own, and so is a here-document's body
		// when the line has been read (readHeredocs); a pipe or a process
		// substitution makes the script only known when it runs.
		k, in := stdinRedir(redirs)
		shell := p.readsScript(words) || p.startsShell(words)
		op := strings.TrimPrefix(in.Op, "0")
		if p.readsScript(words) && !p.readsFd0(words) {
			// bash <(…), bash /dev/fd/3: its script is not what stdin
			// holds, whatever a here-document on fd 0 says.
			return errorf("%s runs a script that is only known when the line runs; run the commands themselves", words[0].s)
		}
		switch {
		case k >= 0 && op == "<<<" && shell:
			text := in.Target
			body = &text
		case k >= 0 && op == "<<<":
			sub, err := p.child(in.Target)
			if err != nil {
				return err
			}
			if err := sub.parseList(false); err != nil {
				return err
			}
		case k >= 0 && (op == "<<" || op == "<<-"):
			for n, j := 0, 0; j < len(redirs) && n < len(hds); j++ {
				if strings.Contains(redirs[j].Op, "<<") && !strings.HasSuffix(redirs[j].Op, "<<<") {
					if j == k && hds[n] < len(p.heredocs) {
						p.heredocs[hds[n]].script = true
					}
					n++
				}
			}
			if shell {
				empty := ""
				body = &empty // the shell's commands are its body's, read at the line's end
			}
		case shell && k < 0 && piped && p.pipedText(from, &body):
			// cat <<'EOF' | bash, echo 'ls' | sh: the text piped in is
			// known, and read as the shell's line (a here-document's when
			// the line has been read).
		case shell:
			return errorf("%s runs a script that is only known when the line runs; run the commands themselves", words[0].s)
		case k < 0 && piped:
			// ssh host, tmux fed a text the line spells out: read as a
			// line too (the command itself stays).
			var text *string
			if p.pipedText(from, &text) && text != nil && *text != "" {
				sub, err := p.child(*text)
				if err != nil {
					return err
				}
				if err := sub.parseList(false); err != nil {
					return err
				}
			}
		}
	}
	if body != nil {
		sub, err := p.child(*body)
		if err != nil {
			return err
		}
		if err := sub.parseList(false); err != nil {
			return err
		}
		words = nil
		if len(redirs) == 0 && len(assigns) == 0 {
			return nil
		}
	}
	if len(words) > 0 {
		if words[0].unknown {
			return errorf("the command name %q is only known when the line runs; write it plainly", words[0].s)
		}
		if words[0].glob && words[0].s != "[" {
			return errorf("the command name %q is a pattern; write it plainly", words[0].s)
		}
	}
	c := shellCmd{Words: make([]string, len(words)), Redirs: redirs, Assigns: assigns, Fed: fed, replace: replace, fn: p.currentFn(), loops: p.currentLoops()}
	for i, w := range words {
		c.Words[i] = w.s
	}
	if len(c.Words) > 0 {
		c.Words[0] = commandName(c.Words[0])
	}
	if len(*p.out) >= p.spec.Limits.Commands {
		return errorf("more than %d commands in one line; split it", p.spec.Limits.Commands)
	}
	*p.out = append(*p.out, c)
	p.bindHeredocs(hds, len(*p.out)-1)
	if len(c.Words) > 0 {
		if err := p.emitDeferred(c.Words); err != nil {
			return err
		}
		if opts, ok := p.spec.ExecOptions.Commands[c.Words[0]]; ok {
			return p.emitExec(words, opts)
		}
	}
	return nil
}

// pipedText finds the text the one command before a pipe writes when the
// line spells it out: cat (or cat -) given a here-document or a
// here-string, or echo with no options and known words. A here-document
// not yet read becomes a script one; one read already gives its body. The
// shell's body is set (empty for a pending here-document, whose commands
// are read with it).
func (p *shParser) pipedText(from int, body **string) bool {
	if from < 0 || from >= len(*p.out) {
		return false
	}
	src := (*p.out)[from]
	if len(src.Words) == 0 {
		return false
	}
	switch {
	case src.Words[0] == "cat" && (len(src.Words) == 1 || (len(src.Words) == 2 && src.Words[1] == "-")):
		k, in := stdinRedir(src.Redirs)
		if k < 0 {
			return false
		}
		switch strings.TrimPrefix(in.Op, "0") {
		case "<<<":
			if hasShellExpansion(in.Target) {
				return false
			}
			text := in.Target
			*body = &text
			return true
		case "<<", "<<-":
			for i := range p.heredocs {
				if p.heredocs[i].cmd == from && p.heredocs[i].redir == k {
					p.heredocs[i].script = true
					empty := ""
					*body = &empty
					return true
				}
			}
			if in.Expands {
				return false
			}
			text := in.Body
			*body = &text
			return true
		}
	case src.Words[0] == "echo":
		for _, w := range src.Words[1:] {
			if strings.HasPrefix(w, "-") || hasShellExpansion(w) || strings.Contains(w, "\\") {
				return false // options, escapes (dash's echo turns \n into a line end): not spelt here
			}
		}
		text := strings.Join(src.Words[1:], " ")
		*body = &text
		return true
	case src.Words[0] == "printf":
		// printf 'rm -rf ~\n' | sh: plain text, its escapes and %s
		// (printfText, permission_heredoc.go).
		if text, ok := printfText(src.Words[1:]); ok {
			*body = &text
			return true
		}
	}
	return false
}

// hasShellExpansion says whether a word as parsed still holds an
// expansion only known when the line runs.
func hasShellExpansion(w string) bool { return strings.ContainsAny(w, "$`") }

// bindHeredocs tells the here-documents of a command where it was
// recorded: the n-th of them is its n-th << or <<- redirection.
func (p *shParser) bindHeredocs(hds []int, at int) {
	n := 0
	for j, r := range (*p.out)[at].Redirs {
		if n >= len(hds) {
			break
		}
		if strings.Contains(r.Op, "<<") && !strings.HasSuffix(r.Op, "<<<") {
			if hds[n] < len(p.heredocs) {
				p.heredocs[hds[n]].cmd, p.heredocs[hds[n]].redir = at, j
			}
			n++
		}
	}
}

// stdinRedir is the redirection a command reads its input from, the last
// one of fd 0 (<, <<, <<-, <<<, <>), and its index; -1 for none.
func stdinRedir(redirs []shellRedir) (int, shellRedir) {
	k := -1
	for j, r := range redirs {
		op := strings.TrimPrefix(r.Op, "0")
		if op == "<" || op == "<<" || op == "<<-" || op == "<<<" || op == "<>" || op == "<&" {
			k = j
		}
	}
	if k < 0 {
		return -1, shellRedir{}
	}
	return k, redirs[k]
}

// deferredWords says whether a command hands its words to a program
// outside the line (hardline.json code_later.deferred "words": ssh host,
// tmux): what it reads on its input is a command line too.
func (p *shParser) deferredWords(words []sword) bool {
	h, err := loadHardline()
	return err == nil && h.CodeLater.Deferred[commandName(words[0].s)] == "words"
}

// emitDeferred reads the line an alias or a trap holds (hardline.json
// code_later.deferred) as a line of its own, so that code run later is
// judged now: alias x='rm -rf ~' is rm -rf ~.
func (p *shParser) emitDeferred(words []string) error {
	h, err := loadHardline()
	if err != nil {
		return err
	}
	var bodies []string
	switch h.CodeLater.Deferred[words[0]] {
	case "values":
		for _, w := range words[1:] {
			if _, v, ok := strings.Cut(w, "="); ok && !strings.HasPrefix(w, "-") {
				bodies = append(bodies, v)
			}
		}
	case "words":
		// tmux send-keys 'rm -rf ~' Enter, ssh localhost rm -rf ~: a
		// program outside the line's own process tree runs these words as
		// a command. Each word is read as a line, and so is everything
		// after the first word that is not an option (tmux's subcommand,
		// ssh's host: the command split over many words).
		first := -1
		for i, w := range words[1:] {
			if w == "--" || w == "" {
				continue
			}
			if !strings.HasPrefix(w, "-") || strings.Contains(w, " ") {
				bodies = append(bodies, w)
			}
			if first < 0 && !strings.HasPrefix(w, "-") {
				first = i + 1
			}
		}
		if first > 0 && first+1 < len(words) {
			bodies = append(bodies, strings.Join(words[first+1:], " "))
		}
	case "first":
		args := words[1:]
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		if len(args) > 1 && !strings.HasPrefix(args[0], "-") {
			bodies = append(bodies, args[0])
		}
	}
	for _, b := range bodies {
		sub, err := p.child(b)
		if err != nil {
			return err
		}
		if err := sub.parseList(false); err != nil {
			return err
		}
	}
	return nil
}

// emitExec records the commands find -exec (and the like) runs, each up
// to its ; or +.
func (p *shParser) emitExec(words []sword, opts []string) error {
	for i := 1; i < len(words); i++ {
		if !contains(opts, words[i].s) {
			continue
		}
		j := i + 1
		for j < len(words) && words[j].s != ";" && words[j].s != "+" {
			j++
		}
		if j > i+1 {
			if err := p.emit(append([]sword(nil), words[i+1:j]...), nil, nil); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// unwrap takes wrappers off until the command they run; body is set when
// the command is a shell given -c, or eval, whose text is parsed instead.
// A wrapper that runs nothing (sudo -v, env alone) is the command itself.
func (p *shParser) unwrap(words []sword, assigns []string) (_ []sword, _ []string, outs []shellRedir, _ *string, _ error) {
	for n := 0; n < p.spec.Limits.Unwrap && len(words) > 0; n++ {
		if words[0].unknown {
			return nil, nil, outs, nil, errorf("the command name %q is only known when the line runs; write it plainly", words[0].s)
		}
		name := commandName(words[0].s)
		p.noteDir(words[0].s, name)
		if contains(p.spec.Privileged, name) && p.info != nil {
			p.info.Privileged = true
		}
		if contains(p.spec.SwitchUser.Names, name) {
			if body, ok := suBody(words[1:], p.spec.SwitchUser.CommandOptions); ok {
				return nil, assigns, outs, &body, nil
			}
			return words, assigns, outs, nil, nil
		}
		if contains(p.spec.Eval, name) {
			var parts []string
			for _, w := range words[1:] {
				parts = append(parts, w.s)
			}
			body := strings.Join(parts, " ")
			return nil, assigns, outs, &body, nil
		}
		if contains(p.spec.Shells.Names, name) {
			if body, ok := shellBody(words[1:], p.spec.Shells.ValueOptions); ok {
				return nil, assigns, outs, &body, nil
			}
			return words, assigns, outs, nil, nil
		}
		ws, ok := p.spec.Wrappers[name]
		if !ok {
			return words, assigns, outs, nil, nil
		}
		p.fed = p.fed || ws.Feeds
		if r := replaceWord(ws, words[1:]); r != "" {
			p.replace = r
		}
		rest, more, files, ok, err := p.skipWrapper(ws, words[1:])
		for _, f := range files {
			outs = append(outs, shellRedir{Op: ">", Target: f})
		}
		if err != nil {
			return nil, nil, outs, nil, err
		}
		if !ok {
			return words, assigns, outs, nil, nil
		}
		if len(rest) == 0 {
			if len(ws.Default) == 0 {
				return words, assigns, outs, nil, nil
			}
			for _, d := range ws.Default {
				rest = append(rest, sword{s: d})
			}
		}
		assigns = append(assigns, more...)
		words = rest
	}
	if len(words) > 0 {
		if _, ok := p.spec.Wrappers[commandName(words[0].s)]; ok {
			return nil, nil, outs, nil, errorf("wrappers nested more than %d deep; unnest them", p.spec.Limits.Unwrap)
		}
	}
	return words, assigns, outs, nil, nil
}

// replaceWord is the word a wrapper's replace option (xargs -I %) makes
// stand for what it is fed, "" for none: among its options, before the
// command it runs.
func replaceWord(ws wrapperSpec, args []sword) string {
	r := ""
	for i := 0; i < len(args); i++ {
		a := args[i].s
		if a == "--" || len(a) < 2 || a[0] != '-' || args[i].unknown {
			break
		}
		for k, o := range ws.ReplaceOptions {
			switch {
			case a == o && k == 0 && i+1 < len(args):
				r = args[i+1].s
			case strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"="):
				r = a[len(o)+1:]
			case !strings.HasPrefix(o, "--") && strings.HasPrefix(a, o) && len(a) > len(o):
				r = a[len(o):]
			}
		}
		if contains(ws.ValueOptions, a) {
			i++ // its value is the next word
		}
	}
	return r
}

// skipWrapper skips a wrapper's options, assignments and positionals and
// returns the command it runs; ok is false when an option means it runs
// none.
func (p *shParser) skipWrapper(ws wrapperSpec, args []sword) (rest []sword, assigns, outs []string, ok bool, err error) {
	i := 0
	pos := ws.Positionals
	var split []sword
	for i < len(args) {
		a := args[i].s
		if a == "--" {
			i++
			break
		}
		if len(a) > 1 && a[0] == '-' && !args[i].unknown {
			name, val, hasVal := a, "", false
			if strings.HasPrefix(a, "--") {
				if eq := strings.IndexByte(a, '='); eq > 0 {
					name, val, hasVal = a[:eq], a[eq+1:], true
				}
				if contains(ws.StopOptions, name) {
					return nil, nil, nil, false, nil
				}
				if !hasVal && (contains(ws.ValueOptions, name) || contains(ws.SplitOptions, name)) {
					if i+1 >= len(args) {
						return nil, nil, nil, false, nil
					}
					i++
					val, hasVal = args[i].s, true
				}
				if hasVal && contains(ws.OutputOptions, name) {
					outs = append(outs, val)
				}
				if hasVal && contains(ws.SplitOptions, name) {
					if split, err = p.splitWords(val); err != nil {
						return nil, nil, nil, false, err
					}
				}
				i++
				continue
			}
			for j := 1; j < len(a); j++ {
				opt := "-" + a[j:j+1]
				if contains(ws.StopOptions, opt) {
					return nil, nil, nil, false, nil
				}
				isSplit := contains(ws.SplitOptions, opt)
				if contains(ws.ValueOptions, opt) || isSplit {
					v := a[j+1:]
					if v == "" {
						if i+1 >= len(args) {
							return nil, nil, nil, false, nil
						}
						i++
						v = args[i].s
					}
					if contains(ws.OutputOptions, opt) {
						outs = append(outs, v)
					}
					if isSplit {
						if split, err = p.splitWords(v); err != nil {
							return nil, nil, nil, false, err
						}
					}
					break
				}
			}
			i++
			continue
		}
		if ws.Assignments && isAssignWord(args[i]) {
			assigns = append(assigns, a)
			i++
			continue
		}
		if pos > 0 {
			pos--
			i++
			continue
		}
		break
	}
	for pos > 0 && i < len(args) {
		pos--
		i++
	}
	return append(split, args[i:]...), assigns, outs, true, nil
}

// splitWords splits env -S's string into words the way the shell would
// (env's own rules are close enough for a check, and stricter).
func (p *shParser) splitWords(s string) ([]sword, error) {
	var out []shellCmd
	sub, err := p.child(s)
	if err != nil {
		return nil, err
	}
	sub.out = &out
	if err := sub.parseList(false); err != nil {
		return nil, err
	}
	if len(out) != 1 || len(out[0].Redirs) > 0 || len(out[0].Assigns) > 0 {
		return nil, errorNew("env -S string is not one plain command; write it plainly")
	}
	var ws []sword
	for _, w := range out[0].Words {
		ws = append(ws, sword{s: w})
	}
	return ws, nil
}

// isAssignWord says whether an expanded word reads as NAME=value.
func isAssignWord(w sword) bool {
	eq := strings.IndexByte(w.s, '=')
	if eq <= 0 || !isNameStart(w.s[0]) {
		return false
	}
	for i := 1; i < eq; i++ {
		if !isNameByte(w.s[i]) {
			return false
		}
	}
	return true
}

// readsScript says whether a command runs shell code it reads at run
// time from stdin or a process substitution: a shell with no script file
// (bash, sh -s, sh -), or source/. of <(…) or /dev/stdin.
func (p *shParser) readsScript(words []sword) bool {
	name := commandName(words[0].s)
	isShell := contains(p.spec.Shells.Names, name)
	if !isShell && !contains(p.spec.Shells.Sources, name) {
		return false
	}
	return p.shellReadsStdin(words, isShell)
}

// startsShell says whether a command starts a shell of its own that
// reads its commands from stdin (hardline.json plain.shells.stdin_shells:
// sudo -s, su with no -c).
func (p *shParser) startsShell(words []sword) bool {
	name := commandName(words[0].s)
	for _, sc := range p.spec.Shells.StdinShells.Commands {
		if len(sc) == 0 || sc[0] != name {
			continue
		}
		if len(sc) == 1 {
			return true // su, run0, pkexec: the command itself, with no program left
		}
		for _, w := range words[1:] {
			for _, o := range sc[1:] {
				if w.s == o || (len(o) == 2 && len(w.s) > 2 && w.s[0] == '-' && w.s[1] != '-' && strings.IndexByte(w.s[1:], o[1]) >= 0) {
					return true
				}
			}
		}
	}
	return false
}

// shellReadsStdin is readsScript for a shell or a sources command.
func (p *shParser) shellReadsStdin(words []sword, isShell bool) bool {
	a, dashS, found := p.scriptOperand(words, isShell)
	if dashS || !found {
		return dashS || isShell
	}
	if strings.HasPrefix(a, "<(") || a == "-" {
		return true
	}
	for _, f := range p.spec.Shells.StdinFiles {
		if pathGlobMatch(f, a, false) {
			return true
		}
	}
	return false
}

// readsFd0 says whether the script a shell or sources command reads at
// run time is its stdin (no script operand, -s, -, /dev/stdin, fd 0's
// names), rather than a process substitution or another descriptor
// (bash <(…), bash /dev/fd/3), which a here-document on stdin does not
// name.
func (p *shParser) readsFd0(words []sword) bool {
	isShell := contains(p.spec.Shells.Names, commandName(words[0].s))
	a, dashS, found := p.scriptOperand(words, isShell)
	if dashS || !found {
		return dashS || isShell
	}
	return a == "-" || contains(p.spec.Shells.Fd0Files, a)
}

// scriptOperand is a shell's (or sources command's) first word after its
// options: its script, when found; dashS when an option cluster holds s
// (the script is stdin) before any.
func (p *shParser) scriptOperand(words []sword, isShell bool) (operand string, dashS, found bool) {
	args := words[1:]
	for i := 0; i < len(args); i++ {
		a := args[i].s
		if isShell && a == "--" {
			continue
		}
		if isShell && len(a) > 1 && (a[0] == '-' || a[0] == '+') {
			if contains(p.spec.Shells.ValueOptions, a) {
				i++
			} else if a[0] == '-' && !strings.HasPrefix(a, "--") && strings.IndexByte(a, 's') > 0 {
				return "", true, false
			}
			continue
		}
		return a, false, true
	}
	return "", false, false
}

// shellBody finds the line a shell runs with -c: the first plain word
// after the options, when one option cluster holds c.
func shellBody(args []sword, valueOpts []string) (string, bool) {
	hasC := false
	for i := 0; i < len(args); i++ {
		a := args[i].s
		if a == "--" || a == "-" {
			if hasC && i+1 < len(args) {
				return args[i+1].s, true
			}
			return "", false
		}
		if len(a) > 1 && (a[0] == '-' || a[0] == '+') {
			if contains(valueOpts, a) {
				i++
				continue
			}
			if a[0] == '-' && !strings.HasPrefix(a, "--") && strings.IndexByte(a, 'c') > 0 {
				hasC = true
			}
			continue
		}
		if hasC {
			return a, true
		}
		return "", false
	}
	return "", false
}

// shellKeywords are words a shell reads as syntax where a command name
// stands; shellQuote quotes them there.
var shellKeywords = map[string]bool{"if": true, "then": true, "elif": true, "else": true, "fi": true, "do": true, "done": true, "while": true, "until": true, "for": true, "select": true, "case": true, "esac": true, "in": true, "function": true, "coproc": true, "time": true, "!": true, "{": true, "}": true, "[[": true, "]]": true}

// shellQuote spells words as a line that parseShell reads back as the same
// words: plain where that is safe, single-quoted otherwise.
func shellQuote(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(w, i == 0))
	}
	return b.String()
}

// quoteWord quotes one word; first is set for the command-name position,
// where a keyword or NAME=value would mean something else.
func quoteWord(w string, first bool) string {
	safe := w != ""
	for i := 0; i < len(w) && safe; i++ {
		c := w[i]
		if !(isNameByte(c) || strings.IndexByte("@%+:,./-", c) >= 0 || (c == '=' && !first)) {
			safe = false
		}
	}
	if safe && first && shellKeywords[w] {
		safe = false
	}
	if safe {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// shellQuoteCmd spells a whole simple command back: assignments, words and
// redirections (here-documents cannot be spelled back and are left out).
func shellQuoteCmd(c shellCmd) string {
	var parts []string
	for _, a := range c.Assigns {
		eq := strings.IndexByte(a, '=')
		parts = append(parts, a[:eq+1]+quoteWord(a[eq+1:], false))
	}
	if len(c.Words) > 0 {
		parts = append(parts, shellQuote(c.Words))
	}
	for _, r := range c.Redirs {
		if strings.HasSuffix(r.Op, "<<") || strings.HasSuffix(r.Op, "<<-") {
			continue
		}
		parts = append(parts, r.Op+quoteWord(r.Target, false))
	}
	return strings.Join(parts, " ")
}

package main

// Spelling a shell line plainly. The permission floor and the "always allow"
// rules judge commands, not text: `\rm -rf /`, `r''m -rf /`, `sudo env rm -rf /`
// and `bash -c "rm -rf /"` are all the one command rm -rf /. parseShell reads a
// line the way a POSIX shell (bash, mostly) would, takes quotes and escapes
// out, expands what it can know (~, $HOME, $IFS, braces, $'..'), takes the
// wrappers off (harness/permission/hardline.json, "plain") and returns every
// simple command the line runs, those inside $(..), `..`, <(..) and sh -c
// bodies included. What it cannot read for sure it refuses with an error:
// a wrong "safe" reading is worse than a question.
//
// A worker (floor 3), with the permissions it serves: the wrappers it
// unwraps and the parameters it expands are hardline.json's.

import (
	"strings"
)

// shellCmd is one simple command as it runs: its words after unwrapping,
// its redirections, and the variables set for it (VAR=x before it, or given
// to env or sudo), kept so that a rule never covers a changed environment.
type shellCmd struct {
	Words   []string     `json:"words"`
	Redirs  []shellRedir `json:"redirs,omitempty"`
	Assigns []string     `json:"assigns,omitempty"`
	// Fed says the command takes more operands at run time (xargs reads
	// them from its input), so the floor reads it as given anything.
	Fed bool `json:"fed,omitempty"`
	// Defines names a function the line defines (its body's commands
	// are recorded as commands of their own); Words is empty then.
	Defines string `json:"defines,omitempty"`

	fromFind bool // for the floor: its operands are what a find found
	// fn: for the floor, the function whose body holds the command, so a
	// call after a cd is read from there too (f() { rm -rf *; }; cd / && f).
	fn string
	// replace: for the floor, the word xargs -I (-i, --replace) stands
	// for what it is fed (find ~ | xargs -I% rm -rf %), read as find's {}.
	replace string
	// loops: for the floor, the for loops over words known when the line
	// is read (for f in a b; do …) whose bodies hold the command,
	// innermost last: $f there is one of those words, not a name known
	// only at run time.
	loops []loopVar
	// scriptRead: for the floor, the command runs as a shell script a file
	// the line wrote with a text it spells out, and that text's commands
	// follow it in the line (withWrittenScripts).
	scriptRead bool
}

// shellRedir is one redirection: Op as written with its fd (">", "2>",
// "&>", ">|", "<<"), Target spelled plainly (a heredoc's delimiter).
type shellRedir struct {
	Op     string `json:"op"`
	Target string `json:"target"`
	// Body is a here-document's text as the command reads it: with a
	// quoted delimiter its lines as written; with a plain one its escapes
	// taken out, known variables given their values, and each substitution
	// standing as its raw text (its commands are read as the line's own).
	// Expands says such a body holds a part only known when the line runs.
	Body    string `json:"body,omitempty"`
	Expands bool   `json:"expands,omitempty"`
}

// shellEnv is what parseShell may know about the shell it reads for.
type shellEnv struct {
	Home string
	User string // the login name: $USER, $LOGNAME and ~name of it are the home folder
	Cwd  string // the folder the line starts in (the project); relative words are read from it
}

// Attributes of one byte of a word being read.
const (
	attrQuoted  = 1 << iota // quoted, escaped or the value of an expansion: no braces, tilde or globbing
	attrUnknown             // part of an expansion whose value is not known here
	attrSplit               // an unquoted $IFS: the word is split here
)

// lexWord is a word as read, before expansion: its bytes with their
// attributes; hadQuote keeps an empty quoted word ("") as a word.
type lexWord struct {
	b        []byte
	attr     []uint8
	hadQuote bool
}

//go:noinline
func (w *lexWord) add(s string, a uint8) {
	for i := 0; i < len(s); i++ {
		w.b = append(w.b, s[i])
		w.attr = append(w.attr, a)
	}
}

// sword is an expanded word with what the parser learnt about it.
type sword struct {
	s       string
	unknown bool // holds an expansion whose value is not known
	glob    bool // holds an unquoted * ? or [
	assign  bool // NAME=value with the name and = unquoted
}

// heredoc is a here-document opened on the line being read: its body is
// read when the line ends, and kept in its redirection, the redir-th of
// command cmd of the output (cmd is -1 until that command is recorded).
// A script one is what a shell (or ssh, tmux …) reads as its commands:
// its body is read as a line of its own.
type heredoc struct {
	delim  string
	strip  bool
	quoted bool
	cmd    int
	redir  int
	script bool
}

// shParser reads one text; bodies (backticks, sh -c, eval) get a child
// parser sharing the output and the work budget.
type shParser struct {
	src      string
	pos      int
	env      shellEnv
	spec     *plainSpec
	depth    int
	out      *[]shellCmd
	info     *shellLineInfo
	heredocs []heredoc
	binding  []int  // the heredocs of the command being recorded (finish to emit)
	pipedIn  bool   // the command being recorded reads a pipe (finish to emit)
	pipeFrom int    // and the output index of the one command writing it, or -1
	fed      bool   // the command being unwrapped is given operands at run time
	replace  string // and xargs -I's replace string, which stands for them
	// defs are the function bodies being read, innermost last; fnOuter
	// is the one a child parser's text is in.
	defs    []defMark
	level   int // parseList's nesting on this parser
	fnOuter string
	// temps are the line's own variables set from mktemp (t=$(mktemp -d)),
	// with the path the floor reads for them (mktempValue): "$t/app" is a
	// program in a fresh temp folder, not a name known only at run time.
	temps map[string]string
	// loops are the for loops over known words being read, innermost
	// last; loopsOuter the ones a child parser's text is in; loopDepth
	// the keyword depth of a for header being read.
	loops      []loopMark
	loopsOuter []loopVar
	loopDepth  int
}

// loopVar is a for loop's variable and the words it takes, each known.
type loopVar struct {
	name   string
	values []string
}

// loopMark is a for loop whose body is being read, at the parseList level
// and keyword depth its done returns to.
type loopMark struct {
	loopVar
	level, depth int
}

// currentLoops is the loops over known words the command being read is
// in, the outer parser's first.
//
//go:noinline
func (p *shParser) currentLoops() []loopVar {
	if len(p.loops) == 0 {
		return p.loopsOuter
	}
	out := append([]loopVar{}, p.loopsOuter...)
	for _, m := range p.loops {
		out = append(out, m.loopVar)
	}
	return out
}

// closeLoops ends the loops a done at this keyword depth closes.
func (p *shParser) closeLoops(depth int) {
	for len(p.loops) > 0 {
		m := p.loops[len(p.loops)-1]
		if m.level != p.level || depth >= m.depth {
			return
		}
		p.loops = p.loops[:len(p.loops)-1]
	}
}

// defMark is a function definition whose body is being read: its name,
// and the parseList level and keyword depth it stands at, to which the
// body's closing } or ) returns.
type defMark struct {
	name         string
	level, depth int
}

// currentFn is the function whose body the parser is reading, "" for none.
func (p *shParser) currentFn() string {
	if len(p.defs) > 0 {
		return p.defs[len(p.defs)-1].name
	}
	return p.fnOuter
}

// closeDefs ends the function bodies a closing keyword or ) at this
// keyword depth closes.
func (p *shParser) closeDefs(depth int) {
	for len(p.defs) > 0 {
		m := p.defs[len(p.defs)-1]
		if m.level != p.level || depth > m.depth {
			return
		}
		p.defs = p.defs[:len(p.defs)-1]
	}
}

// cmdBuilder gathers one simple command while its tokens are read.
type cmdBuilder struct {
	words    []sword
	assigns  []string
	redirs   []shellRedir
	closed   bool   // after ), }, fi or done: only redirections may follow
	discard  bool   // a for/select header: its words are not a command
	funcName string // "function" was read: the next word names a function
	heredocs []int  // its here-documents, as indexes into the parser's
	piped    bool   // a | before it feeds its input
	pipeFrom int    // with piped, the output index of the command before the |, or -1
}

func (c *cmdBuilder) atCommandPosition() bool {
	return len(c.words) == 0 && len(c.assigns) == 0 && !c.closed && !c.discard
}

// parseShell spells a line plainly and returns every simple command it
// runs, in the order they start (a substitution before the command using
// it). An error means the line could not be read for sure; callers must
// then ask (or refuse where nobody can answer), never treat it as safe.
//
//go:noinline
func parseShell(line string, env shellEnv) ([]shellCmd, error) {
	cmds, _, err := parseShellDirs(line, env)
	return cmds, err
}

// shellLineInfo is what a line's plain spelling leaves out but an allow
// rule must know: the folders of command names run by their full path
// (/tmp/x/git is read as git, right for the floor, but a rule for git must
// not cover it), and whether a wrapper changed the user (sudo, su, doas).
type shellLineInfo struct {
	Dirs       []string
	Privileged bool
}

// parseShellDirs is parseShell that also returns the line's shellLineInfo.
func parseShellDirs(line string, env shellEnv) ([]shellCmd, shellLineInfo, error) {
	cmds, info, err := parseShellRead(line, env)
	if err != nil {
		return nil, shellLineInfo{}, err
	}
	return cmds, info, nil
}

// parseShellPartial is what parseShell read of a line it could not read
// to the end: the commands before the part it could not spell (a
// here-document a shell reads, made at run time, after the substitutions
// that make it). Only for refusing: what it returns is never all the line
// runs.
func parseShellPartial(line string, env shellEnv) []shellCmd {
	cmds, _, _ := parseShellRead(line, env)
	return cmds
}

// parseShellRead is parseShellDirs keeping, on an error, what was read.
func parseShellRead(line string, env shellEnv) ([]shellCmd, shellLineInfo, error) {
	spec, err := loadPlainSpec()
	if err != nil {
		return nil, shellLineInfo{}, err
	}
	if len(line) > spec.Limits.LineBytes {
		return nil, shellLineInfo{}, errorf("shell line longer than %d bytes; split it into shorter lines", spec.Limits.LineBytes)
	}
	if strings.IndexByte(line, 0) >= 0 {
		return nil, shellLineInfo{}, errorNew("shell line holds a NUL byte; remove it")
	}
	var out []shellCmd
	var info shellLineInfo
	p := &shParser{src: line, env: env, spec: spec, out: &out, info: &info}
	if err := p.parseList(false); err != nil {
		return out, info, err
	}
	return out, info, nil
}

// child returns a parser for a body (backticks, sh -c, eval) one level
// deeper, so that nesting is bounded.
func (p *shParser) child(src string) (*shParser, error) {
	if p.depth+1 > p.spec.Limits.Depth {
		return nil, errorf("commands nested deeper than %d levels; unnest them", p.spec.Limits.Depth)
	}
	return &shParser{src: src, env: p.env, spec: p.spec, depth: p.depth + 1, out: p.out, info: p.info, fnOuter: p.currentFn(), loopsOuter: p.currentLoops()}, nil
}

func (p *shParser) peek(off int) byte {
	if p.pos+off < len(p.src) {
		return p.src[p.pos+off]
	}
	return 0
}

// skipBlank skips spaces, tabs and line continuations between tokens.
func (p *shParser) skipBlank() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == ' ' || c == '\t' || c == '\r' {
			p.pos++
		} else if c == '\\' && p.peek(1) == '\n' {
			p.pos += 2
		} else {
			return
		}
	}
}

// parseList reads commands until the end of the text or, inSub, the ')'
// that closes a $( or <( body. Compound commands are followed only as far
// as their keywords nest (if/fi, do/done, { }, ( )); their simple commands
// are what is returned.
func (p *shParser) parseList(inSub bool) error {
	p.level++
	defer func() { p.level-- }()
	var stack []string
	var cur cmdBuilder
	for {
		p.skipBlank()
		if p.pos >= len(p.src) {
			if err := p.finish(&cur); err != nil {
				return err
			}
			if inSub {
				return errorNew("unbalanced $( or <(: a ) is missing")
			}
			if len(stack) > 0 {
				return errorf("unbalanced shell line: %q is missing", stack[len(stack)-1])
			}
			if len(p.heredocs) > 0 {
				return errorf("here-document %q has no end line", p.heredocs[0].delim)
			}
			return nil
		}
		c := p.src[p.pos]
		switch {
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '\n':
			if err := p.finish(&cur); err != nil {
				return err
			}
			p.pos++
			if err := p.readHeredocs(); err != nil {
				return err
			}
		case c == ';':
			if p.peek(1) == ';' || p.peek(1) == '&' {
				return errorNew("case clauses are not read; write the commands plainly")
			}
			if err := p.finish(&cur); err != nil {
				return err
			}
			p.pos++
		case c == '&' && p.peek(1) == '>':
			if err := p.readRedir(&cur); err != nil {
				return err
			}
		case c == '&' || c == '|':
			before := len(*p.out)
			if err := p.finish(&cur); err != nil {
				return err
			}
			pipe := c == '|' && p.peek(1) != '|'
			if p.peek(1) == c || (c == '|' && p.peek(1) == '&') {
				p.pos++
			}
			p.pos++
			cur.piped, cur.pipeFrom = pipe, -1
			if pipe && len(*p.out) == before+1 {
				cur.pipeFrom = before // the one command before the pipe
			}
		case c == '(' && p.peek(1) == ')' && cur.funcName == "" && len(cur.words) == 1 && len(cur.assigns) == 0 && len(cur.redirs) == 0 && !cur.closed:
			// name() body: a function definition. Its body's commands are
			// recorded like any others (they are what a call runs), and
			// the definition itself as a command defining the name.
			name := cur.words[0].s
			cur.words = nil
			p.pos += 2
			*p.out = append(*p.out, shellCmd{Defines: name})
			p.defs = append(p.defs, defMark{name: name, level: p.level, depth: len(stack)})
		case c == '(':
			if !cur.atCommandPosition() {
				return errorNew("unexpected ( : arrays and subshells after words are not read; write the commands plainly")
			}
			if p.peek(1) == '(' {
				return errorNew("arithmetic (( )) is not read; write the commands plainly")
			}
			stack = append(stack, ")")
			p.pos++
		case c == ')':
			if err := p.finish(&cur); err != nil {
				return err
			}
			p.pos++
			if len(stack) > 0 && stack[len(stack)-1] == ")" {
				stack = stack[:len(stack)-1]
				p.closeDefs(len(stack))
				cur.closed = true
			} else if inSub && len(stack) == 0 {
				return nil
			} else {
				return errorNew("unbalanced shell line: ) without (")
			}
		case p.atRedir():
			if err := p.readRedir(&cur); err != nil {
				return err
			}
		default:
			lw, err := p.lexWord()
			if err != nil {
				return err
			}
			if err := p.takeWord(&cur, &stack, lw); err != nil {
				return err
			}
		}
	}
}

// takeWord adds a word to the command being read, or acts on it as a
// keyword when it stands where a command name would.
func (p *shParser) takeWord(cur *cmdBuilder, stack *[]string, lw lexWord) error {
	if cur.closed {
		return errorf("unexpected word %q after a closing keyword or )", string(lw.b))
	}
	if cur.funcName == "function" {
		// function name [()] body: the name is recorded, the body read on.
		*p.out = append(*p.out, shellCmd{Defines: string(lw.b)})
		p.defs = append(p.defs, defMark{name: string(lw.b), level: p.level, depth: len(*stack)})
		cur.funcName = ""
		if strings.HasPrefix(p.src[p.pos:], "()") {
			p.pos += 2
		} else if strings.HasPrefix(p.src[p.pos:], " ()") {
			p.pos += 3
		}
		return nil
	}
	if cur.atCommandPosition() && isPlainWord(lw) && string(lw.b) == "function" {
		cur.funcName = "function"
		return nil
	}
	if cur.atCommandPosition() && isPlainWord(lw) {
		kw := p.spec.Keywords
		word := string(lw.b)
		if closer, ok := kw.Open[word]; ok {
			*stack = append(*stack, closer)
			for _, h := range kw.Header {
				if h == word {
					cur.discard = true
					p.loopDepth = len(*stack)
					if word != "for" {
						p.loopDepth = -1 // select: its variable is what the person picks, or nothing
					}
				}
			}
			return nil
		}
		if closer, ok := kw.Middle[word]; ok {
			if len(*stack) == 0 || (*stack)[len(*stack)-1] != closer {
				return errorf("unbalanced shell line: %q without its opening keyword", word)
			}
			return nil
		}
		for _, cl := range kw.Close {
			if cl == word {
				if len(*stack) == 0 || (*stack)[len(*stack)-1] != word {
					return errorf("unbalanced shell line: %q without its opening keyword", word)
				}
				*stack = (*stack)[:len(*stack)-1]
				p.closeDefs(len(*stack))
				p.closeLoops(len(*stack))
				cur.closed = true
				return nil
			}
		}
		for _, s := range kw.Skip {
			if s == word {
				return nil
			}
		}
		for _, r := range kw.Refuse {
			if r == word {
				return errorf("%q is not read; write the commands plainly", word)
			}
		}
	}
	if len(cur.words) == 0 && !cur.discard && isAssignment(lw) {
		w, err := p.expand(lw, false)
		if err != nil {
			return err
		}
		cur.assigns = append(cur.assigns, w[0].s)
		if k, v, ok := strings.Cut(w[0].s, "="); ok {
			if m, ok := mktempValue(v); ok {
				if p.temps == nil {
					p.temps = map[string]string{}
				}
				p.temps[k] = m
			} else {
				delete(p.temps, k) // set again to anything else: unknown as before
			}
		}
		return nil
	}
	ws, err := p.expand(lw, true)
	if err != nil {
		return err
	}
	cur.words = append(cur.words, ws...)
	return nil
}

// isPlainWord says whether a word was written with no quoting at all, the
// only way a keyword is recognised.
func isPlainWord(lw lexWord) bool {
	if lw.hadQuote {
		return false
	}
	for _, a := range lw.attr {
		if a != 0 {
			return false
		}
	}
	return len(lw.b) > 0
}

// isAssignment says whether a word is NAME=value with the name and the =
// unquoted, which before a command name sets a variable for it.
func isAssignment(lw lexWord) bool {
	for i, c := range lw.b {
		if lw.attr[i] != 0 {
			return false
		}
		switch {
		case c == '=':
			return i > 0
		case c == '+' && i > 0 && i+1 < len(lw.b) && lw.b[i+1] == '=' && lw.attr[i+1] == 0:
			return true
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return false
}

// finish ends the command being read: it is unwrapped and recorded, and
// the builder is emptied for the next one.
func (p *shParser) finish(cur *cmdBuilder) error {
	c := *cur
	*cur = cmdBuilder{}
	if c.discard {
		p.loopHeader(c.words)
		return nil
	}
	if len(c.words) == 0 && len(c.redirs) == 0 && len(c.assigns) == 0 {
		return nil
	}
	p.binding, p.pipedIn, p.pipeFrom = c.heredocs, c.piped, -1
	if c.piped {
		p.pipeFrom = c.pipeFrom
	}
	return p.emit(c.words, c.assigns, c.redirs)
}

// loopHeader records a for header (NAME in WORD…) whose words are all
// known and plain — no expansion known only at run time, no pattern — so
// the body's commands are read with each of them for $NAME. Any other
// header leaves $NAME unknown, as before.
func (p *shParser) loopHeader(words []sword) {
	if p.loopDepth < 0 || len(words) < 3 || words[1].s != "in" || !isShellName(words[0].s) {
		return
	}
	var vals []string
	for _, w := range words[2:] {
		if w.unknown || w.glob {
			return
		}
		vals = append(vals, w.s)
	}
	p.loops = append(p.loops, loopMark{loopVar: loopVar{name: words[0].s, values: vals}, level: p.level, depth: p.loopDepth})
}

// atRedir says whether a redirection operator starts here: < or > (but not
// a process substitution), or digits right before one.
func (p *shParser) atRedir() bool {
	i := p.pos
	for i < len(p.src) && p.src[i] >= '0' && p.src[i] <= '9' {
		i++
	}
	if i >= len(p.src) || (p.src[i] != '<' && p.src[i] != '>') {
		return false
	}
	return !(i == p.pos && i+1 < len(p.src) && p.src[i+1] == '(')
}

// redirOps lists the operators longest first, so the longest one is read.
var redirOps = []string{"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">|", ">&", ">"}

// readRedir reads one redirection and its target word; a here-document's
// body is read at the end of its line.
func (p *shParser) readRedir(cur *cmdBuilder) error {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	op := ""
	for _, o := range redirOps {
		if strings.HasPrefix(p.src[p.pos:], o) {
			op = o
			break
		}
	}
	if op == "" {
		return errorNew("unreadable redirection")
	}
	p.pos += len(op)
	full := p.src[start:p.pos]
	p.skipBlank()
	if p.pos >= len(p.src) || strings.IndexByte(" \t\n;&|()<>", p.src[p.pos]) >= 0 {
		return errorf("redirection %s has no target", full)
	}
	lw, err := p.lexWord()
	if err != nil {
		return err
	}
	if op == "<<" || op == "<<-" {
		quoted := lw.hadQuote
		for _, a := range lw.attr {
			if a != 0 {
				quoted = true
			}
		}
		delim := string(lw.b)
		cur.heredocs = append(cur.heredocs, len(p.heredocs))
		p.heredocs = append(p.heredocs, heredoc{delim: delim, strip: op == "<<-", quoted: quoted, cmd: -1})
		cur.redirs = append(cur.redirs, shellRedir{Op: full, Target: delim})
		return nil
	}
	ws, err := p.expand(lw, false)
	if err != nil {
		return err
	}
	if len(ws) != 1 {
		return errorf("redirection %s has an ambiguous target", full)
	}
	cur.redirs = append(cur.redirs, shellRedir{Op: full, Target: ws[0].s})
	return nil
}

// readHeredocs reads the bodies of the here-documents opened on the line
// just ended, in the order they were opened, into their redirections. A
// plain (unquoted) body expands as a "…" word does: its substitutions are
// commands the line runs, read like any others. A body a shell reads as
// its script is read as a line of its own; if it holds a part only known
// when the line runs, the line cannot be spelled plainly.
func (p *shParser) readHeredocs() error {
	hds := p.heredocs
	p.heredocs = nil
	for _, h := range hds {
		var body strings.Builder
		found := false
		for p.pos < len(p.src) {
			end := strings.IndexByte(p.src[p.pos:], '\n')
			var line string
			if end < 0 {
				line = p.src[p.pos:]
				p.pos = len(p.src)
			} else {
				line = p.src[p.pos : p.pos+end]
				p.pos += end + 1
			}
			if h.strip {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				found = true
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		if !found {
			return errorf("here-document %q has no end line", h.delim)
		}
		text, expands := body.String(), false
		if !h.quoted {
			sub, err := p.child(text)
			if err != nil {
				return err
			}
			sub.temps = p.temps
			var w lexWord
			if err := sub.lexHeredoc(&w); err != nil {
				return errorf("here-document %q: %w", h.delim, err)
			}
			text = string(w.b)
			for _, a := range w.attr {
				if a&attrUnknown != 0 {
					expands = true
				}
			}
		}
		if h.cmd >= 0 && h.cmd < len(*p.out) && h.redir < len((*p.out)[h.cmd].Redirs) {
			r := &(*p.out)[h.cmd].Redirs[h.redir]
			r.Body, r.Expands = text, expands
		}
		if h.script {
			if expands {
				return errorf("here-document %q is read as a script and holds parts only known when the line runs; quote its delimiter (<<'%s') or run the commands themselves", h.delim, h.delim)
			}
			sub, err := p.child(text)
			if err != nil {
				return err
			}
			if err := sub.parseList(false); err != nil {
				return errorf("here-document %q read as a script: %w", h.delim, err)
			}
		}
	}
	return nil
}

// lexHeredoc reads a plain here-document's body as bash expands it: \$,
// \`, \\ and \newline are escapes, $ and ` expand, a " is a character.
func (p *shParser) lexHeredoc(w *lexWord) error {
	_, err := p.lexExpanding(w, false)
	return err
}

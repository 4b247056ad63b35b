package main

// Reading one shell word: quotes, escapes, $-expansions and substitutions,
// then what the shell does to a word before it runs (braces, ~, $IFS
// splitting), ending with paths spelled one way.

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// isMeta says whether an unquoted byte ends a word.
func isMeta(c byte) bool {
	return strings.IndexByte(" \t\r\n;&|()<>", c) >= 0
}

// lexWord reads one word at p.pos, keeping for every byte whether it was
// quoted or came from an expansion. Substitutions inside are parsed (their
// commands recorded) and stand in the word as their raw text, unknown.
func (p *shParser) lexWord() (lexWord, error) {
	var w lexWord
	if c := p.peek(0); (c == '<' || c == '>') && p.peek(1) == '(' {
		start := p.pos
		p.pos += 2
		if err := p.parseList(true); err != nil {
			return w, err
		}
		w.add(p.src[start:p.pos], attrQuoted|attrUnknown)
	}
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case isMeta(c):
			return w, nil
		case c == '\'':
			end := strings.IndexByte(p.src[p.pos+1:], '\'')
			if end < 0 {
				return w, errorNew("unbalanced quote: a closing ' is missing")
			}
			w.add(p.src[p.pos+1:p.pos+1+end], attrQuoted)
			w.hadQuote = true
			p.pos += end + 2
		case c == '"':
			p.pos++
			w.hadQuote = true
			if err := p.lexDouble(&w); err != nil {
				return w, err
			}
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return w, errorNew("the line ends with a lone backslash")
			}
			if p.src[p.pos+1] != '\n' {
				w.add(p.src[p.pos+1:p.pos+2], attrQuoted)
			}
			p.pos += 2
		case c == '$':
			if err := p.lexDollar(&w, false); err != nil {
				return w, err
			}
		case c == '`':
			if err := p.lexBacktick(&w); err != nil {
				return w, err
			}
		case c >= 0x80 || c < 0x20 || c == 0x7f:
			size, err := p.checkRune()
			if err != nil {
				return w, err
			}
			w.add(p.src[p.pos:p.pos+size], 0)
			p.pos += size
		default:
			w.add(p.src[p.pos:p.pos+1], 0)
			p.pos++
		}
	}
	return w, nil
}

// lexDouble reads the inside of "..." after its opening quote.
func (p *shParser) lexDouble(w *lexWord) error {
	if closed, err := p.lexExpanding(w, true); err != nil || closed {
		return err
	}
	return errorNew(`unbalanced quote: a closing " is missing`)
}

// lexExpanding reads text bash expands in place: inside "..." (dquote,
// which a " closes and \" escapes) or a plain here-document's body (to
// its end; a " is a character). \$, \`, \\ and \newline are escapes,
// $ and ` expand. It reports whether a " closed it.
func (p *shParser) lexExpanding(w *lexWord, dquote bool) (closed bool, err error) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"' && dquote:
			p.pos++
			return true, nil
		case c == '\\':
			switch n := p.peek(1); {
			case n == '$' || n == '`' || n == '\\' || n == '"' && dquote:
				w.add(string(n), attrQuoted)
				p.pos += 2
			case n == '\n':
				p.pos += 2
			default:
				w.add("\\", attrQuoted)
				p.pos++
			}
		case c == '$':
			if err := p.lexDollar(w, true); err != nil {
				return false, err
			}
		case c == '`':
			if err := p.lexBacktick(w); err != nil {
				return false, err
			}
		default:
			w.add(p.src[p.pos:p.pos+1], attrQuoted)
			p.pos++
		}
	}
	return false, nil
}

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isNameByte(c byte) bool { return isNameStart(c) || (c >= '0' && c <= '9') }

// variable adds the value of a named variable: HOME, IFS and the line's
// own mktemp variables are known, any other stands as its raw text,
// unknown.
func (p *shParser) variable(w *lexWord, name, raw string, quoted bool) {
	switch {
	case name == "HOME" && p.env.Home != "":
		w.add(p.env.Home, attrQuoted)
	case (name == "USER" || name == "LOGNAME") && p.env.User != "":
		w.add(p.env.User, attrQuoted)
	case p.temps[name] != "":
		w.add(p.temps[name], attrQuoted)
	case name == "IFS" && quoted:
		w.add(" ", attrQuoted)
	case name == "IFS":
		w.add(" ", attrQuoted|attrSplit)
	default:
		w.add(raw, attrQuoted|attrUnknown)
	}
}

// lexDollar reads an expansion starting at '$'.
func (p *shParser) lexDollar(w *lexWord, quoted bool) error {
	start := p.pos
	n := p.peek(1)
	if n == '\\' && p.peek(2) == '\n' {
		// bash joins a backslash-newline before it reads the $: $\
		// then (…) is a substitution. Not read: fail closed.
		return errorNew("a $ followed by a line continuation is not read; write the expansion on one line")
	}
	switch {
	case n == '(':
		if p.peek(2) == '(' {
			return errorNew("arithmetic $(( )) is not read; write the number plainly")
		}
		p.pos += 2
		if err := p.parseList(true); err != nil {
			return err
		}
		w.add(p.src[start:p.pos], attrQuoted|attrUnknown)
	case n == '[':
		return errorNew("arithmetic $[ ] is not read; write the number plainly")
	case n == '{':
		end := matchBrace(p.src[p.pos:])
		if end < 0 {
			return errorNew("unbalanced ${: a } is missing")
		}
		name := p.src[p.pos+2 : p.pos+end]
		p.pos += end + 1
		if !simpleParam(name) {
			return p.paramExpansion(w, name, p.src[start:p.pos])
		}
		p.variable(w, name, p.src[start:p.pos], quoted)
	case n == '\'' && !quoted:
		p.pos += 2
		s, err := p.ansiC()
		if err != nil {
			return err
		}
		w.add(s, attrQuoted)
		w.hadQuote = true
	case n == '"' && !quoted:
		p.pos += 2
		w.hadQuote = true
		return p.lexDouble(w)
	case isNameStart(n):
		i := p.pos + 1
		for i < len(p.src) && isNameByte(p.src[i]) {
			i++
		}
		name := p.src[p.pos+1 : i]
		p.pos = i
		p.variable(w, name, p.src[start:i], quoted)
	case n != 0 && strings.IndexByte("0123456789@*#?$!-", n) >= 0:
		p.pos += 2
		w.add(p.src[start:p.pos], attrQuoted|attrUnknown)
	default:
		w.add("$", attrQuoted)
		p.pos++
	}
	return nil
}

// simpleParam says whether ${...} holds only a name, a number or a
// special parameter: anything else (:-, #, %, /, !) is not read.
func simpleParam(name string) bool {
	if name == "" {
		return false
	}
	if len(name) == 1 && strings.IndexByte("@*#?$!-", name[0]) >= 0 {
		return true
	}
	if _, err := strconv.Atoi(name); err == nil && name[0] != '-' && name[0] != '+' {
		return true
	}
	if !isNameStart(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return true
}

// lexBacktick reads `...`: the body, its \` \\ \$ unescaped, is parsed as
// a line of its own and stands in the word as raw text, unknown.
func (p *shParser) lexBacktick(w *lexWord) error {
	start := p.pos
	var body strings.Builder
	i := p.pos + 1
	for {
		if i >= len(p.src) {
			return errorNew("unbalanced backquote: a closing ` is missing")
		}
		c := p.src[i]
		if c == '\\' && i+1 < len(p.src) && strings.IndexByte("`\\$", p.src[i+1]) >= 0 {
			body.WriteByte(p.src[i+1])
			i += 2
			continue
		}
		if c == '`' {
			break
		}
		body.WriteByte(c)
		i++
	}
	p.pos = i + 1
	sub, err := p.child(body.String())
	if err != nil {
		return err
	}
	if err := sub.parseList(false); err != nil {
		return err
	}
	w.add(p.src[start:p.pos], attrQuoted|attrUnknown)
	return nil
}

// ansiC decodes the inside of $'...' after its opening quote, as bash does.
func (p *shParser) ansiC() (string, error) {
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '\'' {
			p.pos++
			return b.String(), nil
		}
		if c != '\\' {
			b.WriteByte(c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.src) {
			break
		}
		e := p.src[p.pos+1]
		p.pos += 2
		switch e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if p.pos >= len(p.src) {
				return "", errorNew("unbalanced quote: a closing ' is missing")
			}
			v := p.src[p.pos] & 0x1f
			p.pos++
			if v == 0 {
				return "", errorNew("$'..' makes a NUL byte; remove it")
			}
			b.WriteByte(v)
		case 'x', 'u', 'U', '0', '1', '2', '3', '4', '5', '6', '7':
			base, max := 16, 2
			switch e {
			case 'u':
				max = 4
			case 'U':
				max = 8
			}
			if e >= '0' && e <= '7' {
				base, max = 8, 3
				p.pos--
			}
			digits := 0
			v := 0
			for digits < max && p.pos < len(p.src) {
				d := hexVal(p.src[p.pos])
				if d < 0 || d >= base {
					break
				}
				v = v*base + d
				p.pos++
				digits++
			}
			if digits == 0 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			if v == 0 {
				return "", errorNew("$'..' makes a NUL byte; remove it")
			}
			if e == 'u' || e == 'U' {
				if v > utf8.MaxRune {
					return "", errorNew("$'..' holds an invalid character")
				}
				b.WriteRune(rune(v))
			} else {
				b.WriteByte(byte(v))
			}
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", errorNew("unbalanced quote: a closing ' is missing")
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// expand turns a read word into the words it becomes: braces expanded
// (when braces is set; assignments and redirection targets keep theirs),
// a leading ~ made the home folder, unquoted $IFS split, paths cleaned.
func (p *shParser) expand(lw lexWord, braces bool) ([]sword, error) {
	words := []lexWord{lw}
	if braces {
		n := 0
		var err error
		words, err = braceExpand(lw, &n, p.spec.Limits.BraceWords)
		if err != nil {
			return nil, err
		}
	}
	var out []sword
	for _, w := range words {
		if u := p.env.User; u != "" && len(w.b) > len(u) && w.b[0] == '~' && w.attr[0] == 0 && string(w.b[1:1+len(u)]) == u && (len(w.b) == 1+len(u) || w.b[1+len(u)] == '/') {
			// ~name of the login name is ~.
			w = lexWord{b: append([]byte{'~'}, w.b[1+len(u):]...), attr: append([]uint8{0}, w.attr[1+len(u):]...), hadQuote: w.hadQuote}
		}
		if len(w.b) > 0 && w.b[0] == '~' && w.attr[0] == 0 && (len(w.b) == 1 || w.b[1] == '/') && p.env.Home != "" {
			var t lexWord
			t.add(p.env.Home, attrQuoted)
			t.b = append(t.b, w.b[1:]...)
			t.attr = append(t.attr, w.attr[1:]...)
			t.hadQuote = w.hadQuote
			w = t
		}
		out = append(out, splitIFS(w)...)
	}
	return out, nil
}

// splitIFS splits a word at its unquoted $IFS bytes; empty pieces vanish,
// as unquoted empty fields do.
func splitIFS(w lexWord) []sword {
	var out []sword
	split := false
	start := 0
	for i := 0; i <= len(w.b); i++ {
		if i < len(w.b) && w.attr[i]&attrSplit == 0 {
			continue
		}
		if i < len(w.b) {
			split = true
		}
		if i > start {
			out = append(out, makeSword(w.b[start:i], w.attr[start:i]))
		}
		start = i + 1
	}
	if !split && len(out) == 0 && w.hadQuote {
		out = append(out, sword{})
	}
	return out
}

// makeSword finishes a word: what it holds, and its path spelled one way.
func makeSword(b []byte, attr []uint8) sword {
	var w sword
	for i, a := range attr {
		if a&attrUnknown != 0 {
			w.unknown = true
		}
		if a == 0 && (b[i] == '*' || b[i] == '?' || b[i] == '[') {
			w.glob = true
		}
	}
	w.s = cleanWordPath(string(b))
	return w
}

// cleanWordPath spells an absolute path one way: // and /./ folded, a
// trailing /. dropped, / itself kept; so is the value of key=/path. It
// does not resolve .. (the checks that need to do so themselves).
func cleanWordPath(s string) string {
	if strings.HasPrefix(s, "/") {
		return cleanSlashes(s)
	}
	if eq := strings.IndexByte(s, '='); eq > 0 && strings.HasPrefix(s[eq+1:], "/") {
		return s[:eq+1] + cleanSlashes(s[eq+1:])
	}
	return s
}

func cleanSlashes(s string) string {
	if !strings.Contains(s, "//") && !strings.Contains(s, "/./") && !strings.HasSuffix(s, "/.") {
		return s
	}
	var segs []string
	for _, seg := range strings.Split(s, "/") {
		if seg != "" && seg != "." {
			segs = append(segs, seg)
		}
	}
	r := "/" + strings.Join(segs, "/")
	if strings.HasSuffix(s, "/") && r != "/" {
		r += "/"
	}
	return r
}

// braceExpand expands unquoted {a,b} and {1..3} lists as bash does, nested
// ones included, up to limit words in all.
func braceExpand(w lexWord, n *int, limit int) ([]lexWord, error) {
	// One pass pairs each unquoted { with its } and notes a comma at its
	// own level, so a line of many braces costs linear time.
	match := make([]int, len(w.b))
	comma := make([]bool, len(w.b))
	var stack []int
	for i, c := range w.b {
		match[i] = -1
		if w.attr[i] != 0 {
			continue
		}
		switch c {
		case '{':
			stack = append(stack, i)
		case '}':
			if len(stack) > 0 {
				match[stack[len(stack)-1]] = i
				stack = stack[:len(stack)-1]
			}
		case ',':
			if len(stack) > 0 {
				comma[stack[len(stack)-1]] = true
			}
		}
	}
	for i := 0; i < len(w.b); i++ {
		j := match[i]
		if j < 0 {
			continue
		}
		var alts []lexWord
		if comma[i] {
			prev, depth := i+1, 0
			for k := i + 1; k <= j; k++ {
				if w.attr[k] != 0 {
					continue
				}
				switch {
				case w.b[k] == '{':
					depth++
				case w.b[k] == '}' && k < j:
					depth--
				case (w.b[k] == ',' && depth == 0) || k == j:
					alts = append(alts, lexWord{b: w.b[prev:k], attr: w.attr[prev:k]})
					prev = k + 1
				}
			}
		} else {
			if j-i > 40 {
				continue
			}
			seq, ok := braceSequence(string(w.b[i+1:j]), limit)
			if !ok {
				continue
			}
			for _, s := range seq {
				var a lexWord
				a.add(s, 0)
				alts = append(alts, a)
			}
		}
		var out []lexWord
		for _, a := range alts {
			var c lexWord
			c.b = append(append(append(c.b, w.b[:i]...), a.b...), w.b[j+1:]...)
			c.attr = append(append(append(c.attr, w.attr[:i]...), a.attr...), w.attr[j+1:]...)
			c.hadQuote = w.hadQuote
			more, err := braceExpand(c, n, limit)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
		return out, nil
	}
	*n++
	if *n > limit {
		return nil, errorf("braces make more than %d words; write them plainly", limit)
	}
	return []lexWord{w}, nil
}

// braceSequence expands the inside of {x..y} or {x..y..step}, numbers or
// single letters; ok is false when it is not a sequence.
func braceSequence(s string, limit int) ([]string, bool) {
	parts := strings.Split(s, "..")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, false
	}
	step := 1
	if len(parts) == 3 {
		v, err := strconv.Atoi(parts[2])
		if err != nil {
			return nil, false
		}
		if v < 0 {
			v = -v
		}
		if v != 0 {
			step = v
		}
	}
	a, errA := strconv.Atoi(parts[0])
	b, errB := strconv.Atoi(parts[1])
	isLetter := func(x string) bool {
		return len(x) == 1 && ((x[0] >= 'a' && x[0] <= 'z') || (x[0] >= 'A' && x[0] <= 'Z'))
	}
	letters := false
	if errA != nil || errB != nil {
		if !isLetter(parts[0]) || !isLetter(parts[1]) {
			return nil, false
		}
		a, b, letters = int(parts[0][0]), int(parts[1][0]), true
	}
	var out []string
	for v := a; ; {
		if len(out) > limit {
			return out, true
		}
		if letters {
			out = append(out, string(rune(v)))
		} else {
			out = append(out, strconv.Itoa(v))
		}
		if (a <= b && v+step > b) || (a > b && v-step < b) {
			break
		}
		if a <= b {
			v += step
		} else {
			v -= step
		}
	}
	return out, true
}

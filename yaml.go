package main

// A small YAML subset, parsed by hand: lembas reads config.yaml without a
// YAML module, and a subset we own can report every mistake with the exact
// line and column and the fix, and can be edited in place by `config set`.
//
// The ground (floor 1): it calls nothing above it.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// yamlMaxDepth bounds nesting so a hostile file cannot exhaust the stack.
const yamlMaxDepth = 100

type yamlKind int

const (
	yamlScalar yamlKind = iota
	yamlMap
	yamlList
)

// yamlNode is one parsed value with its position. Maps keep their keys in
// file order, which parseYAML's plain map[string]any cannot; `config list`
// and `config set` work on nodes for that reason.
type yamlNode struct {
	kind   yamlKind
	flow   bool        // written inline as [...] or {...}, on one line
	line   int         // 1-based line of the node's first character
	col    int         // 1-based column (in characters) of that character
	off    int         // byte offset of the node within its line
	end    int         // byte offset just past the node, for inline nodes
	last   int         // last line the node occupies
	indent int         // block collections: byte column of their keys or dashes
	val    any         // scalars: nil, bool, int64, float64 or string
	keys   []*yamlNode // maps: key scalars (val is a string), in file order
	items  []*yamlNode // maps: values, parallel to keys; lists: the items
}

// yamlError is a parse or config error pinned to a place in a file.
type yamlError struct {
	name      string
	line, col int
	msg       string
}

// Error renders the position the way compilers do, so editors can jump to it.
func (e *yamlError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.name, e.line, e.col, e.msg)
}

// parseYAML parses the YAML subset lembas understands and returns plain Go
// values: map[string]any, []any, string, int64, float64, bool or nil. Use
// parseYAMLNode instead when key order or positions matter.
//
// The subset:
//   - Block maps ("key: value", one key per line, all keys of a map at the
//     same indentation) and block lists ("- item"). A list item may itself
//     start a map ("- name: big") whose further keys are indented to line
//     up under the first one. A list that is a map's value may sit at the
//     same indentation as its key. A key with nothing after its colon holds
//     the more-indented block on the following lines, or null.
//   - Flow lists [a, "b c"] and flow maps {a: 1, b: [x]}, nested freely,
//     each written on a single line.
//   - Keys are always strings: plain words or quoted strings.
//   - Scalars: null, ~ or nothing is null; true/false (also True, TRUE and
//     the like) are booleans (yes/no/on/off are plain strings); decimal
//     integers with an optional sign, 0x hex and 0o octal are integers (a
//     value out of the int64 range is an error); decimal floats such as
//     1.5, .5, 1e3, -2.5E-3 and .inf, -.inf, .nan are floats; anything else
//     is a string.
//   - Strings may be single-quoted (no escapes; two single quotes in a row
//     stand for one) or double-quoted with the escapes \n \t \r \" \\ \/
//     and \uXXXX (a surrogate pair for characters above U+FFFF); quoted
//     strings end on the line they start on. Unquoted strings run to the
//     end of the line or to a comment, with surrounding spaces trimmed, and
//     cannot contain ": " or end in ":"; inside [ ] and { } they also end
//     at , [ ] { }. Control characters other than tab must be escaped.
//   - Comments start with # at the start of a line or after a space or tab,
//     outside quotes, and run to the end of the line. Blank lines are
//     ignored. One leading "---" line is allowed.
//   - Indentation is spaces only; a tab in indentation is an error.
//
// Everything else is an error: anchors (&), aliases (*), tags (!), block
// scalars (| and >), directives (%), a second document (--- later on, or
// ...), complex keys (? ), multi-line plain or quoted strings, duplicate
// keys, and files that are not UTF-8. Errors read "name:line:col: what is
// wrong; how to fix it".
func parseYAML(data []byte, name string) (any, error) {
	n, err := parseYAMLNode(data, name)
	if err != nil {
		return nil, err
	}
	return n.value(), nil
}

// yamlLine is one significant line: not blank, not only a comment.
type yamlLine struct {
	num    int    // 1-based
	text   string // without the line break, a trailing \r or a leading BOM
	indent int    // count of leading spaces
}

type yamlParser struct {
	name  string
	lines []yamlLine
	pos   int // index of the next unconsumed line
	depth int
}

// parseYAMLNode parses data (see parseYAML for the subset) into a node tree
// that keeps key order and positions. An empty document (nothing but
// blank lines and comments) is a null scalar on line 1.
func parseYAMLNode(data []byte, name string) (*yamlNode, error) {
	lines, err := splitYAMLLines(data, name)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return &yamlNode{kind: yamlScalar, line: 1, col: 1, last: 1}, nil
	}
	p := &yamlParser{name: name, lines: lines}
	root, err := p.parseBlock(lines[0].indent)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.lines) {
		l := &p.lines[p.pos]
		switch {
		case l.indent != lines[0].indent:
			return nil, p.errf(l, l.indent, "indentation does not match any line above; line it up with the block it belongs to")
		case root.kind == yamlList:
			return nil, p.errf(l, l.indent, "expected a list item (\"- \") here, since the document is a list")
		default:
			return nil, p.errf(l, l.indent, "unexpected line after a single value; the document holds one value, a map or a list")
		}
	}
	return root, nil
}

// splitYAMLLines drops blank and comment lines and checks the things that
// are wrong wherever they appear: bad UTF-8, control characters, tabs in
// indentation, directives and document markers.
func splitYAMLLines(data []byte, name string) ([]yamlLine, error) {
	s := strings.TrimPrefix(string(data), "\ufeff")
	var out []yamlLine
	marker := false
	for i, raw := range strings.Split(s, "\n") {
		num := i + 1
		text := strings.TrimSuffix(raw, "\r")
		if !utf8.ValidString(text) {
			off := 0
			for off < len(text) {
				r, size := utf8.DecodeRuneInString(text[off:])
				if r == utf8.RuneError && size == 1 {
					break
				}
				off += size
			}
			return nil, &yamlError{name, num, colOf(text, off), "invalid UTF-8; save the file as UTF-8"}
		}
		for off, r := range text {
			if (r < 0x20 && r != '\t') || r == 0x7f {
				return nil, &yamlError{name, num, colOf(text, off), fmt.Sprintf("control character U+%04X is not allowed; write it as a \\u escape in a double-quoted string", r)}
			}
		}
		ind := 0
		for ind < len(text) && text[ind] == ' ' {
			ind++
		}
		rest := strings.TrimLeft(text[ind:], " \t")
		if rest == "" || rest[0] == '#' {
			continue
		}
		if text[ind] == '\t' {
			return nil, &yamlError{name, num, colOf(text, ind), "tab used for indentation; indent with spaces"}
		}
		if ind == 0 {
			switch {
			case isDocMarker(text, "---"):
				after := strings.TrimLeft(text[3:], " \t")
				if len(out) > 0 || marker {
					return nil, &yamlError{name, num, 1, "a second document (\"---\") is not supported; keep one document per file"}
				}
				if after != "" && after[0] != '#' {
					return nil, &yamlError{name, num, 4, "content on the \"---\" line is not supported; start it on the next line"}
				}
				marker = true
				continue
			case isDocMarker(text, "..."):
				return nil, &yamlError{name, num, 1, "the document end marker \"...\" is not supported; remove the line"}
			case text[0] == '%':
				return nil, &yamlError{name, num, 1, "directives (%) are not supported; remove the line"}
			}
		}
		out = append(out, yamlLine{num: num, text: text, indent: ind})
	}
	return out, nil
}

// isDocMarker reports whether text is the marker alone or followed by blanks.
func isDocMarker(text, m string) bool {
	return strings.HasPrefix(text, m) && (len(text) == len(m) || isBlank(text[len(m)]))
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// skipBlanks returns the first offset at or after i that is not a space or tab.
func skipBlanks(s string, i int) int {
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return i
}

// colOf turns a byte offset into the 1-based character column editors show.
func colOf(text string, off int) int {
	if off > len(text) {
		off = len(text)
	}
	return utf8.RuneCountInString(text[:off]) + 1
}

// errf pins a message to a byte offset of a line, reported as a column.
func (p *yamlParser) errf(l *yamlLine, off int, format string, args ...any) error {
	return &yamlError{p.name, l.num, colOf(l.text, off), fmt.Sprintf(format, args...)}
}

// newNode starts a node at a byte offset of a line; inline nodes set end.
//
//go:noinline
func (p *yamlParser) newNode(kind yamlKind, l *yamlLine, off int) *yamlNode {
	return &yamlNode{kind: kind, line: l.num, col: colOf(l.text, off), off: off, end: off, last: l.num}
}

// enter counts nested collections so deep documents fail cleanly instead
// of overflowing the stack.
func (p *yamlParser) enter(l *yamlLine, off int) error {
	p.depth++
	if p.depth > yamlMaxDepth {
		return p.errf(l, off, "nesting is deeper than %d levels; flatten the document", yamlMaxDepth)
	}
	return nil
}

// isDash reports whether a block list item ("-" then a blank or the end of
// the line) starts at off.
func isDash(s string, off int) bool {
	return off < len(s) && s[off] == '-' && (off+1 == len(s) || isBlank(s[off+1]))
}

// parseBlock parses the block node whose first character is at byte off of
// the current line. off may lie inside the line (after "- "), which is how
// "- key: v" items become maps.
func (p *yamlParser) parseBlock(off int) (*yamlNode, error) {
	l := &p.lines[p.pos]
	if isDash(l.text, off) {
		return p.parseList(off)
	}
	if _, _, ok, err := p.keyAt(l, off); err != nil {
		return nil, err
	} else if ok {
		return p.parseMap(off)
	}
	n, err := p.parseInline(l, off)
	if err != nil {
		return nil, err
	}
	p.pos++
	return n, nil
}

// keyAt reports whether a "key:" starts at off, returning the key and the
// offset just past its colon.
func (p *yamlParser) keyAt(l *yamlLine, off int) (*yamlNode, int, bool, error) {
	s := l.text
	switch c := s[off]; {
	case c == '"' || c == '\'':
		k, end, err := p.quoted(l, off)
		if err != nil {
			return nil, 0, false, err
		}
		j := skipBlanks(s, end)
		if j < len(s) && s[j] == ':' && (j+1 == len(s) || isBlank(s[j+1])) {
			return k, j + 1, true, nil
		}
		return nil, 0, false, nil
	case c == '[' || c == '{':
		return nil, 0, false, nil
	case c == '?' && (off+1 == len(s) || isBlank(s[off+1])):
		return nil, 0, false, p.errf(l, off, "complex keys (\"? \") are not supported; write \"key: value\"")
	}
	for i := off; i < len(s); i++ {
		if s[i] == '#' && i > off && isBlank(s[i-1]) {
			return nil, 0, false, nil
		}
		if s[i] == ':' && (i+1 == len(s) || isBlank(s[i+1])) {
			text := strings.TrimRight(s[off:i], " \t")
			if text == "" {
				return nil, 0, false, p.errf(l, off, "missing key before ':'; write \"key: value\"")
			}
			if err := p.checkPlain(l, off, text); err != nil {
				return nil, 0, false, err
			}
			k := p.newNode(yamlScalar, l, off)
			k.val, k.end = text, off+len(text)
			return k, i + 1, true, nil
		}
	}
	return nil, 0, false, nil
}

// parseMap parses a block map whose keys sit at byte column n; the first
// key is at column n of the current line.
func (p *yamlParser) parseMap(n int) (*yamlNode, error) {
	l := &p.lines[p.pos]
	if err := p.enter(l, n); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	m := p.newNode(yamlMap, l, n)
	m.indent = n
	seen := map[string]*yamlNode{}
	for {
		l = &p.lines[p.pos]
		k, after, ok, err := p.keyAt(l, n)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, p.errf(l, n, "expected \"key: value\" here, as in the map this line belongs to")
		}
		key := k.val.(string)
		if prev := seen[key]; prev != nil {
			return nil, p.errf(l, n, "duplicate key %q (first on line %d); keep only one", key, prev.line)
		}
		seen[key] = k
		var v *yamlNode
		j := skipBlanks(l.text, after)
		if j == len(l.text) || l.text[j] == '#' {
			v = p.newNode(yamlScalar, l, after)
			if j == len(l.text) {
				v.off, v.end = j, j // so `config set` fills "key:  " as "key: v"
			}
			p.pos++
			if p.pos < len(p.lines) {
				nx := &p.lines[p.pos]
				if nx.indent > n {
					v, err = p.parseBlock(nx.indent)
				} else if nx.indent == n && isDash(nx.text, n) {
					v, err = p.parseList(n)
				}
				if err != nil {
					return nil, err
				}
			}
		} else {
			if isDash(l.text, j) {
				return nil, p.errf(l, j, "a list cannot start on the line of its key; put \"- item\" on the next line, or write [a, b]")
			}
			if v, err = p.parseInline(l, j); err != nil {
				return nil, err
			}
			p.pos++
		}
		m.keys = append(m.keys, k)
		m.items = append(m.items, v)
		m.last = v.last
		if p.pos >= len(p.lines) || p.lines[p.pos].indent < n {
			return m, nil
		}
		nx := &p.lines[p.pos]
		if nx.indent > n {
			return nil, p.indentErr(nx, v)
		}
		if isDash(nx.text, n) {
			return nil, p.errf(nx, n, "expected \"key: value\" here, found a list item; indent the list under its key")
		}
	}
}

// indentErr explains a line indented deeper than its block: after a
// nested block it failed to line up with it, otherwise nothing may nest.
func (p *yamlParser) indentErr(l *yamlLine, prev *yamlNode) error {
	if prev.kind != yamlScalar && !prev.flow {
		return p.errf(l, l.indent, "indentation does not match any line above; line it up with the block it belongs to")
	}
	return p.errf(l, l.indent, "unexpected indentation; only a \"key:\" or \"-\" with nothing after it can have more-indented lines below")
}

// parseList parses a block list whose dashes sit at byte column n; the
// first dash is at column n of the current line.
func (p *yamlParser) parseList(n int) (*yamlNode, error) {
	l := &p.lines[p.pos]
	if err := p.enter(l, n); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	lst := p.newNode(yamlList, l, n)
	lst.indent = n
	for {
		l = &p.lines[p.pos]
		s := l.text
		j := n + 1
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j < len(s) && s[j] == '\t' {
			return nil, p.errf(l, j, "tab after \"-\"; use spaces")
		}
		var item *yamlNode
		if j == len(s) || s[j] == '#' {
			item = p.newNode(yamlScalar, l, n+1)
			if j == len(s) {
				item.off, item.end = j, j
			}
			p.pos++
			if p.pos < len(p.lines) && p.lines[p.pos].indent > n {
				var err error
				if item, err = p.parseBlock(p.lines[p.pos].indent); err != nil {
					return nil, err
				}
			}
		} else {
			var err error
			if item, err = p.parseBlock(j); err != nil {
				return nil, err
			}
		}
		lst.items = append(lst.items, item)
		lst.last = item.last
		if p.pos >= len(p.lines) || p.lines[p.pos].indent < n {
			return lst, nil
		}
		nx := &p.lines[p.pos]
		if nx.indent > n {
			return nil, p.indentErr(nx, item)
		}
		if !isDash(nx.text, n) {
			return lst, nil // a key of the map this list is a value of
		}
	}
}

// parseInline parses a value that ends on its line (a scalar or a flow
// collection) at off and checks that only a comment follows it.
func (p *yamlParser) parseInline(l *yamlLine, off int) (*yamlNode, error) {
	s := l.text
	var n *yamlNode
	var err error
	switch s[off] {
	case '"', '\'':
		n, _, err = p.quoted(l, off)
	case '[', '{':
		n, _, err = p.parseFlow(l, off)
	default:
		return p.plainBlock(l, off)
	}
	if err != nil {
		return nil, err
	}
	j := skipBlanks(s, n.end)
	if j < len(s) && !(s[j] == '#' && j > n.end) {
		return nil, p.errf(l, j, "unexpected text after the value; start a comment with \" #\" or quote the whole value")
	}
	return n, nil
}

// plainBlock parses an unquoted value running to the end of the line or
// to a comment.
func (p *yamlParser) plainBlock(l *yamlLine, off int) (*yamlNode, error) {
	s := l.text
	end := len(s)
	for i := off + 1; i < len(s); i++ {
		if s[i] == '#' && isBlank(s[i-1]) {
			end = i
			break
		}
	}
	text := strings.TrimRight(s[off:end], " \t")
	if err := p.checkPlain(l, off, text); err != nil {
		return nil, err
	}
	for i := 0; i < len(text); i++ {
		if text[i] == ':' && (i+1 == len(text) || isBlank(text[i+1])) {
			return nil, p.errf(l, off+i, "unexpected \":\" in a value; quote the value if the colon belongs to it")
		}
	}
	return p.scalar(l, off, text)
}

// checkPlain refuses unquoted text that starts with a YAML indicator this
// subset does not support, naming the feature.
func (p *yamlParser) checkPlain(l *yamlLine, off int, text string) error {
	switch c := text[0]; c {
	case '&':
		return p.errf(l, off, "anchors (&) are not supported; quote the value if '&' is part of it")
	case '*':
		return p.errf(l, off, "aliases (*) are not supported; quote the value if '*' is part of it")
	case '!':
		return p.errf(l, off, "tags (!) are not supported; quote the value if '!' is part of it")
	case '|', '>':
		return p.errf(l, off, "block scalars (| and >) are not supported; write the text on one line in double quotes, with \\n for line breaks")
	case '%', '@', '`', '#', ',', '[', ']', '{', '}':
		return p.errf(l, off, "an unquoted value cannot start with %q; quote the value", c)
	case '-', '?', ':':
		if len(text) == 1 || isBlank(text[1]) {
			return p.errf(l, off, "an unquoted value cannot start with \"%c \"; quote the value", c)
		}
	}
	return nil
}

// scalar resolves unquoted text to null, a boolean, a number or a string.
func (p *yamlParser) scalar(l *yamlLine, off int, text string) (*yamlNode, error) {
	n := p.newNode(yamlScalar, l, off)
	n.end = off + len(text)
	v, err := resolvePlain(text)
	if err != nil {
		return nil, p.errf(l, off, "%v", err)
	}
	n.val = v
	return n, nil
}

// resolvePlain gives unquoted text its type, as documented on parseYAML.
func resolvePlain(s string) (any, error) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil, nil
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), nil
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), nil
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), nil
	}
	digits, base, set := s, 10, "0123456789"
	switch {
	case strings.HasPrefix(s, "0x"):
		digits, base, set = s[2:], 16, "0123456789abcdefABCDEF"
	case strings.HasPrefix(s, "0o"):
		digits, base, set = s[2:], 8, "01234567"
	case s[0] == '+' || s[0] == '-':
		digits = s[1:]
	}
	if digits != "" && strings.Trim(digits, set) == "" {
		t := s
		if base != 10 {
			t = digits
		}
		i, err := strconv.ParseInt(t, base, 64)
		if err != nil {
			return nil, errorf("integer %s is out of range; quote it to keep it as text", s)
		}
		return i, nil
	}
	if isYAMLFloat(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && math.IsInf(f, 0) {
			return nil, errorf("number %s is out of range; quote it to keep it as text", s)
		}
		return f, nil
	}
	return s, nil
}

// isYAMLFloat matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?,
// which is narrower than what strconv.ParseFloat accepts (no "Inf", hex
// or underscores).
func isYAMLFloat(s string) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// quoted parses a single- or double-quoted string starting at off and
// returns it with the offset just past the closing quote.
func (p *yamlParser) quoted(l *yamlLine, off int) (*yamlNode, int, error) {
	s := l.text
	q := s[off]
	var b strings.Builder
	for i := off + 1; i < len(s); {
		c := s[i]
		switch {
		case c == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case c == q:
			n := p.newNode(yamlScalar, l, off)
			n.val, n.end = b.String(), i+1
			return n, i + 1, nil
		case c == '\\' && q == '"':
			r, size, err := p.escape(l, i)
			if err != nil {
				return nil, 0, err
			}
			b.WriteRune(r)
			i += size
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil, 0, p.errf(l, off, "unterminated quoted string; close it with %c on the same line (use \\n for line breaks)", q)
}

// escape decodes the backslash escape at s[i] in a double-quoted string.
func (p *yamlParser) escape(l *yamlLine, i int) (rune, int, error) {
	s := l.text
	if i+1 >= len(s) {
		return 0, 0, p.errf(l, i, "unfinished escape at the end of the line; write \\\\ for a backslash")
	}
	switch s[i+1] {
	case 'n':
		return '\n', 2, nil
	case 't':
		return '\t', 2, nil
	case 'r':
		return '\r', 2, nil
	case '"', '\\', '/':
		return rune(s[i+1]), 2, nil
	case 'u':
		r, ok := hex4(s, i+2)
		if !ok {
			return 0, 0, p.errf(l, i, "\\u must be followed by 4 hex digits, as in \\u00e9")
		}
		if r >= 0xd800 && r < 0xdc00 {
			if lo, ok := hex4(s, i+8); ok && s[i+6] == '\\' && s[i+7] == 'u' && lo >= 0xdc00 && lo < 0xe000 {
				return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12, nil
			}
		}
		if r >= 0xd800 && r < 0xe000 {
			return 0, 0, p.errf(l, i, "lone surrogate \\u%04X; write the character itself or a full surrogate pair", r)
		}
		return r, 6, nil
	}
	return 0, 0, p.errf(l, i, "unknown escape \"\\%c\"; use \\n, \\t, \\r, \\\", \\\\, \\/ or \\uXXXX", rune(s[i+1]))
}

// hex4 reads 4 hex digits at s[i:], if there are.
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// parseFlow parses a one-line [list] or {map} starting at off.
func (p *yamlParser) parseFlow(l *yamlLine, off int) (*yamlNode, int, error) {
	if err := p.enter(l, off); err != nil {
		return nil, 0, err
	}
	defer func() { p.depth-- }()
	s := l.text
	kind, closer, what := yamlList, byte(']'), "list"
	if s[off] == '{' {
		kind, closer, what = yamlMap, '}', "map"
	}
	n := p.newNode(kind, l, off)
	n.flow = true
	seen := map[string]bool{}
	unclosed := func() error {
		return p.errf(l, off, "unclosed flow %s; close it with %q on the same line", what, closer)
	}
	i := off + 1
	for {
		i = skipBlanks(s, i)
		if i >= len(s) || (s[i] == '#' && isBlank(s[i-1])) {
			return nil, 0, unclosed()
		}
		if s[i] == closer {
			i++
			break
		}
		if kind == yamlList {
			item, j, err := p.flowItem(l, i)
			if err != nil {
				return nil, 0, err
			}
			if i = skipBlanks(s, j); i < len(s) && s[i] == ':' {
				return nil, 0, p.errf(l, i, "a \"key: value\" pair inside [ ] is not supported; write it as {key: value}")
			}
			n.items = append(n.items, item)
		} else {
			if s[i] == '[' || s[i] == '{' {
				return nil, 0, p.errf(l, i, "a key must be text, not a flow list or map; quote the key")
			}
			k, j, err := p.flowItem(l, i)
			if err != nil {
				return nil, 0, err
			}
			if _, ok := k.val.(string); !ok {
				k.val = s[i:k.end] // keys are always text: {1: a} has the key "1"
			}
			key := k.val.(string)
			if seen[key] {
				return nil, 0, p.errf(l, i, "duplicate key %q; keep only one", key)
			}
			seen[key] = true
			if i = skipBlanks(s, j); i >= len(s) || s[i] != ':' {
				return nil, 0, p.errf(l, i, "expected \":\" after key %q in { }; write {key: value} with a space after the colon", key)
			}
			var v *yamlNode
			if i = skipBlanks(s, i+1); i >= len(s) || (s[i] == '#' && isBlank(s[i-1])) {
				return nil, 0, unclosed()
			} else if s[i] == ',' || s[i] == '}' {
				v = p.newNode(yamlScalar, l, i)
			} else if v, i, err = p.flowItem(l, i); err != nil {
				return nil, 0, err
			}
			n.keys = append(n.keys, k)
			n.items = append(n.items, v)
		}
		i = skipBlanks(s, i)
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		if i < len(s) && s[i] == closer {
			i++
			break
		}
		if i >= len(s) || (s[i] == '#' && isBlank(s[i-1])) {
			return nil, 0, unclosed()
		}
		return nil, 0, p.errf(l, i, "expected \",\" or %q in the flow %s", closer, what)
	}
	n.end = i
	return n, i, nil
}

// flowItem parses one value inside [ ] or { }.
func (p *yamlParser) flowItem(l *yamlLine, i int) (*yamlNode, int, error) {
	s := l.text
	switch s[i] {
	case '[', '{':
		return p.parseFlow(l, i)
	case '"', '\'':
		return p.quoted(l, i)
	}
	j := i
	for ; j < len(s); j++ {
		c := s[j]
		if strings.IndexByte(",[]{}", c) >= 0 || (c == '#' && j > i && isBlank(s[j-1])) {
			break
		}
		if c == ':' && (j+1 == len(s) || strings.IndexByte(" \t,[]{}", s[j+1]) >= 0) {
			break
		}
	}
	text := strings.TrimRight(s[i:j], " \t")
	if text == "" {
		if s[i] == ',' {
			return nil, 0, p.errf(l, i, "empty item; remove the extra \",\"")
		}
		return nil, 0, p.errf(l, i, "expected a value before %q", s[i])
	}
	if err := p.checkPlain(l, i, text); err != nil {
		return nil, 0, err
	}
	n, err := p.scalar(l, i, text)
	if err != nil {
		return nil, 0, err
	}
	return n, n.end, nil
}

// value converts a node to plain Go values (maps lose their order).
func (n *yamlNode) value() any {
	switch n.kind {
	case yamlMap:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k.val.(string)] = n.items[i].value()
		}
		return m
	case yamlList:
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = it.value()
		}
		return l
	}
	return n.val
}

// get returns the value under key in a map node, or nil when n is not a
// map or has no such key.
//
//go:noinline
func (n *yamlNode) get(key string) *yamlNode {
	if n == nil || n.kind != yamlMap {
		return nil
	}
	for i, k := range n.keys {
		if k.val.(string) == key {
			return n.items[i]
		}
	}
	return nil
}

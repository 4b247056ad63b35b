package main

// `lembas config set`: a person's config.yaml is theirs, comments and
// layout included, so set edits the few bytes it must (a value in place,
// or new lines under the right parent) instead of re-serialising the file,
// and writes nothing unless the result parses and passes the same checks
// lembas applies at startup.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

// configSet sets key to value in the config file at path, creating the
// file and its folders when missing.
func configSet(path, key, value string) error {
	segs, err := splitConfigKey(key)
	if err != nil {
		return err
	}
	if len(segs) > 1 && (segs[0] == "model" || segs[0] == "mode") {
		// model and mode are text; a key under one is most likely a
		// top-level key written under it (model.idle_timeout).
		hint := ""
		if contains(theConfigKeys().TopKeys, segs[1]) {
			hint = fmt.Sprintf("; %s is a key of its own: lembas config set %s VALUE", segs[1], strings.Join(segs[1:], "."))
		}
		return usageError{fmt.Sprintf("config set: %s: %s is a text setting with no keys under it (lembas config set %s VALUE)%s", key, segs[0], segs[0], hint)}
	}
	// Two sets at once must not lose one: read, change and write under a
	// lock beside the file, so each set starts from the other's result.
	unlock, err := lockBeside(path)
	if err != nil {
		return errorf("config set: %w", err)
	}
	defer unlock()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("config set: %w", err)
	}
	root, err := parseYAMLNode(data, path)
	if err != nil {
		return errorf("config set: %w; fix the file first", err)
	}
	e := &yamlEditor{typed: configTypedKey(segs), value: value}
	out, err := e.apply(data, root, segs)
	if err != nil {
		return errorf("config set: %s: %w", key, err)
	}
	if _, err := parseConfig(out, path); err != nil {
		return errorf("config set: %s not changed: %w", key, err)
	}
	if got := lookupNode(mustParseYAML(out), segs); got == nil || !reflect.DeepEqual(got.value(), e.want) {
		return errorf("config set: %s not changed: the value would not read back as written; edit %s by hand", key, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return errorf("config set: %w", err)
	}
	if err := writeFileAtomic(path, out, 0o600); err != nil {
		return errorf("config set: %w", err)
	}
	return nil
}

// mustParseYAML is for bytes already known to parse.
func mustParseYAML(data []byte) *yamlNode {
	n, err := parseYAMLNode(data, "")
	if err != nil {
		panic(err)
	}
	return n
}

// configTypedKey reports whether a known key holds something other than
// text (a number, a boolean, a list or a map): VALUE is then read as YAML
// (65536, true, [a, b]). Every other key, unknown ones included, takes
// VALUE as literal text, quoted in the file when it must be.
func configTypedKey(segs []string) bool {
	switch {
	case len(segs) == 1: // idle_timeout is seconds (model.go)
		return segs[0] == "connections" || segs[0] == "permissions" || segs[0] == "idle_timeout"
	case segs[0] == "remote" && len(segs) == 2:
		switch segs[1] { // remote.scheduled true, remote.roots [~/a]; max_mode and unknown keys are text
		case "enabled", "require_trust", "terminal", "terminal_integration", "scheduled", "approval_timeout", "roots":
			return true
		}
		return false
	case segs[0] == "permissions":
		return len(segs) == 2
	case segs[0] == "subagents": // subagents.min and .max are numbers (team_setting.go)
		return true
	case segs[0] != "connections":
		return false
	case len(segs) == 2:
		return true
	case len(segs) == 3:
		return segs[2] == "models"
	case len(segs) == 5 && segs[2] == "models":
		switch segs[4] {
		case "context", "output", "parallel", "vision", "tools", "thinking_switch", "efforts":
			return true
		}
	}
	return false
}

// yamlEditor produces the edited file. want is the value the key must
// read back as; it is set by text().
type yamlEditor struct {
	typed bool
	value string
	want  any
	lines []string // the file split at \n; a line keeps its \r
	cr    string   // "\r" when the file uses CRLF line breaks
	added bool     // lines were inserted
}

// text renders the value for a block (flow false) or flow position.
func (e *yamlEditor) text(flow bool) string {
	if e.typed && !strings.ContainsAny(e.value, "\n\r") {
		doc := "k: " + e.value
		if flow {
			doc = "k: [" + e.value + "]"
		}
		if n, err := parseYAMLNode([]byte(doc), ""); err == nil && n.kind == yamlMap && len(n.keys) == 1 {
			v := n.items[0]
			switch {
			case flow && v.kind == yamlList && len(v.items) == 1:
				e.want = v.items[0].value()
				return e.value
			case !flow && (v.flow || (v.kind == yamlScalar && v.end > v.off)):
				e.want = v.value()
				return e.value
			}
		}
	}
	e.want = e.value
	return yamlString(e.value, flow)
}

// apply walks to the key and either replaces its value in place or adds
// it (and any missing parents) under the deepest parent that exists.
func (e *yamlEditor) apply(data []byte, root *yamlNode, segs []string) ([]byte, error) {
	body := string(data)
	bom := ""
	if strings.HasPrefix(body, "\ufeff") {
		bom, body = "\ufeff", body[3:]
	}
	e.lines = strings.Split(body, "\n")
	if strings.Contains(body, "\r\n") {
		e.cr = "\r"
	}
	if err := e.edit(root, segs); err != nil {
		return nil, err
	}
	out := strings.Join(e.lines, "\n")
	if e.added && !strings.HasSuffix(out, "\n") {
		out = strings.TrimSuffix(out, "\r") + e.cr + "\n"
	}
	return []byte(bom + out), nil
}

// edit finds the deepest existing node on the path and makes the one
// change there, so nothing else in the file moves.
func (e *yamlEditor) edit(root *yamlNode, segs []string) error {
	n, parent := root, (*yamlNode)(nil)
	for i, seg := range segs {
		where := strings.Join(segs[:i], ".")
		if i == 0 {
			where = "the file"
		}
		switch n.kind {
		case yamlMap:
			child := n.get(seg)
			if child == nil {
				return e.addToMap(n, segs[i:])
			}
			parent, n = n, child
			continue
		case yamlList:
			idx, ok := listIndex(seg)
			switch {
			case !ok:
				return errorf("%s is a list; address its items by number, as in %s.0", where, where)
			case idx < len(n.items):
				parent, n = n, n.items[idx]
				continue
			case idx == len(n.items) && i == len(segs)-1:
				return e.appendItem(n)
			}
			return errorf("%s has %d items; to add one use index %d", where, len(n.items), len(n.items))
		}
		if n.val != nil {
			if parent == nil {
				return errorNew("the file holds a single value, not settings; fix the file first")
			}
			return errorf("%s is %s, not a map; set %s itself or choose another key", where, describeNode(n), where)
		}
		if parent != nil && parent.flow {
			return errorf("%s is empty inside [ ] or { }; edit the file to fill it", where)
		}
		return e.addUnderNull(n, parent, segs[i:])
	}
	if n.kind != yamlScalar && !n.flow {
		key := strings.Join(segs, ".")
		if n.kind == yamlList {
			return errorf("is a list written over several lines; set its items one by one, as in %s.0", key)
		}
		return errorf("is a map written over several lines; set its keys one by one, as in %s.%s", key, n.keys[0].val)
	}
	text := e.text(parent != nil && parent.flow)
	if n.off == n.end && n.off > 0 && !isBlank(e.lines[n.line-1][n.off-1]) {
		text = " " + text // "key:" or "-" or "{a:" with nothing after
	}
	e.replace(n.line, n.off, n.end, text)
	return nil
}

// replace swaps bytes [off,end) of a 1-based line.
//
//go:noinline
func (e *yamlEditor) replace(line, off, end int, text string) {
	l := e.lines[line-1]
	e.lines[line-1] = l[:off] + text + l[end:]
}

// insert puts new lines after the 1-based line after (0 = at the top).
func (e *yamlEditor) insert(after int, add []string) {
	if after == len(e.lines) && e.cr != "" && !strings.HasSuffix(e.lines[after-1], "\r") {
		e.lines[after-1] += e.cr
	}
	for i := range add {
		add[i] += e.cr
	}
	rest := append(add, e.lines[after:]...)
	e.lines = append(e.lines[:after], rest...)
	e.added = true
}

// newLines writes rest as nested block lines starting at indent ind. When
// startsList, rest[0] is a list index (the parent is becoming a list);
// later segments that are numbers also start lists, and only index 0 can.
func (e *yamlEditor) newLines(rest []string, ind int, startsList bool) ([]string, error) {
	var out []string
	for j, s := range rest {
		pad := strings.Repeat(" ", ind+2*j)
		if _, isNum := listIndex(s); isNum && (j > 0 || startsList) {
			if s != "0" || j != len(rest)-1 {
				return nil, errorf("there is no list at %s yet; start one with index 0", s)
			}
			return append(out, pad+"- "+e.text(false)), nil
		}
		if j == len(rest)-1 {
			return append(out, pad+yamlKey(s)+": "+e.text(false)), nil
		}
		out = append(out, pad+yamlKey(s)+":")
	}
	return out, nil
}

// addToMap adds rest under an existing map: as new lines after its last
// line, or for a flow map as ", key: value" before its "}".
func (e *yamlEditor) addToMap(m *yamlNode, rest []string) error {
	if m.flow {
		text := e.text(true)
		for j := len(rest) - 1; j >= 1; j-- {
			if _, isNum := listIndex(rest[j]); isNum {
				return errorNew("a new list inside { } cannot be added; edit the file")
			}
			text = "{" + yamlKey(rest[j]) + ": " + text + "}"
		}
		text = yamlKey(rest[0]) + ": " + text
		if len(m.items) == 0 {
			e.replace(m.line, m.end-1, m.end-1, text)
		} else {
			at := m.items[len(m.items)-1].end
			e.replace(m.line, at, at, ", "+text)
		}
		return nil
	}
	add, err := e.newLines(rest, m.indent, false)
	if err != nil {
		return err
	}
	e.insert(m.last, add)
	return nil
}

// appendItem adds the value as the next item of a list.
func (e *yamlEditor) appendItem(l *yamlNode) error {
	if l.flow {
		text := e.text(true)
		if len(l.items) == 0 {
			e.replace(l.line, l.end-1, l.end-1, text)
		} else {
			at := l.items[len(l.items)-1].end
			e.replace(l.line, at, at, ", "+text)
		}
		return nil
	}
	e.insert(l.last, []string{strings.Repeat(" ", l.indent) + "- " + e.text(false)})
	return nil
}

// addUnderNull fills an empty value ("key:" with nothing, or null) with
// new lines; with no parent it is the empty document and lines go at the
// end of the file.
func (e *yamlEditor) addUnderNull(n, parent *yamlNode, rest []string) error {
	ind, after := 0, len(e.lines)
	if e.lines[after-1] == "" {
		after-- // keep the final line break last
	}
	if parent != nil {
		ind, after = parent.indent+2, n.line
	}
	_, startsList := listIndex(rest[0])
	add, err := e.newLines(rest, ind, startsList)
	if err != nil {
		return err
	}
	if n.end > n.off { // an explicit null or ~: remove it
		l := e.lines[n.line-1]
		e.lines[n.line-1] = strings.TrimRight(l[:n.off], " ") + l[n.end:]
	}
	if after == 0 {
		e.lines = append(add, e.lines...)
		e.added = true
		return nil
	}
	e.insert(after, add)
	return nil
}

// lockBeside takes an exclusive lock on path+".lock", waiting while another
// process holds it (a set takes milliseconds; after 10 s something is
// wrong, and the error says which file to look at).
func lockBeside(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if err := tryLock(f); err == nil {
			// Nothing is written through the lock file, and closing it
			// drops the lock whatever unlockFile says: both are safe to drop.
			return func() { unlockFile(f); f.Close() }, nil
		}
		if time.Since(start) > 10*time.Second {
			f.Close() // opened only to lock, nothing written
			return nil, errorf("%s.lock is held by another lembas; try again when it is done", path)
		}
	}
}

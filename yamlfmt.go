package main

// Writing the YAML subset back out: `config get` prints lists and maps as
// YAML, and `config set` writes values. Every string is checked against the
// parser itself, so what lembas writes always reads back the same.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// formatYAML renders a node as block YAML with two-space indentation, keys
// in their original order and strings quoted only where they must be; the
// output parses back to the same value.
func formatYAML(n *yamlNode) string {
	if v, ok := n.val.(string); ok && n.kind == yamlScalar {
		// A lone value reads differently from a map value ("---" is a
		// document marker there), so check it as a whole document.
		out := yamlString(v, false)
		if d, err := parseYAMLNode([]byte(out), ""); err != nil || d.kind != yamlScalar || d.val != v {
			out = yamlQuote(v)
		}
		return out + "\n"
	}
	var b strings.Builder
	writeYAML(&b, n, 0)
	return b.String()
}

// writeYAML writes n at the given indentation; non-empty collections take
// whole lines, everything else one line.
func writeYAML(b *strings.Builder, n *yamlNode, indent int) {
	pad := strings.Repeat(" ", indent)
	if n.kind == yamlScalar || len(n.items) == 0 {
		b.WriteString(pad + yamlInline(n) + "\n")
		return
	}
	for i, it := range n.items {
		if n.kind == yamlMap {
			b.WriteString(pad + yamlKey(n.keys[i].val.(string)) + ":")
		} else {
			b.WriteString(pad + "-")
		}
		switch {
		case it.kind != yamlScalar && len(it.items) > 0 && n.kind == yamlList:
			// "- " then the nested block with its first line pulled up.
			var sub strings.Builder
			writeYAML(&sub, it, indent+2)
			b.WriteString(" " + sub.String()[indent+2:])
		case it.kind != yamlScalar && len(it.items) > 0:
			b.WriteString("\n")
			writeYAML(b, it, indent+2)
		default:
			b.WriteString(" " + yamlInline(it) + "\n")
		}
	}
}

// yamlInline renders a scalar or a collection on one line, the latter in
// flow form.
func yamlInline(n *yamlNode) string {
	return yamlInlineIn(n, false)
}

// yamlInlineIn tracks whether we are inside [ ] or { }, where fewer
// strings may go unquoted.
func yamlInlineIn(n *yamlNode, flow bool) string {
	switch n.kind {
	case yamlMap:
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			parts[i] = yamlKey(n.keys[i].val.(string)) + ": " + yamlInlineIn(it, true)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case yamlList:
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			parts[i] = yamlInlineIn(it, true)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return yamlScalarText(n.val, flow)
}

// yamlScalarText renders a scalar so that it parses back to the same value
// in a block value (flow false) or inside [ ] / { } (flow true).
func yamlScalarText(v any, flow bool) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		switch {
		case math.IsNaN(v):
			return ".nan"
		case math.IsInf(v, 1):
			return ".inf"
		case math.IsInf(v, -1):
			return "-.inf"
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	case string:
		return yamlString(v, flow)
	}
	return yamlQuote(fmt.Sprint(v))
}

// yamlString writes s unquoted when that reads back as the same string in
// the given context, and double-quoted otherwise. It asks the parser
// itself, so the rule can never drift from what parses.
func yamlString(s string, flow bool) string {
	doc := "k: " + s
	if flow {
		doc = "k: [" + s + "]"
	}
	if s != "" && !strings.ContainsAny(s, "\n\r") {
		if n, err := parseYAMLNode([]byte(doc), ""); err == nil {
			v := n.get("k")
			if flow && v != nil && v.kind == yamlList && len(v.items) == 1 {
				v = v.items[0]
			}
			if v != nil && v.kind == yamlScalar && v.val == s {
				return s
			}
		}
	}
	return yamlQuote(s)
}

// yamlKey writes a map key unquoted when it reads back as the same key.
func yamlKey(s string) string {
	if s != "" && !strings.ContainsAny(s, "\n\r") {
		if n, err := parseYAMLNode([]byte(s+": x"), ""); err == nil && n.kind == yamlMap && len(n.keys) == 1 && n.keys[0].val == s {
			return s
		}
	}
	return yamlQuote(s)
}

// yamlQuote writes s as a double-quoted string using only the escapes the
// parser reads.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

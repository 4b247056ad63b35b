package main

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// yamlGood pairs documents in the subset with the values they mean.
var yamlGood = []struct {
	name, doc string
	want      any
}{
	{"empty", "", nil},
	{"only comments", "# a\n\n   # b\n", nil},
	{"leading marker", "---\na: 1\n", map[string]any{"a": int64(1)}},
	{"marker with comment", "# c\n--- # doc\na: 1\n", map[string]any{"a": int64(1)}},
	{"scalar doc", "hello world\n", "hello world"},
	{"block map", "a: 1\nb: two\nc:\n", map[string]any{"a": int64(1), "b": "two", "c": nil}},
	{"nested map", "a:\n  b:\n    c: x\n  d: y\ne: z\n", map[string]any{"a": map[string]any{"b": map[string]any{"c": "x"}, "d": "y"}, "e": "z"}},
	{"block list", "- a\n- 2\n-\n- true\n", []any{"a", int64(2), nil, true}},
	{"list under key", "k:\n  - a\n  - b\n", map[string]any{"k": []any{"a", "b"}}},
	{"compact list under key", "k:\n- a\n- b\nz: 1\n", map[string]any{"k": []any{"a", "b"}, "z": int64(1)}},
	{"list of maps", "- name: big\n  context: 131072\n- name: small\n", []any{map[string]any{"name": "big", "context": int64(131072)}, map[string]any{"name": "small"}}},
	{"list item map on next line", "-\n  a: 1\n", []any{map[string]any{"a": int64(1)}}},
	{"nested lists", "- - a\n  - b\n- c\n", []any{[]any{"a", "b"}, "c"}},
	{"list item key with block", "- a:\n    b: 1\n  c: 2\n", []any{map[string]any{"a": map[string]any{"b": int64(1)}, "c": int64(2)}}},
	{"flow list", "k: [a, \"b c\", 'd', 1, 2.5, true, null, ~]\n", map[string]any{"k": []any{"a", "b c", "d", int64(1), 2.5, true, nil, nil}}},
	{"flow map", "k: {a: 1, \"b\": [x, y], c: {}, d: , e: []}\n", map[string]any{"k": map[string]any{"a": int64(1), "b": []any{"x", "y"}, "c": map[string]any{}, "d": nil, "e": []any{}}}},
	{"json style", `{"a":1, "b": [true, false]}`, map[string]any{"a": int64(1), "b": []any{true, false}}},
	{"flow trailing comma", "[a, b, ]", []any{"a", "b"}},
	{"flow url", "[http://x:80/y, a:b]", []any{"http://x:80/y", "a:b"}},
	{"comments", "a: 1 # one\n# whole line\nb: \"x # y\" # c\nc: a#b\nd: 'q''s' #\n", map[string]any{"a": int64(1), "b": "x # y", "c": "a#b", "d": "q's"}},
	{"ints", "[0, -7, +7, 007, 0x1F, 0o17, 9223372036854775807, -9223372036854775808]", []any{int64(0), int64(-7), int64(7), int64(7), int64(31), int64(15), int64(math.MaxInt64), int64(math.MinInt64)}},
	{"floats", "[1.5, .5, 1., -2.5E-3, 1e3, .inf, -.inf]", []any{1.5, 0.5, 1.0, -2.5e-3, 1000.0, math.Inf(1), math.Inf(-1)}},
	{"not numbers", "[1_000, 0x, 1e, 1.2.3, Inf, 0b1, -0x1]", []any{"1_000", "0x", "1e", "1.2.3", "Inf", "0b1", "-0x1"}},
	{"bools and nulls", "[true, True, TRUE, false, FALSE, yes, no, on, Null, NULL]", []any{true, true, true, false, false, "yes", "no", "on", nil, nil}},
	{"escapes", `k: "a\nb\tc\"d\\e\/f\u00e9\ud83d\ude00\r"`, map[string]any{"k": "a\nb\tc\"d\\e/f\u00e9\U0001F600\r"}},
	{"quoted keys", "\"a b\": 1\n'c: d': 2\n\"\": 3\n", map[string]any{"a b": int64(1), "c: d": int64(2), "": int64(3)}},
	{"keys stay text", "1: a\ntrue: b\nnull: c\n", map[string]any{"1": "a", "true": "b", "null": "c"}},
	{"plain with spaces and punctuation", "k: hello, world [x] {y}  \n", map[string]any{"k": "hello, world [x] {y}"}},
	{"colon inside word", "url: http://127.0.0.1:8080/v1\n", map[string]any{"url": "http://127.0.0.1:8080/v1"}},
	{"crlf and bom", "\ufeffa: 1\r\nb:\r\n  - x\r\n", map[string]any{"a": int64(1), "b": []any{"x"}}},
	{"indented root", "  a: 1\n  b: 2\n", map[string]any{"a": int64(1), "b": int64(2)}},
	{"tab inside value", "k: a\tb\n", map[string]any{"k": "a\tb"}},
	{"tab after colon", "k:\t1\n", map[string]any{"k": int64(1)}},
	{"dash words", "k: -x\nl: a - b\n", map[string]any{"k": "-x", "l": "a - b"}},
	{"blank lines between", "a:\n\n  b: 1\n\n\nc: 2\n", map[string]any{"a": map[string]any{"b": int64(1)}, "c": int64(2)}},
}

// yamlBad pairs documents outside the subset with the exact error.
var yamlBad = []struct{ doc, want string }{
	{"a: 1\na: 2\n", `t.yaml:2:1: duplicate key "a" (first on line 1); keep only one`},
	{"a:\n\tb: 1\n", "t.yaml:2:1: tab used for indentation; indent with spaces"},
	{"a:\n  \tb: 1\n", "t.yaml:2:3: tab used for indentation; indent with spaces"},
	{"a: &x 1\n", "t.yaml:1:4: anchors (&) are not supported; quote the value if '&' is part of it"},
	{"a: *x\n", "t.yaml:1:4: aliases (*) are not supported; quote the value if '*' is part of it"},
	{"a: !!str 1\n", "t.yaml:1:4: tags (!) are not supported; quote the value if '!' is part of it"},
	{"a: |\n  text\n", `t.yaml:1:4: block scalars (| and >) are not supported; write the text on one line in double quotes, with \n for line breaks`},
	{"a: >\n", `t.yaml:1:4: block scalars (| and >) are not supported; write the text on one line in double quotes, with \n for line breaks`},
	{"a: 1\n---\nb: 2\n", `t.yaml:2:1: a second document ("---") is not supported; keep one document per file`},
	{"---\n---\n", `t.yaml:2:1: a second document ("---") is not supported; keep one document per file`},
	{"--- a\n", `t.yaml:1:4: content on the "---" line is not supported; start it on the next line`},
	{"a: 1\n...\n", `t.yaml:2:1: the document end marker "..." is not supported; remove the line`},
	{"%YAML 1.2\n", "t.yaml:1:1: directives (%) are not supported; remove the line"},
	{"? a\n", `t.yaml:1:1: complex keys ("? ") are not supported; write "key: value"`},
	{"a: 1\n  b: 2\n", `t.yaml:2:3: unexpected indentation; only a "key:" or "-" with nothing after it can have more-indented lines below`},
	{"a:\n    b: 1\n  c: 2\n", "t.yaml:3:3: indentation does not match any line above; line it up with the block it belongs to"},
	{"- a\nb: 1\n", `t.yaml:2:1: expected a list item ("- ") here, since the document is a list`},
	{"a: 1\n- b\n", `t.yaml:2:1: expected "key: value" here, found a list item; indent the list under its key`},
	{"a\nb\n", "t.yaml:2:1: unexpected line after a single value; the document holds one value, a map or a list"},
	{"a: - b\n", `t.yaml:1:4: a list cannot start on the line of its key; put "- item" on the next line, or write [a, b]`},
	{"a: b: c\n", `t.yaml:1:5: unexpected ":" in a value; quote the value if the colon belongs to it`},
	{"a: b:\n", `t.yaml:1:5: unexpected ":" in a value; quote the value if the colon belongs to it`},
	{": a\n", `t.yaml:1:1: missing key before ':'; write "key: value"`},
	{"a: \"b\n", `t.yaml:1:4: unterminated quoted string; close it with " on the same line (use \n for line breaks)`},
	{"a: 'b\n", `t.yaml:1:4: unterminated quoted string; close it with ' on the same line (use \n for line breaks)`},
	{`a: "\x"`, `t.yaml:1:5: unknown escape "\x"; use \n, \t, \r, \", \\, \/ or \uXXXX`},
	{`a: "\u12"`, `t.yaml:1:5: \u must be followed by 4 hex digits, as in \u00e9`},
	{`a: "\ud800"`, `t.yaml:1:5: lone surrogate \uD800; write the character itself or a full surrogate pair`},
	{`a: "b" c`, `t.yaml:1:8: unexpected text after the value; start a comment with " #" or quote the whole value`},
	{"a: [b, c\n", `t.yaml:1:4: unclosed flow list; close it with ']' on the same line`},
	{"a: [b,\n  c]\n", `t.yaml:1:4: unclosed flow list; close it with ']' on the same line`},
	{"a: {b: 1 # c}\n", `t.yaml:1:4: unclosed flow map; close it with '}' on the same line`},
	{"a: [b, , c]\n", `t.yaml:1:8: empty item; remove the extra ","`},
	{"a: [b: c]\n", `t.yaml:1:6: a "key: value" pair inside [ ] is not supported; write it as {key: value}`},
	{"a: {b}\n", `t.yaml:1:6: expected ":" after key "b" in { }; write {key: value} with a space after the colon`},
	{"a: {b: 1, b: 2}\n", `t.yaml:1:11: duplicate key "b"; keep only one`},
	{"a: {[b]: 1}\n", `t.yaml:1:5: a key must be text, not a flow list or map; quote the key`},
	{"a: [b] c\n", `t.yaml:1:8: unexpected text after the value; start a comment with " #" or quote the whole value`},
	{"a: [b c] d]\n", `t.yaml:1:10: unexpected text after the value; start a comment with " #" or quote the whole value`},
	{"a: 99999999999999999999\n", "t.yaml:1:4: integer 99999999999999999999 is out of range; quote it to keep it as text"},
	{"a: 1e999\n", "t.yaml:1:4: number 1e999 is out of range; quote it to keep it as text"},
	{"a: @b\n", `t.yaml:1:4: an unquoted value cannot start with '@'; quote the value`},
	{"a: ]\n", `t.yaml:1:4: an unquoted value cannot start with ']'; quote the value`},
	{"a: 1\n\x00\n", "t.yaml:2:1: control character U+0000 is not allowed; write it as a \\u escape in a double-quoted string"},
	{"a: \xff\n", "t.yaml:1:4: invalid UTF-8; save the file as UTF-8"},
	{"é: \"\\q\"\n", `t.yaml:1:5: unknown escape "\q"; use \n, \t, \r, \", \\, \/ or \uXXXX`},
	{"-\ta\n", `t.yaml:1:2: tab after "-"; use spaces`},
	{strings.Repeat("[", 200), "t.yaml:1:101: nesting is deeper than 100 levels; flatten the document"},
	{strings.Repeat("- ", 200) + "a", "t.yaml:1:201: nesting is deeper than 100 levels; flatten the document"},
}

func TestParseYAMLGood(t *testing.T) {
	for _, c := range yamlGood {
		got, err := parseYAML([]byte(c.doc), "t.yaml")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", c.name, got, c.want)
		}
	}
}

func TestParseYAMLBad(t *testing.T) {
	for _, c := range yamlBad {
		_, err := parseYAML([]byte(c.doc), "t.yaml")
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.doc, err, c.want)
		}
	}
}

func TestParseYAMLNaN(t *testing.T) {
	v, err := parseYAML([]byte("k: .nan"), "t.yaml")
	if err != nil || !math.IsNaN(v.(map[string]any)["k"].(float64)) {
		t.Fatalf("got %v, %v", v, err)
	}
}

// TestYAMLRoundTrip formats every good document and parses it back.
func TestYAMLRoundTrip(t *testing.T) {
	docs := []string{configExample}
	for _, c := range yamlGood {
		docs = append(docs, c.doc)
	}
	for _, d := range docs {
		assertRoundTrip(t, []byte(d))
	}
}

// assertRoundTrip checks formatYAML(parse(d)) parses to the same value and
// formats to the same text (formatting is a fixed point).
func assertRoundTrip(t *testing.T, d []byte) {
	t.Helper()
	n, err := parseYAMLNode(d, "t.yaml")
	if err != nil {
		t.Fatalf("%q: %v", d, err)
	}
	out := formatYAML(n)
	n2, err := parseYAMLNode([]byte(out), "out.yaml")
	if err != nil {
		t.Fatalf("%q formatted as %q: %v", d, out, err)
	}
	if a, b := fmt.Sprintf("%#v", n.value()), fmt.Sprintf("%#v", n2.value()); a != b {
		t.Fatalf("%q formatted as %q reads back as\n%s\nnot\n%s", d, out, b, a)
	}
	if out2 := formatYAML(n2); out2 != out {
		t.Fatalf("%q: formatting is not stable:\n%q\n%q", d, out, out2)
	}
}

func TestYAMLStringQuoting(t *testing.T) {
	for _, c := range []struct{ in, block, flow string }{
		{"plain", "plain", "plain"},
		{"two words", "two words", "two words"},
		{"a, b", "a, b", `"a, b"`},
		{"bash: git status", `"bash: git status"`, `"bash: git status"`},
		{"edit: docs/**", `"edit: docs/**"`, `"edit: docs/**"`},
		{"docs/**", "docs/**", "docs/**"},
		{"*", `"*"`, `"*"`},
		{"7", `"7"`, `"7"`},
		{"true", `"true"`, `"true"`},
		{"", `""`, `""`},
		{" pad", `" pad"`, `" pad"`},
		{"a # b", `"a # b"`, `"a # b"`},
		{"line\nbreak", `"line\nbreak"`, `"line\nbreak"`},
		{`say "hi"`, `say "hi"`, `say "hi"`},
		{`"q"`, `"\"q\""`, `"\"q\""`},
		{"http://x:1/y", "http://x:1/y", "http://x:1/y"},
	} {
		if got := yamlString(c.in, false); got != c.block {
			t.Errorf("block %q: got %s want %s", c.in, got, c.block)
		}
		if got := yamlString(c.in, true); got != c.flow {
			t.Errorf("flow %q: got %s want %s", c.in, got, c.flow)
		}
	}
}

func TestYAMLNodeOrderAndPositions(t *testing.T) {
	n, err := parseYAMLNode([]byte("z: 1\na:\n  - x\n  - {k: v}\nm: [p, q]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, k := range n.keys {
		keys = append(keys, k.val.(string))
	}
	if strings.Join(keys, ",") != "z,a,m" {
		t.Fatalf("order %v", keys)
	}
	a := n.get("a")
	if a.kind != yamlList || a.line != 3 || a.last != 4 || a.indent != 2 {
		t.Fatalf("a: %+v", a)
	}
	if k := a.items[1].get("k"); k.line != 4 || k.col != 9 || k.val != "v" {
		t.Fatalf("k: %+v", k)
	}
	if m := n.get("m"); !m.flow || m.off != 3 || m.end != 9 || m.items[1].off != 7 {
		t.Fatalf("m: %+v", m)
	}
}

// FuzzYAML checks the parser never panics, that parsing is deterministic,
// and that whatever parses survives a format round trip.
func FuzzYAML(f *testing.F) {
	f.Add(configExample)
	for _, c := range yamlGood {
		f.Add(c.doc)
	}
	for _, c := range yamlBad {
		f.Add(c.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		n, err := parseYAMLNode([]byte(doc), "f.yaml")
		_, err2 := parseYAMLNode([]byte(doc), "f.yaml")
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("nondeterministic: %v / %v", err, err2)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		n2, _ := parseYAMLNode([]byte(doc), "f.yaml")
		if a, b := fmt.Sprintf("%#v", n.value()), fmt.Sprintf("%#v", n2.value()); a != b {
			t.Fatalf("nondeterministic values:\n%s\n%s", a, b)
		}
		assertRoundTrip(t, []byte(doc))
	})
}

package main

// harness_decode.go: the harness's own JSON, decoded fast. encoding/json
// spends most of a -p run's spec time (a sixth of its CPU) in its
// byte-at-a-time scanner and per-value reflection, on files that are
// embedded, valid and read once. This decoder reads the same subset of
// JSON into the same Go values with one pass over the bytes: strings
// without escapes are not copied (they point into the file's one copy,
// which nothing writes again), and each struct type's fields are looked
// up once.
//
// It is not a general decoder: what it does not handle (an array type,
// embedded struct fields, a null for a value that has an UnmarshalJSON, a
// number that does not fit, invalid UTF-8 …) is an errHarnessUnsupported,
// and the caller decodes that file with encoding/json instead, so what
// the program reads never differs. The tests decode every harness file
// both ways and compare (harness_decode_test.go).
//
// The ground floor (floor 0): standard library only.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// decodeHarnessFile decodes one harness file into v (a pointer to a zero
// value) with the fast decoder, or with encoding/json where it declines
// (or fails: encoding/json then says what is wrong, in its words); strict
// refuses unknown fields.
func decodeHarnessFile(name string, data []byte, v any, strict bool) error {
	if err := decodeHarness(data, v, strict); err == nil {
		if harnessDecodeCheck != nil {
			harnessDecodeCheck(name, data, v, strict)
		}
		return nil
	}
	harnessFallbacks.Add(1)
	reflect.ValueOf(v).Elem().SetZero() // what the fast decoder began is not kept
	if !strict {
		if err := json.Unmarshal(data, v); err != nil {
			return errorf("%s: %v", name, err)
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf("%s: %v", name, err)
	}
	return nil
}

// harnessFallbacks counts the files left to encoding/json (the tests hold
// it at none for the files a session reads).
var harnessFallbacks atomic.Int32

// harnessDecodeCheck, when set (the tests set it), is handed every value
// the fast decoder made, to compare with encoding/json's.
var harnessDecodeCheck func(name string, data []byte, v any, strict bool)

// errHarnessUnsupported says the fast decoder leaves this file to
// encoding/json.
var errHarnessUnsupported = errors.New("not for the fast harness decoder")

// decodeHarness decodes data into v (a pointer), refusing unknown fields
// when strict, as encoding/json's Decoder with DisallowUnknownFields does.
// data must not be written after: strings point into it.
func decodeHarness(data []byte, v any, strict bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errHarnessUnsupported
	}
	d := &harnessDec{b: data, strict: strict}
	if err := d.value(rv.Elem()); err != nil {
		return err
	}
	d.ws()
	if d.i != len(d.b) {
		return d.fail("data after the value")
	}
	return nil
}

type harnessDec struct {
	b      []byte
	i      int
	strict bool
}

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

//go:noinline
func (d *harnessDec) fail(what string) error {
	return errorf("%w: %s at byte %d", errHarnessUnsupported, what, d.i)
}

func (d *harnessDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the next value into v.
func (d *harnessDec) value(v reflect.Value) error {
	d.ws()
	if d.i >= len(d.b) {
		return d.fail("end of data")
	}
	c := d.b[d.i]
	t := v.Type()
	if t == rawMessageType {
		raw, err := d.skip()
		if err != nil {
			return err
		}
		v.SetBytes(append([]byte(nil), raw...))
		return nil
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		if c == 'n' {
			return d.fail("null for a type with UnmarshalJSON")
		}
		raw, err := d.skip()
		if err != nil {
			return err
		}
		return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw)
	}
	if t.Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) || t.Implements(textUnmarshalerType) {
		return d.fail("a type that decodes itself")
	}
	if c == 'n' {
		if !d.lit("null") {
			return d.fail("a bad literal")
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			v.SetZero()
		}
		return nil // json leaves any other value as it was
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.value(v.Elem())
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return d.fail("an interface with methods")
		}
		x, err := d.anyValue()
		if err != nil {
			return err
		}
		if x == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	case reflect.Struct:
		return d.object(v)
	case reflect.Map:
		return d.mapValue(v)
	case reflect.Slice:
		return d.slice(v)
	case reflect.Array: // as encoding/json: extra elements dropped, missing ones zero
		n := 0
		err := d.elements(func() error {
			if n >= v.Len() {
				_, err := d.skip()
				return err
			}
			e := v.Index(n)
			n++
			return d.value(e)
		})
		for ; err == nil && n < v.Len(); n++ {
			v.Index(n).SetZero()
		}
		return err
	case reflect.String:
		if c != '"' {
			return d.fail("not a string")
		}
		s, err := d.str()
		if err != nil {
			return err
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		switch {
		case d.lit("true"):
			v.SetBool(true)
		case d.lit("false"):
			v.SetBool(false)
		default:
			return d.fail("not a boolean")
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(d.number(), 10, t.Bits())
		if err != nil {
			return d.fail("not an integer of its size")
		}
		v.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(d.number(), 10, t.Bits())
		if err != nil {
			return d.fail("not an unsigned integer of its size")
		}
		v.SetUint(n)
		return nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(d.number(), t.Bits())
		if err != nil {
			return d.fail("not a number")
		}
		v.SetFloat(f)
		return nil
	}
	return d.fail("a kind it does not read: " + v.Kind().String())
}

//go:noinline
func (d *harnessDec) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// number is the next number's text, as JSON spells one (-?int frac? exp?);
// "" when there is none there, which no parse takes.
func (d *harnessDec) number() string {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	lead := d.i
	if n := digits(); n == 0 || n > 1 && d.b[lead] == '0' {
		d.i = start
		return ""
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			d.i = start
			return ""
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			d.i = start
			return ""
		}
	}
	s := d.b[start:d.i]
	return unsafe.String(unsafe.SliceData(s), len(s)) // parsed, never kept
}

// str reads a string at d.i (its opening quote). One without escapes is
// the data's own bytes.
func (d *harnessDec) str() (string, error) {
	d.i++ // the quote
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return "", d.fail("invalid UTF-8")
			}
			return unsafe.String(unsafe.SliceData(s), len(s)), nil
		case c == '\\':
			return d.strEscaped(start)
		case c < 0x20:
			return "", d.fail("a control character in a string")
		}
		d.i++
	}
	return "", d.fail("an unended string")
}

func (d *harnessDec) strEscaped(start int) (string, error) {
	var sb strings.Builder
	sb.Write(d.b[start:d.i])
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.ValidString(sb.String()) {
				return "", d.fail("invalid UTF-8")
			}
			return sb.String(), nil
		case c < 0x20:
			return "", d.fail("a control character in a string")
		case c != '\\':
			sb.WriteByte(c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", d.fail("an unended escape")
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			sb.WriteByte(e)
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", d.fail("a bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					d.i += 2
					if r2, ok = d.hex4(); !ok {
						return "", d.fail("a bad \\u escape")
					}
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", d.fail("a lone surrogate") // encoding/json writes U+FFFD: left to it
				}
			}
			sb.WriteRune(r)
		default:
			return "", d.fail("a bad escape")
		}
	}
	return "", d.fail("an unended string")
}

func (d *harnessDec) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	d.i += 4
	return rune(n), true
}

// skip passes over the next value and returns its bytes.
func (d *harnessDec) skip() ([]byte, error) {
	d.ws()
	start := d.i
	if d.i >= len(d.b) {
		return nil, d.fail("end of data")
	}
	var err error
	switch c := d.b[d.i]; {
	case c == '"':
		_, err = d.str()
	case c == '{':
		err = d.members(func(string) error { _, err := d.skip(); return err })
	case c == '[':
		err = d.elements(func() error { _, err := d.skip(); return err })
	case d.lit("true"), d.lit("false"), d.lit("null"):
	default:
		if _, perr := strconv.ParseFloat(d.number(), 64); perr != nil {
			err = d.fail("not a value")
		}
	}
	if err != nil {
		return nil, err
	}
	return d.b[start:d.i], nil
}

// anyValue decodes the next value as encoding/json does into an any.
func (d *harnessDec) anyValue() (any, error) {
	d.ws()
	if d.i >= len(d.b) {
		return nil, d.fail("end of data")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		m := map[string]any{}
		err := d.members(func(key string) error {
			x, err := d.anyValue()
			m[key] = x
			return err
		})
		return m, err
	case c == '[':
		out := []any{}
		err := d.elements(func() error {
			x, err := d.anyValue()
			out = append(out, x)
			return err
		})
		return out, err
	case c == '"':
		return d.str()
	case d.lit("true"):
		return true, nil
	case d.lit("false"):
		return false, nil
	case d.lit("null"):
		return nil, nil
	}
	f, err := strconv.ParseFloat(d.number(), 64)
	if err != nil {
		return nil, d.fail("not a value")
	}
	return f, nil
}

// members reads an object, calling each with the key and d before its value.
func (d *harnessDec) members(each func(key string) error) error {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return d.fail("not an object")
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return d.fail("not a key")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.fail("no colon")
		}
		d.i++
		if err := each(key); err != nil {
			return err
		}
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return nil
		}
		return d.fail("not a comma or a closing brace")
	}
}

func (d *harnessDec) elements(each func() error) error {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return d.fail("not an array")
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return nil
	}
	for {
		if err := each(); err != nil {
			return err
		}
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return nil
		}
		return d.fail("not a comma or a closing bracket")
	}
}

func (d *harnessDec) object(v reflect.Value) error {
	fields, err := harnessFields(v.Type())
	if err != nil {
		return err
	}
	return d.members(func(key string) error {
		idx, ok := fields.exact[key]
		if !ok {
			idx, ok = fields.folded[strings.ToLower(key)]
			if ok && !isASCII(key) {
				return d.fail("a key matched only without case, not in ASCII")
			}
		}
		if !ok {
			if d.strict {
				return errorf("json: unknown field %q", key)
			}
			_, err := d.skip()
			return err
		}
		return d.value(v.Field(idx))
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (d *harnessDec) mapValue(v reflect.Value) error {
	t := v.Type()
	if t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
		return d.fail("a map whose keys are not strings")
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	elem := reflect.New(t.Elem()).Elem()
	return d.members(func(key string) error {
		elem.SetZero()
		if err := d.value(elem); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), elem)
		return nil
	})
}

func (d *harnessDec) slice(v reflect.Value) error {
	t := v.Type()
	if t.Elem().Kind() == reflect.Uint8 {
		return d.fail("a byte slice") // base64 in encoding/json
	}
	n := 0
	err := d.elements(func() error {
		if n >= v.Cap() {
			grown := reflect.MakeSlice(t, n+1, 2*n+4)
			reflect.Copy(grown, v)
			v.Set(grown)
		}
		v.SetLen(n + 1)
		e := v.Index(n)
		e.SetZero()
		n++
		return d.value(e)
	})
	if err != nil {
		return err
	}
	if n == 0 {
		v.Set(reflect.MakeSlice(t, 0, 0)) // [] is an empty slice, not nil, as in encoding/json
		return nil
	}
	v.SetLen(n)
	return nil
}

// harnessFieldMap is a struct type's fields by JSON name: as spelled, and
// lower-cased for encoding/json's match without case.
type harnessFieldMap struct {
	exact, folded map[string]int
}

var harnessFieldCache sync.Map // reflect.Type → *harnessFieldMap, or error

func harnessFields(t reflect.Type) (*harnessFieldMap, error) {
	if f, ok := harnessFieldCache.Load(t); ok {
		if err, bad := f.(error); bad {
			return nil, err
		}
		return f.(*harnessFieldMap), nil
	}
	m := &harnessFieldMap{exact: map[string]int{}, folded: map[string]int{}}
	var bad error
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			bad = errorf("%w: %s embeds %s", errHarnessUnsupported, t, f.Type)
			break
		}
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, opts, _ := strings.Cut(tag, ",")
			if n == "-" && opts == "" {
				continue
			}
			if strings.Contains(opts, "string") {
				bad = errorf("%w: %s.%s is ,string", errHarnessUnsupported, t, f.Name)
				break
			}
			if n != "" {
				name = n
			}
		}
		if _, dup := m.exact[name]; dup {
			bad = errorf("%w: %s names %q twice", errHarnessUnsupported, t, name)
			break
		}
		m.exact[name] = i
		if low := strings.ToLower(name); !isASCII(name) {
			bad = errorf("%w: %s has a key not in ASCII", errHarnessUnsupported, t)
			break
		} else if _, dup := m.folded[low]; !dup {
			m.folded[low] = i
		}
	}
	if bad != nil {
		harnessFieldCache.Store(t, bad)
		return nil, bad
	}
	harnessFieldCache.Store(t, m)
	return m, nil
}

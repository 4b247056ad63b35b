package main

// The tool registry: tools come from harness/tools/*.json (description and
// JSON Schema exactly as sent to the model), implementations live in
// tools_*.go. A call is checked against its schema before it runs, and a
// tool that fails or panics becomes an error result the model can read,
// never a crash.
//
// A worker (floor 3): the engine calls it; it calls the sandbox,
// containment, the store's records and the ground, and hands session work
// up only through interfaces (shellJobs, toolHost's hooks).

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
)

// toolResult is what one call answers.
type toolResult struct {
	Text    string
	Images  []imagePart
	IsError bool
	Status  string // completed, failed, refused, cancelled
	Paths   []string
	Read    *readInfo // what a read saw: its lines and the file's hash (context hygiene)
}

// readInfo is what one read showed of a file: lines start to end of total,
// and the SHA-256 of the whole file, hex.
type readInfo struct {
	Start, End, Total int
	Hash              string
}

type toolFunc func(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult

// toolImpls maps a tool's name to its implementation.
var toolImpls = map[string]toolFunc{}

// toolFacts give a tool's description variables that are facts of this
// program rather than numbers (the library's tools, library.go).
var toolFacts = map[string]func(tb *toolbox) map[string]string{}

// fileStamp is what a read saw of a file, so write and edit can refuse to
// overwrite a file the model has not seen, or that changed since.
type fileStamp struct {
	size    int64
	modTime int64
}

// toolbox is the tools of one session: the offered set, its descriptions
// filled once (the prefix stays still), and the state the tools share.
type toolbox struct {
	root   string
	spec   *spec
	tools  []*toolSpec
	byName map[string]*toolSpec
	defs   json.RawMessage
	shell  string
	vision bool

	fsys fileSystem // nil: the disk (tools_file.go)

	// protected says whether a resolved path is one that is never read
	// into a prompt without asking (permissions.protectedFor); a search of
	// a folder leaves such files out. nil: none are.
	protected func(abs string) bool

	// Tools of the session beyond the harness's (tools_extra.go): MCP
	// servers' tools, added once before the first request.
	mcp   *mcpSet
	extra map[string]toolFunc

	mu    mutex
	reads map[string]fileStamp
	snap  func(abs string) // keeps a file as it is before a tool changes it (undo.go)

	display func() bool // a viewer is attached (show's requirement; link_cards.go); nil: never
	// offer is the offered_if conditions this session holds (tools_offer.go;
	// nil: every one), for a front end that adds a tool it implements.
	offer map[string]bool
	// unmetNote is what a front end adds, by tool, to the unavailable text
	// a call answers while its requirement is not met: how it comes to be
	// met there (the REPL's show: share the session).
	unmetNote map[string]string

	sandbox *sandbox // the session's OS sandbox for bash (sandbox.go); nil: made from config.yaml on first use
	// privateWeb says whether an allow rule names a host, so webfetch may
	// reach a loopback or private address there (web.go); nil: never.
	privateWeb func(host string) bool
	// webAllowed says whether the person's allow rules or always answers
	// cover webfetch on a host, so the network gate does not ask (web.go);
	// nil: none do.
	webAllowed func(host string) bool

	// log takes what only a developer needs (a panic's stack); nil: the
	// process's standard logger (stderr).
	log func(string)
}

// logf writes one line for a developer: to the session's log when the
// front end gave one, else stderr.
func (tb *toolbox) logf(msg string) {
	if tb != nil && tb.log != nil {
		tb.log(msg)
		return
	}
	log.Print(msg)
}

// newToolbox offers every tool the CLI has in an agent session: scope shared
// or cli, sessions agent or both.
func newToolbox(root string, vision bool) (*toolbox, error) {
	return newToolboxFor(root, vision, nil)
}

// newToolboxFor offers the tools whose offered_if hold in held
// (tools_offer.go); nil holds every condition. A tool left out stays
// callable by name, it is only not in the list.
func newToolboxFor(root string, vision bool, held map[string]bool) (*toolbox, error) {
	sp := theSpec()
	tb := &toolbox{root: root, spec: sp, byName: map[string]*toolSpec{}, shell: userShell(),
		vision: vision, reads: map[string]fileStamp{}, offer: held}
	for _, name := range sp.ToolNames {
		t := sp.Tools[name]
		if !offeredHere(t) {
			continue
		}
		if toolImpls[name] == nil && sessionTools[name] == nil {
			continue // a tool of the spec this build does not have yet
		}
		tb.byName[name] = t
		for _, a := range t.Aliases["cli"] {
			tb.byName[a] = t
		}
		if !offerHolds(t, held) {
			continue
		}
		tb.tools = append(tb.tools, t)
	}
	defs, err := tb.definitions()
	if err != nil {
		return nil, err
	}
	tb.defs = defs
	return tb, nil
}

func offeredHere(t *toolSpec) bool {
	return (t.Scope == "shared" || t.Scope == "cli") && (t.Sessions == "agent" || t.Sessions == "both") && t.Offered != "subagent"
}

// toolVars are the facts a description's {{variables}} are filled with: a
// tool's own limits first, then the session's facts.
func (tb *toolbox) toolVars(t *toolSpec) map[string]string {
	vars := map[string]string{"shell": filepath.Base(tb.shell)}
	for k, v := range t.Limits {
		vars[k] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if f := toolFacts[t.Name]; f != nil {
		for k, v := range f(tb) {
			vars[k] = v
		}
	}
	return vars
}

// definitions renders the tools array of a request.
func (tb *toolbox) definitions() (json.RawMessage, error) {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type def struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var defs []def
	for _, t := range tb.tools {
		vars := tb.toolVars(t)
		desc, err := fill(t.Description, vars)
		if err != nil {
			return nil, errorf("tools/%s.json description: %v", t.Name, err)
		}
		params, err := fill(string(t.Parameters), vars)
		if err != nil {
			return nil, errorf("tools/%s.json parameters: %v", t.Name, err)
		}
		p := json.RawMessage(params)
		if drop := tb.propertiesNotOffered(t); len(drop) > 0 {
			if p, err = narrowSchema(p, narrowSpec{Drop: drop}); err != nil {
				return nil, errorf("tools/%s.json properties_if: %v", t.Name, err)
			}
		}
		if t.Purpose {
			p, err = addPurpose(p, tb.spec.Purpose.Schema)
			if err != nil {
				return nil, err
			}
		}
		var compact strings.Builder
		if err := compactJSON(&compact, p); err != nil {
			return nil, errorf("tools/%s.json parameters: %v", t.Name, err)
		}
		defs = append(defs, def{"function", fn{t.Name, desc, json.RawMessage(compact.String())}})
	}
	return json.Marshal(defs)
}

func compactJSON(b *strings.Builder, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	out, err := json.Marshal(v)
	b.Write(out)
	return err
}

// addPurpose adds the optional purpose argument (purpose.json).
func addPurpose(params, schema json.RawMessage) (json.RawMessage, error) {
	var p map[string]any
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	props, _ := p["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		p["properties"] = props
	}
	var s any
	json.Unmarshal(schema, &s)
	props["purpose"] = s
	return json.Marshal(p)
}

// lookup finds a tool by name or former name.
func (tb *toolbox) lookup(name string) *toolSpec { return tb.byName[name] }

func (tb *toolbox) names() string {
	var n []string
	for _, t := range tb.tools {
		n = append(n, t.Name)
	}
	return strings.Join(n, ", ")
}

// run checks a call's arguments and runs it. The arguments are fixed up
// where a model's intent is plain (an integer sent as 10.0 or "10"), and
// any failure, panics included, becomes an error result.
func (tb *toolbox) run(ctx context.Context, t *toolSpec, args json.RawMessage) (res toolResult) {
	errs := tb.spec.Loop.ToolErrors
	defer func() {
		if p := recover(); p != nil {
			tb.logf(fmt.Sprintf("tool %s panicked: %v\n%s", t.Name, p, debug.Stack()))
			res = toolResult{Text: loopText(errs, "panic", "name", t.Name, "error", p), IsError: true, Status: "failed"}
		}
	}()
	fixed, err := checkArgs(t, args, tb.spec.Purpose.Schema)
	if err != nil {
		return toolResult{Text: err.Error(), IsError: true, Status: "failed"}
	}
	impl := toolImpls[t.Name]
	if impl == nil {
		impl = tb.extra[t.Name]
	}
	res = impl(tb, ctx, fixed)
	if res.Status == "" {
		res.Status = "completed"
		if res.IsError {
			res.Status = "failed"
		}
	}
	return res
}

// callPurpose is the purpose a call's arguments give (purpose.json), for a
// tool that takes one: one line, cut to purpose.json's max_chars; "" when
// the tool takes none or the model gave none. The tool never sees it.
func callPurpose(t *toolSpec, raw json.RawMessage) string {
	if t == nil || !t.Purpose {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	if s, ok := v.(string); ok { // double-encoded, as checkArgs reads it
		json.Unmarshal([]byte(s), &v)
	}
	obj, _ := v.(map[string]any)
	s, _ := obj["purpose"].(string)
	return cutRunes(strings.Join(strings.Fields(s), " "), theSpec().Purpose.MaxChars)
}

// checkArgs validates arguments against the tool's schema (the subset our
// schemas use: object, properties, required, additionalProperties, types,
// array items) and returns them with plain fix-ups applied.
func checkArgs(t *toolSpec, raw json.RawMessage, purpose json.RawMessage) (json.RawMessage, error) {
	errs := theSpec().Loop.ToolErrors
	schema := parsedSchema(t.Parameters)
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, errorf("%s", loopText(errs, "bad_json", "name", t.Name, "error", err))
	}
	// Some models double-encode: the arguments are a JSON string holding the object.
	if s, ok := v.(string); ok {
		if json.Unmarshal([]byte(s), &v) != nil {
			return nil, errorf("%s", loopText(errs, "bad_json", "name", t.Name, "error", "a string, not an object"))
		}
	}
	if t.Purpose {
		if obj, ok := v.(map[string]any); ok {
			delete(obj, "purpose")
		}
	}
	fixed, err := checkValue(schema, v, "", t.closed)
	if err != nil {
		return nil, errorf("%s", loopText(errs, "bad_args", "name", t.Name, "error", err, "expected", describeSchema(schema)))
	}
	out, _ := json.Marshal(fixed)
	return out, nil
}

// maxParsedSchemas bounds the cache of parsed schemas: MCP servers' tools
// are parsed too, and a server that changes its schemas must not grow it
// without end (past the bound a schema is parsed on each call, as before).
const maxParsedSchemas = 1024

// schemas are the tools' parameter schemas, parsed once each (every call
// is checked against its tool's): raw JSON → the parsed form, which no one
// changes.
var schemas struct {
	mutex
	m map[string]map[string]any
}

func parsedSchema(raw json.RawMessage) map[string]any {
	schemas.Lock()
	defer schemas.Unlock()
	if s, ok := schemas.m[string(raw)]; ok {
		return s
	}
	var s map[string]any
	json.Unmarshal(raw, &s)
	if schemas.m == nil {
		schemas.m = map[string]map[string]any{}
	}
	if len(schemas.m) < maxParsedSchemas {
		schemas.m[string(raw)] = s
	}
	return s
}

// checkValue checks v against schema; closed makes every object take only
// the properties it names unless it says additionalProperties itself.
func checkValue(schema map[string]any, v any, at string, closed bool) (any, error) {
	name := at
	if name == "" {
		name = "the arguments"
	}
	typ, _ := schema["type"].(string)
	switch typ {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, errorf("%s must be an object", name)
		}
		props, _ := schema["properties"].(map[string]any)
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				name, isName := r.(string) // an outside schema may hold anything (checkToolSchema refuses it)
				if !isName {
					continue
				}
				if _, ok := obj[name]; !ok {
					return nil, errorf("%s is missing", join(at, name))
				}
			}
		}
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if ap, ok := schema["additionalProperties"].(bool); ok && !ap || !ok && closed && schema["additionalProperties"] == nil {
					return nil, errorf("%s is not an argument of this tool", join(at, k))
				}
				continue
			}
			if obj[k] == nil {
				delete(obj, k) // null for an optional argument means "not given"
				continue
			}
			fv, err := checkValue(ps, obj[k], join(at, k), closed)
			if err != nil {
				return nil, err
			}
			obj[k] = fv
		}
		return obj, nil
	case "array":
		arr, ok := v.([]any)
		if !ok {
			if s, isStr := v.(string); isStr && json.Unmarshal([]byte(s), &arr) == nil {
				ok = true
			}
		}
		if !ok {
			return nil, errorf("%s must be an array", name)
		}
		items, _ := schema["items"].(map[string]any)
		for i := range arr {
			if items != nil {
				fv, err := checkValue(items, arr[i], fmt.Sprintf("%s[%d]", at, i), closed)
				if err != nil {
					return nil, err
				}
				arr[i] = fv
			}
		}
		return arr, nil
	case "string":
		switch x := v.(type) {
		case string:
			return x, nil
		case float64, bool:
			return fmt.Sprint(x), nil
		}
		return nil, errorf("%s must be a string", name)
	case "integer":
		switch x := v.(type) {
		case float64:
			if x == float64(int64(x)) {
				return int64(x), nil
			}
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				return n, nil
			}
		}
		return nil, errorf("%s must be an integer", name)
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil {
				return b, nil
			}
		}
		return nil, errorf("%s must be true or false", name)
	}
	return v, nil
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// describeSchema writes a schema as one short line a model can act on:
// {path: string (required), offset: integer}.
func describeSchema(schema map[string]any) string {
	typ, _ := schema["type"].(string)
	switch typ {
	case "object":
		props, _ := schema["properties"].(map[string]any)
		req := map[string]bool{}
		if r, ok := schema["required"].([]any); ok {
			for _, x := range r {
				if name, ok := x.(string); ok { // outside schemas: checkToolSchema refuses others
					req[name] = true
				}
			}
		}
		var keys []string
		for k := range props {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if req[keys[i]] != req[keys[j]] {
				return req[keys[i]]
			}
			return keys[i] < keys[j]
		})
		var parts []string
		for _, k := range keys {
			ps, _ := props[k].(map[string]any)
			s := k + ": " + describeSchema(ps)
			if req[k] {
				s += " (required)"
			}
			parts = append(parts, s)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case "array":
		items, _ := schema["items"].(map[string]any)
		return "[" + describeSchema(items) + "]"
	}
	return typ
}

// checkToolSchema says what is wrong with a tool's input schema from
// outside (an MCP server's tools/list), in the terms the code reads it by
// (checkValue, describeSchema): an object schema, whose properties is an
// object of schemas, whose required is a list of strings, whose items is a
// schema, and whose type is a string or a list of strings. nil when fine.
// depth bounds the walk (a schema is data; nesting past it is refused).
func checkToolSchema(raw json.RawMessage, depth int) error {
	var v any
	if len(raw) == 0 {
		return nil // no schema: the tool takes any arguments
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return errorf("the input schema is not JSON: %v", err)
	}
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return errorf("the input schema is a JSON %s, not an object", jsonTypeName(v))
	}
	if t, ok := m["type"].(string); ok && t != "object" {
		return errorf("the input schema's type is %q; a tool's arguments are an object", cutForError(t, 40))
	}
	return checkSchemaNode(m, "inputSchema", depth)
}

func checkSchemaNode(m map[string]any, at string, depth int) error {
	if depth <= 0 {
		return errorf("%s is nested too deep", at)
	}
	if t, ok := m["type"]; ok {
		switch x := t.(type) {
		case string:
		case []any:
			for i, e := range x {
				if _, ok := e.(string); !ok {
					return errorf("%s.type[%d] is a %s, not a string", at, i, jsonTypeName(e))
				}
			}
		default:
			return errorf("%s.type is a %s, not a string", at, jsonTypeName(t))
		}
	}
	if r, ok := m["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return errorf("%s.required is a %s, not a list of names", at, jsonTypeName(r))
		}
		for i, e := range list {
			if _, ok := e.(string); !ok {
				return errorf("%s.required[%d] is a %s, not a name", at, i, jsonTypeName(e))
			}
		}
	}
	if p, ok := m["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return errorf("%s.properties is a %s, not an object", at, jsonTypeName(p))
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if _, isBool := props[k].(bool); isBool {
					continue // true/false schemas are JSON Schema too: no shape to check
				}
				return errorf("%s.properties.%s is a %s, not a schema", at, cutForError(k, 40), jsonTypeName(props[k]))
			}
			if err := checkSchemaNode(ps, at+".properties."+cutForError(k, 40), depth-1); err != nil {
				return err
			}
		}
	}
	if it, ok := m["items"]; ok {
		switch x := it.(type) {
		case map[string]any:
			if err := checkSchemaNode(x, at+".items", depth-1); err != nil {
				return err
			}
		case bool, []any: // JSON Schema's boolean and tuple forms: read as no item schema
		default:
			return errorf("%s.items is a %s, not a schema", at, jsonTypeName(it))
		}
	}
	if ap, ok := m["additionalProperties"]; ok {
		switch ap.(type) {
		case bool, map[string]any:
		default:
			return errorf("%s.additionalProperties is a %s, not true, false or a schema", at, jsonTypeName(ap))
		}
	}
	return nil
}

// jsonTypeName names a decoded JSON value's type as a person reads it.
func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// userShell is the shell commands run in: $SHELL where it exists, else
// bash or sh; on Windows bash where it is installed, else cmd
// (tools_shell.go windowsShell).
func userShell() string {
	if runtime.GOOS == "windows" {
		return windowsShell(os.Getenv, fileExists, exec.LookPath)
	}
	if s := os.Getenv("SHELL"); s != "" {
		if _, err := os.Stat(s); err == nil {
			return s
		}
	}
	for _, s := range []string{"/bin/bash", "/usr/bin/bash", "/bin/sh"} {
		if _, err := os.Stat(s); err == nil {
			return s
		}
	}
	return "/bin/sh"
}

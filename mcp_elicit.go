package main

// MCP elicitation: a server asks the person for something in the middle of
// a call (elicitation/create). lembas offers the capability with both of
// the spec's modes — form (a flat schema of strings, numbers, booleans,
// single and multiple choices) and url (an address the person visits) —
// and asks through the same front end as ask_user (askuser.go): the REPL
// inline, the link as a _lembas/question card. Nobody to ask (-p, a plain
// ACP client, a link whose client takes no cards) is answered cancel: no
// one made a choice, so nothing was declined.
//
//	elicitation/create ─► nobody? ─► cancel (and a notice)
//	                   └► question 1: the message (and url) — accept / decline; dismissed: cancel
//	                      form: one question per field, Enter takes the schema's default
//	                      ─► values checked against the schema (asked again, at most elicit_rounds)
//	                      ─► {action: accept, content}

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// mcpAuthSpec is harness/mcp_auth.json: elicitation's and OAuth's texts,
// numbers and the registration the client sends.
type mcpAuthSpec struct {
	About        string             `json:"about"`
	Elicitation  json.RawMessage    `json:"elicitation"`
	Limits       map[string]float64 `json:"limits"`
	Texts        map[string]string  `json:"texts"`
	RedirectPath string             `json:"redirect_path"`
	Registration map[string]any     `json:"registration"`
	Wrapper      map[string]string  `json:"wrapper"`
}

// theMCPAuth reads harness/mcp_auth.json once, strictly; TestMCPAuthHarness
// catches a broken file, so here it panics.
//
//go:noinline
func theMCPAuth() *mcpAuthSpec { return mcpAuthFile.get() }

var mcpAuthFile = &harnessFile[mcpAuthSpec]{name: "harness/mcp_auth.json"}

//go:noinline
func (s *mcpAuthSpec) num(name string) float64 {
	v, ok := s.Limits[name]
	if !ok {
		panic("harness: mcp_auth.json has no limits." + name)
	}
	return v
}

//go:noinline
func (s *mcpAuthSpec) ms(name string) time.Duration {
	return time.Duration(s.num(name)) * time.Millisecond
}

func (s *mcpAuthSpec) text(key string, kv ...any) string {
	t, ok := s.Texts[key]
	if !ok {
		panic("harness: mcp_auth.json has no texts." + key)
	}
	return fillPairs(t, kv...)
}

// elicitField is one property of a form's requestedSchema.
type elicitField struct {
	Name        string
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Default     json.RawMessage `json:"default"`
	Enum        []any           `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []elicitChoice  `json:"oneOf"`
	AnyOf       []elicitChoice  `json:"anyOf"`
	Items       *elicitField    `json:"items"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Format      string          `json:"format"`
	required    bool
}

// elicitChoice is one titled choice (oneOf/anyOf {const, title}).
type elicitChoice struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// elicitRequest is elicitation/create's params.
type elicitRequest struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
	ElicitationID   string          `json:"elicitationId"`
}

// parseElicitRequest reads the params and, for a form, its fields in the
// order the server wrote them (the order the person is asked in). A schema
// outside what the spec allows (nested objects, no properties map) is an
// error the server hears as invalid params.
func parseElicitRequest(raw json.RawMessage) (elicitRequest, []elicitField, error) {
	var r elicitRequest
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, nil, errorf("elicitation/create params: %v", err)
	}
	if r.Mode == "" {
		r.Mode = "form"
	}
	sp := theMCPAuth()
	if len(r.Message) > int(sp.num("elicit_message_max")) {
		r.Message = cutRunes(r.Message, int(sp.num("elicit_message_max")))
	}
	switch r.Mode {
	case "url":
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return r, nil, errorf("elicitation/create: url mode needs an http(s) url, got %q", r.URL)
		}
		return r, nil, nil
	case "form":
	default:
		return r, nil, errorf("elicitation/create: unknown mode %q; use form or url", r.Mode)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if len(bytes.TrimSpace(r.RequestedSchema)) == 0 {
		return r, nil, nil
	}
	if err := json.Unmarshal(r.RequestedSchema, &schema); err != nil {
		return r, nil, errorf("elicitation/create requestedSchema: %v", err)
	}
	order, err := jsonObjectKeys(r.RequestedSchema, "properties")
	if err != nil {
		return r, nil, errorf("elicitation/create requestedSchema: %v", err)
	}
	if max := int(sp.num("elicit_fields_max")); len(order) > max {
		return r, nil, errorf("elicitation/create: %d fields, more than the %d lembas asks at once", len(order), max)
	}
	var fields []elicitField
	for _, name := range order {
		var f elicitField
		if err := json.Unmarshal(schema.Properties[name], &f); err != nil {
			return r, nil, errorf("elicitation/create field %s: %v", name, err)
		}
		f.Name, f.required = name, contains(schema.Required, name)
		switch f.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			if f.Items == nil || (len(f.Items.Enum) == 0 && len(f.Items.AnyOf) == 0) {
				return r, nil, errorf("elicitation/create field %s: an array must list its choices (items.enum or items.anyOf)", name)
			}
		default:
			return r, nil, errorf("elicitation/create field %s: type %q; use string, number, integer, boolean or an array of choices", name, f.Type)
		}
		fields = append(fields, f)
	}
	return r, fields, nil
}

// jsonObjectKeys is the keys of obj[key] in the order they were written.
func jsonObjectKeys(obj json.RawMessage, key string) ([]string, error) {
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(obj, &outer); err != nil {
		return nil, err
	}
	inner, ok := outer[key]
	if !ok {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(inner))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errorf("%s must be an object", key)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
		if !contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// choices are a field's options: value and label, in the schema's order.
func (f elicitField) choices() (vals []any, labels []string) {
	src := f
	if f.Type == "array" && f.Items != nil {
		src = *f.Items
	}
	if f.Type == "boolean" {
		sp := theMCPAuth()
		return []any{true, false}, []string{sp.text("elicit_yes"), sp.text("elicit_no")}
	}
	list := src.OneOf
	if len(list) == 0 {
		list = src.AnyOf
	}
	for _, c := range list {
		vals = append(vals, c.Const)
		labels = append(labels, firstNonEmpty(c.Title, fmt.Sprint(c.Const)))
	}
	for i, v := range src.Enum {
		vals = append(vals, v)
		l := fmt.Sprint(v)
		if i < len(src.EnumNames) && src.EnumNames[i] != "" {
			l = src.EnumNames[i]
		}
		labels = append(labels, l)
	}
	return vals, labels
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// question is the field as ask_user asks it: choices as options (the
// default first, so it is the one recommended), free text otherwise.
func (f elicitField) question(problem string) question {
	sp := theMCPAuth()
	q := question{Multiple: f.Type == "array"}
	text := firstNonEmpty(f.Title, f.Name)
	if f.Description != "" && f.Description != text {
		text += " — " + f.Description
	}
	vals, labels := f.choices()
	def := f.defaultValue()
	order := make([]int, 0, len(vals))
	for i := range vals {
		if def != nil && f.Type != "array" && jsonEqual(vals[i], def) {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	for _, i := range order {
		q.Options = append(q.Options, struct {
			Label       string `json:"label"`
			Description string `json:"description,omitempty"`
		}{Label: labels[i]})
	}
	var notes []string
	if len(vals) == 0 {
		notes = append(notes, sp.text("elicit_kind_"+f.Type))
	}
	if def != nil {
		b, _ := json.Marshal(def)
		shown := string(b)
		for i, v := range vals {
			if jsonEqual(v, def) {
				shown = labels[i] // a choice's default by the name the person reads
			}
		}
		notes = append(notes, sp.text("elicit_default", "value", shown))
	}
	if f.required {
		notes = append(notes, sp.text("elicit_required"))
	}
	if len(notes) > 0 {
		text += " (" + strings.Join(notes, "; ") + ")"
	}
	if problem != "" {
		text += " " + sp.text("elicit_again", "problem", problem)
	}
	q.Question = text
	return q
}

func (f elicitField) defaultValue() any {
	if len(bytes.TrimSpace(f.Default)) == 0 || string(bytes.TrimSpace(f.Default)) == "null" {
		return nil
	}
	var v any
	if json.Unmarshal(f.Default, &v) != nil {
		return nil
	}
	return v
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// value turns one answer into the field's value: ok false with a problem
// the person is shown when it does not fit; present false when the field
// is left out (skipped with no default).
func (f elicitField) value(a questionAnswer) (v any, present bool, problem string) {
	sp := theMCPAuth()
	vals, labels := f.choices()
	if a.Kind == "skipped" || a.Kind == "back" || (a.Kind == "custom" && strings.TrimSpace(a.Text) == "") {
		if d := f.defaultValue(); d != nil {
			return d, true, ""
		}
		if f.required {
			return nil, false, sp.text("elicit_missing")
		}
		return nil, false, ""
	}
	pick := func(label string) (any, bool) {
		for i, l := range labels {
			if l == label || fmt.Sprint(vals[i]) == label {
				return vals[i], true
			}
		}
		return nil, false
	}
	if len(vals) > 0 {
		var picked []any
		words := a.Labels
		if a.Kind == "custom" {
			words = strings.Split(a.Text, ",")
		}
		for _, w := range words {
			x, ok := pick(strings.TrimSpace(w))
			if !ok {
				return nil, false, sp.text("elicit_not_a_choice", "value", strings.TrimSpace(w), "choices", strings.Join(labels, ", "))
			}
			picked = append(picked, x)
		}
		if f.Type != "array" {
			if len(picked) != 1 {
				return nil, false, sp.text("elicit_one_choice")
			}
			return picked[0], true, ""
		}
		if f.MinItems != nil && len(picked) < *f.MinItems || f.MaxItems != nil && len(picked) > *f.MaxItems {
			return nil, false, sp.text("elicit_items", "min", intOr(f.MinItems, 0), "max", intOr(f.MaxItems, len(vals)))
		}
		return picked, true, ""
	}
	text := strings.TrimSpace(a.Text)
	switch f.Type {
	case "integer", "number":
		n, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) || (f.Type == "integer" && n != math.Trunc(n)) {
			return nil, false, sp.text("elicit_not_"+f.Type, "value", text)
		}
		if f.Minimum != nil && n < *f.Minimum || f.Maximum != nil && n > *f.Maximum {
			return nil, false, sp.text("elicit_range", "min", floatOr(f.Minimum, "−∞"), "max", floatOr(f.Maximum, "∞"))
		}
		if f.Type == "integer" {
			return int64(n), true, ""
		}
		return n, true, ""
	}
	if bad := checkFormat(f.Format, text); bad {
		return nil, false, sp.text("elicit_format", "value", text, "format", f.Format)
	}
	n := len([]rune(text))
	if f.MinLength != nil && n < *f.MinLength || f.MaxLength != nil && n > *f.MaxLength {
		if f.MaxLength == nil {
			return nil, false, sp.text("elicit_length_min", "min", *f.MinLength)
		}
		return nil, false, sp.text("elicit_length", "min", intOr(f.MinLength, 0), "max", *f.MaxLength)
	}
	return text, true, ""
}

// checkFormat says whether text fails the string formats the spec names
// (email, uri, date, date-time); an unknown format is not checked.
func checkFormat(format, text string) bool {
	switch format {
	case "email":
		at := strings.LastIndexByte(text, '@')
		return at < 1 || at == len(text)-1 || strings.ContainsAny(text, " \t")
	case "uri":
		u, err := url.Parse(text)
		return err != nil || u.Scheme == ""
	case "date":
		_, err := time.Parse("2006-01-02", text)
		return err != nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, text)
		return err != nil
	}
	return false
}

func intOr(p *int, d int) int {
	if p == nil {
		return d
	}
	return *p
}

func floatOr(p *float64, d string) string {
	if p == nil {
		return d
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// elicitResult is elicitation/create's answer.
type elicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// elicit asks the person what the server wants to know. who is the
// session's asker (nil with -p); notice tells the person something without
// asking (a cancel for want of anyone to ask).
func elicit(ctx context.Context, who asker, server string, req elicitRequest, fields []elicitField, notice func(string)) elicitResult {
	sp := theMCPAuth()
	if nobodyToAsk(who) {
		if notice != nil {
			notice(sp.text("elicit_nobody", "server", server))
		}
		return elicitResult{Action: "cancel"}
	}
	head := sp.text("elicit_head", "server", server, "message", req.Message)
	accept := sp.text("elicit_accept")
	if req.Mode == "url" {
		u, _ := url.Parse(req.URL)
		head = sp.text("elicit_url_head", "server", server, "message", req.Message, "url", req.URL, "host", u.Hostname())
		accept = sp.text("elicit_url_accept")
	}
	first := question{Question: head}
	for _, l := range []string{accept, sp.text("elicit_decline")} {
		first.Options = append(first.Options, struct {
			Label       string `json:"label"`
			Description string `json:"description,omitempty"`
		}{Label: l})
	}
	a := who.askUser(ctx, []question{first})
	if a.Dismissed || len(a.Answers) == 0 || a.Answers[0].Kind != "options" || len(a.Answers[0].Labels) == 0 {
		return elicitResult{Action: "cancel"}
	}
	if a.Answers[0].Labels[0] != accept {
		return elicitResult{Action: "decline"}
	}
	if req.Mode == "url" {
		return elicitResult{Action: "accept"}
	}
	problems := make([]string, len(fields))
	content := map[string]any{}
	for round := 0; round < int(sp.num("elicit_rounds")); round++ {
		var qs []question
		var idx []int
		for i, f := range fields {
			if round == 0 || problems[i] != "" {
				qs = append(qs, f.question(problems[i]))
				idx = append(idx, i)
			}
		}
		if len(qs) == 0 {
			break
		}
		ans := who.askUser(ctx, qs)
		if ans.Dismissed {
			return elicitResult{Action: "cancel"}
		}
		bad := false
		for k, i := range idx {
			qa := questionAnswer{Kind: "skipped"}
			if k < len(ans.Answers) {
				qa = ans.Answers[k]
			}
			v, present, problem := fields[i].value(qa)
			problems[i] = problem
			delete(content, fields[i].Name)
			if present {
				content[fields[i].Name] = v
			}
			bad = bad || problem != ""
		}
		if !bad {
			return elicitResult{Action: "accept", Content: content}
		}
	}
	if notice != nil {
		notice(sp.text("elicit_gave_up", "server", server))
	}
	return elicitResult{Action: "cancel"}
}

// elicitTimeout bounds how long a question waits for the person.
func elicitTimeout() time.Duration { return theMCPAuth().ms("elicit_timeout_ms") }

// authRetries is how many times one message is sent again after logins:
// a refresh or login, then each step-up.
func authRetries() int {
	sp := theMCPAuth()
	return int(sp.num("auth_attempts")) + int(sp.num("step_up_attempts"))
}

// elicitCapability is what initialize's capabilities say lembas can ask.
func elicitCapability() json.RawMessage { return theMCPAuth().Elicitation }

// mcpURLElicitationRequired is the error a server answers a call with when
// the person must first visit an address (2025-11-25 URL mode).
const mcpURLElicitationRequired = -32042

// urlRequired shows the person each address a call's -32042 error names,
// as a url-mode question, and tells the model what they said; the call is
// not retried here (the step happens in the person's browser, in its own
// time), so the model is told to call again once it is done. ok false:
// the error carried no address, and is told as any error.
func (s *mcpServer) urlRequired(ctx context.Context, tool string, re *rpcError) (toolResult, bool) {
	var data struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if json.Unmarshal(re.Data, &data) != nil || len(data.Elicitations) == 0 {
		return toolResult{}, false
	}
	sp := theMCPAuth()
	s.mu.Lock()
	var who asker
	if s.person != nil {
		who = s.person()
	}
	notice := s.notice
	s.mu.Unlock()
	var lines []string
	for _, raw := range data.Elicitations {
		req, _, err := parseElicitRequest(raw)
		if err != nil || req.Mode != "url" {
			continue
		}
		u, _ := url.Parse(req.URL)
		res := elicit(ctx, who, s.cfg.Name, req, nil, notice)
		lines = append(lines, sp.text("url_required_"+res.Action, "server", s.cfg.Name, "tool", tool, "host", u.Hostname()))
	}
	if len(lines) == 0 {
		return toolResult{}, false
	}
	return toolResult{Text: strings.Join(lines, "\n"), IsError: true, Status: "failed"}, true
}

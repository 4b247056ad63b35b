package main

// Elicitation through the real code: the conformance areas mcp_elicit (a
// request and the person's scripted answers → what the server is told)
// and mcp_www_authenticate (the challenge parser); a fake HTTP MCP server
// that asks in the middle of a call, answered at a real REPL and refused
// with -p; and fuzzing of the request and metadata parsers.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// scriptedAsker answers askUser from a script, one askAnswer per call, and
// keeps the questions it was asked.
type scriptedAsker struct {
	answers []askAnswer
	asked   [][]question
}

func (s *scriptedAsker) askUser(ctx context.Context, qs []question) askAnswer {
	s.asked = append(s.asked, qs)
	if len(s.answers) == 0 {
		return askAnswer{Dismissed: true}
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a
}

func init() {
	conformanceRunners["mcp_elicit"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Params  json.RawMessage `json:"params"`
			Nobody  bool            `json:"nobody"`
			Answers []askAnswer     `json:"answers"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		req, fields, err := parseElicitRequest(c.Params)
		if err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
		var who asker
		sa := &scriptedAsker{answers: c.Answers}
		if !c.Nobody {
			who = sa
		}
		var notices []string
		res := elicit(context.Background(), who, "srv", req, fields, func(s string) { notices = append(notices, s) })
		out := map[string]any{"action": res.Action}
		if res.Content != nil {
			b, _ := json.Marshal(res.Content)
			var norm any
			json.Unmarshal(b, &norm)
			out["content"] = norm
		}
		var qs []string
		for _, round := range sa.asked {
			for _, q := range round {
				var opts []string
				for _, o := range q.Options {
					opts = append(opts, o.Label)
				}
				qs = append(qs, q.Question+" ["+strings.Join(opts, "|")+"]")
			}
		}
		out["questions"] = qs
		if len(notices) > 0 {
			out["notices"] = notices
		}
		return out, nil
	}
	conformanceRunners["mcp_www_authenticate"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Values []string `json:"values"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		out := []any{}
		for _, ch := range parseWWWAuthenticate(c.Values) {
			out = append(out, map[string]any{"scheme": ch.Scheme, "params": ch.Params})
		}
		return map[string]any{"challenges": out}, nil
	}
}

// fakeElicitMCP is an HTTP MCP server whose tool "ask" asks the person
// (elicitation/create on the call's SSE stream) and answers with what it
// was told.
type fakeElicitMCP struct {
	srv     *httptest.Server
	schema  map[string]any
	mu      sync.Mutex
	told    string // the last answer to an elicitation
	replies chan json.RawMessage
	onGet   bool        // ask on the GET stream (as the TypeScript SDK does for a request not tied to a call)
	toGet   chan []byte // requests for the GET stream
}

func newFakeElicitMCP(t *testing.T, schema map[string]any) *fakeElicitMCP {
	f := &fakeElicitMCP{schema: schema, replies: make(chan json.RawMessage, 1), toGet: make(chan []byte, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeElicitMCP) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && f.onGet {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		for {
			select {
			case req := <-f.toGet:
				io.WriteString(w, "data: "+string(req)+"\n\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var msg map[string]any
	json.NewDecoder(r.Body).Decode(&msg)
	method, _ := msg["method"].(string)
	id, hasID := msg["id"]
	if method == "" && hasID { // the answer to our elicitation
		b, _ := json.Marshal(msg["result"])
		f.mu.Lock()
		f.told = string(b)
		f.mu.Unlock()
		f.replies <- b
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !hasID {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	reply := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	switch method {
	case "initialize":
		p, _ := msg["params"].(map[string]any)
		caps, _ := p["capabilities"].(map[string]any)
		if _, ok := caps["elicitation"]; !ok {
			reply(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "no-elicit"}})
			return
		}
		reply(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "e", "version": "1"}})
	case "tools/list":
		reply(map[string]any{"tools": []any{map[string]any{"name": "ask", "inputSchema": map[string]any{"type": "object"}}}})
	case "tools/call":
		if p, _ := msg["params"].(map[string]any); p["name"] == "visit" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32042,
				"message": "this request requires more information", "data": map[string]any{"elicitations": []any{map[string]any{
					"mode": "url", "elicitationId": "v-1", "url": "https://pay.example.com/authorize?x=1", "message": "Authorize the payment"}}}}})
			return
		}
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create",
			"params": map[string]any{"message": "Which deploy target?", "requestedSchema": f.schema}})
		if f.onGet {
			f.toGet <- req
			got := <-f.replies
			reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": "told: " + string(got)}}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		io.WriteString(w, "data: "+string(req)+"\n\n")
		fl.Flush()
		var got json.RawMessage
		select {
		case got = <-f.replies:
		case <-r.Context().Done():
			return
		}
		res, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "told: " + string(got)}}}})
		io.WriteString(w, "data: "+string(res)+"\n\n")
		fl.Flush()
	default:
		reply(map[string]any{})
	}
}

var elicitTestSchema = map[string]any{"type": "object", "properties": map[string]any{
	"target": map[string]any{"type": "string", "enum": []string{"staging", "prod"}, "default": "staging"},
	"note":   map[string]any{"type": "string", "title": "Note"},
}, "required": []string{"note"}}

// elicitSession writes a config with the fake server and runs lembas.
func elicitSession(t *testing.T, f *fakeElicitMCP) (*scriptedCaller, string) {
	t.Helper()
	authEnv(t)
	fm := newScriptedCaller()
	t.Cleanup(fm.srv.Close)
	t.Setenv("OPENAI_BASE_URL", fm.srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "x")
	t.Setenv("LEMBAS_MODEL", "mock")
	t.Setenv("NO_COLOR", "1")
	cfgDir := os.Getenv("XDG_CONFIG_HOME")
	os.MkdirAll(filepath.Join(cfgDir, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfgDir, "lembas", "config.yaml"), []byte("mcp:\n  deploy:\n    url: \""+f.srv.URL+"/mcp\"\n"), 0o600)
	proj := t.TempDir()
	setTrust(proj, true)
	return fm, proj
}

// TestMCPElicitREPL: the question shows at a real REPL (on a pipe), the
// person answers 1 (answer), a note and Enter (the default target); the
// server is told accept with both values.
func TestMCPElicitREPL(t *testing.T) {
	f := newFakeElicitMCP(t, elicitTestSchema)
	_, proj := elicitSession(t, f)
	inR, inW := io.Pipe()
	p := &conformancePerson{in: inW, prompt: theReplSpec().Texts["ask_prompt"], marker: "\x00never", done: " cached · "}
	answers := []string{"1", "ship it", ""} // fields in the order written: note (sorted by the encoder), target
	p.answer = func(n int) string {
		if n < len(answers) {
			return answers[n]
		}
		return ""
	}
	go io.WriteString(inW, "call the tool\n")
	code := run([]string{"--mode", "auto", "--cwd", proj, "-i"}, inR, p, p)
	out := p.all()
	if code != 0 || !strings.Contains(out, `told: {"action":"accept","content":{"note":"ship it","target":"staging"}}`) {
		t.Errorf("exit %d; the REPL printed:\n%s", code, out)
	}
	if !strings.Contains(out, "MCP server deploy asks: Which deploy target?") {
		t.Errorf("the question was not shown:\n%s", out)
	}
}

// TestMCPElicitOnGetStream: a request the server sends on the GET stream
// lembas opened after initialize reaches the person too.
func TestMCPElicitOnGetStream(t *testing.T) {
	authEnv(t)
	f := newFakeElicitMCP(t, elicitTestSchema)
	f.onGet = true
	s := newMCPServer(mcpServerConfig{Name: "deploy", Source: "config", Enabled: true, URL: f.srv.URL + "/mcp"}, nil)
	s.connect(context.Background())
	t.Cleanup(s.close)
	sa := &scriptedAsker{answers: []askAnswer{{Answers: []questionAnswer{{Kind: "options", Labels: []string{"Answer"}}}},
		{Answers: []questionAnswer{{Kind: "custom", Text: "n"}, {Kind: "options", Labels: []string{"prod"}}}}}}
	s.person = func() asker { return sa }
	r := s.callTool(context.Background(), mcpTool{Server: "deploy", Name: "ask"}, nil, false)
	if want := `told: {"action":"accept","content":{"note":"n","target":"prod"}}`; r.Text != want {
		t.Errorf("got %q, want %q", r.Text, want)
	}
}

// TestMCPElicitHeadless: with -p nobody is asked; the server is told
// cancel and the person reads why.
func TestMCPElicitHeadless(t *testing.T) {
	f := newFakeElicitMCP(t, elicitTestSchema)
	_, proj := elicitSession(t, f)
	var out, errb bytes.Buffer
	run([]string{"--mode", "auto", "--cwd", proj, "-p", "call the tool"}, strings.NewReader(""), &out, &errb)
	all := out.String() + errb.String()
	if got := f.lastTold(); got != `{"action":"cancel"}` {
		t.Errorf("-p told the server %q: %s", got, all)
	}
	if !strings.Contains(all, "nobody can answer here (-p)") {
		t.Errorf("-p gave no notice: %s", all)
	}
}

func (f *fakeElicitMCP) lastTold() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.told
}

func FuzzElicitRequest(f *testing.F) {
	f.Add([]byte(`{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string","default":"x"},"b":{"type":"array","items":{"enum":["p","q"]}}},"required":["a"]}}`))
	f.Add([]byte(`{"mode":"url","message":"go","url":"https://example.com/x","elicitationId":"1"}`))
	f.Add([]byte(`{"requestedSchema":{"properties":{"n":{"type":"integer","minimum":1,"maximum":3}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, fields, err := parseElicitRequest(data)
		if err != nil {
			return
		}
		for _, fl := range fields {
			fl.question("")
			fl.value(questionAnswer{Kind: "custom", Text: "1, 2"})
			fl.value(questionAnswer{Kind: "skipped"})
		}
		sa := &scriptedAsker{answers: []askAnswer{{Answers: []questionAnswer{{Kind: "options", Labels: []string{theMCPAuth().text("elicit_accept")}}}}}}
		elicit(context.Background(), sa, "s", req, fields, nil)
	})
}

func FuzzWWWAuthenticate(f *testing.F) {
	f.Add(`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b"`)
	f.Add(`Basic realm="x", Bearer error="insufficient_scope", scope="admin"`)
	f.Add(`Bearer abc==, Negotiate`)
	f.Add(`Bearer realm="a\"b\\`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range parseWWWAuthenticate([]string{s}) {
			if c.Scheme == "" {
				t.Fatalf("a challenge without a scheme from %q", s)
			}
		}
		bearerChallenge([]string{s})
	})
}

func FuzzOAuthMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://m.example/mcp","authorization_servers":["https://a.example"]}`), []byte(`{"issuer":"https://a.example","authorization_endpoint":"https://a.example/a","token_endpoint":"https://a.example/t","code_challenge_methods_supported":["S256"]}`))
	f.Add([]byte(`{"resource":1}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, prm, as []byte) {
		parseProtectedResource(prm, "https://m.example/.well-known/oauth-protected-resource", "https://m.example/mcp")
		parseAuthServerMeta(as, "https://a.example/.well-known/oauth-authorization-server", "https://a.example", true)
		resourceCovers(string(prm), "https://m.example/mcp")
		wellKnown(string(as), "oauth-authorization-server", "openid-configuration")
	})
}

// TestMCPAuthHarness: harness/mcp_auth.json decodes strictly, and every
// text and number mcp_auth.go, mcp_elicit.go and the login command ask for
// is there (a missing one would panic at the moment it is needed).
func TestMCPAuthHarness(t *testing.T) {
	sp := theMCPAuth()
	reText := regexp.MustCompile(`(?:sp|au|a\.sp|theMCPAuth\(\))\.text\("([a-z_0-9]+)"[,)]`)
	reNum := regexp.MustCompile(`(?:sp|au|a\.sp|theMCPAuth\(\))\.(?:num|ms)\("([a-z_]+)"\)`)
	found := 0
	for _, f := range []string{"mcp_auth.go", "mcp_elicit.go", "mcp_cmd.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code := string(src)
		if f == "mcp_cmd.go" {
			code = code[strings.Index(code, "func cmdMCPLogin"):]
		}
		for _, m := range reText.FindAllStringSubmatch(code, -1) {
			found++
			if _, ok := sp.Texts[m[1]]; !ok {
				t.Errorf("%s asks for mcp_auth.json texts.%s, which is missing", f, m[1])
			}
		}
		for _, m := range reNum.FindAllStringSubmatch(code, -1) {
			if _, ok := sp.Limits[m[1]]; !ok {
				t.Errorf("%s asks for mcp_auth.json limits.%s, which is missing", f, m[1])
			}
		}
	}
	if found < 40 {
		t.Errorf("only %d text look-ups found; the pattern no longer matches the code", found)
	}
	for _, k := range []string{"url_required_accept", "url_required_decline", "url_required_cancel", "elicit_kind_string", "elicit_kind_number", "elicit_kind_integer", "elicit_kind_boolean", "elicit_kind_array",
		"elicit_not_integer", "elicit_not_number"} { // asked for by a name made at run time
		if _, ok := sp.Texts[k]; !ok {
			t.Errorf("mcp_auth.json has no texts.%s", k)
		}
	}
	if !strings.Contains(sp.Texts["login_show"], sp.Wrapper["login_marker"]) {
		t.Error("login_show no longer carries the marker the conformance wrapper looks for")
	}
	var caps map[string]any
	if json.Unmarshal(sp.Elicitation, &caps) != nil || caps["form"] == nil || caps["url"] == nil {
		t.Errorf("elicitation capability %s", sp.Elicitation)
	}
}

// TestElicitFieldOrder: fields are asked in the order the server wrote
// them, not sorted (the conformance files are rewritten with sorted keys,
// so this one is a raw string).
func TestElicitFieldOrder(t *testing.T) {
	_, fields, err := parseElicitRequest(json.RawMessage(`{"message":"m","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"boolean"},"mid":{"type":"integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "zeta,alpha,mid" {
		t.Errorf("order %v", names)
	}
}

// TestMCPElicitLink: in a session the web UI opened over the device link,
// a server's question goes to the instance as _lembas/question cards (the
// same path as ask_user), and the answers reach the server.
func TestMCPElicitLink(t *testing.T) {
	f := newFakeElicitMCP(t, elicitTestSchema)
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\nmcp:\n  deploy:\n    url: \""+f.srv.URL+"/mcp\"\n")
	e.fi.model.push(callsReply(fakeCall{"mcp__deploy__ask", map[string]any{}}), textReply("ok"))
	e.startService()
	l := e.link()
	seen := make(chan map[string]any, 4)
	n := 0
	cardsAnswer(l, "_lembas/question", seen, func(m map[string]any) any {
		n++
		if n == 1 {
			return map[string]any{"outcome": "answered", "answers": []any{map[string]any{"kind": "options", "labels": []any{"Answer"}}}}
		}
		return map[string]any{"outcome": "answered", "answers": []any{map[string]any{"kind": "custom", "text": "from the web"},
			map[string]any{"kind": "options", "labels": []any{"prod"}}}}
	})
	sid := e.newSession(l, e.proj, "auto")
	l.result("session/prompt", promptParams(sid, "deploy", "q-1"))
	if got := f.lastTold(); got != `{"action":"accept","content":{"note":"from the web","target":"prod"}}` {
		t.Errorf("the server was told %q", got)
	}
	if len(seen) != 2 {
		t.Errorf("%d question cards, want 2", len(seen))
	}
}

// TestMCPElicitURLRequired: a call answered with -32042 (URL elicitation
// required) shows the person the address as a url-mode question, and the
// model is told what they said; with nobody to ask it is told that too.
func TestMCPElicitURLRequired(t *testing.T) {
	authEnv(t)
	f := newFakeElicitMCP(t, elicitTestSchema)
	s := newMCPServer(mcpServerConfig{Name: "pay", Source: "config", Enabled: true, URL: f.srv.URL + "/mcp"}, nil)
	s.connect(context.Background())
	t.Cleanup(s.close)
	sa := &scriptedAsker{answers: []askAnswer{{Answers: []questionAnswer{{Kind: "options", Labels: []string{theMCPAuth().text("elicit_url_accept")}}}}}}
	s.person = func() asker { return sa }
	r := s.callTool(context.Background(), mcpTool{Server: "pay", Name: "visit"}, nil, false)
	if !r.IsError || !strings.Contains(r.Text, "at pay.example.com") || !strings.Contains(r.Text, "said they would go there") {
		t.Errorf("accepted: %+v", r)
	}
	if len(sa.asked) != 1 || !strings.Contains(sa.asked[0][0].Question, "https://pay.example.com/authorize?x=1") {
		t.Errorf("the person was asked %v", sa.asked)
	}
	s.person = func() asker { return nil }
	r = s.callTool(context.Background(), mcpTool{Server: "pay", Name: "visit"}, nil, false)
	if !r.IsError || !strings.Contains(r.Text, "nobody answered") {
		t.Errorf("nobody: %+v", r)
	}
}

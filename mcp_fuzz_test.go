package main

// FuzzMCPClient: hostile MCP servers through the real client. A transport
// in this file plays the server: it answers initialize properly, then gives
// tools/list, tools/call, a progress notification and an elicitation request
// from the fuzzer's bytes, as they come (valid JSON or not). The client must
// never panic, never offer a tool whose schema it could not read, and turn
// every answer into a tool result.

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// scriptedMCP is an mcpTransport whose server side is a function of the
// requests it is sent.
type scriptedMCP struct {
	in   chan []byte
	gone chan any
	once sync.Once

	list, result, progress, elicit []byte

	mu      sync.Mutex
	answers []string // the client's answers to the server's requests (elicitation)
}

// newScriptedMCP takes the server's four answers; bytes that are not JSON
// go as a JSON string (hostile in shape, yet a frame the client can match
// to its request: garbage framing is FuzzRPCFrame's, and here it would
// only make every run wait out a timeout).
func newScriptedMCP(list, result, progress, elicit []byte) *scriptedMCP {
	v := func(b []byte) []byte {
		if json.Valid(b) {
			return b
		}
		return rawJSON(string(b))
	}
	return &scriptedMCP{in: make(chan []byte, 16), gone: make(chan any), list: v(list), result: v(result), progress: v(progress), elicit: v(elicit)}
}

func (f *scriptedMCP) readFrame() ([]byte, error) {
	select {
	case b := <-f.in:
		return b, nil
	case <-f.gone:
		return nil, errLinkClosed
	}
}

func (f *scriptedMCP) push(b []byte) {
	select {
	case f.in <- b:
	case <-f.gone:
	}
}

func (f *scriptedMCP) writeFrame(b []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(b, &m) != nil || m.ID == nil || m.Method == "" {
		if m.ID != nil && m.Method == "" {
			f.mu.Lock()
			f.answers = append(f.answers, string(b))
			f.mu.Unlock()
		}
		return nil // a notification, or the client's answer (elicitation)
	}
	reply := func(result []byte) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + string(result) + `}`)
	}
	switch m.Method {
	case "initialize":
		go f.push(reply([]byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`)))
	case "tools/list":
		go f.push(reply(f.list))
	case "tools/call":
		go func() {
			f.push([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":` + string(f.progress) + `}`))
			f.push([]byte(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":` + string(f.elicit) + `}`))
			f.push(reply(f.result))
		}()
	}
	return nil
}

func (f *scriptedMCP) close()             { f.once.Do(func() { close(f.gone) }) }
func (f *scriptedMCP) tail() string       { return "" }
func (f *scriptedMCP) setVersion(string)  {}
func (f *scriptedMCP) exited() <-chan any { return f.gone }

// hostileMCP runs one server through connect, the offer and one call of
// each offered tool (at most three), and checks what the client kept.
func hostileMCP(t *testing.T, list, result, progress, elicit []byte) {
	var logs []string
	var mu sync.Mutex
	// Short bounds: an answer the client cannot match to its request (not
	// JSON) is waited for until the bound, which is the right behaviour.
	cfg := mcpServerConfig{Name: "hostile", Enabled: true, Command: "unused", StartupTimeout: 300 * time.Millisecond, CallTimeout: 300 * time.Millisecond}
	s := newMCPServer(cfg, func(m string) { mu.Lock(); logs = append(logs, m); mu.Unlock() })
	tr := newScriptedMCP(list, result, progress, elicit)
	s.open = func(context.Context) (mcpTransport, error) { return tr, nil }
	s.connect(context.Background())
	defer s.close()
	state, _, tools := s.status()
	if state != "ready" {
		return
	}
	m := &mcpSet{servers: []*mcpServer{s}, byName: map[string]mcpTool{}, warned: map[string]bool{}}
	for _, n := range m.fix() {
		if !utf8.ValidString(n) {
			t.Errorf("a notice is not UTF-8: %q", n)
		}
	}
	for i, mt := range tools {
		if err := checkToolSchema(mt.Schema, 128); err != nil {
			t.Fatalf("tool %q offered with a schema the client cannot read: %v", mt.Name, err)
		}
		if i >= 3 {
			break
		}
		ts := m.toolSpecOf(mt)
		args, err := checkArgs(ts, json.RawMessage(`{"text":"x","n":1}`), nil)
		if err != nil {
			args = json.RawMessage(`{}`)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res := s.callTool(ctx, mt, args, false)
		cancel()
		if res.Status == "" && !res.IsError && res.Text == "" && len(res.Images) == 0 {
			t.Errorf("tool %q: an empty result with no status", mt.Name)
		}
	}
}

func FuzzMCPClient(f *testing.F) {
	good := `{"tools":[{"name":"echo","description":"d","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`
	f.Add([]byte(good), []byte(`{"content":[{"type":"text","text":"hi"}]}`), []byte(`{"progressToken":"lembas-1","progress":1}`), []byte(`{"message":"m","requestedSchema":{"type":"object","properties":{}}}`))
	f.Add([]byte(`{"tools":[{"name":"bad","inputSchema":{"type":"object","required":[1]}},{"name":"ok","inputSchema":{"type":"object"}}]}`), []byte(`{"content":"nope"}`), []byte(`{"progressToken":7}`), []byte(`[]`))
	f.Add([]byte(`{"tools":[{"name":"p","inputSchema":{"type":"object","properties":{"a":1,"b":{"type":7},"c":{"items":"x"}}}}]}`), []byte(`{"content":[{"type":"image","data":"!!","mimeType":7}]}`), []byte(`null`), []byte(`{"requestedSchema":{"properties":{"a":{"type":["string",1]}}}}`))
	f.Add([]byte(`{"tools":[{"name":"deep","inputSchema":`+strings.Repeat(`{"type":"object","properties":{"a":`, 200)+`{}`+strings.Repeat(`}}`, 200)+`}]}`), []byte(`{"content":[{"type":"resource","resource":{"uri":1}}],"structuredContent":[1]}`), []byte(`{"progressToken":{"a":1}}`), []byte(`{"mode":"url","url":7}`))
	f.Add([]byte(`{"tools":{"name":"x"}}`), []byte(`{"isError":"yes"}`), []byte(`"x"`), []byte(`{"requestedSchema":{"type":"object","properties":{"a":{"type":"string","enum":[1,{}]}},"required":[2]}}`))
	f.Add([]byte(`{"tools":[{"name":"x","inputSchema":[]},{"name":"y","inputSchema":"s"},{"name":"z","inputSchema":{"type":"string"}}],"nextCursor":5}`), []byte(`not json`), []byte(`{`), []byte("\xff"))
	f.Fuzz(func(t *testing.T, list, result, progress, elicit []byte) {
		if len(list)+len(result)+len(progress)+len(elicit) > 1<<16 {
			return
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(time.Minute):
				buf := make([]byte, 1<<20)
				panic("hostile MCP input hung the client:\n" + string(buf[:runtime.Stack(buf, true)]))
			}
		}()
		hostileMCP(t, list, result, progress, elicit)
		close(done)
	})
}

// TestMCPMalformedSchemaLeftOut: a server whose tools/list holds one tool
// with required: [1] (the schema that used to panic the process) keeps its
// other tools; the bad one is left out with a warning naming the server,
// the tool and the fault.
func TestMCPMalformedSchemaLeftOut(t *testing.T) {
	cfg := mcpServerConfig{Name: "mixed", Enabled: true, Command: "unused", StartupTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}
	s := newMCPServer(cfg, func(string) {})
	list := `{"tools":[{"name":"bad","inputSchema":{"type":"object","required":[1]}},{"name":"good","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`
	tr := newScriptedMCP([]byte(list), []byte(`{"content":[{"type":"text","text":"ok"}]}`), []byte(`{}`), []byte(`{}`))
	s.open = func(context.Context) (mcpTransport, error) { return tr, nil }
	s.connect(context.Background())
	defer s.close()
	state, reason, tools := s.status()
	if state != "ready" {
		t.Fatalf("state %s (%s), want ready", state, reason)
	}
	if len(tools) != 1 || tools[0].Name != "good" {
		t.Fatalf("tools %v, want only good", tools)
	}
	m := &mcpSet{servers: []*mcpServer{s}, byName: map[string]mcpTool{}, warned: map[string]bool{}}
	notes := strings.Join(m.fix(), "\n")
	for _, want := range []string{"mixed", "bad", "required[0]"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q do not name %q", notes, want)
		}
	}
	// The arguments check on the bad schema, had it come through, answers
	// instead of panicking.
	ts := &toolSpec{Name: "bad", Parameters: json.RawMessage(`{"type":"object","required":[1]}`)}
	if _, err := checkArgs(ts, json.RawMessage(`{}`), nil); err != nil {
		t.Errorf("checkArgs on required [1]: %v", err)
	}
}

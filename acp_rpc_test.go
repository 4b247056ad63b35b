package main

// The JSON-RPC layer and the ACP mappings in process: conformance runners
// (jsonrpc, acp_tool, acp_permission), the frame reader's fuzz target, the
// approval timeout, and the benchmarks of the measurements.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func init() {
	conformanceRunners["jsonrpc"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Frame string `json:"frame"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		keys := newRPCConn(nil, nil, theACPSpec().RPC, acpKeys(), nil).keys
		m, rerr := parseFrame([]byte(in.Frame), theACPSpec().RPC, keys)
		out := map[string]any{}
		if rerr != nil {
			out["kind"], out["code"] = "error", rerr.Code
			out["id"] = json.RawMessage("null")
			if m.ID != nil {
				out["id"] = m.ID
			}
			if rerr.Message == "" {
				return nil, fmt.Errorf("an error without a sentence")
			}
			if m.broken {
				out["answered"] = false // a broken response: the waiting call fails, the peer hears nothing
			}
			return out, nil
		}
		switch {
		case m.Method != "" && m.ID != nil:
			out["kind"], out["method"] = "request", m.Method
		case m.Method != "":
			out["kind"], out["method"] = "notification", m.Method
		default:
			out["kind"] = "response"
		}
		if m.ID != nil {
			if string(m.ID) == "1.50" {
				out["id_raw"] = string(m.ID) // echoed byte for byte
			} else {
				out["id"] = m.ID
			}
		}
		return out, nil
	}
	conformanceRunners["acp_tool"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		root := filepath.FromSlash("/p")
		if runtime.GOOS == "windows" {
			root = `C:\p`
		}
		info, _, _ := toolCallInfo(root, "c1", in.Tool, in.Args)
		locs := []string{}
		for _, l := range info["locations"].([]map[string]any) {
			s := relPath(root, l["path"].(string))
			if n, ok := l["line"]; ok {
				s += fmt.Sprintf(":%v", n)
			}
			locs = append(locs, s)
		}
		return map[string]any{"kind": info["kind"], "title": info["title"], "locations": locs}, nil
	}
	conformanceRunners["acp_permission"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Options []string            `json:"options"`
			Answer  acpPermissionAnswer `json:"answer"`
			Error   bool                `json:"error"`
			Timeout bool                `json:"timeout"`
			Scopes  map[string]string   `json:"scopes"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		req := approvalRequest{CallID: "c1", Tool: "bash", Input: "ls", Options: in.Options, Scopes: in.Scopes}
		p := permissionParams("s1", req, map[string]any{"toolCallId": "c1", "title": "ls"})
		var opts []string
		for _, o := range p["options"].([]map[string]string) {
			opts = append(opts, o["optionId"]+"="+o["kind"])
		}
		var err error
		if in.Error || in.Timeout {
			err = errors.New("no answer")
		}
		ans := permissionAnswer(req, in.Answer, err, in.Timeout)
		out := map[string]any{"choice": ans.Choice}
		for k, v := range map[string]string{"feedback": ans.Feedback, "command": ans.Command, "why": ans.Why} {
			if v != "" {
				out[k] = v
			}
		}
		res := map[string]any{"options": opts, "answer": out}
		if sc, ok := p["_meta"].(map[string]any)["lembas"].(map[string]any)["always_scope"]; ok {
			res["always_scope"] = sc // what allow_always would allow, in words
		}
		return res, nil
	}
}

func TestACPSpec(t *testing.T) {
	sp := theACPSpec()
	if sp.RPC.MaxMessageBytes < sp.Prompt.MaxPromptBytes*4/3 {
		t.Errorf("max_message_bytes %d cannot carry a whole prompt of %d bytes in base64", sp.RPC.MaxMessageBytes, sp.Prompt.MaxPromptBytes)
	}
	for _, k := range []string{"shell", "edit", "read", "search"} {
		if sp.Kinds[k] == "" {
			t.Errorf("acp.json kinds has no %s", k)
		}
	}
	for _, t2 := range theSpec().Tools {
		if _, ok := sp.Kinds[t2.Block]; !ok {
			t.Errorf("tools/%s.json's block %q has no ACP kind in acp.json", t2.Name, t2.Block)
		}
	}
	for _, k := range []string{"resource", "resource_link", "resource_link_outside", "attachment", "image_no_vision"} {
		if sp.Texts[k] == "" {
			t.Errorf("acp.json texts has no %s", k)
		}
	}
}

// TestRPCConn runs the layer on pipes: concurrent calls both ways, ids
// echoed as sent, a frame over the limit answered and the stream kept.
func TestRPCConn(t *testing.T) {
	inR, inW := io.Pipe()
	out := &lockedBuffer{b: &bytes.Buffer{}}
	w := &lineWriter{w: out}
	c := newRPCConn(newLineReader(inR, 200), w, rpcLimits{MaxMessageBytes: 200, MaxDepth: 8}, nil, func(string) {})
	c.onRequest = func(r *rpcCall) {
		r.reply(map[string]string{"method": r.Method}, nil)
	}
	done := make(chan error)
	go func() { done <- c.serve() }()
	results := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() {
			var res map[string]any
			results <- c.call(context.Background(), "ping", map[string]int{"n": 1}, &res)
		}()
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":"a b","method":"one"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":"x","method":"`+strings.Repeat("y", 300)+`"}`)
	// Answer our two calls, out of order, one with a differently written id.
	for !strings.Contains(out.String(), `"id":2`) || !strings.Contains(out.String(), `"id":1`) {
		time.Sleep(time.Millisecond)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1.0,"error":{"code":-32000,"message":"busy"}}`)
	var errs []string
	for i := 0; i < 2; i++ {
		if err := <-results; err != nil {
			errs = append(errs, err.Error())
		}
	}
	if strings.Join(errs, "|") != "busy" {
		t.Errorf("call errors %q", errs)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, `{"jsonrpc":"2.0","id":"a b","result":{"method":"one"}}`) {
		t.Errorf("id not echoed exactly:\n%s", got)
	}
	if !strings.Contains(got, `"id":null,"error":{"code":-32600,"message":"the message is larger than 200 bytes`) {
		t.Errorf("big frame not answered:\n%s", got)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestApprovalTimeout: no answer within the timeout is a denial the model
// is told of as such.
func TestApprovalTimeout(t *testing.T) {
	inR, _ := io.Pipe()
	out := &lockedBuffer{b: &bytes.Buffer{}}
	a := newACPAgent(context.Background(), newLineReader(inR, 1<<20), &lineWriter{w: out}, func(string) {})
	tb, err := newToolbox(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	s := &acpSession{a: a, id: "s1", tools: map[string]*acpTool{},
		e: newEngine(nil, tb, newPermissions("manual", tb.root, false), nil, &session{ID: "s1"}, 0)}
	ans := approveWithin(context.Background(), s, approvalRequest{CallID: "c1", Tool: "bash", Input: "ls", Options: []string{"once", "deny"}}, 50*time.Millisecond)
	if ans.Choice != "deny" || ans.Why != "timeout" {
		t.Errorf("answer %+v", ans)
	}
	if !strings.Contains(out.String(), `"method":"session/request_permission"`) {
		t.Errorf("nothing was asked: %s", out.String())
	}
	if got := s.e.perm.refusal(tb.lookup("bash"), decision{}, ans); !strings.Contains(got, "in time") {
		t.Errorf("the model is told %q", got)
	}
}

// FuzzRPCFrame feeds any bytes to the frame reader and parser: they never
// panic, every error carries a standard code and a sentence, and what
// parses as a message has a kind.
func FuzzRPCFrame(f *testing.F) {
	var cf conformanceFile
	data, _ := harnessFS.ReadFile("harness/conformance/jsonrpc.json")
	json.Unmarshal(data, &cf)
	for _, c := range cf.Cases {
		var in struct{ Frame string }
		json.Unmarshal(c.Input, &in)
		f.Add([]byte(in.Frame + "\n"))
	}
	f.Add([]byte("\r\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\r\n{"))
	lim := rpcLimits{MaxMessageBytes: 4096, MaxDepth: 16}
	keys := newRPCConn(nil, nil, lim, acpKeys(), nil).keys
	codes := map[int]bool{rpcParseError: true, rpcInvalidRequest: true}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newLineReader(bytes.NewReader(b), lim.MaxMessageBytes)
		for i := 0; i < 1000; i++ {
			frame, err := r.readFrame()
			if err == errFrameTooBig {
				continue
			}
			if err != nil {
				return
			}
			if bytes.ContainsRune(frame, '\n') {
				t.Fatalf("a frame holds a line end: %q", frame)
			}
			m, rerr := parseFrame(frame, lim, keys)
			if rerr != nil {
				if !codes[rerr.Code] || rerr.Message == "" {
					t.Fatalf("error %+v for %q", rerr, frame)
				}
				continue
			}
			if m.JSONRPC != "2.0" || (m.Method == "" && m.ID == nil) {
				t.Fatalf("parsed %q as %+v", frame, m)
			}
			if !json.Valid(frame) {
				t.Fatalf("accepted invalid JSON %q", frame)
			}
		}
	})
}

// acpBench is an in-process agent on pipes, for the benchmarks.
type acpBench struct {
	in  io.WriteCloser
	out *json.Decoder
	n   int
}

func newACPBench(b *testing.B) *acpBench {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := newACPAgent(context.Background(), newLineReader(inR, theACPSpec().RPC.MaxMessageBytes), &lineWriter{w: outW}, func(string) {})
	go a.run(context.Background())
	b.Cleanup(func() { inW.Close() })
	return &acpBench{in: inW, out: json.NewDecoder(outR)}
}

func (c *acpBench) req(method string, params any) int {
	c.n++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.n, "method": method, "params": params})
	c.in.Write(append(b, '\n'))
	return c.n
}

// until reads messages until one satisfies stop, and returns it.
func (c *acpBench) until(b *testing.B, stop func(m map[string]any) bool) map[string]any {
	for {
		var m map[string]any
		if err := c.out.Decode(&m); err != nil {
			b.Fatal(err)
		}
		if stop(m) {
			return m
		}
	}
}

func isResponse(id int) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["method"] == nil && m["id"] == float64(id) }
}

func benchEnv(b *testing.B) (*fakeModel, string) {
	f := newFakeModel(b)
	b.Setenv("OPENAI_BASE_URL", f.url())
	b.Setenv("OPENAI_API_KEY", "x")
	b.Setenv("LEMBAS_MODEL", "mock")
	b.Setenv("XDG_STATE_HOME", b.TempDir())
	b.Setenv("XDG_CONFIG_HOME", b.TempDir())
	dir, _ := filepath.EvalSymlinks(b.TempDir())
	return f, dir
}

// BenchmarkACPFirstChunk measures, with a fake model that answers at once,
// the time from initialize to the first agent_message_chunk: initialize,
// session/new, session/prompt, and the first piece of the answer.
func BenchmarkACPFirstChunk(b *testing.B) {
	f, dir := benchEnv(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f.push(textReply("hello there"))
		c := newACPBench(b)
		b.StartTimer()
		c.until(b, isResponse(c.req("initialize", map[string]any{"protocolVersion": 1})))
		r := c.until(b, isResponse(c.req("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))
		sid := r["result"].(map[string]any)["sessionId"]
		id := c.req("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
		c.until(b, func(m map[string]any) bool {
			u, _ := m["params"].(map[string]any)
			up, _ := u["update"].(map[string]any)
			return up["sessionUpdate"] == "agent_message_chunk"
		})
		b.StopTimer()
		c.until(b, isResponse(id))
		c.in.Close()
		b.StartTimer()
	}
}

// BenchmarkACP20Sessions opens 20 sessions on one connection and reports
// the Go heap they hold (after a GC) as heap-bytes/20-sessions.
func BenchmarkACP20Sessions(b *testing.B) {
	_, dir := benchEnv(b)
	var total uint64
	for i := 0; i < b.N; i++ {
		c := newACPBench(b)
		c.until(b, isResponse(c.req("initialize", map[string]any{"protocolVersion": 1})))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for j := 0; j < 20; j++ {
			c.until(b, isResponse(c.req("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		total += after.HeapAlloc - before.HeapAlloc
		c.in.Close()
	}
	b.ReportMetric(float64(total)/float64(b.N), "heap-bytes/20-sessions")
}

// BenchmarkACP20SessionsRSS runs the real binary, opens 20 sessions and
// reports its resident memory (Linux only: /proc).
func BenchmarkACP20SessionsRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc")
	}
	_, dir := benchEnv(b)
	for i := 0; i < b.N; i++ {
		p := startACPBench(b, dir)
		p.until(b, isResponse(p.req("initialize", map[string]any{"protocolVersion": 1})))
		for j := 0; j < 20; j++ {
			p.until(b, isResponse(p.req("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))
		}
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%f", &kb)
				b.ReportMetric(kb, "rss-kB")
			}
		}
		p.in.Close()
		p.wait()
	}
}

type acpBenchProc struct {
	acpBench
	pid  int
	wait func()
}

// startACPBench starts the real binary with the benchmark's environment.
func startACPBench(b *testing.B, dir string) *acpBenchProc {
	cmd := exec.Command(lembasBin(b), "serve", "--stdio")
	cmd.Dir = dir
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &acpBenchProc{acpBench: acpBench{in: in, out: json.NewDecoder(out)}, pid: cmd.Process.Pid,
		wait: func() { cmd.Wait() }}
}

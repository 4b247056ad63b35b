package main

// Fake MCP servers for the tests: one speaking stdio (this test binary
// re-executed, TestFakeMCPProcess acting as the server when
// LEMBAS_FAKE_MCP is set) and one speaking Streamable HTTP (httptest). Both
// answer from fakeMCPAnswer, so every behaviour is written once:
//
//	tools: echo (text), image, link (resource_link), structured, iserror,
//	rpcerror, hang (never answers), die (exits mid-call), change (sends
//	tools/list_changed), meta (echoes the call's _meta but its progress
//	token), progress (reports progress six times, 0.5 s apart, then answers), child (starts a
//	grandchild that sleeps, for the no-orphans check), and one with a long name
//
// Modes (LEMBAS_FAKE_MCP): normal, old (answers 2024-11-05), newer (a
// version lembas does not speak), silent (never answers initialize), flood
// (floods stderr, then exits 3), wait (does not answer initialize until the
// file $LEMBAS_FAKE_MCP_GATE exists), pages (tools/list in pages of 2),
// junk (prints a banner, a broken JSON line and a JSON value that is no
// message to stdout before its first message, as some real servers do).
// Every request and notification it gets is appended to $LEMBAS_FAKE_MCP_LOG.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const fakeLongTool = "a_tool_whose_name_is_long_enough_to_push_the_offered_name_past_sixty_four"

var fakeMCPTools = []string{"change", "child", "die", "echo", "hang", "image", "iserror", "link", "meta", "progress", "rpcerror", "structured", fakeLongTool}

// fakeMCPAnswer answers one message; nil means no answer (a notification,
// or a request the mode leaves unanswered). die asks the caller to exit.
func fakeMCPAnswer(mode string, msg map[string]any, notify func(any)) (answer any, die bool) {
	method, _ := msg["method"].(string)
	id, hasID := msg["id"]
	if method == "" || !hasID {
		return nil, false
	}
	params, _ := msg["params"].(map[string]any)
	ok := func(result any) any { return map[string]any{"jsonrpc": "2.0", "id": id, "result": result} }
	switch method {
	case "initialize":
		switch mode {
		case "silent":
			return nil, false
		case "wait":
			for {
				if _, err := os.Stat(os.Getenv("LEMBAS_FAKE_MCP_GATE")); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		v := params["protocolVersion"]
		switch mode {
		case "old":
			v = "2024-11-05"
		case "newer":
			v = "2099-01-01"
		}
		return ok(map[string]any{"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo": map[string]any{"name": "fake", "version": "1"}}), false
	case "tools/list":
		var tools []any
		for _, n := range fakeMCPTools {
			tools = append(tools, map[string]any{"name": n, "description": "The " + n + " tool {{not a variable}}.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}, "ID": map[string]any{"type": "string"}}}})
		}
		if mode != "pages" {
			return ok(map[string]any{"tools": tools}), false
		}
		start := 0
		if c, _ := params["cursor"].(string); c != "" {
			start, _ = strconv.Atoi(c)
		}
		end := min(start+2, len(tools))
		res := map[string]any{"tools": tools[start:end]}
		if end < len(tools) {
			res["nextCursor"] = strconv.Itoa(end)
		}
		return ok(res), false
	case "tools/call":
		name, _ := params["name"].(string)
		args, _ := params["arguments"].(map[string]any)
		text := func(s string) any {
			return ok(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
		}
		switch name {
		case "echo":
			return text(fmt.Sprint("echo: ", args["text"])), false
		case "image":
			return ok(map[string]any{"content": []any{map[string]any{"type": "text", "text": "a red dot"},
				map[string]any{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}}}), false
		case "link":
			return ok(map[string]any{"content": []any{map[string]any{"type": "resource_link", "uri": "file:///tmp/x.txt", "name": "x.txt", "description": "a file"}}}), false
		case "structured":
			return ok(map[string]any{"content": []any{}, "structuredContent": map[string]any{"temp": 21.5, "unit": "C"}}), false
		case "iserror":
			return ok(map[string]any{"content": []any{map[string]any{"type": "text", "text": "it went wrong"}}, "isError": true}), false
		case "rpcerror":
			return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": "unknown argument"}}, false
		case "hang":
			return nil, false
		case "die":
			return nil, true
		case "change":
			notify(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
			return text("changed"), false
		case "progress":
			meta, _ := params["_meta"].(map[string]any)
			token, ok := meta["progressToken"]
			if !ok {
				return text("no progress token"), false
			}
			for i := 1; i <= 6; i++ {
				time.Sleep(500 * time.Millisecond)
				notify(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": token, "progress": i, "total": 6}})
			}
			return text("finished after 6 reports"), false
		case "meta":
			meta, _ := params["_meta"].(map[string]any)
			delete(meta, "progressToken")
			if len(meta) == 0 {
				meta = nil
			}
			b, _ := json.Marshal(meta)
			return text(string(b)), false
		case "child":
			cmd := exec.Command("sleep", fakeChildSleep) // found by its argument where its pid is a namespace's
			cmd.Start()
			return text(strconv.Itoa(cmd.Process.Pid)), false
		case fakeLongTool:
			return text("long"), false
		}
		return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": "no tool " + name}}, false
	case "ping":
		return ok(map[string]any{}), false
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "no method " + method}}, false
}

// fakeMCPLog appends one line to the log file, if there is one.
func fakeMCPLog(line string) {
	if p := os.Getenv("LEMBAS_FAKE_MCP_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// TestFakeMCPProcess is the stdio server when LEMBAS_FAKE_MCP is set; as a
// plain test it does nothing.
func TestFakeMCPProcess(t *testing.T) {
	mode := os.Getenv("LEMBAS_FAKE_MCP")
	if mode == "" {
		return
	}
	if mode == "flood" {
		w := bufio.NewWriter(os.Stderr)
		for i := 0; i < 50000; i++ { // 2.5 MB, far past any pipe buffer
			fmt.Fprintf(w, "noise line %d %s\n", i, strings.Repeat("x", 40))
		}
		fmt.Fprintln(w, "fatal: the last words")
		w.Flush()
		os.Exit(3)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		out.Write(append(b, '\n'))
		out.Flush()
		mu.Unlock()
	}
	if mode == "junk" {
		fmt.Fprint(out, "fake MCP server v1 starting on stdio...\n{\"not\": json\n\n42\n")
		out.Flush()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		fakeMCPLog(line)
		var msg map[string]any
		if json.Unmarshal([]byte(line), &msg) != nil {
			continue
		}
		ans, die := fakeMCPAnswer(mode, msg, send)
		if die {
			os.Exit(7)
		}
		if ans != nil {
			send(ans)
		}
	}
	os.Exit(0)
}

// fakeStdioConfig is a server entry that runs the fake in mode.
func fakeStdioConfig(t testing.TB, name, mode, logPath string) mcpServerConfig {
	return mcpServerConfig{Name: name, Source: "config", Enabled: true, Command: os.Args[0],
		Args: []string{"-test.run=^TestFakeMCPProcess$"},
		Env:  map[string]string{"LEMBAS_FAKE_MCP": mode, "LEMBAS_FAKE_MCP_LOG": logPath}}
}

// fakeHTTPMCP is the Streamable HTTP fake. It keeps a session id, answers
// requests as JSON or (sse) as an event stream; with cut, a tools/call's
// stream closes after a priming event (id, retry) and the answer is sent on
// the GET that resumes it; forget makes the next request with the session
// id a 404. It records what it saw.
type fakeHTTPMCP struct {
	srv    *httptest.Server
	sse    bool
	cut    bool
	retry  int
	bearer string // a token the requests must carry, if set

	mu        sync.Mutex
	session   string
	forget    bool
	inits     int
	deletes   int
	versions  []string
	lastIDs   []string
	pending   any // the answer held back for the resuming GET
	cancelled []string
	metas     []string
}

func newFakeHTTPMCP(t testing.TB) *fakeHTTPMCP {
	f := &fakeHTTPMCP{retry: 50}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeHTTPMCP) serve(w http.ResponseWriter, r *http.Request) {
	if f.bearer != "" && r.Header.Get("Authorization") != "Bearer "+f.bearer {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	sid := f.session
	// Only a POST meets the forgotten session: the listening GET, opened
	// in the background after initialize, may come at any moment, and
	// taking the 404 there left the call it was meant for unretried.
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" && f.forget {
		f.forget = false
		f.session = ""
		f.mu.Unlock()
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	f.mu.Unlock()
	switch r.Method {
	case http.MethodDelete:
		f.mu.Lock()
		f.deletes++
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		if r.Header.Get("Last-Event-ID") == "" {
			// the stream for the server's own messages (mcp_http.go listen):
			// this server sends none, and says so as the spec allows
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		f.mu.Lock()
		f.lastIDs = append(f.lastIDs, r.Header.Get("Last-Event-ID"))
		ans := f.pending
		f.pending = nil
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(ans)
		if ans != nil {
			fmt.Fprintf(w, "id: e2\ndata: %s\n\n", b)
		}
		return
	}
	var msg map[string]any
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	method, _ := msg["method"].(string)
	f.mu.Lock()
	f.versions = append(f.versions, method+"="+r.Header.Get("MCP-Protocol-Version"))
	if method == "initialize" {
		f.inits++
		f.session = fmt.Sprintf("s%d", f.inits)
		sid = f.session
	}
	if method == "notifications/cancelled" {
		b, _ := json.Marshal(msg["params"])
		f.cancelled = append(f.cancelled, string(b))
	}
	if p, ok := msg["params"].(map[string]any); ok && method == "tools/call" {
		meta, _ := p["_meta"].(map[string]any)
		delete(meta, "progressToken")
		if len(meta) == 0 {
			meta = nil
		}
		b, _ := json.Marshal(meta)
		f.metas = append(f.metas, string(b))
	}
	f.mu.Unlock()
	w.Header().Set("Mcp-Session-Id", sid)
	ans, _ := fakeMCPAnswer("normal", msg, func(any) {})
	if ans == nil {
		if _, hasID := msg["id"]; !hasID {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if method == "tools/call" { // hang: hold the answer (or the stream) until the client goes
			if f.sse {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
			return
		}
	}
	b, _ := json.Marshal(ans)
	if !f.sse || method == "initialize" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if f.cut && method == "tools/call" {
		f.mu.Lock()
		f.pending = ans
		f.mu.Unlock()
		fmt.Fprintf(w, "id: e1\nretry: %d\ndata: \n\n", f.retry)
		return
	}
	fmt.Fprintf(w, "event: message\nid: m1\ndata: %s\n\n", b)
}

func (f *fakeHTTPMCP) config(name string) mcpServerConfig {
	return mcpServerConfig{Name: name, Source: "config", Enabled: true, URL: f.srv.URL + "/mcp"}
}

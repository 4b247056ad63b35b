package main

// Hostile or unlucky peers on the JSON-RPC layer: responses given twice or
// malformed must neither block the read loop nor be answered.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRPCDuplicateResponses: a peer that answers one request three times
// before the waiting call has run must not block the read loop; the extra
// answers are dropped.
func TestRPCDuplicateResponses(t *testing.T) {
	c := newRPCConn(nil, &lineWriter{w: io.Discard}, rpcLimits{MaxMessageBytes: 1 << 10, MaxDepth: 8}, nil, func(string) {})
	ch := make(chan rpcResponse, 1) // a call in flight, as call() registers it
	c.pending["1"] = ch
	done := make(chan struct{})
	go func() {
		for i := 0; i < 3; i++ {
			c.handle([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"n":%d}}`, i)))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the read loop blocked on a response given twice")
	}
	if r := <-ch; string(r.result) != `{"n":0}` {
		t.Errorf("the call got %s, want the first answer", r.result)
	}
}

// TestRPCBrokenResponse: a response with both result and error fails the
// call waiting for it at once, and is not answered (an error with its id
// would reach the peer as the answer to a request of its own).
func TestRPCBrokenResponse(t *testing.T) {
	inR, inW := io.Pipe()
	out := &lockedBuffer{b: &bytes.Buffer{}}
	c := newRPCConn(newLineReader(inR, 1<<10), &lineWriter{w: out}, rpcLimits{MaxMessageBytes: 1 << 10, MaxDepth: 8}, nil, func(string) {})
	c.onRequest = func(r *rpcCall) { r.reply(nil, nil) }
	go c.serve()
	defer inW.Close()
	result := make(chan error, 1)
	go func() { result <- c.call(context.Background(), "ask", map[string]int{}, nil) }()
	for !strings.Contains(out.String(), `"method":"ask"`) {
		time.Sleep(time.Millisecond)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	for !strings.Contains(out.String(), `"id":"after"`) {
		time.Sleep(time.Millisecond)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]json.RawMessage
		json.Unmarshal([]byte(line), &m)
		if string(m["id"]) == "1" && m["error"] != nil {
			t.Errorf("the broken response was answered: %s", line)
		}
	}
	select {
	case err := <-result:
		if err == nil || !strings.Contains(err.Error(), "exactly one of result and error") {
			t.Errorf("the call ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call still waits after a broken response")
	}
}

// TestACPModelImage: an image block goes to a vision model as an image
// only when its type is an image type, and as base64 the server can read
// even when the client wrapped its lines.
func TestACPModelImage(t *testing.T) {
	blocks := []acpBlock{
		{Type: "image", MimeType: "image/png", Data: "aGVs\nbG8="},
		{Type: "image", MimeType: "text/html", Data: "aGVsbG8="},
		{Type: "image", MimeType: "image/png;base64,AAAA", Data: "aGVsbG8="},
		{Type: "image", MimeType: "", Data: "aGVsbG8="},
	}
	if err := checkBlocks(blocks); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blocks {
		img, ok := modelImage(b, true)
		got = append(got, fmt.Sprintf("%v:%s:%s", ok, img.Mime, img.Data))
	}
	want := []string{"true:image/png:aGVsbG8=", "false::", "false::", "false::"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, ok := modelImage(blocks[0], false); ok {
		t.Error("an image went to a model that cannot see")
	}
}

// FuzzACPRequest feeds any params to each method of the in-process agent,
// after initialize: every request is answered exactly once, with a result
// or a JSON-RPC error, stdout carries only JSON lines, and nothing panics
// or hangs (run ends at EOF only when every handler has answered).
func FuzzACPRequest(f *testing.F) {
	state := f.TempDir()
	for k, v := range map[string]string{"XDG_STATE_HOME": state, "XDG_CONFIG_HOME": f.TempDir(), "HOME": f.TempDir(),
		"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "x", "LEMBAS_MODEL": "openai/mock"} {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		f.Cleanup(func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		})
	}
	methods := []string{"session/new", "session/load", "session/prompt", "session/set_mode", "_lembas/commands", "authenticate", "initialize", "session/cancel", "nope"}
	for i := range methods {
		f.Add(uint8(i), []byte(`{}`))
	}
	f.Add(uint8(2), []byte(`{"sessionId":"x","prompt":[{"type":"image","mimeType":"text/plain","data":"!!"}]}`))
	f.Add(uint8(1), []byte(`{"sessionId":"../../etc","cwd":"/"}`))
	f.Add(uint8(0), []byte(`{"cwd":"/","_meta":{"mode":"yolo"}}`))
	f.Add(uint8(0), []byte(`{"cwd":"`+state+`","mcpServers":[1,{}],"_meta":{"mode":"auto"}}`))
	f.Add(uint8(3), []byte(`["a",1]`))
	f.Add(uint8(2), []byte(`{"sessionId":"s","prompt":`+strings.Repeat(`[`, 30)+strings.Repeat(`]`, 30)+`}`))
	f.Fuzz(func(t *testing.T, which uint8, params []byte) {
		if !json.Valid(params) || (len(params) > 0 && params[0] != '{' && params[0] != '[') {
			return // the frame layer answers these; covered by FuzzRPCFrame
		}
		method := methods[int(which)%len(methods)]
		var in bytes.Buffer
		in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
		frame := func(id string) string {
			if method == "session/cancel" {
				return `{"jsonrpc":"2.0","method":"session/cancel","params":` + string(bytes.ReplaceAll(params, []byte("\n"), nil)) + `}` + "\n"
			}
			return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + string(bytes.ReplaceAll(params, []byte("\n"), nil)) + `}` + "\n"
		}
		in.WriteString(frame("1"))
		in.WriteString(frame("2")) // twice: duplicates in flight, two session/new in parallel
		out := &lockedBuffer{b: &bytes.Buffer{}}
		a := newACPAgent(context.Background(), newLineReader(&in, theACPSpec().RPC.MaxMessageBytes), &lineWriter{w: out}, func(string) {})
		if err := a.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		answers := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("stdout carries %q", line)
			}
			if _, isReq := m["method"]; !isReq {
				if (m["result"] == nil) == (m["error"] == nil) || string(m["result"]) == "null" {
					t.Fatalf("a bad answer %s", line)
				}
				answers[string(m["id"])]++
			}
		}
		for _, id := range []string{"0", "1", "2"} {
			want := 1
			if method == "session/cancel" && id != "0" {
				want = 0
			}
			if answers[id] != want && !(id != "0" && answers["null"] > 0) {
				t.Fatalf("request %s answered %d times:\n%s", id, answers[id], out.String())
			}
		}
	})
}

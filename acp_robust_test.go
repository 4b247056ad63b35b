package main

// Hostile or unlucky peers on the JSON-RPC layer: responses given twice or
// malformed must neither block the read loop nor be answered.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

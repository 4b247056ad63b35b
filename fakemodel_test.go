package main

// A scripted fake model server: an OpenAI-compatible endpoint over real
// HTTP (httptest) that answers each chat request with the next reply of a
// queue, streamed in chunks of a chosen size (down to one byte), and
// records every request so tests can assert what was sent. A request with
// no reply left fails the test.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

type fakeReply struct {
	status int               // 0: 200
	header map[string]string // extra response headers
	body   string            // the raw body: an SSE stream, or an error JSON
	// hold, when set, stops the stream after holdAt bytes until it is
	// closed: a test acts while an answer is half streamed.
	hold   chan struct{}
	holdAt int
}

type fakeRequest struct {
	Raw  []byte
	Body struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
		Stream   bool              `json:"stream"`
	}
}

// messages decodes the request's messages loosely.
func (r fakeRequest) messages() []map[string]any {
	var out []map[string]any
	for _, m := range r.Body.Messages {
		var v map[string]any
		json.Unmarshal(m, &v)
		out = append(out, v)
	}
	return out
}

type fakeModel struct {
	t        testing.TB
	srv      *httptest.Server
	mu       sync.Mutex
	replies  []fakeReply
	requests []fakeRequest
	chunk    int // bytes per write; 0 writes each reply whole
	models   []string
	route    func(req fakeRequest) fakeReply // when set, answers every request instead of the queue (team_link_test.go)
}

func newFakeModel(t testing.TB, models ...string) *fakeModel {
	if len(models) == 0 {
		models = []string{"mock"}
	}
	f := &fakeModel{t: t, models: models}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) url() string { return f.srv.URL + "/v1" }

func (f *fakeModel) push(r ...fakeReply) {
	f.mu.Lock()
	f.replies = append(f.replies, r...)
	f.mu.Unlock()
}

func (f *fakeModel) got() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// left is how many scripted replies were not asked for.
func (f *fakeModel) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.replies)
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/models"):
		var data []map[string]string
		for _, m := range f.models {
			data = append(data, map[string]string{"id": m, "object": "model"})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
		return
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions"):
	default:
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	req := fakeRequest{Raw: raw}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		f.t.Errorf("fake model: request is not JSON: %v", err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	if route := f.route; route != nil {
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, route(req).body)
		return
	}
	if len(f.replies) == 0 {
		f.mu.Unlock()
		f.t.Errorf("fake model: request %d has no scripted reply", len(f.requests))
		http.Error(w, `{"error":{"message":"no scripted reply"}}`, 500)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	chunk := f.chunk
	f.mu.Unlock()
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status != 0 && rep.status != 200 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body)
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	body := rep.body
	if chunk <= 0 {
		chunk = len(body)
	}
	if rep.hold != nil {
		io.WriteString(w, body[:rep.holdAt])
		body = body[rep.holdAt:]
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-rep.hold:
		case <-r.Context().Done():
			return
		}
	}
	for len(body) > 0 {
		n := chunk
		if n > len(body) {
			n = len(body)
		}
		io.WriteString(w, body[:n])
		body = body[n:]
		if fl != nil {
			fl.Flush()
		}
	}
}

// sseData builds an SSE stream from chunk objects, ending with [DONE].
func sseData(chunks ...any) string {
	var b strings.Builder
	for _, c := range chunks {
		j, _ := json.Marshal(c)
		b.WriteString("data: " + string(j) + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// textReply streams an answer in a few pieces, with usage.
func textReply(text string) fakeReply {
	var chunks []any
	words := strings.SplitAfter(text, " ")
	for _, w := range words {
		chunks = append(chunks, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": w}}}})
	}
	chunks = append(chunks, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	chunks = append(chunks, map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "prompt_tokens_details": map[string]any{"cached_tokens": 80}}})
	return fakeReply{body: sseData(chunks...)}
}

// fakeCall is one tool call a scripted reply makes.
type fakeCall struct {
	name string
	args any // marshalled to the arguments string
}

// callsReply streams tool calls, their arguments split in two fragments.
func callsReply(calls ...fakeCall) fakeReply {
	var chunks []any
	for i, c := range calls {
		args, _ := json.Marshal(c.args)
		half := len(args) / 2
		chunks = append(chunks, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{
			"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%s", i, c.name), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": string(args[:half])}}}}}}})
		chunks = append(chunks, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{
			"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": string(args[half:])}}}}}}})
	}
	chunks = append(chunks, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}})
	chunks = append(chunks, map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 200, "completion_tokens": 20}})
	return fakeReply{body: sseData(chunks...)}
}

// toolResults lists the tool messages of a request, in order.
func toolResults(r fakeRequest) []string {
	var out []string
	for _, m := range r.messages() {
		if m["role"] == "tool" {
			s, _ := m["content"].(string)
			out = append(out, s)
		}
	}
	return out
}

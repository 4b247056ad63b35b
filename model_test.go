package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func testRef(url string) *modelRef {
	c := &connection{Name: "test", BaseURL: url, KeyHint: "$TEST_KEY", http: newHTTPClient()}
	return newModelRef(c, "mock")
}

// TestQuirks replays each quirks.json entry's recorded stream at several
// chunk sizes, down to one byte, and checks what it assembles into.
func TestQuirks(t *testing.T) {
	var q struct {
		About  string `json:"about"`
		Quirks []struct {
			ID       string `json:"id"`
			SeenOn   string `json:"seen_on"`
			What     string `json:"what"`
			Handling string `json:"handling"`
			Expect   struct {
				Text      string `json:"text"`
				Reasoning string `json:"reasoning"`
				Finish    string `json:"finish"`
				Calls     []struct {
					ID        string `json:"id"`
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"calls"`
				Usage *usage `json:"usage"`
			} `json:"expect"`
		} `json:"quirks"`
		Requests json.RawMessage `json:"requests"` // request quirks: context_test.go
	}
	if err := decodeStrict(harnessFS, "harness/quirks.json", &q); err != nil {
		t.Fatal(err)
	}
	if len(q.Quirks) == 0 {
		t.Fatal("no quirks")
	}
	streams, _ := fs.Glob(os.DirFS("testdata/streams"), "*.sse")
	if len(streams) != len(q.Quirks) {
		t.Errorf("%d streams in testdata/streams, %d quirks: every stream is a quirk and every quirk has a stream", len(streams), len(q.Quirks))
	}
	for _, qk := range q.Quirks {
		body, err := os.ReadFile("testdata/streams/" + qk.ID + ".sse")
		if err != nil {
			t.Errorf("quirk %s: %v", qk.ID, err)
			continue
		}
		for _, chunk := range []int{0, 1, 3, 17} {
			f := newFakeModel(t)
			f.chunk = chunk
			f.push(fakeReply{body: string(body)})
			var streamed strings.Builder
			rep, err := testRef(f.url()).stream(context.Background(), &chatRequest{}, func(s string) { streamed.WriteString(s) }, nil, nil)
			if err != nil {
				t.Errorf("quirk %s chunk %d: %v", qk.ID, chunk, err)
				continue
			}
			e := qk.Expect
			if rep.Text != e.Text || streamed.String() != e.Text || rep.Reasoning != e.Reasoning || rep.Finish != e.Finish {
				t.Errorf("quirk %s chunk %d: got text %q reasoning %q finish %q, want %q %q %q", qk.ID, chunk, rep.Text, rep.Reasoning, rep.Finish, e.Text, e.Reasoning, e.Finish)
			}
			if len(rep.Calls) != len(e.Calls) {
				t.Errorf("quirk %s chunk %d: %d calls, want %d: %+v", qk.ID, chunk, len(rep.Calls), len(e.Calls), rep.Calls)
				continue
			}
			for i, c := range rep.Calls {
				w := e.Calls[i]
				if c.ID != w.ID || c.Function.Name != w.Name || normArgs(c.Function.Arguments) != normArgs(w.Arguments) {
					t.Errorf("quirk %s chunk %d call %d: got %s %s %s, want %s %s %s", qk.ID, chunk, i, c.ID, c.Function.Name, c.Function.Arguments, w.ID, w.Name, w.Arguments)
				}
			}
			if e.Usage != nil && rep.Usage != *e.Usage {
				t.Errorf("quirk %s: usage %+v, want %+v", qk.ID, rep.Usage, *e.Usage)
			}
		}
	}
}

func normArgs(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return "invalid:" + s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// withFastRetries makes retry waits short for a test.
func withFastRetries(t *testing.T) {
	lp := &theSpec().Loop
	old := lp.Retry
	lp.Retry.BaseMS, lp.Retry.MaxMS = 1, 5
	t.Cleanup(func() { lp.Retry = old })
}

func TestModelErrors(t *testing.T) {
	withFastRetries(t)
	cases := []struct {
		name    string
		replies []fakeReply
		kind    string
		want    string
	}{
		{"auth", []fakeReply{{status: 401, body: `{"error":{"message":"bad key"}}`}}, "auth", "test refused the API key (HTTP 401); check $TEST_KEY."},
		{"forbidden", []fakeReply{{status: 403, body: `{}`}}, "auth", "HTTP 403"},
		{"unknown model", []fakeReply{{status: 404, body: `{"error":{"message":"model 'mock' not found"}}`}}, "unknown_model", "test does not serve the model mock"},
		{"bad request", []fakeReply{{status: 400, body: `{"error":"context too long"}`}}, "bad_request", "test rejected the request (HTTP 400): context too long"},
		{"5xx every time", []fakeReply{{status: 502}, {status: 502}, {status: 503}, {status: 500, body: `{"error":{"message":"overloaded"}}`}}, "server", "test answered HTTP 500 every time, 4 tries in all (overloaded)"},
		{"429 every time", []fakeReply{{status: 429}, {status: 429}, {status: 429}, {status: 429}}, "rate_limited", "still was after 4 tries"},
		{"cut mid-stream", []fakeReply{{body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"}}, "cut", "The stream from test broke off mid-answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeModel(t)
			f.push(c.replies...)
			_, err := testRef(f.url()).stream(context.Background(), &chatRequest{}, nil, nil, nil)
			var me *modelError
			if !errors.As(err, &me) {
				t.Fatalf("got %v, want a modelError", err)
			}
			if me.Kind != c.kind || !strings.Contains(me.Msg, c.want) {
				t.Errorf("got %s %q, want %s containing %q", me.Kind, me.Msg, c.kind, c.want)
			}
			if f.left() != 0 {
				t.Errorf("%d scripted replies not asked for", f.left())
			}
		})
	}
}

func TestModelRetryHonoursRetryAfter(t *testing.T) {
	withFastRetries(t)
	f := newFakeModel(t)
	f.push(fakeReply{status: 429, header: map[string]string{"Retry-After": "1"}}, fakeReply{status: 503}, textReply("ok"))
	var waits []time.Duration
	var notes []string
	rep, err := testRef(f.url()).stream(context.Background(), &chatRequest{}, nil, nil, func(n int, w time.Duration, err error) {
		waits = append(waits, w)
		notes = append(notes, err.Error())
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Text != "ok" {
		t.Errorf("text %q", rep.Text)
	}
	if len(waits) != 2 || waits[0] != time.Second || waits[1] >= time.Second {
		t.Errorf("waits %v, want [1s, a short backoff]", waits)
	}
	if len(notes) != 2 || strings.Contains(notes[1], "{{") || !strings.Contains(notes[0], "HTTP 429") || !strings.Contains(notes[1], "HTTP 503") || strings.Contains(notes[0], "tries") {
		t.Errorf("retry notices %q: each says what the server answered, none reads as the final failure", notes)
	}
}

func TestModelRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/v1"
	srv.Close()
	_, err := testRef(url).stream(context.Background(), &chatRequest{}, nil, nil, nil)
	var me *modelError
	if !errors.As(err, &me) || me.Kind != "refused" || !strings.Contains(me.Msg, "Nothing answers at "+url+" (test)") {
		t.Errorf("got %v", err)
	}
}

func TestModelTimeout(t *testing.T) {
	lp := &theSpec().Loop
	old := lp.Timeouts
	lp.Timeouts.FirstByteS = 1
	t.Cleanup(func() { lp.Timeouts = old })
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	_, err := testRef(srv.URL+"/v1").stream(context.Background(), &chatRequest{}, nil, nil, nil)
	var me *modelError
	if !errors.As(err, &me) || me.Kind != "timeout" {
		t.Errorf("got %v, want a timeout", err)
	}
}

// TestModelRequestShape checks what a request carries.
func TestModelRequestShape(t *testing.T) {
	f := newFakeModel(t)
	f.push(textReply("hi"))
	ref := testRef(f.url())
	ref.Conn.APIKey = "k"
	_, err := ref.stream(context.Background(), &chatRequest{Messages: []wireMessage{{Role: "user", Content: "x"}},
		Extra: map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}}}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	json.Unmarshal(f.got()[0].Raw, &body)
	if body["stream"] != true || body["model"] != "mock" {
		t.Errorf("body %v", body)
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v", body["stream_options"])
	}
	if _, ok := body["chat_template_kwargs"]; !ok {
		t.Errorf("extra fields not merged: %v", body)
	}
}

func TestChooseModel(t *testing.T) {
	a := newFakeModel(t, "mock", "other")
	b := newFakeModel(t, "big", "other")
	cfg := &config{Connections: []connConfig{{Name: "a", BaseURL: a.url()}}}
	env := map[string]string{"OPENAI_BASE_URL": b.url()}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	for _, c := range []struct{ name, want, err string }{
		{"mock", "a/mock", ""},
		{"big", "openai/big", ""},
		{"a/anything", "a/anything", ""},
		{"openai/other", "openai/other", ""},
		{"other", "", "Several connections serve a model named other (a/other, openai/other)"},
		{"", "a/mock", ""},
	} {
		ref, err := chooseModel(ctx, cfg, c.name, getenv)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %v, want error %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || ref.String() != c.want {
			t.Errorf("%q: got %v %v, want %s", c.name, ref, err, c.want)
		}
	}
	env["LEMBAS_MODEL"] = "big"
	if ref, err := chooseModel(ctx, cfg, "", getenv); err != nil || ref.String() != "openai/big" {
		t.Errorf("LEMBAS_MODEL: got %v %v", ref, err)
	}
	cfg.Model = "mock"
	delete(env, "LEMBAS_MODEL")
	if ref, err := chooseModel(ctx, cfg, "", getenv); err != nil || ref.String() != "a/mock" {
		t.Errorf("config model: got %v %v", ref, err)
	}
}

func TestModelMetadata(t *testing.T) {
	yes := true
	c := &connection{Name: "c", Models: []modelConfig{{Name: "qwen3-8b", Context: 8192, Vision: &yes}}}
	m := newModelRef(c, "qwen3-8b").Meta
	if m.Context != 8192 || !m.vision() || m.ThinkingSwitch == nil || !*m.ThinkingSwitch {
		t.Errorf("meta %+v", m)
	}
	d := newModelRef(c, "unknown-model").Meta
	if d.Context != theSpec().Models.Defaults.Context {
		t.Errorf("defaults not applied: %+v", d)
	}
}

// TestModelIdleCut: a stream that goes silent past the idle limit is cut
// with a sentence saying so, not left hanging.
func TestModelIdleCut(t *testing.T) {
	lp := &theSpec().Loop
	old := lp.Timeouts
	lp.Timeouts.IdleS = 1
	t.Cleanup(func() { lp.Timeouts = old })
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-block
	}))
	defer srv.Close()
	defer close(block)
	var seen strings.Builder
	_, err := testRef(srv.URL+"/v1").stream(context.Background(), &chatRequest{}, func(s string) { seen.WriteString(s) }, nil, nil)
	var me *modelError
	if !errors.As(err, &me) || me.Kind != "idle" || !strings.Contains(me.Msg, "sent nothing for 1 s") || seen.String() != "Hel" {
		t.Errorf("got %v (seen %q)", err, seen.String())
	}
}

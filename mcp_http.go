package main

// MCP over Streamable HTTP. Each message lembas sends is one POST (Accept:
// application/json, text/event-stream); the answer is a JSON body, an SSE
// stream of messages, or 202 for a notification or response. The transport
// turns all of it into frames for rpcConn, so the client above it is the
// same as for stdio.
//
//	writeFrame ─► POST ─┬─ 200 JSON ─────────► frame
//	                    ├─ 200 SSE ──► events ─► frames ─┐ stream ends before the answer:
//	                    │                                └─► wait retry ms ─► GET Last-Event-ID ─► events …
//	                    ├─ 202 ─────────────► nothing
//	                    └─ 404 (session) ───► error frame mcpSessionGone ─► the client initialises again
//
// Mcp-Session-Id is kept from the server's answer and sent back, with
// MCP-Protocol-Version once negotiated; close DELETEs the session. Header
// values come from the config with ${VAR} expanded from the environment at
// start, so tokens live only in the environment and in memory.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// mcpHTTP is one Streamable HTTP server.
type mcpHTTP struct {
	url     string
	headers map[string]string
	client  *http.Client
	spec    *mcpSpec
	ctx     context.Context
	cancel  context.CancelFunc

	auth *mcpAuth // OAuth (mcp_auth.go); nil when the config sets its own Authorization header

	mu        mutex
	session   string
	version   string
	listening bool // the GET stream for the server's own messages is open (listen)

	in   chan []byte
	done chan any
	once sync.Once
	wg   sync.WaitGroup
}

func newMCPHTTP(cfg mcpServerConfig, sp *mcpSpec) *mcpHTTP {
	ctx, cancel := context.WithCancel(context.Background())
	return &mcpHTTP{url: cfg.URL, headers: cfg.Headers, spec: sp, ctx: ctx, cancel: cancel,
		client: &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment,
			ResponseHeaderTimeout: cfg.CallTimeout + cfg.StartupTimeout}},
		in: make(chan []byte, 64), done: make(chan any)}
}

func (h *mcpHTTP) readFrame() ([]byte, error) {
	select {
	case f := <-h.in:
		return f, nil
	case <-h.done:
		return nil, io.EOF
	}
}

// push hands a frame to the read loop, unless the transport is closing.
//
//go:noinline
func (h *mcpHTTP) push(f []byte) {
	select {
	case h.in <- f:
	case <-h.done:
	}
}

func (h *mcpHTTP) tail() string { return "" }

func (h *mcpHTTP) setVersion(v string) {
	h.mu.Lock()
	h.version = v
	h.mu.Unlock()
}

func (h *mcpHTTP) exited() <-chan any { return h.done }

// newRequest makes a request with the session's headers.
func (h *mcpHTTP) newRequest(method string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(h.ctx, method, h.url, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	if h.auth != nil {
		if t := h.auth.bearer(h.ctx); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	h.mu.Lock()
	if h.session != "" {
		req.Header.Set("Mcp-Session-Id", h.session)
	}
	if h.version != "" {
		req.Header.Set("MCP-Protocol-Version", h.version)
	}
	h.mu.Unlock()
	return req, nil
}

// writeFrame POSTs one message. A request is posted in the background, so
// the caller waits for its answer where it can give up (a timeout, a
// cancel) rather than inside the POST; a notification or a response is
// posted before writeFrame returns, keeping its place in the order.
func (h *mcpHTTP) writeFrame(b []byte) error {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(b, &env)
	isRequest := env.Method != "" && len(env.ID) > 0
	if !isRequest {
		return h.post(b, env.ID, false)
	}
	select {
	case <-h.done:
		return io.ErrClosedPipe
	default:
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.post(b, env.ID, true)
	}()
	return nil
}

// post sends one message and reads its answer: a JSON body at once, an SSE
// stream in the background (resumed if it ends before the answer). A
// failure for a request becomes an error response to it, so the caller
// waiting on it hears why rather than waiting for its timeout.
func (h *mcpHTTP) post(b []byte, id json.RawMessage, isRequest bool) error {
	env := struct{ ID json.RawMessage }{id}
	fail := func(code int, format string, args ...any) error {
		err := errorf(format, args...)
		if isRequest {
			m, _ := json.Marshal(rpcMessage{JSONRPC: "2.0", ID: env.ID, Error: &rpcError{Code: code, Message: err.Error()}})
			h.push(m)
		}
		return err
	}
	var req *http.Request
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		var err error
		if req, err = h.newRequest(http.MethodPost, b); err != nil {
			return fail(rpcInternalError, "%v", err)
		}
		if resp, err = h.client.Do(req); err != nil {
			return fail(rpcInternalError, "POST %s: %v", h.url, err)
		}
		if h.auth == nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			if h.auth != nil && resp.StatusCode/100 == 2 && attempt > 0 {
				h.auth.accepted()
			}
			break
		}
		// A login (or a refresh, or more scopes) and the same message again;
		// a server that still refuses after auth_attempts is told as it is.
		resp.Body.Close()
		if attempt >= authRetries() {
			return fail(mcpAuthFailed, "HTTP %d: the server still refuses after logging in", resp.StatusCode)
		}
		sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		if err := h.auth.challenge(h.ctx, resp.StatusCode, resp.Header.Values("WWW-Authenticate"), sent); err != nil {
			return fail(mcpAuthFailed, "%v", err)
		}
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		h.mu.Lock()
		h.session = sid
		h.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "":
		resp.Body.Close()
		h.mu.Lock()
		h.session, h.version = "", "" // the new initialize goes as the first did
		h.mu.Unlock()
		return fail(mcpSessionGone, "the server ended the session (404)")
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		resp.Body.Close()
		return fail(rpcInternalError, "HTTP %d: the server wants a token; set it in headers (Authorization: Bearer ${VAR})", resp.StatusCode)
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		resp.Body.Close()
		return nil
	case resp.StatusCode/100 != 2:
		snip, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return fail(rpcInternalError, "HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(snip)))
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.readStream(resp.Body, env.ID, isRequest)
		}()
		return nil
	}
	defer resp.Body.Close()
	max := int64(h.spec.num("max_message_bytes"))
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return fail(rpcInternalError, "reading the answer: %v", err)
	}
	if int64(len(body)) > max {
		return fail(rpcInternalError, "the answer is larger than %d bytes", max)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if isRequest {
			return fail(rpcInternalError, "the server answered with an empty body")
		}
		return nil
	}
	h.pushBody(body)
	return nil
}

// pushBody hands a JSON body on: one message, or each of a batch.
func (h *mcpHTTP) pushBody(body []byte) {
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) == nil {
			for _, m := range batch {
				h.push(m)
			}
			return
		}
	}
	h.push(body)
}

// readStream reads an SSE stream of messages. If it ends before the answer
// to the request it carries, it is resumed with a GET carrying the last
// event id, after the server's retry delay — not sooner, and not later
// than the delay plus the time the request takes.
func (h *mcpHTTP) readStream(body io.ReadCloser, id json.RawMessage, isRequest bool) {
	sp := h.spec
	res := h.newResume()
	answered := !isRequest
	want := idKey(id)
	for attempt := 0; ; attempt++ {
		ev := newSSEReader(body)
		for {
			e, err := ev.event()
			if err != nil {
				break
			}
			res.note(e)
			if len(bytes.TrimSpace(e.data)) == 0 {
				continue // a priming event: an id to resume from, no message
			}
			if !answered {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(e.data, &m) == nil && m.Method == "" && len(m.ID) > 0 && idKey(m.ID) == want {
					answered = true
				}
			}
			h.push(append([]byte(nil), e.data...))
		}
		body.Close()
		if answered || h.ctx.Err() != nil {
			return
		}
		if res.lastID == "" || attempt >= int(sp.num("resume_attempts")) {
			m, _ := json.Marshal(rpcMessage{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: rpcInternalError,
				Message: "the server's event stream ended before the answer and cannot be resumed"}})
			h.push(m)
			return
		}
		if !res.wait(h.ctx) {
			return
		}
		req, err := h.newRequest(http.MethodGet, nil)
		if err != nil {
			return
		}
		req.Header.Del("Content-Type")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", res.lastID)
		resp, err := h.client.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			if resp != nil {
				resp.Body.Close()
			}
			body = io.NopCloser(strings.NewReader(""))
			continue
		}
		body = resp.Body
	}
}

// close DELETEs the session and stops every stream.
func (h *mcpHTTP) close() {
	h.once.Do(func() {
		h.mu.Lock()
		sid := h.session
		h.mu.Unlock()
		if sid != "" {
			if req, err := h.newRequest(http.MethodDelete, nil); err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), h.spec.ms("term_grace_ms"))
				req = req.WithContext(ctx)
				if resp, err := h.client.Do(req); err == nil {
					resp.Body.Close()
				}
				cancel()
			}
		}
		h.cancel()
		close(h.done)
		h.wg.Wait()
		h.client.CloseIdleConnections()
	})
}

// sseResume is what a stream that ended needs to be opened again: the
// last event id seen, and the server's retry delay (bounded by mcp.json).
type sseResume struct {
	lastID string
	retry  time.Duration
	max    time.Duration
}

func (h *mcpHTTP) newResume() *sseResume {
	return &sseResume{retry: h.spec.ms("resume_default_retry_ms"), max: h.spec.ms("resume_max_retry_ms")}
}

// note takes an event's id and retry.
func (r *sseResume) note(e sseEvent) {
	if e.id != "" {
		r.lastID = e.id
	}
	if e.retry >= 0 {
		r.retry = min(time.Duration(e.retry)*time.Millisecond, r.max)
	}
}

// wait sleeps the retry delay; false when ctx ended first.
func (r *sseResume) wait(ctx context.Context) bool {
	select {
	case <-time.After(r.retry):
		return true
	case <-ctx.Done():
		return false
	}
}

// listen opens the stream a server uses for messages of its own (requests
// such as elicitation/create that no POST of ours carries): a GET with
// Accept: text/event-stream after initialize. A server that offers none
// answers 405 and is not asked again; a stream that ends is opened again
// after the server's retry delay, with Last-Event-ID, at most
// resume_attempts times in a row without a message.
func (h *mcpHTTP) listen() {
	h.mu.Lock()
	if h.listening {
		h.mu.Unlock()
		return
	}
	h.listening = true
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		sp := h.spec
		res, fails := h.newResume(), 0
		for h.ctx.Err() == nil && fails < int(sp.num("resume_attempts")) {
			req, err := h.newRequest(http.MethodGet, nil)
			if err != nil {
				return
			}
			req.Header.Set("Accept", "text/event-stream")
			if res.lastID != "" {
				req.Header.Set("Last-Event-ID", res.lastID)
			}
			resp, err := h.client.Do(req)
			if err != nil {
				fails++
			} else if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				resp.Body.Close()
				if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode/100 == 4 {
					return // no stream on offer
				}
				fails++
			} else {
				ev := newSSEReader(resp.Body)
				for {
					e, err := ev.event()
					if err != nil {
						break
					}
					res.note(e)
					if len(bytes.TrimSpace(e.data)) > 0 {
						fails = 0
						h.push(append([]byte(nil), e.data...))
					}
				}
				resp.Body.Close()
				fails++
			}
			if !res.wait(h.ctx) {
				return
			}
		}
	}()
}

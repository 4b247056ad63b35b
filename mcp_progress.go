package main

// Progress of a long MCP call. Every tools/call carries a progressToken in
// its _meta; a server that reports progress (notifications/progress naming
// the token) shows it is still at work, and each report starts the call's
// timeout again, as the spec allows. However much progress arrives, a call
// ends after call_max_ms, the bound the spec asks clients to keep.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// errCallTimeout ends a call whose server said nothing for its timeout.
var errCallTimeout = errors.New("call timeout")

// progressCall bounds one call and returns its context, the progress token
// to send, and the function that ends the bound (call it when the call is
// over). Why a timer rather than a deadline: a deadline cannot move, and
// progress must push it back.
func (s *mcpServer) progressCall(ctx context.Context) (context.Context, string, func()) {
	maxCtx, cancelMax := context.WithTimeout(ctx, s.spec.ms("call_max_ms"))
	cctx, cancel := context.WithCancelCause(maxCtx)
	timer := time.AfterFunc(s.cfg.CallTimeout, func() { cancel(errCallTimeout) })
	s.mu.Lock()
	s.progressN++
	token := "lembas-" + strconv.Itoa(s.progressN)
	if s.progress == nil {
		s.progress = map[string]func(){}
	}
	s.progress[token] = func() {
		if cctx.Err() == nil {
			timer.Reset(s.cfg.CallTimeout)
		}
	}
	s.mu.Unlock()
	return cctx, token, func() {
		timer.Stop()
		s.mu.Lock()
		delete(s.progress, token)
		s.mu.Unlock()
		cancel(nil)
		cancelMax()
	}
}

// callSeconds is how long the call waited before it was given up, for the
// timeout's sentence: the call timeout, or call_max_ms when progress kept
// it going that long.
func (s *mcpServer) callSeconds(cctx context.Context) float64 {
	if errors.Is(context.Cause(cctx), context.DeadlineExceeded) {
		return s.spec.ms("call_max_ms").Seconds()
	}
	return s.cfg.CallTimeout.Seconds()
}

// onProgress starts the timeout of the call a progress notification names
// again; a token lembas did not send, or of a call already over, is ignored.
func (s *mcpServer) onProgress(params json.RawMessage) {
	var p struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var token string
	if json.Unmarshal(p.ProgressToken, &token) != nil {
		return
	}
	s.mu.Lock()
	f := s.progress[token]
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

package main

// JSON-RPC 2.0 over any stream of frames, on the ground floor: ACP on
// stdio, the device link's WebSocket, MCP servers (stdio and HTTP) and the
// terminals all speak it through this one file. It knows nothing of ACP: a frame reader gives it one message at a time, a frame
// writer takes one at a time, and the owner gets every request and
// notification in arrival order (onRequest, onNotify) and may answer from
// any goroutine. Requests go out the other way too (call), matched to their
// responses by id.
//
//	frames in ──► checkFrame (size, JSON, depth, keys) ──► parseFrame ──► request → onRequest ──► reply
//	                  │ bad: error response, connection kept         ├─► notification → onNotify
//	                  ▼                                              └─► response → the waiting call
//
// What it refuses, and how: a line that is not JSON is -32700; JSON nested
// deeper than the limit, a key given twice, a key spelled in another case
// than a known one ("Method", "sessionID"), or a message that is not a
// request, notification or response is -32600; a batch (ACP uses none) is
// one -32600. Each answer carries the request's id when it could be read,
// else null, and the connection goes on. Limits are harness/acp.json's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The standard JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
)

// rpcError is a JSON-RPC error object; as a Go error it is what a handler
// returns to answer with that code.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

//go:noinline
func rpcErrorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rpcMessage is one message on the wire, any of the three kinds.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`

	// broken marks a frame shaped as a response (it carries a result or an
	// error) that could not be read: it is never answered, since an error
	// with its id would reach the peer as the answer to a request of its own.
	broken bool
}

// frameReader gives one message at a time: a line on stdio, a WebSocket
// message on the link. A frame over the size limit is reported as
// errFrameTooBig and the reader stays usable.
type frameReader interface {
	readFrame() ([]byte, error)
}

// frameWriter takes one whole message at a time; it must be safe to call
// from several goroutines.
type frameWriter interface {
	writeFrame([]byte) error
}

var errFrameTooBig = errors.New("frame too big")

// lineReader reads newline-framed messages of up to max bytes. A longer
// line is read to its end and dropped, so one bad message never breaks the
// stream; lines of many megabytes (an image block) are read whole.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

func (l *lineReader) readFrame() ([]byte, error) {
	for {
		var buf []byte
		tooBig := false
		for {
			chunk, err := l.r.ReadSlice('\n')
			if !tooBig {
				if len(buf)+len(chunk) > l.max+2 { // +2: the line end itself
					tooBig, buf = true, nil
				} else {
					buf = append(buf, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && (err != io.EOF || (len(buf) == 0 && !tooBig)) {
				return nil, err
			}
			break
		}
		if tooBig {
			return nil, errFrameTooBig
		}
		line := bytes.TrimRight(buf, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines between messages are not messages
		}
		if len(line) > l.max {
			return nil, errFrameTooBig
		}
		return line, nil
	}
}

// lineWriter writes each frame as one line in one Write, under a lock, so
// messages from several goroutines never interleave.
type lineWriter struct {
	mu mutex
	w  io.Writer
}

func (l *lineWriter) writeFrame(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	_, err := l.w.Write(buf)
	return err
}

// rpcLimits bound what one incoming message may be.
type rpcLimits struct {
	MaxMessageBytes int `json:"max_message_bytes"`
	MaxDepth        int `json:"max_depth"`
	MethodMax       int `json:"method_max"` // runes of an unknown method's name an error echoes
	// StrictUTF8 refuses a frame that is not valid UTF-8 as a whole with
	// -32700 and id null (ACP on stdio and the link): JSON is UTF-8, and an
	// id read through U+FFFD would be echoed altered. MCP leaves it off, so
	// a server's stray byte in a tool's output costs a character, not the call.
	StrictUTF8 bool `json:"strict_utf8"`
	// MaxBatch bounds a batch's count: no batch is served (ACP uses none),
	// and one of more entries is refused at the entry past the bound,
	// without walking the rest. 0: the default below.
	MaxBatch int `json:"max_batch"`
}

// maxBatch is MaxBatch, or 64 where a spec gives none (MCP's).
func (l rpcLimits) maxBatch() int {
	if l.MaxBatch > 0 {
		return l.MaxBatch
	}
	return 64
}

// methodMax is MethodMax, or 64 where a spec gives none (MCP's).
func (l rpcLimits) methodMax() int {
	if l.MethodMax > 0 {
		return l.MethodMax
	}
	return 64
}

// rpcCall is one incoming request; reply answers it exactly once.
type rpcCall struct {
	c      *rpcConn
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	once   sync.Once
	to     frameWriter // where the answer goes; nil: the connection's writer
}

// reply answers the request: a handler's result (nil becomes {}, since
// results are objects and editors reject null), or its error (an *rpcError
// as it is, anything else as -32603 with the error's text).
func (r *rpcCall) reply(result any, err error) {
	r.once.Do(func() {
		m := rpcMessage{JSONRPC: "2.0", ID: r.ID}
		if err != nil {
			var re *rpcError
			if !errors.As(err, &re) {
				re = &rpcError{Code: rpcInternalError, Message: err.Error()}
			}
			m.Error = re
		} else {
			b, merr := json.Marshal(result)
			if merr != nil || string(b) == "null" {
				b = []byte("{}")
				if merr != nil {
					m.Error = rpcErrorf(rpcInternalError, "encoding the result of %s: %v", r.Method, merr)
				}
			}
			if m.Error == nil {
				m.Result = b
			}
		}
		r.c.sendTo(r.to, m)
	})
}

// rpcResponse is what came back for a call.
type rpcResponse struct {
	result json.RawMessage
	err    *rpcError
}

// rpcConn is one JSON-RPC connection over a frame reader and writer.
type rpcConn struct {
	in        frameReader
	out       frameWriter
	lim       rpcLimits
	keys      map[string]string // folded key → the one spelling trusted
	log       func(string)
	onRequest func(*rpcCall)                              // in arrival order, on the read loop
	onNotify  func(method string, params json.RawMessage) // likewise

	mu      mutex
	next    int64
	pending map[string]chan rpcResponse
	closed  chan struct{}
	once    sync.Once
}

// newRPCConn makes a connection; keys are every object key the owner
// reads, so that a key differing from one only in case is refused rather
// than silently taken for it (Go's decoder matches keys case-insensitively).
func newRPCConn(in frameReader, out frameWriter, lim rpcLimits, keys []string, log func(string)) *rpcConn {
	c := &rpcConn{in: in, out: out, lim: lim, log: log, keys: map[string]string{},
		pending: map[string]chan rpcResponse{}, closed: make(chan struct{})}
	for _, k := range append(keys, "jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data") {
		c.keys[foldKey(k)] = k
	}
	return c
}

// foldKey maps a key to one spelling per case-folding class, the same
// classes encoding/json matches keys by (so "K" with a Kelvin sign and
// "ſ" fold too).
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

// send writes one message; a write failure means the peer is gone, which
// the read loop will see as well, so it is only logged.
//
//go:noinline
func (c *rpcConn) send(m rpcMessage) { c.sendTo(nil, m) }

// sendTo writes one message to w, or to the connection's writer when w is
// nil (the link answers a request only on the socket it came on).
func (c *rpcConn) sendTo(w frameWriter, m rpcMessage) {
	b, err := json.Marshal(m)
	if err != nil {
		c.log(fmt.Sprintf("encoding a message: %v", err))
		return
	}
	if w == nil {
		w = c.out
	}
	if err := w.writeFrame(b); err != nil {
		c.log(fmt.Sprintf("writing a message: %v", err))
	}
}

// notify sends a notification.
func (c *rpcConn) notify(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		c.log(fmt.Sprintf("encoding %s: %v", method, err))
		return
	}
	c.send(rpcMessage{JSONRPC: "2.0", Method: method, Params: b})
}

// call sends a request and waits for its response, the context's end, or
// the connection's; result (if not nil) is decoded from the response.
//
//go:noinline
func (c *rpcConn) call(ctx context.Context, method string, params, result any) error {
	_, err := c.callID(ctx, method, params, result)
	return err
}

// callID is call that also returns the request's id, so that a timeout or
// cancel can name it to the peer (MCP's notifications/cancelled).
func (c *rpcConn) callID(ctx context.Context, method string, params, result any) (string, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.next++
	id := strconv.FormatInt(c.next, 10)
	ch := make(chan rpcResponse, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	c.send(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage(id), Method: method, Params: b})
	select {
	case r := <-ch:
		if r.err != nil {
			return id, r.err
		}
		if result != nil && len(r.result) > 0 {
			if err := json.Unmarshal(r.result, result); err != nil {
				return id, errorf("the answer to %s: %v", method, err)
			}
		}
		return id, nil
	case <-ctx.Done():
		return id, ctx.Err()
	case <-c.closed:
		return id, errorf("the connection closed before %s was answered", method)
	}
}

// serve reads until the stream ends (nil at EOF) or fails.
func (c *rpcConn) serve() error {
	defer c.once.Do(func() { close(c.closed) })
	for {
		frame, err := c.in.readFrame()
		if err == errFrameTooBig {
			c.send(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: rpcErrorf(rpcInvalidRequest,
				"the message is larger than %d bytes and was dropped; send smaller messages (a prompt's blocks have their own limits)", c.lim.MaxMessageBytes)})
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		c.handle(frame)
	}
}

// handle routes one frame, answering anything malformed.
func (c *rpcConn) handle(frame []byte) {
	if c.lim.StrictUTF8 && !utf8.Valid(frame) {
		c.send(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: rpcErrorf(rpcParseError,
			"the message is not valid UTF-8, so it is not JSON; send UTF-8 text")})
		return
	}
	m, rerr := parseFrame(frame, c.lim, c.keys)
	if rerr != nil && m.broken {
		c.log(fmt.Sprintf("a malformed response with id %s: %s", m.ID, rerr.Message))
		c.deliver(m.ID, rpcResponse{err: rerr})
		return
	}
	if rerr != nil {
		id := m.ID
		if id == nil {
			id = json.RawMessage("null")
		}
		c.send(rpcMessage{JSONRPC: "2.0", ID: id, Error: rerr})
		return
	}
	switch {
	case m.Method != "" && m.ID != nil:
		if c.onRequest == nil {
			c.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: rpcErrorf(rpcMethodNotFound, "unknown method %s", cutForError(m.Method, c.lim.methodMax()))})
			return
		}
		c.dispatch(&rpcCall{c: c, ID: m.ID, Method: m.Method, Params: m.Params})
	case m.Method != "":
		if c.onNotify != nil {
			c.notified(m.Method, m.Params)
		}
	default:
		c.deliver(m.ID, rpcResponse{result: m.Result, err: m.Error})
	}
}

// dispatch gives a request to the owner under a recover: a handler's panic
// answers the request -32603 and the read loop goes on serving.
func (c *rpcConn) dispatch(call *rpcCall) {
	defer call.recovered()
	c.onRequest(call)
}

// notified gives a notification to the owner under a recover; a panic is
// logged (a notification has nobody to answer) and the loop goes on.
func (c *rpcConn) notified(method string, params json.RawMessage) {
	defer func() {
		if p := recover(); p != nil {
			c.log(fmt.Sprintf("a panic handling %s: %v\n%s", cutForError(method, c.lim.methodMax()), p, debug.Stack()))
		}
	}()
	c.onNotify(method, params)
}

// recovered is deferred by every goroutine that works on a call (the read
// loop's dispatch and each handler's own goroutine): a panic becomes the
// call's -32603 answer, with the stack in the log, and the process lives.
// A call already answered stays answered (reply is once).
func (r *rpcCall) recovered() {
	if p := recover(); p != nil {
		method := cutForError(r.Method, r.c.lim.methodMax())
		r.c.log(fmt.Sprintf("a panic answering %s: %v\n%s", method, p, debug.Stack()))
		r.reply(nil, rpcErrorf(rpcInternalError, "lembas failed answering %s (%s); nothing else is affected, and the log has the details", method, cutForError(fmt.Sprint(p), 200)))
	}
}

// deliver hands a response to the call waiting for it. The call is taken
// out of pending here, under the lock, so a second response with the same
// id finds nothing and is dropped: the read loop never blocks on a full
// channel, however many times a peer answers.
func (c *rpcConn) deliver(id json.RawMessage, r rpcResponse) {
	c.mu.Lock()
	ch, ok := c.pending[idKey(id)]
	delete(c.pending, idKey(id))
	c.mu.Unlock()
	if !ok {
		c.log(fmt.Sprintf("a response with id %s answers no request of ours; ignored", id))
		return
	}
	ch <- r // buffered for one, and only this response is ever sent on it
}

// idKey normalises an id for matching a response to its call: a peer may
// echo 1 as 1.0 or with spaces, and still mean request 1.
func idKey(id json.RawMessage) string {
	var n json.Number
	if json.Unmarshal(id, &n) == nil {
		if f, err := n.Float64(); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return string(bytes.TrimSpace(id))
}

// parseFrame checks and decodes one frame. On error the returned message
// carries the id when one could be read, for the error response.
func parseFrame(frame []byte, lim rpcLimits, keys map[string]string) (rpcMessage, *rpcError) {
	if err := checkFrameBatch(frame, lim.MaxDepth, lim.maxBatch(), keys); err != nil {
		return rpcMessage{}, err
	}
	trim := bytes.TrimSpace(frame)
	if trim[0] == '[' {
		return rpcMessage{}, rpcErrorf(rpcInvalidRequest, "batches are not used in ACP; send one message a line")
	}
	if trim[0] != '{' {
		return rpcMessage{}, rpcErrorf(rpcInvalidRequest, "a message must be a JSON object with jsonrpc \"2.0\"")
	}
	raw := objectFields(trim) // checked valid above; slices of the frame, not copies
	var m rpcMessage
	if id, ok := raw["id"]; ok {
		switch jsonKind(id) {
		case 's':
			m.ID = validUTF8ID(id) // every frame sent back must be valid UTF-8
		case 'n', '0':
			m.ID = id
		default:
			return rpcMessage{}, rpcErrorf(rpcInvalidRequest, "the id must be a string, a number or null")
		}
	}
	bad := func(format string, args ...any) (rpcMessage, *rpcError) {
		return rpcMessage{ID: m.ID}, rpcErrorf(rpcInvalidRequest, format, args...)
	}
	if v, ok := raw["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return bad(`the message must say "jsonrpc": "2.0"`)
	}
	m.JSONRPC = "2.0"
	if v, ok := raw["method"]; ok {
		if jsonKind(v) != 's' || json.Unmarshal(v, &m.Method) != nil || m.Method == "" {
			return bad("the method must be a non-empty string")
		}
		if p, ok := raw["params"]; ok {
			if k := jsonKind(p); k != 'o' && k != 'a' {
				return bad("params must be an object or an array")
			}
			m.Params = p
		}
		if _, ok := raw["result"]; ok {
			return bad("a request cannot carry a result")
		}
		if _, ok := raw["error"]; ok {
			return bad("a request cannot carry an error")
		}
		return m, nil
	}
	res, hasRes := raw["result"]
	errv, hasErr := raw["error"]
	badResponse := func(format string, args ...any) (rpcMessage, *rpcError) {
		m, e := bad(format, args...)
		m.broken = m.ID != nil
		return m, e
	}
	switch {
	case m.ID == nil:
		return bad("a message needs a method (a request or notification) or an id (a response)")
	case !hasRes && !hasErr:
		return bad("a message needs a method (a request or notification) or a result or error (a response)")
	case hasRes && hasErr:
		return badResponse("a response carries exactly one of result and error")
	case hasRes:
		m.Result = res
	default:
		var e rpcError
		if jsonKind(errv) != 'o' || json.Unmarshal(errv, &e) != nil {
			return badResponse("a response's error must be an object with a code and a message")
		}
		m.Error = &e
	}
	return m, nil
}

// jsonKind is the kind of a JSON value by its first byte: o object,
// a array, s string, n number, 0 null, b boolean.
func jsonKind(v json.RawMessage) byte {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; {
	case c == '{':
		return 'o'
	case c == '[':
		return 'a'
	case c == '"':
		return 's'
	case c == 'n':
		return '0'
	case c == 't' || c == 'f':
		return 'b'
	default:
		return 'n'
	}
}

// checkFrame walks the whole message once: it must be one JSON value, no
// deeper than maxDepth, with no key given twice in an object and no key
// that differs from a known one only in case.
func checkFrame(frame []byte, maxDepth int, keys map[string]string) *rpcError {
	return checkFrameBatch(frame, maxDepth, 0, keys)
}

// checkFrameBatch is checkFrame that also stops at a top-level array's
// entry past maxBatch (0: no bound). It walks the bytes in place — the
// standard scanner for validity, then one pass for depth, keys and the
// batch's count — so a message of many megabytes costs no copy of itself
// (a decoder's buffer and its tokens would cost two).
func checkFrameBatch(frame []byte, maxDepth, maxBatch int, keys map[string]string) *rpcError {
	if len(bytes.TrimSpace(frame)) == 0 {
		return rpcErrorf(rpcParseError, "the message is empty")
	}
	if !json.Valid(frame) {
		return checkFrameTokens(frame, maxDepth, keys)
	}
	type level struct {
		seen map[string]bool // nil: an array
	}
	var stack []level
	entries := 0
	expectKey := false
	entry := func() *rpcError {
		if len(stack) == 1 && stack[0].seen == nil && maxBatch > 0 {
			if entries++; entries > maxBatch {
				return rpcErrorf(rpcInvalidRequest, "a batch of more than %d messages; ACP uses no batches, send one message a frame", maxBatch)
			}
		}
		return nil
	}
	for i := 0; i < len(frame); {
		switch c := frame[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			i++
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].seen != nil
			i++
		case '{', '[':
			if err := entry(); err != nil {
				return err
			}
			if len(stack)+1 > maxDepth {
				return rpcErrorf(rpcInvalidRequest, "the message is nested deeper than %d levels", maxDepth)
			}
			l := level{}
			if c == '{' {
				l.seen = map[string]bool{}
			}
			stack = append(stack, l)
			expectKey = c == '{'
			i++
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
			i++
		case '"':
			j := skipJSONString(frame, i)
			if expectKey {
				k := string(frame[i+1 : j-1])
				if bytes.IndexByte(frame[i:j], '\\') >= 0 {
					json.Unmarshal(frame[i:j], &k) // valid: checked above
				}
				top := stack[len(stack)-1]
				if top.seen[k] {
					return rpcErrorf(rpcInvalidRequest, "the key %q appears twice in one object", cutForError(k, 64))
				}
				top.seen[k] = true
				if want, ok := keys[foldKey(k)]; ok && want != k {
					return rpcErrorf(rpcInvalidRequest, "the key %q must be spelled %q", cutForError(k, 64), want)
				}
				expectKey = false
			} else if err := entry(); err != nil {
				return err
			}
			i = j
		default: // a number, true, false or null
			if err := entry(); err != nil {
				return err
			}
			for i < len(frame) && !strings.ContainsRune(" \t\n\r,]}", rune(frame[i])) {
				i++
			}
		}
	}
	return nil
}

// checkFrameTokens is the walk by tokens, for a frame that is not valid
// JSON: it finds what comes first (too deep, a key twice, the syntax error)
// in the order the frame is read.
func checkFrameTokens(frame []byte, maxDepth int, keys map[string]string) *rpcError {
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	type obj struct {
		seen      map[string]bool
		expectKey bool
	}
	var stack []*obj
	n := 0
walk:
	for {
		tok, err := dec.Token()
		if err == io.EOF && n == 0 {
			return rpcErrorf(rpcParseError, "the message is empty")
		}
		if err == io.EOF {
			break
		}
		n++
		if err != nil {
			return rpcErrorf(rpcParseError, "the message is not valid JSON: %v", err)
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.seen != nil {
					top.expectKey = true
				}
				if len(stack)+1 > maxDepth {
					return rpcErrorf(rpcInvalidRequest, "the message is nested deeper than %d levels", maxDepth)
				}
				o := &obj{}
				if d == '{' {
					o.seen, o.expectKey = map[string]bool{}, true
				}
				stack = append(stack, o)
			default:
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				break walk
			}
			continue
		}
		if top != nil && top.seen != nil {
			if top.expectKey {
				k := tok.(string)
				if top.seen[k] {
					return rpcErrorf(rpcInvalidRequest, "the key %q appears twice in one object", k)
				}
				top.seen[k] = true
				if want, ok := keys[foldKey(k)]; ok && want != k {
					return rpcErrorf(rpcInvalidRequest, "the key %q must be spelled %q", k, want)
				}
				top.expectKey = false
			} else {
				top.expectKey = true
			}
		}
		if len(stack) == 0 {
			break walk
		}
	}
	if len(stack) != 0 {
		return rpcErrorf(rpcParseError, "the message is not valid JSON: it ends early")
	}
	if _, err := dec.Token(); err != io.EOF {
		return rpcErrorf(rpcParseError, "the message is not valid JSON: more follows the first value on the line")
	}
	return nil
}

// skipJSONString is the index just past the string that starts at b[i]
// (a '"'); b is valid JSON.
func skipJSONString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipJSONValue is the index just past the value that starts at b[i]; b
// is valid JSON.
func skipJSONValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipJSONString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && !strings.ContainsRune(" \t\n\r,]}", rune(b[i])) {
		i++
	}
	return i
}

// objectFields splits a valid JSON object into its keys' raw values,
// each a slice of obj itself: no copy of a large params. A key given
// twice keeps its last value (checkFrame refuses such frames anyway).
func objectFields(obj []byte) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	ws := func(i int) int {
		for i < len(obj) && (obj[i] == ' ' || obj[i] == '\t' || obj[i] == '\n' || obj[i] == '\r') {
			i++
		}
		return i
	}
	i := ws(1)
	for i < len(obj) && obj[i] == '"' {
		j := skipJSONString(obj, i)
		var k string
		if json.Unmarshal(obj[i:j], &k) != nil {
			return out
		}
		i = ws(j)
		if i >= len(obj) || obj[i] != ':' {
			return out
		}
		i = ws(i + 1)
		end := skipJSONValue(obj, i)
		out[k] = obj[i:end:end]
		i = ws(end)
		if i < len(obj) && obj[i] == ',' {
			i = ws(i + 1)
		}
	}
	return out
}

// cutForError is an outside string as an error may name it: at most max
// bytes, cut on a rune boundary, valid UTF-8 — a 1 MB method name is never
// echoed back whole.
func cutForError(s string, max int) string {
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// validUTF8ID is a string id as it may be echoed: its bytes as they came
// when they are valid UTF-8, else decoded and encoded again, each bad byte
// becoming U+FFFD.
func validUTF8ID(id json.RawMessage) json.RawMessage {
	if utf8.Valid(id) {
		return id
	}
	var s string
	if json.Unmarshal(id, &s) != nil {
		return json.RawMessage("null")
	}
	return rawJSON(strings.ToValidUTF8(s, "\uFFFD"))
}

// rawJSON is v encoded; v is always a value of ours that encodes.
//
//go:noinline
func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

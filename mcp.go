package main

// MCP servers as tools. The client is written on jsonrpc.go's JSON-RPC layer
// (rpcConn): a transport is a frame reader and writer — lines on a child's
// stdin/stdout (mcp_stdio.go), or POSTs answered with JSON or an SSE stream
// (mcp_http.go) — and everything above it is the same for both.
//
//	config.yaml mcp: ─┐
//	.mcp.json (trusted)├─► mcpServerConfig ─► startMCP: every server at once, in the background
//	ACP mcpServers ───┘                              │
//	                   connect: transport ─► initialize (version down-negotiated) ─► initialized ─► tools/list (pages)
//	                                                 ▼
//	engine.awaitMCP (first request waits, at most the startup timeout) ─► tools mcp__<server>__<tool>, fixed
//	                                                 ▼
//	call: permission (mcp_tools.go) ─► tools/call ─► result text/images/links ─► capped like any result
//	      timeout or cancel ─► notifications/cancelled
//
// Neighbours: tools.go (the toolbox takes extra tools), permission.go (one
// hook for the mode, one for rules), headless.go (starts and closes the set),
// acp_agent.go (session/new mcpServers).
//
// A worker (floor 3): it calls the ground's JSON-RPC (jsonrpc.go) and asks
// the person only through ask.go's seam.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"
)

// mcpSpec is harness/mcp.json.
type mcpSpec struct {
	About    string                       `json:"about"`
	Client   struct{ Name, Title string } `json:"client"`
	Protocol struct {
		Latest    string   `json:"latest"`
		Supported []string `json:"supported"`
	} `json:"protocol"`
	Limits map[string]float64 `json:"limits"`
	// PinBlank: an env entry whose name holds one of these has its value
	// left out of the approval's pin (a token may change; its name may not).
	PinBlank []string `json:"pin_blank_substrings"`
	Library  struct {
		About     string `json:"about"`
		Server    string `json:"server"`
		Path      string `json:"path"`
		Scope     string `json:"scope"`
		ConfigKey string `json:"config_key"`
		Source    string `json:"source"`
	} `json:"library"`
	Risk       string            `json:"risk"`
	Modes      map[string]string `json:"modes"`
	Texts      map[string]string `json:"texts"`
	SearchTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"search_tool"`
}

// theMCP reads harness/mcp.json once, strictly; a broken file is a harness
// bug that TestMCPHarness catches, so here it panics.
//
//go:noinline
func theMCP() *mcpSpec { return mcpSpecFile.get() }

var mcpSpecFile = &harnessFile[mcpSpec]{name: "harness/mcp.json"}

// num is one of mcp.json's limits; a missing one panics (TestMCPHarness).
//
//go:noinline
func (s *mcpSpec) num(name string) float64 {
	v, ok := s.Limits[name]
	if !ok {
		panic("harness: mcp.json has no limits." + name)
	}
	return v
}

//go:noinline
func (s *mcpSpec) ms(name string) time.Duration {
	return time.Duration(s.num(name)) * time.Millisecond
}

// text fills one of mcp.json's texts.
func (s *mcpSpec) text(key string, kv ...any) string {
	t, ok := s.Texts[key]
	if !ok {
		panic("harness: mcp.json has no texts." + key)
	}
	return fillPairs(t, kv...)
}

// mcpServerConfig is one server, from wherever it came.
type mcpServerConfig struct {
	Name   string
	Source string // config, project, acp

	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	URL     string
	Headers map[string]string

	Enabled        bool
	AllowTools     []string // only these tools (empty: all)
	DenyTools      []string // never these
	StartupTimeout time.Duration
	CallTimeout    time.Duration
	Risk           string          // interact unless the person says otherwise
	Meta           json.RawMessage // _meta merged into every tools/call
	SessionScope   bool            // every tools/call carries _meta.lembas.scope: the lembas session's id (the instance's library)
	OAuth          mcpOAuthConfig  // oauth: a pre-registered client, a client ID metadata document, scopes (mcp_auth.go)
	Interactive    bool            // a person can be shown a login address (not -p)
	Warn           func(string)    // tells the person before the session's notices are hooked up (the REPL's stderr)
	Sandbox        *sandbox        // a stdio server runs in the session's sandbox (its world on Linux); nil: bare

	missing []string // environment variables that ${VAR} named and are unset
}

func (c mcpServerConfig) transport() string {
	if c.URL != "" {
		return "http"
	}
	return "stdio"
}

// mcpTool is one tool of a server: its name on the wire and as offered.
type mcpTool struct {
	Server      string
	Name        string
	Offered     string
	Description string
	Schema      json.RawMessage
}

// mcpTransport carries frames to one server and ends it.
type mcpTransport interface {
	frameReader
	frameWriter
	close()             // end the server: stdio closes stdin, then TERM, then KILL; http DELETEs the session
	tail() string       // the last lines the server wrote to stderr (stdio), for a failure's reason
	setVersion(string)  // the negotiated protocol version (http sends it as a header)
	exited() <-chan any // closed when the server is gone (stdio: the process exited)
}

// mcpServer is one server's connection and state.
type mcpServer struct {
	cfg  mcpServerConfig
	spec *mcpSpec
	log  func(string)

	mu      mutex
	state   string // connecting, ready, failed, disabled
	reason  string
	tools   []mcpTool
	changed bool // tools/list_changed arrived since the list was fixed
	noted   bool // the change was told
	conn    *rpcConn
	tr      mcpTransport
	version string
	ready   chan struct{} // closed when state leaves connecting

	open  func(ctx context.Context) (mcpTransport, error) // the transport's dialer
	scope func() string                                   // the session's id, for SessionScope (set by the session)

	person  func() asker      // the session's asker for elicitation (nil or nil asker: nobody, -p)
	notice  func(string)      // tells the person something (the session's notices)
	callCtx []context.Context // the calls in flight: an elicitation ends with the newest
	auth    *mcpAuth          // OAuth for an HTTP server (mcp_auth.go); nil for stdio
	hold    func() func()     // pauses the startup timeout (while connecting)

	warnings []string // tools left out of the list, each with its fault (told once, in fix's notes)

	progress  map[string]func() // a call in flight's timeout restart, by its progress token (mcp_progress.go)
	progressN int               // the last progress token's number
}

// mcpAuthFailed is the code an HTTP transport answers a request with when
// the server wants a login that could not be had; its message says why.
const mcpAuthFailed = -32098

// errStartupTimeout ends a connect that took longer than its timeout.
var errStartupTimeout = errors.New("startup timeout")

// mcpSessionGone is the code an HTTP transport answers a request with when
// the server no longer knows the session (404): the client initialises again.
const mcpSessionGone = -32099

// newMCPServer makes a server in the connecting state.
func newMCPServer(cfg mcpServerConfig, log func(string)) *mcpServer {
	sp := theMCP()
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = sp.ms("startup_timeout_ms")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = sp.ms("call_timeout_ms")
	}
	if cfg.Risk == "" {
		cfg.Risk = sp.Risk
	}
	s := &mcpServer{cfg: cfg, spec: sp, log: log, state: "connecting", ready: make(chan struct{})}
	switch {
	case !cfg.Enabled:
		s.finish("disabled", "")
	case len(cfg.missing) > 0:
		s.finish("failed", sp.text("needs_token", "vars", strings.Join(cfg.missing, ", ")))
	case cfg.URL != "":
		s.open = func(ctx context.Context) (mcpTransport, error) {
			h := newMCPHTTP(cfg, sp)
			h.auth = s.oauth()
			return h, nil
		}
	default:
		s.open = func(ctx context.Context) (mcpTransport, error) { return startMCPStdio(cfg, sp) }
	}
	return s
}

// finish leaves the connecting state once.
func (s *mcpServer) finish(state, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != "connecting" {
		return
	}
	s.state, s.reason = state, reason
	close(s.ready)
}

// status is the server's state and reason, for lists and notices.
func (s *mcpServer) status() (string, string, []mcpTool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.reason, append([]mcpTool(nil), s.tools...)
}

// connect starts the server and runs the handshake and the first tools/list,
// all within the startup timeout; any failure leaves the server out, with a
// reason naming it (and stderr's last lines when there are any).
func (s *mcpServer) connect(ctx context.Context) {
	if s.open == nil {
		return
	}
	// The startup timeout pauses while a person logs in (mcp_auth.go): the
	// login has its own, longer, bound.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(s.cfg.StartupTimeout, func() { cancel(errStartupTimeout) })
	defer timer.Stop()
	s.mu.Lock()
	s.hold = func() func() {
		timer.Stop()
		return func() { timer.Reset(s.cfg.StartupTimeout) }
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.hold = nil
		s.mu.Unlock()
	}()
	tr, err := s.open(ctx)
	if err != nil {
		s.finish("failed", err.Error())
		return
	}
	s.mu.Lock()
	s.tr = tr
	s.mu.Unlock()
	conn := newRPCConn(tr, tr, rpcLimits{MaxMessageBytes: int(s.spec.num("max_message_bytes")), MaxDepth: int(s.spec.num("max_depth"))}, nil, s.logf)
	// A tool's schema and results hold keys of the server's choosing ("ID",
	// "Message"), which the case-fold check meant for ACP's own keys would
	// refuse; parseFrame reads the envelope by exact key, so none are kept.
	conn.keys = map[string]string{}
	conn.onRequest = s.onRequest
	conn.onNotify = s.onNotify
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	go func() {
		conn.serve()
		s.gone()
	}()
	fail := func(reason string) {
		if context.Cause(ctx) == errStartupTimeout {
			reason = s.spec.text("startup_timeout", "seconds", s.cfg.StartupTimeout.Seconds())
		}
		select {
		case <-conn.closed: // the server went away: how it ended says more
			reason = s.exitReason()
		default:
		}
		if t := tr.tail(); t != "" {
			reason += s.spec.text("stderr_tail", "tail", t)
		}
		s.finish("failed", reason)
		tr.close()
	}
	if err := s.handshake(ctx); err != nil {
		fail(err.Error())
		return
	}
	tools, err := s.listTools(ctx)
	if err != nil {
		fail(err.Error())
		return
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	s.finish("ready", "")
}

func (s *mcpServer) logf(msg string) {
	if s.log != nil {
		s.log("mcp " + s.cfg.Name + ": " + msg)
	}
}

// exitReason says how the process ended. Its output closes a moment
// before the exit is seen, so this waits for the exit, at most
// stdin_grace_ms (a server may close stdout and live on).
func (s *mcpServer) exitReason() string {
	if st, ok := s.tr.(*mcpStdio); ok {
		select {
		case <-st.done:
			return s.spec.text("exited", "status", st.exitStatus())
		case <-time.After(s.spec.ms("stdin_grace_ms")):
			return s.spec.text("closed_output")
		}
	}
	return s.spec.text("closed_connection")
}

// gone marks a server whose connection ended: a call after it is refused
// with the reason, and one in flight ends with the connection.
func (s *mcpServer) gone() {
	reason := s.exitReason()
	if t := s.tr.tail(); t != "" {
		reason += s.spec.text("stderr_tail", "tail", t)
	}
	s.mu.Lock()
	if s.state == "ready" {
		s.state, s.reason = "failed", reason
	}
	s.mu.Unlock()
	s.finish("failed", reason)
}

// handshake sends initialize with the newest version and accepts any
// version the server answers that lembas also speaks (the spec's
// down-negotiation); then notifications/initialized.
func (s *mcpServer) handshake(ctx context.Context) error {
	sp := s.spec
	params := map[string]any{
		"protocolVersion": sp.Protocol.Latest,
		"capabilities":    map[string]any{"elicitation": elicitCapability()},
		"clientInfo":      map[string]any{"name": sp.Client.Name, "title": sp.Client.Title, "version": version},
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
	}
	if _, err := mcpCall(ctx, s.conn, "initialize", params, &res); err != nil {
		var re *rpcError
		if ctx.Err() != nil {
			return err
		}
		if errors.As(err, &re) && re.Code == mcpAuthFailed {
			return errorNew(re.Message) // the login's own sentence (mcp_auth.go)
		}
		return errorNew(sp.text("no_handshake", "error", err))
	}
	if !contains(sp.Protocol.Supported, res.ProtocolVersion) {
		return errorNew(sp.text("bad_version", "version", strconv.Quote(res.ProtocolVersion), "supported", strings.Join(sp.Protocol.Supported, ", ")))
	}
	s.mu.Lock()
	s.version = res.ProtocolVersion
	s.mu.Unlock()
	s.tr.setVersion(res.ProtocolVersion)
	s.conn.notify("notifications/initialized", map[string]any{})
	if h, ok := s.tr.(*mcpHTTP); ok {
		h.listen() // where a server sends requests of its own (elicitation)
	}
	return nil
}

// listTools reads every page of tools/list, up to max_list_pages, and
// keeps those the person's allow and deny lists let through, sorted.
func (s *mcpServer) listTools(ctx context.Context) ([]mcpTool, error) {
	var out []mcpTool
	cursor := ""
	for page := 0; page < int(s.spec.num("max_list_pages")); page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if _, err := mcpCall(ctx, s.conn, "tools/list", params, &res); err != nil {
			return nil, errorf("tools/list: %v", err)
		}
		for _, t := range res.Tools {
			if t.Name == "" || (len(s.cfg.AllowTools) > 0 && !contains(s.cfg.AllowTools, t.Name)) || contains(s.cfg.DenyTools, t.Name) {
				continue
			}
			// A schema is the server's data, not a promise: one the code
			// could not read as it assumes is left out here, with a warning
			// naming it, and the server's other tools stay.
			if err := checkToolSchema(t.InputSchema, int(s.spec.num("max_depth"))); err != nil {
				w := s.spec.text("bad_schema", "server", s.cfg.Name, "tool", cutForError(t.Name, 80), "fault", err.Error())
				s.logf(w)
				s.mu.Lock()
				s.warnings = append(s.warnings, w)
				s.mu.Unlock()
				continue
			}
			out = append(out, mcpTool{Server: s.cfg.Name, Name: t.Name, Description: t.Description, Schema: t.InputSchema})
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			break
		}
		cursor = res.NextCursor
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// onRequest answers what a server asks of lembas: ping, and elicitation
// (mcp_elicit.go), asked off the read loop so the server's other messages
// keep flowing while the person thinks; anything else is method not found.
func (s *mcpServer) onRequest(c *rpcCall) {
	switch c.Method {
	case "ping":
		c.reply(map[string]any{}, nil)
	case "elicitation/create":
		req, fields, err := parseElicitRequest(c.Params)
		if err != nil {
			c.reply(nil, rpcErrorf(rpcInvalidParams, "%v", err))
			return
		}
		go func() {
			defer c.recovered()
			s.mu.Lock()
			ctx := context.Background()
			if n := len(s.callCtx); n > 0 {
				ctx = s.callCtx[n-1]
			}
			var who asker
			if s.person != nil {
				who = s.person()
			}
			notice := s.notice
			s.mu.Unlock()
			ctx, cancel := context.WithTimeout(ctx, elicitTimeout())
			defer cancel()
			c.reply(elicit(ctx, who, s.cfg.Name, req, fields, notice), nil)
		}()
	default:
		c.reply(nil, rpcErrorf(rpcMethodNotFound, "lembas does not offer %s", c.Method))
	}
}

// onNotify notes a changed tool list; it takes effect in the next session,
// so the tools a session offers stay fixed (the prompt prefix stays still).
func (s *mcpServer) onNotify(method string, params json.RawMessage) {
	if method == "notifications/progress" {
		s.onProgress(params)
		return
	}
	if method == "notifications/tools/list_changed" {
		s.mu.Lock()
		s.changed = true
		s.mu.Unlock()
	}
}

// mcpCall is rpcConn.callID: the request's id comes back so that a
// timeout or cancel can send notifications/cancelled naming it.
//
//go:noinline
func mcpCall(ctx context.Context, c *rpcConn, method string, params, result any) (string, error) {
	return c.callID(ctx, method, params, result)
}

// mcpContent is one block of a tools/call result.
type mcpContent struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Data        string          `json:"data"`
	MimeType    string          `json:"mimeType"`
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Resource    json.RawMessage `json:"resource"`
}

// mcpCallResult is a tools/call result.
type mcpCallResult struct {
	Content           []mcpContent    `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// callTool runs one tool: the call is bounded by the server's call timeout,
// and a timeout or cancel tells the server with notifications/cancelled. A
// session the HTTP server forgot (404) is initialised again, once.
func (s *mcpServer) callTool(ctx context.Context, t mcpTool, args json.RawMessage, vision bool) toolResult {
	sp := s.spec
	state, reason, _ := s.status()
	if state != "ready" {
		return toolResult{Text: sp.text("gone", "server", s.cfg.Name, "reason", reason), IsError: true, Status: "failed"}
	}
	params := map[string]any{"name": t.Name, "arguments": json.RawMessage(args)}
	if len(bytes.TrimSpace(args)) == 0 {
		params["arguments"] = map[string]any{}
	}
	cctx, token, cancel := s.progressCall(ctx)
	defer cancel()
	meta := s.callMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	meta["progressToken"] = token
	params["_meta"] = meta
	defer s.inCall(ctx)()
	var res mcpCallResult
	id, err := mcpCall(cctx, s.conn, "tools/call", params, &res)
	var re *rpcError
	if errors.As(err, &re) && re.Code == mcpSessionGone {
		if herr := s.handshake(cctx); herr == nil {
			id, err = mcpCall(cctx, s.conn, "tools/call", params, &res)
		}
	}
	if err != nil {
		if cctx.Err() != nil {
			why := "timeout"
			if ctx.Err() != nil {
				why = sp.text("cancelled")
			}
			s.conn.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": why})
			if ctx.Err() != nil {
				return toolResult{Text: theSpec().Loop.ToolErrors["cancelled"], IsError: true, Status: "cancelled"}
			}
			return toolResult{Text: sp.text("timeout", "server", s.cfg.Name, "tool", t.Name, "seconds", s.callSeconds(cctx)), IsError: true, Status: "failed"}
		}
		if errors.As(err, &re) && re.Code == mcpURLElicitationRequired {
			if r, ok := s.urlRequired(ctx, t.Name, re); ok {
				return r
			}
		}
		select {
		case <-s.conn.closed:
			// The server went away under the call (a crash): how it ended and
			// its last words tell the model more than a closed connection.
			reason := s.exitReason()
			if tail := s.tr.tail(); tail != "" {
				reason += sp.text("stderr_tail", "tail", tail)
			}
			return toolResult{Text: sp.text("died_in_call", "server", s.cfg.Name, "tool", t.Name, "reason", reason), IsError: true, Status: "failed"}
		default:
		}
		if errors.As(err, &re) {
			return toolResult{Text: sp.text("rpc_error", "server", s.cfg.Name, "tool", t.Name, "message", re.Message, "code", re.Code), IsError: true, Status: "failed"}
		}
		return toolResult{Text: sp.text("call_failed", "server", s.cfg.Name, "tool", t.Name, "error", err), IsError: true, Status: "failed"}
	}
	return mcpResultOf(sp, s.cfg.Name, res, vision)
}

// inCall notes a call in flight, so an elicitation it causes is asked
// under its context (cancelling the turn dismisses the question); the
// function returned forgets it.
func (s *mcpServer) inCall(ctx context.Context) func() {
	s.mu.Lock()
	s.callCtx = append(s.callCtx, ctx)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		for i, c := range s.callCtx {
			if c == ctx {
				s.callCtx = append(s.callCtx[:i], s.callCtx[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
	}
}

// callMeta is a call's _meta: the entry's own, with lembas.scope set to
// the session's id for a server that scopes by session (the instance's
// library keeps what a session stores apart by it). nil: none.
func (s *mcpServer) callMeta() map[string]any {
	var meta map[string]any
	if len(s.cfg.Meta) > 0 {
		json.Unmarshal(s.cfg.Meta, &meta)
	}
	if s.cfg.SessionScope && s.scope != nil {
		if meta == nil {
			meta = map[string]any{}
		}
		l, _ := meta["lembas"].(map[string]any)
		if l == nil {
			l = map[string]any{}
		}
		l["scope"] = s.scope()
		meta["lembas"] = l
	}
	return meta
}

// mcpResultOf turns a tools/call result into a tool result: text joined;
// images attached for a model that sees them and named otherwise;
// resource links as a line; structuredContent when there is no text.
func mcpResultOf(sp *mcpSpec, server string, res mcpCallResult, vision bool) toolResult {
	var parts []string
	var out toolResult
	hasText := false
	for _, c := range res.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
			hasText = true
		case "image":
			if vision && c.Data != "" {
				out.Images = append(out.Images, imagePart{Mime: c.MimeType, Data: c.Data})
			} else {
				parts = append(parts, sp.text("image_no_vision", "server", server, "mime", c.MimeType, "bytes", len(c.Data)*3/4))
			}
		case "audio":
			parts = append(parts, sp.text("audio", "server", server, "mime", c.MimeType, "bytes", len(c.Data)*3/4))
		case "resource_link":
			desc := ""
			if c.Description != "" {
				desc = " " + c.Description
			}
			name := c.Name
			if name == "" {
				name = c.URI
			}
			parts = append(parts, sp.text("resource_link", "name", name, "uri", c.URI, "description", desc))
		case "resource":
			var r struct {
				URI      string `json:"uri"`
				Text     string `json:"text"`
				Blob     string `json:"blob"`
				MimeType string `json:"mimeType"`
			}
			json.Unmarshal(c.Resource, &r)
			if r.Blob != "" {
				parts = append(parts, sp.text("resource_blob", "uri", r.URI, "mime", r.MimeType, "bytes", len(r.Blob)*3/4))
			} else {
				parts = append(parts, r.Text)
				hasText = true
			}
		}
	}
	if !hasText && len(bytes.TrimSpace(res.StructuredContent)) > 0 && string(bytes.TrimSpace(res.StructuredContent)) != "null" {
		var b bytes.Buffer
		if json.Compact(&b, res.StructuredContent) == nil {
			parts = append(parts, b.String())
		}
	}
	out.Text = strings.Join(parts, "\n")
	if strings.TrimSpace(out.Text) == "" && len(out.Images) == 0 {
		out.Text = sp.text("empty")
	}
	out.IsError = res.IsError
	return out
}

// close ends the server, whatever state it is in.
func (s *mcpServer) close() {
	s.mu.Lock()
	tr := s.tr
	s.mu.Unlock()
	if tr != nil {
		tr.close()
	}
	s.finish("failed", "closed")
}

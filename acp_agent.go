package main

// lembas serve --stdio: plain ACP for an editor, on the JSON-RPC layer of
// jsonrpc.go. The editor is the person at this machine, so the remote roots and
// trust rules of the link do not apply (limits: null); the permission rules
// and the floor do, and a session starts in manual mode. Each session is an
// engine of its own (newSessionEngine, as for -p), its events turned into
// session/update notifications (acp_updates.go). Prompts of one session run
// one at a time in the order they came; session/cancel stops the running
// one and those waiting, and each answers "cancelled". At EOF every turn is
// cancelled, each prompt answered, and the process ends.
//
// A front end (floor 5): it calls the session (session.go, the engine) and
// the ground's JSON-RPC; nothing below calls it.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// acpSpec is harness/acp.json.
type acpSpec struct {
	About           string                       `json:"about"`
	Agent           struct{ Name, Title string } `json:"agent"`
	ProtocolVersion int                          `json:"protocol_version"`
	LembasProtocol  int                          `json:"lembas_protocol"`
	Capabilities    []string                     `json:"capabilities"`
	RPC             rpcLimits                    `json:"rpc"`
	Prompt          struct {
		MaxBlockBytes  int `json:"max_block_bytes"`
		MaxPromptBytes int `json:"max_prompt_bytes"`
	} `json:"prompt"`
	ClientFSTimeoutS int               `json:"client_fs_timeout_s"`
	DiffMaxBytes     int               `json:"diff_max_bytes"`
	Kinds            map[string]string `json:"kinds"`
	Titles           map[string]string `json:"titles"`
	Options          map[string]string `json:"options"`
	Texts            map[string]string `json:"texts"`
	Errors           map[string]string `json:"errors"`
	Screens          []string          `json:"screens"`
	Commands         []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Hint        string `json:"hint"`
	} `json:"commands"`
}

// theACPSpec parses harness/acp.json once; like theSpec, a broken file is
// a build-time bug that TestACPSpec catches.
//
//go:noinline
func theACPSpec() *acpSpec { return acpSpecFile.get() }

var acpSpecFile = &harnessFile[acpSpec]{name: "harness/acp.json"}

// paramErr is a -32602 from one of acp.json's error texts.
func paramErr(key string, kv ...any) *rpcError {
	return &rpcError{Code: rpcInvalidParams, Message: loopText(theACPSpec().Errors, key, kv...)}
}

func cmdServe(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stdio := fs.Bool("stdio", false, "")
	if err := fs.Parse(args); err == flag.ErrHelp {
		fmt.Fprintln(stdout, "usage: lembas serve --stdio\n\nSpeaks ACP (the Agent Client Protocol) to an editor: one JSON-RPC 2.0 message a line\non stdin and stdout; logs go to stderr. The editor starts it; the session works in the\nfolder the editor names, in manual mode unless the editor asks for another.")
		return nil
	} else if err != nil || fs.NArg() > 0 {
		return usageError{"lembas serve takes --stdio only; see lembas --help"}
	}
	if !*stdio {
		return usageError{"lembas serve needs --stdio: it speaks ACP to an editor on stdin and stdout"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	logf := func(s string) { fmt.Fprintln(stderr, "lembas: "+s) }
	a := newACPAgent(ctx, newLineReader(stdin, theACPSpec().RPC.MaxMessageBytes), &lineWriter{w: stdout}, logf)
	return a.run(ctx)
}

// acpAgent is one ACP connection and the sessions opened on it.
type acpAgent struct {
	conn   *rpcConn
	sp     *acpSpec
	log    func(string)
	ctx    context.Context // ends every turn when the connection ends
	cancel context.CancelFunc
	wg     sync.WaitGroup // requests being worked on

	mu          mutex
	initialized bool
	fsRead      bool
	fsWrite     bool
	notices     bool
	team        bool // a LLeMbas client: the team event goes to it as a team session update (acp_updates.go)
	sessions    map[string]*acpSession
}

func newACPAgent(ctx context.Context, in frameReader, out frameWriter, log func(string)) *acpAgent {
	sp := theACPSpec()
	a := &acpAgent{sp: sp, log: log, sessions: map[string]*acpSession{}}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.conn = newRPCConn(in, out, sp.RPC, acpKeys(), log)
	a.conn.onRequest = a.request
	a.conn.onNotify = a.notification
	return a
}

// acpKeys lists every key the agent reads from the client, from the param
// types themselves, for the connection's wrongly-cased-key check.
func acpKeys() []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && !seen[name] {
				seen[name] = true
			}
			walk(f.Type)
		}
	}
	for _, v := range []any{acpInitParams{}, acpNewParams{}, acpPromptParams{}, acpModeParams{}, acpPermissionAnswer{}, acpReadAnswer{}} {
		walk(reflect.TypeOf(v))
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// run serves until the client goes (EOF) or a signal comes, then cancels
// every turn, waits for each prompt to be answered, and closes the sessions.
func (a *acpAgent) run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- a.conn.serve() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	for _, s := range a.sessions {
		s.cleanup()
	}
	a.sessions = map[string]*acpSession{}
	a.mu.Unlock()
	if err != nil {
		return errorf("reading from the client: %v", err)
	}
	return nil
}

// The params the agent reads. Unknown fields are ignored, as ACP asks.
type acpInitParams struct {
	ProtocolVersion    int `json:"protocolVersion"`
	ClientCapabilities struct {
		FS struct {
			ReadTextFile  bool `json:"readTextFile"`
			WriteTextFile bool `json:"writeTextFile"`
		} `json:"fs"`
		Session *struct {
			Notices json.RawMessage `json:"notices"`
		} `json:"session"`
		Meta struct {
			Lembas json.RawMessage `json:"lembas"`
		} `json:"_meta"`
	} `json:"clientCapabilities"`
}

type acpNewParams struct {
	SessionID  string            `json:"sessionId"`
	Cwd        string            `json:"cwd"`
	McpServers []json.RawMessage `json:"mcpServers"`
	Meta       struct {
		Mode  string `json:"mode"`
		Model string `json:"model"`
	} `json:"_meta"`
}

type acpModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

// decodeParams decodes a request's params, or says in a sentence why not.
func decodeParams(method string, raw json.RawMessage, v any) *rpcError {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return paramErr("bad_params", "method", method, "error", err)
	}
	return nil
}

// acpMethods are the requests answered after initialize.
var acpMethods = map[string]bool{"authenticate": true, "session/new": true, "session/load": true,
	"session/prompt": true, "session/set_mode": true, "_lembas/commands": true}

// request routes one request. It runs on the read loop, so what must keep
// arrival order (a prompt's place in its session's queue) is decided here;
// anything slow runs in a goroutine.
func (a *acpAgent) request(c *rpcCall) {
	a.mu.Lock()
	ready := a.initialized
	a.mu.Unlock()
	if c.Method != "initialize" && !ready && acpMethods[c.Method] {
		c.reply(nil, &rpcError{Code: rpcInvalidRequest, Message: a.sp.Errors["not_initialized"]})
		return
	}
	switch c.Method {
	case "initialize":
		c.reply(a.initialize(c.Params))
	case "authenticate":
		c.reply(struct{}{}, nil)
	case "session/new", "session/load":
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer c.recovered()
			a.openSession(c)
		}()
	case "session/prompt":
		a.prompt(c)
	case "session/set_mode":
		c.reply(a.setMode(c.Params))
	case "_lembas/commands":
		var p acpNewParams
		if err := decodeParams(c.Method, c.Params, &p); err != nil {
			c.reply(nil, err)
			return
		}
		root := p.Cwd
		if s := a.session(p.SessionID); s != nil {
			root = s.root
		}
		c.reply(map[string]any{"commands": availableCommands(root)}, nil)
	default:
		c.reply(nil, &rpcError{Code: rpcMethodNotFound, Message: loopText(a.sp.Errors, "unknown_method", "method", methodForError(c.Method))})
	}
}

// notification handles session/cancel; others are logged and ignored.
func (a *acpAgent) notification(method string, params json.RawMessage) {
	switch method {
	case "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(params, &p)
		if s := a.session(p.SessionID); s != nil {
			s.cancelAll()
		}
	case "$/cancel_request", "notifications/initialized":
	default:
		a.log("ignored the notification " + method)
	}
}

func (a *acpAgent) session(id string) *acpSession {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// initialize answers with what this agent does; the client's fs
// capabilities decide whether the file tools read through the editor.
func (a *acpAgent) initialize(raw json.RawMessage) (any, error) {
	if err := checkProtocolVersion(raw); err != nil {
		return nil, err
	}
	var p acpInitParams
	if err := decodeParams("initialize", raw, &p); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.initialized = true
	a.fsRead = p.ClientCapabilities.FS.ReadTextFile
	a.fsWrite = p.ClientCapabilities.FS.WriteTextFile
	a.notices = p.ClientCapabilities.Session != nil && jsonKind(p.ClientCapabilities.Session.Notices) == 'o'
	a.team = len(p.ClientCapabilities.Meta.Lembas) > 0 && string(p.ClientCapabilities.Meta.Lembas) != "false"
	a.mu.Unlock()
	caps := a.sp.Capabilities
	if caps == nil {
		caps = []string{}
	}
	return map[string]any{
		"protocolVersion": a.sp.ProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession":        true,
			"promptCapabilities": map[string]bool{"image": true, "audio": false, "embeddedContext": true},
			"mcpCapabilities":    map[string]bool{"http": true, "sse": false},
		},
		"authMethods": []any{},
		"agentInfo":   map[string]string{"name": a.sp.Agent.Name, "title": a.sp.Agent.Title, "version": version},
		"_meta": map[string]any{"lembas": map[string]any{
			"protocol":     a.sp.LembasProtocol,
			"harness_spec": harnessVersion(),
			"limits":       nil,
			"connection":   nil,
			"capabilities": caps,
		}},
	}, nil
}

// modeState is ACP's modes object for a session in mode current.
func modeState(current string) map[string]any {
	ms := theSpec().Modes
	var avail []map[string]string
	for _, m := range ms.Order {
		avail = append(avail, map[string]string{"id": m, "name": strings.ToUpper(m[:1]) + m[1:], "description": ms.Texts[m]})
	}
	return map[string]any{"currentModeId": current, "availableModes": avail}
}

// openSession answers session/new and session/load: an engine for the
// session, then (load) the conversation replayed, the answer, and the
// commands.
func (a *acpAgent) openSession(c *rpcCall) {
	var p acpNewParams
	if err := decodeParams(c.Method, c.Params, &p); err != nil {
		c.reply(nil, err)
		return
	}
	load := c.Method == "session/load"
	if !filepath.IsAbs(p.Cwd) {
		c.reply(nil, paramErr("cwd", "cwd", p.Cwd))
		return
	}
	if st, err := os.Stat(p.Cwd); err != nil || !st.IsDir() {
		c.reply(nil, paramErr("cwd", "cwd", p.Cwd))
		return
	}
	mode := "manual"
	if p.Meta.Mode != "" {
		m, err := normMode(p.Meta.Mode)
		if err != nil {
			c.reply(nil, paramErr("mode", "mode", p.Meta.Mode, "modes", strings.Join(theSpec().Modes.Order, ", ")))
			return
		}
		mode = m
	}
	f := &sessionOpts{cwd: p.Cwd, mode: mode, model: p.Meta.Model, mcpServers: p.McpServers}
	if load {
		if !validID(p.SessionID) {
			c.reply(nil, paramErr("no_session", "id", p.SessionID))
			return
		}
		if a.session(p.SessionID) != nil {
			c.reply(nil, paramErr("session_open", "id", p.SessionID))
			return
		}
		f.sessionID = p.SessionID
	}
	e, cleanup, err := newSessionEngine(a.ctx, f, false, a.log)
	if err != nil {
		if load && strings.Contains(err.Error(), "no session") {
			c.reply(nil, paramErr("no_session", "id", p.SessionID))
			return
		}
		c.reply(nil, err)
		return
	}
	s := a.newSession(e, cleanup)
	if load {
		s.replay()
	}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	res := map[string]any{
		"modes": modeState(s.e.perm.mode()),
		"_meta": map[string]any{"lembas": map[string]any{"model": e.ref.String(), "mode": s.e.perm.mode(), "effort": nil}},
	}
	if !load {
		res["sessionId"] = s.id
	}
	c.reply(res, nil)
	s.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": availableCommands(s.root)})
}

// setMode changes a session's mode. A turn reads the mode as it runs, so
// a change made while one works takes effect at its next approval or at
// the next turn (acpSession.applyMode), never under its feet.
func (a *acpAgent) setMode(raw json.RawMessage) (any, error) {
	var p acpModeParams
	if err := decodeParams("session/set_mode", raw, &p); err != nil {
		return nil, err
	}
	s := a.session(p.SessionID)
	if s == nil {
		return nil, paramErr("no_session", "id", p.SessionID)
	}
	m, err := normMode(p.ModeID)
	if err != nil || p.ModeID == "" {
		return nil, paramErr("mode", "mode", p.ModeID, "modes", strings.Join(theSpec().Modes.Order, ", "))
	}
	s.mu.Lock()
	s.pendingMode = m
	busy := len(s.queue) > 0
	s.mu.Unlock()
	if !busy {
		s.applyMode()
	}
	s.update(map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": m})
	return struct{}{}, nil
}

// availableCommands is the shared set: the built-ins, then the custom
// commands of the project and of the person (.agent/commands,
// <config>/commands), never the terminal's own screens.
func availableCommands(root string) []map[string]any {
	sp := theACPSpec()
	l := &commandList{taken: map[string]bool{}}
	for _, s := range sp.Screens {
		l.taken[s] = true
	}
	add := l.add
	for _, c := range sp.Commands {
		add(c.Name, c.Description, c.Hint, "builtin")
	}
	var dirs []string
	if root != "" {
		dirs = append(dirs, filepath.Join(root, ".agent", "commands"))
	}
	dirs = append(dirs, filepath.Join(configDir(), "commands"))
	for _, d := range dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*.md"))
		sort.Strings(names)
		for _, n := range names {
			add(strings.TrimSuffix(filepath.Base(n), ".md"), commandDescription(n), "", "custom")
		}
	}
	for _, sk := range skillCommands(root) {
		add(sk.Name, sk.Description, "", "skill")
	}
	if l.out == nil {
		l.out = []map[string]any{}
	}
	return l.out
}

// commandList is availableCommands' list as it is made: a name taken
// (a screen, or a command listed before) is not listed again.
type commandList struct {
	taken map[string]bool
	out   []map[string]any
}

// add is kept out of line: availableCommands calls it from three places.
//
//go:noinline
func (l *commandList) add(name, desc, hint, kind string) {
	if l.taken[name] {
		return
	}
	l.taken[name] = true
	c := map[string]any{"name": name, "description": desc, "_meta": map[string]any{"lembas": map[string]string{"kind": kind}}}
	if hint != "" {
		c["input"] = map[string]string{"hint": hint}
	}
	l.out = append(l.out, c)
}

// commandDescription is a command file's description: its front matter's
// description: line, else its first line of text.
func commandDescription(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for _, l := range lines[1:] {
			if strings.TrimSpace(l) == "---" {
				break
			}
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "description" {
				return strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(strings.TrimLeft(l, "# ")); l != "" && l != "---" {
			return oneLine(l, 100)
		}
	}
	return ""
}

package main

// The device's terminals: _lembas/terminal/open, input, resize and close
// from the link (terminal_iface.go is the seam), output and exit back
// through its notify. Each terminal is a login shell on a PTY (pty_*.go),
// with the shell integration of terminal_shells.go.
//
//	PTY master ──read──▶ pending (unsent bytes) ──sender──▶ notify(output)
//	     ▲        stops above high_water,            blocks while the
//	     │        reads again below low_water        link is slow
//	     └──writer◀── input queue ◀── _lembas/terminal/input
//
// Output is sent as soon as it is read, never batched on a timer; when the
// client reads slowly the unsent bytes grow to high_water, the reader stops,
// the kernel's PTY buffer fills and the program writing blocks, so memory
// stays flat however much it writes (ttyd's scheme). Numbers and texts are
// harness/terminal.json's.
//
// A worker (floor 3): the link (a front end) drives it through
// terminal_iface.go; it calls the ground's PTYs and JSON-RPC errors.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

func init() {
	newTerminalHandler = func(notify func(method string, params any) error, limits func() terminalLimits) terminalHandler {
		return newTerminals(notify, limits)
	}
}

// terminalSpec is harness/terminal.json.
type terminalSpec struct {
	About string `json:"about"`
	Size  struct {
		DefaultCols int `json:"default_cols"`
		DefaultRows int `json:"default_rows"`
		MinCols     int `json:"min_cols"`
		MaxCols     int `json:"max_cols"`
		MinRows     int `json:"min_rows"`
		MaxRows     int `json:"max_rows"`
	} `json:"size"`
	MaxPerLink int `json:"max_per_link"`
	Flow       struct {
		About        string `json:"about"`
		ReadBytes    int    `json:"read_bytes"`
		MessageBytes int    `json:"message_bytes"`
		HighWater    int    `json:"high_water"`
		LowWater     int    `json:"low_water"`
	} `json:"flow"`
	InputQueue    int               `json:"input_queue"`
	HangupGraceMS int               `json:"hangup_grace_ms"`
	HangupNudgeMS int               `json:"hangup_nudge_ms"`
	DrainMS       int               `json:"drain_ms"`
	Term          string            `json:"term"`
	NotShells     []string          `json:"not_shells"`
	Shells        []string          `json:"shells"`
	Errors        map[string]string `json:"errors"`
}

// theTerminalSpec parses harness/terminal.json once; a broken file is a
// build-time bug that TestTerminalSpec catches.
//
//go:noinline
func theTerminalSpec() *terminalSpec { return terminalSpecFile.get() }

var terminalSpecFile = &harnessFile[terminalSpec]{name: "harness/terminal.json"}

// termErr is a -32602 with one of terminal.json's texts.
func termErr(key string, kv ...any) *rpcError {
	return &rpcError{Code: rpcInvalidParams, Message: loopText(theTerminalSpec().Errors, key, kv...)}
}

// terminals is one link's terminals.
type terminals struct {
	sp     *terminalSpec
	notify func(method string, params any) error
	limits func() terminalLimits
	shell  func() string // the login shell to start; tests set it
	env    func() []string

	mu     mutex
	open   map[string]*terminal
	seq    int
	closed bool
	wg     sync.WaitGroup // one per terminal until its exit is sent
}

func newTerminals(notify func(method string, params any) error, limits func() terminalLimits) *terminals {
	return &terminals{sp: theTerminalSpec(), notify: notify, limits: limits, shell: loginShell, env: os.Environ, open: map[string]*terminal{}}
}

// terminal is one shell on a PTY and the goroutines that move its bytes.
type terminal struct {
	id     string
	ts     *terminals
	p      *ptyProc
	rcDir  string // the integration's private files, removed at the end
	input  chan []byte
	gone   chan struct{} // closed when the terminal has ended
	hungup sync.Once

	mu      mutex
	cond    *sync.Cond
	pending [][]byte // read, not yet sent
	unsent  int      // bytes in pending
	eof     bool     // the reader has finished
	paused  bool     // the reader waits for unsent to fall to low_water
	read    int64    // bytes read from the PTY, all told
	pauses  int      // times the reader stopped at high_water
	dropped bool     // notify failed: the link is gone, output is discarded
}

type terminalOpenParams struct {
	Cwd  string `json:"cwd"`
	Cols *int   `json:"cols"`
	Rows *int   `json:"rows"`
}

type terminalOpenResult struct {
	TerminalID  string `json:"terminalId"`
	Cwd         string `json:"cwd"`
	Cols        int    `json:"cols"`
	Rows        int    `json:"rows"`
	Shell       string `json:"shell"`
	Integration bool   `json:"integration"`
}

type terminalData struct {
	TerminalID string `json:"terminalId"`
	Data       string `json:"data"`
}

type terminalExit struct {
	TerminalID string `json:"terminalId"`
	Code       int    `json:"code"`
}

// request serves one _lembas/terminal/* method.
func (ts *terminals) request(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "_lembas/terminal/open":
		var p terminalOpenParams
		if err := decodeTermParams(method, params, &p, "{ cwd?, cols?, rows? }"); err != nil {
			return nil, err
		}
		return ts.openTerminal(p)
	case "_lembas/terminal/input":
		var p terminalData
		if err := decodeTermParams(method, params, &p, "{ terminalId, data: <base64> }"); err != nil {
			return nil, err
		}
		t, err := ts.get(p.TerminalID)
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(p.Data)
		if err != nil {
			return nil, termErr("bad_data", "why", err)
		}
		return struct{}{}, t.write(b)
	case "_lembas/terminal/resize":
		var p struct {
			TerminalID string `json:"terminalId"`
			Cols       int    `json:"cols"`
			Rows       int    `json:"rows"`
		}
		if err := decodeTermParams(method, params, &p, "{ terminalId, cols, rows }"); err != nil {
			return nil, err
		}
		t, err := ts.get(p.TerminalID)
		if err != nil {
			return nil, err
		}
		cols, rows := ts.clamp(&p.Cols, &p.Rows)
		if err := t.p.resize(cols, rows); err != nil {
			return nil, rpcErrorf(rpcInternalError, "resizing terminal %s: %v", t.id, err)
		}
		return struct{}{}, nil
	case "_lembas/terminal/close":
		var p struct {
			TerminalID string `json:"terminalId"`
		}
		if err := decodeTermParams(method, params, &p, "{ terminalId }"); err != nil {
			return nil, err
		}
		t, err := ts.get(p.TerminalID)
		if err != nil {
			return nil, err
		}
		t.hangup()
		return struct{}{}, nil
	}
	return nil, rpcErrorf(rpcMethodNotFound, "%s is not a terminal method; the terminal methods are _lembas/terminal/open, input, resize and close", method)
}

// decodeTermParams decodes params strictly: a misspelt field is an error
// that names what the method takes, not a silently ignored setting.
func decodeTermParams(method string, params json.RawMessage, v any, takes string) error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(params)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return termErr("bad_params", "method", method, "why", err, "takes", takes)
	}
	return nil
}

// clamp applies the size limits; an absent size is the default.
func (ts *terminals) clamp(cols, rows *int) (int, int) {
	s := ts.sp.Size
	c, r := s.DefaultCols, s.DefaultRows
	if cols != nil {
		c = min(max(*cols, s.MinCols), s.MaxCols)
	}
	if rows != nil {
		r = min(max(*rows, s.MinRows), s.MaxRows)
	}
	return c, r
}

func (ts *terminals) get(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.open[id]; t != nil {
		return t, nil
	}
	return nil, termErr("unknown", "id", strconv.Quote(id))
}

// terminalCwd is where a terminal opens: cwd (absolute, symlinks resolved,
// a directory) inside one of the roots, or the first root.
func terminalCwd(cwd string, roots []string) (string, error) {
	if len(roots) == 0 {
		return "", termErr("no_roots")
	}
	if cwd == "" {
		return roots[0], nil
	}
	abs, err := resolveDir(cwd)
	if err != nil {
		return "", termErr("not_dir", "cwd", cwd, "why", err)
	}
	for _, r := range roots {
		if within(r, abs) {
			return abs, nil
		}
	}
	return "", termErr("outside", "cwd", cwd, "roots", strings.Join(roots, ", "))
}

// openTerminal starts a shell, registers it and starts its goroutines.
func (ts *terminals) openTerminal(p terminalOpenParams) (any, error) {
	lim := ts.limits()
	if !lim.Enabled {
		return nil, termErr("off")
	}
	cwd, err := terminalCwd(p.Cwd, lim.Roots)
	if err != nil {
		return nil, err
	}
	cols, rows := ts.clamp(p.Cols, p.Rows)
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return nil, termErr("closed")
	}
	if len(ts.open) >= ts.sp.MaxPerLink {
		ts.mu.Unlock()
		return nil, termErr("too_many", "max", ts.sp.MaxPerLink)
	}
	ts.seq++
	id := "term_" + strconv.Itoa(ts.seq)
	ts.open[id] = nil // the place is taken while the shell starts
	ts.wg.Add(1)
	ts.mu.Unlock()

	shell := ts.shell()
	ln, err := shellLaunchFor(shell, lim.Integration, ts.env(), ts.sp)
	var pp *ptyProc
	if err == nil {
		pp, err = startPTY(ln.path, ln.argv, cwd, ln.env, cols, rows)
	}
	if err != nil {
		if ln.rcDir != "" {
			os.RemoveAll(ln.rcDir)
		}
		ts.mu.Lock()
		delete(ts.open, id)
		ts.mu.Unlock()
		ts.wg.Done()
		return nil, &rpcError{Code: rpcInternalError, Message: loopText(ts.sp.Errors, "start", "shell", shell, "why", err)}
	}
	t := &terminal{id: id, ts: ts, p: pp, rcDir: ln.rcDir, input: make(chan []byte, ts.sp.InputQueue), gone: make(chan struct{})}
	t.cond = sync.NewCond(&t.mu)
	ts.mu.Lock()
	ts.open[id] = t
	closing := ts.closed // closeAll came while the shell started
	ts.mu.Unlock()
	go t.readLoop()
	go t.writeLoop()
	go t.run()
	if closing {
		t.hangup()
		return nil, termErr("closed")
	}
	return terminalOpenResult{TerminalID: id, Cwd: cwd, Cols: cols, Rows: rows, Shell: ln.kind, Integration: ln.integration}, nil
}

// readLoop reads the PTY into pending at once, and stops reading while the
// unsent bytes are above high water, until they fall to low water.
func (t *terminal) readLoop() {
	f := t.ts.sp.Flow
	buf := make([]byte, f.ReadBytes)
	drain := time.Duration(t.ts.sp.DrainMS) * time.Millisecond
	for {
		began := time.Now()
		n, err := t.p.Read(buf)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && time.Since(began) < drain/2 {
			// The drain deadline passed while the reader was stopped at
			// high water, not while it waited for output: what is still
			// in the PTY is read before the reader gives up.
			t.p.drainBy(time.Now().Add(drain))
			continue
		}
		if n > 0 {
			t.mu.Lock()
			t.pending = append(t.pending, append([]byte(nil), buf[:n]...))
			t.unsent += n
			t.read += int64(n)
			t.cond.Broadcast()
			if t.unsent >= f.HighWater {
				t.paused = true
				t.pauses++
				t.cond.Broadcast()
				for t.unsent > f.LowWater {
					t.cond.Wait()
				}
				t.paused = false
			}
			t.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	t.mu.Lock()
	t.eof = true
	t.cond.Broadcast()
	t.mu.Unlock()
}

// sendLoop sends what is pending as soon as there is any, up to
// message_bytes a notification; it returns once the reader has finished and
// everything was sent.
func (t *terminal) sendLoop() {
	max := t.ts.sp.Flow.MessageBytes
	for {
		t.mu.Lock()
		for len(t.pending) == 0 && !t.eof {
			t.cond.Wait()
		}
		if len(t.pending) == 0 {
			t.mu.Unlock()
			return
		}
		var out []byte
		k := 0
		for k < len(t.pending) && (len(out) == 0 || len(out)+len(t.pending[k]) <= max) {
			out = append(out, t.pending[k]...)
			k++
		}
		clear(t.pending[:k]) // the sent chunks are not kept alive by the queue's array
		t.pending = t.pending[k:]
		dropped := t.dropped || t.ts.isClosed()
		t.mu.Unlock()
		if !dropped && t.ts.notify("_lembas/terminal/output", terminalData{TerminalID: t.id, Data: base64.StdEncoding.EncodeToString(out)}) != nil {
			t.mu.Lock()
			t.dropped = true
			t.mu.Unlock()
		}
		t.mu.Lock()
		t.unsent -= len(out)
		t.cond.Broadcast()
		t.mu.Unlock()
	}
}

// run sends the output until the PTY ends, bounds the reading of what a
// background job may keep writing once the shell has gone, then sends exit
// with the shell's status and forgets the terminal.
func (t *terminal) run() {
	defer t.ts.wg.Done()
	sent := make(chan struct{})
	go func() { t.sendLoop(); close(sent) }()
	select {
	case <-t.p.done:
		t.p.drainBy(time.Now().Add(time.Duration(t.ts.sp.DrainMS) * time.Millisecond))
	case <-sent:
	}
	<-sent
	<-t.p.done
	t.mu.Lock()
	dropped := t.dropped || t.ts.isClosed()
	t.mu.Unlock()
	if !dropped {
		t.ts.notify("_lembas/terminal/exit", terminalExit{TerminalID: t.id, Code: t.p.code})
	}
	t.ts.mu.Lock()
	delete(t.ts.open, t.id)
	t.ts.mu.Unlock()
	close(t.gone)
	// A hangup from closeAll may be under way; once.Do waits for it and
	// stops any later one, so the master is never closed under its ioctl.
	t.hungup.Do(func() {})
	t.p.close()
	if t.rcDir != "" {
		os.RemoveAll(t.rcDir)
	}
}

// write queues keystrokes for the writer, so a shell that does not read
// its input never blocks the link; a full queue drops them and says so.
func (t *terminal) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	select {
	case t.input <- b:
		return nil
	case <-t.gone:
		return termErr("unknown", "id", strconv.Quote(t.id))
	default:
		return termErr("busy", "id", t.id)
	}
}

func (t *terminal) writeLoop() {
	for {
		select {
		case b := <-t.input:
			if _, err := t.p.Write(b); err != nil {
				return
			}
		case <-t.gone:
			return
		}
	}
}

// hangup sends SIGHUP to the terminal's session and, should something in it
// ignore that, kills the session after hangup_grace_ms. A shell still there
// after hangup_nudge_ms gets SIGHUP once more: bash takes a SIGHUP that
// lands between drawing its prompt and blocking in read as a pending trap,
// then sleeps in read with it, since a hangup that leaves the line up
// brings no input to wake it (the HUP trap never ran; 2 runs in 300 of
// TestTerminalCloseHangsUp under load). The second signal interrupts that
// read, and the pending trap runs.
func (t *terminal) hangup() {
	t.hungup.Do(func() {
		t.p.hangup()
		go func() {
			grace := time.Duration(t.ts.sp.HangupGraceMS) * time.Millisecond
			if nudge := time.Duration(t.ts.sp.HangupNudgeMS) * time.Millisecond; nudge > 0 && nudge < grace {
				select {
				case <-t.p.done:
					return
				case <-time.After(nudge):
					t.p.nudge()
					grace -= nudge
				}
			}
			select {
			case <-t.p.done:
			case <-time.After(grace):
				t.p.kill()
			}
		}()
	})
}

// isClosed says whether the link has closed: nothing is sent after that.
func (ts *terminals) isClosed() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.closed
}

// closeAll hangs up every terminal of the link and waits until each has
// ended; no terminal opens after it, and nothing more is notified (the
// link is going).
func (ts *terminals) closeAll() {
	ts.mu.Lock()
	ts.closed = true
	var all []*terminal
	for _, t := range ts.open {
		if t != nil {
			all = append(all, t)
		}
	}
	ts.mu.Unlock()
	for _, t := range all {
		t.hangup()
	}
	ts.wg.Wait()
}

// flowState is a terminal's flow-control counters, for tests and
// benchmarks.
type flowState struct {
	read   int64
	unsent int
	paused bool
	pauses int
}

func (t *terminal) flow() flowState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return flowState{read: t.read, unsent: t.unsent, paused: t.paused, pauses: t.pauses}
}

// resolveDir resolves a directory path's symlinks; it must be absolute and
// exist.
func resolveDir(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", errorNew("the path must be absolute")
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(r)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", errorf("not a directory")
	}
	return r, nil
}

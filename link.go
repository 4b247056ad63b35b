package main

// The device link: lembas dials out to a LLeMbas instance over a WebSocket
// and lets it run agent sessions here (harness/acp.md is the contract, at
// link protocol 3). One service holds one JSON-RPC connection (jsonrpc.go's
// rpcConn) for its whole life over a linkPipe, and one acpAgent whose
// sessions outlive any one socket: a link that drops leaves its turns
// running, and the next link finds them (turns, status).
//
//	dial loop: discovery → dial → hello → serve until the socket ends → backoff → dial …
//	                                  │
//	rpcConn (one, over linkPipe) ─────┴─► linkService.request / notify ─► acpAgent + link_session.go
//
// Timers run only while linked (ping, dead-link check, the limits watch)
// or while waiting to dial again; an idle device with no link wakes for
// nothing else.
//
// A front end (floor 5): it calls the session (session.go), the workers and
// the ground's JSON-RPC; nothing below calls it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/websocket"
)

// linkSpec is harness/link.json.
type linkSpec struct {
	About         string `json:"about"`
	Protocol      int    `json:"protocol"`
	LinkPath      string `json:"link_path"`
	DiscoveryPath string `json:"discovery_path"`
	WS            struct {
		MaxMessageBytes int `json:"max_message_bytes"`
		SendQueue       int `json:"send_queue"`
		SendQueueBytes  int `json:"send_queue_bytes"`
		WriteTimeoutS   int `json:"write_timeout_s"`
		PingS           int `json:"ping_s"`
		DeadS           int `json:"dead_s"`
		MaxInflight     int `json:"max_inflight"`
		IdleReleaseMS   int `json:"idle_release_ms"` // quiet this long, the service gives memory back (link_idle.go)
	} `json:"ws"`
	Backoff struct {
		FirstMS int `json:"first_ms"`
		MaxMS   int `json:"max_ms"`
		ResetS  int `json:"reset_s"`
	} `json:"backoff"`
	Turns struct {
		Keep        int `json:"keep"`
		PruneDays   int `json:"prune_days"`
		StaleTempsS int `json:"stale_temp_s"` // an atomic write's temp file older than this was left by a kill
	} `json:"turns"`
	Share struct {
		ReleaseTimeoutS int `json:"release_timeout_s"`
	} `json:"share"`
	Library struct {
		BasesMax int `json:"bases_max"`
		NameMax  int `json:"name_max"`
	} `json:"library"`
	RemoteDefaults struct {
		Enabled             bool   `json:"enabled"`
		RequireTrust        bool   `json:"require_trust"`
		MaxMode             string `json:"max_mode"`
		Terminal            bool   `json:"terminal"`
		TerminalIntegration bool   `json:"terminal_integration"`
		ApprovalTimeout     int    `json:"approval_timeout"`
		Scheduled           bool   `json:"scheduled"`
	} `json:"remote_defaults"`
	Files struct {
		DefaultLimit int `json:"default_limit"`
		MaxLimit     int `json:"max_limit"`
	} `json:"files"`
	TitleMax   int      `json:"title_max"`
	ModeRank   []string `json:"mode_rank"`
	DeviceFlow struct {
		DefaultIntervalS int      `json:"default_interval_s"`
		SlowDownS        int      `json:"slow_down_s"`
		HTTPTimeoutS     int      `json:"http_timeout_s"`
		Scopes           []string `json:"scopes"` // asked for in the device flow (memory: harness README 3.0.0)
	} `json:"device_flow"`
	Capabilities  []string          `json:"capabilities"`
	ProgressEvent string            `json:"progress_event"`
	PhaseEvent    string            `json:"phase_event"`
	Texts         map[string]string `json:"texts"`
	Errors        map[string]string `json:"errors"`
}

// theLinkSpec parses harness/link.json once; a broken file is a build-time
// bug that TestLinkSpec catches.
//
//go:noinline
func theLinkSpec() *linkSpec { return linkSpecFile.get() }

var linkSpecFile = &harnessFile[linkSpec]{name: "harness/link.json"}

func linkText(key string, kv ...any) string { return loopText(theLinkSpec().Texts, key, kv...) }

// linkErr is a -32602 from one of link.json's error texts.
func linkErr(key string, kv ...any) *rpcError {
	return &rpcError{Code: rpcInvalidParams, Message: loopText(theLinkSpec().Errors, key, kv...)}
}

// methodForError is a method name cut to link.json's errors.method_max.
func methodForError(m string) string {
	n := 64
	fmt.Sscan(theLinkSpec().Errors["method_max"], &n)
	return cutForError(m, n)
}

// checkProtocolVersion holds initialize's protocolVersion to what ACP says
// it is, a uint16: absent, not a whole number, or out of range is -32602.
func checkProtocolVersion(raw json.RawMessage) *rpcError {
	var p struct {
		V json.RawMessage `json:"protocolVersion"`
	}
	json.Unmarshal(raw, &p)
	got := strings.TrimSpace(string(p.V))
	var n json.Number
	if err := json.Unmarshal(p.V, &n); err == nil {
		if v, err := n.Int64(); err == nil && v >= 0 && v <= 65535 {
			return nil
		}
	}
	if got == "" {
		got = "nothing"
	}
	return &rpcError{Code: rpcInvalidParams, Message: loopText(theLinkSpec().Errors, "protocol_version", "got", cutForError(got, 32))}
}

// discovery is /.well-known/lembas.json.
type discovery struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Protocol    int    `json:"protocol"`
	Protocols   []int  `json:"protocols"`
	Link        string `json:"link"`
	DeviceAuth  string `json:"device_authorization_endpoint"`
	TokenURL    string `json:"token_endpoint"`
	ClientID    string `json:"client_id"`
	resolvedURL string
}

// speaks says whether the instance lists protocol p.
func (d *discovery) speaks(p int) bool {
	ps := d.Protocols
	if len(ps) == 0 {
		ps = []int{d.Protocol}
	}
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

func (d *discovery) protocols() string {
	ps := d.Protocols
	if len(ps) == 0 {
		ps = []int{d.Protocol}
	}
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprint(p))
	}
	return strings.Join(s, ", ")
}

// isLoopbackURL says whether u names this machine.
func isLoopbackURL(u *url.URL) bool {
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkInstanceURL holds an instance's address to https, or http on
// loopback.
func checkInstanceURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, errorf("%s is not an instance address; give it as https://host", raw)
	}
	if u.Scheme == "http" && !isLoopbackURL(u) {
		return nil, errorNew(linkText("https_only", "url", raw))
	}
	return u, nil
}

// readDiscovery fetches and checks the instance's discovery document.
func readDiscovery(ctx context.Context, client *http.Client, base string) (*discovery, error) {
	u, err := checkInstanceURL(base)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", u.String()+theLinkSpec().DiscoveryPath, nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil, errorf("reading %s%s: %v", u, theLinkSpec().DiscoveryPath, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, errorf("reading %s%s: %s; is this the address of a LLeMbas instance?", u, theLinkSpec().DiscoveryPath, resp.Status)
	}
	var d discovery
	if err := json.NewDecoder(limitBody(resp.Body)).Decode(&d); err != nil {
		return nil, errorf("%s%s is not a LLeMbas discovery document: %v", u, theLinkSpec().DiscoveryPath, err)
	}
	if !d.speaks(theLinkSpec().Protocol) {
		return nil, errorNew(linkText("old_instance", "url", u.String(), "protocols", d.protocols()))
	}
	d.resolvedURL = u.String()
	return &d, nil
}

// resolveRef resolves an endpoint URL of the discovery against the instance.
func (d *discovery) resolveRef(ref string) (string, error) {
	base, _ := url.Parse(d.resolvedURL + "/")
	r, err := url.Parse(ref)
	if err != nil {
		return "", errorf("the instance's endpoint %q is not a URL", ref)
	}
	out := base.ResolveReference(r)
	if _, err := checkInstanceURL(out.String()); err != nil {
		return "", err
	}
	return out.String(), nil
}

// linkURL is the WebSocket address to dial.
func (d *discovery) linkURL() (string, error) {
	ref := d.Link
	if ref == "" {
		ref = strings.TrimPrefix(theLinkSpec().LinkPath, "/")
	}
	base, _ := url.Parse(d.resolvedURL + "/")
	r, err := url.Parse(ref)
	if err != nil {
		return "", errorf("the instance's link address %q is not a URL", ref)
	}
	u := base.ResolveReference(r)
	switch u.Scheme {
	case "http":
		if !isLoopbackURL(u) {
			return "", errorNew(linkText("https_only", "url", u.String()))
		}
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws":
		if !isLoopbackURL(u) {
			return "", errorNew(linkText("https_only", "url", u.String()))
		}
	case "wss":
	default:
		return "", errorf("the instance's link address %s is not a WebSocket address", u)
	}
	return u.String(), nil
}

// linkService is `lembas service`: the link, dialled again whenever it drops.
type linkService struct {
	sp    *linkSpec
	login *loginRecord
	log   func(string)
	http  *http.Client
	pipe  *linkPipe
	agent *acpAgent
	conn  *rpcConn
	turns *turnBook
	term  terminalHandler

	inflight atomic.Int64 // requests being worked on now (ws.max_inflight), this service's own
	shares   shareTable   // the sessions terminals share with this service now (link_share.go)
	steers   linkSteerIDs // steered texts' message ids, per session (link_steer.go)

	// sleep, pingEvery and deadAfter are the clock (link.json's backoff,
	// ping_s, dead_s), for tests that must not wait for real.
	sleep     func(ctx context.Context, d time.Duration) error
	pingEvery time.Duration
	deadAfter time.Duration

	mu            mutex
	disc          *discovery
	sock          *linkSocket
	limits        remoteLimits // as the current link announced them
	linkedSince   time.Time
	lembas        bool // the client said _meta.lembas
	linkSess      map[string]*linkSession
	stopErr       error // set when the service must stop (4400)
	onLinked      func()
	cards         linkCardState  // the client's cards (link_cards.go)
	libraryCap    bool           // capability library on this link (link_library.go)
	prototypesCap bool           // the client asked for prototypes (link_prototypes.go)
	sched         schedLinkState // scheduled approvals waiting for a link (link_scheduled.go)
	// newTerm makes a link's terminal handler: newTerminalHandler, the one
	// the build registered (terminal.go), or nil where it has none.
	newTerm func(notify func(method string, params any) error, limits func() terminalLimits) terminalHandler

	statusErr string // the last status.json write fault logged (link_service.go)

	idle linkIdle // memory given back when quiet (link_idle.go)
}

// newLinkService makes the service for one login; nothing is dialled yet.
func newLinkService(login *loginRecord, log func(string)) *linkService {
	sp := theLinkSpec()
	svc := &linkService{sp: sp, login: login, log: log, http: &http.Client{Timeout: 30 * time.Second},
		pipe: newLinkPipe(), turns: newTurnBook(), linkSess: map[string]*linkSession{}, sleep: sleepCtx, newTerm: newTerminalHandler,
		pingEvery: time.Duration(sp.WS.PingS) * time.Second, deadAfter: time.Duration(sp.WS.DeadS) * time.Second}
	svc.turns.log = log
	svc.agent = newACPAgent(context.Background(), svc.pipe, svc.pipe, log)
	svc.conn = svc.agent.conn
	for _, k := range linkKeys {
		svc.conn.keys[foldKey(k)] = k
	}
	svc.conn.onRequest = svc.request
	svc.conn.onNotify = svc.notification
	return svc
}

// linkKeys are the keys the link reads beyond those acp_agent.go does.
var linkKeys = []string{"turnId", "lembas_model", "effort", "lembas", "system_prompt", "personalization",
	"protocol", "path", "query", "limit", "title", "text", "messageId", "model", "_meta", "clientCapabilities",
	"personality", "personality_custom", "instructions", "enabled", "available",
	"prototypes", "offered", "sources", "capabilities"} // link_prototypes.go

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errStop4400 is the 4400 close: not redialled.
// Its text is the link spec's, read when it is shown, so that start-up
// parses nothing.
var errStop4400 error = stop4400{}

type stop4400 struct{}

func (stop4400) Error() string { return theLinkSpecText("protocol_4400") }

func theLinkSpecText(key string) string { return theLinkSpec().Texts[key] }

// run dials and serves until ctx ends (nil) or the instance closes with
// 4400 (errStop4400). Between links it waits a jittered, growing delay.
func (svc *linkService) run(ctx context.Context) error {
	go svc.conn.serve()
	defer svc.shutdown()
	if ln, err := svc.serveShares(); err == nil { // link_share.go: terminals' /share
		defer ln.Close()
	} else {
		svc.log(err.Error())
	}
	wait := time.Duration(svc.sp.Backoff.FirstMS) * time.Millisecond
	for {
		up, err := svc.linkOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errStop4400) {
			svc.log(err.Error())
			return err
		}
		if up >= time.Duration(svc.sp.Backoff.ResetS)*time.Second {
			wait = time.Duration(svc.sp.Backoff.FirstMS) * time.Millisecond
		}
		d := jitter(wait)
		if up > 0 {
			svc.log(linkText("unlinked", "instance", svc.login.Name, "error", err, "wait", d.Round(time.Millisecond)))
		} else {
			svc.log(linkText("dial_failed", "url", svc.login.URL, "error", err, "wait", d.Round(time.Millisecond)))
		}
		if svc.sleep(ctx, d) != nil {
			return nil
		}
		wait *= 2
		if max := time.Duration(svc.sp.Backoff.MaxMS) * time.Millisecond; wait > max {
			wait = max
		}
	}
}

// jitter is a random point between half of d and d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
}

// shutdown ends the pipe, every turn and every terminal.
func (svc *linkService) shutdown() {
	svc.pipe.close()
	svc.agent.cancel()
	svc.closeTerminals()
	svc.agent.wg.Wait()
	svc.agent.mu.Lock()
	for _, s := range svc.agent.sessions {
		s.cleanup()
	}
	svc.agent.sessions = map[string]*acpSession{}
	svc.agent.mu.Unlock()
}

// linkOnce reads discovery, dials, says hello and serves one link until it
// ends; up is how long it stayed linked (0: never linked).
func (svc *linkService) linkOnce(ctx context.Context) (up time.Duration, err error) {
	d, err := readDiscovery(ctx, svc.http, svc.login.URL)
	if err != nil {
		return 0, err
	}
	wsURL, err := d.linkURL()
	if err != nil {
		return 0, err
	}
	cfg, err := websocket.NewConfig(wsURL, d.resolvedURL)
	if err != nil {
		return 0, err
	}
	cfg.Header.Set("Authorization", "Bearer "+svc.login.Token)
	cfg.Dialer = &net.Dialer{Timeout: 30 * time.Second}
	ws, raw, err := dialLink(cfg)
	if err != nil {
		return 0, errorf("dialling %s: %v", wsURL, redactToken(err.Error(), svc.login.Token))
	}
	sock := newLinkSocket(ws, raw, svc.sp.WS.MaxMessageBytes, svc.sp.WS.SendQueue, time.Duration(svc.sp.WS.WriteTimeoutS)*time.Second)
	lim, lerr := readRemoteLimits()
	if lerr != nil {
		svc.log(lerr.Error())
	}
	start := time.Now()
	svc.mu.Lock()
	svc.disc, svc.sock, svc.limits, svc.linkedSince, svc.lembas = d, sock, lim, start, false
	svc.mu.Unlock()
	svc.agent.mu.Lock()
	svc.agent.initialized = false // every link begins with its own initialize
	svc.agent.mu.Unlock()
	svc.openTerminals()
	svc.hello(sock, lim)
	svc.pipe.set(sock)
	svc.log(linkText("linked", "instance", d.Name, "url", svc.login.URL, "roots", fmt.Sprint(lim.Roots), "max_mode", lim.MaxMode))
	svc.sayStatusErr(writeServiceStatus(svc.login.Name, d.Name, start, lim))
	if svc.onLinked != nil {
		svc.onLinked()
	}
	svc.touched()
	err = svc.watch(ctx, sock)
	svc.mu.Lock()
	if svc.sock == sock {
		svc.sock = nil
	}
	svc.mu.Unlock()
	svc.conn.dropPending(sock)
	svc.closeTerminals()
	svc.sayStatusErr(writeServiceStatus(svc.login.Name, "", time.Time{}, lim))
	if _, code := sock.reason(); code == 4400 || svc.refused() {
		return time.Since(start), errStop4400
	}
	return time.Since(start), err
}

// watch waits for the socket to end: it pings every ping_s, takes a link
// that did not answer a ping as dead (so within dead_s of its last frame), and relinks when the limits
// the link announced have changed and no session works.
func (svc *linkService) watch(ctx context.Context, sock *linkSocket) error {
	ping := time.NewTicker(svc.pingEvery)
	defer ping.Stop()
	dead := svc.deadAfter
	// Checked at each tick: silent for longer than dead less half a ping
	// period means the last ping went unanswered (half a period is the
	// slack for a late pong or a late tick), and a link that died just
	// after a frame is noticed by dead at the latest, never a tick later.
	silent := dead - svc.pingEvery/2
	for {
		select {
		case <-ctx.Done():
			sock.closeWith(1001)
			return ctx.Err()
		case <-sock.done:
			err, _ := sock.reason()
			return err
		case <-ping.C:
			if time.Since(time.Unix(0, sock.seen.Load())) > silent {
				sock.fail(errorNew(linkText("dead", "seconds", dead.Seconds())))
				continue
			}
			sock.ping()
			svc.checkLimits(sock)
			svc.idleRelease()
		}
	}
}

// checkLimits closes the link so it is dialled again when the remote:
// block changed what the link announced, once no session works.
func (svc *linkService) checkLimits(sock *linkSocket) bool {
	lim, _ := readRemoteLimits()
	svc.mu.Lock()
	same := sameAnnounced(lim, svc.limits)
	svc.mu.Unlock()
	if same || svc.busy() {
		return false
	}
	svc.log(linkText("limits_changed"))
	sock.closeWith(1012)
	return true
}

// busy says whether any session has a turn running or waiting.
func (svc *linkService) busy() bool {
	svc.agent.mu.Lock()
	defer svc.agent.mu.Unlock()
	for _, s := range svc.agent.sessions {
		s.mu.Lock()
		n := len(s.queue)
		s.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// hello is the first message of every link.
func (svc *linkService) hello(sock *linkSocket, lim remoteLimits) {
	host, _ := os.Hostname()
	b, _ := json.Marshal(rpcMessage{JSONRPC: "2.0", Method: "_lembas/hello", Params: rawJSON(map[string]any{
		"protocol": svc.sp.Protocol, "version": version, "harness_spec": harnessVersion(),
		"device": map[string]string{"host": host, "platform": runtime.GOOS + "/" + runtime.GOARCH},
		"limits": lim.announced(),
	})})
	sock.writeFrame(b)
}

// notifyBlocking sends a notification on the current link, waiting while
// its send queue is full (the terminals' flow control).
func (svc *linkService) notifyBlocking(method string, params any) error {
	svc.mu.Lock()
	sock := svc.sock
	svc.mu.Unlock()
	if sock == nil {
		return errLinkClosed
	}
	b, err := json.Marshal(rpcMessage{JSONRPC: "2.0", Method: method, Params: rawJSON(params)})
	if err != nil {
		return err
	}
	return sock.writeFrame(b)
}

// dropPending fails every call waiting for an answer from sock's link: an
// approval asked on a link that dropped is a denial, never an answer from
// a later link that never saw the question.
func (c *rpcConn) dropPending(sock *linkSocket) {
	c.mu.Lock()
	pend := c.pending
	c.pending = map[string]chan rpcResponse{}
	c.mu.Unlock()
	for _, ch := range pend {
		select {
		case ch <- rpcResponse{err: &rpcError{Code: rpcInternalError, Message: "the link dropped before the answer came"}}:
		default:
		}
	}
}

// redactToken takes a token out of a message before it is logged.
//
//go:noinline
func redactToken(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[token]")
}

package main

// A host that is not allowed is asked, not just refused. When a command
// connects through the proxy (sandbox_proxy.go) — or webfetch fetches a
// page (web.go) — to a host that is neither a package registry (commands
// only) nor in sandbox.network.allow nor allowed for this project before,
// the connection is held and the person is asked through the session's
// approver (permission_approve.go: the terminal's card, ACP's
// session/request_permission, the link's card), naming the host, its port
// and the command that asked:
//
//	once     this command (or this fetch) may reach the host
//	project  and every later command of this project: kept in
//	         stateDir()/network.json, never in config.yaml
//	deny     refused; the command reads why in the proxy's answer
//
// Headless (-p), nobody can answer: the host is refused at once, the
// command reads why, and stderr names sandbox.network.allow. The hold is
// the approval's timeout (approveWithin), ended early when the command
// ends (its run is released), so a held connection never outlives its
// command and no goroutine waits on nothing.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
)

// unattended is an approver that refuses unseen (-p's, and a subagent's
// that passes to it): asking it is refusing, so the network gate says so
// on stderr instead of showing a card nobody sees.
type unattended interface{ unattended() bool }

// nobodyApproves says whether a's requests are refused unseen.
func nobodyApproves(a approver) bool {
	if a == nil {
		return true
	}
	u, ok := a.(unattended)
	return ok && u.unattended()
}

// hostRefusals is an unattended approver that keeps the hosts refused
// unasked (-p's: the run then ends "not done", exit 5, naming them and
// sandbox.network.allow in one sentence, as for other refusals).
type hostRefusals interface {
	refusedHost(host string)
	logsHosts() bool
}

// netCards numbers the network cards, for their call ids.
var netCards atomic.Int64

// netRun is what the network gate keeps of one running command: who asks
// for it, what it is, and the hosts already answered for it.
type netRun struct {
	what   string // the command line (or "webfetch URL")
	ask    approver
	say    func(string) // -p's stderr, "" elsewhere
	ctx    context.Context
	cancel context.CancelFunc

	initPid int    // in the world: its init's pid (the proxy's view), and
	wid     uint64 // the command's id there — to know it when it connects (under netState.mu)

	card    chan struct{} // one card at a time per command: held while one is up
	stray   *netRun       // connections no command is known to have made, while this is the newest (strays)
	mu      mutex
	asked   int                      // cards raised, up to proxy.ask_max_hosts
	allowed map[string]bool          // host: once for this command
	denied  map[string]string        // host: the body the command reads
	waiting map[string]chan struct{} // host: a card is up for it
}

func newNetRun(parent context.Context, what string, ask approver, say func(string)) *netRun {
	ctx, cancel := context.WithCancel(parent)
	return &netRun{what: what, ask: ask, say: say, ctx: ctx, cancel: cancel, card: make(chan struct{}, 1),
		allowed: map[string]bool{}, denied: map[string]string{}, waiting: map[string]chan struct{}{}}
}

// netState is a sandbox's part of the gate: the commands running now, in
// the order they started, and the hosts this project allowed.
type netState struct {
	mu      mutex
	runs    []*netRun
	project []string // loaded once from network.json
	loaded  bool
	told    map[string]bool // -p: hosts already named on stderr
	file    string          // where the project's hosts are kept; "": netFile() (a test injects a folder of its own)
}

// netHold registers a command about to run; netRelease ends its cards.
func (s *sandbox) netHold(r *netRun) {
	if r == nil {
		return
	}
	s.net.mu.Lock()
	s.net.runs = append(s.net.runs, r)
	s.net.mu.Unlock()
}

func (s *sandbox) netRelease(r *netRun) {
	if r == nil {
		return
	}
	r.cancel() // a card still up is taken down; its connection is refused
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	for i, x := range s.net.runs {
		if x == r {
			s.net.runs = append(s.net.runs[:i], s.net.runs[i+1:]...)
			break
		}
	}
}

// netPlaced notes where r's command runs in the world (p's place: its
// init and its id), so that its connections are known to be its own.
func (s *sandbox) netPlaced(r *netRun, p procHandle) {
	wp, ok := p.(interface{ worldRef() (int, uint64) })
	if r == nil || !ok {
		return
	}
	init, id := wp.worldRef()
	s.net.mu.Lock()
	r.initPid, r.wid = init, id
	s.net.mu.Unlock()
}

// netPeer is what the proxy knows of who made a connection: nothing (the
// host's loopback: world false), or the world's word — which init
// forwarded it, and the command's id there when the init could tell.
type netPeer struct {
	world bool
	init  int
	id    uint64
	known bool
}

// netFile is where every project's "always" hosts are kept.
func netFile() string { return filepath.Join(stateDir(), "network.json") }

// netPath is this sandbox's network.json.
//
//go:noinline
func (s *sandbox) netPath() string {
	if s.net.file != "" {
		return s.net.file
	}
	return netFile()
}

// readNetFile reads network.json: each project's hosts. A file that is
// there but not a map of host lists is an error (allowProject then leaves
// it as it is rather than write over the other projects' hosts).
func readNetFile(path string) (map[string][]string, error) {
	m := map[string][]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return map[string][]string{}, errorf("%s is not a map of host lists (%v); fix or remove it", path, err)
	}
	return m, nil
}

// projectHosts are the hosts this project allowed with "always".
func (s *sandbox) projectHosts() []string {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	if !s.net.loaded {
		s.net.loaded = true
		m, _ := readNetFile(s.netPath()) // a corrupt file allows nothing
		for _, h := range m[s.root] {
			if _, ok := netHost(h); ok { // a name or an address, never a pattern
				s.net.project = append(s.net.project, h)
			}
		}
	}
	return append([]string{}, s.net.project...)
}

// allowProject keeps host among this project's hosts, on disk.
func (s *sandbox) allowProject(host string) error {
	s.projectHosts()
	s.net.mu.Lock()
	if !contains(s.net.project, host) {
		s.net.project = append(s.net.project, host)
	}
	s.net.mu.Unlock()
	path := s.netPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	unlock, err := lockBeside(path)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := readNetFile(path)
	if err != nil {
		return err
	}
	if !contains(m[s.root], host) {
		m[s.root] = append(m[s.root], host)
		sort.Strings(m[s.root])
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	return writeFileAtomic(path, append(data, '\n'), 0o600)
}

// netHost is host as the gate judges it: lower case, without a trailing
// dot or an IPv6 literal's brackets, an address in its canonical form. ok
// is false for what is neither an address nor an ASCII host name (a
// pattern such as "*.com", a zone, a port, an IDN not written in punycode,
// a name whose last label is all digits such as "127.1"): the gate refuses
// it, so none is asked about or kept for the project.
func netHost(host string) (string, bool) {
	host = trimHost(host)
	if strings.IndexByte(host, ':') >= 0 {
		if ip := net.ParseIP(host); ip != nil {
			return ip.String(), true
		}
		return "", false
	}
	if host == "" || len(host) > 253 {
		return "", false
	}
	digits := true // so far in the label
	for i, start := 0, 0; i <= len(host); i++ {
		if i == len(host) || host[i] == '.' {
			l := host[start:i]
			if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
				return "", false
			}
			if i == len(host) && digits && net.ParseIP(host) == nil {
				return "", false // 127.1, 2130706433: no name, and no address Go's dialer reads
			}
			start, digits = i+1, true
			continue
		}
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", false
		}
		digits = digits && '0' <= c && c <= '9'
	}
	return strings.ToLower(host), true
}

// trimHost is host without an IPv6 literal's brackets or a trailing dot.
func trimHost(host string) string {
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	return strings.TrimSuffix(host, ".")
}

// hostListed says whether host is in one of lists: exactly, or under a
// "*.name" entry (never an IP literal so). Host and entries are compared
// as netHost writes them (lower case, no trailing dot or brackets, an
// address canonical); a host netHost refuses is in no list. Every
// connection through the proxy asks it, so an entry is only lowered and
// trimmed, and parsed as an address only when host is one.
func hostListed(host string, lists ...[]string) bool {
	host, ok := netHost(host)
	if !ok {
		return false
	}
	ip := net.ParseIP(host)
	for _, l := range lists {
		for _, a := range l {
			if rest, wild := strings.CutPrefix(a, "*."); wild {
				rest = strings.ToLower(trimHost(rest))
				if ip == nil && len(host) > len(rest) && strings.HasSuffix(host, rest) && host[len(host)-len(rest)-1] == '.' {
					return true
				}
				continue
			}
			a = strings.ToLower(trimHost(a))
			if a == host || (ip != nil && ip.Equal(net.ParseIP(a))) {
				return true
			}
		}
	}
	return false
}

// netVerdict is the gate's answer for one connection: allowed, or the
// text the command (or webfetch's model) reads.
type netVerdict struct {
	ok    bool
	body  string
	local bool // it may reach an address of this machine or its network: config or the registries name the host, or the address was the one allowed
}

// permitCommand judges a connection to host:port from a command lembas
// cannot tell (the host's loopback, without a world).
func (s *sandbox) permitCommand(host, port string) netVerdict {
	return s.permitCommandFrom(host, port, netPeer{})
}

// permitCommandFrom judges a command's connection to host:port: the
// registries, config's list and the project's hosts pass; else the person
// is asked for the command that connected, named by the world's forwarder
// (peer). When it is not known — no world, or the forwarder could not tell
// (a process its command left behind, an MCP server) — the newest command
// running is asked for, and the card says lembas could not tell.
func (s *sandbox) permitCommandFrom(host, port string, peer netPeer) netVerdict {
	h, ok := netHost(host)
	if !ok {
		return netVerdict{body: sandboxText("net_bad_host", "host", host, "port", port)}
	}
	host = h // asked about, and kept, as it is judged
	literal := net.ParseIP(host) != nil
	if s.allowedHost(host) {
		return netVerdict{ok: true, local: true}
	}
	if hostListed(host, s.projectHosts()) {
		return netVerdict{ok: true, local: literal}
	}
	s.net.mu.Lock()
	var r *netRun
	n := len(s.net.runs)
	named := false
	if peer.known && peer.init != 0 {
		for _, x := range s.net.runs {
			if x.wid == peer.id && x.initPid == peer.init {
				r, named = x, true
				break
			}
		}
	}
	if r == nil && n > 0 {
		r = s.net.runs[n-1]
	}
	s.net.mu.Unlock()
	if r == nil { // no command of this session is running: a leftover, or an MCP server
		return netVerdict{body: sandboxText("proxy_refused_body", "host", host, "port", port)}
	}
	what := r.what
	switch {
	case named: // the world's init said which
	case peer.world && n > 1:
		what += sandboxText("net_unknown_several", "n", n)
	case peer.world:
		what += sandboxText("net_unknown_one")
	case n > 1:
		what += sandboxText("net_several", "n", n)
	}
	if peer.world && !named {
		r = r.strays() // not the command's own answers: a stray is asked for itself
	}
	v := s.askHost(r, host, port, sandboxText("net_ask_reason", "host", host, "port", port, "command", what, "file", s.netPath()))
	v.local = v.ok && literal // a card names the host as spelled: only an address the person saw may be a local one
	return v
}

// strays is the record the gate keeps, beside r, of the connections the
// world's forwarder could not tie to a command while r is the newest: they
// are asked about as r is (its person, its one card at a time, ended with
// it) but answered apart, so a stray never rides on an answer given for r
// ("once" for the command), and r never on one given for a stray.
func (r *netRun) strays() *netRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stray == nil {
		s := newNetRun(r.ctx, r.what, r.ask, r.say)
		s.card = r.card
		r.stray = s
	}
	return r.stray
}

// permitWeb judges webfetch's fetch of host:port: the registries do not
// count (webfetch is for pages); config's list and the project's hosts
// pass, sandbox.network: on passes everything and off nothing; else the
// person is asked, as for a command.
func (s *sandbox) permitWeb(r *netRun, host, port string) netVerdict {
	if n, ok := netHost(host); ok {
		host = n
	} else if s.networkMode() != "on" {
		return netVerdict{body: sandboxText("net_bad_host", "host", host, "port", port)}
	}
	switch s.networkMode() {
	case "on":
		return netVerdict{ok: true}
	case "off":
		return netVerdict{body: sandboxText("web_off", "host", host)}
	}
	if hostListed(host, s.cfg.Allow, s.projectHosts()) {
		return netVerdict{ok: true}
	}
	return s.askHost(r, host, port, sandboxText("net_ask_reason", "host", host, "port", port, "command", r.what, "file", s.netPath()))
}

// webAsks says whether the gate, not the permissions, has the question
// about webfetch on host: the network is not on and host is not listed.
func (s *sandbox) webAsks(host string) bool {
	return s.networkMode() != "on" && !hostListed(host, s.cfg.Allow, s.projectHosts())
}

// webListed says whether config's sandbox.network.allow names host exactly
// (the leave for webfetch to reach a loopback or private address, as it is
// for commands).
func (s *sandbox) webListed(host string) bool {
	host, ok := netHost(host)
	if !ok {
		return false
	}
	for _, a := range s.cfg.Allow {
		if n, ok := netHost(a); ok && n == host {
			return true
		}
	}
	return false
}

// askHost asks r's person about host once for the command: a second
// connection while the card is up waits for its answer, and one after it
// takes the answer given.
func (s *sandbox) askHost(r *netRun, host, port, reason string) netVerdict {
	for {
		r.mu.Lock()
		if r.allowed[host] {
			r.mu.Unlock()
			return netVerdict{ok: true}
		}
		if b, ok := r.denied[host]; ok {
			r.mu.Unlock()
			return netVerdict{body: b}
		}
		if ch, ok := r.waiting[host]; ok {
			r.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-r.ctx.Done():
				return netVerdict{body: sandboxText("proxy_cancelled_body", "host", host, "port", port)}
			}
		}
		if max := theSandboxSpec().Proxy.AskMaxHosts; r.asked >= max {
			r.mu.Unlock()
			return netVerdict{body: sandboxText("proxy_too_many_body", "host", host, "port", port, "max", max)}
		}
		r.asked++
		ch := make(chan struct{})
		r.waiting[host] = ch
		r.mu.Unlock()
		var v netVerdict
		select {
		case r.card <- struct{}{}: // the command's other cards wait their turn
			v = s.askOnce(r, host, port, reason)
			<-r.card
		case <-r.ctx.Done():
			v = netVerdict{body: sandboxText("proxy_cancelled_body", "host", host, "port", port)}
		}
		r.mu.Lock()
		delete(r.waiting, host)
		if v.ok {
			r.allowed[host] = true
		} else {
			r.denied[host] = v.body
		}
		r.mu.Unlock()
		close(ch)
		return v
	}
}

func (s *sandbox) askOnce(r *netRun, host, port, reason string) netVerdict {
	if nobodyApproves(r.ask) {
		s.net.mu.Lock()
		if s.net.told == nil {
			s.net.told = map[string]bool{}
		}
		first := !s.net.told[host]
		s.net.told[host] = true
		s.net.mu.Unlock()
		l, logged := r.ask.(hostRefusals)
		if logged {
			l.refusedHost(host)
			logged = l.logsHosts()
		}
		if first && r.say != nil && !logged { // a log names it once, at the end
			r.say(sandboxText("net_headless", "host", host, "port", port))
		}
		return netVerdict{body: sandboxText("proxy_headless_body", "host", host, "port", port)}
	}
	// A call id of its own, not the running call's: ACP announces the card
	// as a tool call of its own, and the link takes it down by that id when
	// it is no longer waited for.
	req := approvalRequest{CallID: fmt.Sprintf("net_%d", netCards.Add(1)), Tool: "network", Input: net.JoinHostPort(host, port), Risk: "interact",
		Reason: reason, Rule: "sandbox.network.allow", Options: []string{"once", "project", "deny"}}
	ans := approveWithin(r.ctx, r.ask, req, approvalLimit(r.ask))
	if r.ctx.Err() != nil { // taken down (the command ended): whatever came back, refused
		return netVerdict{body: sandboxText("proxy_cancelled_body", "host", host, "port", port)}
	}
	switch ans.Choice {
	case "project":
		if err := s.allowProject(host); err != nil && r.say != nil {
			r.say(sandboxText("net_store_failed", "host", host, "error", err))
		}
		return netVerdict{ok: true}
	case "once":
		return netVerdict{ok: true}
	}
	switch ans.Why {
	case "timeout":
		return netVerdict{body: sandboxText("proxy_timeout_body", "host", host, "port", port)}
	case "cancelled":
		return netVerdict{body: sandboxText("proxy_cancelled_body", "host", host, "port", port)}
	}
	return netVerdict{body: sandboxText("proxy_denied_body", "host", host, "port", port)}
}

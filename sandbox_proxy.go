package main

// The proxy a session's commands reach the network through when
// sandbox.network is proxy (the default): HTTP CONNECT for TLS and plain
// HTTP with an absolute URL, to the hosts allowed — the package registries
// (sandbox.json proxy.allow) and sandbox.network.allow — and to no other.
// In the world it is the only way out (the world's loopback forwards to its
// Unix socket); without a world it listens on the host's loopback and binds
// only the programs that honour HTTP(S)_PROXY. A refused host is answered
// 403 with a sentence, and named to the model after the command.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

type sandboxProxy struct {
	sb      *sandbox
	sock    string // the Unix socket (the world's way out)
	port    int    // the loopback port (commands without a world)
	ls      []net.Listener
	mu      mutex
	refused []string     // hosts refused, in order, for the notes
	held    atomic.Int32 // connections waiting on the network gate (a card is up)
}

// startSandboxProxy listens on dir/proxy.sock and on 127.0.0.1.
func startSandboxProxy(sb *sandbox, dir string) (*sandboxProxy, error) {
	p := &sandboxProxy{sb: sb, sock: filepath.Join(dir, "proxy.sock")}
	ul, err := net.Listen("unix", p.sock)
	if err != nil {
		return nil, errorf("starting the network proxy: %v", err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ul.Close()
		return nil, errorf("starting the network proxy: %v", err)
	}
	p.port = tl.Addr().(*net.TCPAddr).Port
	p.ls = []net.Listener{ul, tl}
	go p.serve(ul, true)
	go p.serve(tl, false)
	return p, nil
}

func (p *sandboxProxy) close() {
	for _, l := range p.ls {
		l.Close()
	}
}

// serve accepts connections on l: the Unix socket's come from a world's
// forwarder (fromWorld), each after a line naming the command that
// connected (sandbox_world_peer_linux.go).
func (p *sandboxProxy) serve(l net.Listener, fromWorld bool) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go p.handle(c, fromWorld)
	}
}

// allowedHost says whether commands may reach host (no port): a name in
// the lists, or under a "*.name" entry. IP literals and loopback names are
// never allowed unless listed exactly.
func (sb *sandbox) allowedHost(host string) bool {
	return hostListed(host, theSandboxSpec().Proxy.Allow, sb.cfg.Allow)
}

// allowedHosts names the hosts for `sandbox check`.
func (sb *sandbox) allowedHosts() []string {
	return append(append(append([]string{}, theSandboxSpec().Proxy.Allow...), sb.cfg.Allow...), sb.projectHosts()...)
}

// permit is the network gate for one connection (sandbox_netask.go); while
// it asks, the connection is held, counted in held.
func (p *sandboxProxy) permit(host, port string, peer netPeer) netVerdict {
	p.held.Add(1)
	defer p.held.Add(-1)
	return p.sb.permitCommandFrom(host, port, peer)
}

// refuse answers a connection the gate refused: 403 and the gate's
// sentence, which names the host and what to do.
func (p *sandboxProxy) refuse(c net.Conn, host, body string) {
	p.mu.Lock()
	p.refused = append(p.refused, host)
	p.mu.Unlock()
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}

func (p *sandboxProxy) refusedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.refused)
}

// refusedSince names the hosts refused after the first n refusals.
func (p *sandboxProxy) refusedSince(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(p.refused) {
		return nil
	}
	return uniq(append([]string{}, p.refused[n:]...))
}

// handle serves one client connection: CONNECT host:port, or requests with
// absolute http:// URLs, one after another.
func (p *sandboxProxy) handle(c net.Conn, fromWorld bool) {
	defer c.Close()
	lim := &headLimit{r: c}
	br := bufio.NewReaderSize(lim, 4096)
	var peer netPeer
	if fromWorld {
		c.SetReadDeadline(time.Now().Add(2 * time.Minute))
		lim.n = int64(theSandboxSpec().Proxy.MaxHeaderBytes)
		line, err := br.ReadString('\n')
		id, known, ok := parsePeerLine(strings.TrimSuffix(line, "\n"))
		if err != nil || !ok {
			return // the forwarder always says who connected first
		}
		peer = netPeer{world: true, init: proxyPeer(c), id: id, known: known}
	}
	for {
		c.SetReadDeadline(time.Now().Add(2 * time.Minute))
		lim.n = int64(theSandboxSpec().Proxy.MaxHeaderBytes)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		lim.n = 1 << 62
		c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			host, port, err := net.SplitHostPort(req.Host)
			if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
				// no card for a port no connection can have (0, 70000)
				fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n%s", sandboxText("proxy_bad_request"))
				return
			}
			v := p.permit(host, port, peer)
			if !v.ok {
				p.refuse(c, host, v.body)
				return
			}
			up, body, err := p.dial(host, port, v)
			if body != "" {
				p.refuse(c, host, body)
				return
			}
			if err != nil {
				fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\nlembas sandbox: %s: %v\n", req.Host, err)
				return
			}
			defer up.Close()
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			if n := br.Buffered(); n > 0 {
				b, _ := br.Peek(n)
				up.Write(b)
			}
			go func() { io.Copy(up, c); closeWrite(up) }()
			io.Copy(c, up)
			return
		}
		if req.URL.Scheme != "http" || req.URL.Host == "" {
			fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n%s", sandboxText("proxy_bad_request"))
			return
		}
		host := req.URL.Hostname()
		port := req.URL.Port()
		if port == "" {
			port = "80"
		}
		v := p.permit(host, port, peer)
		if !v.ok {
			p.refuse(c, host, v.body)
			return
		}
		up, body, err := p.dial(host, port, v)
		if body != "" {
			p.refuse(c, host, body)
			return
		}
		if err != nil {
			fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\nlembas sandbox: %s: %v\n", req.URL.Host, err)
			return
		}
		req.Header.Del("Proxy-Connection")
		req.Header.Del("Proxy-Authorization")
		req.Header.Set("Connection", "close")
		req.RequestURI = ""
		err = req.Write(up) // origin form, the body streamed
		if err == nil {
			io.Copy(c, up) // the response as it comes; the connection ends with it
		}
		up.Close()
		return
	}
}

// dial connects to host:port for a connection the gate allowed. A host
// config or the registries name, or an address the person allowed as
// such, is dialed as it is; a name allowed on a card or for the project is
// resolved here and dialed at the address checked — a public one: the
// card showed the name, not where it leads (this machine's own name, or
// one that resolves, or rebinds, to loopback, the LAN or a cloud's
// metadata address). body is the refusal's sentence when it leads home.
func (p *sandboxProxy) dial(host, port string, v netVerdict) (up net.Conn, body string, err error) {
	if v.local || net.ParseIP(host) != nil {
		up, err = net.DialTimeout("tcp", net.JoinHostPort(host, port), 30*time.Second)
		return up, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, "", err
	}
	for _, a := range addrs {
		if privateIP(a) {
			return nil, sandboxText("proxy_local_body", "host", host, "port", port, "addr", a.Unmap().String()), nil
		}
	}
	if len(addrs) == 0 {
		return nil, "", errorf("%s has no address", host)
	}
	// Each address checked is tried in turn, as a plain dial of the name
	// would (an IPv6 one first on a machine without IPv6 routes), within
	// one bound for them all.
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	var d net.Dialer
	for _, a := range addrs {
		if up, err = d.DialContext(dctx, "tcp", net.JoinHostPort(a.Unmap().String(), port)); err == nil {
			return up, "", nil
		}
	}
	return nil, "", err
}

// headLimit bounds what one request head may read from a connection; the
// body that follows is read freely (n is lifted once the head is in).
type headLimit struct {
	r io.Reader
	n int64
}

func (h *headLimit) Read(b []byte) (int, error) {
	if h.n <= 0 {
		return 0, errorf("a request head over the proxy's limit")
	}
	if int64(len(b)) > h.n {
		b = b[:h.n]
	}
	n, err := h.r.Read(b)
	h.n -= int64(n)
	return n, err
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// peerLinePrefix starts the forwarder's line on each stream to the proxy.
const peerLinePrefix = "LEMBAS-PEER "

// parsePeerLine reads the forwarder's line (without its newline): the
// command's id, or known false for "?"; ok false for anything else.
func parsePeerLine(line string) (id uint64, known, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSuffix(line, "\r"), peerLinePrefix)
	if !found {
		return 0, false, false
	}
	if rest == "?" {
		return 0, false, true
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	if err != nil || n == 0 {
		return 0, false, false
	}
	return n, true, true
}

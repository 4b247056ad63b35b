package main

// webfetch: one page from the web, for the model to read. Safety first:
// http(s) only; a host is asked about once (an "always" answer remembers the
// host, as a rule webfetch: <host>); a loopback or private address is
// refused unless a rule names the host — checked when the call is judged
// and again on every connection the fetch makes, so a name that resolves
// elsewhere by the time of the fetch is still refused. Redirects on the
// same host are followed to a limit; one to another host is reported to
// the model, which may fetch it (and be asked) on its own. The body is read
// up to a cap, HTML is turned into markdown (web_html.go), and what is
// returned is capped again and says where it came from.
//
// A worker (floor 3): it calls the config and the ground.

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

func init() { toolImpls["webfetch"] = toolWebFetch }

// webTarget reads a call's URL: its parsed form and lower-case host.
func webTarget(t *toolSpec, raw string) (*url.URL, string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, "", errorNew(t.text("bad_url", "url", raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", errorNew(t.text("bad_scheme", "url", raw))
	}
	if u.Host == "" {
		return nil, "", errorNew(t.text("bad_url", "url", raw))
	}
	return u, strings.ToLower(u.Hostname()), nil
}

// privateIP says whether an address is one webfetch refuses by default,
// and the proxy for a name: loopback, private, link-local, multicast,
// unspecified, IPv6 unique-local, the prefixes of sandbox.json
// local_addresses, and an IPv4 address carried in NAT64's or 6to4's IPv6
// one that is any of these.
func privateIP(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	nets := localNets()
	for _, p := range nets.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	if a.Is6() {
		b := a.As16()
		for _, e := range nets.embed {
			if e.prefix.Contains(a) && e.at+4 <= len(b) {
				if v4 := netip.AddrFrom4([4]byte(b[e.at : e.at+4])); privateIP(v4) {
					return true
				}
			}
		}
	}
	return false
}

type embedV4 struct {
	prefix netip.Prefix
	at     int
}

// localNets is sandbox.json's local_addresses, parsed once (a plain Once:
// nothing is allocated at start-up); a prefix that does not parse is a
// fault of the spec, which the network conformance cases would show.
func localNets() *localNetList {
	localNetsOnce.Do(func() {
		la := theSandboxSpec().LocalAddresses
		for _, p := range la.Prefixes {
			if pf, err := netip.ParsePrefix(p); err == nil {
				localNetsVal.prefixes = append(localNetsVal.prefixes, pf)
			}
		}
		for p, at := range la.EmbedV4 {
			if pf, err := netip.ParsePrefix(p); err == nil {
				localNetsVal.embed = append(localNetsVal.embed, embedV4{pf, at})
			}
		}
	})
	return &localNetsVal
}

type localNetList struct {
	prefixes []netip.Prefix
	embed    []embedV4
}

var (
	localNetsOnce sync.Once
	localNetsVal  localNetList
)

// hostPrivate resolves a host and returns the first private address it
// has, if any ("" when none, or when it does not resolve: the fetch will
// say so).
func hostPrivate(ctx context.Context, host string) string {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if privateIP(a) {
			return a.String()
		}
		return ""
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "127.0.0.1"
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if privateIP(a) {
			return a.String()
		}
	}
	return ""
}

// decideWeb judges a webfetch call by its host: deny rules, then ask
// rules, then allow rules and always answers (webfetch: <host>, * in the
// pattern standing for any text; webfetch alone for every host); a private
// address needs an allow rule naming the host; otherwise auto runs it and
// every other mode asks, once per host when the answer is "always".
func (p *permissions) decideWeb(t *toolSpec, args json.RawMessage) decision {
	var a struct {
		URL string `json:"url"`
	}
	json.Unmarshal(args, &a)
	_, host, err := webTarget(t, a.URL)
	if err != nil {
		return decision{Verdict: "allow", Rule: "webfetch: the tool answers a bad URL itself"}
	}
	match := func(r sourcedRule) bool { return r.coversWeb(t.Name, host) }
	for _, r := range p.deny {
		if match(r) {
			return decision{Verdict: "deny", Rule: r.label("deny"), Reason: t.text("rule_denies", "rule", r.Text, "host", host)}
		}
	}
	for _, r := range p.ask {
		if match(r) {
			return decision{Verdict: "ask", Rule: r.label("ask"), Reason: permText("rule_ask", "rule", r.Text)}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(t.limit("timeout_s"))*time.Second)
	defer cancel()
	if ip := hostPrivate(ctx, host); ip != "" {
		if r, ok := p.privateWebRule(t.Name, host); ok {
			return decision{Verdict: "allow", Rule: r.label("allow")}
		}
		if p.net != nil && p.net.webListed(host) {
			return decision{Verdict: "allow", Rule: "sandbox.network.allow " + host}
		}
		return decision{Verdict: "deny", Rule: "webfetch private address", Reason: t.text("private", "host", host, "ip", ip)}
	}
	for _, r := range p.allowRules() {
		if match(r) {
			return decision{Verdict: "allow", Rule: r.label("allow")}
		}
	}
	if p.net != nil && p.net.webAsks(host) {
		// The network gate asks about this host when the fetch is made,
		// with the card commands get (sandbox_netask.go): one question, not two.
		return decision{Verdict: "allow", Rule: "sandbox.network: the host is asked about when fetched"}
	}
	if p.mode() == "auto" {
		return decision{Verdict: "allow", Rule: "modes.json auto"}
	}
	return decision{Verdict: "ask", Rule: "webfetch: a new host", Reason: t.text("ask", "host", host), Remember: true, Patterns: []string{host}}
}

// webReaches says whether webfetch can reach some host where nobody can
// be asked about one (lembas -p): the network is on, or a host is allowed
// — config.yaml's sandbox.network.allow, the project's kept hosts, an
// allow rule for webfetch. Off, every fetch is refused (permitWeb).
func webReaches(sb *sandbox, p *permissions) bool {
	switch sb.networkMode() {
	case "on":
		return true
	case "off":
		return false
	}
	if len(sb.cfg.Allow) > 0 || len(sb.projectHosts()) > 0 {
		return true
	}
	for _, r := range p.allowRules() {
		if ruleCovers(r.permRule, "webfetch") {
			return true
		}
	}
	return false
}

// webAllowRule says whether one of the person's allow rules or always
// answers covers webfetch on host (webfetch: <host>, or webfetch alone).
func (p *permissions) webAllowRule(host string) bool {
	for _, r := range p.allowRules() {
		if r.coversWeb("webfetch", host) {
			return true
		}
	}
	return false
}

// coversWeb says whether r covers the webfetch tool (named tool) on host:
// a rule for the tool with no pattern, or one whose pattern matches host.
func (r sourcedRule) coversWeb(tool, host string) bool {
	return ruleCovers(r.permRule, tool) && (r.Pattern == "" || wildMatch(strings.ToLower(r.Pattern), host))
}

// privateWebRule is the allow rule that names a host exactly, the only
// leave for webfetch to reach a loopback or private address there.
func (p *permissions) privateWebRule(tool, host string) (sourcedRule, bool) {
	for _, r := range p.allowRules() {
		if ruleCovers(r.permRule, tool) && r.Pattern != "" && strings.ToLower(r.Pattern) == host {
			return r, true
		}
	}
	return sourcedRule{}, false
}

// webClient is the client of one fetch: every connection's address is
// checked (a private one only for a host that is private by the rules'
// leave), no redirect is followed by the client itself, and the whole
// fetch is bounded by timeout_s.
func webClient(t *toolSpec, privateOK bool) *http.Client {
	d := &net.Dialer{Timeout: time.Duration(t.limit("timeout_s")) * time.Second,
		Control: func(network, address string, c syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			if privateIP(ap.Addr()) && !privateOK {
				return errorf("%s is a loopback or private address", ap.Addr())
			}
			return nil
		}}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: d.Timeout, ResponseHeaderTimeout: d.Timeout},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       time.Duration(t.limit("timeout_s")) * time.Second,
	}
}

// toolWebFetch fetches one page.
func toolWebFetch(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	t := tb.spec.Tools["webfetch"]
	var a struct {
		URL    string `json:"url"`
		Format string `json:"format"`
	}
	json.Unmarshal(raw, &a)
	if a.Format == "" {
		a.Format = "markdown"
	}
	u, host, err := webTarget(t, a.URL)
	if err != nil {
		return toolResult{Text: err.Error(), IsError: true}
	}
	// The permissions let a private host through only by a rule naming it,
	// asked again here rather than read off the host's addresses now: a
	// name that resolved public when the call was judged and private now
	// (DNS rebinding) must not earn the leave by that.
	sb := tb.theSandbox()
	privateOK := (tb.privateWeb != nil && tb.privateWeb(host)) || sb.webListed(host)
	// The network rules commands follow (sandbox_netask.go): off reaches
	// nothing, on anything; else the allowed hosts, and another is asked
	// about (refused in -p). The person's own webfetch rules count as
	// allowing their hosts; the package registries do not count here.
	ruled := tb.webAllowed != nil && tb.webAllowed(host)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if nr := netRunFor(ctx, ctx, "webfetch "+u.String()); sb.networkMode() == "off" || !ruled {
		v := sb.permitWeb(nr, host, port)
		nr.cancel()
		if !v.ok {
			return toolResult{Text: strings.TrimSpace(strings.TrimPrefix(v.body, "lembas sandbox: ")), IsError: true}
		}
	}
	client := webClient(t, privateOK)
	defer client.CloseIdleConnections()
	start := u.String()
	var resp *http.Response
	for hops := 0; ; hops++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return toolResult{Text: t.text("failed", "url", u, "error", err), IsError: true}
		}
		req.Header.Set("User-Agent", "lembas/"+version)
		req.Header.Set("Accept", "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5")
		resp, err = client.Do(req)
		if err != nil {
			return toolResult{Text: t.text("failed", "url", u, "error", err), IsError: true}
		}
		if resp.StatusCode < 300 || resp.StatusCode >= 400 || resp.Header.Get("Location") == "" {
			break
		}
		resp.Body.Close()
		next, err := u.Parse(resp.Header.Get("Location"))
		if err != nil || (next.Scheme != "http" && next.Scheme != "https") {
			return toolResult{Text: t.text("failed", "url", u, "error", "a redirect to "+resp.Header.Get("Location")), IsError: true}
		}
		if !strings.EqualFold(next.Hostname(), u.Hostname()) {
			return toolResult{Text: t.text("cross_host", "from", u, "to", next)}
		}
		if hops+1 > t.limit("max_redirects") {
			return toolResult{Text: t.text("too_many_redirects", "url", start, "max", t.limit("max_redirects")), IsError: true}
		}
		u = next
	}
	defer resp.Body.Close()
	max := t.limit("max_read_bytes")
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if err != nil {
		return toolResult{Text: t.text("failed", "url", u, "error", err), IsError: true}
	}
	cutBytes := len(body) > max
	if cutBytes {
		body = body[:max]
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ctype == "" {
		ctype = http.DetectContentType(body)
		ctype, _, _ = mime.ParseMediaType(ctype)
	}
	via := ""
	if u.String() != start {
		via = t.text("via", "from", start)
	}
	head := t.text("head", "url", u, "status", resp.Status, "type", ctype, "bytes", len(body), "via", via)
	if resp.StatusCode >= 400 {
		head += " " + t.text("status", "url", u, "status", resp.Status)
	}
	isHTML := ctype == "text/html" || ctype == "application/xhtml+xml"
	textual := isHTML || strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "json") || strings.Contains(ctype, "xml") || strings.Contains(ctype, "javascript")
	if !textual || !utf8.Valid(trimPartialRune(body)) {
		return toolResult{Text: head + "\n\n" + t.text("binary", "url", u, "type", ctype, "bytes", len(body))}
	}
	content := string(trimPartialRune(body))
	if isHTML {
		switch a.Format {
		case "markdown":
			content = htmlToMarkdown(content, u)
		case "text":
			content = htmlToText(content)
		}
	}
	var tail []string
	if cutBytes {
		tail = append(tail, t.text("cut_bytes", "max", max))
	}
	if n := utf8.RuneCountInString(content); n > t.limit("max_chars") {
		r := []rune(content)
		content = string(r[:t.limit("max_chars")])
		tail = append(tail, t.text("cut_chars", "max", t.limit("max_chars"), "total", n))
	}
	out := head + "\n\n" + strings.TrimSpace(content)
	if len(tail) > 0 {
		out += "\n\n" + strings.Join(tail, "\n")
	}
	return toolResult{Text: out, IsError: resp.StatusCode >= 400}
}

// trimPartialRune drops a rune cut in half by the read cap.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

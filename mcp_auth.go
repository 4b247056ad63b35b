package main

// OAuth 2.1 for Streamable HTTP MCP servers, as the MCP authorization spec
// (2025-06-18, 2025-11-25) lays it out. A server that answers 401 with a
// WWW-Authenticate challenge is logged in to; the token is sent as the
// bearer from then on, refreshed when it expires, and widened when the
// server answers 403 insufficient_scope.
//
//	401 + WWW-Authenticate ─► resource_metadata (or the well-known URLs, path first) ─► RFC 9728 document
//	   (no document: the server's origin is the authorization server, 2025-03-26)
//	─► RFC 8414 / OpenID metadata (path-aware, issuer checked; S256 required)
//	─► client: config's client_id ─► else a client ID metadata document URL ─► else RFC 7591 registration
//	─► authorization code + PKCE S256 + state + resource (RFC 8707), redirect to 127.0.0.1:<port>/callback
//	   the person is shown the address (REPL, `lembas mcp login NAME`); with -p nobody is, and the server is
//	   left out with a sentence saying to run `lembas mcp login NAME`
//	─► token (client_secret_basic / _post / none, as registered) ─► <state>/mcp-auth/<server>.json, 0600
//
// Tokens never reach a log, a notice, a file other than that one, or the
// model; errors name URLs and OAuth error codes only.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// mcpOAuthConfig is a server's oauth: entry in config.yaml.
type mcpOAuthConfig struct {
	ClientID          string   // pre-registered with the authorization server
	ClientSecret      string   // its secret, if it has one (${VAR} from the environment)
	ClientMetadataURL string   // an https URL where the person published a client ID metadata document
	Scopes            []string // asked for when the server names none
	PrivateKey        string   // a PEM private key (EC P-256 or RSA) the client signs its assertions with (private_key_jwt)
}

// authChallenge is one WWW-Authenticate challenge: its scheme and params.
type authChallenge struct {
	Scheme string
	Params map[string]string
}

// parseWWWAuthenticate reads the challenges of WWW-Authenticate values
// (RFC 9110 §11.6.1): scheme, then token=value or token="quoted" params,
// comma separated; a token68 is kept as the param "". Hostile input gives
// what could be read, never a panic.
func parseWWWAuthenticate(values []string) []authChallenge {
	var out []authChallenge
	for _, v := range values {
		if len(v) > int(theMCPAuth().num("header_max_bytes")) {
			v = v[:int(theMCPAuth().num("header_max_bytes"))]
		}
		p := &wwwParser{s: v}
		var cur *authChallenge
		for !p.done() {
			p.skip(" \t,")
			if p.done() {
				break
			}
			tok := p.token()
			if tok == "" {
				p.i++ // a character no grammar allows here
				continue
			}
			p.skip(" \t")
			if p.peek() == '=' && cur != nil {
				p.i++
				p.skip(" \t")
				var val string
				if p.peek() == '"' {
					val = p.quoted()
				} else {
					val = p.token()
				}
				cur.Params[strings.ToLower(tok)] = val
				continue
			}
			// a new challenge: the scheme, then maybe a token68
			out = append(out, authChallenge{Scheme: tok, Params: map[string]string{}})
			cur = &out[len(out)-1]
			save := p.i
			t68 := p.token68()
			p.skip(" \t")
			if t68 != "" && (p.done() || p.peek() == ',') {
				cur.Params[""] = t68
			} else {
				p.i = save
			}
		}
	}
	return out
}

type wwwParser struct {
	s string
	i int
}

func (p *wwwParser) done() bool { return p.i >= len(p.s) }
func (p *wwwParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}
func (p *wwwParser) skip(set string) {
	for !p.done() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token reads an RFC 9110 token.
func (p *wwwParser) token() string {
	start := p.i
	for !p.done() {
		c := p.s[p.i]
		if c <= ' ' || c >= 127 || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}

// token68 reads a token68 (letters, digits, -._~+/ then = padding).
func (p *wwwParser) token68() string {
	start := p.i
	for !p.done() {
		c := p.s[p.i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0 {
			p.i++
			continue
		}
		break
	}
	for !p.done() && p.s[p.i] == '=' {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a quoted-string with its backslash escapes.
func (p *wwwParser) quoted() string {
	p.i++ // the opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '\\':
			if !p.done() {
				b.WriteByte(p.s[p.i])
				p.i++
			}
		case '"':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// bearerChallenge is the Bearer challenge's params (nil: none).
func bearerChallenge(values []string) map[string]string {
	for _, c := range parseWWWAuthenticate(values) {
		if strings.EqualFold(c.Scheme, "bearer") {
			return c.Params
		}
	}
	return nil
}

// protectedResource is an RFC 9728 document, the fields lembas reads.
type protectedResource struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// authServerMeta is an RFC 8414 (or OpenID discovery) document.
type authServerMeta struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
}

// parseProtectedResource reads and checks an RFC 9728 document fetched from
// from for the MCP server at want.
func parseProtectedResource(body []byte, from, want string) (*protectedResource, error) {
	sp := theMCPAuth()
	var d protectedResource
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, errorNew(sp.text("prm_bad", "url", from, "error", "not JSON ("+err.Error()+")"))
	}
	if d.Resource == "" {
		return nil, errorNew(sp.text("prm_bad", "url", from, "error", "no resource"))
	}
	if !resourceCovers(d.Resource, want) {
		return nil, errorNew(sp.text("prm_resource", "url", from, "resource", d.Resource, "want", want))
	}
	for _, a := range d.AuthorizationServers {
		if u, err := url.Parse(a); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, errorNew(sp.text("prm_bad", "url", from, "error", fmt.Sprintf("authorization server %q is not an http(s) URL", a)))
		}
	}
	return &d, nil
}

// resourceCovers says whether a protected resource identifier names the
// server at want: the same origin, and a path that is want's or a parent
// of it (a document at the origin may speak for the whole host).
func resourceCovers(resource, want string) bool {
	r, err1 := url.Parse(resource)
	w, err2 := url.Parse(want)
	if err1 != nil || err2 != nil || !strings.EqualFold(r.Scheme, w.Scheme) || !strings.EqualFold(r.Host, w.Host) {
		return false
	}
	rp, wp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(w.Path, "/")
	return rp == "" || rp == wp || strings.HasPrefix(wp, rp+"/")
}

// parseAuthServerMeta reads and checks RFC 8414 / OpenID metadata fetched
// from from for the issuer want. The issuer must be want (RFC 8414 §3.3)
// when want came from protected resource metadata; a 2025-03-26 server's
// own origin is no issuer anyone named, so there (strict false) it is not
// checked.
func parseAuthServerMeta(body []byte, from, want string, strict bool) (*authServerMeta, error) {
	sp := theMCPAuth()
	var m authServerMeta
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, errorNew(sp.text("as_bad", "url", from, "error", "not JSON ("+err.Error()+")"))
	}
	if strict && strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(want, "/") {
		return nil, errorNew(sp.text("as_issuer", "url", from, "got", m.Issuer, "want", want))
	}
	for k, v := range map[string]string{"authorization_endpoint": m.AuthorizationEndpoint, "token_endpoint": m.TokenEndpoint} {
		if u, err := url.Parse(v); v == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, errorNew(sp.text("as_bad", "url", from, "error", k+" is missing or not an http(s) URL"))
		}
	}
	return &m, nil
}

// wellKnown is the well-known URLs to try for a URL's path: path-inserted
// first, then the root (RFC 8414 §3.1, RFC 9728 §3.1, OpenID both ways).
func wellKnown(base string, suffixes ...string) []string {
	u, err := url.Parse(base)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	var out []string
	for _, s := range suffixes {
		if path != "" {
			out = append(out, origin+"/.well-known/"+s+path)
		}
	}
	if path != "" && contains(suffixes, "openid-configuration") {
		out = append(out, origin+path+"/.well-known/openid-configuration")
	}
	if path == "" {
		for _, s := range suffixes {
			out = append(out, origin+"/.well-known/"+s)
		}
	} else if contains(suffixes, "oauth-protected-resource") {
		out = append(out, origin+"/.well-known/oauth-protected-resource")
	}
	return out
}

// mcpToken is one server's login as kept on disk (mode 0600): the client
// it registered, the endpoints it found, and the tokens.
type mcpToken struct {
	Server        string    `json:"server"`
	Resource      string    `json:"resource"`
	Issuer        string    `json:"issuer"`
	TokenEndpoint string    `json:"token_endpoint"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"`
	AuthMethod    string    `json:"auth_method"`
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	Expires       time.Time `json:"expires,omitempty"`
	Scope         string    `json:"scope,omitempty"`
}

func mcpAuthDir() string { return filepath.Join(stateDir(), "mcp-auth") }

func mcpTokenPath(server string) string { return filepath.Join(mcpAuthDir(), server+".json") }

// loadMCPToken is the saved login for a server at resource; nil when there
// is none or it was for another address.
func loadMCPToken(server, resource string) *mcpToken {
	data, err := os.ReadFile(mcpTokenPath(server))
	if err != nil {
		return nil
	}
	var t mcpToken
	if json.Unmarshal(data, &t) != nil || t.Resource != resource || t.AccessToken == "" {
		return nil
	}
	return &t
}

// saveMCPToken writes a login, mode 0600 in a 0700 folder, atomically.
func saveMCPToken(t *mcpToken) error {
	dir := mcpAuthDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errorf("saving the MCP login: %v", err)
	}
	os.Chmod(dir, 0o700)
	b, _ := json.MarshalIndent(t, "", "  ")
	if err := writeFileAtomic(mcpTokenPath(t.Server), append(b, '\n'), 0o600); err != nil {
		return errorf("saving the MCP login: %v", err)
	}
	return nil
}

// mcpAuth is one HTTP server's OAuth state.
type mcpAuth struct {
	server   string
	resource string // the MCP server's URL, the RFC 8707 resource
	cfg      mcpOAuthConfig
	sp       *mcpAuthSpec
	client   *http.Client
	show     func(string)  // shows the person the login address; nil: nobody (-p)
	hold     func() func() // pauses the startup timeout while the person logs in

	mu      mutex // one login or refresh at a time
	tok     *mcpToken
	loaded  bool
	stepUps int
	scopes  []string // asked for at the last login
}

func newMCPAuth(server, resource string, cfg mcpOAuthConfig, client *http.Client) *mcpAuth {
	return &mcpAuth{server: server, resource: resource, cfg: cfg, sp: theMCPAuth(), client: client}
}

// bearer is the access token to send (refreshed first when it has
// expired and can be); "" before any login.
func (a *mcpAuth) bearer(ctx context.Context) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.loaded {
		a.tok, a.loaded = loadMCPToken(a.server, a.resource), true
	}
	if a.tok == nil {
		return ""
	}
	if !a.tok.Expires.IsZero() && time.Now().Add(a.sp.ms("expiry_skew_ms")).After(a.tok.Expires) && a.tok.RefreshToken != "" {
		a.refreshLocked(ctx) // on failure the old token is sent; its 401 logs in again
	}
	return a.tok.AccessToken
}

// challenge handles a 401 or 403 answer: sent is the token the request
// carried. It returns nil when the request should be sent again with the
// new token, or why it cannot be.
func (a *mcpAuth) challenge(ctx context.Context, status int, www []string, sent string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	params := bearerChallenge(www)
	if params == nil {
		params = map[string]string{}
	}
	if a.tok != nil && a.tok.AccessToken != sent {
		return nil // another request logged in (or refreshed) meanwhile: try its token
	}
	var want []string
	if s := params["scope"]; s != "" {
		want = strings.Fields(s)
	}
	if status == http.StatusForbidden {
		if params["error"] != "insufficient_scope" {
			return errorf("HTTP 403: the server refuses this token (%s)", firstNonEmpty(params["error"], "no reason given"))
		}
		a.stepUps++
		if a.stepUps > int(a.sp.num("step_up_attempts")) {
			return errorNew(a.sp.text("step_up_limit", "server", a.server, "count", a.stepUps-1, "scope", strings.Join(want, " ")))
		}
		have := a.scopes
		if a.tok != nil && a.tok.Scope != "" {
			have = strings.Fields(a.tok.Scope)
		}
		want = unionScopes(have, want)
		return a.loginLocked(ctx, params, want)
	}
	if a.tok != nil && a.tok.RefreshToken != "" && sent != "" {
		if a.refreshLocked(ctx) == nil {
			return nil
		}
	}
	return a.loginLocked(ctx, params, want)
}

// accepted notes that the server took a request: the step-up count starts
// again, so the limit is on step-ups in a row, not in a whole session.
func (a *mcpAuth) accepted() {
	a.mu.Lock()
	a.stepUps = 0
	a.mu.Unlock()
}

func unionScopes(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// post sends a request the authorization server answers with JSON (a
// registration, a token) and reads at most metadata_max_bytes of the
// answer: its status and body, or the error of a request that failed.
func (a *mcpAuth) post(req *http.Request) (int, []byte, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, int64(a.sp.num("metadata_max_bytes"))))
	return resp.StatusCode, data, nil
}

// get fetches a metadata document: the body of a 200, or nil for any
// other status (not there); an error only when the request failed.
func (a *mcpAuth) get(ctx context.Context, u string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.sp.ms("http_timeout_ms"))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", theMCP().Protocol.Latest)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, 0, errorNew(a.sp.text("http_failed", "method", "GET", "url", u, "error", err))
	}
	defer resp.Body.Close()
	max := int64(a.sp.num("metadata_max_bytes"))
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, resp.StatusCode, errorNew(a.sp.text("http_failed", "method", "GET", "url", u, "error", err))
	}
	if int64(len(body)) > max {
		return nil, resp.StatusCode, errorNew(a.sp.text("http_failed", "method", "GET", "url", u, "error", fmt.Sprintf("larger than %d bytes", max)))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	return body, resp.StatusCode, nil
}

// discovered is what discovery found: the authorization server and the
// scopes the resource names.
type discovered struct {
	meta   *authServerMeta
	scopes []string // the resource's scopes_supported
}

// discover finds the authorization server for the resource: the document
// the challenge named, else the well-known ones; none at all means the
// 2025-03-26 arrangement (the server's origin, its metadata or the default
// endpoints /authorize, /token, /register).
func (a *mcpAuth) discover(ctx context.Context, metadataURL string) (*discovered, error) {
	sp := a.sp
	var prm *protectedResource
	tries := wellKnown(a.resource, "oauth-protected-resource")
	if metadataURL != "" {
		tries = append([]string{metadataURL}, tries...)
	}
	for _, u := range tries {
		body, _, err := a.get(ctx, u)
		if err != nil {
			return nil, err
		}
		if body == nil {
			continue
		}
		if prm, err = parseProtectedResource(body, u, a.resource); err != nil {
			return nil, err
		}
		break
	}
	d := &discovered{}
	ru, _ := url.Parse(a.resource)
	issuer := ru.Scheme + "://" + ru.Host
	if prm != nil {
		d.scopes = prm.ScopesSupported
		if len(prm.AuthorizationServers) == 0 {
			return nil, errorNew(sp.text("prm_bad", "url", prm.Resource, "error", "it names no authorization_servers"))
		}
		issuer = prm.AuthorizationServers[0]
	}
	var tried []string
	for _, u := range wellKnown(issuer, "oauth-authorization-server", "openid-configuration") {
		tried = append(tried, u)
		body, _, err := a.get(ctx, u)
		if err != nil {
			return nil, err
		}
		if body == nil {
			continue
		}
		m, err := parseAuthServerMeta(body, u, issuer, prm != nil)
		if err != nil {
			return nil, err
		}
		if !contains(m.CodeChallengeMethodsSupported, "S256") {
			return nil, errorNew(sp.text("as_no_pkce", "issuer", issuer, "methods", strings.Join(m.CodeChallengeMethodsSupported, ", ")))
		}
		d.meta = m
		return d, nil
	}
	if prm != nil {
		return nil, errorNew(sp.text("as_none", "issuer", issuer, "tried", strings.Join(tried, ", ")))
	}
	// 2025-03-26: no metadata anywhere; the server's origin serves the
	// default endpoints.
	d.meta = &authServerMeta{Issuer: issuer, AuthorizationEndpoint: issuer + "/authorize", TokenEndpoint: issuer + "/token",
		RegistrationEndpoint: issuer + "/register"}
	return d, nil
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// pkceChallenge is S256 of the verifier (RFC 7636 §4.2).
func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// loginLocked runs the whole authorization code flow and keeps the token.
func (a *mcpAuth) loginLocked(ctx context.Context, params map[string]string, scopes []string) error {
	sp := a.sp
	d, err := a.discover(ctx, params["resource_metadata"])
	if err != nil {
		return err
	}
	if len(scopes) == 0 {
		scopes = a.cfg.Scopes
	}
	if len(scopes) == 0 {
		scopes = d.scopes
	}
	a.scopes = scopes
	if g := d.meta.GrantTypesSupported; a.cfg.ClientID != "" && (a.cfg.ClientSecret != "" || a.cfg.PrivateKey != "") && contains(g, "client_credentials") && !contains(g, "authorization_code") {
		return a.clientCredentialsLocked(ctx, d.meta, scopes)
	}
	if a.show == nil {
		return errorNew(sp.text("login_needed_headless", "server", a.server))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return errorf("listening for the login's redirect on 127.0.0.1: %v", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + sp.RedirectPath
	tok := &mcpToken{Server: a.server, Resource: a.resource, Issuer: d.meta.Issuer, TokenEndpoint: d.meta.TokenEndpoint}
	if err := a.client_(ctx, d.meta, redirect, tok); err != nil {
		return err
	}
	verifier, state := randomString(int(sp.num("verifier_bytes"))), randomString(int(sp.num("state_bytes")))
	q := url.Values{"response_type": {"code"}, "client_id": {tok.ClientID}, "redirect_uri": {redirect},
		"code_challenge": {pkceChallenge(verifier)}, "code_challenge_method": {"S256"}, "state": {state}, "resource": {a.resource}}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	authURL := d.meta.AuthorizationEndpoint
	if strings.Contains(authURL, "?") {
		authURL += "&" + q.Encode()
	} else {
		authURL += "?" + q.Encode()
	}

	type answer struct{ code, err string }
	got := make(chan answer, 1)
	go serveLoginRedirect(ln, sp.ms("http_timeout_ms"), int64(sp.num("redirect_request_max_bytes")), func(u *url.URL) (int, string) {
		if u.Path != sp.RedirectPath {
			return http.StatusNotFound, sp.text("redirect_not_found") + "\n"
		}
		v := u.Query()
		var ans answer
		switch {
		case v.Get("state") != state:
			ans.err = sp.text("login_state")
		case v.Get("error") != "":
			desc := ""
			if d := v.Get("error_description"); d != "" {
				desc = ": " + d
			}
			ans.err = sp.text("login_denied", "error", v.Get("error"), "description", desc)
		case v.Get("code") == "":
			ans.err = sp.text("login_no_code")
		default:
			ans.code = v.Get("code")
		}
		body := "lembas: " + sp.text("login_done", "server", a.server) + "\n"
		if ans.err != "" {
			body = "lembas: " + ans.err + "\n"
		}
		select {
		case got <- ans:
		default:
		}
		return http.StatusOK, body
	})

	resume := func() {}
	if a.hold != nil {
		resume = a.hold()
	}
	a.show(sp.text("login_show", "server", a.server, "url", authURL))
	var ans answer
	select {
	case ans = <-got:
	case <-time.After(sp.ms("login_timeout_ms")):
		resume()
		return errorNew(sp.text("login_timeout", "seconds", sp.ms("login_timeout_ms").Seconds(), "server", a.server))
	case <-ctx.Done():
		resume()
		return ctx.Err()
	}
	resume()
	if ans.err != "" {
		return errorNew(ans.err)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {ans.code}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "resource": {a.resource}}
	if err := a.tokenRequest(ctx, tok, form); err != nil {
		return err
	}
	a.tok, a.loaded = tok, true
	return saveMCPToken(tok)
}

// clientCredentialsLocked gets a token with the client credentials grant
// (RFC 6749 §4.4): a pre-registered confidential client at an
// authorization server that offers only that grant — a machine's own
// access, with no person and no browser, so it works with -p too.
func (a *mcpAuth) clientCredentialsLocked(ctx context.Context, m *authServerMeta, scopes []string) error {
	tok := &mcpToken{Server: a.server, Resource: a.resource, Issuer: m.Issuer, TokenEndpoint: m.TokenEndpoint}
	if err := a.client_(ctx, m, "", tok); err != nil {
		return err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {a.resource}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if err := a.tokenRequest(ctx, tok, form); err != nil {
		return err
	}
	a.tok, a.loaded = tok, true
	return saveMCPToken(tok)
}

// client_ picks the client lembas is to the authorization server: the
// person's pre-registered one, a client ID metadata document when both
// sides have one, else a dynamic registration.
func (a *mcpAuth) client_(ctx context.Context, m *authServerMeta, redirect string, tok *mcpToken) error {
	sp := a.sp
	switch {
	case a.cfg.ClientID != "" && a.cfg.PrivateKey != "":
		tok.ClientID, tok.AuthMethod = a.cfg.ClientID, "private_key_jwt"
		return nil
	case a.cfg.ClientID != "":
		tok.ClientID, tok.ClientSecret = a.cfg.ClientID, a.cfg.ClientSecret
		tok.AuthMethod = "none"
		if tok.ClientSecret != "" {
			tok.AuthMethod = "client_secret_basic"
			if len(m.TokenEndpointAuthMethodsSupported) > 0 && !contains(m.TokenEndpointAuthMethodsSupported, "client_secret_basic") && contains(m.TokenEndpointAuthMethodsSupported, "client_secret_post") {
				tok.AuthMethod = "client_secret_post"
			}
		}
		return nil
	case m.ClientIDMetadataDocumentSupported && a.cfg.ClientMetadataURL != "":
		tok.ClientID, tok.AuthMethod = a.cfg.ClientMetadataURL, "none"
		return nil
	case m.RegistrationEndpoint == "":
		return errorNew(sp.text("no_client", "issuer", m.Issuer, "server", a.server))
	}
	reg := map[string]any{}
	for k, v := range sp.Registration {
		reg[k] = v
	}
	reg["redirect_uris"] = []string{redirect}
	method := "none"
	if sup := m.TokenEndpointAuthMethodsSupported; len(sup) > 0 && !contains(sup, "none") {
		method = sup[0]
		if contains(sup, "client_secret_basic") {
			method = "client_secret_basic"
		}
	}
	reg["token_endpoint_auth_method"] = method
	body, _ := json.Marshal(reg)
	ctx, cancel := context.WithTimeout(ctx, sp.ms("http_timeout_ms"))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.RegistrationEndpoint, strings.NewReader(string(body)))
	if err != nil {
		return errorNew(sp.text("register_failed", "url", m.RegistrationEndpoint, "error", err))
	}
	req.Header.Set("Content-Type", "application/json")
	status, data, err := a.post(req)
	if err != nil {
		return errorNew(sp.text("register_failed", "url", m.RegistrationEndpoint, "error", err))
	}
	var r struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	if status/100 != 2 || json.Unmarshal(data, &r) != nil || r.ClientID == "" {
		why := fmt.Sprintf("HTTP %d", status)
		if r.Error != "" {
			why += " " + r.Error
		}
		return errorNew(sp.text("register_failed", "url", m.RegistrationEndpoint, "error", why))
	}
	tok.ClientID, tok.ClientSecret = r.ClientID, r.ClientSecret
	tok.AuthMethod = firstNonEmpty(r.AuthMethod, method)
	if tok.AuthMethod == "none" && r.ClientSecret != "" {
		tok.AuthMethod = "client_secret_basic"
	}
	return nil
}

// tokenRequest posts to the token endpoint with the client's
// authentication and keeps what it answers in tok.
func (a *mcpAuth) tokenRequest(ctx context.Context, tok *mcpToken, form url.Values) error {
	sp := a.sp
	ctx, cancel := context.WithTimeout(ctx, sp.ms("http_timeout_ms"))
	defer cancel()
	switch tok.AuthMethod {
	case "private_key_jwt":
		assertion, err := clientAssertion(a.cfg.PrivateKey, tok.ClientID, tok.Issuer)
		if err != nil {
			return errorNew(sp.text("token_failed", "url", tok.TokenEndpoint, "error", err))
		}
		form.Set("client_id", tok.ClientID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	case "client_secret_post":
		form.Set("client_id", tok.ClientID)
		form.Set("client_secret", tok.ClientSecret)
	case "client_secret_basic":
	default:
		form.Set("client_id", tok.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tok.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return errorNew(sp.text("token_failed", "url", tok.TokenEndpoint, "error", err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if tok.AuthMethod == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(tok.ClientID), url.QueryEscape(tok.ClientSecret))
	}
	status, data, err := a.post(req)
	if err != nil {
		return errorNew(sp.text("token_failed", "url", tok.TokenEndpoint, "error", err))
	}
	var r struct {
		AccessToken  string  `json:"access_token"`
		TokenType    string  `json:"token_type"`
		ExpiresIn    float64 `json:"expires_in"`
		RefreshToken string  `json:"refresh_token"`
		Scope        string  `json:"scope"`
		Error        string  `json:"error"`
		Description  string  `json:"error_description"`
	}
	jerr := json.Unmarshal(data, &r)
	if status != http.StatusOK || jerr != nil || r.AccessToken == "" {
		why := fmt.Sprintf("HTTP %d", status)
		if r.Error != "" {
			why += " " + r.Error
			if r.Description != "" {
				why += ": " + r.Description
			}
		} else if jerr != nil {
			why += " (not JSON)"
		} else if r.AccessToken == "" {
			why += " with no access_token"
		}
		return errorNew(sp.text("token_failed", "url", tok.TokenEndpoint, "error", why))
	}
	if r.TokenType != "" && !strings.EqualFold(r.TokenType, "bearer") {
		return errorNew(sp.text("token_failed", "url", tok.TokenEndpoint, "error", "token_type "+r.TokenType+", where lembas sends Bearer"))
	}
	tok.AccessToken = r.AccessToken
	if r.RefreshToken != "" {
		tok.RefreshToken = r.RefreshToken
	}
	tok.Expires = time.Time{}
	if r.ExpiresIn > 0 {
		tok.Expires = time.Now().Add(time.Duration(r.ExpiresIn * float64(time.Second)))
	}
	if r.Scope != "" {
		tok.Scope = r.Scope
	} else if form.Get("scope") != "" {
		tok.Scope = form.Get("scope")
	} else if form.Get("grant_type") == "authorization_code" {
		tok.Scope = strings.Join(a.scopes, " ")
	}
	return nil
}

// refreshLocked trades the refresh token for a new access token.
func (a *mcpAuth) refreshLocked(ctx context.Context) error {
	t := *a.tok
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.RefreshToken}, "resource": {a.resource}}
	if err := a.tokenRequest(ctx, &t, form); err != nil {
		if a.show != nil {
			a.show(a.sp.text("refresh_failed", "error", err))
		}
		return err
	}
	a.tok = &t
	return saveMCPToken(&t)
}

// oauth is the server's OAuth state, made once and kept across
// reconnections; nil when the config sends its own Authorization header
// (a token from the environment).
func (s *mcpServer) oauth() *mcpAuth {
	for k := range s.cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth == nil {
		a := newMCPAuth(s.cfg.Name, s.cfg.URL, s.cfg.OAuth, &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}})
		if s.cfg.Interactive {
			a.show = s.say
		}
		a.hold = func() func() {
			s.mu.Lock()
			h := s.hold
			s.mu.Unlock()
			if h == nil {
				return func() {}
			}
			return h()
		}
		s.auth = a
	}
	return s.auth
}

// say tells the person something: through the session's notices once the
// engine has hooked them up, else through the front end's warning line.
func (s *mcpServer) say(text string) {
	s.mu.Lock()
	n := s.notice
	s.mu.Unlock()
	switch {
	case n != nil:
		n(text)
	case s.cfg.Warn != nil:
		s.cfg.Warn(text)
	}
}

// mcpOAuthEntry reads a server's oauth: map (config.yaml, .mcp.json).
func mcpOAuthEntry(v any) (mcpOAuthConfig, error) {
	var o mcpOAuthConfig
	sp := theMCPAuth()
	m, ok := v.(map[string]any)
	if !ok {
		return o, errorNew(sp.text("bad_oauth", "error", "expected a map"))
	}
	for k, x := range m {
		switch k {
		case "client_id", "client_secret", "client_metadata_url", "private_key":
			str, ok := x.(string)
			if !ok {
				return o, errorNew(sp.text("bad_oauth", "error", k+" must be text"))
			}
			switch k {
			case "client_id":
				o.ClientID = str
			case "client_secret":
				o.ClientSecret = str
			case "private_key":
				o.PrivateKey = str
			default:
				o.ClientMetadataURL = str
			}
		case "scopes":
			switch l := x.(type) {
			case string:
				o.Scopes = strings.Fields(l)
			case []any:
				for _, s := range l {
					o.Scopes = append(o.Scopes, fmt.Sprint(s))
				}
			default:
				return o, errorNew(sp.text("bad_oauth", "error", "scopes must be a list or space-separated text"))
			}
		default:
			return o, errorNew(sp.text("bad_oauth", "error", "unknown key "+k))
		}
	}
	if u := o.ClientMetadataURL; u != "" {
		if pu, err := url.Parse(u); err != nil || pu.Scheme != "https" || pu.Path == "" || pu.Path == "/" {
			return o, errorNew(sp.text("bad_oauth", "error", "client_metadata_url must be an https URL with a path"))
		}
	}
	return o, nil
}

// clientAssertion is a signed JWT that authenticates the client at the
// token endpoint (RFC 7523 §2.2): iss and sub the client id, aud the
// authorization server, a short life and a unique id; ES256 for an EC
// P-256 key, RS256 for an RSA one.
func clientAssertion(keyPEM, clientID, audience string) (string, error) {
	sp := theMCPAuth()
	block, _ := pem.Decode([]byte(keyPEM))
	if block == nil {
		return "", errorNew(sp.text("bad_key", "error", "not PEM"))
	}
	var key any
	var err error
	if key, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if key, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
			if key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
				return "", errorNew(sp.text("bad_key", "error", "not a PKCS#8, EC or RSA private key"))
			}
		}
	}
	alg := ""
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return "", errorNew(sp.text("bad_key", "error", "an EC key must be on P-256 (ES256)"))
		}
		alg = "ES256"
	case *rsa.PrivateKey:
		alg = "RS256"
	default:
		return "", errorNew(sp.text("bad_key", "error", "only EC P-256 and RSA keys sign assertions"))
	}
	now := time.Now()
	head, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(sp.ms("assertion_life_ms")).Unix(), "jti": randomString(int(sp.num("state_bytes")))})
	input := base64.RawURLEncoding.EncodeToString(head) + "." + base64.RawURLEncoding.EncodeToString(claims)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return "", err
		}
		sig = make([]byte, 64) // JWS: r and s, 32 bytes each (RFC 7518 §3.4)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:]); err != nil {
			return "", err
		}
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

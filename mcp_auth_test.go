package main

// OAuth for MCP over real loopback HTTP: a fake authorization server and a
// fake MCP server that wants its tokens, both httptest, driven through the
// real client (connect, calls, `lembas mcp login`, -p). The "browser" is a
// goroutine that visits the address lembas shows and follows the redirect
// to lembas's loopback listener.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeAS is an authorization server: metadata, registration, authorize
// (redirects at once, as if the person approved), token with PKCE checked.
type fakeAS struct {
	t   testing.TB
	srv *httptest.Server

	mu         sync.Mutex
	meta       map[string]any // served as metadata; edited by tests
	metaRaw    string         // when set, served instead (bad metadata)
	challenges map[string]string
	codeScope  map[string]string
	tokens     map[string]string // access token → scopes
	refresh    map[string]string // refresh token → scopes
	expiresIn  int
	n          int
	log        []string // what happened, in order: register, authorize, token:<grant>
	resources  []string // the resource parameter of each authorize and token request
	pkceOK     int
	basicAuth  []string // client ids seen in Basic headers
	grantOnly  string   // when set, every code is for these scopes, whatever was asked
	forgeState bool     // redirect with a state lembas never sent
	clientKey  *ecdsa.PublicKey
	assertion  map[string]any // the claims of the last client assertion that verified
}

func newFakeAS(t testing.TB) *fakeAS {
	a := &fakeAS{t: t, challenges: map[string]string{}, codeScope: map[string]string{}, tokens: map[string]string{},
		refresh: map[string]string{}, expiresIn: 3600}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	u := a.srv.URL
	a.meta = map[string]any{"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token",
		"registration_endpoint": u + "/register", "code_challenge_methods_supported": []string{"S256"},
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"}}
	return a
}

func (a *fakeAS) note(s string) {
	a.mu.Lock()
	a.log = append(a.log, s)
	a.mu.Unlock()
}

func (a *fakeAS) events() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.log, " ")
}

func (a *fakeAS) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		a.mu.Lock()
		raw, meta := a.metaRaw, a.meta
		b, _ := json.Marshal(meta)
		a.mu.Unlock()
		if raw != "" {
			b = []byte(raw)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	case "/register":
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		a.note("register")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "dyn-client", "redirect_uris": body["redirect_uris"]})
	case "/authorize":
		q := r.URL.Query()
		a.note("authorize")
		a.mu.Lock()
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		a.challenges[code] = q.Get("code_challenge")
		if q.Get("code_challenge_method") != "S256" {
			a.challenges[code] = "not S256"
		}
		a.codeScope[code] = q.Get("scope")
		if a.grantOnly != "" {
			a.codeScope[code] = a.grantOnly
		}
		a.resources = append(a.resources, q.Get("resource"))
		state := q.Get("state")
		if a.forgeState {
			state = "forged"
		}
		a.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+state, http.StatusFound)
	case "/token":
		r.ParseForm()
		grant := r.Form.Get("grant_type")
		a.note("token:" + grant)
		a.mu.Lock()
		defer a.mu.Unlock()
		if id, _, ok := r.BasicAuth(); ok {
			a.basicAuth = append(a.basicAuth, id)
		}
		a.resources = append(a.resources, r.Form.Get("resource"))
		var scope string
		switch grant {
		case "authorization_code":
			code := r.Form.Get("code")
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if ch, ok := a.challenges[code]; !ok || ch != base64.RawURLEncoding.EncodeToString(sum[:]) {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"invalid_grant","error_description":"PKCE verifier does not match"}`)
				return
			}
			a.pkceOK++
			scope = a.codeScope[code]
			delete(a.challenges, code)
		case "refresh_token":
			s, ok := a.refresh[r.Form.Get("refresh_token")]
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"invalid_grant"}`)
				return
			}
			scope = s
		case "client_credentials":
			claims, ok := a.verifyAssertion(r.Form.Get("client_assertion_type"), r.Form.Get("client_assertion"))
			if !ok && len(a.basicAuth) == 0 {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":"invalid_client"}`)
				return
			}
			a.assertion = claims
			scope = r.Form.Get("scope")
		default:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"unsupported_grant_type"}`)
			return
		}
		a.n++
		tok, ref := fmt.Sprintf("secret-access-%d", a.n), fmt.Sprintf("secret-refresh-%d", a.n)
		a.tokens[tok], a.refresh[ref] = scope, scope
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": a.expiresIn,
			"refresh_token": ref, "scope": scope})
	default:
		http.NotFound(w, r)
	}
}

// verifyAssertion checks an ES256 client assertion against the client's
// public key and gives its claims.
func (a *fakeAS) verifyAssertion(typ, jwt string) (map[string]any, bool) {
	parts := strings.Split(jwt, ".")
	if a.clientKey == nil || typ != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || len(parts) != 3 {
		return nil, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(a.clientKey, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, false
	}
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	json.Unmarshal(body, &claims)
	return claims, true
}

// scopesOf is the scopes a token was issued with; ok false: not issued.
func (a *fakeAS) scopesOf(tok string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.tokens[tok]
	return s, ok
}

// fakeProtectedMCP is an MCP server (JSON answers) that wants a token the
// fake AS issued: 401 with a challenge without one, 403 insufficient_scope
// for the admin tool without the admin scope.
type fakeProtectedMCP struct {
	srv     *httptest.Server
	as      *fakeAS
	prm     string // the protected resource metadata served ("" → made from the AS)
	calls   []string
	mu      sync.Mutex
	noPRMIn bool // the challenge names no resource_metadata (well-known discovery)
}

func newFakeProtectedMCP(t testing.TB, as *fakeAS) *fakeProtectedMCP {
	f := &fakeProtectedMCP{as: as}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProtectedMCP) url() string { return f.srv.URL + "/mcp" }

func (f *fakeProtectedMCP) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
		f.mu.Lock()
		prm := f.prm
		f.mu.Unlock()
		if prm == "" {
			b, _ := json.Marshal(map[string]any{"resource": f.url(), "authorization_servers": []string{f.as.srv.URL}, "scopes_supported": []string{"read"}})
			prm = string(b)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, prm)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	scopes, ok := f.as.scopesOf(tok)
	if !ok {
		ch := `Bearer scope="read"`
		if !f.noPRMIn {
			ch += `, resource_metadata="` + f.srv.URL + `/.well-known/oauth-protected-resource/mcp"`
		}
		w.Header().Set("WWW-Authenticate", ch)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var msg map[string]any
	json.NewDecoder(r.Body).Decode(&msg)
	method, _ := msg["method"].(string)
	id, hasID := msg["id"]
	if !hasID {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result any
	switch method {
	case "initialize":
		result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "p", "version": "1"}}
	case "tools/list":
		result = map[string]any{"tools": []any{map[string]any{"name": "admin", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "read_thing", "inputSchema": map[string]any{"type": "object"}}}}
	case "tools/call":
		p, _ := msg["params"].(map[string]any)
		name, _ := p["name"].(string)
		if name == "admin" && !contains(strings.Fields(scopes), "admin") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin", resource_metadata="`+f.srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		f.mu.Lock()
		f.calls = append(f.calls, name)
		f.mu.Unlock()
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": name + " ran with " + scopes}}}
	default:
		result = map[string]any{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// browser is the person: it records what lembas shows and visits each
// login address, following the redirect back to lembas.
type browser struct {
	mu    sync.Mutex
	shown []string
}

func (b *browser) show(s string) {
	b.mu.Lock()
	b.shown = append(b.shown, s)
	b.mu.Unlock()
	marker := theMCPAuth().Wrapper["login_marker"]
	if i := strings.Index(s, marker); i >= 0 {
		addr := strings.TrimSpace(s[i+len(marker):])
		go func() {
			if resp, err := http.Get(addr); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
}

func (b *browser) all() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.shown, "\n")
}

func authEnv(t testing.TB) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
}

// connectAuth connects one server the way a session does.
func connectAuth(t testing.TB, url string, interactive bool, b *browser, oauth mcpOAuthConfig) *mcpServer {
	t.Helper()
	cfg := mcpServerConfig{Name: "prot", Source: "config", Enabled: true, URL: url, Interactive: interactive, OAuth: oauth}
	if b != nil {
		cfg.Warn = b.show
	}
	s := newMCPServer(cfg, nil)
	s.connect(context.Background())
	t.Cleanup(s.close)
	return s
}

func TestMCPAuthLoginFlow(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	b := &browser{}
	s := connectAuth(t, mcp.url(), true, b, mcpOAuthConfig{})
	state, reason, tools := s.status()
	if state != "ready" || len(tools) != 2 {
		t.Fatalf("state %s %s, %d tools; shown: %s", state, reason, len(tools), b.all())
	}
	if got := as.events(); got != "register authorize token:authorization_code" {
		t.Errorf("the flow went %q", got)
	}
	if as.pkceOK != 1 {
		t.Errorf("PKCE verified %d times", as.pkceOK)
	}
	for _, r := range as.resources {
		if r != mcp.url() {
			t.Errorf("resource parameter %q, want %q", r, mcp.url())
		}
	}
	if !strings.Contains(b.all(), "scope=read") || !strings.Contains(b.all(), "code_challenge_method=S256") {
		t.Errorf("the login address lacks the scope or the method: %s", b.all())
	}
	fi, err := os.Stat(mcpTokenPath("prot"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode().Perm())
	}
	if strings.Contains(b.all(), "secret-access") || strings.Contains(b.all(), "secret-refresh") {
		t.Errorf("a token was shown: %s", b.all())
	}
	r := s.callTool(context.Background(), mcpTool{Server: "prot", Name: "read_thing"}, nil, false)
	if r.IsError || !strings.Contains(r.Text, "read_thing ran with read") {
		t.Errorf("call: %+v", r)
	}

	// A second session uses the kept token: no login.
	b2 := &browser{}
	s2 := connectAuth(t, mcp.url(), false, b2, mcpOAuthConfig{})
	if st, why, _ := s2.status(); st != "ready" {
		t.Fatalf("with the kept token: %s %s", st, why)
	}
	if got := as.events(); got != "register authorize token:authorization_code" {
		t.Errorf("the kept token was not used: %q", got)
	}
}

func TestMCPAuthRefresh(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	as.expiresIn = 1 // expired at once, with the 60 s skew
	s := connectAuth(t, mcp.url(), true, &browser{}, mcpOAuthConfig{})
	if st, why, _ := s.status(); st != "ready" {
		t.Fatalf("%s %s", st, why)
	}
	before, _ := os.ReadFile(mcpTokenPath("prot"))
	b := &browser{}
	s2 := connectAuth(t, mcp.url(), false, b, mcpOAuthConfig{}) // -p: no person, refresh needs none
	if st, why, _ := s2.status(); st != "ready" {
		t.Fatalf("after refresh: %s %s", st, why)
	}
	if got := as.events(); !strings.HasPrefix(got, "register authorize token:authorization_code token:refresh_token") || strings.Count(got, "authorize") != 1 {
		t.Errorf("the flow went %q", got)
	}
	after, _ := os.ReadFile(mcpTokenPath("prot"))
	if bytes.Equal(before, after) {
		t.Error("the refreshed token was not kept")
	}

	// A refresh token the server no longer takes: -p says to log in.
	as.mu.Lock()
	as.refresh = map[string]string{}
	as.tokens = map[string]string{}
	as.mu.Unlock()
	s3 := connectAuth(t, mcp.url(), false, b, mcpOAuthConfig{})
	if st, why, _ := s3.status(); st != "failed" || !strings.Contains(why, "lembas mcp login prot") {
		t.Errorf("a dead refresh token with -p: %s %s", st, why)
	}
}

func TestMCPAuthStepUp(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	b := &browser{}
	s := connectAuth(t, mcp.url(), true, b, mcpOAuthConfig{})
	if st, why, _ := s.status(); st != "ready" {
		t.Fatalf("%s %s", st, why)
	}
	r := s.callTool(context.Background(), mcpTool{Server: "prot", Name: "admin"}, nil, false)
	if r.IsError || !strings.Contains(r.Text, "admin ran with read admin") {
		t.Fatalf("step-up call: %+v; shown %s", r, b.all())
	}
	if n := strings.Count(as.events(), "authorize"); n != 2 {
		t.Errorf("%d authorizations, want 2 (login, step-up): %s", n, as.events())
	}
	if !strings.Contains(b.all(), "scope=read+admin") {
		t.Errorf("the step-up asked for %s", b.all())
	}
}

func TestMCPAuthStepUpLimit(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	s := connectAuth(t, mcp.url(), true, &browser{}, mcpOAuthConfig{})
	if st, why, _ := s.status(); st != "ready" {
		t.Fatalf("%s %s", st, why)
	}
	// The AS grants read only, whatever is asked: the server never gets admin.
	as.mu.Lock()
	as.grantOnly = "read"
	as.mu.Unlock()
	r := s.callTool(context.Background(), mcpTool{Server: "prot", Name: "admin"}, nil, false)
	if !r.IsError || !strings.Contains(r.Text, "still refuses after") {
		t.Errorf("a server that never accepts: %+v", r)
	}
	if n := strings.Count(as.events(), "authorize"); n != 1+int(theMCPAuth().num("step_up_attempts")) {
		t.Errorf("%d authorizations: %s", n, as.events())
	}
}

func TestMCPAuthHeadless(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	s := connectAuth(t, mcp.url(), false, &browser{}, mcpOAuthConfig{})
	st, why, _ := s.status()
	if st != "failed" || !strings.Contains(why, "run `lembas mcp login prot`") {
		t.Errorf("-p: %s %s", st, why)
	}
	if as.events() != "" {
		t.Errorf("-p reached the authorization server: %s", as.events())
	}
}

func TestMCPAuthPreRegistered(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	mcp.noPRMIn = true // found at the well-known address instead
	s := connectAuth(t, mcp.url(), true, &browser{}, mcpOAuthConfig{ClientID: "mine", ClientSecret: "shh"})
	if st, why, _ := s.status(); st != "ready" {
		t.Fatalf("%s %s", st, why)
	}
	if strings.Contains(as.events(), "register") {
		t.Errorf("a pre-registered client registered: %s", as.events())
	}
	if len(as.basicAuth) != 1 || as.basicAuth[0] != "mine" {
		t.Errorf("client_secret_basic: %v", as.basicAuth)
	}
}

// TestMCPAuthBadMetadata: each broken document is refused with a sentence
// naming it, and the server is left out rather than lembas crashing.
func TestMCPAuthBadMetadata(t *testing.T) {
	cases := []struct {
		name, prm, meta string
		edit            func(m map[string]any)
		want            string
	}{
		{name: "prm_not_json", prm: "{not json", want: "protected resource metadata at"},
		{name: "prm_other_resource", prm: `{"resource":"https://elsewhere.example/mcp","authorization_servers":["https://a.example"]}`, want: "is for https://elsewhere.example/mcp"},
		{name: "prm_no_servers", prm: `{"resource":"RESOURCE"}`, want: "names no authorization_servers"},
		{name: "as_not_json", meta: "<html>", want: "authorization server metadata at"},
		{name: "as_issuer_mismatch", edit: func(m map[string]any) { m["issuer"] = "https://evil.example" }, want: "names issuer https://evil.example"},
		{name: "as_no_pkce", edit: func(m map[string]any) { delete(m, "code_challenge_methods_supported") }, want: "does not offer PKCE with S256"},
		{name: "as_no_token_endpoint", edit: func(m map[string]any) { delete(m, "token_endpoint") }, want: "token_endpoint is missing"},
		{name: "no_registration", edit: func(m map[string]any) { delete(m, "registration_endpoint") }, want: "give a pre-registered client_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			authEnv(t)
			as := newFakeAS(t)
			mcp := newFakeProtectedMCP(t, as)
			mcp.prm = strings.ReplaceAll(c.prm, "RESOURCE", mcp.url())
			as.metaRaw = c.meta
			if c.edit != nil {
				c.edit(as.meta)
			}
			b := &browser{}
			s := connectAuth(t, mcp.url(), true, b, mcpOAuthConfig{})
			st, why, _ := s.status()
			if st != "failed" || !strings.Contains(why, c.want) {
				t.Errorf("%s: %s %q, want %q", c.name, st, why, c.want)
			}
			if strings.Contains(as.events(), "authorize") {
				t.Errorf("broken metadata still led to a login: %s", as.events())
			}
		})
	}
}

// TestMCPLoginCommand: `lembas mcp login NAME` shows the address on stdout,
// keeps the token, never prints it; -p then uses it, and without it -p
// says to run the command; logout removes it.
func TestMCPLoginCommand(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	cfgDir := os.Getenv("XDG_CONFIG_HOME")
	os.MkdirAll(filepath.Join(cfgDir, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfgDir, "lembas", "config.yaml"), []byte("mcp:\n  prot:\n    url: \""+mcp.url()+"\"\n"), 0o600)
	proj := t.TempDir()

	fm := newScriptedCaller()
	defer fm.srv.Close()
	t.Setenv("OPENAI_BASE_URL", fm.srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "x")
	t.Setenv("LEMBAS_MODEL", "mock")
	var out, errb bytes.Buffer
	code := run([]string{"--mode", "auto", "--cwd", proj, "-p", "call it"}, strings.NewReader(""), &out, &errb)
	if !strings.Contains(errb.String(), "run `lembas mcp login prot`") {
		t.Errorf("-p without a login (exit %d): %s", code, errb.String())
	}

	w := &browserWriter{b: &browser{}}
	if code := run([]string{"mcp", "login", "prot", "--cwd", proj}, strings.NewReader(""), w, w); code != 0 {
		t.Fatalf("mcp login exit %d: %s", code, w.String())
	}
	if !strings.Contains(w.String(), "Logged in to MCP server prot") || strings.Contains(w.String(), "secret-") {
		t.Errorf("mcp login printed: %s", w.String())
	}
	out.Reset()
	errb.Reset()
	run([]string{"--mode", "auto", "--cwd", proj, "-p", "call it"}, strings.NewReader(""), &out, &errb)
	if fm.calls() == "" {
		t.Errorf("-p after the login called nothing: %s %s", out.String(), errb.String())
	}
	outside := filepath.Join(os.Getenv("XDG_STATE_HOME"), "keep.json")
	os.WriteFile(outside, []byte("{}"), 0o600)
	var bad bytes.Buffer
	if code := run([]string{"mcp", "logout", "../keep"}, strings.NewReader(""), &bad, &bad); code != 2 {
		t.Errorf("logout of a name with a path: exit %d %s", code, bad.String())
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("logout reached outside its folder: %v", err)
	}
	var lo bytes.Buffer
	run([]string{"mcp", "logout", "prot"}, strings.NewReader(""), &lo, &lo)
	if _, err := os.Stat(mcpTokenPath("prot")); err == nil || !strings.Contains(lo.String(), "Logged out") {
		t.Errorf("logout: %s", lo.String())
	}
}

// browserWriter is a terminal the browser reads: it follows login lines.
type browserWriter struct {
	b  *browser
	mu sync.Mutex
	w  bytes.Buffer
}

func (w *browserWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.w.Write(p)
	w.mu.Unlock()
	for _, line := range strings.Split(string(p), "\n") {
		if line != "" {
			w.b.show(line)
		}
	}
	return len(p), nil
}

func (w *browserWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.String()
}

// TestMCPAuthState: a redirect with the wrong state is not used.
func TestMCPAuthState(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	as.forgeState = true
	s := connectAuth(t, mcp.url(), true, &browser{}, mcpOAuthConfig{})
	if st, why, _ := s.status(); st != "failed" || !strings.Contains(why, "wrong state") {
		t.Errorf("forged state: %s %s", st, why)
	}
	if strings.Contains(as.events(), "token:") {
		t.Errorf("a forged redirect reached the token endpoint: %s", as.events())
	}
}

// TestMCPAuthClientCredentialsJWT: a pre-registered client with a private
// key, at a server that offers only client_credentials, gets its token
// with a signed assertion (ES256: iss and sub the client, aud the
// issuer), with nobody there (-p) and no login shown.
func TestMCPAuthClientCredentialsJWT(t *testing.T) {
	authEnv(t)
	as := newFakeAS(t)
	mcp := newFakeProtectedMCP(t, as)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	as.clientKey = &key.PublicKey
	as.meta["grant_types_supported"] = []string{"client_credentials"}
	b := &browser{}
	s := connectAuth(t, mcp.url(), false, b, mcpOAuthConfig{ClientID: "svc", PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))})
	if st, why, _ := s.status(); st != "ready" {
		t.Fatalf("%s %s", st, why)
	}
	if as.events() != "token:client_credentials" || b.all() != "" {
		t.Errorf("flow %q, shown %q", as.events(), b.all())
	}
	if as.assertion["iss"] != "svc" || as.assertion["sub"] != "svc" || as.assertion["aud"] != as.srv.URL {
		t.Errorf("assertion claims %v", as.assertion)
	}

	// A key that is not one gives a sentence, not a crash.
	authEnv(t)
	s2 := connectAuth(t, mcp.url(), false, b, mcpOAuthConfig{ClientID: "svc", PrivateKey: "not a key"})
	if st, why, _ := s2.status(); st != "failed" || !strings.Contains(why, "give a PEM EC P-256") {
		t.Errorf("a bad key: %s %s", st, why)
	}
}

// BenchmarkMCPAuthLogin: a whole login against the fake authorization
// server over loopback — 401, both metadata documents, registration,
// authorize (the browser's visit and redirect), token, the token kept —
// and the handshake and tools/list that follow.
func BenchmarkMCPAuthLogin(b *testing.B) {
	authEnv(b)
	as := newFakeAS(b)
	mcp := newFakeProtectedMCP(b, as)
	br := &browser{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.Remove(mcpTokenPath("prot"))
		s := newMCPServer(mcpServerConfig{Name: "prot", Source: "config", Enabled: true, URL: mcp.url(), Interactive: true, Warn: br.show}, nil)
		s.connect(context.Background())
		if st, why, _ := s.status(); st != "ready" {
			b.Fatalf("%s %s", st, why)
		}
		s.close()
	}
}

// BenchmarkMCPCallOAuth: one tools/call round trip carrying a kept bearer
// token, against BenchmarkMCPCallHTTP's plain one.
func BenchmarkMCPCallOAuth(b *testing.B) {
	authEnv(b)
	as := newFakeAS(b)
	mcp := newFakeProtectedMCP(b, as)
	s := connectAuth(b, mcp.url(), true, &browser{}, mcpOAuthConfig{})
	if st, why, _ := s.status(); st != "ready" {
		b.Fatalf("%s %s", st, why)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := s.callTool(context.Background(), mcpTool{Server: "prot", Name: "read_thing"}, nil, false); r.IsError {
			b.Fatal(r.Text)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

const webPage = `<!doctype html><html><head><title>The  Page</title><style>p{}</style><script>alert(1)</script></head>
<body><nav><a href="/home">Home</a></nav><h1>Hello</h1><p>Some <b>bold</b> and <em>soft</em> text with a <a href="/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul><pre><code>x := 1
y := 2</code></pre></body></html>`

// webServer serves the page, redirect chains, a cross-host redirect and a
// huge body.
func webServer(t *testing.T) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, webPage)
		case strings.HasPrefix(r.URL.Path, "/hop/"):
			var n int
			fmt.Sscanf(r.URL.Path, "/hop/%d", &n)
			if n == 0 {
				http.Redirect(w, r, "/page", http.StatusFound)
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusMovedPermanently)
		case r.URL.Path == "/away":
			u, _ := url.Parse(srv.URL)
			http.Redirect(w, r, "http://localhost:"+u.Port()+"/page", http.StatusFound)
		case r.URL.Path == "/huge":
			w.Header().Set("Content-Type", "text/plain")
			chunk := strings.Repeat("abcdefghij", 1000)
			for i := 0; i < 800; i++ { // 8 MB, past max_read_bytes
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fetchViaEngine runs one webfetch call through the engine, in mode, with
// config.yaml's permission lines, and returns the tool result.
func fetchViaEngine(t *testing.T, mode, target string, perms ...string) string {
	t.Helper()
	fm := newFakeModel(t)
	replEnv(t, fm)
	if len(perms) > 0 {
		dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(strings.Join(perms, "\n")+"\n"), 0o600)
	}
	e := mcpEngine(t, fm, mode, true)
	fm.push(callsReply(fakeCall{"webfetch", map[string]any{"url": target}}), textReply("done"))
	e.runTurn(context.Background(), "fetch it")
	reqs := fm.got()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	res := toolResults(reqs[1])
	if len(res) != 1 {
		t.Fatalf("results %v", res)
	}
	return res[0]
}

func TestWebFetchPrivateRefusedUnlessRuled(t *testing.T) {
	srv := webServer(t)
	got := fetchViaEngine(t, "auto", srv.URL+"/page")
	if !strings.Contains(got, "Not fetched: 127.0.0.1 is a loopback or private address") {
		t.Errorf("loopback without a rule: %s", got)
	}
	got = fetchViaEngine(t, "auto", srv.URL+"/page", "permissions:", "  allow: [\"webfetch: 127.0.0.1\"]")
	for _, want := range []string{"Fetched " + srv.URL + "/page (200 OK, text/html", "Title: The Page", "# Hello",
		"Some **bold** and *soft* text with a [link](" + srv.URL + "/next).", "- one\n- two", "```\nx := 1\ny := 2\n```"} {
		if !strings.Contains(got, want) {
			t.Errorf("the page as markdown lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "alert") || strings.Contains(got, "p{}") {
		t.Errorf("script or style leaked:\n%s", got)
	}
	// a host not allowed is asked about by the network gate; -p cannot
	// answer, so it is refused, naming the host and the key that allows it
	got = fetchViaEngine(t, "manual", "http://93.184.216.34/")
	if !strings.Contains(got, "93.184.216.34 (port 80)") || !strings.Contains(got, "sandbox.network.allow") {
		t.Errorf("a new host in manual -p: %s", got)
	}
}

func TestWebFetchRedirectsAndCaps(t *testing.T) {
	srv := webServer(t)
	tb, err := newToolbox(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	tb.privateWeb = func(string) bool { return true } // as if an allow rule named the loopback test server
	tb.webAllowed = func(string) bool { return true } // and so the network gate lets it through
	ts := tb.lookup("webfetch")
	fetch := func(path string, format string) toolResult {
		args, _ := json.Marshal(map[string]any{"url": srv.URL + path, "format": format})
		return tb.run(context.Background(), ts, args)
	}
	r := fetch("/hop/3", "")
	if !strings.Contains(r.Text, "Fetched "+srv.URL+"/page") || !strings.Contains(r.Text, "redirected from "+srv.URL+"/hop/3") {
		t.Errorf("a same-host chain: %s", r.Text)
	}
	if r = fetch("/hop/9", ""); !r.IsError || !strings.Contains(r.Text, "redirected more than 5 times") {
		t.Errorf("a long chain: %+v", r)
	}
	if r = fetch("/away", ""); r.IsError || !strings.Contains(r.Text, "on another host. It was not followed") {
		t.Errorf("a cross-host redirect: %+v", r)
	}
	r = fetch("/huge", "")
	if !strings.Contains(r.Text, "only the first 5242880 bytes") || !strings.Contains(r.Text, "cut at 50000 of 5242880 characters") {
		t.Errorf("a huge body: %s", r.Text[len(r.Text)-300:])
	}
	if len(r.Text) > 51000 {
		t.Errorf("a huge body returned %d bytes", len(r.Text))
	}
	if r = fetch("/page", "html"); !strings.Contains(r.Text, "<h1>Hello</h1>") {
		t.Errorf("format html: %s", r.Text)
	}
	if r = fetch("/page", "text"); !strings.Contains(r.Text, "Some bold and soft text with a link.") || strings.Contains(r.Text, "**") {
		t.Errorf("format text: %s", r.Text)
	}
	args, _ := json.Marshal(map[string]any{"url": "file:///etc/passwd"})
	if r = tb.run(context.Background(), ts, args); !r.IsError || !strings.Contains(r.Text, "only http and https") {
		t.Errorf("file URL: %+v", r)
	}
}

// TestWebFetchAskedPerHost: an "always" answer remembers the host, not the tool.
func TestWebFetchAskedPerHost(t *testing.T) {
	replEnv(t, newFakeModel(t))
	p := newPermissions("manual", t.TempDir(), false)
	ts := theSpec().Tools["webfetch"]
	args := func(u string) json.RawMessage { b, _ := json.Marshal(map[string]string{"url": u}); return b }
	d := p.decide(ts, args("http://93.184.216.34/a"))
	if d.Verdict != "ask" || !d.Remember {
		t.Fatalf("a new host: %+v", d)
	}
	if err := p.remember(ts, d, "session"); err != nil {
		t.Fatal(err)
	}
	if d := p.decide(ts, args("https://93.184.216.34/other/page")); d.Verdict != "allow" {
		t.Errorf("the same host after always: %+v", d)
	}
	if d := p.decide(ts, args("http://93.184.216.35/")); d.Verdict != "ask" {
		t.Errorf("another host after always: %+v", d)
	}
	if d := p.decide(ts, args("http://10.0.0.1/")); d.Verdict != "deny" {
		t.Errorf("a private address: %+v", d)
	}
}

func FuzzHTMLToMarkdown(f *testing.F) {
	f.Add(webPage)
	f.Add("<table><tr><th>a</th><td>b</td></tr></table><blockquote><p>q</p></blockquote><ol><li>x<ol><li>y</li></ol></li></ol>")
	f.Add(strings.Repeat("<div>", 5000) + "deep" + strings.Repeat("</div>", 10))
	f.Add("<a href='javascript:x'>j</a><img alt='pic' src='p.png'><br><hr><code>c</code>")
	base, _ := url.Parse("http://example.com/dir/")
	f.Fuzz(func(t *testing.T, page string) {
		md := htmlToMarkdown(page, base)
		txt := htmlToText(page)
		if utf8.ValidString(page) && (!utf8.ValidString(md) || !utf8.ValidString(txt)) {
			t.Fatalf("valid UTF-8 in, invalid out: %q → %q / %q", page, md, txt)
		}
		if strings.Contains(md, "\n\n\n") && !strings.Contains(strings.ToLower(page), "<pre") && !strings.Contains(strings.ToLower(page), "<plaintext") && !strings.Contains(strings.ToLower(page), "<listing") {
			t.Fatalf("more than one blank line in a row outside pre: %q → %q", page, md)
		}
	})
}

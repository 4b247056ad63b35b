//go:build !windows

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// BenchmarkProxyAllowedHTTP: one plain HTTP request through the proxy to
// an allowed loopback host (the gate passes it unasked), connection and
// all — what every registry download pays per connection.
//
//	go test -run '^$' -bench 'BenchmarkProxyAllowedHTTP|BenchmarkNetGate' -benchtime 2000x .
func BenchmarkProxyAllowedHTTP(b *testing.B) {
	b.Setenv("XDG_STATE_HOME", b.TempDir())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	sb := newSandbox(sandboxConfig{Allow: []string{"127.0.0.1"}}, b.TempDir())
	p, err := startSandboxProxy(sb, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", p.port))
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := client.Get(srv.URL + "/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkNetGateAllowed: the gate's judgement alone for a registry host
// and for a host this project allowed.
func BenchmarkNetGateAllowed(b *testing.B) {
	b.Setenv("XDG_STATE_HOME", b.TempDir())
	sb := newSandbox(sandboxConfig{}, b.TempDir())
	if err := sb.allowProject("api.example.com"); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if !sb.permitCommand("registry.npmjs.org", "443").ok || !sb.permitCommand("api.example.com", "443").ok {
			b.Fatal("refused")
		}
	}
}

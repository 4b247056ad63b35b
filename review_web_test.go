package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestWebFetchLeaveIsTheRuleNotTheAddress: webfetch reaches a loopback or
// private address only where an allow rule names the host. The tool asks
// the rules again when it dials rather than reading the leave off where the
// host points now: a name judged public and then rebound to 127.0.0.1 (DNS
// rebinding) must still be refused at the connection. Here the tool runs
// with the rules' answer "no rule names it" against a real loopback server
// (what a rebound name looks like by the time it is dialed); before the fix
// it fetched the page because the host resolved privately.
func TestWebFetchLeaveIsTheRuleNotTheAddress(t *testing.T) {
	srv := webServer(t)
	tb, err := newToolbox(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	ts := tb.lookup("webfetch")
	// A "webfetch" rule allows every host, so the network gate lets the
	// fetch through (sandbox_netask.go); the dial guard is what is tried.
	tb.webAllowed = func(string) bool { return true }
	args, _ := json.Marshal(map[string]any{"url": srv.URL + "/page"})
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		name  string
		leave func(string) bool
	}{
		{"no rules at all", nil},
		{"rules naming another host", func(h string) bool { return h == "example.org" }},
	} {
		tb.privateWeb = tc.leave
		r := tb.run(context.Background(), ts, args)
		if !r.IsError || !strings.Contains(r.Text, "loopback or private address") || strings.Contains(r.Text, "Hello") {
			t.Errorf("%s: a loopback host was fetched: %+v", tc.name, r)
		}
	}
	tb.privateWeb = func(h string) bool { return h == u.Hostname() }
	if r := tb.run(context.Background(), ts, args); r.IsError || !strings.Contains(r.Text, "# Hello") {
		t.Errorf("a host an allow rule names: %+v", r)
	}
}

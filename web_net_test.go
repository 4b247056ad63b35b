package main

// webfetch follows the network rules commands follow (sandbox_netask.go):
// the same allow list and project hosts, the same card and texts, on and
// off — tried against a real loopback server, whose private address is let
// through by the injected rule hook (tb.privateWeb), not by a package
// variable.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// webGate is a toolbox for webfetch with sandbox cfg, the loopback leave
// injected, and a fresh state folder (network.json).
func webGate(t *testing.T, cfg sandboxConfig) *toolbox {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	tb, err := newToolbox(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	tb.sandbox = newSandbox(cfg, tb.root)
	t.Cleanup(tb.sandbox.close)
	tb.privateWeb = func(string) bool { return true } // the test server is loopback; its leave, injected
	return tb
}

func webGateFetch(tb *toolbox, ctx context.Context, url string) toolResult {
	args, _ := json.Marshal(map[string]any{"url": url})
	return tb.run(ctx, tb.lookup("webfetch"), args)
}

// TestWebFetchNetworkGate: a host not allowed is asked about with the
// commands' card — once fetches, deny refuses with the commands' text,
// always here keeps the host for the project (commands reach it too) —
// and -p refuses, naming sandbox.network.allow on stderr.
func TestWebFetchNetworkGate(t *testing.T) {
	srv := webServer(t)
	page := srv.URL + "/page"
	tb := webGate(t, sandboxConfig{})
	ap := &scriptedApprover{answers: []approvalAnswer{{Choice: "once"}, {Choice: "deny"}, {Choice: "project"}}}
	ctx := withNetAsker(context.Background(), ap)
	if r := webGateFetch(tb, ctx, page); r.IsError || !strings.Contains(r.Text, "# Hello") {
		t.Fatalf("once: %+v", r)
	}
	if len(ap.asked) != 1 || ap.asked[0].Tool != "network" || !strings.Contains(ap.asked[0].Reason, "webfetch "+page) ||
		!strings.Contains(ap.asked[0].Reason, "127.0.0.1 (port ") || strings.Join(ap.asked[0].Options, ",") != "once,project,deny" {
		t.Errorf("the card %+v", ap.asked)
	}
	if r := webGateFetch(tb, ctx, page); !r.IsError || !strings.Contains(r.Text, "said no") || strings.Contains(r.Text, "Hello") {
		t.Errorf("deny: %+v", r)
	}
	if r := webGateFetch(tb, ctx, page); r.IsError || !strings.Contains(r.Text, "# Hello") {
		t.Errorf("always here: %+v", r)
	}
	if r := webGateFetch(tb, ctx, page); r.IsError || len(ap.asked) != 3 {
		t.Errorf("after always here: asked %d times, %+v", len(ap.asked), r)
	}
	if v := tb.sandbox.permitCommand("127.0.0.1", "1"); !v.ok {
		t.Errorf("a command of the project does not reach the host webfetch's answer allowed: %+v", v)
	}
	// -p: nobody to ask
	tb2 := webGate(t, sandboxConfig{})
	var mu sync.Mutex
	var said []string
	hctx := withQuietNotice(withNetAsker(context.Background(), headlessApprover{}), func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() })
	r := webGateFetch(tb2, hctx, page)
	if !r.IsError || !strings.Contains(r.Text, "lembas -p has nobody to ask") || !strings.Contains(r.Text, "sandbox.network.allow") {
		t.Errorf("-p: %+v", r)
	}
	if len(said) != 1 || !strings.Contains(said[0], "127.0.0.1") || !strings.Contains(said[0], "sandbox.network.allow") {
		t.Errorf("-p stderr %q", said)
	}
}

// TestWebFetchNetworkModes: sandbox.network on fetches unasked, off refuses
// even where a rule allows the host, and a host in sandbox.network.allow is
// fetched unasked (its exact entry is a loopback leave, as for commands).
func TestWebFetchNetworkModes(t *testing.T) {
	srv := webServer(t)
	page := srv.URL + "/page"
	ap := &scriptedApprover{}
	ctx := withNetAsker(context.Background(), ap)
	if r := webGateFetch(webGate(t, sandboxConfig{Network: "on"}), ctx, page); r.IsError || !strings.Contains(r.Text, "# Hello") {
		t.Errorf("on: %+v", r)
	}
	off := webGate(t, sandboxConfig{Network: "off"})
	off.webAllowed = func(string) bool { return true }
	if r := webGateFetch(off, ctx, page); !r.IsError || !strings.Contains(r.Text, "sandbox.network: off") {
		t.Errorf("off: %+v", r)
	}
	listed := webGate(t, sandboxConfig{Network: "proxy", Allow: []string{"127.0.0.1"}})
	listed.privateWeb = nil
	if r := webGateFetch(listed, ctx, page); r.IsError || !strings.Contains(r.Text, "# Hello") {
		t.Errorf("listed: %+v", r)
	}
	if len(ap.asked) != 0 {
		t.Errorf("asked %+v", ap.asked)
	}
	// the permissions defer to the gate, so a host is asked about once, not twice
	p := newPermissions("manual", t.TempDir(), false)
	p.net = newSandbox(sandboxConfig{}, p.root)
	args, _ := json.Marshal(map[string]string{"url": "http://93.184.216.34/"})
	if d := p.decide(theSpec().Tools["webfetch"], args); d.Verdict != "allow" || !strings.Contains(d.Rule, "sandbox.network") {
		t.Errorf("manual mode, a host not allowed: %+v", d)
	}
	p.net = newSandbox(sandboxConfig{Network: "on"}, p.root)
	if d := p.decide(theSpec().Tools["webfetch"], args); d.Verdict != "ask" {
		t.Errorf("manual mode, network on: %+v", d)
	}
}

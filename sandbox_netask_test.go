//go:build linux

package main

// Live tests of the network gate (sandbox_netask.go): a scripted model over
// real HTTP drives the engine, whose commands run in the session's world
// and reach a loopback server — standing in for another host — only
// through lembas's proxy, as the person answers.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// netTarget is "another host": a loopback server that counts its requests.
func netTarget(t *testing.T) (url string, port string, hits *atomic.Int32) {
	t.Helper()
	hits = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "TARGET-REACHED")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, srv.URL[strings.LastIndex(srv.URL, ":")+1:], hits
}

// netCurl is a command that reaches url through the proxy (NO_PROXY, which
// lembas sets to loopback, is unset so curl takes the proxy for it).
func netCurl(url string) string {
	return "env -u NO_PROXY -u no_proxy curl -s --max-time 60 " + url + "/"
}

// netSession is a session engine in mode on a project outside /tmp, with
// config.yaml's lines, skipped where there is no world or no curl.
func netSession(t *testing.T, f *fakeModel, mode string, config ...string) *engine {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	_, proj, _ := sandboxFixture(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	t.Setenv("OPENAI_BASE_URL", f.url())
	t.Setenv("OPENAI_API_KEY", "x")
	t.Setenv("LEMBAS_MODEL", "mock")
	if len(config) > 0 {
		os.MkdirAll(filepath.Join(home, ".config", "lembas"), 0o700)
		os.WriteFile(filepath.Join(home, ".config", "lembas", "config.yaml"), []byte(strings.Join(config, "\n")+"\n"), 0o600)
	}
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: mode, cwd: proj}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if e.tb.sandbox.theWorld() == nil {
		t.Skipf("no world here: %v", e.tb.sandbox.worldErr)
	}
	return e
}

// TestNetAskOnceDenyProject: a command that reaches a host not allowed is
// held while the person is asked — the card names the host, its port and
// the command — and "once" lets that command through, "deny" refuses with
// a body that says so, "always here" keeps the host for the project, and
// a later command (and a later session) reaches it unasked.
func TestNetAskOnceDenyProject(t *testing.T) {
	url, port, hits := netTarget(t)
	f := newFakeModel(t)
	e := netSession(t, f, "auto")
	cmd := netCurl(url)
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": cmd}}),
		callsReply(fakeCall{"bash", map[string]any{"command": cmd + " # again"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": cmd + " # third"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": cmd + " # fourth"}}),
		textReply("done"),
	)
	ap := &scriptedApprover{answers: []approvalAnswer{{Choice: "once"}, {Choice: "deny"}, {Choice: "project"}}}
	e.ask = ap
	e.runTurn(context.Background(), "fetch it")
	res := toolResults(f.got()[4])
	if len(res) != 4 {
		t.Fatalf("results %q", res)
	}
	if len(ap.asked) != 3 {
		t.Fatalf("asked %d times, want 3 (the fourth is allowed for the project): %+v", len(ap.asked), ap.asked)
	}
	r := ap.asked[0]
	if r.Tool != "network" || r.Input != "127.0.0.1:"+port || strings.Join(r.Options, ",") != "once,project,deny" ||
		!strings.Contains(r.Reason, "127.0.0.1 (port "+port+")") || !strings.Contains(r.Reason, cmd) || !strings.Contains(r.Reason, "this project") {
		t.Errorf("the card %+v", r)
	}
	if !strings.Contains(res[0], "TARGET-REACHED") {
		t.Errorf("once: the command did not reach the host:\n%s", res[0])
	}
	if strings.Contains(res[1], "TARGET-REACHED") || !strings.Contains(res[1], "said no") || !strings.Contains(res[1], "127.0.0.1") {
		t.Errorf("deny: %s", res[1])
	}
	if !strings.Contains(res[2], "TARGET-REACHED") || !strings.Contains(res[3], "TARGET-REACHED") {
		t.Errorf("always here: %q", res[2:])
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("the host received %d requests, want 3", n)
	}
	data, err := os.ReadFile(netFile())
	if err != nil || !strings.Contains(string(data), e.tb.root) || !strings.Contains(string(data), `"127.0.0.1"`) {
		t.Errorf("network.json %s %v", data, err)
	}
	later := newSandbox(sandboxConfig{}, e.tb.root)
	defer later.close()
	if v := later.permitCommand("127.0.0.1", port); !v.ok {
		t.Errorf("a later session of the project: %+v", v)
	}
	if rep := later.report("auto"); !strings.Contains(rep, "127.0.0.1") {
		t.Errorf("sandbox check does not list the project's host:\n%s", rep)
	}
	other := newSandbox(sandboxConfig{}, t.TempDir())
	defer other.close()
	if v := other.permitCommand("127.0.0.1", port); v.ok {
		t.Error("another project reaches the host allowed for this one")
	}
}

// TestNetAskHeadless: in -p nobody is asked; the command reads why, and
// the run ends not done (exit 5) with one line on stderr naming the host
// and sandbox.network.allow, so a script can tell (issue 20: it exited 0).
func TestNetAskHeadless(t *testing.T) {
	url, _, hits := netTarget(t)
	f := newFakeModel(t)
	e := netSession(t, f, "auto") // for the world check and the environment
	proj := e.tb.root
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": netCurl(url)}}), textReply("done"))
	var stdout, stderr bytes.Buffer
	rf := &runFlags{sessionOpts: sessionOpts{mode: "auto", cwd: proj}, print: true, format: "text"}
	err := runHeadless(context.Background(), rf, "fetch it", &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitNotDone {
		t.Errorf("-p with a refused host exits %d, want %d (not done)\n%s", code, exitNotDone, stderr.String())
	}
	res := toolResults(f.got()[1])
	if hits.Load() != 0 || !strings.Contains(res[0], "lembas -p has nobody to ask") || !strings.Contains(res[0], "sandbox.network.allow") {
		t.Errorf("-p: %d hits, result %q", hits.Load(), res)
	}
	if s := stderr.String(); strings.Count(s, "\n") != 1 || !strings.HasPrefix(s, "lembas: not done: ") ||
		!strings.Contains(s, "127.0.0.1") || !strings.Contains(s, "sandbox.network.allow") || !strings.Contains(s, "exit status 5") {
		t.Errorf("stderr is not one line naming the host and the key:\n%s", s)
	}
	// config's list lets it through in -p too
	os.MkdirAll(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas"), 0o700)
	os.WriteFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas", "config.yaml"), []byte("sandbox:\n  network:\n    allow: [127.0.0.1]\n"), 0o600)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": netCurl(url)}}), textReply("done"))
	stderr.Reset()
	if err := runHeadless(context.Background(), rf, "fetch it", &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if res := toolResults(f.got()[3]); !strings.Contains(res[0], "TARGET-REACHED") {
		t.Errorf("-p with the host in sandbox.network.allow: %q", res)
	}
}

// notingApprover answers choice, says on asked when a card comes, and with
// choice "" holds the card until its context ends (then records why).
type notingApprover struct {
	choice string
	asked  chan approvalRequest
	mu     sync.Mutex
	ended  []error
}

func (a *notingApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	a.asked <- req
	if a.choice != "" {
		return approvalAnswer{Choice: a.choice}
	}
	<-ctx.Done()
	a.mu.Lock()
	a.ended = append(a.ended, ctx.Err())
	a.mu.Unlock()
	return approvalAnswer{Choice: "once"} // too late: a card taken down is refused
}

// TestNetAskJobAndSubagent: a background job and a subagent's command are
// asked as the foreground is; the subagent's card names it.
func TestNetAskJobAndSubagent(t *testing.T) {
	url, _, hits := netTarget(t)
	f := newFakeModel(t)
	e := netSession(t, f, "auto")
	ap := &notingApprover{choice: "once", asked: make(chan approvalRequest, 4)}
	e.ask = ap
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": netCurl(url) + " > job.out", "background": true}}),
		textReply("started"),
	)
	e.runTurn(context.Background(), "in the background")
	select {
	case req := <-ap.asked:
		if req.Tool != "network" || req.Agent != "" || !strings.Contains(req.Reason, "job.out") {
			t.Errorf("the job's card %+v", req)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the job's connection was never asked about")
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(e.tb.root, "job.out")); strings.Contains(string(b), "TARGET-REACHED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not reach the host after once")
		}
	}
	f.push(
		callsReply(fakeCall{"task", map[string]any{"description": "fetch", "prompt": "Fetch the page."}}),
		callsReply(fakeCall{"bash", map[string]any{"command": netCurl(url)}}),
		textReply("fetched"), textReply("done"))
	e.runTurn(context.Background(), "delegate")
	select {
	case req := <-ap.asked:
		if req.Tool != "network" || !strings.Contains(req.Agent, "general") {
			t.Errorf("the subagent's card %+v", req)
		}
	default:
		t.Fatal("the subagent's command was not asked about")
	}
	if hits.Load() == 0 {
		t.Error("nothing reached the host after once")
	}
}

// TestNetAskCardTakenDown: while the card is up the connection is held; the
// turn cancelled ends the command, its card is taken down, and the proxy
// holds no connection after.
func TestNetAskCardTakenDown(t *testing.T) {
	url, _, hits := netTarget(t)
	f := newFakeModel(t)
	e := netSession(t, f, "auto")
	ap := &notingApprover{asked: make(chan approvalRequest, 1)}
	e.ask = ap
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": netCurl(url)}}), textReply("done"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan outcome, 1)
	go func() { done <- e.runTurn(ctx, "fetch it") }()
	<-ap.asked
	if n := e.tb.sandbox.proxy.held.Load(); n != 1 {
		t.Errorf("%d connections held while the card is up, want 1", n)
	}
	cancel()
	<-done
	for deadline := time.Now().Add(30 * time.Second); e.tb.sandbox.proxy.held.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still held after the card was taken down", e.tb.sandbox.proxy.held.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ap.mu.Lock()
	ended := ap.ended
	ap.mu.Unlock()
	if len(ended) != 1 || ended[0] == nil {
		t.Errorf("the card was not taken down: %v", ended)
	}
	if hits.Load() != 0 {
		t.Error("a connection whose card was taken down reached the host")
	}
}

// TestNetAskACP: over ACP the network card goes out as other approvals do,
// as session/request_permission, naming the host; allow once lets the
// command through.
func TestNetAskACP(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	url, port, hits := netTarget(t)
	_, proj, _ := sandboxFixture(t)
	if sb := newSandbox(sandboxConfig{}, proj); sb.theWorld() == nil {
		sb.close()
		t.Skip("no world here")
	} else {
		sb.close()
	}
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": netCurl(url)}}), textReply("done"))
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	p.initialize(nil)
	sid := p.newSession(proj, "auto")
	var asked []string
	r := p.result(p.request("session/prompt", prompt(sid, "fetch it")), func(m map[string]any) {
		if m["method"] != "session/request_permission" {
			return
		}
		params := m["params"].(map[string]any)
		var opts []string
		for _, o := range params["options"].([]any) {
			opts = append(opts, o.(map[string]any)["optionId"].(string))
		}
		asked = append(asked, fmt.Sprint(params["toolCall"])+" options "+strings.Join(opts, ","))
		p.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}})
	})
	if r["stopReason"] != "end_turn" || len(asked) != 1 || !strings.Contains(asked[0], "127.0.0.1:"+port) || !strings.Contains(asked[0], "options once,project,deny") {
		t.Fatalf("stop %v, asked %q", r, asked)
	}
	if res := toolResults(f.got()[1]); hits.Load() != 1 || !strings.Contains(res[0], "TARGET-REACHED") {
		t.Errorf("after allow once: %d hits, %q", hits.Load(), res)
	}
}

// TestNetMCPStdioModes: a stdio MCP server's network is as config says —
// on reaches the host, off reaches nothing, and the proxy refuses a host
// not allowed (no command runs to ask for it) with a body that names it.
func TestNetMCPStdioModes(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	url, _, hits := netTarget(t)
	for _, c := range []struct{ mode, want string }{
		{"on", "TARGET-REACHED"},
		{"off", ""},
		{"proxy", "sandbox.network.allow"},
	} {
		tb, _, proj, _ := worldFixture(t, sandboxConfig{Network: c.mode})
		before := hits.Load()
		line := "env -u NO_PROXY -u no_proxy curl -s --max-time 20 " + url + "/ > net.txt 2>&1; echo done > done.txt"
		cfg := mcpServerConfig{Name: "n", Command: "/bin/sh", Args: []string{"-c", line}, Cwd: proj, Sandbox: tb.sandbox}
		s, err := startMCPStdio(cfg, theMCP())
		if err != nil {
			t.Fatal(err)
		}
		<-s.exited()
		s.close()
		if _, err := os.Stat(filepath.Join(proj, "done.txt")); err != nil {
			t.Fatalf("%s: the server did not run: %v", c.mode, err)
		}
		got, _ := os.ReadFile(filepath.Join(proj, "net.txt"))
		reached := hits.Load() > before
		if reached != (c.mode == "on") || (c.want != "" && !strings.Contains(string(got), c.want)) || (c.want == "" && strings.Contains(string(got), "TARGET")) {
			t.Errorf("network %s: reached %v, the server read %q", c.mode, reached, got)
		}
	}
}

// FuzzNetHost: a host the gate takes is written one way (netHost of it is
// itself), is no pattern and carries no port, and a list naming it covers it.
func FuzzNetHost(f *testing.F) {
	for _, s := range []string{"api.example.com", "API.Example.COM.", "*.com", "::ffff:127.0.0.1", "[::1]", "127.1", "b\u00fccher.example", "\u212aey.example", "a..", "", "x:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := netHost(s)
		if !ok {
			if hostListed(s, []string{s}) {
				t.Fatalf("%q is refused by netHost but listed", s)
			}
			return
		}
		if m, ok2 := netHost(n); !ok2 || m != n {
			t.Fatalf("netHost(%q) = %q, whose netHost is %q, %v", s, n, m, ok2)
		}
		if strings.ContainsAny(n, "*[]/ ") || (strings.Contains(n, ":") && net.ParseIP(n) == nil) {
			t.Fatalf("netHost(%q) = %q: a pattern or a port", s, n)
		}
		if !hostListed(s, []string{n}) {
			t.Fatalf("%q is not listed under its own form %q", s, n)
		}
	})
}

// TestProxyConnectPortInRange: CONNECT to a port no connection can have is
// a bad request, answered as one, never a card or a dial.
func TestProxyConnectPortInRange(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	sb := newSandbox(sandboxConfig{Allow: []string{"127.0.0.1"}}, t.TempDir())
	p, err := startSandboxProxy(sb, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for _, target := range []string{"127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:"} {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), "CONNECT host:port") {
			t.Errorf("CONNECT %s: %s %q, want 400 naming the port", target, resp.Status, body)
		}
	}
}

// TestNetAskNamesWhichCommand: with a background job and a foreground
// command running at once, the card names the one that connected — the
// job, though the foreground command is the newer — as the world's
// forwarder tells the proxy; a process no command owns any more (setsid,
// its parent gone) is still asked about, and its card says lembas could
// not tell which command connected.
func TestNetAskNamesWhichCommand(t *testing.T) {
	url, _, hits := netTarget(t)
	f := newFakeModel(t)
	e := netSession(t, f, "auto")
	ap := &notingApprover{choice: "once", asked: make(chan approvalRequest, 4)}
	e.ask = ap
	wait := func(file string) string { // a bounded wait for a file, not a timed assertion
		return "for i in $(seq 1200); do [ -e " + file + " ] && break; sleep 0.05; done"
	}
	job := wait("go.flag") + "; " + netCurl(url) + " > a.out; touch a.done # JOB-A"
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": job, "background": true}}),
		textReply("started"),
	)
	e.runTurn(context.Background(), "in the background")
	fg := "touch go.flag; " + wait("a.done") + "; echo FG-B-DONE # FG-B"
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": fg}}), textReply("done"))
	e.runTurn(context.Background(), "now this")
	select {
	case req := <-ap.asked:
		if !strings.Contains(req.Reason, "JOB-A") || strings.Contains(req.Reason, "FG-B") || strings.Contains(req.Reason, "could not tell") {
			t.Errorf("the card does not name the job that connected (and only it):\n%s", req.Reason)
		}
	default:
		t.Fatal("the job's connection was never asked about")
	}
	if b, _ := os.ReadFile(filepath.Join(e.tb.root, "a.out")); !strings.Contains(string(b), "TARGET-REACHED") {
		t.Errorf("the job did not reach the host after once: %q", b)
	}

	// A process its command left behind: a session of its own, its parent
	// gone, so neither its group nor its parents lead to a command.
	orphan := "setsid -f sh -c '" + netCurl(url) + " > o.out; touch o.done'; " + wait("o.done") + "; echo FG-C # FG-C"
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": orphan}}), textReply("done"))
	e.runTurn(context.Background(), "and this")
	select {
	case req := <-ap.asked:
		if !strings.Contains(req.Reason, "could not tell") || !strings.Contains(req.Reason, "FG-C") {
			t.Errorf("the card for a process no command owns does not say lembas could not tell:\n%s", req.Reason)
		}
	default:
		t.Fatal("the orphan's connection was not asked about")
	}
	if hits.Load() != 2 {
		t.Errorf("the host received %d requests, want 2", hits.Load())
	}
}

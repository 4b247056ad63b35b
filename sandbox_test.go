package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary act as lembas's sandbox helper: under go
// test, os.Executable is this binary, and the sandbox re-executes it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandboxHelperArg {
		os.Exit(sandboxHelper(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == worldHelperArg {
		os.Exit(worldInit(os.Args[2:]))
	}
	code := m.Run()
	sweepSessionDirs(true) // a sandbox a test never closed leaves no folder
	if binDir != "" {
		os.RemoveAll(binDir) // lembasBin's build (e2e_test.go)
	}
	os.Exit(code)
}

var updateSandbox = flag.Bool("update-sandbox", false, "rewrite testdata/sandbox goldens")

// needLandlock skips where this machine gives no Landlock (the tests of
// that case force the probe instead).
func needLandlock(t testing.TB) {
	t.Helper()
	if p := sandboxProbeOS(); p.Kind != "landlock" {
		t.Skipf("no Landlock here: %s", p.Why)
	}
}

// sandboxFixture is a project and a sibling folder inside a folder of the
// home folder — outside every writable root, unlike the temp folders — with
// a git repository in the project.
func sandboxFixture(t *testing.T) (base, proj, sib string) {
	t.Helper()
	needLandlock(t)
	b, err := os.MkdirTemp(homeDir(), ".lembas-sandbox-test-")
	if err != nil {
		t.Skipf("no folder can be made in the home folder: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(b) })
	base = evalExisting(b)
	proj, sib = filepath.Join(base, "proj"), filepath.Join(base, "sib")
	for _, d := range []string{proj, sib} {
		os.MkdirAll(d, 0o755)
	}
	sb := newSandbox(sandboxConfig{}, proj)
	pol, _ := sb.policy("auto")
	for _, w := range pol.Write {
		if w != proj && within(w, base) {
			t.Skipf("%s is inside the writable root %s; nothing to refuse", base, w)
		}
	}
	git(t, proj, "init", "-q", ".")
	git(t, proj, "config", "user.email", "t@example.com")
	git(t, proj, "config", "user.name", "T")
	return base, proj, sib
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// sandboxBash runs one bash call through the toolbox, as the engine does.
// hiddenInWorld says whether path is in the part of the home folder the
// toolbox's world leaves out of view.
func hiddenInWorld(tb *toolbox, path string) bool {
	if path == "" || tb.sandbox.theWorld() == nil {
		return false
	}
	p := tb.sandbox.partsCached("auto")
	return p.Home != "" && within(p.Home, path) && !underAnyRoot(path, p.Keep) && !underAnyRoot(path, p.Write) && !underAnyRoot(path, p.Caches)
}

func sandboxBash(t testing.TB, tb *toolbox, mode, command string) toolResult {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"command": command})
	return tb.run(withSandboxCall(context.Background(), mode, false), tb.byName["bash"], raw)
}

func sandboxToolbox(t testing.TB, root string, cfg sandboxConfig, opts ...func(*sandbox)) *toolbox {
	t.Helper()
	tb, err := newToolbox(root, false)
	if err != nil {
		t.Fatal(err)
	}
	tb.shell = "/bin/bash"
	tb.sandbox = newSandbox(cfg, root)
	for _, o := range opts {
		o(tb.sandbox)
	}
	t.Cleanup(tb.sandbox.close)
	return tb
}

// TestSandboxWrites: inside the project a command writes; the home folder,
// a sibling folder, /etc and .git/hooks are refused with "Permission
// denied" or "Read-only file system", and the model is told why.
func TestSandboxWrites(t *testing.T) {
	for _, how := range []string{"helper", "thread"} {
		t.Run(how, func(t *testing.T) { testSandboxWrites(t, how == "thread") })
	}
}

// testSandboxWrites runs through the helper (namespaces, where the kernel
// allows them) or, with namespaces off, on a restricted thread of lembas.
func testSandboxWrites(t *testing.T, thread bool) {
	base, proj, sib := sandboxFixture(t)
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	if thread {
		tb.sandbox.nsOnce.Do(func() {})
	}
	defer func() {
		// lembas itself stays unrestricted: only the command's thread was.
		if err := os.WriteFile(filepath.Join(base, "lembas-itself.txt"), []byte("x"), 0o644); err != nil {
			t.Errorf("lembas lost its own rights: %v", err)
		}
	}()
	if r := sandboxBash(t, tb, "auto", "echo hi > made.txt && mkdir -p d/e && mv made.txt d/e/ && cat d/e/made.txt"); r.IsError || !strings.Contains(r.Text, "hi") {
		t.Fatalf("writing in the project: %q", r.Text)
	}
	for _, c := range []struct{ name, cmd, path string }{
		{"home", "echo x > " + filepath.Join(base, "home.txt"), filepath.Join(base, "home.txt")},
		{"sibling", "echo x > " + filepath.Join(sib, "s.txt"), filepath.Join(sib, "s.txt")},
		{"etc", "echo x > /etc/lembas-sandbox-test", "/etc/lembas-sandbox-test"},
		{"hooks", "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit", filepath.Join(proj, ".git/hooks/pre-commit")},
		{"gitconfig", "echo '[core]' >> .git/config", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if ns, _ := tb.sandbox.namespaces(); !ns && (c.path == "" || strings.Contains(c.path, ".git")) {
				t.Skip("no namespaces: TestSandboxGitRestore covers the git folder")
			}
			before, _ := os.ReadFile(filepath.Join(proj, ".git/config"))
			r := sandboxBash(t, tb, "auto", c.cmd)
			if c.path != "" {
				if _, err := os.Stat(c.path); err == nil {
					os.Remove(c.path)
					t.Fatalf("%s was written: %q", c.path, r.Text)
				}
			}
			after, _ := os.ReadFile(filepath.Join(proj, ".git/config"))
			if string(before) != string(after) {
				t.Fatalf(".git/config changed: %q", r.Text)
			}
			if !r.IsError {
				t.Fatalf("the command succeeded: %q", r.Text)
			}
			if hiddenInWorld(tb, c.path) && strings.Contains(r.Text, "No such file or directory") {
				// In the world a sibling folder in the home folder is not
				// there at all (policyParts.Home): the write fails, and the
				// model is told the folder is out of commands' view.
				if !strings.Contains(r.Text, "No such file or directory") || !strings.Contains(r.Text, "not in commands' view") {
					t.Errorf("a write into a hidden folder of the home folder: %q", r.Text)
				}
				return
			}
			if !strings.Contains(r.Text, "Permission denied") && !strings.Contains(r.Text, "Read-only file system") {
				t.Errorf("no denial in %q", r.Text)
			}
			if !strings.Contains(r.Text, "[sandbox:") || (c.path == "" || strings.Contains(c.path, ".git")) != strings.Contains(r.Text, "read-only to commands") || !strings.Contains(r.Text, "read-only to commands") && !strings.Contains(r.Text, showRoots([]string{proj})) {
				t.Errorf("the model is not told why: %q", r.Text)
			}
		})
	}
}

// TestSandboxGitRestore: where no namespace binds .git read-only, a change
// to a hook or to the config is put back after the command and reported.
func TestSandboxGitRestore(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	tb.sandbox.nsOnce.Do(func() { tb.sandbox.nsWhy = "switched off by the test" })
	before, _ := os.ReadFile(filepath.Join(proj, ".git/config"))
	r := sandboxBash(t, tb, "auto", "printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo '[alias]' >> .git/config")
	if _, err := os.Stat(filepath.Join(proj, ".git/hooks/pre-commit")); err == nil {
		t.Errorf("the new hook is still there: %q", r.Text)
	}
	if after, _ := os.ReadFile(filepath.Join(proj, ".git/config")); string(after) != string(before) {
		t.Errorf(".git/config not put back:\n%s", after)
	}
	if !strings.Contains(r.Text, "lembas put back what was there") || !strings.Contains(r.Text, "pre-commit") {
		t.Errorf("the model is not told: %q", r.Text)
	}
}

// TestSandboxBuildTools: go test, git commit and npm install --offline work
// in a fixture with the default writable roots.
func TestSandboxBuildTools(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	files := map[string]string{
		"go.mod":           "module fixture\n\ngo 1.21\n",
		"a.go":             "package fixture\n\nfunc Two() int { return 2 }\n",
		"a_test.go":        "package fixture\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n",
		"package.json":     `{"name":"fixture","version":"1.0.0","dependencies":{"dep":"file:./dep"}}`,
		"dep/package.json": `{"name":"dep","version":"1.0.0"}`,
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(proj, p)), 0o755)
		os.WriteFile(filepath.Join(proj, p), []byte(c), 0o644)
	}
	if _, err := exec.LookPath("go"); err == nil {
		if r := sandboxBash(t, tb, "auto", "go test -count=1 ./..."); r.IsError || !strings.Contains(r.Text, "ok") {
			t.Errorf("go test: %q", r.Text)
		}
	}
	if r := sandboxBash(t, tb, "auto", "git add -A && git commit -qm 'first' && git log --oneline | wc -l"); r.IsError || !strings.Contains(r.Text, "1") {
		t.Errorf("git commit: %q", r.Text)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Log("npm is not installed: npm install --offline not tried")
		return
	}
	if r := sandboxBash(t, tb, "auto", "npm install --offline --no-audit --no-fund && ls node_modules"); r.IsError || !strings.Contains(r.Text, "dep") {
		t.Errorf("npm install --offline: %q", r.Text)
	}
}

// TestSandboxPlanReadOnly: in plan mode even the project is not writable,
// and the model is told it is plan mode.
func TestSandboxPlanReadOnly(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	r := sandboxBash(t, tb, "plan", "ls >/dev/null && echo x > p.txt")
	if _, err := os.Stat(filepath.Join(proj, "p.txt")); err == nil || !r.IsError {
		t.Fatalf("plan mode wrote the project: %q", r.Text)
	}
	if !strings.Contains(r.Text, "plan mode runs commands read-only") {
		t.Errorf("result %q", r.Text)
	}
	if r := sandboxBash(t, tb, "plan", "cat .git/HEAD"); r.IsError {
		t.Errorf("plan mode cannot read: %q", r.Text)
	}
}

// TestSandboxNetwork: a loopback connection (TCP, and UDP) goes through
// with sandbox.network: on and is stopped with off (the default, the proxy,
// is TestWorldNetworkProxy's).
func TestSandboxNetwork(t *testing.T) {
	needLandlock(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
			c.Close()
		}
	}()
	url := "http://" + ln.Addr().String() + "/"
	probe := "exec 3<>/dev/tcp/127.0.0.1/" + fmt.Sprint(ln.Addr().(*net.TCPAddr).Port) + " && echo connected"
	if _, err := exec.LookPath("curl"); err == nil {
		probe = "curl -s --max-time 5 " + url
	}
	root := t.TempDir()
	on := sandboxToolbox(t, root, sandboxConfig{Network: "on"})
	if r := sandboxBash(t, on, "auto", probe); r.IsError || !strings.Contains(r.Text, "hello") && !strings.Contains(r.Text, "connected") {
		t.Fatalf("network on: %q", r.Text)
	}
	tb := sandboxToolbox(t, root, sandboxConfig{Network: "off"})
	if r := sandboxBash(t, tb, "auto", probe); !r.IsError || strings.Contains(r.Text, "hello") || strings.Contains(r.Text, "connected") {
		t.Errorf("network off, TCP went through: %q", r.Text)
	}
	if r := sandboxBash(t, tb, "auto", "echo x > /dev/udp/127.0.0.1/9"); !r.IsError || !strings.Contains(r.Text, "not permitted") {
		t.Errorf("network off, UDP: %q", r.Text)
	}
	if r := sandboxBash(t, tb, "auto", "echo local > f.txt && cat f.txt"); r.IsError {
		t.Errorf("network off broke a plain command: %q", r.Text)
	}
}

// probeFails makes a sandbox's machine one without a sandbox.
func probeFails(s *sandbox) {
	s.probeHook = func() sandboxProbe { return sandboxProbe{Why: "the probe was made to fail: ENOSYS"} }
}

// TestSandboxNone: a machine without a sandbox (the probe forced to fail)
// runs commands bare and says so once; sandbox.required refuses them.
func TestSandboxNone(t *testing.T) {
	root := t.TempDir()
	tb := sandboxToolbox(t, root, sandboxConfig{}, probeFails)
	if n := tb.sandbox.notice(); !strings.Contains(n, "no OS sandbox here") || !strings.Contains(n, "ENOSYS") {
		t.Errorf("notice %q", n)
	}
	r := sandboxBash(t, tb, "auto", "echo ran")
	if r.IsError || !strings.Contains(r.Text, "ran") || !strings.Contains(r.Text, "gives no OS sandbox") {
		t.Errorf("first call %q", r.Text)
	}
	if r := sandboxBash(t, tb, "auto", "echo again"); strings.Contains(r.Text, "gives no OS sandbox") {
		t.Errorf("said twice: %q", r.Text)
	}
	req := true
	tb = sandboxToolbox(t, root, sandboxConfig{Required: &req}, probeFails)
	r = sandboxBash(t, tb, "auto", "echo x > refused.txt")
	if !r.IsError || !strings.Contains(r.Text, "sandbox.required is true") {
		t.Errorf("required: %q", r.Text)
	}
	if _, err := os.Stat(filepath.Join(root, "refused.txt")); err == nil {
		t.Error("required: the command ran")
	}
	if got := tb.sandbox.report("auto"); !strings.Contains(got, "sandbox: none") || !strings.Contains(got, "required: true") {
		t.Errorf("check report %q", got)
	}
}

// TestSandboxUnsandboxed: a model's request to run outside the sandbox is
// put to the person in auto mode, with only "once" on offer; "once" runs
// that one call bare; the next call with the same request is asked again;
// with -p (no one to ask) it is refused; and a call the person did not
// approve never runs bare.
func TestSandboxUnsandboxed(t *testing.T) {
	base, _, sib := sandboxFixture(t)
	_ = base
	target := filepath.Join(sib, "out.txt")
	line := "echo outside > " + target
	f := newFakeModel(t)
	proj := sessionEnv(t, f)
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": line, "unsandboxed": "it writes the sibling folder"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": line, "unsandboxed": "again"}}),
		textReply("done"),
	)
	ap := &scriptedApprover{answers: []approvalAnswer{{Choice: "once"}, {Choice: "session"}}}
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "auto", cwd: proj}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	e.ask = ap
	out := e.runTurn(context.Background(), "write it")
	if len(ap.asked) != 2 {
		t.Fatalf("asked %d times in auto mode, want 2", len(ap.asked))
	}
	for _, r := range ap.asked {
		if strings.Join(r.Options, ",") != "once,deny" || !strings.Contains(r.Reason, "outside the OS sandbox") {
			t.Errorf("request %+v", r)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "outside\n" {
		t.Errorf("the approved call did not run bare: %v", err)
	}
	if len(out.Calls) != 2 || out.Calls[0].Status != "completed" || out.Calls[1].Status != "refused" {
		t.Errorf("calls %+v", out.Calls)
	}
	res := toolResults(f.got()[1])
	if len(res) != 1 || !strings.Contains(res[0], "ran outside the sandbox") {
		t.Errorf("result %q", res)
	}

	// -p: nobody to ask, so it is refused even in auto mode.
	os.Remove(target)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": line, "unsandboxed": "please"}}), textReply("ok"))
	e2, cleanup2, err := newSessionEngine(context.Background(), &sessionOpts{mode: "auto", cwd: proj}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup2()
	e2.ask = headlessApprover{}
	if out := e2.runTurn(context.Background(), "again"); len(out.Calls) != 1 || out.Calls[0].Status != "refused" {
		t.Errorf("-p: %+v", out.Calls)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("-p: ran outside the sandbox")
	}

	// The tool itself never runs bare without the engine's approval.
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	raw, _ := json.Marshal(map[string]any{"command": line, "unsandboxed": "x"})
	r := tb.run(withSandboxCall(context.Background(), "auto", false), tb.byName["bash"], raw)
	if !r.IsError || !strings.Contains(r.Text, "only after the person approves") {
		t.Errorf("unapproved: %q", r.Text)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("unapproved: ran outside the sandbox")
	}
}

// TestSandboxSeatbeltGolden: the macOS profile text is fixed, and the roots
// reach it only as parameters.
func TestSandboxSeatbeltGolden(t *testing.T) {
	pol := sandboxPolicy{Write: []string{"/Users/me/proj", "/private/tmp", "/Users/me/pa\"th) (allow default"},
		Devices: []string{"/dev/null", "/dev/tty"}, Protect: []string{"/Users/me/proj/.git/hooks", "/Users/me/proj/.git/config"}}
	var got strings.Builder
	for _, network := range []bool{true, false} {
		pol.Network = network
		profile, params := seatbeltProfile(pol)
		fmt.Fprintf(&got, "--- network %v\n%s--- params\n%s\n", network, profile, strings.Join(params, "\n"))
		if strings.Contains(profile, "/Users") || strings.Contains(profile, "allow default") {
			t.Errorf("a root was spliced into the profile:\n%s", profile)
		}
	}
	golden := filepath.Join("testdata", "sandbox", "seatbelt.golden")
	if *updateSandbox {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, []byte(got.String()), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestSandboxSeatbeltGolden -update-sandbox)", err)
	}
	if got.String() != string(want) {
		os.WriteFile(golden+".got", []byte(got.String()), 0o644)
		t.Errorf("profile differs from %s (see %s.got)", golden, golden)
	}
}

// TestSandboxCheck: `lembas sandbox check` names the sandbox and the roots.
func TestSandboxCheck(t *testing.T) {
	needLandlock(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := t.TempDir()
	var out, errb strings.Builder
	if code := run([]string{"sandbox", "check", "--cwd", root}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "sandbox: landlock") || !strings.Contains(out.String(), evalExisting(root)) || !strings.Contains(out.String(), "network: on") {
		t.Errorf("check:\n%s", out.String())
	}
	if code := run([]string{"sandbox", "nope"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Errorf("bad subcommand: exit %d", code)
	}
}

// The sandbox's cost on one bash call: go test -bench BenchmarkSandbox.
// Each iteration runs the line bare, on a restricted thread (a project
// without a git folder) and through the helper in a namespace (a git
// project), one after the other, so a machine whose load changes from
// second to second weighs on all three alike; the ratios are to bare.
func BenchmarkSandboxTrue(b *testing.B)      { benchSandbox(b, "true") }
func BenchmarkSandboxGoVersion(b *testing.B) { benchSandbox(b, "go version") }

func benchSandbox(b *testing.B, line string) {
	needLandlock(b)
	root, gitRoot := b.TempDir(), b.TempDir()
	helperExe := ""
	if err := exec.Command("git", "init", "-q", gitRoot).Run(); err != nil {
		b.Skip("git: ", err)
	}
	if os.Getenv("LEMBAS_BENCH_TEST_HELPER") == "" {
		// Time the helper as lembas runs it: the lembas binary, not this
		// (larger, slower to start) test binary.
		exe := filepath.Join(b.TempDir(), "lembas")
		if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
		helperExe = exe
	}
	// The per-command sandbox; the world's is BenchmarkWorld.
	perCommand := func(s *sandbox) { s.noWorld, s.helperExe = true, helperExe }
	thread := sandboxToolbox(b, root, sandboxConfig{}, perCommand)
	helper := sandboxToolbox(b, gitRoot, sandboxConfig{}, perCommand)
	ns, _ := helper.sandbox.namespaces()
	var bare, bs, th, hp time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, code, _ := runShell(context.Background(), "/bin/bash", line, root, 60e9, 1e9, nil); code != 0 {
			b.Fatal(code)
		}
		ts := time.Now()
		// Bare in a session of its own, as the sandbox runs commands: on a
		// loaded machine a new session (a new scheduler autogroup) costs
		// time of its own, which is not the sandbox's work.
		c := shellCommand("/bin/bash", line, root)
		c.SysProcAttr = ownSessionAttr()
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if r := sandboxBash(b, thread, "auto", line); r.IsError {
			b.Fatal(r.Text)
		}
		t2 := time.Now()
		if ns {
			if r := sandboxBash(b, helper, "auto", line); r.IsError {
				b.Fatal(r.Text)
			}
		}
		t3 := time.Now()
		bare, bs, th, hp = bare+ts.Sub(t0), bs+t1.Sub(ts), th+t2.Sub(t1), hp+t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(bare.Microseconds())/n, "bare-µs/op")
	b.ReportMetric(float64(th.Microseconds())/n, "thread-µs/op")
	b.ReportMetric(float64(th)/float64(bare), "thread/bare")
	b.ReportMetric(float64(bs.Microseconds())/n, "bare-setsid-µs/op")
	b.ReportMetric(float64(th)/float64(bs), "thread/bare-setsid")
	if ns {
		b.ReportMetric(float64(hp.Microseconds())/n, "helper-µs/op")
		b.ReportMetric(float64(hp)/float64(bare), "helper/bare")
	}
}

// BenchmarkUnsandboxedAsk: what the hook adds to judging one bash call.
func BenchmarkUnsandboxedAsk(b *testing.B) {
	args := json.RawMessage(`{"command":"go test ./... && git status","timeout":60}`)
	d := decision{Verdict: "allow"}
	for i := 0; i < b.N; i++ {
		if unsandboxedAsk(args, d).Verdict != "allow" {
			b.Fatal("asked")
		}
	}
}

// TestSandboxNoneSessionNotice: with no sandbox, a session tells the person
// once, when it starts.
func TestSandboxNoneSessionNotice(t *testing.T) {
	f := newFakeModel(t)
	proj := sessionEnv(t, f)
	var said []string
	fails := func() sandboxProbe { return sandboxProbe{Why: "the probe was made to fail: ENOSYS"} }
	_, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "auto", cwd: proj, sandboxProbe: fails}, true, func(s string) { said = append(said, s) })
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	n := 0
	for _, s := range said {
		if strings.Contains(s, "no OS sandbox here") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("told %d times: %q", n, said)
	}
}

// TestSandboxWorktree: in a linked git worktree the repository's git
// folder is writable (git commit works) and its hooks and config are the
// protected ones.
func TestSandboxWorktree(t *testing.T) {
	_, proj, sib := sandboxFixture(t)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644)
	git(t, proj, "add", "-A")
	git(t, proj, "commit", "-qm", "first")
	wt := filepath.Join(sib, "wt")
	git(t, proj, "worktree", "add", "-q", "-b", "side", wt)
	tb := sandboxToolbox(t, wt, sandboxConfig{})
	if r := sandboxBash(t, tb, "auto", "echo b > b.txt && git add b.txt && git commit -qm second && git log --oneline | wc -l"); r.IsError || !strings.Contains(r.Text, "2") {
		t.Errorf("git commit in a worktree: %q", r.Text)
	}
	pol, _ := tb.sandbox.policy("auto")
	got := strings.Join(pol.Protect, ",")
	for _, want := range []string{filepath.Join(proj, ".git", "hooks"), filepath.Join(proj, ".git", "config"), filepath.Join(proj, ".git", "worktrees", "wt", "commondir")} {
		if !strings.Contains(got, want) {
			t.Errorf("protected %q, want %q among them", pol.Protect, want)
		}
	}
	before, _ := os.ReadFile(filepath.Join(proj, ".git", "config"))
	sandboxBash(t, tb, "auto", "git config core.hooksPath /tmp/evil")
	if after, _ := os.ReadFile(filepath.Join(proj, ".git", "config")); string(after) != string(before) {
		t.Errorf("the repository's config changed from a worktree:\n%s", after)
	}
}

// TestSandboxJobs: a background job runs in the same sandbox as a
// foreground command — it writes in the project, is refused outside it —
// and on the restricted-thread path it is not killed when the thread that
// started it is thrown away.
func TestSandboxJobs(t *testing.T) {
	for _, how := range []string{"helper", "thread"} {
		t.Run(how, func(t *testing.T) {
			_, proj, sib := sandboxFixture(t)
			tb := sandboxToolbox(t, proj, sandboxConfig{})
			if how == "thread" {
				tb.sandbox.nsOnce.Do(func() {})
			}
			e := newEngine(nil, tb, nil, nil, &session{ID: "sandbox-jobs"}, 0)
			t.Cleanup(func() { e.jobs().stopAll() })
			outside := filepath.Join(sib, "job.txt")
			cmd := "sleep 0.3; echo in > job-in.txt; echo out > " + outside + "; echo finished"
			raw, _ := json.Marshal(map[string]any{"command": cmd, "background": true})
			ctx := withJobs(withSandboxCall(context.Background(), "auto", false), e)
			if r := tb.run(ctx, tb.byName["bash"], raw); r.IsError || !strings.Contains(r.Text, "j1") {
				t.Fatalf("starting the job: %q", r.Text)
			}
			j := e.jobs().get("j1")
			select {
			case <-j.doneCh():
			case <-time.After(30 * time.Second):
				t.Fatal("the job never ended")
			}
			j.mu.Lock()
			out := string(j.out.data)
			j.mu.Unlock()
			if !strings.Contains(out, "finished") {
				t.Errorf("the job did not run to its end (killed with its starting thread?): %q", out)
			}
			if _, err := os.Stat(filepath.Join(proj, "job-in.txt")); err != nil {
				t.Errorf("the job could not write in the project: %v (%q)", err, out)
			}
			if _, err := os.Stat(outside); err == nil {
				t.Errorf("the job wrote outside the project: %q", out)
			}
			if !strings.Contains(out, "Permission denied") && !strings.Contains(out, "Read-only") && !(hiddenInWorld(tb, outside) && strings.Contains(out, "No such file or directory")) {
				t.Errorf("no denial in the job's output: %q", out)
			}
		})
	}
}

// TestSandboxPlanReadOnlyUnderTmp: a project that lives in a temp folder is
// read-only in plan mode too (issue 21: /tmp was a writable root in every
// mode, so plan mode wrote such a project).
func TestSandboxPlanReadOnlyUnderTmp(t *testing.T) {
	needLandlock(t)
	proj := evalExisting(t.TempDir())
	if !within("/tmp", proj) {
		t.Skipf("the test's temp folder %s is not under /tmp", proj)
	}
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	r := sandboxBash(t, tb, "plan", "echo x > p.txt")
	if _, err := os.Stat(filepath.Join(proj, "p.txt")); err == nil || !r.IsError {
		t.Fatalf("plan mode wrote a project under /tmp: %q", r.Text)
	}
	if r := sandboxBash(t, tb, "auto", "echo x > q.txt"); r.IsError {
		t.Errorf("auto mode cannot write the project under /tmp: %q", r.Text)
	}
}

// TestSandboxPoliciesAlternate: one session's commands alternate between
// modes in the same world, and each runs under its own policy (the world's
// connection numbers each policy once, and reuses the last one's number
// only for the same policy).
func TestSandboxPoliciesAlternate(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	for i, mode := range []string{"auto", "plan", "plan", "auto", "auto", "plan"} {
		name := filepath.Join(proj, "alt"+strconv.Itoa(i)+".txt")
		sandboxBash(t, tb, mode, "echo x > alt"+strconv.Itoa(i)+".txt")
		if wrote := pathExists(name); wrote != (mode == "auto") {
			t.Errorf("command %d in %s mode: wrote the project %v", i, mode, wrote)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sessionEnv points lembas's folders and the home folder at temp folders
// and the model at the fake; it returns the project.
func sessionEnv(t *testing.T, f *fakeModel) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	t.Setenv("OPENAI_BASE_URL", f.url())
	t.Setenv("OPENAI_API_KEY", "x")
	t.Setenv("LEMBAS_MODEL", "mock")
	return copyProject(t, "basic")
}

// TestEngineFloorInAuto: a model that tries rm -rf ~ in auto mode is
// refused by the floor, told why, and the home folder is untouched.
func TestEngineFloorInAuto(t *testing.T) {
	f := newFakeModel(t)
	proj := sessionEnv(t, f)
	home := os.Getenv("HOME")
	os.WriteFile(filepath.Join(home, "keep.txt"), []byte("x"), 0o644)
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "rm -rf ~"}}),
		textReply("I will not do that."),
	)
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "auto", cwd: proj}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	e.ask = headlessApprover{}
	out := e.runTurn(context.Background(), "clean up")
	if out.Err != nil || len(out.Calls) != 1 || out.Calls[0].Status != "refused" {
		t.Fatalf("outcome %+v", out)
	}
	res := toolResults(f.got()[1])
	h, _ := loadHardline()
	if len(res) != 1 || !strings.Contains(res[0], h.Refuse[0].Reason) || !strings.Contains(res[0], "rm-recursive-system") {
		t.Errorf("the model was told %q, want the floor's reason", res)
	}
	if _, err := os.Stat(filepath.Join(home, "keep.txt")); err != nil {
		t.Errorf("the home folder was touched: %v", err)
	}
}

// scriptedApprover answers from a list and records what it was asked.
type scriptedApprover struct {
	mu      sync.Mutex
	answers []approvalAnswer
	asked   []approvalRequest
}

func (s *scriptedApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, req)
	if len(s.answers) == 0 {
		return approvalAnswer{Choice: "deny"}
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a
}

// TestEngineApprovals: a "session" answer for bash covers the command's
// arity pattern and nothing wider; a corrected command still meets the
// floor; an edit is shown as a diff; a "project" answer is kept on disk.
func TestEngineApprovals(t *testing.T) {
	f := newFakeModel(t)
	proj := sessionEnv(t, f)
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "touch a.txt"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "touch b.txt"}}),  // covered by touch *
		callsReply(fakeCall{"bash", map[string]any{"command": "cargo build"}}),  // asked; corrected into the floor
		callsReply(fakeCall{"bash", map[string]any{"command": "mkdir -p out"}}), // project answer
		callsReply(fakeCall{"write", map[string]any{"path": "src/app.txt", "content": "status: DONE\n"}}),
		textReply("done"),
	)
	ap := &scriptedApprover{answers: []approvalAnswer{
		{Choice: "session"},
		{Choice: "once", Command: "rm -rf ~"},
		{Choice: "project"},
		{Choice: "deny", Feedback: "not now"},
	}}
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "manual", cwd: proj}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	e.ask = ap
	out := e.runTurn(context.Background(), "build")
	var st []string
	for _, c := range out.Calls {
		st = append(st, c.Status)
	}
	if got := strings.Join(st, " "); got != "completed completed refused completed refused" {
		t.Errorf("statuses %s", got)
	}
	if len(ap.asked) != 4 {
		t.Fatalf("asked %d times, want 4: %+v", len(ap.asked), ap.asked)
	}
	if r := ap.asked[0]; r.Input != "touch a.txt" || strings.Join(r.Options, ",") != "once,session,project,deny" || r.Rule != "modes.json manual.execute" {
		t.Errorf("first request %+v", r)
	}
	if r := ap.asked[3]; r.Tool != "write" || !strings.Contains(r.Diff, "-status: TODO\n+status: DONE\n") || !strings.Contains(r.Input, `"path":"src/app.txt"`) || r.Paths[0] != "src/app.txt" {
		t.Errorf("write request %+v", r)
	}
	res := toolResults(f.got()[5])
	if !strings.Contains(res[2], "refused in every mode") || !strings.Contains(res[4], "not now") {
		t.Errorf("results %q", res)
	}
	data, err := os.ReadFile(alwaysFile(proj))
	if err != nil || !strings.Contains(string(data), `"bash: mkdir *"`) {
		t.Errorf("project answers %s %v", data, err)
	}
	var pa projectAnswers
	if json.Unmarshal(data, &pa) != nil || pa.Project != proj {
		t.Errorf("project answers file %s", data)
	}
}

// blockingApprover never answers until its context ends.
type blockingApprover struct{}

func (blockingApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	<-ctx.Done()
	return approvalAnswer{Choice: "once"}
}

// TestApproveWithin: no answer in time is a denial; answers not on offer
// are denials; a corrected command goes with once only.
func TestApproveWithin(t *testing.T) {
	req := approvalRequest{Tool: "bash", Options: []string{"once", "deny"}}
	if a := approveWithin(context.Background(), blockingApprover{}, req, 1); a.Choice != "deny" || a.Why != "timeout" {
		t.Errorf("timeout: %+v", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a := approveWithin(ctx, blockingApprover{}, req, 1<<40); a.Choice != "deny" || a.Why != "cancelled" {
		t.Errorf("cancelled: %+v", a)
	}
	ap := &scriptedApprover{answers: []approvalAnswer{{Choice: "session"}, {Choice: "once", Command: "ls"}}}
	if a := approveWithin(context.Background(), ap, req, 1<<40); a.Choice != "deny" {
		t.Errorf("an answer not on offer: %+v", a)
	}
	if a := approveWithin(context.Background(), ap, req, 1<<40); a.Choice != "once" || a.Command != "ls" {
		t.Errorf("once with a command: %+v", a)
	}
	p := &permissions{}
	p.setMode("manual")
	if got := p.refusal(theSpec().Tools["bash"], decision{}, approvalAnswer{Choice: "deny", Why: "timeout"}); got != theSpec().Loop.Permission["timeout"] {
		t.Errorf("timeout refusal %q", got)
	}
}

func TestUnifiedDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n"
	b := "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\ntwelve"
	want := "--- a/f\n+++ b/f\n@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7\n@@ -9,3 +9,4 @@\n 9\n 10\n 11\n+twelve\n\\ No newline at end of file\n"
	if got := unifiedDiff("f", a, b); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := unifiedDiff("f", "", "x\n"); got != "--- a/f\n+++ b/f\n@@ -1,0 +1,1 @@\n+x\n" {
		t.Errorf("new file: %q", got)
	}
}

// BenchmarkDecide times one bash command through the whole decision: the
// floor, spelling it plainly, the rules and defaults, the mode.
func BenchmarkDecide(b *testing.B) {
	root := b.TempDir()
	p := permissionsFor("manual", root, false, &config{Permissions: permRules{Allow: []string{"bash: npm run test *"}, Deny: []string{"bash: curl *"}}})
	t := theSpec().Tools["bash"]
	args := json.RawMessage(`{"command":"git status && git diff --stat HEAD~1 | grep -v vendor"}`)
	for i := 0; i < b.N; i++ {
		if d := p.decide(t, args); d.Verdict != "allow" {
			b.Fatalf("decision %+v", d)
		}
	}
}

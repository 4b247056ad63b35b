package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLibraryMemoryTool: the model's memory calls through the engine land
// in the state folder, a batch over the limit changes nothing, and the
// next session's system prompt shows the records.
func TestLibraryMemoryTool(t *testing.T) {
	_, st := libEnv(t, nil)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"memory", map[string]any{"changes": []any{
		map[string]any{"action": "add", "target": "user", "text": "Prefers short answers."},
		map[string]any{"action": "add", "target": "project", "text": "Tests need -tags integration."},
	}}}), textReply("kept"))
	e, _ := newTestEngine(t, f, "edit", map[string]string{"a.txt": "A\n"})
	out := e.runTurn(context.Background(), "remember these")
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	res := toolResults(f.got()[1])
	if len(res) != 1 || !strings.Contains(res[0], "Memory changed (2 change(s))") || !strings.Contains(res[0], "- Tests need -tags integration.") {
		t.Fatalf("result: %q", res)
	}
	if _, err := os.Stat(filepath.Join(st, "lembas", "memory", "user.json")); err != nil {
		t.Fatalf("no user memory file: %v", err)
	}
	// Over the limit: nothing changes on disk.
	big := strings.Repeat("x", theSpec().Tools["memory"].limit("user_limit"))
	before, _ := os.ReadFile(filepath.Join(st, "lembas", "memory", "user.json"))
	r := runLibTool(t, e, "memory", map[string]any{"changes": []any{
		map[string]any{"action": "remove", "target": "user", "old": "short answers"},
		map[string]any{"action": "add", "target": "user", "text": "ok"},
		map[string]any{"action": "add", "target": "user", "text": big},
	}})
	after, _ := os.ReadFile(filepath.Join(st, "lembas", "memory", "user.json"))
	if !r.IsError || !strings.Contains(r.Text, "over its limit") || !bytes.Equal(before, after) {
		t.Errorf("over the limit: %v %q; file changed %v", r.IsError, r.Text, !bytes.Equal(before, after))
	}
	// A new session of the same project, and one of another project.
	sys, err := systemPrompt(e.perm.root, "manual", "/bin/sh", nil)
	if err != nil || !strings.Contains(sys, "- Prefers short answers.") || !strings.Contains(sys, "- Tests need -tags integration.") {
		t.Errorf("next session's prompt: %v\n%s", err, sys)
	}
	other, _ := filepath.EvalSymlinks(t.TempDir())
	if sys, _ := systemPrompt(other, "manual", "/bin/sh", nil); !strings.Contains(sys, "Prefers short answers.") || strings.Contains(sys, "integration") {
		t.Errorf("another project's prompt:\n%s", sys)
	}
}

// TestLibraryMemoryInPlanMode: memory is a write, refused in plan mode
// and asked in manual (here: headless, so refused) — the file stays.
func TestLibraryMemoryInPlanMode(t *testing.T) {
	_, st := libEnv(t, nil)
	for _, mode := range []string{"plan", "manual"} {
		f := newFakeModel(t)
		f.push(callsReply(fakeCall{"memory", map[string]any{"action": "add", "target": "user", "text": "x"}}), textReply("ok"))
		e, _ := newTestEngine(t, f, mode, nil)
		e.runTurn(context.Background(), "go")
		if res := toolResults(f.got()[1]); len(res) != 1 || strings.Contains(res[0], "Memory changed") {
			t.Errorf("%s: %q", mode, res)
		}
		if _, err := os.Stat(filepath.Join(st, "lembas", "memory", "user.json")); err == nil {
			t.Errorf("%s: memory written", mode)
		}
	}
}

// TestLibraryMemoryCommand: lembas memory list, show and rm, and the
// note /memory rm leaves for the model.
func TestLibraryMemoryCommand(t *testing.T) {
	libEnv(t, nil)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	tool := theSpec().Tools["memory"]
	memoryFor(root).apply(func(r map[string][]memRecord) (map[string][]memRecord, error) {
		return applyMemory(tool, r, []memChange{{Action: "add", Target: "user", Text: "one"}, {Action: "add", Target: "user", Text: "two"},
			{Action: "add", Target: "project", Text: "proj"}}, memLimits(tool), time.Now())
	})
	var out, errb bytes.Buffer
	if code := run([]string{"memory", "list", "--cwd", root}, nil, &out, &errb); code != 0 {
		t.Fatalf("list: %d %s", code, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "  1. one\n  2. two\n") || !strings.Contains(s, "  1. proj") || !strings.Contains(s, "6/2000") {
		t.Errorf("list:\n%s", s)
	}
	out.Reset()
	if code := run([]string{"memory", "rm", "--cwd", root, "user", "1"}, nil, &out, &errb); code != 0 {
		t.Fatalf("rm: %d %s", code, errb.String())
	}
	recs, _ := memoryFor(root).load("user")
	if len(recs) != 1 || recs[0].Text != "two" {
		t.Errorf("after rm: %+v", recs)
	}
	if code := run([]string{"memory", "rm", "--cwd", root, "user", "7"}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "has no record 7") {
		t.Errorf("rm 7: %d %s", code, errb.String())
	}
	if code := run([]string{"memory", "rm", "--cwd", root, "team", "1"}, nil, &out, &errb); code != 2 {
		t.Errorf("rm team: %d", code)
	}
	note, err := removeMemory(root, "project", 0)
	if err != nil || !strings.Contains(note, "cleared the project memory") {
		t.Errorf("clear: %q %v", note, err)
	}
	if recs, _ := memoryFor(root).load("project"); len(recs) != 0 {
		t.Errorf("not cleared: %+v", recs)
	}
}

// TestLibraryMemoryConcurrent: two processes' worth of memory changes at
// once both land (the memory folder's lock).
func TestLibraryMemoryConcurrent(t *testing.T) {
	libEnv(t, nil)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	tool := theSpec().Tools["memory"]
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func(i int) {
			done <- memoryFor(root).apply(func(r map[string][]memRecord) (map[string][]memRecord, error) {
				return applyMemory(tool, r, []memChange{{Action: "add", Target: "project", Text: strings.Repeat("r", i+1)}}, memLimits(tool), time.Now())
			})
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if recs, _ := memoryFor(root).load("project"); len(recs) != 8 {
		t.Errorf("%d records, want 8", len(recs))
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// newTestToolbox makes a toolbox over a fresh project with files.
func newTestToolbox(t *testing.T, files map[string]string) *toolbox {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for p, c := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(abs), 0o755)
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb, err := newToolbox(root, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tb.mu.Lock()
		sb := tb.sandbox
		tb.mu.Unlock()
		if sb != nil {
			sb.close()
		}
	})
	return tb
}

// call runs a tool the way the engine does: arguments checked, then run.
func call(t *testing.T, tb *toolbox, name string, args any) toolResult {
	t.Helper()
	raw, _ := json.Marshal(args)
	tool := tb.lookup(name)
	if tool == nil {
		t.Fatalf("no tool %s", name)
	}
	return tb.run(context.Background(), tool, raw)
}

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 2500)
	tb := newTestToolbox(t, map[string]string{
		"a.txt": "one\ntwo\r\nthree\n", "long.txt": long + "\n", "bin.dat": "ab\x00cd",
		"empty.txt": "", "dir/f": "f", "img.png": "\x89PNG\r\n\x1a\nrest",
	})
	for _, c := range []struct {
		args any
		want string
		err  bool
	}{
		{map[string]any{"path": "a.txt"}, "1\tone\n2\ttwo\n3\tthree", false},
		{map[string]any{"path": "a.txt", "offset": 2, "limit": 1}, "2\ttwo\n[1 of 3 lines shown; read on with offset 3]", false},
		{map[string]any{"path": "a.txt", "offset": "3"}, "3\tthree", false},
		{map[string]any{"path": "a.txt", "offset": 9}, "a.txt has 3 lines; offset 9 is past the end.", true},
		{map[string]any{"path": "dir"}, "dir is a directory; use list to see what is in it.", false},
		{map[string]any{"path": "bin.dat"}, "bin.dat looks like a binary file (5 bytes); it was not read.", false},
		{map[string]any{"path": "empty.txt"}, "empty.txt is empty.", false},
		{map[string]any{"path": "img.png"}, "img.png is an image and this model cannot see images; it was not read.", false},
		{map[string]any{"path": "nope.txt"}, "nope.txt: No such file or directory", true},
		{map[string]any{"path": filepath.Join(tb.root, "a.txt")}, "1\tone", false},
		{map[string]any{}, "path is missing", true},
		{map[string]any{"path": "a.txt", "bogus": 1}, "bogus is not an argument of this tool", true},
		{map[string]any{"path": "a.txt", "offset": 1.5}, "offset must be an integer", true},
	} {
		r := call(t, tb, "read", c.args)
		if !strings.Contains(r.Text, c.want) || r.IsError != c.err {
			t.Errorf("read %v: got %q (error %v), want %q (error %v)", c.args, r.Text, r.IsError, c.want, c.err)
		}
	}
	r := call(t, tb, "read", map[string]any{"path": "long.txt"})
	if !strings.Contains(r.Text, "… [line cut at 2000 characters]") || len(r.Text) > 2100 {
		t.Errorf("long line not cut: %d bytes", len(r.Text))
	}
	tb.vision = true
	r = call(t, tb, "read", map[string]any{"path": "img.png"})
	if len(r.Images) != 1 || r.Images[0].Mime != "image/png" {
		t.Errorf("image not attached for a vision model: %+v", r)
	}
}

func TestWriteAndEdit(t *testing.T) {
	tb := newTestToolbox(t, map[string]string{"a.txt": "alpha\nbeta\nalpha\n", "crlf.txt": "one\r\ntwo\r\n", "nonl.txt": "x = 1"})
	os.Chmod(filepath.Join(tb.root, "a.txt"), 0o750)
	// Overwriting or editing an unread file is refused.
	if r := call(t, tb, "write", map[string]any{"path": "a.txt", "content": "new"}); !r.IsError || !strings.Contains(r.Text, "has not been read in this session; read it first") {
		t.Errorf("write unread: %q", r.Text)
	}
	if r := call(t, tb, "edit", map[string]any{"path": "a.txt", "old_string": "beta", "new_string": "b"}); !r.IsError || !strings.Contains(r.Text, "read it first") {
		t.Errorf("edit unread: %q", r.Text)
	}
	call(t, tb, "read", map[string]any{"path": "a.txt"})
	if r := call(t, tb, "edit", map[string]any{"path": "a.txt", "old_string": "alpha", "new_string": "A"}); !r.IsError || !strings.Contains(r.Text, "occurs 2 times in a.txt (lines 1, 3)") {
		t.Errorf("several: %q", r.Text)
	}
	if r := call(t, tb, "edit", map[string]any{"path": "a.txt", "old_string": "betta", "new_string": "b"}); !r.IsError || !strings.Contains(r.Text, "2\tbeta") {
		t.Errorf("not found should show the nearest lines: %q", r.Text)
	}
	if r := call(t, tb, "edit", map[string]any{"path": "a.txt", "old_string": "alpha", "new_string": "A", "replace_all": true}); r.IsError || !strings.Contains(r.Text, "2 replacement(s)") {
		t.Errorf("replace_all: %q", r.Text)
	}
	data, _ := os.ReadFile(filepath.Join(tb.root, "a.txt"))
	st, _ := os.Stat(filepath.Join(tb.root, "a.txt"))
	if string(data) != "A\nbeta\nA\n" || st.Mode().Perm() != 0o750 {
		t.Errorf("after edit: %q %v", data, st.Mode())
	}
	// The file changed on disk behind the session's back.
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(filepath.Join(tb.root, "a.txt"), []byte("changed elsewhere\n"), 0o750)
	if r := call(t, tb, "edit", map[string]any{"path": "a.txt", "old_string": "changed", "new_string": "c"}); !r.IsError || !strings.Contains(r.Text, "changed on disk since it was read") {
		t.Errorf("stale: %q", r.Text)
	}
	// CRLF kept, final newline (or its absence) kept.
	call(t, tb, "read", map[string]any{"path": "crlf.txt"})
	if r := call(t, tb, "edit", map[string]any{"path": "crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2\n3"}); r.IsError {
		t.Errorf("crlf edit: %q", r.Text)
	}
	data, _ = os.ReadFile(filepath.Join(tb.root, "crlf.txt"))
	if string(data) != "1\r\n2\r\n3\r\n" {
		t.Errorf("crlf: %q", data)
	}
	call(t, tb, "read", map[string]any{"path": "nonl.txt"})
	call(t, tb, "edit", map[string]any{"path": "nonl.txt", "old_string": "1", "new_string": "2"})
	if data, _ = os.ReadFile(filepath.Join(tb.root, "nonl.txt")); string(data) != "x = 2" {
		t.Errorf("final newline: %q", data)
	}
	// multiedit: all or nothing.
	call(t, tb, "read", map[string]any{"path": "nonl.txt"})
	r := call(t, tb, "multiedit", map[string]any{"path": "nonl.txt", "edits": []any{
		map[string]any{"old_string": "x", "new_string": "y"}, map[string]any{"old_string": "zzz", "new_string": "q"}}})
	if !r.IsError || !strings.Contains(r.Text, "edit 2 of 2:") {
		t.Errorf("multiedit failure: %q", r.Text)
	}
	if data, _ = os.ReadFile(filepath.Join(tb.root, "nonl.txt")); string(data) != "x = 2" {
		t.Errorf("multiedit was not all or nothing: %q", data)
	}
	r = call(t, tb, "multiedit", map[string]any{"path": "nonl.txt", "edits": []any{
		map[string]any{"old_string": "x", "new_string": "y"}, map[string]any{"old_string": "y = 2", "new_string": "y = 3"}}})
	if data, _ = os.ReadFile(filepath.Join(tb.root, "nonl.txt")); r.IsError || string(data) != "y = 3" {
		t.Errorf("multiedit in order: %q %q", r.Text, data)
	}
	// write: new files and folders; no partial files left behind.
	if r := call(t, tb, "write", map[string]any{"path": "deep/new/f.txt", "content": "hi\n"}); r.IsError || !strings.Contains(r.Text, "Created deep/new/f.txt (1 lines)") {
		t.Errorf("write new: %q", r.Text)
	}
	ents, _ := os.ReadDir(filepath.Join(tb.root, "deep/new"))
	if len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}

func TestApplyPatchTool(t *testing.T) {
	tb := newTestToolbox(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "gone.txt": "x\n"})
	patch := "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n three\n*** Add File: b/new.txt\n+hello\n*** Delete File: gone.txt\n*** End Patch\n"
	r := call(t, tb, "apply_patch", map[string]any{"input": patch})
	if r.IsError {
		t.Fatalf("patch: %s", r.Text)
	}
	a, _ := os.ReadFile(filepath.Join(tb.root, "a.txt"))
	b, _ := os.ReadFile(filepath.Join(tb.root, "b/new.txt"))
	_, gone := os.Stat(filepath.Join(tb.root, "gone.txt"))
	if string(a) != "one\n2\nthree\n" || string(b) != "hello\n" || gone == nil {
		t.Errorf("after patch: %q %q %v", a, b, gone)
	}
	// A failing hunk changes nothing.
	bad := "*** Begin Patch\n*** Add File: c.txt\n+c\n*** Update File: a.txt\n@@\n-nothere\n+x\n*** End Patch\n"
	r = call(t, tb, "apply_patch", map[string]any{"input": bad})
	if _, err := os.Stat(filepath.Join(tb.root, "c.txt")); !r.IsError || err == nil {
		t.Errorf("failed patch applied in part: %q", r.Text)
	}
}

func TestSearchTools(t *testing.T) {
	tb := newTestToolbox(t, map[string]string{
		".gitignore": "build/\n*.log\n!keep.log\n", "src/a.go": "package a // TODO\n", "src/b.txt": "nothing\nTODO: b\n",
		"build/out.txt": "TODO", "x.log": "TODO", "keep.log": "TODO log", "sub/.ignore": "secret.txt\n", "sub/secret.txt": "TODO",
		"sub/ok.txt": "todo lower", ".git/config": "TODO", ".hidden/h.txt": "TODO h",
	})
	// The Go search, then ripgrep (handed every tree past one file).
	limits := theSpec().Tools["grep"].Limits
	defer func(v float64) { limits["rg_above_files"] = v }(limits["rg_above_files"])
	for _, noRG := range []string{"1", ""} {
		t.Setenv("LEMBAS_NO_RG", noRG)
		if noRG == "" {
			if rgPath() == "" {
				t.Log("ripgrep is not on PATH; only the Go search was checked")
				continue
			}
			limits["rg_above_files"] = 1
		}
		r := call(t, tb, "grep", map[string]any{"pattern": "TODO"})
		want := ".hidden/h.txt:1:TODO h\nkeep.log:1:TODO log\nsrc/a.go:1:package a // TODO\nsrc/b.txt:2:TODO: b"
		if r.Text != want {
			t.Errorf("grep (no rg %q):\n%s\nwant\n%s", noRG, r.Text, want)
		}
		r = call(t, tb, "grep", map[string]any{"pattern": "todo", "ignore_case": true, "include": "*.txt"})
		if r.Text != ".hidden/h.txt:1:TODO h\nsrc/b.txt:2:TODO: b\nsub/ok.txt:1:todo lower" {
			t.Errorf("grep -i include (no rg %q): %q", noRG, r.Text)
		}
		if r := call(t, tb, "grep", map[string]any{"pattern": "TODO", "path": "src"}); r.Text != "src/a.go:1:package a // TODO\nsrc/b.txt:2:TODO: b" {
			t.Errorf("grep in a folder (no rg %q): %q", noRG, r.Text)
		}
	}
	if r := call(t, tb, "grep", map[string]any{"pattern": "("}); !r.IsError {
		t.Errorf("bad regexp: %q", r.Text)
	}
	if r := call(t, tb, "glob", map[string]any{"pattern": "*.txt"}); r.Text != ".hidden/h.txt\nsrc/b.txt\nsub/ok.txt" {
		t.Errorf("glob: %q", r.Text)
	}
	if r := call(t, tb, "glob", map[string]any{"pattern": "src/*.{go,txt}"}); r.Text != "src/a.go\nsrc/b.txt" {
		t.Errorf("glob braces: %q", r.Text)
	}
	if r := call(t, tb, "list", map[string]any{}); r.Text != ".gitignore\n.hidden/\n  h.txt\nkeep.log\nsrc/\n  a.go\n  b.txt\nsub/\n  .ignore\n  ok.txt" {
		t.Errorf("list:\n%s", r.Text)
	}
	if r := call(t, tb, "list", map[string]any{"path": "src", "depth": 1}); r.Text != "a.go\nb.txt" {
		t.Errorf("list src: %q", r.Text)
	}
}

// TestGrepCaps checks that a big answer is capped and says how much was left.
func TestGrepCaps(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 250; i++ {
		b.WriteString("match\n")
	}
	tb := newTestToolbox(t, map[string]string{"m.txt": b.String()})
	r := call(t, tb, "grep", map[string]any{"pattern": "match"})
	if n := strings.Count(r.Text, "m.txt:"); n != 200 || !strings.Contains(r.Text, "[50 more matches not shown") {
		t.Errorf("%d lines; tail %q", n, r.Text[len(r.Text)-80:])
	}
}

func TestBash(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX shell")
	}
	tb := newTestToolbox(t, map[string]string{"f.txt": "content\n"})
	tb.shell = "/bin/sh"
	if r := call(t, tb, "bash", map[string]any{"command": "cat f.txt; echo err >&2"}); r.IsError || r.Text != "content\nerr\n[exit status 0]" {
		t.Errorf("bash: %q", r.Text)
	}
	if r := call(t, tb, "bash", map[string]any{"command": "exit 3"}); !r.IsError || r.Text != "(no output)\n[exit status 3]" {
		t.Errorf("exit 3: %q", r.Text)
	}
	if r := call(t, tb, "bash", map[string]any{"command": "read x; echo got:$x"}); r.Text != "got:\n[exit status 0]" {
		t.Errorf("stdin should be empty: %q", r.Text)
	}
	// A timeout kills the whole group: the background child too.
	pidFile := filepath.Join(tb.root, "child.pid")
	r := call(t, tb, "bash", map[string]any{"command": "sleep 60.125 & echo $! > child.pid; wait", "timeout": 1})
	if !r.IsError || !strings.Contains(r.Text, "timed out after 1 s") {
		t.Errorf("timeout: %q", r.Text)
	}
	pid, _ := os.ReadFile(pidFile)
	if !childGone(strings.TrimSpace(string(pid)), "60.125", 5*time.Second) {
		t.Errorf("the child %s outlived the timeout", pid)
	}
	// Cancel kills too.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	res := tb.run(ctx, tb.lookup("bash"), json.RawMessage(`{"command":"sleep 30"}`))
	if res.Status != "cancelled" {
		t.Errorf("cancel: %+v", res)
	}
}

// alive says whether a process runs (a zombie waiting for a reaper does not).
func alive(pid string) bool {
	if runtime.GOOS == "linux" {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return false
		}
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		return len(f) > 0 && f[0] != "Z"
	}
	return exec.Command("kill", "-0", pid).Run() == nil
}

// goneWithin waits for a killed process to finish dying: a kill is
// delivered at once, but a loaded machine may take a moment to reap it.
// childGone waits for a command's child to end: by its pid, or (on Linux,
// where the command ran in the session's world and the pid is the pid
// namespace's) by the argument of its sleep.
func childGone(pid, sleepArg string, d time.Duration) bool {
	if runtime.GOOS != "linux" {
		return goneWithin(pid, d)
	}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !sleepAlive(sleepArg) {
			return true
		}
	}
	return !sleepAlive(sleepArg)
}

func goneWithin(pid string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return !alive(pid)
}

func TestCapOutput(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		b.WriteString("line\n")
	}
	out, capped := capOutput(strings.TrimSuffix(b.String(), "\n"), "0007")
	if !capped || !strings.Contains(out, "[650 lines elided, full output #0007]") || strings.Count(out, "\n")+1 != 351 {
		t.Errorf("lines cap: capped %v, %d lines", capped, strings.Count(out, "\n"))
	}
	out, capped = capOutput(strings.Repeat("é", 30000), "0008")
	if !capped || !strings.Contains(out, "characters elided, full output #0008]") || len(out) > 40100 {
		t.Errorf("chars cap: %v %d", capped, len(out))
	}
	if out, capped := capOutput("short", "1"); capped || out != "short" {
		t.Errorf("short: %q", out)
	}
}

func TestResolvePath(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	os.Symlink(outside, filepath.Join(root, "link"))
	for _, c := range []struct {
		p      string
		inside bool
	}{
		{"a/b.txt", true}, {"./a/../b", true}, {"../x", false}, {"link/f", false}, {"/etc/passwd", false},
		{filepath.Join(root, "x"), true}, {"a/../../x", false}, {"file://" + filepath.Join(root, "y"), true},
	} {
		if _, in := resolvePath(root, c.p); in != c.inside {
			t.Errorf("%s: inside %v, want %v", c.p, in, c.inside)
		}
	}
}

// TestWriteGuardSeesLinkChange: a folder swapped for a link to a protected
// place after the permission check is caught when the file is written.
func TestWriteGuardSeesLinkChange(t *testing.T) {
	tb := newTestToolbox(t, map[string]string{"sub/a.txt": "x\n"})
	secret := t.TempDir()
	tb.protected = func(abs string) bool { return strings.HasPrefix(abs, secret) }
	// The check happened (sub/ was an ordinary folder); now sub is a link.
	os.RemoveAll(filepath.Join(tb.root, "sub"))
	if err := os.Symlink(secret, filepath.Join(tb.root, "sub")); err != nil {
		t.Skip("no symlinks here")
	}
	r := call(t, tb, "write", map[string]any{"path": "sub/new.txt", "content": "pwned\n"})
	if !r.IsError || !strings.Contains(r.Text, "protected file now") {
		t.Errorf("write through a swapped link: %q", r.Text)
	}
	if _, err := os.Stat(filepath.Join(secret, "new.txt")); err == nil {
		t.Error("the file was written into the protected place")
	}
}

// TestHarnessToolsClosed: a harness tool's objects, nested ones too, take
// only the properties they name though the schema sent does not say
// additionalProperties; an outside schema (an MCP server's) stays open.
func TestHarnessToolsClosed(t *testing.T) {
	pu := theSpec().Tools["plan_update"]
	if strings.Contains(string(pu.Parameters), "additionalProperties") {
		t.Fatal("plan_update's schema says additionalProperties: the test checks nothing")
	}
	if _, err := checkArgs(pu, json.RawMessage(`{"tasks":[{"id":"t1","bogus":1}]}`), nil); err == nil || !strings.Contains(err.Error(), "tasks[0].bogus is not an argument of this tool") {
		t.Errorf("a nested unknown argument: %v", err)
	}
	if _, err := checkArgs(pu, json.RawMessage(`{"tasks":[{"id":"t1","status":"done"}]}`), nil); err != nil {
		t.Errorf("a valid call refused: %v", err)
	}
	open := &toolSpec{Name: "x", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
	if _, err := checkArgs(open, json.RawMessage(`{"a":"1","extra":2}`), nil); err != nil {
		t.Errorf("an outside schema without additionalProperties is open: %v", err)
	}
}

// TestReadImagesNoteByVision: read's description says an image is attached
// only to a model that sees images; the others are not sent the words.
func TestReadImagesNoteByVision(t *testing.T) {
	for _, vision := range []bool{true, false} {
		tb, err := newToolbox(t.TempDir(), vision)
		if err != nil {
			t.Fatal(err)
		}
		var defs []struct {
			Function struct{ Name, Description string } `json:"function"`
		}
		if err := json.Unmarshal(tb.defs, &defs); err != nil {
			t.Fatal(err)
		}
		for _, d := range defs {
			if d.Function.Name != "read" {
				continue
			}
			if got := strings.Contains(d.Function.Description, "image"); got != vision {
				t.Errorf("vision %v: read's description %q", vision, d.Function.Description)
			}
		}
	}
}

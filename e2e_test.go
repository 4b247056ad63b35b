package main

// End to end: the real binary, built once, runs `lembas -p` as a
// subprocess against the scripted fake model on a fixture project copied
// to a temp folder, and the test checks the files on disk, stdout, the JSON
// output, the session store and the exit code.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binDir  string // removed by TestMain when the run ends
	binPath string
	binErr  error
)

// lembasBin builds the binary once per test run.
func lembasBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lembas-bin")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "lembas")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("building lembas: %v\n%s", binErr, binPath)
	}
	return binPath
}

// copyProject copies a fixture project into a fresh temp folder.
func copyProject(t testing.TB, name string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "projects", name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := filepath.EvalSymlinks(dst)
	return r
}

type runResult struct {
	stdout, stderr string
	code           int
}

// runLembas runs the binary in dir with a clean environment of its own.
func runLembas(t testing.TB, env []string, dir string, stdin string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(lembasBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return runResult{out.String(), errb.String(), code}
}

// scriptTask queues the whole task: list → read → grep → edit → bash → answer.
func scriptTask(f *fakeModel) {
	f.push(
		callsReply(fakeCall{"list", map[string]any{"path": "."}}),
		callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}),
		callsReply(fakeCall{"grep", map[string]any{"pattern": "TODO"}}),
		callsReply(fakeCall{"edit", map[string]any{"path": "src/app.txt", "old_string": "TODO", "new_string": "DONE"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "cat src/app.txt"}}),
		textReply("Replaced TODO with DONE in src/app.txt."),
	)
}

func TestEndToEnd(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fixture task runs cat through a POSIX shell")
	}
	for _, chunk := range []int{0, 1, 7} {
		f := newFakeModel(t)
		f.chunk = chunk
		scriptTask(f)
		proj := copyProject(t, "basic")
		state := t.TempDir()
		env := []string{"OPENAI_BASE_URL=" + f.url(), "OPENAI_API_KEY=x", "LEMBAS_MODEL=mock",
			"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + t.TempDir()}
		r := runLembas(t, env, proj, "", "--mode", "auto", "--output-format", "json", "-p", "replace TODO with DONE in src/app.txt, then cat it")
		if r.code != 0 {
			t.Fatalf("chunk %d: exit %d\nstderr: %s\nstdout: %s", chunk, r.code, r.stderr, r.stdout)
		}
		data, _ := os.ReadFile(filepath.Join(proj, "src/app.txt"))
		if string(data) != "status: DONE\n" {
			t.Errorf("chunk %d: src/app.txt = %q", chunk, data)
		}
		var out headlessOutput
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
		}
		if out.Answer != "Replaced TODO with DONE in src/app.txt." || out.StopReason != "end_turn" || out.SessionID == "" || out.Model != "openai/mock" {
			t.Errorf("json output %+v", out)
		}
		var names []string
		for _, c := range out.ToolCalls {
			names = append(names, c.Name+":"+c.Status)
		}
		if got := strings.Join(names, " "); got != "list:completed read:completed grep:completed edit:completed bash:completed" {
			t.Errorf("tool calls %s", got)
		}
		if out.Usage.Input != 5*200+100 || out.Usage.Cached != 80 {
			t.Errorf("usage %+v", out.Usage)
		}
		reqs := f.got()
		if len(reqs) != 6 {
			t.Fatalf("%d requests, want 6", len(reqs))
		}
		// What the model was told, step by step.
		last := toolResults(reqs[5])
		checks := []string{"src/", "1\tstatus: TODO", "src/app.txt:1:status: TODO", "Edited src/app.txt: 1 replacement(s).", "status: DONE\n[exit status 0]"}
		for i, want := range checks {
			if i >= len(last) || !strings.Contains(last[i], want) {
				t.Errorf("result %d does not contain %q: %q", i, want, last)
			}
		}
		if strings.Contains(last[2], "build/out.txt") {
			t.Errorf("grep searched an ignored folder: %q", last[2])
		}
		// The prefix stays still: each request begins with the previous one's messages.
		for i := 1; i < len(reqs); i++ {
			prev, cur := reqs[i-1].Body.Messages, reqs[i].Body.Messages
			for j := range prev {
				if !bytes.Equal(prev[j], cur[j]) {
					t.Errorf("request %d changed message %d of the one before", i, j)
					break
				}
			}
		}
		if bytes.Contains(reqs[0].Raw, []byte(proj)) {
			t.Errorf("the first request carries the project's absolute path")
		}
		// The session is on disk, and `sessions show` prints the answer verbatim.
		show := runLembas(t, env, proj, "", "sessions", "show", out.SessionID)
		if show.code != 0 || !strings.Contains(show.stdout, "Replaced TODO with DONE in src/app.txt.") {
			t.Errorf("sessions show: %d %s %s", show.code, show.stdout, show.stderr)
		}
	}
}

// TestEndToEndTextAndStream checks the text and stream-json formats, and
// that a manual-mode run refuses an edit with a reason the model can read.
func TestEndToEndHeadlessRefusal(t *testing.T) {
	f := newFakeModel(t)
	f.push(
		callsReply(fakeCall{"edit", map[string]any{"path": "src/app.txt", "old_string": "TODO", "new_string": "DONE"}}),
		textReply("I could not edit the file."),
	)
	proj := copyProject(t, "basic")
	env := []string{"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	r := runLembas(t, env, proj, "", "--output-format", "stream-json", "-p", "edit it")
	// The edit was refused: the task is not done (exit 5), and stderr
	// names the mode and the --mode that would have let it run.
	if r.code != exitNotDone || !strings.Contains(r.stderr, "manual mode") || !strings.Contains(r.stderr, "--mode edit") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, _ := os.ReadFile(filepath.Join(proj, "src/app.txt"))
	if string(data) != "status: TODO\n" {
		t.Errorf("manual mode wrote the file: %q", data)
	}
	res := toolResults(f.got()[1])
	if len(res) != 1 || !strings.Contains(res[0], "needs the person's approval in manual mode") {
		t.Errorf("refusal result %q", res)
	}
	var types, phases []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stream-json line is not JSON: %q", line)
		}
		if ev.Type == evProgress && len(types) > 0 && types[len(types)-1] == evDone {
			t.Errorf("stream-json printed progress %q after done", ev.Progress.Phase)
		}
		if ev.Type == evProgress {
			phases = append(phases, ev.Progress.Phase) // progress.go
		} else if ev.Type != evText && ev.Type != evReasoning {
			types = append(types, ev.Type)
		}
		if ev.Type == evToolEnd && ev.Tool.Status != "refused" {
			t.Errorf("tool_end status %q, want refused", ev.Tool.Status)
		}
	}
	if got := strings.Join(types, " "); got != "prompt step usage tool_start tool_end step usage done" {
		t.Errorf("events %s", got)
	}
	if got := strings.Join(phases, " "); got != "waiting_for_model writing" { // the refused call never ran
		t.Errorf("progress phases %s", got)
	}
	// A turn stopped at its step limit: done is the last event, no
	// "stopped" progress after it.
	f.push(callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}))
	r = runLembas(t, env, proj, "", "--output-format", "stream-json", "--max-steps", "1", "-p", "read it")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last event
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if last.Type != evDone || last.StopReason != "max_turn_requests" {
		t.Errorf("the stream's last event is %+v, not done (max_turn_requests); it printed:\n%s", last, r.stdout)
	}
	// Text format: only the final answer on stdout.
	f.push(textReply("Just this."))
	r = runLembas(t, env, proj, "", "-p", "hi")
	if r.code != 0 || r.stdout != "Just this.\n" {
		t.Errorf("text format: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// The prompt from stdin, with -p -.
	f.push(textReply("From stdin."))
	r = runLembas(t, env, proj, "the prompt", "-p", "-")
	if r.code != 0 || r.stdout != "From stdin.\n" {
		t.Errorf("stdin prompt: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if m := f.got()[len(f.got())-1].messages(); !strings.HasSuffix(fmt.Sprint(m[len(m)-1]["content"]), "\n\nthe prompt") {
		t.Errorf("stdin prompt sent as %v", m[len(m)-1]["content"])
	}
}

func TestEndToEndExitCodes(t *testing.T) {
	f := newFakeModel(t)
	proj := copyProject(t, "basic")
	env := []string{"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	if r := runLembas(t, env, proj, "", "--output-format", "yaml", "-p", "x"); r.code != 2 || !strings.Contains(r.stderr, "use text, json or stream-json") {
		t.Errorf("bad format: %d %q", r.code, r.stderr)
	}
	if r := runLembas(t, env, proj, "", "--mode", "wild", "-p", "x"); r.code != 2 || !strings.Contains(r.stderr, "unknown mode") {
		t.Errorf("bad mode: %d %q", r.code, r.stderr)
	}
	f.push(fakeReply{status: 401, body: `{"error":{"message":"no"}}`})
	if r := runLembas(t, env, proj, "", "-p", "x"); r.code != 1 || !strings.Contains(r.stderr, "openai refused the API key (HTTP 401); check $OPENAI_API_KEY.") {
		t.Errorf("auth failure: %d %q", r.code, r.stderr)
	}
	f.push(callsReply(fakeCall{"list", map[string]any{}}), callsReply(fakeCall{"list", map[string]any{}}))
	if r := runLembas(t, env, proj, "", "--max-steps", "2", "-p", "x"); r.code != 1 || !strings.Contains(r.stderr, "step limit") {
		t.Errorf("step limit: %d %q", r.code, r.stderr)
	}
	if r := runLembas(t, env, proj, "", "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "lembas ") || !strings.HasSuffix(r.stdout, ", harness spec "+harnessVersion()+"\n") {
		t.Errorf("--version: %q", r.stdout)
	}
}

func TestEndToEndModelsAndCwd(t *testing.T) {
	f := newFakeModel(t, "mock", "second")
	proj := copyProject(t, "basic")
	cfgDir := t.TempDir()
	os.MkdirAll(filepath.Join(cfgDir, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfgDir, "lembas", "config.yaml"), []byte("connections:\n  mine:\n    base_url: "+f.url()+"\n    models: [declared]\n"), 0o600)
	env := []string{"OPENAI_BASE_URL=" + f.url(), "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfgDir}
	r := runLembas(t, env, proj, "", "models")
	want := "mine/declared\tconfig.yaml\nopenai/mock\tenvironment (OPENAI_BASE_URL)\nopenai/second\tenvironment (OPENAI_BASE_URL)\n"
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Errorf("models: %d\n%s\nwant prefix\n%s", r.code, r.stdout, want)
	}
	// --cwd runs in another folder; a bare name finds its connection.
	f.push(callsReply(fakeCall{"read", map[string]any{"path": "README.md"}}), textReply("read it"))
	r = runLembas(t, env, t.TempDir(), "", "--cwd", proj, "--model", "second", "-p", "read the readme")
	if r.code != 0 || r.stdout != "read it\n" {
		t.Fatalf("--cwd: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if res := toolResults(f.got()[1]); len(res) != 1 || !strings.Contains(res[0], "1\t# Basic") {
		t.Errorf("read in --cwd: %q", res)
	}
	if r := runLembas(t, env, proj, "", "--cwd", filepath.Join(proj, "nope"), "-p", "x"); r.code != 2 {
		t.Errorf("bad --cwd: %d %q", r.code, r.stderr)
	}
	if r := runLembas(t, env, proj, "", "config", "get", "connections.mine.base_url"); r.code != 0 || strings.TrimSpace(r.stdout) != f.url() {
		t.Errorf("config get: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestGrepKeepsSecretsOut: a search of the project never puts a protected
// file's lines (.env, keys) into the prompt; it says how many it left out.
func TestGrepKeepsSecretsOut(t *testing.T) {
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"grep", map[string]any{"pattern": "TODO"}}), textReply("searched"))
	proj := copyProject(t, "basic")
	os.WriteFile(filepath.Join(proj, ".env"), []byte("API_KEY=TODO-SECRET-VALUE\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "id_ed25519"), []byte("TODO-PRIVATE-KEY\n"), 0o644)
	env := []string{"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	if r := runLembas(t, env, proj, "", "-p", "find the TODOs"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := toolResults(f.got()[1])
	if len(res) != 1 || strings.Contains(res[0], "SECRET") || strings.Contains(res[0], "PRIVATE") {
		t.Fatalf("a protected file's lines reached the model: %q", res)
	}
	if !strings.Contains(res[0], "src/app.txt:1:status: TODO") || !strings.Contains(res[0], "2 protected file(s) were not searched") {
		t.Errorf("grep result %q", res[0])
	}
}

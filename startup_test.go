package main

// The start-up conformance area (harness/conformance/startup.json): which
// harness files a command reads before its first model request. Each case
// runs in a fresh helper process — the test binary again, running
// TestHelperStartupReads — because in this process every spec is parsed
// and cached by other tests already.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type startupCase struct {
	Args  []string `json:"args"`
	Until string   `json:"until"` // first_request, exit
	Never []string `json:"never"`
	Needs []string `json:"needs"`
}

func init() {
	conformanceRunners["startup"] = func(input json.RawMessage) (any, error) {
		var c startupCase
		if err := json.Unmarshal(input, &c); err != nil {
			return nil, err
		}
		if c.Until != "first_request" && c.Until != "exit" {
			return nil, fmt.Errorf("until %q: use first_request or exit", c.Until)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartupReads$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LEMBAS_STARTUP_READS="+string(input))
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("helper: %v\n%s", err, out)
		}
		_, after, ok := strings.Cut(string(out), "READ ")
		if !ok {
			return nil, fmt.Errorf("helper said nothing of what it read:\n%s", out)
		}
		line, _, _ := strings.Cut(after, "\n")
		var read []string
		if err := json.Unmarshal([]byte(line), &read); err != nil {
			return nil, fmt.Errorf("helper: %v: %s", err, line)
		}
		// A never entry ending in / is a folder: any file under it counts.
		matches := func(pat, name string) bool {
			return name == pat || strings.HasSuffix(pat, "/") && strings.HasPrefix(name, pat)
		}
		out2 := map[string][]string{"never_read": {}, "needs_read": {}}
		for _, name := range read {
			for _, pat := range c.Never {
				if matches(pat, name) {
					out2["never_read"] = append(out2["never_read"], name)
					break
				}
			}
		}
		for _, pat := range c.Needs {
			for _, name := range read {
				if matches(pat, name) {
					out2["needs_read"] = append(out2["needs_read"], pat)
					break
				}
			}
		}
		return out2, nil
	}
}

// TestHelperStartupReads is not a test: the startup area's runner runs the
// test binary as this helper, which runs one lembas command in process
// against a loopback fake model and prints the harness files read by the
// first chat request (or by the end), as `READ ["harness/…", …]`.
func TestHelperStartupReads(t *testing.T) {
	input := os.Getenv("LEMBAS_STARTUP_READS")
	if input == "" {
		t.Skip("a helper process for the startup conformance area")
	}
	var c startupCase
	if err := json.Unmarshal([]byte(input), &c); err != nil {
		t.Fatal(err)
	}
	f := &fakeModel{t: t, models: []string{"mock"}}
	var once sync.Once
	var atRequest []string
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions") {
			once.Do(func() { atRequest = harnessFilesRead() })
		}
		f.serve(w, r)
	}))
	defer f.srv.Close()
	f.push(textReply("hi"))
	proj := t.TempDir()
	for k, v := range map[string]string{"OPENAI_BASE_URL": f.url(), "LEMBAS_MODEL": "mock", "HOME": t.TempDir(),
		"XDG_STATE_HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir(), "SHELL": "/bin/sh"} {
		t.Setenv(k, v)
	}
	t.Chdir(proj)
	code := run(c.Args, strings.NewReader(""), io.Discard, io.Discard)
	read := atRequest
	if c.Until == "exit" {
		read = harnessFilesRead()
	} else if atRequest == nil {
		t.Fatalf("lembas %v (exit %d) sent no chat request", c.Args, code)
	}
	b, _ := json.Marshal(read)
	fmt.Printf("READ %s\n", b)
}

// TestPStartupErrorsAsBefore: what start-up moved off its path or beside
// it (startup.go, lazyre.go) changes no error -p reports before its first
// request — the same message, the same exit status, and no request sent
// (the fake model has no reply scripted, so a request fails the test).
// And a run that fails before its first message leaves no session behind
// (store.begin): an empty one left by an unknown model was what -c then
// went on with, instead of the last real session.
func TestPStartupErrorsAsBefore(t *testing.T) {
	bin := lembasBin(t)
	f := newFakeModel(t)
	for _, c := range []struct {
		name, config, model string
		args                []string
		code                int
		say                 string
	}{
		{"config_does_not_parse", "mode: [oops\n", "mock", nil, 1, "config.yaml:1:7: unclosed flow list"},
		{"config_mode_unknown", "mode: sideways\n", "mock", nil, 1, `unknown mode "sideways"; use one of manual, edit, auto, plan`},
		{"model_unknown", "", "nosuch", nil, 1, fillPairs(theSpec().Loop.ModelErrors["model_not_found"], "model", "nosuch")},
		{"effort_unknown", "", "mock", []string{"--effort", "galaxy"}, 2, "--effort: "},
		{"cwd_missing", "", "mock", []string{"--cwd", "/nonexistent/lembas"}, 2, "--cwd /nonexistent/lembas: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := t.TempDir()
			if c.config != "" {
				os.MkdirAll(cfg+"/lembas", 0o700)
				os.WriteFile(cfg+"/lembas/config.yaml", []byte(c.config), 0o600)
			}
			cmd := exec.Command(bin, append(c.args, "-p", "say hi")...)
			cmd.Dir = t.TempDir()
			state := t.TempDir()
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh", "OPENAI_BASE_URL=" + f.url(),
				"LEMBAS_MODEL=" + c.model, "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + cfg}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != c.code || !strings.Contains(string(out), c.say) {
				t.Errorf("exit %d, want %d; said %q, want it to hold %q", code, c.code, out, c.say)
			}
			if left, _ := filepath.Glob(filepath.Join(state, "lembas", "sessions", "*.json*")); len(left) > 0 {
				t.Errorf("the failed run left a session behind: %v", left)
			}
		})
	}
	if n := len(f.got()); n != 0 {
		t.Errorf("%d chat requests sent; none of these runs may reach the model", n)
	}
}

package main

// The official MCP conformance suite (@modelcontextprotocol/conformance on
// npm) drives lembas as a client: each client scenario starts a test server
// and runs a command with its URL as the last argument. The command is this
// test binary again (TestMCPConformanceWrapper): it writes a config.yaml
// whose mcp: points at the URL, starts a scripted model that calls the
// first MCP tool it is offered, and runs `lembas -p` in-process, so the
// scenario talks to the real client. TestMCPConformanceSuite runs the
// scenarios when LEMBAS_MCP_CONFORMANCE names a folder where the suite is
// installed (.ci/run installs it); without it, it skips.

import (
	"bytes"
	"encoding/json"
	"flag"
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

// mcpConformanceScenarios are the client scenarios run, with what lembas
// is expected to do: pass, or fail for a reason the README states.
var mcpConformanceScenarios = []struct{ name, expect string }{
	{"initialize", "pass"},
	{"tools_call", "pass"},
	{"sse-retry", "pass"},
	{"elicitation-sep1034-client-defaults", "fail: lembas offers no elicitation capability"},
	{"auth/metadata-default", "fail: lembas has no OAuth flow; tokens come from environment variables"},
}

func TestMCPConformanceSuite(t *testing.T) {
	dir := os.Getenv("LEMBAS_MCP_CONFORMANCE")
	if dir == "" {
		t.Skip("set LEMBAS_MCP_CONFORMANCE to a folder with @modelcontextprotocol/conformance installed (.ci/run does)")
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "conformance")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, sc := range mcpConformanceScenarios {
		out := t.TempDir()
		cmd := exec.Command(bin, "client", "--scenario", sc.name, "--timeout", "60000", "-o", out,
			"--command", self+" -test.run=^TestMCPConformanceWrapper$")
		cmd.Env = append(os.Environ(), "LEMBAS_MCP_CONFORMANCE_WRAPPER=1")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		cmd.Run()
		pass, fail := conformanceCounts(out)
		result := "pass"
		if fail > 0 || pass == 0 {
			result = "fail"
		}
		fmt.Printf("mcp conformance: %-40s %s (%d checks passed, %d failed); expected %s\n", sc.name, result, pass, fail, sc.expect)
		if result != strings.SplitN(sc.expect, ":", 2)[0] {
			failed++
			t.Errorf("scenario %s: %s, expected %s\n%s", sc.name, result, sc.expect, lastLines(b.String(), 30))
		}
	}
	if failed > 0 {
		t.Errorf("%d scenarios did not go as expected", failed)
	}
}

// conformanceCounts reads the checks.json files the suite wrote.
func conformanceCounts(dir string) (pass, fail int) {
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || filepath.Base(p) != "checks.json" {
			return nil
		}
		data, _ := os.ReadFile(p)
		var checks []struct{ Status string }
		json.Unmarshal(data, &checks)
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				pass++
			case "FAILURE":
				fail++
			}
		}
		return nil
	})
	return pass, fail
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// TestMCPConformanceWrapper is the command the suite runs; as a plain test
// it does nothing.
func TestMCPConformanceWrapper(t *testing.T) {
	if os.Getenv("LEMBAS_MCP_CONFORMANCE_WRAPPER") == "" {
		return
	}
	args := flag.Args()
	if len(args) == 0 {
		t.Fatal("no server URL given")
	}
	url := args[len(args)-1]
	fm := newScriptedCaller()
	defer fm.srv.Close()
	cfgDir, state, home := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(cfgDir, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfgDir, "lembas", "config.yaml"), []byte("mcp:\n  conformance:\n    url: \""+url+"\"\n"), 0o600)
	for k, v := range map[string]string{"XDG_CONFIG_HOME": cfgDir, "XDG_STATE_HOME": state, "HOME": home,
		"OPENAI_BASE_URL": fm.srv.URL + "/v1", "OPENAI_API_KEY": "x", "LEMBAS_MODEL": "mock"} {
		os.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code := run([]string{"--mode", "auto", "--cwd", t.TempDir(), "-p", "call the conformance tool"}, strings.NewReader(""), &out, &errb)
	fmt.Fprintf(os.Stderr, "lembas exit %d\nstdout: %s\nstderr: %s\ncalls: %s\n", code, out.String(), errb.String(), fm.calls())
}

// scriptedCaller is a model that calls the first MCP tool of the request's
// tools once (arguments {a: 2, b: 3} for add_numbers, else {}), then answers.
type scriptedCaller struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []string
}

func newScriptedCaller() *scriptedCaller {
	s := &scriptedCaller{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			fmt.Fprint(w, `{"data":[{"id":"mock"}]}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req fakeRequest
		json.Unmarshal(body, &req.Body)
		called := false
		for _, m := range req.messages() {
			if m["role"] == "tool" {
				called = true
			}
		}
		tool := ""
		for _, n := range requestTools(req) {
			if strings.HasPrefix(n, "mcp__") {
				tool = n
				break
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if called || tool == "" {
			io.WriteString(w, textReply("done").body)
			return
		}
		args := map[string]any{}
		if strings.HasSuffix(tool, "add_numbers") {
			args = map[string]any{"a": 2, "b": 3}
		}
		s.mu.Lock()
		s.log = append(s.log, tool)
		s.mu.Unlock()
		io.WriteString(w, callsReply(fakeCall{tool, args}).body)
	}))
	return s
}

func (s *scriptedCaller) calls() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.log, ", ")
}

// TestMCPReferenceServer runs the reference server-everything (npm) over
// stdio through the real client: handshake, its tools, and a call of echo.
// LEMBAS_MCP_CONFORMANCE names the folder it is installed in; without it,
// it skips.
func TestMCPReferenceServer(t *testing.T) {
	dir := os.Getenv("LEMBAS_MCP_CONFORMANCE")
	if dir == "" {
		t.Skip("set LEMBAS_MCP_CONFORMANCE to a folder with @modelcontextprotocol/server-everything installed (.ci/run does)")
	}
	main := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	s := connected(t, mcpServerConfig{Name: "everything", Enabled: true, Command: "node", Args: []string{main, "stdio"}})
	state, reason, tools := s.status()
	if state != "ready" {
		t.Fatalf("server-everything: %s %s", state, reason)
	}
	var names []string
	for _, x := range tools {
		names = append(names, x.Name)
	}
	r := s.callTool(t.Context(), mcpTool{Server: "everything", Name: "echo"}, json.RawMessage(`{"message":"from lembas"}`), false)
	fmt.Printf("mcp reference: server-everything %s, %d tools (%s); echo → %q\n", s.version, len(tools), strings.Join(names, ", "), r.Text)
	if r.IsError || !strings.Contains(r.Text, "from lembas") {
		t.Errorf("echo: %+v", r)
	}
}

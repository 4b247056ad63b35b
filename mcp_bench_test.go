package main

// Measurements for issue 14 (go test -bench 'MCP' -run '^$'):
//   - BenchmarkMCPFirstRequest: from opening a session with 5 stdio servers,
//     one of which never answers initialize (startup timeout 1 s), to the
//     model's first request — bounded by that timeout, the others' tools all
//     in it;
//   - BenchmarkMCPCallStdio / BenchmarkMCPCallHTTP: one tools/call round trip
//     against a server that answers at once;
//   - BenchmarkMCPRequestBytes: the bytes the fake's tools (13) add to the first
//     request, offered whole and behind the search tool;
//   - BenchmarkMCPAuthLogin / BenchmarkMCPCallOAuth (mcp_auth_test.go): a whole
//     OAuth login, and a call carrying a kept token.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func BenchmarkMCPFirstRequest(b *testing.B) {
	fm := newFakeModel(b)
	replEnv(b, fm)
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lembas")
	os.MkdirAll(dir, 0o755)
	y := "mcp:\n"
	for i := 0; i < 5; i++ {
		mode := "normal"
		if i == 4 {
			mode = "silent"
		}
		y += "  s" + strconv.Itoa(i) + ":\n    command: " + strconv.Quote(os.Args[0]) + "\n    args: [\"-test.run=^TestFakeMCPProcess$\"]\n    startup_timeout: 1\n    env:\n      LEMBAS_FAKE_MCP: " + mode + "\n"
	}
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(y), 0o600)
	proj := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fm.push(textReply("hi"))
		start := time.Now()
		e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "auto", cwd: proj}, true, nil)
		if err != nil {
			b.Fatal(err)
		}
		e.runTurn(context.Background(), "hello")
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/first-request")
		reqs := fm.got()
		n := 0
		for _, t := range requestTools(reqs[len(reqs)-1]) {
			if strings.HasPrefix(t, "mcp__") {
				n++
			}
		}
		if n != 4*len(fakeMCPTools) {
			b.Fatalf("%d MCP tools in the first request, want %d", n, 4*len(fakeMCPTools))
		}
		b.StopTimer()
		cleanup()
		b.StartTimer()
	}
}

func benchCall(b *testing.B, s *mcpServer) {
	args := json.RawMessage(`{"text":"x"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := s.callTool(context.Background(), mcpTool{Server: s.cfg.Name, Name: "echo"}, args, false); r.Text != "echo: x" {
			b.Fatal(r.Text)
		}
	}
}

func BenchmarkMCPCallStdio(b *testing.B) {
	s := newMCPServer(fakeStdioConfig(b, "fake", "normal", ""), nil)
	s.connect(context.Background())
	defer s.close()
	benchCall(b, s)
}

func BenchmarkMCPCallHTTP(b *testing.B) {
	f := newFakeHTTPMCP(b)
	f.sse = true
	s := newMCPServer(f.config("web"), nil)
	s.connect(context.Background())
	defer s.close()
	benchCall(b, s)
}

func BenchmarkMCPRequestBytes(b *testing.B) {
	var tools []mcpTool
	for _, n := range fakeMCPTools {
		tools = append(tools, mcpTool{Server: "fake", Name: n, Offered: mcpOfferedName("fake", n), Description: "The " + n + " tool {{not a variable}}.",
			Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"ID":{"type":"string"}}}`)})
	}
	cfg := fakeStdioConfig(b, "fake", "normal", "")
	m := &mcpSet{servers: []*mcpServer{newMCPServer(cfg, nil)}, tools: tools}
	var specs []*toolSpec
	for _, t := range tools {
		specs = append(specs, m.toolSpecOf(t))
	}
	whole, search := 0, 0
	for i := 0; i < b.N; i++ {
		whole = mcpDefsBytes(specs)
		search = mcpDefsBytes([]*toolSpec{m.searchSpec()})
	}
	b.ReportMetric(float64(whole), "bytes/whole")
	b.ReportMetric(float64(search), "bytes/search-tool")
}

package main

// Conformance runners for MCP and webfetch: names, results, permission
// decisions, and the HTML converter, each through the real code.

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"
)

func init() {
	conformanceRunners["mcp_names"] = func(in json.RawMessage) (any, error) {
		var c struct{ Server, Tool string }
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		name := mcpOfferedName(c.Server, c.Tool)
		return map[string]any{"name": name, "length": len(name)}, nil
	}
	conformanceRunners["mcp_results"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Result json.RawMessage `json:"result"`
			Vision bool            `json:"vision"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		var res mcpCallResult
		if err := json.Unmarshal(c.Result, &res); err != nil {
			return nil, err
		}
		r := mcpResultOf(theMCP(), "srv", res, c.Vision)
		return map[string]any{"text": r.Text, "is_error": r.IsError, "images": len(r.Images)}, nil
	}
	conformanceRunners["mcp_permission"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Mode  string   `json:"mode"`
			Tool  string   `json:"tool"`
			Risk  string   `json:"risk"`
			Allow []string `json:"allow"`
			Ask   []string `json:"ask"`
			Deny  []string `json:"deny"`
			URL   string   `json:"url"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		root, err := os.MkdirTemp("", "lembas-conf")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
		p, err := newPermissionsFrom(c.Mode, root, true, &config{Permissions: permRules{Allow: c.Allow, Ask: c.Ask, Deny: c.Deny}})
		if err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
		var t *toolSpec
		args := json.RawMessage(`{}`)
		if c.Tool == "webfetch" {
			t = theSpec().Tools["webfetch"]
			args, _ = json.Marshal(map[string]string{"url": c.URL})
		} else {
			risk := c.Risk
			if risk == "" {
				risk = theMCP().Risk
			}
			t = &toolSpec{Name: c.Tool, Risk: risk, Block: "tool", Parameters: json.RawMessage(`{"type":"object"}`)}
		}
		d := p.decide(t, args)
		return map[string]any{"verdict": d.Verdict}, nil
	}
	conformanceRunners["html_markdown"] = func(in json.RawMessage) (any, error) {
		var c struct {
			HTML string `json:"html"`
			Base string `json:"base"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		base, _ := url.Parse(c.Base)
		return map[string]any{"markdown": htmlToMarkdown(c.HTML, base), "text": htmlToText(c.HTML)}, nil
	}
}

// FuzzMCPMessage feeds bytes to what reads a server's messages: the SSE
// event reader (its data, then each as a frame) and the result decoder.
// None may panic or loop; the events' data is never longer than the input.
func FuzzMCPMessage(f *testing.F) {
	f.Add([]byte("id: e1\nretry: 500\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"resource_link","uri":"u"}],"structuredContent":{"a":1},"isError":true}}`))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r\ndata: more\r\n\r\n:comment\nretry: x\n"))
	f.Add([]byte(`{"progressToken":"lembas-1","progress":2,"total":6}`))
	f.Add([]byte(`{"progressToken":7}`))
	f.Add([]byte(`{"mcpServers":{"a b":{"command":"x","args":["-y"],"env":{"K":"${V:-d}"}},"h":{"type":"http","url":"http://h/mcp","headers":{"A":"B"}}}}`))
	lim := rpcLimits{MaxMessageBytes: 1 << 20, MaxDepth: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev := newSSEReader(strings.NewReader(string(data)))
		total := 0
		for i := 0; i < len(data)+2; i++ {
			e, err := ev.event()
			if err != nil {
				break
			}
			total += len(e.data)
			if total > len(data) {
				t.Fatalf("events hold %d bytes of data from %d bytes", total, len(data))
			}
			parseFrame(e.data, lim, map[string]string{})
		}
		if m, err := parseFrame(data, lim, map[string]string{}); err == nil && len(m.Result) > 0 {
			var res mcpCallResult
			if json.Unmarshal(m.Result, &res) == nil {
				mcpResultOf(theMCP(), "srv", res, true)
			}
		}
		parseMCPJSON(data, "/project")
		// A progress notification's params, as a server sends them: an
		// unknown or malformed token is ignored, never a crash.
		s := &mcpServer{progress: map[string]func(){"lembas-1": func() {}}}
		s.onProgress(data)
	})
}

package main

import (
	"os"
	"regexp"
	"testing"
)

// TestMCPHarness: harness/mcp.json decodes strictly, and every text and
// number the MCP and web code asks for is there (a missing one would panic
// at the moment it is needed).
func TestMCPHarness(t *testing.T) {
	sp := theMCP()
	reText := regexp.MustCompile(`sp\.text\("([a-z_]+)"|s\.spec\.text\("([a-z_]+)"|theMCP\(\)\.text\("([a-z_]+)"`)
	reNum := regexp.MustCompile(`\.(?:num|ms)\("([a-z_]+)"\)`)
	reTool := regexp.MustCompile(`t\.(text|limit)\("([a-z_]+)"`)
	web := theSpec().Tools["webfetch"]
	found := 0
	for _, f := range []string{"mcp.go", "mcp_stdio.go", "mcp_http.go", "mcp_tools.go", "mcp_config.go", "mcp_cmd.go", "web.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range reText.FindAllStringSubmatch(string(src), -1) {
			key := m[1] + m[2] + m[3]
			found++
			if _, ok := sp.Texts[key]; !ok {
				t.Errorf("%s asks for mcp.json texts.%s, which is missing", f, key)
			}
		}
		for _, m := range reNum.FindAllStringSubmatch(string(src), -1) {
			if _, ok := sp.Limits[m[1]]; !ok {
				t.Errorf("%s asks for mcp.json limits.%s, which is missing", f, m[1])
			}
		}
		if f == "web.go" {
			for _, m := range reTool.FindAllStringSubmatch(string(src), -1) {
				_, okT := web.Texts[m[2]]
				_, okL := web.Limits[m[2]]
				if (m[1] == "text" && !okT) || (m[1] == "limit" && !okL) {
					t.Errorf("web.go asks for webfetch.json %s %s, which is missing", m[1], m[2])
				}
			}
		}
	}
	if found < 30 {
		t.Errorf("only %d text look-ups found; the pattern no longer matches the code", found)
	}
	if !contains(sp.Protocol.Supported, sp.Protocol.Latest) || sp.Protocol.Supported[len(sp.Protocol.Supported)-1] != "2024-11-05" {
		t.Errorf("protocol versions: %+v", sp.Protocol)
	}
	for _, m := range []string{"manual", "edit", "auto", "plan"} {
		if v := sp.Modes[m]; v != "ask" && v != "allow" && v != "deny" {
			t.Errorf("mcp.json modes.%s = %q", m, v)
		}
	}
}

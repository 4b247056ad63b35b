package main

// `lembas mcp list` and the REPL's /mcp: each server with where it came
// from, its transport, its state (connecting, N tools, failed with the
// reason, needs a token, disabled) and its tools as offered.

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

const mcpUsage = "usage: lembas mcp list [--cwd DIR]\n\n  list  start every MCP server this folder would have (config.yaml mcp:, a trusted\n        project's .mcp.json), wait for them, and show each with its tools\n"

// cmdMCP is `lembas mcp`.
func cmdMCP(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "list" {
		fmt.Fprint(stderr, mcpUsage)
		return usageError{"use: lembas mcp list"}
	}
	dir := "."
	if len(args) == 3 && args[1] == "--cwd" {
		dir = args[2]
	} else if len(args) != 1 {
		return usageError{"use: lembas mcp list [--cwd DIR]"}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	root, err := projectRoot(dir)
	if err != nil {
		return usageError{fmt.Sprintf("--cwd %s: %v", dir, err)}
	}
	cfgs, warnings, err := mcpServersFor(cfg, root, nil, os.Getenv)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "lembas: "+w)
	}
	set := startMCP(cfgs, false, nil)
	defer set.close()
	set.wait(context.Background())
	fmt.Fprint(stdout, mcpListText(set))
	return nil
}

// mcpListText lists a set's servers; nil or empty says how to add some.
func mcpListText(m *mcpSet) string {
	sp := theMCP()
	if m == nil || len(m.servers) == 0 {
		return sp.text("list_none", "config", configPath()) + "\n"
	}
	var b strings.Builder
	b.WriteString(sp.text("list_head", "count", len(m.servers)) + "\n")
	for _, s := range m.servers {
		state, reason, tools := s.status()
		var shown string
		switch state {
		case "connecting":
			shown = sp.text("state_connecting")
		case "ready":
			shown = sp.text("state_ready", "count", len(tools))
		case "disabled":
			shown = sp.text("state_disabled")
		default:
			shown = sp.text("state_failed", "reason", reason)
		}
		b.WriteString(sp.text("list_row", "name", s.cfg.Name, "source", s.cfg.Source, "transport", s.cfg.transport(), "state", shown) + "\n")
		for _, t := range tools {
			b.WriteString(sp.text("list_tool", "name", mcpOfferedName(s.cfg.Name, t.Name)) + "\n")
		}
	}
	return b.String()
}

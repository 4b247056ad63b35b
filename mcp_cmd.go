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

const mcpUsage = "usage: lembas mcp list [--cwd DIR]\n       lembas mcp approve NAME [--cwd DIR]\n       lembas mcp login NAME [--cwd DIR]\n       lembas mcp logout NAME\n\n  list    start every MCP server this folder would have (config.yaml mcp:, a trusted\n          project's .mcp.json), wait for them, and show each with its tools\n  approve approve the command line of a project's MCP server, pinned by its sha256, so\n          sessions start it (a changed command line asks again)\n  login   log in to a remote MCP server with OAuth: shows the address to open, waits\n          for the browser to come back, keeps the token (mode 0600, never printed)\n  logout  remove a server's kept token\n"

// cmdMCP is `lembas mcp`.
func cmdMCP(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "login" || args[0] == "logout") {
		return cmdMCPLogin(args, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "approve" {
		return cmdMCPApprove(args[1:], stdout, stderr) // mcp_approve.go
	}
	if len(args) == 0 || args[0] != "list" {
		fmt.Fprint(stderr, mcpUsage)
		return usageError{"use: lembas mcp list, lembas mcp approve NAME, lembas mcp login NAME or lembas mcp logout NAME"}
	}
	dir := "."
	if len(args) == 3 && args[1] == "--cwd" {
		dir = args[2]
	} else if len(args) != 1 {
		return usageError{"use: lembas mcp list [--cwd DIR]"}
	}
	cfgs, root, err := mcpServersIn(dir, stderr)
	if err != nil {
		return err
	}
	cfgs, _, notes := gateMCP(cfgs, root) // not approved: not started (mcp_approve.go)
	set := startMCP(cfgs, false, nil)
	defer set.close()
	set.wait(context.Background())
	if len(notes) > 0 {
		// Servers there but held for approval are part of the list, each
		// with the command that approves it — not "none are configured".
		if len(set.servers) > 0 {
			fmt.Fprint(stdout, mcpListText(set))
		}
		fmt.Fprintln(stdout, theMCP().text("list_held", "count", len(notes)))
		for _, n := range notes {
			fmt.Fprintln(stdout, "  "+n)
		}
		return nil
	}
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

// cmdMCPLogin is `lembas mcp login NAME` and `lembas mcp logout NAME`. A
// login forgets any kept token and connects the server as a session would,
// with the person there: the same code as a REPL session's login, its
// address printed here.
func cmdMCPLogin(args []string, stdout, stderr io.Writer) error {
	au := theMCPAuth()
	dir := "."
	switch {
	case len(args) == 2:
	case len(args) == 4 && args[2] == "--cwd":
		dir = args[3]
	default:
		return usageError{"use: lembas mcp " + args[0] + " NAME [--cwd DIR]"}
	}
	name := args[1]
	if err := checkMCPName(name); err != nil {
		return usageError{err.Error()} // also keeps the token file's name inside its folder
	}
	if args[0] == "logout" {
		if err := os.Remove(mcpTokenPath(name)); err != nil {
			fmt.Fprintln(stdout, au.text("logout_none", "server", name))
			return nil
		}
		fmt.Fprintln(stdout, au.text("logout_done", "server", name))
		return nil
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	root, err := projectRoot(dir)
	if err != nil {
		return usageError{fmt.Sprintf("--cwd %s: %v", dir, err)}
	}
	cfgs, _, err := mcpServersFor(cfg, root, nil, os.Getenv)
	if err != nil {
		return err
	}
	var c *mcpServerConfig
	for i := range cfgs {
		if cfgs[i].Name == name {
			c = &cfgs[i]
		}
	}
	switch {
	case c == nil:
		return usageError{au.text("unknown_server", "server", name)}
	case c.URL == "":
		return usageError{au.text("not_http", "server", name)}
	}
	os.Remove(mcpTokenPath(name))
	c.Enabled, c.Interactive = true, true
	c.Warn = func(s string) { fmt.Fprintln(stdout, s) }
	set := startMCP([]mcpServerConfig{*c}, false, nil)
	defer set.close()
	set.wait(context.Background())
	state, reason, _ := set.servers[0].status()
	if state != "ready" {
		return errorf("mcp login %s: %s", name, reason)
	}
	if _, err := os.Stat(mcpTokenPath(name)); err == nil {
		fmt.Fprintln(stdout, au.text("login_saved", "server", name, "path", mcpTokenPath(name)))
	}
	fmt.Fprint(stdout, mcpListText(set))
	return nil
}

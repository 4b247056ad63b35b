package main

// Approving a project's MCP servers: a stdio server from a project's
// .mcp.json or handed over by ACP session/new starts a program with the
// person's rights for the whole session, so it starts only after the
// person approved that exact command line. The approval is pinned by the
// sha256 of the command line (program, arguments, folder, environment:
// the values of variables whose names do not say they hold a secret, the
// names of those that do) and kept per project in lembas's state
// (mcp-approved.json, written atomically under a lock); a changed command
// line asks again. Unapproved servers are held, not started: the first
// turn asks for each on a card (every front end's approver); -p refuses
// them, and `lembas mcp approve NAME` approves one.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// mcpApprovalFile is where approvals are kept.
func mcpApprovalFile() string { return filepath.Join(stateDir(), "mcp-approved.json") }

// mcpApproval is one kept approval.
type mcpApproval struct {
	SHA256  string `json:"sha256"`
	Command string `json:"command"` // as shown to the person, for reading the file
}

// mcpNeedsApproval says whether a server starts a program the person's own
// config did not name: a stdio server of the project or of ACP.
func mcpNeedsApproval(c mcpServerConfig) bool {
	return c.Command != "" && (c.Source == "project" || c.Source == "acp")
}

// mcpCommandLine is a server's command line as the person reads it.
//
//go:noinline
func mcpCommandLine(c mcpServerConfig) string {
	return shellQuote(append([]string{c.Command}, c.Args...))
}

// mcpPin is the sha256 a server's approval is pinned by.
func mcpPin(c mcpServerConfig) string {
	env := map[string]string{}
	for k, v := range c.Env {
		if secretName(k) {
			v = "" // a token's value may change; its name may not
		}
		env[k] = v
	}
	data, _ := json.Marshal(struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Cwd     string            `json:"cwd"`
		Env     map[string]string `json:"env"`
	}{c.Command, c.Args, c.Cwd, env})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// secretName says whether a variable's name says it holds a secret
// (mcp.json pin_blank_substrings).
func secretName(k string) bool {
	u := strings.ToUpper(k)
	for _, w := range theMCP().PinBlank {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// readMCPApprovals reads the kept approvals: project root → name → approval.
// A file that cannot be read approves nothing.
func readMCPApprovals() map[string]map[string]mcpApproval {
	m := map[string]map[string]mcpApproval{}
	if data, err := os.ReadFile(mcpApprovalFile()); err == nil {
		json.Unmarshal(data, &m)
	}
	if m == nil {
		m = map[string]map[string]mcpApproval{}
	}
	return m
}

// mcpApproved says whether a server's command line is approved for root,
// and whether an earlier, different one was.
func mcpApproved(root string, c mcpServerConfig) (ok, changed bool) {
	a, found := readMCPApprovals()[root][c.Source+":"+c.Name]
	if !found {
		return false, false
	}
	return a.SHA256 == mcpPin(c), a.SHA256 != mcpPin(c)
}

// approveMCP keeps the approval of a server's command line for root.
func approveMCP(root string, c mcpServerConfig) error {
	return changeMCPApprovals(func(m map[string]map[string]mcpApproval) {
		if m[root] == nil {
			m[root] = map[string]mcpApproval{}
		}
		m[root][c.Source+":"+c.Name] = mcpApproval{SHA256: mcpPin(c), Command: mcpCommandLine(c)}
	})
}

// changeMCPApprovals changes the kept approvals under the file's lock:
// read, change, written whole.
func changeMCPApprovals(change func(map[string]map[string]mcpApproval)) error {
	path := mcpApprovalFile()
	if err := os.MkdirAll(stateDir(), 0o700); err != nil {
		return err
	}
	unlock, err := lockBeside(path)
	if err != nil {
		return err
	}
	defer unlock()
	m := readMCPApprovals()
	change(m)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'), 0o600)
}

// mcpApprovedKeys is root's approved servers (source:name), in order.
func mcpApprovedKeys(root string) []string {
	var keys []string
	for k := range readMCPApprovals()[root] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// revokeMCP takes back a server's approval for root (key source:name): a
// later session holds it and asks again.
func revokeMCP(root, key string) error {
	return changeMCPApprovals(func(m map[string]map[string]mcpApproval) {
		delete(m[root], key)
		if len(m[root]) == 0 {
			delete(m, root)
		}
	})
}

// gateMCP splits a session's servers into those that may start and those
// held for the person's approval, with the notices for the held ones.
func gateMCP(cfgs []mcpServerConfig, root string) (start, held []mcpServerConfig, notes []string) {
	for _, c := range cfgs {
		if !mcpNeedsApproval(c) || !c.Enabled {
			start = append(start, c)
			continue
		}
		ok, changed := mcpApproved(root, c)
		if ok {
			start = append(start, c)
			continue
		}
		held = append(held, c)
		ch := ""
		if changed {
			ch = theMCP().text("approval_changed")
		}
		notes = append(notes, theMCP().text("approval_pending", "name", c.Name, "source", mcpSourceName(c), "command", mcpCommandLine(c), "changed", ch, "cwd", shellQuote([]string{root})))
	}
	return start, held, notes
}

func mcpSourceName(c mcpServerConfig) string {
	if c.Source == "project" {
		return ".mcp.json"
	}
	return c.Source
}

// approveHeld asks the person about each held server, through the
// session's approver, and starts those approved: once for this session,
// project keeps the approval. It runs at the first turn (awaitMCP), where
// every front end can show a card; headless, nobody answers and they stay
// held.
func (m *mcpSet) approveHeld(ctx context.Context, a approver, root string, say func(string)) {
	m.mu.Lock()
	held := m.held
	m.held = nil
	m.mu.Unlock()
	for _, c := range held {
		req := approvalRequest{Tool: "mcp", Input: mcpCommandLine(c), Risk: "execute",
			Reason:  theMCP().text("approval_reason", "name", c.Name, "source", mcpSourceName(c)),
			Rule:    "mcp approval " + mcpSourceName(c) + " " + c.Name,
			Options: []string{"once", "project", "deny"},
			Scopes:  map[string]string{"project": permText("scope_mcp_server", "command", "`"+mcpCommandLine(c)+"`")}}
		ans := approveWithin(ctx, a, req, approvalTimeout())
		switch ans.Choice {
		case "project":
			if err := approveMCP(root, c); err != nil {
				say(theMCP().text("approval_store", "name", c.Name, "error", err))
			}
		case "once":
		default:
			say(theMCP().text("approval_refused", "name", c.Name))
			continue
		}
		s := newMCPServer(c, nil)
		m.mu.Lock()
		m.servers = append(m.servers, s)
		m.mu.Unlock()
		go s.connect(m.ctx)
	}
}

// cmdMCPApprove is `lembas mcp approve NAME [--cwd DIR]`.
func cmdMCPApprove(args []string, stdout, stderr io.Writer) error {
	sp := theMCP()
	dir, name := ".", ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-h" || a == "--help" || a == "help":
			fmt.Fprint(stdout, sp.text("approve_usage"))
			return nil
		case a == "--cwd" && i+1 < len(args):
			dir = args[i+1]
			i++
		case strings.HasPrefix(a, "--cwd="):
			dir = a[len("--cwd="):]
		case strings.HasPrefix(a, "-"):
			return usageError{fmt.Sprintf("mcp approve: unknown option %q\n%s", a, sp.text("approve_usage"))}
		case name == "":
			name = a
		default:
			return usageError{fmt.Sprintf("mcp approve: unexpected %q\n%s", a, sp.text("approve_usage"))}
		}
	}
	if name == "" {
		return usageError{"mcp approve: give the server's NAME\n" + sp.text("approve_usage")}
	}
	cfgs, root, err := mcpServersIn(dir, stderr)
	if err != nil {
		return err
	}
	var names []string
	for _, c := range cfgs {
		if !mcpNeedsApproval(c) {
			continue
		}
		names = append(names, c.Name)
		if c.Name != name {
			continue
		}
		if err := approveMCP(root, c); err != nil {
			return errorf("keeping the approval in %s: %w", mcpApprovalFile(), err)
		}
		fmt.Fprintln(stdout, sp.text("approve_done", "name", c.Name, "cwd", root, "command", mcpCommandLine(c), "sum", mcpPin(c)[:16]))
		return nil
	}
	sort.Strings(names)
	msg := sp.text("approve_unknown", "name", name, "cwd", root)
	if len(names) > 0 {
		msg += " (it has: " + strings.Join(names, ", ") + ")"
	}
	return usageError{"mcp approve: " + msg}
}

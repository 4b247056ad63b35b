package main

// What the person allowed beyond one call, listed and taken back: the
// session's always answers (s1, s2…, the REPL's /permissions only), the
// project's kept ones (a1…, permission_store.go), the project's approved
// MCP servers (m1…, mcp_approve.go), and, read only, config.yaml's allow
// rules (c1…), which the person wrote and changes there. An id is the
// entry's place in its list, so it is read from a fresh listing: after a
// revoke the later ones move up. `lembas permissions list|revoke` and the
// REPL's /permissions both go through here.

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// allowedEntry is one thing allowed, as listed.
type allowedEntry struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`              // session, project, mcp, config
	Rule    string `json:"rule"`              // the rule as kept (bash: git log *), or the server (source:name)
	Command string `json:"command,omitempty"` // mcp: the approved command line
	Project string `json:"project,omitempty"` // listing every project: whose it is
	Revoke  bool   `json:"revocable"`         // config rules are changed in config.yaml
}

// errUnknownAllowed is a revoke of an id the listing does not have.
type errUnknownAllowed struct{ id string }

func (e errUnknownAllowed) Error() string { return permText("allowed_unknown", "id", e.id) }

// errConfigAllowed is a revoke of a config.yaml rule: changed there.
type errConfigAllowed struct{ text string }

func (e errConfigAllowed) Error() string { return e.text }

// allowedList is everything allowed for p's project: this session's
// answers (withSession), the kept ones, the approved MCP servers, and
// config.yaml's allow rules.
func (p *permissions) allowedList(withSession bool) []allowedEntry {
	var out []allowedEntry
	p.mu.Lock()
	if withSession {
		for i, r := range p.session {
			out = append(out, allowedEntry{ID: "s" + strconv.Itoa(i+1), Kind: "session", Rule: r.Text, Revoke: true})
		}
	}
	p.mu.Unlock()
	kept, _ := readProjectAnswers(p.projectFile) // unreadable: loadProject said so
	for i, s := range kept.Allow {
		out = append(out, allowedEntry{ID: "a" + strconv.Itoa(i+1), Kind: "project", Rule: s, Revoke: true})
	}
	for i, k := range mcpApprovedKeys(p.root) {
		a := readMCPApprovals()[p.root][k]
		out = append(out, allowedEntry{ID: "m" + strconv.Itoa(i+1), Kind: "mcp", Rule: k, Command: a.Command, Revoke: true})
	}
	n := 0
	for _, r := range p.allow {
		if r.Source == "config" {
			n++
			out = append(out, allowedEntry{ID: "c" + strconv.Itoa(n), Kind: "config", Rule: r.Text})
		}
	}
	return out
}

// readProjectAnswers reads a project's always file as it is now. A
// missing one holds nothing; one that cannot be read or parsed holds
// nothing and says so, so that no caller writes over what it could not
// read (loadProject sets such a file aside when a session starts).
func readProjectAnswers(file string) (projectAnswers, error) {
	var pa projectAnswers
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return pa, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &pa)
	}
	if err != nil {
		return projectAnswers{}, errorNew(permText("always_unreadable", "file", file, "error", err))
	}
	return pa, nil
}

// everyProjectAllowed lists the kept always answers of every project, for
// `lembas permissions list --all` (read only: revoke works in one project).
func everyProjectAllowed() []allowedEntry {
	var out []allowedEntry
	files, _ := filepath.Glob(filepath.Join(stateDir(), "permissions", "*.json"))
	sort.Strings(files)
	for _, f := range files {
		pa, err := readProjectAnswers(f)
		if err != nil {
			continue // another project's file: its next session sets it aside
		}
		for i, s := range pa.Allow {
			out = append(out, allowedEntry{ID: "a" + strconv.Itoa(i+1), Kind: "project", Rule: s, Project: pa.Project, Revoke: true})
		}
	}
	m := readMCPApprovals()
	var roots []string
	for root := range m {
		roots = append(roots, root)
	}
	sort.Strings(roots)
	for _, root := range roots {
		for i, k := range mcpApprovedKeys(root) {
			out = append(out, allowedEntry{ID: "m" + strconv.Itoa(i+1), Kind: "mcp", Rule: k, Command: m[root][k].Command, Project: root, Revoke: true})
		}
	}
	return out
}

// revokeAllowed takes back the entry with id: from this session, from the
// project's file (and this session), or an MCP server's approval.
func (p *permissions) revokeAllowed(id string, withSession bool) (allowedEntry, error) {
	for _, e := range p.allowedList(withSession) {
		if e.ID != id {
			continue
		}
		switch e.Kind {
		case "session":
			p.mu.Lock()
			p.session = dropRule(p.session, e.Rule)
			p.mu.Unlock()
			return e, nil
		case "project":
			return e, p.dropProjectRules(func(s string) bool { return s == e.Rule })
		case "mcp":
			return e, revokeMCP(p.root, e.Rule)
		case "config":
			n, _ := strconv.Atoi(id[1:])
			return e, errConfigAllowed{permText("allowed_config", "rule", e.Rule, "key", "permissions.allow."+strconv.Itoa(n-1))}
		}
	}
	return allowedEntry{}, errUnknownAllowed{id}
}

// revokeAllAllowed takes back every kept answer and MCP approval of the
// project, and this session's answers; config.yaml's rules stay.
func (p *permissions) revokeAllAllowed() (int, error) {
	n := 0
	p.mu.Lock()
	n += len(p.session)
	p.session = nil
	p.mu.Unlock()
	kept, _ := readProjectAnswers(p.projectFile) // unreadable: dropProjectRules says so
	n += len(kept.Allow)
	if err := p.dropProjectRules(func(string) bool { return true }); err != nil {
		return n, err
	}
	for _, k := range mcpApprovedKeys(p.root) {
		if err := revokeMCP(p.root, k); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// dropProjectRules removes the kept answers drop says, from the file as
// it is now and from this session's copy.
func (p *permissions) dropProjectRules(drop func(string) bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var rules []sourcedRule
	for _, r := range p.project {
		if !drop(r.Text) {
			rules = append(rules, r)
		}
	}
	p.project = rules
	pa, err := readProjectAnswers(p.projectFile)
	if err != nil {
		return err // this session no longer allows them; the file is left as it is
	}
	pa.Project = p.root
	var keep []string
	for _, s := range pa.Allow {
		if !drop(s) {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		if err := os.Remove(p.projectFile); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	pa.Allow = keep
	data, _ := json.MarshalIndent(pa, "", "  ")
	return writeFileAtomic(p.projectFile, append(data, '\n'), 0o600)
}

func dropRule(list []sourcedRule, text string) []sourcedRule {
	var out []sourcedRule
	for _, r := range list {
		if r.Text != text {
			out = append(out, r)
		}
	}
	return out
}

// allowedLines is a listing as the person reads it: a head naming the
// project, one line per entry with its id, and how to take one back.
func allowedLines(root string, list []allowedEntry) []string {
	if len(list) == 0 {
		return []string{permText("allowed_none", "project", root)}
	}
	lines := []string{permText("allowed_head", "project", root)}
	// Ids and kinds in columns, as wide as the widest of each: all the
	// kinds' labels, so a listing's columns are the same whatever is in it.
	w, kw := 0, 0
	for _, e := range list {
		w = max(w, len(e.ID))
	}
	for _, k := range []string{"session", "project", "mcp", "config"} {
		kw = max(kw, stringWidth(permText("allowed_kind_"+k)))
	}
	for _, e := range list {
		what := e.Rule
		if e.Command != "" {
			what += " — " + e.Command
		}
		if e.Project != "" && e.Project != root {
			what += " (" + e.Project + ")"
		}
		kind := permText("allowed_kind_" + e.Kind)
		lines = append(lines, permText("allowed_line", "id", e.ID+strings.Repeat(" ", w-len(e.ID)), "kind", kind+strings.Repeat(" ", kw-stringWidth(kind)), "what", what))
	}
	return append(lines, permText("allowed_how"))
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lembas permissions list|revoke, end to end with the real binary: what a
// session kept (always answers, an approved MCP server) and config.yaml's
// allow rules are listed with ids; revoke takes one back, for good; an
// unknown id and a config rule exit 2 saying what to do; --all takes back
// all but config.yaml's.
func TestPermissionsListRevokeCLI(t *testing.T) {
	proj := copyProject(t, "basic")
	state, conf := t.TempDir(), t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_CONFIG_HOME", conf)
	os.MkdirAll(filepath.Join(conf, "lembas"), 0o700)
	os.WriteFile(filepath.Join(conf, "lembas", "config.yaml"), []byte("permissions:\n  allow:\n    - \"bash: make *\"\n"), 0o600)
	env := []string{"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + conf}

	// What a session's always answers and an MCP approval keep.
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPermissionsFrom("manual", proj, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bash := theSpec().Tools["bash"]
	if err := p.remember(bash, decision{Patterns: []string{"terraform plan *"}}, "project"); err != nil {
		t.Fatal(err)
	}
	if err := p.remember(theSpec().Tools["write"], decision{}, "project"); err != nil {
		t.Fatal(err)
	}
	if err := approveMCP(proj, mcpServerConfig{Name: "files", Source: "project", Command: "mcp-files", Args: []string{"--root", "."}}); err != nil {
		t.Fatal(err)
	}

	r := runLembas(t, env, proj, "", "permissions", "list")
	for _, want := range []string{"Allowed in " + proj, "a1  always here   bash: terraform plan *", "a2  always here   write", "m1  MCP server    project:files — mcp-files --root .", "c1  config.yaml   bash: make *", "revoke ID"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("list lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	r = runLembas(t, env, proj, "", "permissions", "list", "--all")
	if !strings.Contains(r.stdout, "a1  always here   bash: terraform plan *") || !strings.Contains(r.stdout, "c1  config.yaml   bash: make *") {
		t.Errorf("list --all lacks the kept answer or config.yaml's rule:\n%s%s", r.stdout, r.stderr)
	}
	r = runLembas(t, env, proj, "", "permissions", "list", "--json")
	var js struct {
		Project string         `json:"project"`
		Allowed []allowedEntry `json:"allowed"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil || r.code != 0 {
		t.Fatalf("list --json (exit %d): %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(js.Allowed) != 4 || js.Project != proj || js.Allowed[0].ID != "a1" || js.Allowed[3].Revoke {
		t.Errorf("list --json: %+v", js)
	}

	r = runLembas(t, env, proj, "", "permissions", "revoke", "a9")
	if r.code != 2 || !strings.Contains(r.stderr, "no permission a9 here; lembas permissions list") {
		t.Errorf("an unknown id: exit %d, %q", r.code, r.stderr)
	}
	r = runLembas(t, env, proj, "", "permissions", "revoke", "c1")
	if r.code != 2 || !strings.Contains(r.stderr, "config.yaml's own rule (permissions.allow.0)") {
		t.Errorf("a config rule: exit %d, %q", r.code, r.stderr)
	}
	r = runLembas(t, env, proj, "", "permissions", "revoke")
	if r.code != 2 {
		t.Errorf("revoke with no id: exit %d, %q", r.code, r.stderr)
	}
	r = runLembas(t, env, proj, "", "permissions", "revoke", "a1")
	if r.code != 0 || !strings.Contains(r.stdout, "revoked a1: bash: terraform plan *") {
		t.Errorf("revoke a1: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	// Revoked for good: a new session of the project does not allow it,
	// and the session that kept it does not bring it back when it keeps
	// another answer.
	if err := p.remember(bash, decision{Patterns: []string{"npm test"}}, "project"); err != nil {
		t.Fatal(err)
	}
	p2, _ := newPermissionsFrom("manual", proj, false, cfg)
	args, _ := json.Marshal(map[string]string{"command": "terraform plan -out x"})
	if d := p2.decide(bash, args); d.Verdict != "ask" {
		t.Errorf("a revoked answer still allows: %+v", d)
	}
	r = runLembas(t, env, proj, "", "permissions", "list")
	if strings.Contains(r.stdout, "terraform") || !strings.Contains(r.stdout, "a1  always here   write") || !strings.Contains(r.stdout, "a2  always here   bash: npm test") {
		t.Errorf("after revoke a1:\n%s", r.stdout)
	}

	r = runLembas(t, env, proj, "", "permissions", "revoke", "--all")
	if r.code != 0 || !strings.Contains(r.stdout, "revoked 3") {
		t.Errorf("revoke --all: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runLembas(t, env, proj, "", "permissions", "list")
	if strings.Contains(r.stdout, "a1") || strings.Contains(r.stdout, "m1") || !strings.Contains(r.stdout, "c1  config.yaml") {
		t.Errorf("after revoke --all:\n%s", r.stdout)
	}
	if ok, _ := mcpApproved(proj, mcpServerConfig{Name: "files", Source: "project", Command: "mcp-files", Args: []string{"--root", "."}}); ok {
		t.Errorf("the MCP server is still approved after revoke --all")
	}
	r = runLembas(t, env, proj, "", "permissions", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "lembas permissions revoke ID|--all") {
		t.Errorf("--help: exit %d, %q", r.code, r.stdout)
	}
}

// The always files are read from disk, and any of them may be broken. The
// project's own is set aside and reported when a session (or the CLI)
// starts; other projects' broken ones are passed over by list --all; and
// one that breaks while a session runs is never written over or removed by
// remembering or revoking: the error names it and the file stays as it was.
func TestPermissionsCorruptAlwaysFiles(t *testing.T) {
	proj := copyProject(t, "basic")
	state, conf := t.TempDir(), t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_CONFIG_HOME", conf)
	env := []string{"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + conf}
	dir := filepath.Join(state, "lembas", "permissions")
	os.MkdirAll(dir, 0o700)
	for name, body := range map[string]string{"0000000000000001.json": `{"allow":["bash: ls *"`, "0000000000000002.json": `null`,
		"0000000000000003.json": `{"project":5,"allow":{"x":1}}`, "0000000000000004.json": `{"project":"/elsewhere","allow":["bash: make *"]}`} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600)
	}
	os.Mkdir(filepath.Join(dir, "0000000000000005.json"), 0o700)
	own := alwaysFile(evalExisting(proj))
	os.WriteFile(own, []byte(`{"allow":["bash: ls *", 5]}`), 0o600)

	r := runLembas(t, env, proj, "", "permissions", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "could not be read") || !strings.Contains(r.stdout, "Nothing is allowed") {
		t.Errorf("list with a broken always file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("the broken always file was not set aside: %v", err)
	}
	r = runLembas(t, env, proj, "", "permissions", "list", "--all")
	if r.code != 0 || !strings.Contains(r.stdout, "bash: make * (/elsewhere)") {
		t.Errorf("list --all among broken files: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Broken while a session runs.
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPermissionsFrom("manual", proj, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bash := theSpec().Tools["bash"]
	if err := p.remember(bash, decision{Patterns: []string{"go test *"}}, "project"); err != nil {
		t.Fatal(err)
	}
	broken := []byte(`{"allow":["bash: go test *", 5]}`)
	os.WriteFile(p.projectFile, broken, 0o600)
	if err := p.remember(bash, decision{Patterns: []string{"go vet *"}}, "project"); err == nil || !strings.Contains(err.Error(), p.projectFile) {
		t.Errorf("remember over a broken file: %v", err)
	}
	if _, err := p.revokeAllAllowed(); err == nil || !strings.Contains(err.Error(), "could not be read") {
		t.Errorf("revoke --all over a broken file: %v", err)
	}
	if got, _ := os.ReadFile(p.projectFile); string(got) != string(broken) {
		t.Errorf("the broken file was changed: %q", got)
	}
	args, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	if d := p.decide(bash, args); d.Verdict != "ask" {
		t.Errorf("revoked in the session, yet: %+v", d)
	}
}

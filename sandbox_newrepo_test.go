//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
				"mkdir -p .git/modules/m/modules/n .git/worktrees/w && printf '[core]\\n\\tpager = x\\n' > .git/modules/m/modules/n/config && printf '[core]\\n\\tfsmonitor = x\\n' > .git/worktrees/w/config.worktree\n" +
				"git config submodule.lib.url https://example.com/lib.git\n" +
				"echo planted"
			r := sandboxBash(t, tb, "auto", script(body))
			if !strings.Contains(r.Text, "planted") {
				t.Fatalf("the script did not run: %s", r.Text)
			}
			for _, want := range []string{"core.fsmonitor", "alias.", "include.path", "diff.external", "hooks/pre-commit", "and 2 more"} {
				if !strings.Contains(r.Text, want) {
					t.Errorf("the command was not told %s was taken out:\n%s", want, r.Text)
				}
			}
			for _, f := range []string{"modules/m/config", "modules/m/modules/n/config", "worktrees/w/config.worktree"} {
				if b, _ := os.ReadFile(filepath.Join(proj, ".git", f)); strings.Contains(string(b), "=") {
					t.Errorf(".git/%s kept a key: %q", f, b)
				}
			}
			cfg, _ := os.ReadFile(filepath.Join(proj, ".git", "config"))
			for _, gone := range []string{"fsmonitor", "alias", "include", "external", pwned} {
				if strings.Contains(string(cfg), gone) {
					t.Errorf("%s is still in the config:\n%s", gone, cfg)
				}
			}
			if !strings.Contains(string(cfg), "name = Model") || !strings.Contains(string(cfg), "repositoryformatversion") || !strings.Contains(string(cfg), "example.com/lib.git") {
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
	// A backslash in a comment does not go on to the next line for git: a
	// line ending in one is not kept, and the next is read on its own.
	out, _ = filterGitConfig([]byte("[core]\n\tbare = false ; \\\n\tfsmonitor = \"touch X\"\n"), keep)
	if strings.Contains(string(out), "fsmonitor") || strings.Contains(string(out), "\\") {
		t.Errorf("a line after a comment's backslash was kept: %q", out)
	}
}

// TestNewRepoLinksNotFollowed: the screen never reads or writes through a
// link a command made: .git/modules, or a module's folder, linked to the
// person's folder leaves what is there as it was; and a link made in
// .git/worktrees or .git/modules of a repository the person had is taken
// away by the restore without what it points at.
func TestNewRepoLinksNotFollowed(t *testing.T) {
	base, proj, _ := sandboxFixture(t)
	decoy := filepath.Join(base, "decoy")
	theirs := map[string]string{".ssh/config": "Host x\n", "app/config": "[core]\n\tpager = less\n", "app/hooks/pre-commit": "#!/bin/sh\n"}
	for p, body := range theirs {
		os.MkdirAll(filepath.Join(decoy, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(decoy, p), []byte(body), 0o644)
	}
	check := func(when string) {
		t.Helper()
		for p, body := range theirs {
			if b, err := os.ReadFile(filepath.Join(decoy, p)); err != nil || string(b) != body {
				t.Errorf("%s: the person's %s is now %q (%v)", when, p, b, err)
			}
		}
	}
	// The person's repository: the restore's patterns meet links.
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	tb.sandbox.noWorld = true
	sandboxBash(t, tb, "auto", script("#!/bin/sh\nrm -rf .git/worktrees .git/modules; ln -s "+decoy+" .git/worktrees; ln -s "+decoy+" .git/modules; echo linked"))
	check("after links in the person's .git")
	// A repository the session makes.
	os.RemoveAll(filepath.Join(proj, ".git"))
	tb = sandboxToolbox(t, proj, sandboxConfig{})
	tb.sandbox.noWorld = true
	r := sandboxBash(t, tb, "auto", script("#!/bin/sh\ngit init -q . && ln -s "+decoy+" .git/modules; echo made"))
	check("after a linked .git/modules in a new repository")
	if pathExists(filepath.Join(proj, ".git", "modules")) {
		t.Errorf("the linked modules folder was left: %s", r.Text)
	}
	sandboxBash(t, tb, "auto", script("#!/bin/sh\nmkdir -p .git/modules && ln -s "+filepath.Join(decoy, "app")+" .git/modules/app; echo made"))
	check("after a linked module folder")
}

// TestNewRepoScreenedAtClose: a process a command left behind plants a
// hook after the command's screen; the session's close screens again.
func TestNewRepoScreenedAtClose(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	os.RemoveAll(filepath.Join(proj, ".git"))
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	tb.sandbox.noWorld = true
	sandboxBash(t, tb, "auto", "git init -q .")
	hook := filepath.Join(proj, ".git", "hooks", "pre-commit")
	os.WriteFile(hook, []byte("#!/bin/sh\ntouch pwned\n"), 0o755) // what the left-behind process wrote
	tb.sandbox.close()
	if pathExists(hook) {
		t.Error("a hook planted after the last command's screen outlived the session")
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

// TestNewRepoScreenSwapped: a process a command left running swaps a name
// the screen has just looked at — .git itself, or its hooks folder — for
// a link to the person's files, between the look and the remove or
// rewrite. The screen resolves every name inside the project (os.Root),
// so the person's ssh config and files are left as they were.
func TestNewRepoScreenSwapped(t *testing.T) {
	for _, c := range []struct{ at, swap string }{
		{".git/config", ".git"},
		{".git/hooks", ".git/hooks"},
	} {
		t.Run(c.swap, func(t *testing.T) {
			base := t.TempDir()
			proj := filepath.Join(base, "proj")
			theirs := filepath.Join(base, "home", ".ssh")
			os.MkdirAll(theirs, 0o700)
			mine := map[string]string{"config": "Host x\n  ProxyCommand nc %h %p\n", "id_ed25519": "KEY\n"}
			for n, b := range mine {
				os.WriteFile(filepath.Join(theirs, n), []byte(b), 0o600)
			}
			os.MkdirAll(filepath.Join(proj, ".git", "hooks"), 0o755)
			os.WriteFile(filepath.Join(proj, ".git", "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
			os.WriteFile(filepath.Join(proj, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
			swapped := false
			screenSwap = func(p string) {
				if p != c.at || swapped {
					return
				}
				swapped = true
				real := filepath.Join(proj, filepath.FromSlash(c.swap))
				os.Rename(real, real+".was")
				os.Symlink(theirs, real)
			}
			defer func() { screenSwap = nil }()
			screenNewRepo(proj, theSandboxSpec().NewRepo.ConfigKeep)
			if !swapped {
				t.Fatal("the swap never ran: the test proves nothing")
			}
			for n, b := range mine {
				if got, err := os.ReadFile(filepath.Join(theirs, n)); err != nil || string(got) != b {
					t.Errorf("the person's %s is now %q (%v)", n, got, err)
				}
			}
		})
	}
}

// TestNestedRepoScreenedAtClose: in the person's repository, a script
// makes a repository in a folder under the project and plants a hook and
// core.fsmonitor there, for whoever runs git in that folder later; when
// the session closes they are gone. A repository the person had in a
// folder before the session keeps its hook.
func TestNestedRepoScreenedAtClose(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	theirs := filepath.Join(proj, "vendor", "lib")
	os.MkdirAll(theirs, 0o755)
	git(t, theirs, "init", "-q", ".")
	theirHook := filepath.Join(theirs, ".git", "hooks", "pre-commit")
	os.WriteFile(theirHook, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	if _, ok := changedAt(theirHook); !ok {
		t.Skip("this file system keeps no change times: the nested screen reads none")
	}
	time.Sleep(1100 * time.Millisecond) // the screen allows a coarse clock's second before the first command
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	r := sandboxBash(t, tb, "auto", script("#!/bin/sh\ngit init -q tools/x && printf '#!/bin/sh\\ntouch pwned\\n' > tools/x/.git/hooks/post-checkout && chmod +x tools/x/.git/hooks/post-checkout && git -C tools/x config core.fsmonitor 'touch pwned' && echo planted"))
	if !strings.Contains(r.Text, "planted") {
		t.Fatalf("the script did not run: %s", r.Text)
	}
	tb.sandbox.close()
	if pathExists(filepath.Join(proj, "tools", "x", ".git", "hooks", "post-checkout")) {
		t.Error("a hook planted in a repository the session made under the project outlived the session")
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "tools", "x", ".git", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("core.fsmonitor outlived the session: %s", b)
	}
	if !pathExists(theirHook) {
		t.Error("the person's own nested repository lost its hook")
	}
}

// TestNestedSubmoduleKeptAtClose: a repository cloned under the project
// with its submodules (git clone --recurse-submodules) lost each
// submodule's .git file when the session closed — the screen took it for
// one pointing git elsewhere — so git in the submodule's folder worked on
// the outer repository. A .git file naming a module of a repository the
// session made is kept, and that module screened; one naming a module
// through a link, or another folder, still goes.
func TestNestedSubmoduleKeptAtClose(t *testing.T) {
	for _, made := range []bool{false, true} {
		t.Run(map[bool]string{false: "theirs", true: "made"}[made], func(t *testing.T) { testNestedSubmodule(t, made) })
	}
}

// testNestedSubmodule: in the person's repository (or, made, in a project
// whose repository the session made, with a submodule added to it).
func testNestedSubmodule(t *testing.T, made bool) {
	_, proj, _ := sandboxFixture(t)
	git(t, proj, "commit", "-q", "--allow-empty", "-m", "base")
	if _, ok := changedAt(filepath.Join(proj, ".git", "HEAD")); !ok {
		t.Skip("no change times here: the nested screen reads none")
	}
	sub, inner := "git -c protocol.file.allow=always clone -q --recurse-submodules $t/p inner", "inner"
	if made {
		os.RemoveAll(filepath.Join(proj, ".git"))
		sub, inner = "git init -q . && git -c protocol.file.allow=always submodule add -q $t/p inner && git -C inner -c protocol.file.allow=always submodule update -q --init && git commit -qm base", "."
	}
	time.Sleep(1100 * time.Millisecond) // the screen allows a coarse clock's second before the first command
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	r := sandboxBash(t, tb, "auto", script(`#!/bin/sh
export GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@y GIT_COMMITTER_NAME=x GIT_COMMITTER_EMAIL=x@y
t=$(mktemp -d) && git init -q $t/s && git -C $t/s commit -q --allow-empty -m s && git init -q $t/p &&
git -C $t/p -c protocol.file.allow=always submodule add -q $t/s s && git -C $t/p commit -qm p &&
`+sub+` && rm -rf $t || exit 1
gd=$(git -C inner/s rev-parse --git-dir) && git -C inner/s config core.fsmonitor 'touch pwned'
mkdir -p y z `+inner+`/.git/modules/lnk && ln -s ../../.. `+inner+`/.git/modules/lnk/up
echo 'gitdir: ../`+inner+`/.git/modules/lnk/up/.git' > y/.git
echo 'gitdir: ../`+inner+`/.git' > z/.git
echo "made $gd"`))
	if !strings.Contains(r.Text, "made ") {
		t.Fatalf("the clone failed: %s", r.Text)
	}
	tb.sandbox.close()
	if got := gitOut(t, filepath.Join(proj, "inner", "s"), "log", "-1", "--format=%s"); got != "s" {
		t.Errorf("the submodule's folder is no longer its repository's: git log says %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "inner", "s", ".git")); len(b) > 0 {
		gd := strings.TrimSpace(strings.TrimPrefix(string(b), "gitdir:"))
		if c, _ := os.ReadFile(filepath.Join(proj, "inner", "s", gd, "config")); strings.Contains(string(c), "fsmonitor") {
			t.Errorf("core.fsmonitor outlived the session in the module: %s", c)
		}
	}
	for _, f := range []string{"y/.git", "z/.git"} {
		if pathExists(filepath.Join(proj, f)) {
			t.Errorf("%s, naming no module through folders alone, outlived the session", f)
		}
	}
	if !made && gitOut(t, proj, "log", "-1", "--format=%s") != "base" {
		t.Error("the project's repository was touched")
	}
}

// BenchmarkNestedScreen: the walk the session's close makes for
// repositories under the project (screenNestedRepos), over a tree named by
// LEMBAS_BENCH_TREE (Go's own src, say), none of whose repositories is new:
// LEMBAS_BENCH_TREE=$(go env GOROOT)/src go test -run '^$' -bench NestedScreen -benchtime 10x .
func BenchmarkNestedScreen(b *testing.B) {
	root := os.Getenv("LEMBAS_BENCH_TREE")
	if root == "" {
		b.Skip("set LEMBAS_BENCH_TREE to a folder to walk")
	}
	keep := theSandboxSpec().NewRepo.ConfigKeep
	for i := 0; i < b.N; i++ {
		if taken := screenNestedRepos(root, time.Now().Add(time.Hour), keep, false); len(taken) > 0 {
			b.Fatalf("screened %v", taken)
		}
	}
}

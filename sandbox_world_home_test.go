//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorldHomeHidden: a secret under a name no mask knows — another
// project's .env, a plain file in the home folder — is not in a command's
// view, while what ordinary work reads there is (git's config, a tool in
// ~/bin, a start-up file that is a symlink into the home folder), and a
// command that misses a hidden path is told why. sandbox.readable brings
// a path back. Fails without the home folder's tmpfs (plan.Home).
func TestWorldHomeHidden(t *testing.T) {
	tb, _, _, home := worldFixture(t, sandboxConfig{})
	writeFiles(t, home, map[string]string{
		"other/.env":                "API_KEY=CANARY-OTHER-ENV",
		".gitconfig":                "[user]\n\tname = Kept Name\n",
		"bin/tool.sh":               "#!/bin/sh\necho tool-ran\n",
		"dotfiles/bashrc":           "# bashrc-kept",
		"dotfiles/private":          "CANARY-DOTFILES-PRIVATE",
		"venvs/app/bin/activate-ok": "venv-kept",
	})
	t.Setenv("VIRTUAL_ENV", filepath.Join(home, "venvs", "app")) // a toolchain's variable (home.keep $VIRTUAL_ENV)
	if err := os.Symlink("dotfiles/bashrc", filepath.Join(home, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	tb = sandboxToolbox(t, tb.root, sandboxConfig{}) // a world started after the files were made
	r := sandboxBash(t, tb, "auto", script(`#!/bin/bash
cat ~/other/.env ~/dotfiles/private 2>&1
grep -r CANARY ~ 2>/dev/null
git config --global user.name
~/bin/tool.sh
cat ~/.bashrc
cat "$VIRTUAL_ENV/bin/activate-ok"
ls -a ~
cat ~/notes.txt`))
	seenNone(t, r.Text, []string{"CANARY-OTHER-ENV", "CANARY-DOTFILES-PRIVATE", "plain file in home", "CANARY-SSH-KEY"}, []string{"Kept Name", "tool-ran", "bashrc-kept", "venv-kept", "not in commands' view, though the person's home folder has it: ~/other/.env, ~/dotfiles/private, ~/notes.txt."})
	if rep := tb.sandbox.report("auto"); !strings.Contains(rep, "reads: everywhere but the home folder") {
		t.Errorf("sandbox check does not say the home folder is hidden:\n%s", rep)
	}
	// Go's and node's words for it are in lower case, the path quoted or not.
	if r := sandboxBash(t, tb, "auto", `node -e "require('fs').readFileSync(process.env.HOME+'/notes.txt')" 2>&1 || printf "Error: ENOENT: no such file or directory, open '%s/notes.txt'\n" ~; exit 1`); !strings.Contains(r.Text, "not in commands' view") {
		t.Errorf("a lower-case not-found is not explained:\n%s", r.Text)
	}

	tb2 := sandboxToolbox(t, tb.root, sandboxConfig{Readable: []string{"~/other"}})
	if r := sandboxBash(t, tb2, "auto", "cat ~/other/.env; cat ~/notes.txt"); !strings.Contains(r.Text, "CANARY-OTHER-ENV") || strings.Contains(r.Text, "plain file in home") {
		t.Errorf("sandbox.readable: [~/other] did not bring back just ~/other:\n%s", r.Text)
	}
	tb3 := sandboxToolbox(t, tb.root, sandboxConfig{Readable: []string{"~"}})
	if r := sandboxBash(t, tb3, "auto", "cat ~/notes.txt"); !strings.Contains(r.Text, "plain file in home") {
		t.Errorf("sandbox.readable: [~] did not keep the whole home folder:\n%s", r.Text)
	}
	if rep := tb3.sandbox.report("auto"); !strings.Contains(rep, "the whole home folder is in view") {
		t.Errorf("sandbox check with readable ~:\n%s", rep)
	}
}

// seenNone fails the test for each of leaks out holds, and each of wants
// it does not.
func seenNone(t *testing.T, out string, leaks, wants []string) {
	t.Helper()
	for _, leak := range leaks {
		if strings.Contains(out, leak) {
			t.Errorf("%q reached the command:\n%s", leak, out)
		}
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q:\n%s", want, out)
		}
	}
}

// writeFiles makes each file (path relative to dir → its text),
// executable, with the folders it needs.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		f := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorldHomeLinksAndTools: what the person's tools need of a hidden
// home folder is there (a reviewer found each missing): a kept path under
// a folder that is an absolute link (~/.local -> /…/dotlocal, as dotfile
// managers make), a PATH bin folder's neighbours (~/apps/node/bin/npm a
// link to ../lib/cli.sh; ~/bin/t a link to ~/tools/t.sh), the file ~/.gitconfig includes (user.name kept
// in ~/.gitconfig.local), and PATH spelled through a link to the home
// folder. Another project in ~/go/src stays hidden (~/go/bin and
// ~/go/pkg are kept, not ~/go).
func TestWorldHomeLinksAndTools(t *testing.T) {
	_, base, _, _ := worldFixture(t, sandboxConfig{})
	home := filepath.Join(base, "home3")
	writeFiles(t, home, map[string]string{
		"dotlocal/bin/hello":        "#!/bin/sh\necho hello-kept\n",
		"apps/node/lib/cli.sh":      "#!/bin/sh\necho npm-kept\n",
		".gitconfig":                "[include]\n\tpath = ~/.gitconfig.local\n",
		".gitconfig.local":          "[user]\n\tname = Local Name\n",
		"go/src/example.com/o/.env": "CANARY-GOPATH-OTHER",
		"go/bin/gotool":             "#!/bin/sh\necho gotool-kept\n",
		"tools/t.sh":                "#!/bin/sh\necho linked-tool-kept\n",
	})
	os.MkdirAll(filepath.Join(home, "bin"), 0o755)
	if err := os.Symlink("../tools/t.sh", filepath.Join(home, "bin", "t")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(home, "apps", "node", "bin"), 0o755)
	if err := os.Symlink("../lib/cli.sh", filepath.Join(home, "apps", "node", "bin", "npm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, "dotlocal"), filepath.Join(home, ".local")); err != nil {
		t.Fatal(err)
	}
	// HOME spelled through a link, as /home -> /var/home does.
	alias := filepath.Join(base, "home3-link")
	os.Symlink(home, alias)
	proj := filepath.Join(home, "src", "p")
	os.MkdirAll(proj, 0o755)
	git(t, proj, "init", "-q", ".")
	t.Setenv("HOME", alias)
	t.Setenv("PATH", alias+"/apps/node/bin:"+alias+"/go/bin:"+alias+"/bin:"+os.Getenv("PATH"))
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	if tb.sandbox.theWorld() == nil {
		t.Skipf("no world: %v", tb.sandbox.worldErr)
	}
	r := sandboxBash(t, tb, "auto", "~/.local/bin/hello; npm; gotool; t; git config --global --includes user.name; cat ~/go/src/example.com/o/.env")
	for _, want := range []string{"hello-kept", "npm-kept", "gotool-kept", "linked-tool-kept", "Local Name"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("missing %q:\n%s", want, r.Text)
		}
	}
	if strings.Contains(r.Text, "CANARY-GOPATH-OTHER") {
		t.Errorf("another project under ~/go/src reached the command:\n%s", r.Text)
	}
}

// TestWorldHomeHoldsProject: a project under the home folder is in view
// and writable there, in plan mode readable, and its siblings are not.
func TestWorldHomeHoldsProject(t *testing.T) {
	_, base, _, _ := worldFixture(t, sandboxConfig{})
	home := filepath.Join(base, "home2")
	proj := filepath.Join(home, "src", "p")
	for _, d := range []string{proj, filepath.Join(home, "src", "sibling")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(home, "src", "sibling", ".env"), []byte("CANARY-SIBLING"), 0o600)
	os.WriteFile(filepath.Join(proj, "in.txt"), []byte("project-file"), 0o644)
	t.Setenv("HOME", home)
	git(t, proj, "init", "-q", ".")
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	if tb.sandbox.theWorld() == nil {
		t.Skip("no world")
	}
	r := sandboxBash(t, tb, "auto", "cat in.txt; echo made > out.txt && cat out.txt; ls ~/src; cat ~/src/sibling/.env")
	if !strings.Contains(r.Text, "project-file") || !strings.Contains(r.Text, "made") || strings.Contains(r.Text, "CANARY-SIBLING") || strings.Contains(r.Text, "sibling\n") {
		t.Errorf("the project under home, or its sibling:\n%s", r.Text)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "out.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("the write in the project did not reach it: %q %v", b, err)
	}
	if r := sandboxBash(t, tb, "plan", "cat in.txt"); !strings.Contains(r.Text, "project-file") {
		t.Errorf("plan mode does not see the project under home:\n%s", r.Text)
	}
	// A file config makes writable, in the hidden home folder: its mount
	// point is a file (a folder there failed the world's start).
	log := filepath.Join(home, "log.txt")
	os.WriteFile(log, nil, 0o644)
	tb2 := sandboxToolbox(t, proj, sandboxConfig{Writable: []string{"~/log.txt"}, HasList: true})
	if r := sandboxBash(t, tb2, "auto", "echo line >> ~/log.txt && cat ~/log.txt"); r.IsError || !strings.Contains(r.Text, "line") {
		t.Errorf("a writable file in the home folder:\n%s", r.Text)
	}
	if b, _ := os.ReadFile(log); string(b) != "line\n" {
		t.Errorf("the write did not reach ~/log.txt: %q", b)
	}
	if tb2.sandbox.theWorld() == nil {
		t.Errorf("the world did not start: %v", tb2.sandbox.worldErr)
	}
}

// TestSandboxAgentConfig: a script the model wrote cannot rewrite the
// project's agent and editor configuration, which the file tools always
// ask about: an untracked .claude/settings.json stays as it was (bound
// read-only in the world and in the helper's namespace) and the model is
// told why. What git tracks is written (a checkout of another branch
// works), a .vscode that is a link does not stop the world, and ordinary
// files beside them are written. Fails without policyParts.Agent.
func TestSandboxAgentConfig(t *testing.T) {
	for _, world := range []bool{true, false} {
		t.Run(map[bool]string{true: "world", false: "helper"}[world], func(t *testing.T) {
			_, proj, _ := sandboxFixture(t)
			settings := filepath.Join(proj, ".claude", "settings.json")
			writeFiles(t, proj, map[string]string{".claude/settings.json": `{"hooks": {}}`, ".idea/tracked.xml": "<v1/>"})
			git(t, proj, "add", ".idea")
			git(t, proj, "commit", "-qm", "idea")
			git(t, proj, "checkout", "-qb", "other")
			writeFiles(t, proj, map[string]string{".idea/tracked.xml": "<v2/>", ".idea/added.xml": "<new/>"})
			git(t, proj, "add", ".idea")
			git(t, proj, "commit", "-qm", "idea v2")
			git(t, proj, "checkout", "-q", "-")
			tb := sandboxToolbox(t, proj, sandboxConfig{})
			tb.sandbox.noWorld = !world
			if world && tb.sandbox.theWorld() == nil {
				t.Skip("no world here")
			}
			r := sandboxBash(t, tb, "auto", script(`#!/bin/sh
printf '{"hooks":{"SessionStart":[{"command":"sh -c pwned"}]}}' > .claude/settings.json
echo ordinary > notes.md
git checkout -q other && cat .idea/added.xml
exit 3`))
			if b, _ := os.ReadFile(settings); string(b) != `{"hooks": {}}` {
				t.Errorf(".claude/settings.json was rewritten to %q:\n%s", b, r.Text)
			}
			if b, _ := os.ReadFile(filepath.Join(proj, "notes.md")); string(b) != "ordinary\n" {
				t.Errorf("an ordinary file was not written: %q\n%s", b, r.Text)
			}
			if b, _ := os.ReadFile(filepath.Join(proj, ".idea", "tracked.xml")); string(b) != "<v2/>" || !strings.Contains(r.Text, "<new/>") {
				t.Errorf("the checkout of what git tracks in .idea did not happen (%q):\n%s", b, r.Text)
			}
			if !strings.Contains(r.Text, "agent and editor configuration") {
				t.Errorf("the model is not told why:\n%s", r.Text)
			}
		})
	}
	// A .vscode that is a link (to a folder of the person's): the world
	// starts, and the link is left alone.
	_, proj, _ := sandboxFixture(t)
	os.MkdirAll(filepath.Join(proj, "..", "vscode-shared"), 0o755)
	os.Symlink("../vscode-shared", filepath.Join(proj, ".vscode"))
	tb := sandboxToolbox(t, proj, sandboxConfig{})
	if tb.sandbox.theWorld() == nil {
		t.Errorf("a .vscode link stopped the world: %v", tb.sandbox.worldErr)
	}
}

// BenchmarkWorldStart: a session's world from nothing to its first
// command's end, with the home folder hidden (the default) and whole
// (sandbox.readable: [~]), so what hiding it costs a session is a figure
// anyone can take: go test -run '^$' -bench WorldStart -benchtime 30x .
func BenchmarkWorldStart(b *testing.B) {
	needLandlock(b)
	root := b.TempDir()
	git(b, root, "init", "-q", ".")
	for _, c := range []struct {
		name string
		cfg  sandboxConfig
	}{{"hidden", sandboxConfig{}}, {"whole", sandboxConfig{Readable: []string{"~"}}}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tb, err := newToolbox(root, false)
				if err != nil {
					b.Fatal(err)
				}
				tb.shell, tb.sandbox = "/bin/bash", newSandbox(c.cfg, root)
				if tb.sandbox.theWorld() == nil {
					b.Skipf("no world: %v", tb.sandbox.worldErr)
				}
				if r := sandboxBash(b, tb, "auto", "true"); r.IsError {
					b.Fatal(r.Text)
				}
				tb.sandbox.close()
			}
		})
	}
}

// TestSandboxHomeHiddenLandlock: with no world (Landlock alone, as on a
// kernel that refuses user namespaces) the home folder is hidden too:
// Landlock reads everywhere but there, where only the kept paths are read,
// so another project's .env is refused while git's config, a tool in ~/bin
// and the project are not. Fails without sandboxPolicy.Home.
func TestSandboxHomeHiddenLandlock(t *testing.T) {
	_, _, _, home := worldFixture(t, sandboxConfig{})
	proj := filepath.Join(home, "src", "p")
	writeFiles(t, home, map[string]string{
		"other/.env":   "API_KEY=CANARY-OTHER-ENV",
		".gitconfig":   "[user]\n\tname = Kept Name\n",
		"bin/tool.sh":  "#!/bin/sh\necho tool-ran\n",
		"src/p/in.txt": "project-file",
	})
	for _, how := range []string{"helper", "thread"} {
		t.Run(how, func(t *testing.T) {
			tb := sandboxToolbox(t, proj, sandboxConfig{}, func(s *sandbox) { s.noWorld = true })
			if how == "thread" {
				tb.sandbox.nsOnce.Do(func() {}) // no namespaces: Landlock on a thread alone
			}
			r := sandboxBash(t, tb, "auto", script(`#!/bin/bash
cat ~/other/.env 2>&1
git config --global user.name
~/bin/tool.sh
cat in.txt; echo made > out.txt && cat out.txt
cat ~/notes.txt`))
			seenNone(t, r.Text, []string{"CANARY-OTHER-ENV", "plain file in home"}, []string{"Kept Name", "tool-ran", "project-file", "made", "Permission denied"})
			if rep := tb.sandbox.report("auto"); !strings.Contains(rep, "reads: everywhere but the home folder") {
				t.Errorf("sandbox check:\n%s", rep)
			}
		})
	}
}

// TestReadAllButUnlistable: a folder on the way to the home folder that
// cannot be listed (a shared host's 0711 /home; here one that is not
// there) lets nothing else in it be read, and the rules are still made:
// the error failed every command of a person whose /home is 0711.
func TestReadAllButUnlistable(t *testing.T) {
	var got []string
	add := func(p string, _ uint64) error { got = append(got, p); return nil }
	home := filepath.Join(t.TempDir(), "gone", "u")
	if err := readAllBut(home, []string{filepath.Join(home, ".gitconfig")}, 1, 1, add); err != nil {
		t.Fatalf("readAllBut: %v", err)
	}
	if len(got) == 0 || got[len(got)-1] != filepath.Join(home, ".gitconfig") {
		t.Errorf("rules made: %v", got)
	}
	for _, p := range got {
		if within(filepath.Dir(home), p) && p != filepath.Join(home, ".gitconfig") {
			t.Errorf("%s is allowed though its folder could not be listed", p)
		}
	}
}

// TestHomeNamedThroughLink: an MCP server's command line that names its
// program through a link to the home folder (/home -> /var/home) keeps
// that program's folder in its world's view.
func TestHomeNamedThroughLink(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "real")
	writeFiles(t, home, map[string]string{"mcp/server.js": "//"})
	os.Symlink(home, filepath.Join(base, "alias"))
	got := homeNamed(evalExisting(home), []string{"node", filepath.Join(base, "alias", "mcp", "server.js")})
	if len(got) != 1 || got[0] != filepath.Join(evalExisting(home), "mcp") {
		t.Errorf("homeNamed = %v", got)
	}
}

// TestWorldPublicKeysShown: the emptied ~/.ssh still shows the public
// keys, read-only (ssh-keygen -lf ~/.ssh/id_ed25519.pub is ordinary work);
// the private key, the config and a .pub that is a link to the private key
// stay out of view.
func TestWorldPublicKeysShown(t *testing.T) {
	_, proj, _ := sandboxFixture(t)
	home := filepath.Join(filepath.Dir(proj), "home")
	ssh := filepath.Join(home, ".ssh")
	os.MkdirAll(ssh, 0o700)
	for name, body := range map[string]string{"id_ed25519": "CANARY-PRIVATE", "id_ed25519.pub": "ssh-ed25519 AAAA-PUBLIC me@host", "config": "Host CANARY-CONFIG"} {
		if err := os.WriteFile(filepath.Join(ssh, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("id_ed25519", filepath.Join(ssh, "evil.pub"))
	t.Setenv("HOME", home)
	// The home hidden (the default) and in view (sandbox.readable: [~]).
	for _, cfg := range []sandboxConfig{{}, {Readable: []string{"~"}}} {
		testPublicKeysShown(t, proj, ssh, cfg)
	}
}

func testPublicKeysShown(t *testing.T, proj, ssh string, cfg sandboxConfig) {
	tb := sandboxToolbox(t, proj, cfg)
	if tb.sandbox.theWorld() == nil {
		t.Skipf("no world: %v", tb.sandbox.worldErr)
	}
	r := sandboxBash(t, tb, "auto", "cat ~/.ssh/id_ed25519.pub; ls -A ~/.ssh; cat ~/.ssh/id_ed25519 ~/.ssh/config ~/.ssh/evil.pub; echo x > ~/.ssh/id_ed25519.pub; echo y > ~/.ssh/new; echo end")
	if !strings.Contains(r.Text, "AAAA-PUBLIC") || !strings.Contains(r.Text, "end") {
		t.Errorf("the public key is not shown:\n%s", r.Text)
	}
	for _, bad := range []string{"CANARY-PRIVATE", "CANARY-CONFIG", "evil.pub\n", "config\n"} {
		if strings.Contains(r.Text, bad) {
			t.Errorf("%q is in view:\n%s", bad, r.Text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ssh, "id_ed25519.pub")); !strings.Contains(string(b), "AAAA-PUBLIC") {
		t.Errorf("the public key was written: %q", b)
	}
	if pathExists(filepath.Join(ssh, "new")) {
		t.Error("a file was made in ~/.ssh")
	}
}

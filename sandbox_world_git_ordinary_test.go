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

// gitViewScript prints what git sees of a repository's history, the same
// way in the world and on the host: HEAD, every ref, every reflog (short
// ids, newest first), the notes, a submodule's HEAD and the pack files.
const gitViewScript = `echo "HEAD $(git rev-parse -q --verify HEAD)"
git for-each-ref --format='ref %(refname) %(objectname)'
for r in HEAD $(git for-each-ref --format='%(refname)'); do echo "log $r $(git log -g --format=%h "$r" -- 2>/dev/null | tr '\n' ' ')"; done
git notes list 2>/dev/null | sed 's/^/note /'
[ -e sub/.git ] && echo "sub $(git -C sub rev-parse HEAD)"
for f in .git/objects/pack/pack-*; do echo "pack ${f##*/}"; done
true`

// gitView parses gitViewScript's output (after its marker, when the
// world's command printed other things first): key → value.
func gitView(out string) map[string]string {
	if i := strings.LastIndex(out, "@@view\n"); i >= 0 {
		out = out[i+len("@@view\n"):]
	}
	v := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "HEAD" || f[0] == "sub":
			v[f[0]] = strings.Join(f[1:], " ")
		case (f[0] == "ref" || f[0] == "log") && len(f) > 1:
			v[f[0]+" "+f[1]] = strings.Join(f[2:], " ") // ref name sha, log name ids…
		case f[0] == "pack" && len(f) == 2:
			v[line] = ""
		case f[0] == "note" && len(f) == 3:
			v["note "+f[2]] = f[1] // note object commit
		}
	}
	return v
}

// subsequence says whether every word of a is in b, in order.
func subsequence(a, b string) bool {
	bw := strings.Fields(b)
	for _, w := range strings.Fields(a) {
		for len(bw) > 0 && bw[0] != w {
			bw = bw[1:]
		}
		if len(bw) == 0 {
			return false
		}
		bw = bw[1:]
	}
	return true
}

// gitViewDiff is how the host's view falls short of the world's: every
// ref, reflog entry, note, pack and HEAD the world sees must be the
// host's too. The host may keep more only of the refs in kept (deleted or
// rewritten in the world: git's history is add-only), and more packs.
func gitViewDiff(world, host map[string]string, kept map[string]bool) []string {
	var out []string
	isKept := func(name string) bool {
		for k := range kept {
			if k == name || strings.HasSuffix(k, "/") && strings.HasPrefix(name, k) {
				return true
			}
		}
		return false
	}
	for k, wv := range world {
		hv, ok := host[k]
		name, _ := strings.CutPrefix(strings.TrimPrefix(k, "ref "), "log ")
		switch {
		case strings.HasPrefix(k, "log ") && isKept(name):
			if !subsequence(wv, hv) {
				out = append(out, k+": world "+wv+" host "+hv)
			}
		case !ok || hv != wv:
			out = append(out, k+": world "+wv+" host "+hv)
		}
	}
	for k, hv := range host {
		name, _ := strings.CutPrefix(strings.TrimPrefix(k, "ref "), "log ")
		if _, ok := world[k]; !ok && !isKept(name) && !strings.HasPrefix(k, "log ") && !strings.HasPrefix(k, "pack ") {
			out = append(out, k+": only the host has "+hv)
		}
	}
	return out
}

// gitOrdinaryStep is one command of an ordinary session's git work.
type gitOrdinaryStep struct {
	name    string
	run     string
	pause   time.Duration // a spell first (quiet: past the sync's 2 s)
	restart string        // the world goes first: "idle" (its idle end) or "close"
	kept    []string      // refs the world deleted or rewrote the reflog of (the host keeps theirs); a/ names those under it
}

// quiet is a spell past the 2 s after which the sync records a layer's
// folder as quiet (syncDir).
const quiet = 2100 * time.Millisecond

var gitOrdinarySteps = []gitOrdinaryStep{
	{name: "commit", run: "echo 1 >> a && git commit -qam c1"},
	{name: "commit on another branch after a quiet spell", pause: quiet, run: "git checkout -q other && echo o >> o && git add o && git commit -qm o1 && git checkout -q main"},
	{name: "branch and tags", run: "git branch feat && git tag light && git tag -a -m ann ann"},
	{name: "commit on a new branch", run: "git checkout -q feat && echo f >> f && git add f && git commit -qm f1 && git checkout -q main"},
	{name: "cherry-pick", run: "git cherry-pick feat >/dev/null"},
	{name: "merge", run: "git merge -q --no-edit other"},
	{name: "rebase", run: "git checkout -q feat && git rebase -q main && git checkout -q main"},
	{name: "bisect", run: "git bisect start HEAD HEAD~2 >/dev/null && git bisect good >/dev/null && git bisect reset >/dev/null 2>&1", kept: []string{"refs/bisect/"}},
	{name: "branch to rename", run: "git branch feat2 feat"},
	// git says the rename failed: it could not rename the branch's section
	// in .git/config, which is read-only (protect); the refs are renamed.
	{name: "rename a branch", run: "git branch -m feat2 feat3 2>/dev/null; git rev-parse -q --verify feat3 >/dev/null", kept: []string{"refs/heads/feat2"}},
	{name: "stash twice", run: "echo s1 >> a && git stash -q && echo s2 >> a && git stash -q"},
	{name: "stash pop", run: "git stash pop -q", kept: []string{"refs/stash"}},
	{name: "stash again", run: "git checkout -q -- a && echo s3 >> a && git stash -q"},
	{name: "stash with untracked files", run: "echo u > u && git stash -q -u"},
	{name: "notes", run: "git notes add -m n1 HEAD"},
	{name: "a commit made by a process the command left", run: "(sleep 0.5; git commit -q --allow-empty -m left) >/dev/null 2>&1 </dev/null &"},
	{name: "gc after it and a quiet spell", pause: quiet, run: "test \"$(git log -1 --format=%s)\" = left && git gc -q"},
	{name: "commit after gc", run: "echo 2 >> a && git commit -qam c2"},
	{name: "repack and pack refs", run: "git repack -adbq 2>/dev/null && git pack-refs --all && git checkout -q other && git commit -q --allow-empty -m o2 && git checkout -q main"},
	{name: "push and fetch", run: "git push -q origin main feat && git fetch -q origin"},
	{name: "a remote in /tmp", run: "git init -q --bare --object-format=$(git rev-parse --show-object-format) /tmp/r.git && git push -q /tmp/r.git main && git clone -q /tmp/r.git /tmp/c && (cd /tmp/c && for i in $(seq 40); do echo $i > f$i; done && git add . && git -c user.email=x@y -c user.name=x commit -qm remote && git push -q) && git -c fetch.unpackLimit=1 fetch -q /tmp/r.git main:refs/remotes/tmp/main"},
	{name: "a commit by a process left as the world ends", run: leftCommit("late")},
	{name: "commit and gc in a world started again", pause: 600 * time.Millisecond, restart: "idle", run: "git log --format=%s | grep -qx late && echo 3 >> a && git commit -qam c3 && git gc -q"},
	{name: "commit in a submodule", run: "cd sub && echo s >> s && git add s && git commit -qm s1 && cd .. && git add sub && git commit -qm bump"},
	{name: "amend and reset", run: "git commit -q --amend -m amended && git branch keep && git reset -q --hard HEAD~1"},
	{name: "branch deleted and made again", run: "git branch -q -D feat && git branch feat keep", kept: []string{"refs/heads/feat"}},
	// The worktree's own folder (.git/worktrees/wt) is put back, as protect
	// says (the command is told); its branch and commit land.
	{name: "worktree", run: "git worktree add -q wt -b wtb && cd wt && echo w > w && git add w && git commit -qm w1"},
	{name: "commit on a branch the world had after a restart", restart: "close", run: "git checkout -q other && git commit -q --allow-empty -m o3 && git checkout -q main && git tag -a -m v2 v2"},
	{name: "merge a branch after a quiet spell", pause: quiet, run: "git merge -q --no-edit other && git stash drop -q", kept: []string{"refs/stash"}},
}

// TestWorldGitOrdinaryLands: an ordinary session's git work in the world —
// commits (after quiet spells too), branches, tags, cherry-pick, merge,
// rebase, bisect, a rename, stash, notes, a commit by a process a command
// left, gc, repack, pack-refs, a push and a fetch, a submodule's commit, a
// worktree, with the world ended between (by idle and by close) — is, after
// every command, what the host's git sees in the repository too; and once
// the session has ended, the repository has every ref, reflog entry and
// pack the world last showed. Run with the layers' folders read at each
// sync in a sha1 repository and, past git_watch_after commands, watched in
// a sha256 one; the refs packed at the start, as a clone's are.
func TestWorldGitOrdinaryLands(t *testing.T) {
	for _, watched := range []bool{false, true} {
		name := "read-sha1"
		if watched {
			name = "watched-sha256"
		}
		t.Run(name, func(t *testing.T) {
			testWorldGitOrdinary(t, gitOrdinarySteps, watched, map[bool]string{false: "sha1", true: "sha256"}[watched])
		})
	}
}

// testWorldGitOrdinary runs steps in a repository of the object format
// given (sha1, sha256) with a branch other, a bare remote origin in the
// project and a submodule sub, its refs packed (as a clone's are).
func testWorldGitOrdinary(t *testing.T, steps []gitOrdinaryStep, watched bool, format string) {
	tb, base, proj, _ := worldFixture(t, sandboxConfig{})
	ents, _ := os.ReadDir(filepath.Join(proj, ".git")) // made again in its format, the folder kept (the world's plan holds it)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(proj, ".git", e.Name()))
	}
	git(t, proj, "init", "-q", "--object-format="+format, "-b", "main")
	git(t, proj, "config", "user.email", "t@example.com")
	git(t, proj, "config", "user.name", "T")
	os.WriteFile(filepath.Join(proj, "a"), []byte("a\n"), 0o644)
	git(t, proj, "add", "a")
	git(t, proj, "commit", "-qm", "base")
	git(t, proj, "branch", "other")
	remote := filepath.Join(proj, "remote.git")
	git(t, proj, "init", "-q", "--bare", "--object-format="+format, remote)
	git(t, proj, "remote", "add", "origin", remote)
	git(t, proj, "push", "-q", "origin", "main")
	src := filepath.Join(base, "subsrc")
	os.MkdirAll(src, 0o755)
	git(t, src, "init", "-q", "--object-format="+format)
	git(t, src, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "--allow-empty", "-m", "sub")
	git(t, proj, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
	git(t, proj, "commit", "-qm", "sub")
	git(t, filepath.Join(proj, "sub"), "config", "user.email", "t@example.com")
	os.WriteFile(filepath.Join(proj, ".git", "info", "exclude"), []byte("remote.git\nwt\n"), 0o644)
	git(t, proj, "pack-refs", "--all")
	// The world may be up already (worldFixture), its git layers mounted on
	// the folders the repository's making again above removed, which took
	// the mounts away in it: git there would write the repository directly.
	tb.sandbox.world.close()

	hostView := func() map[string]string {
		t.Helper()
		cmd := exec.Command("sh", "-c", gitViewScript)
		cmd.Dir = proj
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the host's view: %v", err)
		}
		if out, err := exec.Command("git", "-C", proj, "fsck", "--connectivity-only", "--no-dangling").CombinedOutput(); err != nil {
			t.Errorf("the repository is missing objects: %v\n%s", err, out)
		}
		return gitView(string(out))
	}
	run := func(line string) string {
		t.Helper()
		r := sandboxBash(t, tb, "auto", "("+line+") && echo step-ok\necho @@view\n"+gitViewScript)
		if !strings.Contains(r.Text, "step-ok") {
			t.Fatalf("%s: %s", line, r.Text)
		}
		return r.Text
	}
	run("true")
	w := tb.sandbox.world.(*world)
	// The submodule was made above within the coarse tick before the
	// session's first command, which would take it for one the session
	// made (screenNestedRepos, at the session's end); it is the person's.
	tb.sandbox.firstCmd = time.Now()
	if w.git == nil || w.gitKept() != "overlay" {
		t.Skip("git's history is not kept in layers here")
	}
	if watched {
		for w.git.looks <= theSandboxSpec().GitWatchAfter {
			run("true")
		}
		if w.git.noWatch {
			t.Skip("no inotify here")
		}
	}
	kept := map[string]bool{}
	var last map[string]string
	for _, s := range steps {
		time.Sleep(s.pause)
		switch s.restart {
		case "idle":
			w.idleCheck()
		case "close":
			w.close()
		}
		for _, k := range s.kept {
			kept[k] = true
		}
		out := run(s.run)
		host := hostView() // before the world's view below is read: what this command's sync landed
		last = gitView(out)
		for _, d := range gitViewDiff(last, host, kept) {
			t.Errorf("%s: %s", s.name, d)
		}
	}
	tb.sandbox.close()
	for _, d := range gitViewDiff(last, hostView(), kept) {
		t.Errorf("after the session: %s", d)
	}
}

// TestWorldGitReflogRewrittenLands: a reflog the world rewrote and then
// added to never reached the repository again — the sync copied a reflog
// only when it had grown from the repository's — so a stash pushed after
// a pop was missing from the person's git stash list (refs/stash named it,
// its reflog did not), and a branch deleted and made again kept only its
// old reflog. The entries the world added now land after what the
// repository kept.
func TestWorldGitReflogRewrittenLands(t *testing.T) {
	testWorldGitOrdinary(t, []gitOrdinaryStep{
		{name: "stash twice", run: "echo s1 >> a && git stash -q && echo s2 >> a && git stash -q"},
		{name: "stash pop", run: "git stash pop -q", kept: []string{"refs/stash"}},
		{name: "stash again", run: "git checkout -q -- a && echo s3 >> a && git stash -q"},
		{name: "branch deleted and made again", run: "git commit -q --allow-empty -m x && git branch -q -D other && git branch other", kept: []string{"refs/heads/other"}},
	}, false, "sha1")
}

// TestWorldGitRefClashNamed: a branch renamed into a folder of its own
// name (git branch -m fix fix/x), or one made where the world deleted a
// folder of branches, cannot land — the repository keeps the deleted one,
// and refs/heads/fix and refs/heads/fix/x cannot both be — and was lost
// without a word when the world ended (the sync's error went nowhere).
// The command is told, once, which refs are in its own view only.
func TestWorldGitRefClashNamed(t *testing.T) {
	tb, _, proj, _ := worldFixture(t, sandboxConfig{})
	git(t, proj, "commit", "-q", "--allow-empty", "-m", "base")
	git(t, proj, "branch", "fix")
	git(t, proj, "branch", "a/b")
	if w := tb.sandbox.world.(*world); w.git == nil {
		t.Skip("git's history is not kept in layers here")
	}
	for _, c := range [][2]string{
		{"git commit -q --allow-empty -m x && git branch -m fix fix/x; true", ".git/refs/heads/fix/x, .git/logs/refs/heads/fix/x, which"},
		{"git branch -q -D a/b && git branch a", ".git/refs/heads/a, .git/logs/refs/heads/a, which"},
	} {
		r := sandboxBash(t, tb, "auto", c[0])
		if tb.sandbox.world.(*world).gitKept() != "overlay" {
			t.Skip("git's history is not kept in layers here")
		}
		if !strings.Contains(r.Text, c[1]) || !strings.Contains(r.Text, "could not be copied into the repository") {
			t.Errorf("%s: the command is not told its ref cannot land:\n%s", c[0], r.Text)
		}
	}
	if r := sandboxBash(t, tb, "auto", "git status"); strings.Contains(r.Text, "could not be copied") {
		t.Errorf("a later command is told the clash again:\n%s", r.Text)
	}
}

// TestWorldGitPackedLands: a commit and a gc in one command (git gc, or
// the gc --auto a commit or fetch runs, packs the refs and removes their
// loose files) left the repository with its old loose ref, which hid the
// packed one: the commit was not on the branch outside the world, the
// first of a session included. The loose refs the world packed, a folder
// of them too, are moved to their packed values.
func TestWorldGitPackedLands(t *testing.T) {
	testWorldGitOrdinary(t, []gitOrdinaryStep{
		{name: "loose refs", run: "git commit -q --allow-empty -m zero && git branch fix/x && git branch fix/y"},
		{name: "commits and a gc in one command", restart: "close", run: "git commit -q --allow-empty -m one && git checkout -q fix/x && git commit -q --allow-empty -m x && git checkout -q main && git gc -q"},
		{name: "a branch of the folder made again", run: "git commit -q --allow-empty -m two && git branch -f fix/y && git pack-refs --all && git branch fix/z"},
	}, false, "sha1")
}

// TestWorldGitLeftProcessLands: a commit made by a process a command left
// running (a job, a gc --auto gone to the background), after that
// command's sync, was lost when the world ended idle: nothing synced at
// that end, and the next world's start emptied the layers. It lands as
// the layers are emptied.
func TestWorldGitLeftProcessLands(t *testing.T) {
	testWorldGitOrdinary(t, []gitOrdinaryStep{
		{name: "a commit by a process left", run: leftCommit("left")},
		{name: "in a world started again", pause: 600 * time.Millisecond, restart: "idle", run: "test \"$(git log -1 --format=%s)\" = left"},
	}, false, "sha1")
}

// leftCommit is a command leaving a process that commits once the
// command's shell has ended (and its sync is done).
func leftCommit(msg string) string {
	return "(while kill -0 $$ 2>/dev/null; do sleep 0.05; done; sleep 0.2; git commit -q --allow-empty -m " + msg + ") >/dev/null 2>&1 </dev/null &"
}

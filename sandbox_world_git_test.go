//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// gitOut is git's output on the host, trimmed; "" when it fails.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestWorldHistoryKept: a script the model wrote and ran by name tries
// every way of losing an unpushed commit — reset, reflog expire, gc
// --prune=now, deleted and packed refs, truncated packs, rm -rf of the
// objects, refs and logs — and afterwards the repository, seen from the
// host, still has the commit and every branch; in a world started again
// ordinary git work (commit, branch, checkout -b, gc) goes on and lands.
func TestWorldHistoryKept(t *testing.T) {
	tb, _, proj, _ := worldFixture(t, sandboxConfig{})
	r := sandboxBash(t, tb, "auto", "echo a > a.txt && git add a.txt && git commit -qm first && echo b > b.txt && git add b.txt && git commit -qm unpushed && git branch side && git checkout -q -b feature && git checkout -q - && echo ok")
	if r.IsError || !strings.Contains(r.Text, "ok") {
		t.Fatalf("ordinary git work in the world: %s", r.Text)
	}
	t.Logf("git kept by: %s", tb.sandbox.world.(*world).gitKept())
	sha := gitOut(t, proj, "rev-parse", "HEAD")
	br := gitOut(t, proj, "symbolic-ref", "--short", "HEAD")
	if sha == "" || br == "" || gitOut(t, proj, "rev-parse", "--verify", "-q", "refs/heads/feature") == "" {
		t.Fatalf("the world's commit and branches did not reach the repository: %q %q", sha, br)
	}
	r = sandboxBash(t, tb, "auto", script(`#!/bin/sh
git reset -q --hard HEAD~1
git reflog expire --expire=now --all
git gc -q --prune=now
git update-ref -d refs/heads/side
git branch -q -D feature
git pack-refs --all
git update-ref -d refs/heads/`+br+`
for f in .git/objects/pack/* .git/objects/??/*; do chmod u+w "$f"; : > "$f"; done
rm -rf .git/objects/* .git/refs/heads/* .git/logs/* .git/packed-refs
git cat-file -e `+sha+` || echo gone-here
echo tried`))
	if !strings.Contains(r.Text, "gone-here") {
		t.Logf("the world's view kept the commit (the script did less than it meant): %s", r.Text)
	}
	if err := exec.Command("git", "-C", proj, "cat-file", "-e", sha).Run(); err != nil {
		t.Fatalf("the unpushed commit %s is lost: %v\n%s", sha, err, r.Text)
	}
	for _, ref := range []string{br, "side", "feature"} {
		if gitOut(t, proj, "rev-parse", "--verify", "-q", "refs/heads/"+ref) == "" {
			t.Errorf("the branch %s was deleted\n%s", ref, r.Text)
		}
	}
	if !strings.Contains(gitOut(t, proj, "reflog", br), sha[:7]) {
		t.Errorf("the reflog lost the commit: %s", gitOut(t, proj, "reflog", br))
	}
	if out, err := exec.Command("git", "-C", proj, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("the repository is damaged: %v\n%s", err, out)
	}
	// A world started again sees the whole history, and works on.
	tb.sandbox.world.close()
	r = sandboxBash(t, tb, "auto", "git cat-file -e "+sha+" && git reset -q --hard "+sha+" && echo c > c.txt && git add c.txt && git commit -qm third && git branch x && git checkout -q -b y && git gc -q && git log --oneline | wc -l")
	if r.IsError || !strings.Contains(r.Text, "3") {
		t.Fatalf("git work in a world started again: %s", r.Text)
	}
	for _, ref := range []string{"x", "y"} {
		if gitOut(t, proj, "rev-parse", "--verify", "-q", "refs/heads/"+ref) == "" {
			t.Errorf("the branch %s made in the world is not in the repository", ref)
		}
	}
	if got := gitOut(t, proj, "log", "--format=%s", "-1", "y"); got != "third" {
		t.Errorf("the world's commit is not in the repository: %q", got)
	}
	if out, err := exec.Command("git", "-C", proj, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("the repository is damaged after gc in the world: %v\n%s", err, out)
	}
	if ents, _ := os.ReadDir(filepath.Join(proj, ".git", "objects", "pack")); len(ents) == 0 {
		t.Error("gc's pack did not reach the repository")
	}
}

// TestWorldUnixSocketsUnreachable: a Unix socket outside the writable
// roots (an agent's or a daemon's, in a folder the world can read) cannot
// be connected to from a command, by a script run by name; a socketpair
// still works, and so does go test.
func TestWorldUnixSocketsUnreachable(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	// The person's go build cache, so go test below builds little (it is
	// copy-on-write in the world).
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		t.Setenv("GOCACHE", strings.TrimSpace(string(out)))
	}
	tb, base, _, _ := worldFixture(t, sandboxConfig{})
	dir := filepath.Join(base, "agent")
	os.MkdirAll(dir, 0o755)
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var hits atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Write([]byte("CANARY-AGENT\n"))
			c.Close()
		}
	}()
	// The listener answers from outside, so the test can fail.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(c) // the listener has counted it once this ends
	c.Close()
	hits.Store(0)
	r := sandboxBash(t, tb, "auto", script(`#!/bin/sh
test -S `+sq(sock)+` && echo seen
`+py+` -c 'import socket
try:
    s = socket.socket(socket.AF_UNIX); s.connect("`+sock+`"); print(s.recv(100))
except OSError as e:
    print("refused:", e)
a, b = socket.socketpair(); a.send(b"x"); print("pair-ok" if b.recv(1) == b"x" else "pair-bad")'
`))
	if hits.Load() != 0 || strings.Contains(r.Text, "CANARY") || !strings.Contains(r.Text, "refused:") {
		t.Errorf("a Unix socket outside was reached (%d connections): %s", hits.Load(), r.Text)
	}
	if !strings.Contains(r.Text, "seen") || !strings.Contains(r.Text, "pair-ok") {
		t.Errorf("the socket should be visible and a socketpair should work: %s", r.Text)
	}
	r = sandboxBash(t, tb, "auto", `mkdir -p m && cd m && printf 'module m\n\ngo 1.21\n' > go.mod && printf 'package m\n\nimport "testing"\n\nfunc TestX(t *testing.T) {}\n' > m_test.go && GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod go test ./... && cd .. && rm -rf m`)
	if r.IsError || !strings.Contains(r.Text, "ok") {
		t.Errorf("go test in the world: %s", r.Text)
	}
}

// TestWorldPlanMetadata: in plan mode chmod, touch -d and chown change
// nothing in the project (seccomp: Landlock does not mediate them), and a
// file outside the writable roots keeps its mode and time in every mode
// (the read-only root).
func TestWorldPlanMetadata(t *testing.T) {
	tb, _, proj, home := worldFixture(t, sandboxConfig{})
	in := filepath.Join(proj, "plan.txt")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(home, "notes.txt")
	for _, mode := range []string{"plan", "manual", "edit", "auto"} {
		files := []string{out}
		if mode == "plan" {
			files = append(files, in)
		}
		var before []os.FileInfo
		for _, f := range files {
			fi, _ := os.Stat(f)
			before = append(before, fi)
		}
		body := "#!/bin/sh\n"
		for _, f := range files {
			body += fmt.Sprintf("chmod 600 %[1]s; chmod 777 %[1]s; touch -d 2001-01-01 %[1]s; touch -m %[1]s; chown 0:0 %[1]s; chgrp 0 %[1]s\n", sq(f))
		}
		r := sandboxBash(t, tb, mode, "printf '%s\\n' "+sq(body+"echo tried")+" > /tmp/m.sh && sh /tmp/m.sh")
		for i, f := range files {
			after, _ := os.Stat(f)
			if after.Mode() != before[i].Mode() || !after.ModTime().Equal(before[i].ModTime()) {
				t.Errorf("%s: %s changed: %v %v → %v %v\n%s", mode, f, before[i].Mode(), before[i].ModTime(), after.Mode(), after.ModTime(), r.Text)
			}
		}
		want := "Read-only file system"
		if mode == "plan" {
			want = "Operation not permitted"
		}
		if !strings.Contains(r.Text, want) {
			t.Errorf("%s: no %q: %s", mode, want, r.Text)
		}
	}
	// Outside plan mode the project's metadata is the command's to change.
	if r := sandboxBash(t, tb, "auto", "chmod 600 plan.txt && touch -d 2001-01-01 plan.txt && echo ok"); r.IsError {
		t.Errorf("chmod in the project in auto: %s", r.Text)
	}
	if fi, _ := os.Stat(in); fi.Mode().Perm() != 0o600 {
		t.Errorf("chmod in the project did not land: %v", fi.Mode())
	}
}

// TestWorldGitDeletesNamed: a delete in git's history succeeds in the world
// and never reaches the repository; the command's result says which paths
// under .git were not deleted there and why, once — a later command that
// deletes nothing is told nothing — and many are named by the first few
// and a count.
func TestWorldGitDeletesNamed(t *testing.T) {
	tb, _, proj, _ := worldFixture(t, sandboxConfig{})
	r := sandboxBash(t, tb, "auto", "echo a > a.txt && git add a.txt && git commit -qm first && git branch side && echo ok")
	if r.IsError || !strings.Contains(r.Text, "ok") || strings.Contains(r.Text, "not applied") {
		t.Fatalf("ordinary git work in the world: %s", r.Text)
	}
	r = sandboxBash(t, tb, "auto", "git branch -q -D side && echo deleted")
	if !strings.Contains(r.Text, "deleted") {
		t.Fatalf("git branch -D in the world: %s", r.Text)
	}
	if gitOut(t, proj, "rev-parse", "--verify", "-q", "refs/heads/side") == "" {
		t.Fatalf("the branch was deleted in the repository")
	}
	// The ref was made in this world: its delete leaves no whiteout (the
	// layer below had no such file when the world looked), and is named all
	// the same; so is its reflog.
	if !strings.Contains(r.Text, ".git/refs/heads/side,") || !strings.Contains(r.Text, ".git/logs/refs/heads/side") ||
		!strings.Contains(r.Text, "not applied to the repository") || !strings.Contains(r.Text, "add-only") {
		t.Errorf("the result does not say the delete of .git/refs/heads/side and its reflog was not applied:\n%s", r.Text)
	}
	r = sandboxBash(t, tb, "auto", "git pack-refs --all && echo packed")
	if !strings.Contains(r.Text, "packed") || strings.Contains(r.Text, "not applied") {
		t.Errorf("refs packed (their loose files removed) are told as deleted:\n%s", r.Text)
	}
	tb.sandbox.world.close() // a world started again: the refs below it now, their deletes leave whiteouts
	r = sandboxBash(t, tb, "auto", "git branch -q made && echo made")
	r = sandboxBash(t, tb, "auto", "rm -rf .git/logs/refs && echo removed")
	if !strings.Contains(r.Text, "removed") || !strings.Contains(r.Text, "deleted .git/logs/refs/, ") {
		t.Errorf("a folder removed whole is not named as one:\n%s", r.Text)
	}
	if _, err := os.Stat(filepath.Join(proj, ".git", "logs", "refs", "heads", "side")); err != nil {
		t.Errorf("a reflog removed in the world is gone from the repository: %v", err)
	}
	r = sandboxBash(t, tb, "auto", "git status --short; echo quiet")
	if strings.Contains(r.Text, "not applied") {
		t.Errorf("a command that deleted nothing is told of an earlier delete:\n%s", r.Text)
	}
	r = sandboxBash(t, tb, "auto", "for i in 1 2 3 4 5 6 7 8; do git branch b$i; done && echo made")
	if strings.Contains(r.Text, "not applied") || gitOut(t, proj, "rev-parse", "--verify", "-q", "refs/heads/b8") == "" {
		t.Fatalf("branches made in the world: %s", r.Text)
	}
	r = sandboxBash(t, tb, "auto", "rm -f .git/refs/heads/b* && echo removed")
	if !strings.Contains(r.Text, "not applied") || !strings.Contains(r.Text, " and 2 more") || strings.Count(r.Text, ".git/refs/heads/b") != theSandboxSpec().GitGoneMax {
		t.Errorf("eight deletes are not named as the first %d and a count:\n%s", theSandboxSpec().GitGoneMax, r.Text)
	}
	if gitOut(t, proj, "rev-parse", "--verify", "-q", "refs/heads/b1") == "" {
		t.Error("a branch removed by rm in the world is gone from the repository")
	}
}

// gitGoneCase is the sandbox area's kind git_gone: git's layers as two
// commands leave them — the first makes files (synced into the
// repository), the second removes some from the layer (a delete of a file
// made in the same world leaves no whiteout) and may rewrite packed-refs —
// and the paths the second command's result names as deletes not applied.
func gitGoneCase(input json.RawMessage) (any, error) {
	var in struct {
		Made    []string `json:"made"`    // paths under .git the first command wrote (refs/…, logs/…)
		Removed []string `json:"removed"` // paths under .git the second command removed (a folder: all in it)
		Packed  []string `json:"packed"`  // refs packed-refs lists after the second command
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lembas-gitgone-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	git := filepath.Join(dir, ".git")
	pins := []string{filepath.Join(git, "objects"), filepath.Join(git, "refs"), filepath.Join(git, "logs")}
	for _, p := range pins {
		os.MkdirAll(p, 0o755)
	}
	k := newGitKeep(filepath.Join(dir, "layer"), pins)
	if err := k.reset(); err != nil {
		return nil, err
	}
	upper := func(p string) (string, error) { // .git/<pin>/rest → <pin's upper>/rest
		pin, rest, _ := strings.Cut(p, "/")
		for i, real := range pins {
			if filepath.Base(real) == pin {
				return filepath.Join(k.uppers[i], filepath.FromSlash(rest)), nil
			}
		}
		return "", fmt.Errorf("%q is not under objects, refs or logs", p)
	}
	for _, p := range in.Made {
		u, err := upper(p)
		if err != nil {
			return nil, err
		}
		os.MkdirAll(filepath.Dir(u), 0o755)
		os.WriteFile(u, []byte("0123456789012345678901234567890123456789\n"), 0o644)
	}
	k.before(true)
	if err := k.sync(); err != nil {
		return nil, err
	}
	n := k.goneCount()
	k.before(false)
	for _, p := range in.Removed {
		u, err := upper(p)
		if err != nil {
			return nil, err
		}
		os.RemoveAll(u)
	}
	if len(in.Packed) > 0 {
		var b strings.Builder
		for _, r := range in.Packed {
			b.WriteString("0123456789012345678901234567890123456789 " + r + "\n")
		}
		os.WriteFile(filepath.Join(git, "packed-refs"), []byte(b.String()), 0o644)
	}
	if err := k.sync(); err != nil {
		return nil, err
	}
	named := k.goneSince(n, false)
	note := ""
	if len(named) > 0 {
		note = shownList(named, theSandboxSpec().GitGoneMax)
	}
	return map[string]any{"named": named, "note_paths": note}, nil
}

// TestWorldGitQuietSync: after a command that changed nothing in git's
// history, the sync looks at none of its layers' folders (their watch is
// quiet); after one that did — a commit, a reflog grown in place, a branch
// deleted in the world — it looks, and what is new lands in the repository.
func TestWorldGitQuietSync(t *testing.T) {
	tb, _, proj, _ := worldFixture(t, sandboxConfig{})
	run := func(line string) {
		t.Helper()
		if r := sandboxBash(t, tb, "auto", line); r.IsError {
			t.Fatalf("%s: %s", line, r.Text)
		}
	}
	run("echo a > a.txt && git add a.txt && git commit -qm first && git branch side")
	k := tb.sandbox.world.(*world).git
	if k == nil || tb.sandbox.world.(*world).gitKept() != "overlay" {
		t.Skip("git's history is not kept in layers here")
	}
	looks := func() int {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.looks
	}
	// A short session is not watched (closing a watch costs a kernel grace
	// period, which -p would wait for); from git_watch_after looks on it is.
	if k.ino >= 0 {
		t.Errorf("the layers were watched after %d looks, before %d", looks(), theSandboxSpec().GitWatchAfter)
	}
	for looks() <= theSandboxSpec().GitWatchAfter {
		run("true")
	}
	if k.noWatch {
		t.Skip("no inotify here")
	}
	if k.ino < 0 {
		t.Fatalf("the layers were not watched after %d looks", looks())
	}
	n := looks()
	for i := 0; i < 3; i++ {
		run("git status -s >/dev/null && ls .git/objects >/dev/null && cat .git/logs/HEAD >/dev/null")
	}
	if got := looks(); got != n {
		t.Errorf("commands that changed nothing in git's history made the sync look %d times", got-n)
	}
	run("echo b > b.txt && git add b.txt && git commit -qm second")
	if looks() == n {
		t.Error("a commit did not make the sync look")
	}
	if gitOut(t, proj, "log", "--format=%s", "-1") != "second" {
		t.Errorf("the second commit did not reach the repository: %q", gitOut(t, proj, "log", "--oneline"))
	}
	n = looks()
	run("git checkout -q side && git checkout -q -")
	if looks() == n || !strings.Contains(gitOut(t, proj, "reflog", "-1", "HEAD"), "moving from side") {
		t.Errorf("a reflog grown in place did not reach the repository: %q", gitOut(t, proj, "reflog", "-3"))
	}
	n = looks()
	run("git branch -q -D side")
	if looks() == n {
		t.Error("a branch deleted in the world did not make the sync look")
	}
	if gitOut(t, proj, "rev-parse", "--verify", "-q", "refs/heads/side") == "" {
		t.Error("a branch deleted in the world is gone from the repository")
	}
}

// TestWorldGitCopiedUpLands: overlayfs, copying a folder of the
// repository up into a layer (refs/heads on a commit to a branch the
// repository had; an objects fan-out it had), puts the layer folder's
// modification time back, so a sync that judged folders by it alone never
// looked again once the first command had found the layer quiet: a commit
// made after a first command that touched no ref, and an object in a
// fan-out the repository had, never reached the repository (lost when the
// session ended).
func TestWorldGitCopiedUpLands(t *testing.T) {
	tb, _, proj, _ := worldFixture(t, sandboxConfig{})
	git(t, proj, "commit", "-q", "--allow-empty", "-m", "base")
	git(t, proj, "branch", "other")
	run := func(line string) string {
		t.Helper()
		r := sandboxBash(t, tb, "auto", line)
		if r.IsError {
			t.Fatalf("%s: %s", line, r.Text)
		}
		return r.Text
	}
	run("true")
	if w := tb.sandbox.world.(*world); w.git == nil || w.gitKept() != "overlay" {
		t.Skip("git's history is not kept in layers here")
	}
	// A blob whose fan-out folder the repository already has.
	base := gitOut(t, proj, "rev-parse", "HEAD")
	var data string
	for i := 0; ; i++ {
		data = fmt.Sprintf("x%d\n", i)
		if gitBlobID([]byte(data), len(base))[:2] == base[:2] {
			break
		}
	}
	time.Sleep(2100 * time.Millisecond) // the layers' folders old enough to be recorded as quiet
	run("true")
	run("git checkout -q other && echo c > c && git add c && git commit -qm on-other && printf '" + strings.TrimSuffix(data, "\n") + "\\n' | git hash-object -w --stdin")
	if got := gitOut(t, proj, "log", "-1", "--format=%s", "other"); got != "on-other" {
		t.Errorf("a commit to a branch the repository had did not reach it: %q", got)
	}
	if id := gitBlobID([]byte(data), len(base)); gitOut(t, proj, "cat-file", "-t", id) != "blob" {
		t.Errorf("an object in a fan-out folder the repository had did not reach it (%s)", id)
	}
}

// TestWorldGitSyncNoLinks is a review's find: the sync, outside the world,
// read a layer file by name after listing it, so a process of the world
// left running could swap the file (or a folder above it) for a link in
// between, and lembas copied what the link named — a key the world cannot
// read — into the repository. layerSwap makes the swap at that moment, in
// each of the three ways: the file, its folder, a FIFO in its place.
func TestWorldGitSyncNoLinks(t *testing.T) {
	for _, how := range []string{"file", "folder", "fifo"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			secret := filepath.Join(dir, "home", ".ssh")
			os.MkdirAll(secret, 0o700)
			os.WriteFile(filepath.Join(secret, "topic"), []byte("PRIVATE KEY canary-4471\n"), 0o600)
			git := filepath.Join(dir, ".git")
			pins := []string{filepath.Join(git, "objects"), filepath.Join(git, "refs"), filepath.Join(git, "logs")}
			for _, p := range pins {
				os.MkdirAll(p, 0o755)
			}
			k := newGitKeep(filepath.Join(dir, "layer"), pins)
			if err := k.reset(); err != nil {
				t.Fatal(err)
			}
			heads := filepath.Join(k.uppers[1], "heads")
			os.MkdirAll(heads, 0o755)
			os.WriteFile(filepath.Join(heads, "topic"), []byte("0123456789012345678901234567890123456789\n"), 0o644)
			swapped := false
			layerSwap = func(p string) {
				if swapped || filepath.Base(p) != "topic" {
					return
				}
				swapped = true
				switch how {
				case "file":
					os.Remove(p)
					os.Symlink(filepath.Join(secret, "topic"), p)
				case "folder":
					os.Rename(heads, heads+".was")
					os.Symlink(secret, heads)
				case "fifo":
					os.Remove(p)
					syscall.Mkfifo(p, 0o644)
				}
			}
			defer func() { layerSwap = nil }()
			k.before(true)
			done := make(chan error, 1)
			go func() { done <- k.sync() }()
			select {
			case <-done:
			case <-time.After(guard):
				t.Fatal("the sync hung on what was swapped in")
			}
			if !swapped {
				t.Fatal("the swap never ran: the test proves nothing")
			}
			b, err := os.ReadFile(filepath.Join(git, "refs", "heads", "topic"))
			if strings.Contains(string(b), "canary-4471") {
				t.Fatalf("the sync copied what the link named into the repository: %q", b)
			}
			if err == nil && len(b) > 0 && how != "fifo" {
				t.Logf("copied: %q", b)
			}
		})
	}
}

// TestWorldGitSwappedForLink: a command commits, then tries to swap .git
// for a link to a folder of the person's. Two layers keep the person's
// folder untouched: in the world .git is a mount point (the move fails,
// EBUSY), and the sync after the command writes the commit's objects, refs
// and reflogs through the repository's folders held open since the world
// started (os.Root), never by name. Either alone passes this test.
func TestWorldGitSwappedForLink(t *testing.T) {
	tb, base, proj, _ := worldFixture(t, sandboxConfig{})
	theirs := filepath.Join(base, "theirs")
	os.MkdirAll(theirs, 0o700)
	r := sandboxBash(t, tb, "auto", script("#!/bin/sh\necho b > b.txt && git add b.txt && git commit -qm second && git branch swapped\nmv .git .git-was || cp -a .git .git-was\nrm -rf .git 2>/dev/null; ln -s "+theirs+" .git 2>&1; ls -la .git; echo tried"))
	if !strings.Contains(r.Text, "tried") {
		t.Fatalf("the script did not run: %s", r.Text)
	}
	var planted []string
	filepath.WalkDir(theirs, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != theirs {
			planted = append(planted, p)
		}
		return nil
	})
	if len(planted) > 0 {
		t.Errorf("the sync wrote through the link into the person's folder: %v\n%s", planted, r.Text)
	}
	if _, err := os.Stat(filepath.Join(proj, ".git", "HEAD")); err != nil {
		t.Errorf("the repository's HEAD was not put back: %v\n%s", err, r.Text)
	}
}

//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSessionDirSwept: a session's folder names and locks its owner and
// goes when the sandbox closes; a new session sweeps the folders whose
// owner is gone (the lock free: killed, or never closed) and an older
// lembas's once an hour old, and never one whose owner lives.
func TestSessionDirSwept(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	sb := newSandbox(sandboxConfig{}, t.TempDir())
	d, err := sb.sessionDir()
	if err != nil {
		t.Fatal(err)
	}
	if sessionOwnerPid(d) != os.Getpid() {
		t.Errorf("the owner file does not name this process: %d", sessionOwnerPid(d))
	}
	sb.close()
	if pathExists(d) {
		t.Fatalf("close left %s", d)
	}
	mk := func(name string, owner bool) string {
		p := filepath.Join(tmp, sessionDirPrefix+name)
		os.MkdirAll(filepath.Join(p, "tmp"), 0o700)
		if owner {
			os.WriteFile(filepath.Join(p, sessionOwnerFile), []byte(strconv.Itoa(1<<22)+"\n"), 0o600)
		}
		return p
	}
	dead := mk("dead", true) // its owner was killed: nothing holds the lock
	live := mk("live", false)
	lock, err := lockSessionOwner(live) // held: as a live lembas holds it
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	oldLegacy, newLegacy := mk("old", false), mk("new", false)
	past := time.Now().Add(-2 * time.Hour)
	os.Chtimes(oldLegacy, past, past)
	sb2 := newSandbox(sandboxConfig{}, t.TempDir())
	defer sb2.close()
	if _, err := sb2.sessionDir(); err != nil {
		t.Fatal(err)
	}
	<-sb2.swept // the sweep runs beside the session's start
	for p, want := range map[string]bool{dead: false, live: true, oldLegacy: false, newLegacy: true} {
		if pathExists(p) != want {
			t.Errorf("%s: kept %v, want %v", filepath.Base(p), pathExists(p), want)
		}
	}
}

// TestCacheEnvWithoutWorld: without a world the caches are read-only and
// the tools write theirs in the session, but the module cache Go already
// has stays as it is — a build whose modules were all fetched before reads
// them there, and needs no network; where it does not exist yet, it is the
// session's too.
func TestCacheEnvWithoutWorld(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GOPATH", "")
	t.Setenv("TMPDIR", t.TempDir())
	sb := newSandbox(sandboxConfig{}, t.TempDir())
	defer sb.close()
	env := []string{"PATH=/bin", "GOCACHE=", "GOMODCACHE="}
	get := func(env []string, k string) (string, bool) {
		for _, kv := range env {
			if n, v, _ := strings.Cut(kv, "="); n == k {
				return v, true
			}
		}
		return "", false
	}
	dir, err := sb.sessionDir()
	if err != nil {
		t.Fatal(err)
	}
	out := sb.sandboxEnv(env, &sandboxRun{sb: sb})
	if v, _ := get(out, "GOMODCACHE"); !strings.HasPrefix(v, dir) {
		t.Errorf("no ~/go/pkg/mod: GOMODCACHE=%q, want a folder of the session %s", v, dir)
	}
	os.MkdirAll(filepath.Join(home, "go", "pkg", "mod"), 0o755)
	out = sb.sandboxEnv(env, &sandboxRun{sb: sb})
	if v, ok := get(out, "GOMODCACHE"); ok && v != "" {
		t.Errorf("~/go/pkg/mod exists: GOMODCACHE=%q, want it left to Go", v)
	}
	if v, _ := get(out, "GOCACHE"); !strings.HasPrefix(v, dir) {
		t.Errorf("GOCACHE=%q, want a folder of the session %s", v, dir)
	}
}

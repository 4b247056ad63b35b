package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStaleTempsSwept: what a kill in the middle of an atomic write leaves
// in the turns and sessions folders is removed when the service starts
// (pruneTurnFiles), once older than turns.stale_temp_s; a younger one may
// be a write in progress and stays, and so do the real files.
func TestStaleTempsSwept(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	now := time.Now()
	old := now.Add(-2 * time.Duration(theLinkSpec().Turns.StaleTempsS) * time.Second)
	var stale, fresh, real []string
	for _, dir := range []string{turnsDir(), filepath.Join(stateDir(), "sessions")} {
		os.MkdirAll(dir, 0o700)
		s, f, r := filepath.Join(dir, ".a.json.123.tmp"), filepath.Join(dir, ".b.json.456.tmp"), filepath.Join(dir, "a.json")
		for _, p := range []string{s, f, r} {
			if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		os.Chtimes(s, old, old)
		os.Chtimes(r, now, now)
		stale, fresh, real = append(stale, s), append(fresh, f), append(real, r)
	}
	pruneTurnFiles(now)
	for _, p := range stale {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a stale temp file is still there: %s", p)
		}
	}
	for _, p := range append(fresh, real...) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

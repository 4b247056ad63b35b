package main

// Two processes race for one session's lock: each takes it, proves it is
// alone while holding it (a marker file made with O_EXCL), and deletes the
// session, which used to unlink the lock file while holding it.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// lockRacer is one process of the race: rounds of take, prove, delete.
func lockRacer(dir string, rounds int) error {
	st := newStore(dir, nil)
	defer st.close()
	const id = "ses_race"
	marker := filepath.Join(dir, "holder")
	for i := 0; i < rounds; i++ {
		if st.lock(id) != nil {
			continue // the other holds it
		}
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("round %d: the lock was held by two processes at once", i)
		}
		if err != nil {
			return err
		}
		f.Close()
		if err := os.WriteFile(st.path(id), []byte("{}\n"), 0o600); err != nil {
			return err
		}
		if err := os.Remove(marker); err != nil {
			return err
		}
		if err := st.remove(id); err != nil {
			return err
		}
	}
	return nil
}

func TestStoreLockRace(t *testing.T) {
	if dir := os.Getenv("LEMBAS_LOCK_RACE"); dir != "" {
		n, _ := strconv.Atoi(os.Getenv("LEMBAS_LOCK_ROUNDS"))
		if err := lockRacer(dir, n); err != nil {
			t.Fatal(err)
		}
		return
	}
	skipNoFork(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sessions"), 0o700)
	var wg sync.WaitGroup
	outs := make([]string, 4)
	errs := make([]error, 4)
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestStoreLockRace$", "-test.count=1")
			cmd.Env = append(os.Environ(), "LEMBAS_LOCK_RACE="+dir, "LEMBAS_LOCK_ROUNDS=3000")
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}(i)
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil || !strings.Contains(outs[i], "PASS") {
			t.Errorf("racer %d (%v):\n%s", i, errs[i], outs[i])
		}
	}
}

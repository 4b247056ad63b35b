package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStoreRoundTripAndLocks(t *testing.T) {
	dir := t.TempDir()
	st := newStore(dir, nil)
	s, err := st.create("/proj")
	if err != nil {
		t.Fatal(err)
	}
	s.Messages = append(s.Messages, message{Role: "user", Content: "hi", Kind: "prompt"})
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	// No temp file is left, and no temp file ever ends in .json.
	ents, _ := os.ReadDir(filepath.Join(dir, "sessions"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	// Another store (another process) cannot open it while it is held.
	other := newStore(dir, nil)
	if _, err := other.open(s.ID); err == nil || !strings.Contains(err.Error(), "is open in another lembas process") {
		t.Errorf("second open: %v", err)
	}
	st.close()
	got, err := other.open(s.ID)
	if err != nil || got.Messages[0].Content != "hi" {
		t.Fatalf("reopen: %v %+v", err, got)
	}
	other.close()
	if _, err := other.read("../etc/passwd"); err == nil || !strings.Contains(err.Error(), "is not a session id") {
		t.Errorf("bad id: %v", err)
	}
}

func TestStoreCorruptSetAside(t *testing.T) {
	dir := t.TempDir()
	var warned []string
	st := newStore(dir, func(s string) { warned = append(warned, s) })
	good, _ := st.create("/p")
	st.close()
	os.WriteFile(filepath.Join(dir, "sessions", "20260101-000000-bad.json"), []byte(`{"id": trunc`), 0o600)
	all, err := st.list()
	if err != nil || len(all) != 1 || all[0].ID != good.ID {
		t.Errorf("list: %v %v", all, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "is corrupt") {
		t.Errorf("warnings %q", warned)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "sessions", "20260101-000000-bad.json.corrupt-*"))
	if len(m) != 1 {
		t.Errorf("corrupt file not set aside: %v", m)
	}
}

func TestRepairInterrupted(t *testing.T) {
	s := &session{Turns: []turn{{N: 1, Status: "running"}}, Messages: []message{
		{Role: "user", Content: "go", Kind: "prompt"},
		{Role: "assistant", ToolCalls: []toolCall{{ID: "a"}, {ID: "b"}}},
		{Role: "tool", ToolCallID: "a", Content: "done a"},
	}}
	if !repairSession(s) {
		t.Fatal("nothing repaired")
	}
	if s.Turns[0].Status != "interrupted" || len(s.Messages) != 4 || s.Messages[3].ToolCallID != "b" || s.Messages[3].Status != "interrupted" {
		t.Errorf("repaired %+v", s)
	}
	if repairSession(s) {
		t.Error("a repaired session repaired again")
	}
}

// startSlowTurn runs lembas -p in auto mode on a task whose bash call
// blocks, and returns once the command has started.
func startSlowTurn(t *testing.T, env []string, proj string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(lembasBin(t), "--mode", "auto", "--output-format", "json", "-p", "run the slow thing")
	cmd.Dir = proj
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh"}, env...)
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(filepath.Join(proj, "started")); err == nil {
			return cmd, &out
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	t.Fatalf("the command never started: %s", out.String())
	return nil, nil
}

// TestKillNineThenContinue kills lembas in the middle of a tool call: the
// session must stay readable, and -c must carry on from it.
func TestKillNineThenContinue(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo $$ > pgid; touch started; sleep 30"}}))
	proj := copyProject(t, "basic")
	state := t.TempDir()
	env := []string{"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + t.TempDir()}
	cmd, _ := startSlowTurn(t, env, proj)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// End the orphaned sleep's group — only a real group id: an empty or
	// partial file must never become "kill -9 -", which may hit our own group.
	if pg, err := os.ReadFile(filepath.Join(proj, "pgid")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(pg))); err == nil && n > 1 && n != ownGroup() {
			killGroupID(n)
		}
	}
	r := runLembas(t, env, proj, "", "sessions", "list")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("sessions list after kill -9: %d %q %q", r.code, r.stdout, r.stderr)
	}
	f.push(textReply("Picked up again."))
	r = runLembas(t, env, proj, "", "-c", "--output-format", "json", "-p", "go on")
	if r.code != 0 {
		t.Fatalf("-c after kill -9: %d %s", r.code, r.stderr)
	}
	var out headlessOutput
	json.Unmarshal([]byte(r.stdout), &out)
	if out.Answer != "Picked up again." {
		t.Errorf("answer %q", out.Answer)
	}
	// The model saw the interrupted call answered.
	res := toolResults(f.got()[1])
	if len(res) != 1 || !strings.Contains(res[0], "interrupted") {
		t.Errorf("results sent after kill -9: %q", res)
	}
	show := runLembas(t, env, proj, "", "sessions", "show", out.SessionID)
	if !strings.Contains(show.stdout, "turn 1: interrupted") || !strings.Contains(show.stdout, "turn 2: done") {
		t.Errorf("show:\n%s", show.stdout)
	}
}

// TestInterruptCancels sends SIGINT during a running command: exit 130,
// the command's process group killed, the turn stored as cancelled.
func TestInterruptCancels(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "touch started; sleep 30.375 & echo $! > child; wait"}}))
	proj := copyProject(t, "basic")
	env := []string{"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	cmd, out := startSlowTurn(t, env, proj)
	time.Sleep(100 * time.Millisecond) // let the shell write the child's pid
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, out.String())
	}
	var ho headlessOutput
	json.Unmarshal([]byte(out.String()[:strings.LastIndex(out.String(), "}")+1]), &ho)
	if ho.StopReason != "cancelled" || len(ho.ToolCalls) != 1 || ho.ToolCalls[0].Status != "cancelled" {
		t.Errorf("output %+v\n%s", ho, out.String())
	}
	pid, _ := os.ReadFile(filepath.Join(proj, "child"))
	if p := strings.TrimSpace(string(pid)); p == "" || !childGone(p, "30.375", 5*time.Second) {
		t.Errorf("the command's child %q outlived the cancel", p)
	}
	show := runLembas(t, env, proj, "", "sessions", "show", ho.SessionID)
	if !strings.Contains(show.stdout, "turn 1: cancelled") {
		t.Errorf("show:\n%s", show.stdout)
	}
}

// TestStoreTruncatedPrefixes: a session file of the single-object format
// cut at any byte is reported and set aside, never a panic, and every copy
// set aside is kept, even several within one second. (A journal cut at any
// byte is TestJournalTornEveryOffset.)
func TestStoreTruncatedPrefixes(t *testing.T) {
	dir := t.TempDir()
	st := newStore(dir, nil)
	s, err := st.create("/proj")
	if err != nil {
		t.Fatal(err)
	}
	s.Messages = append(s.Messages, message{Role: "user", Content: "héllo \"x\"", Kind: "prompt", Turn: 1},
		message{Role: "assistant", ToolCalls: []toolCall{{ID: "c1"}}, Turn: 1})
	s.Turns = append(s.Turns, turn{N: 1, Prompt: "héllo", Status: "running"})
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	st.close()
	os.Remove(st.path(s.ID))
	whole, _ := json.Marshal(s)
	asides := 0
	for n := 0; n < len(whole); n++ {
		os.WriteFile(st.oldPath(s.ID), whole[:n], 0o600)
		var warned []string
		other := newStore(dir, func(w string) { warned = append(warned, w) })
		if _, err := other.open(s.ID); err == nil || !strings.Contains(err.Error(), "is corrupt") {
			t.Fatalf("prefix of %d bytes opened: %v", n, err)
		}
		other.close()
		asides++
		if len(warned) != 1 {
			t.Fatalf("prefix of %d bytes: warnings %q", n, warned)
		}
	}
	m, _ := filepath.Glob(filepath.Join(dir, "sessions", s.ID+".json.corrupt-*"))
	if len(m) != asides {
		t.Errorf("%d copies set aside, %d kept", asides, len(m))
	}
	os.WriteFile(st.oldPath(s.ID), whole, 0o600)
	if got, err := newStore(dir, nil).open(s.ID); err != nil || got.Turns[0].Status != "interrupted" {
		t.Errorf("the whole file: %v", err)
	}
}

// TestStoreDeferredSyncs: with deferSyncs (-p's text and json) every save
// is written at once, so another reader (or the next process after a kill
// -9) finds it before any flush; flush then makes each journal durable
// and leaves nothing pending, and close flushes what is left.
func TestStoreDeferredSyncs(t *testing.T) {
	dir := t.TempDir()
	st := newStore(dir, nil)
	st.deferSyncs()
	s, err := st.begin("/proj")
	if err != nil {
		t.Fatal(err)
	}
	s.Messages = append(s.Messages, message{Role: "user", Content: "hi", Kind: "prompt"})
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	s.Messages = append(s.Messages, message{Role: "assistant", Content: "hello"})
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	sh := st.shadows[s.ID]
	if sh == nil || !sh.j.lazy || !sh.j.unsynced || !sh.j.dirUnsynced {
		t.Fatalf("after two lazy saves of a new session: %+v", sh)
	}
	_, recs, err := loadJournal(st.path(s.ID), 0o600, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := replaySession(recs, &journal{})
	if err != nil || len(got.Messages) != 2 || got.Messages[1].Content != "hello" {
		t.Fatalf("on disk before flush: %v %+v", err, got)
	}
	if err := st.flush(); err != nil {
		t.Fatal(err)
	}
	if sh.j.unsynced || sh.j.dirUnsynced {
		t.Errorf("pending after flush: %+v", sh.j)
	}
	s.Messages = append(s.Messages, message{Role: "user", Content: "more"})
	st.save(s)
	if !sh.j.unsynced {
		t.Errorf("a save after flush is not pending")
	}
	st.close()
	if sh.j.unsynced {
		t.Errorf("close left a save pending")
	}
	other := newStore(dir, nil)
	defer other.close()
	if re, err := other.open(s.ID); err != nil || len(re.Messages) != 3 {
		t.Fatalf("reopen: %v %+v", err, re)
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lastUserTexts is every user message of a request, in order.
func userTexts(r fakeRequest) []string {
	var out []string
	for _, m := range r.messages() {
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			out = append(out, s)
		}
	}
	return out
}

func countContaining(list []string, sub string) int {
	n := 0
	for _, s := range list {
		n += strings.Count(s, sub)
	}
	return n
}

func skipNoUnix(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("jobs are tested with a POSIX shell")
	}
}

// TestJobEndWakesDuringPrompt: a background command that ends while the
// prompt runs is marked to the model at its next step, once.
func TestJobEndWakesDuringPrompt(t *testing.T) {
	skipNoUnix(t)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo built; exit 3", "background": true}}),
		callsReply(fakeCall{"job_output", map[string]any{"id": "j1", "wait": 60}}),
		textReply("ok"))
	e, evs := newTestEngine(t, f, "auto", nil)
	t.Cleanup(func() { e.stopJobs() })
	out := e.runTurn(context.Background(), "build it in the background")
	if out.Err != nil || out.StopReason != "end_turn" {
		t.Fatalf("outcome %+v", out)
	}
	reqs := f.got()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	res := toolResults(reqs[1])
	if want := theSpec().Tools["bash"].text("started_job", "id", "j1", "title", "echo built; exit 3"); res[0] != "[#0001]\n"+want && !strings.Contains(res[0], want) {
		t.Errorf("bash result %q, want %q", res[0], want)
	}
	mark := fillPairs(theSpec().Loop.Jobs.Marks["ended"], "id", "j1", "kind", "command", "status", "failed",
		"title", "echo built; exit 3", "code", " (exit 3)", "next", "job action=output id=j1 reads what it wrote.")
	// job_output's wait returns at the job's first output, so the job may
	// end just after the last request was sent: then its mark waits for
	// the next turn instead. Either way the model is told once.
	<-e.jobs().get("j1").doneCh()
	users := userTexts(reqs[2])
	if n := countContaining(users, mark); n != 1 && !(n == 0 && e.pendingMarks()) {
		t.Errorf("the end mark is in the last request %d times (waiting: %v), want once; user messages %q", n, e.pendingMarks(), users)
	}
	var sawEnd bool
	for _, ev := range *evs {
		if ev.Type == evJob && ev.Job != nil && ev.Job.ID == "j1" && ev.Job.Status == "failed" && ev.Job.Code != nil && *ev.Job.Code == 3 {
			sawEnd = true
		}
	}
	if !sawEnd {
		t.Errorf("no job event for j1's end")
	}
	all := toolResults(reqs[2])
	if !strings.Contains(strings.Join(all, "\n"), "built") {
		t.Errorf("job_output did not show the output: %q", all)
	}
}

// TestJobEndWakesIdleSession: a job that ends between prompts wakes the
// session, and the turn that follows is the machine's, with the mark.
func TestJobEndWakesIdleSession(t *testing.T) {
	skipNoUnix(t)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "until test -f release; do sleep 0.02; done; echo served", "background": true}}),
		textReply("started"), textReply("it ended"))
	e, evs := newTestEngine(t, f, "auto", nil)
	t.Cleanup(func() { e.stopJobs() })
	woke := make(chan struct{}, 4)
	e.jx.wake = func() { woke <- struct{}{} }
	if out := e.runTurn(context.Background(), "start the server"); out.Err != nil {
		t.Fatal(out.Err)
	}
	select {
	case <-woke:
		t.Fatal("woken before the job ended")
	default:
	}
	os.WriteFile(filepath.Join(e.tb.root, "release"), nil, 0o644)
	select {
	case <-woke:
	case <-time.After(30 * time.Second):
		t.Fatal("the session was not woken when its job ended")
	}
	out, ran := e.runMachineTurn(context.Background())
	if !ran || out.Answer != "it ended" {
		t.Fatalf("machine turn: ran %v, %+v", ran, out)
	}
	last := f.got()[2]
	users := userTexts(last)
	p := users[len(users)-1]
	if !strings.Contains(p, "[This turn was started by lembas") || !strings.Contains(p, `<job-ended id="j1" kind="command" status="done">`) {
		t.Errorf("machine prompt %q", p)
	}
	if tr := e.sess.Turns[len(e.sess.Turns)-1]; tr.By != "machine" {
		t.Errorf("turn by %q, want machine", tr.By)
	}
	var machinePrompt bool
	for _, ev := range *evs {
		if ev.Type == evPrompt && ev.By == "machine" {
			machinePrompt = true
		}
	}
	if !machinePrompt {
		t.Error("no prompt event marked machine")
	}
	if again, ran := e.runMachineTurn(context.Background()); ran {
		t.Errorf("a second machine turn with nothing waiting: %+v", again)
	}
	// The person's own turns are what names a model; the machine's is not.
	if said := e.personSaid(); len(said) != 1 || said[0] != "start the server" {
		t.Errorf("person said %q", said)
	}
}

// TestCommandPastTimeoutBecomesJob: a foreground command still running at
// its timeout goes on as a job, with what it wrote so far.
func TestCommandPastTimeoutBecomesJob(t *testing.T) {
	skipNoUnix(t)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo early; until test -f release; do sleep 0.02; done; echo late", "timeout": 1}}),
		callsReply(fakeCall{"job_list", map[string]any{}}),
		textReply("ok"))
	e, _ := newTestEngine(t, f, "auto", nil)
	t.Cleanup(func() { e.stopJobs() })
	e.runTurn(context.Background(), "run it")
	res := toolResults(f.got()[1])
	want := theSpec().Tools["bash"].text("became_job", "seconds", 1, "id", "j1")
	if !strings.Contains(res[0], "early") || !strings.Contains(res[0], want) {
		t.Fatalf("bash result %q, want early and %q", res[0], want)
	}
	list := toolResults(f.got()[2])
	if !strings.Contains(list[len(list)-1], "j1 · command · running") {
		t.Errorf("job_list %q", list[len(list)-1])
	}
	j := e.jobs().get("j1")
	os.WriteFile(filepath.Join(e.tb.root, "release"), nil, 0o644)
	<-j.doneCh()
	text := j.read(theSpec().Tools["job"], false)
	if !strings.Contains(text, "late") || strings.Contains(text, "early") {
		t.Errorf("job output after adoption %q: want only what came after", text)
	}
}

// readPIDs reads "pid N" lines until it has n of them.
func readPIDs(t *testing.T, sc *bufio.Scanner, n int) []int {
	t.Helper()
	var pids []int
	for len(pids) < n && sc.Scan() {
		var p int
		if _, err := fmt.Sscanf(sc.Text(), "pid %d", &p); err == nil && p > 1 {
			pids = append(pids, p)
		}
	}
	if len(pids) < n {
		t.Fatalf("read %d pids, want %d (%v)", len(pids), n, sc.Err())
	}
	return pids
}

// procAlive says whether a process exists and is not a zombie.
//
// A pid a command reported may be its world's (its own pid namespace):
// a process whose innermost pid it is answers first, and a host process of
// that number counts only if it is not a kernel thread (whose small pids a
// world's pids often share).
func procAlive(pid int) bool {
	if pid <= 1 {
		return false
	}
	if runtime.GOOS == "linux" {
		if alive, found := worldPidAlive(pid); found {
			return alive
		}
		if c, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && len(c) == 0 {
			return false // a kernel thread: not a command's process
		}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if runtime.GOOS != "linux" {
			return exec.Command("kill", "-0", strconv.Itoa(pid)).Run() == nil
		}
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}

// waitGone waits until none of pids is alive, and says which still are.
func waitGone(pids []int) []int {
	deadline := time.Now().Add(20 * time.Second)
	for {
		var left []int
		for _, p := range pids {
			if procAlive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const treeCommand = `sleep 300 & echo "pid $!"; sleep 301 & echo "pid $!"; echo "pid $$"; wait`

// TestJobStopKillsTree: job_stop ends the command and every process it
// started, with no survivor.
func TestJobStopKillsTree(t *testing.T) {
	skipNoUnix(t)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": treeCommand, "background": true}}), textReply("started"))
	e, _ := newTestEngine(t, f, "auto", nil)
	t.Cleanup(func() { e.stopJobs() })
	e.runTurn(context.Background(), "start")
	j := e.jobs().get("j1")
	var pids []int
	for len(pids) < 3 {
		j.waitChange(context.Background(), 10*time.Second)
		j.mu.Lock()
		text := string(j.out.data)
		j.out.read = j.out.end()
		j.mu.Unlock()
		pids = pids[:0]
		for _, l := range strings.Split(text, "\n") {
			var p int
			if _, err := fmt.Sscanf(l, "pid %d", &p); err == nil && p > 1 {
				pids = append(pids, p)
			}
		}
		if st, _, _ := j.status(); st != "running" {
			t.Fatalf("job ended early: %q", text)
		}
	}
	res := toolJobStop(e, context.Background(), theSpec().Tools["job"], json.RawMessage(`{"id":"j1"}`))
	if !strings.Contains(res.Text, "Stopped job j1") {
		t.Errorf("job_stop: %q", res.Text)
	}
	if left := waitGone(pids); len(left) > 0 {
		t.Errorf("processes %v outlived job_stop", left)
	}
	if st, _, _ := j.status(); st != "stopped" {
		t.Errorf("status %q, want stopped", st)
	}
	again := toolJobStop(e, context.Background(), theSpec().Tools["job"], json.RawMessage(`{"id":"j1"}`))
	if !strings.Contains(again.Text, "had already ended: stopped") {
		t.Errorf("second job_stop: %q", again.Text)
	}
}

// TestJobsDieWithLembas: kill -9 of the process that owns a job leaves no
// process of the job behind. The owner is this test binary run again as a
// helper (TestJobsHelperProcess), which starts a job tree and waits.
func TestJobsDieWithLembas(t *testing.T) {
	skipNoUnix(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestJobsHelperProcess$", "-test.count=1")
	// The helper is killed, so its own t.TempDir is never removed: its
	// temp folders go under this test's, which is.
	cmd.Env = append(os.Environ(), "LEMBAS_JOBS_HELPER=1", "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	pids := readPIDs(t, sc, 3)
	for _, p := range pids {
		if !procAlive(p) {
			t.Fatalf("job process %d is not running before the kill", p)
		}
	}
	if cmd.Process == nil || cmd.Process.Pid <= 1 {
		t.Fatal("no helper process to kill")
	}
	cmd.Process.Signal(os.Kill) // the helper alone, by its own pid
	cmd.Wait()
	if left := waitGone(pids); len(left) > 0 {
		for _, p := range left {
			if p > 1 {
				exec.Command("kill", "-9", strconv.Itoa(p)).Run()
			}
		}
		t.Fatalf("job processes %v outlived kill -9 of their owner", left)
	}
}

// TestJobsHelperProcess is the owner TestJobsDieWithLembas kills; it does
// nothing in a normal run.
func TestJobsHelperProcess(t *testing.T) {
	if os.Getenv("LEMBAS_JOBS_HELPER") != "1" {
		t.Skip("helper process for TestJobsDieWithLembas")
	}
	tb := newTestToolbox(t, nil)
	tb.shell = "/bin/sh"
	e := newEngine(nil, tb, nil, nil, &session{ID: "helper"}, 0)
	res := bashWithJobs(e, tb, context.Background(), theSpec().Tools["bash"], treeCommand, 60, true, nil, nil)
	if res.IsError {
		fmt.Println("error", res.Text)
		os.Exit(1)
	}
	j := e.jobs().get("j1")
	seen := 0
	for {
		j.waitChange(context.Background(), time.Hour)
		j.mu.Lock()
		text := j.out.data[seen:]
		seen = len(j.out.data)
		j.out.read = j.out.end()
		j.mu.Unlock()
		os.Stdout.Write(text)
		if st, _, _ := j.status(); st != "running" {
			select {} // the job ended: wait to be killed
		}
	}
}

// TestJobBuffer checks the new-since-last-read reading, the dropped count
// and the tail.
func TestJobBuffer(t *testing.T) {
	b := jobBuffer{keep: 10}
	b.write([]byte("abc"))
	if s, d, more := b.next(0); s != "abc" || d != 0 || more {
		t.Errorf("next %q %d %v", s, d, more)
	}
	b.write([]byte("0123456789XY"))
	if s, d, _ := b.next(0); s != "23456789XY" || d != 2 {
		t.Errorf("after overflow %q dropped %d", s, d)
	}
	b.write([]byte("l1\nl2\nl3\n"))
	if s := b.tail(2); s != "l2\nl3" {
		t.Errorf("tail %q", s)
	}
	if s, _, _ := b.next(0); s != "" {
		t.Errorf("after tail %q, want nothing new", s)
	}
}

// FuzzJobBuffer: any writes and reads keep the buffer's promises — never
// more than keep bytes shown, offsets that add up, no panic.
func FuzzJobBuffer(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), uint8(4), uint8(3))
	f.Add([]byte("\xe2\x82\xac\xe2\x82\xac"), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, keep, max uint8) {
		b := jobBuffer{keep: int(keep) + 1}
		var read int64
		for i := 0; i < len(data); i += 7 {
			end := i + 7
			if end > len(data) {
				end = len(data)
			}
			b.write(data[i:end])
			s, dropped, _ := b.next(int(max))
			if len(s) > b.keep {
				t.Fatalf("read %d bytes, keep %d", len(s), b.keep)
			}
			read += int64(len(s)) + dropped
			if read != b.read {
				t.Fatalf("read offsets %d != %d", read, b.read)
			}
		}
		if tl := b.tail(3); len(tl) > b.keep {
			t.Fatalf("tail of %d bytes, keep %d", len(tl), b.keep)
		}
	})
}

// TestPrintStopsLeftoverJobs: lembas -p does not wait for jobs; when the
// answer is done, a job still running is stopped (tree and all), stderr
// says which, and the run ends with its answer.
func TestPrintStopsLeftoverJobs(t *testing.T) {
	skipNoUnix(t)
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "sleep 300 & echo $! > pid; wait", "background": true}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "until test -s pid; do sleep 0.05; done"}}), // the job's shell has run its echo
		callsReply(fakeCall{"job_list", map[string]any{}}),
		textReply("Left it running."))
	proj := copyProject(t, "basic")
	env := []string{"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	r := runLembas(t, env, proj, "", "--mode", "auto", "--output-format", "stream-json", "-p", "start a sleeper")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := jobText("print_leftover", "n", 1, "ids", "j1")
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	b, _ := os.ReadFile(filepath.Join(proj, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 1 {
		t.Fatalf("the job wrote no pid (%q)", b)
	}
	if left := waitGone([]int{pid}); len(left) > 0 {
		exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
		t.Errorf("the job's sleep %d outlived lembas -p", pid)
	}
	var jobEvents []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == evJob && ev.Job != nil {
			jobEvents = append(jobEvents, ev.Job.ID+":"+ev.Job.Status)
		}
	}
	if got := strings.Join(jobEvents, " "); got != "j1:running" {
		t.Errorf("stream-json job events %q, want j1:running (a job stopped at exit is not told)", got)
	}
}

// worldPidAlive looks for a process in a child pid namespace whose
// innermost pid is pid (NSpid's last field); found says one was seen.
func worldPidAlive(pid int) (alive, found bool) {
	ents, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pid)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var state string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "State:") {
				state = strings.TrimSpace(strings.TrimPrefix(line, "State:"))
			}
			if strings.HasPrefix(line, "NSpid:") {
				f := strings.Fields(strings.TrimPrefix(line, "NSpid:"))
				if len(f) >= 2 && f[len(f)-1] == want {
					found = true
					if !strings.HasPrefix(state, "Z") {
						return true, true
					}
				}
			}
		}
	}
	return false, found
}

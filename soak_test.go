package main

// The kill -9 soak: the real binary, on the scripted fake model over
// loopback HTTP, is killed with SIGKILL at a random moment of real work,
// again and again, and after every kill the state folder is checked.
// Skipped unless LEMBAS_SOAK=N (N rounds); LEMBAS_SOAK_SEED=S replays a
// round (each round's seed is printed when it fails).
//
//	LEMBAS_SOAK=200 go test -count=1 -run '^TestSoak' -v .
//
// Each round is one of three kinds of work:
//   - print: a long `-p` turn (stream-json) of many bash calls, each
//     printing ~20 KB;
//   - repl: a piped REPL session of several turns with /title, /undo and
//     /compact;
//   - link: `lembas service` linked to the fake instance, running prompts
//     with turn ids whose bash call appends to a file (the side effect).
//
// The kill comes after a random number of bytes of output (print, repl),
// of notifications to the instance (link), or after a random delay.
//
// What "shown" means, precisely: every byte the process wrote to its
// stdout before it died (the pipe is drained after the kill), or every
// notification the instance received. Of that:
//   - a stream-json `prompt` event is the person's message: a stored user
//     message of kind prompt ends with its text;
//   - a `tool_end` event is a result: a stored tool message has its result
//     id and exactly its output;
//   - a `usage` event ends one model reply: the session holds at least as
//     many assistant messages as usage events were shown, and the text
//     streamed before it is one of them (text still streaming when the
//     kill came was never a whole message, and is not counted);
//   - a `done` event: the turn is stored as ended.
//   - In the REPL, tokens the scripted model and commands print (ANS-…,
//     OUT-…): an answer token followed by any further output was shown
//     whole; a command's token on a tool line was its stored result.
//   - On the link, `tool_end` and `prompt` events are held to the same.
//
// Then: every file under the state folder parses (sessions through the
// store's own reader, with nothing set aside; turns files; the history;
// permission answers; the link's given/deletes lists and status file);
// `lembas -c -p` continues the newest session (when a session was made);
// and on the link a prompt re-sent with its turn id after a restart never
// runs its side effect twice.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakRounds reads LEMBAS_SOAK; 0 skips.
func soakRounds(t *testing.T) (int, int64) {
	n, _ := strconv.Atoi(os.Getenv("LEMBAS_SOAK"))
	if n <= 0 {
		t.Skip("the kill -9 soak runs with LEMBAS_SOAK=N (rounds)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("kill -9 is a Unix signal")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("LEMBAS_SOAK_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	return n, seed
}

// clearReplies drops what a killed process did not ask for, so the next
// process starts from a known queue.
func (f *fakeModel) clearReplies() {
	f.mu.Lock()
	f.replies = nil
	f.mu.Unlock()
}

// forgetRequests drops the requests kept for got(): a soak's thousands
// of them (60 KB each, raw and parsed) are the fake's memory, not the
// service's, and they were what the 10-minute soak counted (+118 MB).
func (f *fakeModel) forgetRequests() {
	f.mu.Lock()
	f.requests = nil
	f.mu.Unlock()
}

// killedTB is a test's TB for the fake model of a process that is killed
// mid-request: a request body the kill cut short is expected there, not
// a fault of the process.
type killedTB struct{ testing.TB }

func (k killedTB) Errorf(format string, args ...any) {
	if strings.HasPrefix(format, "fake model: request is not JSON") {
		k.TB.Logf("(the kill cut a request short) "+format, args...)
		return
	}
	k.TB.Helper()
	k.TB.Errorf(format, args...)
}

// newSoakModel is a fake model for processes that get killed.
func newSoakModel(t *testing.T) *fakeModel { return newFakeModel(killedTB{t}) }

// killedRun is one process killed mid-work: what it printed.
type killedRun struct {
	out    []byte
	exited bool // it ended by itself before the kill came
}

// runAndKill starts cmd and kills it with SIGKILL once it has printed
// atBytes bytes, or after delay, whichever comes first; then drains its
// stdout, so out is everything it wrote before it died.
func runAndKill(t *testing.T, cmd *exec.Cmd, atBytes int, delay time.Duration) killedRun {
	return runFeedAndKill(t, cmd, nil, atBytes, delay)
}

// feedLine is a line of input, typed once the output so far satisfies
// after: the soak types as a person does, when the session is ready.
type feedLine struct {
	after func(out string) bool
	line  string
}

// runFeedAndKill is runAndKill with stdin typed from feed.
func runFeedAndKill(t *testing.T, cmd *exec.Cmd, feed []feedLine, atBytes int, delay time.Duration) killedRun {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = pw
	var inW *os.File
	if feed != nil {
		inR, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin, inW = inR, w
		defer inR.Close()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var mu sync.Mutex
	var out []byte
	grew := make(chan struct{}, 1)
	stop := make(chan struct{})
	fedDone := make(chan struct{})
	go func() {
		defer close(fedDone)
		if inW == nil {
			return
		}
		defer inW.Close()
		for _, fl := range feed {
			for {
				mu.Lock()
				ready := fl.after == nil || fl.after(string(out))
				mu.Unlock()
				if ready {
					break
				}
				select {
				case <-grew:
				case <-stop:
					return
				}
			}
			if _, err := io.WriteString(inW, fl.line+"\n"); err != nil {
				return
			}
		}
		<-stop // keep stdin open: end of input would end the session
	}()
	reached := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		fired := false
		for {
			n, err := pr.Read(buf)
			mu.Lock()
			out = append(out, buf[:n]...)
			if !fired && len(out) >= atBytes {
				fired = true
				close(reached)
			}
			mu.Unlock()
			select {
			case grew <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var r killedRun
	select {
	case <-reached:
	case <-time.After(delay):
	case <-waited:
		r.exited = true
	}
	if !r.exited {
		cmd.Process.Kill()
		<-waited
	}
	<-readDone
	close(stop)
	<-fedDone
	pr.Close()
	mu.Lock()
	r.out = out
	mu.Unlock()
	return r
}

// soakEnv is one round's device: state, config, a project.
type soakEnv struct {
	t     *testing.T
	f     *fakeModel
	state string // XDG_STATE_HOME
	proj  string
	env   []string
}

// reTurnLine is the REPL's line after a turn: the model and its usage.
var reTurnLine = regexp.MustCompile(`openai/mock · \d+ in`)

func newSoakEnv(t *testing.T, f *fakeModel) *soakEnv {
	proj, _ := filepath.EvalSymlinks(t.TempDir())
	e := &soakEnv{t: t, f: f, state: t.TempDir(), proj: proj}
	e.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh", "OPENAI_BASE_URL=" + f.url(),
		"LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + e.state, "XDG_CONFIG_HOME=" + t.TempDir()}
	return e
}

func (e *soakEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(lembasBin(e.t), args...)
	cmd.Dir = e.proj
	cmd.Env = e.env
	cmd.Stderr = io.Discard
	return cmd
}

// soakSessions reads every session journal in a state folder through the
// store's reader, without its lock (so nothing is repaired), and fails on
// any that does not read or was set aside.
func soakSessions(t *testing.T, stateDir string) []*session {
	t.Helper()
	var warned []string
	st := newStore(stateDir, func(s string) { warned = append(warned, s) })
	names, _ := filepath.Glob(filepath.Join(stateDir, "sessions", "*"))
	var out []*session
	for _, n := range names {
		base := filepath.Base(n)
		switch {
		case strings.Contains(base, ".corrupt-"):
			t.Errorf("a session file was set aside: %s", base)
			continue
		case !strings.HasSuffix(base, ".jsonl"):
			continue
		}
		sess, err := st.read(strings.TrimSuffix(base, ".jsonl"))
		if err != nil {
			t.Errorf("session %s does not read: %v", base, err)
			continue
		}
		out = append(out, sess)
	}
	for _, w := range warned {
		t.Errorf("reading the sessions warned: %s", w)
	}
	return out
}

// soakFiles checks that every other file under the state folder parses:
// JSON files whole, JSON Lines files (the history) line by line but for a
// torn last line. Leftover temp files of an atomic write cut off by the
// kill are counted, not failed: the name they were for is whole.
func soakFiles(t *testing.T, stateDir string) (temps int) {
	t.Helper()
	filepath.WalkDir(stateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // folders; the share socket
		}
		rel, _ := filepath.Rel(stateDir, p)
		base := d.Name()
		data, rerr := os.ReadFile(p)
		if rerr != nil {
			t.Errorf("%s does not read: %v", rel, rerr)
			return nil
		}
		switch {
		case strings.HasSuffix(base, ".tmp"):
			temps++
			t.Logf("a temp file the kill left: %s", rel)
		case strings.HasPrefix(rel, "sessions"+string(filepath.Separator)), strings.HasPrefix(rel, "attachments"),
			strings.HasSuffix(base, ".lock"), strings.HasSuffix(base, ".pid"):
			// sessions: soakSessions; snapshots and attachments are blobs
		case base == "history":
			if _, _, err := splitJournal(data); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
				var s string
				if l != "" && json.Unmarshal([]byte(l), &s) != nil && i < strings.Count(string(data), "\n") {
					t.Errorf("%s line %d is not a JSON string: %q", rel, i+1, l)
				}
			}
		case strings.HasSuffix(base, ".json"):
			if !json.Valid(data) {
				t.Errorf("%s is not JSON: %q", rel, data)
			}
			if strings.HasPrefix(rel, "turns"+string(filepath.Separator)) {
				var tf turnFile
				if err := json.Unmarshal(data, &tf); err != nil || tf.Session == "" {
					t.Errorf("%s is not a turns file: %v %q", rel, err, data)
				}
			}
		case strings.HasSuffix(base, ".jsonl"):
			if _, _, err := splitJournal(data); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		}
		return nil
	})
	return temps
}

// shownStream is what a stream-json stdout showed: every whole line.
type shownStream struct {
	prompts []string
	results map[string]string // result id → output
	usages  int
	replies []string // text streamed before each usage event, non-empty only
	done    int
}

func parseShown(t *testing.T, out []byte) shownStream {
	s := shownStream{results: map[string]string{}}
	var text strings.Builder
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if len(line) == 0 || line[len(line)-1] != '\n' {
			break // cut off by the kill: not a whole event
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Errorf("stream-json printed a line that is not an event: %q", line)
			continue
		}
		switch ev.Type {
		case evPrompt:
			s.prompts = append(s.prompts, ev.Text)
		case evStep:
			text.Reset()
		case evText:
			text.WriteString(ev.Text)
		case evUsage:
			s.usages++
			if text.Len() > 0 {
				s.replies = append(s.replies, text.String())
			}
			text.Reset()
		case evToolEnd:
			if ev.Tool != nil && ev.Tool.ResultID != "" {
				s.results[ev.Tool.ResultID] = ev.Tool.Output
			}
		case evDone:
			s.done++
		}
	}
	return s
}

// checkShown holds a session to what its stream showed.
func checkShown(t *testing.T, sh shownStream, sessions []*session) {
	t.Helper()
	if len(sh.prompts) == 0 && len(sh.results) == 0 && sh.usages == 0 {
		return
	}
	if len(sessions) != 1 {
		t.Errorf("%d sessions stored for one run that showed %d prompts", len(sessions), len(sh.prompts))
		return
	}
	s := sessions[0]
	var prompts []string
	results := map[string]string{}
	replies := map[string]bool{}
	assistants := 0
	for _, m := range s.Messages {
		switch {
		case m.Role == "user" && m.Kind == "prompt":
			prompts = append(prompts, m.Content)
		case m.Role == "tool":
			results[m.ResultID] = m.Content
		case m.Role == "assistant":
			assistants++
			replies[m.Content] = true
		}
	}
	for i, p := range sh.prompts {
		if i >= len(prompts) || !strings.HasSuffix(prompts[i], p) {
			t.Errorf("prompt %d %q was shown but is not stored (stored %q)", i+1, p, prompts)
		}
	}
	for id, out := range sh.results {
		if got, ok := results[id]; !ok || got != out {
			t.Errorf("result %s was shown but is not stored as shown (stored %t)", id, ok)
		}
	}
	if assistants < sh.usages {
		t.Errorf("%d model replies were shown whole but %d assistant messages are stored", sh.usages, assistants)
	}
	for _, r := range sh.replies {
		if !replies[r] {
			t.Errorf("the reply %q was shown whole but is not stored", r)
		}
	}
	if sh.done > 0 {
		if n := len(s.Turns); n == 0 || s.Turns[n-1].Status == "running" {
			t.Errorf("the turn's end was shown but it is stored as %+v", s.Turns)
		}
	}
}

// continueSession runs `lembas -c -p` on what the kill left: with a
// session stored, it must answer; with none, it must say there is none.
// anyTurn says whether a stored session has a turn: -c takes the last
// session with one (a session killed before its first turn is stored, but
// there is nothing in it to go on with).
func anyTurn(sessions []*session) bool {
	for _, s := range sessions {
		if len(s.Turns) > 0 {
			return true
		}
	}
	return false
}

func (e *soakEnv) continueSession(hadSession bool) {
	t := e.t
	t.Helper()
	e.f.clearReplies()
	e.f.push(textReply("Carried on."))
	cmd := e.command("-c", "--output-format", "json", "-p", "go on")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if !hadSession {
		e.f.clearReplies()
		if err == nil || !strings.Contains(errb.String(), "no session") {
			t.Errorf("-c with no session stored: %v %s", err, errb.String())
		}
		return
	}
	var ho headlessOutput
	json.Unmarshal(out.Bytes(), &ho)
	if err != nil || ho.Answer != "Carried on." {
		t.Errorf("-c after kill -9: %v answer %q\n%s", err, ho.Answer, errb.String())
	}
}

// soakPrint is one round of a long -p turn.
func soakPrint(t *testing.T, rng *rand.Rand) {
	f := newSoakModel(t)
	e := newSoakEnv(t, f)
	steps := 10 + rng.Intn(30)
	for i := 1; i < steps; i++ {
		f.push(uniqueCallReply(fmt.Sprintf("call_%d", i), fmt.Sprintf("head -c 20000 /dev/zero | tr '\\0' x; echo; echo OUT-%d", i)))
	}
	f.push(textReply("All steps done."))
	// ~20 KB of output per step reaches stream-json twice (tool_output's
	// tail, then tool_end's capped result): aim anywhere in the run.
	atBytes := rng.Intn(steps * 12000)
	delay := time.Duration(rng.Intn(3000)) * time.Millisecond
	cmd := e.command("--mode", "auto", "--max-steps", "100", "--output-format", "stream-json", "-p", "run the steps")
	r := runAndKill(t, cmd, atBytes, delay)
	t.Logf("print: %d steps, kill at %d bytes or %v; printed %d bytes, exited by itself %v", steps, atBytes, delay, len(r.out), r.exited)
	sh := parseShown(t, r.out)
	sessions := soakSessions(t, filepath.Join(e.state, "lembas"))
	checkShown(t, sh, sessions)
	if n := soakFiles(t, filepath.Join(e.state, "lembas")); n > 0 {
		t.Logf("left by the kill: %d temp files of an atomic write", n)
	}
	e.continueSession(anyTurn(sessions))
	soakSessions(t, filepath.Join(e.state, "lembas"))
}

// TestSoakKillNine is the soak: LEMBAS_SOAK rounds, each a random kind of
// work killed at a random moment.
func TestSoakKillNine(t *testing.T) {
	n, seed := soakRounds(t)
	lembasBin(t)
	kinds := []struct {
		name string
		run  func(*testing.T, *rand.Rand)
	}{{"print", soakPrint}, {"repl", soakRepl}, {"link", soakLink}}
	if k := os.Getenv("LEMBAS_SOAK_KIND"); k != "" {
		var only = kinds[:0]
		for _, kd := range kinds {
			if kd.name == k {
				only = append(only, kd)
			}
		}
		kinds = only
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		rs := seed + int64(i)
		rng := rand.New(rand.NewSource(rs))
		kd := kinds[rng.Intn(len(kinds))]
		ok := t.Run(fmt.Sprintf("%d-%s", i, kd.name), func(t *testing.T) {
			kd.run(t, rng)
			if t.Failed() {
				t.Logf("replay: LEMBAS_SOAK=1 LEMBAS_SOAK_SEED=%d LEMBAS_SOAK_KIND=%s go test -count=1 -run '^TestSoakKillNine$' -v .", rs, kd.name)
			}
		})
		_ = ok
	}
	t.Logf("%d rounds from seed %d in %v (%.2fs a round)", n, seed, time.Since(start).Round(time.Millisecond), time.Since(start).Seconds()/float64(n))
}

// soakRepl is one round of a piped REPL session: four turns, each a
// command and an answer, with /title, /undo and /compact between them.
func soakRepl(t *testing.T, rng *rand.Rand) {
	f := newSoakModel(t)
	e := newSoakEnv(t, f)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo OUT-1"}}), textReply("ANS-1"))
	f.push(callsReply(fakeCall{"write", map[string]any{"path": "two.txt", "content": "OUT-2 written\n"}}), textReply("ANS-2"))
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo OUT-3"}}), textReply("ANS-3"))
	f.push(textReply("SUMMARY-4 of the work so far."))
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo OUT-5"}}), textReply("ANS-5"))
	turns := func(n int) func(string) bool {
		return func(out string) bool { return len(reTurnLine.FindAllString(out, -1)) >= n }
	}
	has := func(s string) func(string) bool { return func(out string) bool { return strings.Contains(out, s) } }
	feed := []feedLine{
		{has("[y/n]"), "n"},
		{has("/help for commands"), "the first thing"},
		{turns(1), "/title Soak title"},
		{has("title: Soak title"), "the second thing"},
		{turns(2), "/undo"},
		{has("took back turn"), "the third thing"},
		{turns(3), "/compact"},
		{has("compacted:"), "the fourth thing"},
		{turns(4), "/quit"},
	}
	cmd := e.command("-i", "--mode", "auto")
	atBytes := rng.Intn(1300)
	delay := time.Duration(rng.Intn(400)) * time.Millisecond
	r := runFeedAndKill(t, cmd, feed, atBytes, delay)
	t.Logf("repl: kill at %d bytes or %v; printed %d bytes, exited by itself %v", atBytes, delay, len(r.out), r.exited)
	if os.Getenv("LEMBAS_SOAK_SHOW") != "" {
		t.Logf("stdout:\n%s", r.out)
	}
	sessions := soakSessions(t, filepath.Join(e.state, "lembas"))
	if n := soakFiles(t, filepath.Join(e.state, "lembas")); n > 0 {
		t.Logf("left by the kill: %d temp files of an atomic write", n)
	}
	out := string(r.out)
	var results, replies []string
	for _, s := range sessions {
		for _, m := range s.Messages {
			switch m.Role {
			case "tool":
				results = append(results, m.Content)
			case "assistant":
				replies = append(replies, m.Content)
			}
		}
	}
	stored := func(list []string, tok string) bool {
		for _, c := range list {
			if strings.Contains(c, tok) {
				return true
			}
		}
		return false
	}
	for _, k := range []string{"1", "2", "3", "5"} {
		if strings.Contains(out, "OUT-"+k) && !stored(results, "OUT-"+k) {
			t.Errorf("the result OUT-%s was shown but is not stored", k)
		}
		if i := strings.Index(out, "ANS-"+k); i >= 0 && i+len("ANS-"+k) < len(out) && !stored(replies, "ANS-"+k) {
			t.Errorf("the answer ANS-%s was shown whole but is not stored", k)
		}
	}
	if strings.Contains(out, "compacted:") {
		var all []string
		for _, s := range sessions {
			for _, m := range s.Messages {
				all = append(all, m.Content)
			}
		}
		if !stored(all, "SUMMARY-4") {
			t.Errorf("the compaction was shown done but its summary is not stored")
		}
	}
	if strings.Contains(out, "took back turn 2") && (len(sessions) != 1 || len(sessions[0].Turns) < 2 || !sessions[0].Turns[1].Undone) {
		t.Errorf("the undo was shown but turn 2 is not stored as undone")
	}
	if strings.Contains(out, "title: Soak title") && (len(sessions) != 1 || sessions[0].Title != "Soak title") {
		t.Errorf("the new title was shown but is not stored: %d sessions", len(sessions))
		for _, s := range sessions {
			t.Logf("session %s title %q", s.ID, s.Title)

		}
	}
	e.continueSession(anyTurn(sessions))
}

// TestShownIsStored is the soak's first find as a table: at the moment the
// engine emits an event that shows the person a message, that message is
// already on disk, as a fresh reader (another process) finds it. Before
// the fix the usage event that ends a reply came before the reply was
// saved, so a kill -9 between them lost a reply stream-json had shown
// whole. Each case is a scripted turn; every event of the listed types is
// checked against the session file at the moment it is emitted.
func TestShownIsStored(t *testing.T) {
	cases := []struct {
		name    string
		replies []fakeReply
	}{
		{"text then a call, then an answer", []fakeReply{
			withText(callsReply(fakeCall{"bash", map[string]any{"command": "echo hi"}}), "Looking first."),
			textReply("Done."),
		}},
		{"two calls in one reply", []fakeReply{
			callsReply(fakeCall{"bash", map[string]any{"command": "echo one"}}, fakeCall{"read", map[string]any{"path": "a.txt"}}),
			textReply("Both done."),
		}},
		{"an answer alone", []fakeReply{textReply("Just this.")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeModel(t)
			f.push(c.replies...)
			e, _ := newTestEngine(t, f, "auto", map[string]string{"a.txt": "A\n"})
			reader := newStore(filepath.Dir(e.st.dir), nil)
			usages, checked := 0, 0
			var text strings.Builder
			e.emit = func(ev event) {
				if ev.Type == evText {
					text.WriteString(ev.Text)
				}
				if ev.Type != evPrompt && ev.Type != evUsage && ev.Type != evToolEnd && ev.Type != evDone {
					return
				}
				checked++
				s, err := reader.read(e.sess.ID)
				if err != nil {
					t.Errorf("%s: the session does not read: %v", ev.Type, err)
					return
				}
				var assistants, prompts int
				replies, results := map[string]bool{}, map[string]string{}
				for _, m := range s.Messages {
					switch {
					case m.Role == "assistant":
						assistants++
						replies[m.Content] = true
					case m.Role == "user" && m.Kind == "prompt":
						prompts++
					case m.Role == "tool":
						results[m.ResultID] = m.Content
					}
				}
				switch ev.Type {
				case evPrompt:
					if prompts == 0 {
						t.Errorf("prompt shown before it is stored")
					}
				case evUsage:
					usages++
					if assistants < usages || (text.Len() > 0 && !replies[text.String()]) {
						t.Errorf("usage %d shown (a reply whole: %q) with %d replies stored", usages, text.String(), assistants)
					}
					text.Reset()
				case evToolEnd:
					if results[ev.Tool.ResultID] != ev.Tool.Output {
						t.Errorf("result %s shown before it is stored", ev.Tool.ResultID)
					}
				case evDone:
					if n := len(s.Turns); n == 0 || s.Turns[n-1].Status == "running" {
						t.Errorf("done shown with the turn stored as %+v", s.Turns)
					}
				}
			}
			if out := e.runTurn(context.Background(), "go"); out.Err != nil {
				t.Fatal(out.Err)
			}
			if checked == 0 || usages == 0 {
				t.Fatal("no event was checked")
			}
		})
	}
}

// withText puts answer text before a scripted reply's tool calls.
func withText(r fakeReply, text string) fakeReply {
	pre := sseData(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}}}})
	r.body = strings.TrimSuffix(pre, "data: [DONE]\n\n") + r.body
	return r
}

// soakService starts the built binary as `lembas service` on the fake
// instance of e.
func soakService(t *testing.T) *exec.Cmd {
	cmd := exec.Command(lembasBin(t), "service", "--login", "test")
	cmd.Env = os.Environ() // newLinkEnv's HOME, XDG folders and login
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// linkShown holds a session to the link events the instance received:
// each prompt and tool result it was sent is stored.
func linkShown(t *testing.T, notes []map[string]any, sessions []*session) {
	t.Helper()
	var prompts []string
	results := map[string]bool{}
	for _, s := range sessions {
		for _, m := range s.Messages {
			switch {
			case m.Role == "user" && m.Kind == "prompt":
				prompts = append(prompts, m.Content)
			case m.Role == "tool":
				results[m.ToolCallID] = true
			}
		}
	}
	checked := 0
	defer func() { t.Logf("link: %d prompts and results shown were checked against the session", checked) }()
	for _, n := range notes {
		if n["method"] != "_lembas/event" {
			continue
		}
		params, _ := n["params"].(map[string]any)
		ev, _ := params["event"].(map[string]any)
		switch ev["type"] {
		case "prompt":
			checked++
			text, _ := ev["text"].(string)
			found := false
			for _, p := range prompts {
				found = found || strings.HasSuffix(p, text)
			}
			if !found {
				t.Errorf("the prompt %q reached the instance but is not stored", text)
			}
		case "tool_end":
			checked++
			id := fmt.Sprint(ev["id"])
			if tool, ok := ev["tool"].(map[string]any); ok {
				id = fmt.Sprint(tool["id"])
			}
			if !results[id] {
				t.Errorf("the result of %s reached the instance but is not stored: %v", id, ev)
			}
		}
	}
}

// soakLink is one round of the device: prompts with turn ids, each
// running a command that appends its turn id to effects.txt; the service
// is killed after a random number of notifications or a random delay,
// started again, and every prompt sent before the kill is sent again with
// its turn id. No turn id may reach effects.txt twice.
func soakLink(t *testing.T, rng *rand.Rand) {
	e := newLinkEnv(t, "")
	e.fi.model.t = killedTB{t}
	turns := 2 + rng.Intn(3)
	script := func(tid string) {
		e.fi.model.clearReplies()
		e.fi.model.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo " + tid + " >> effects.txt"}}), textReply("done "+tid))
	}
	cmd := soakService(t)
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	l := e.link()
	sid := e.newSession(l, e.proj, "auto")
	atNote := rng.Intn(turns * 12)
	deadline := time.After(time.Duration(rng.Intn(1500)) * time.Millisecond)
	var sent []string
	l.mu.Lock()
	base := len(l.notes)
	l.mu.Unlock()
work:
	for i := 0; i < turns; i++ {
		tid := fmt.Sprintf("turn-%d", i)
		script(tid)
		sent = append(sent, tid)
		ch := l.start("session/prompt", promptParams(sid, "step "+tid, tid))
		for {
			l.mu.Lock()
			n := len(l.notes) - base
			l.mu.Unlock()
			if n >= atNote {
				break work
			}
			select {
			case <-ch:
				continue work
			case <-l.noteCh:
			case <-deadline:
				break work
			case <-time.After(guard):
				t.Fatalf("the turn %s never ended", tid)
			}
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	killed = true
	l.mu.Lock()
	notes := append([]map[string]any(nil), l.notes...)
	l.mu.Unlock()
	t.Logf("link: %d turns, kill at note %d; sent %d prompts, %d notes", turns, atNote, len(sent), len(notes)-base)
	state := stateDir()
	sessions := soakSessions(t, state)
	linkShown(t, notes, sessions)
	if n := soakFiles(t, state); n > 0 {
		t.Logf("left by the kill: %d temp files of an atomic write", n)
	}
	effects := func() map[string]int {
		data, _ := os.ReadFile(filepath.Join(e.proj, "effects.txt"))
		count := map[string]int{}
		for _, f := range strings.Fields(string(data)) {
			count[f]++
		}
		return count
	}
	before := effects()

	// The restart: every prompt sent is sent again with its turn id.
	cmd2 := soakService(t)
	defer func() { cmd2.Process.Kill(); cmd2.Wait() }()
	l2 := e.link()
	answers := map[string]string{}
	for _, tid := range sent {
		script(tid)
		m := l2.call("session/prompt", promptParams(sid, "step "+tid, tid))
		if m["error"] != nil {
			t.Errorf("%s sent again after the restart: %v", tid, m["error"])
			continue
		}
		r, _ := m["result"].(map[string]any)
		meta, _ := r["_meta"].(map[string]any)
		lm, _ := meta["lembas"].(map[string]any)
		if lm["turnId"] != tid {
			t.Errorf("%s sent again answered %v", tid, r)
		}
		answers[tid] = fmt.Sprint(r["stopReason"])
		if lm["interrupted"] == true {
			answers[tid] = "interrupted"
		}
	}
	after := effects()
	for tid, a := range answers {
		if a == "end_turn" && after[tid] != 1 {
			t.Errorf("%s answered end_turn after the restart with its side effect run %d times", tid, after[tid])
		}
	}
	for tid, n := range after {
		if n > 1 {
			t.Errorf("the side effect of %s ran %d times (%d before the restart)", tid, n, before[tid])
		}
	}
	cmd2.Process.Kill()
	cmd2.Wait()
	t.Logf("link: side effects %v before the restart, %v after; answers after it %v", before, after, answers)
	soakSessions(t, state)
	soakFiles(t, state)

	// -c at the terminal carries the device's session on.
	e.fi.model.clearReplies()
	e.fi.model.push(textReply("Carried on."))
	c := exec.Command(lembasBin(t), "-c", "--output-format", "json", "-p", "go on")
	c.Dir, c.Env = e.proj, os.Environ()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var ho headlessOutput
	json.Unmarshal(out.Bytes(), &ho)
	if err != nil || ho.Answer != "Carried on." || ho.SessionID != sid {
		t.Errorf("-c after the device's kill -9: %v session %q (want %s) answer %q\n%s", err, ho.SessionID, sid, ho.Answer, errb.String())
	}
}

// TestNewSessionStoredWhole is the soak's second find: a session made for
// a front end (the link's session/new, ACP's, -p, the REPL) is on disk with
// its model, mode and system prompt before the front end names it. Before
// the fix they reached the file only with the first prompt, so a device
// killed between session/new and the first turn came back with a session
// on no model, which the link then refused to open.
func TestNewSessionStoredWhole(t *testing.T) {
	f := newFakeModel(t)
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"),
		"OPENAI_BASE_URL": f.url(), "LEMBAS_MODEL": "mock", "SHELL": "/bin/sh"} {
		t.Setenv(k, v)
	}
	proj, _ := filepath.EvalSymlinks(t.TempDir())
	for _, c := range []struct {
		name  string
		flags runFlags
	}{
		{"new, edit mode", runFlags{sessionOpts: sessionOpts{cwd: proj, mode: "edit"}}},
		{"new, auto mode, linked", runFlags{sessionOpts: sessionOpts{cwd: proj, mode: "auto", linkOpened: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			flags := c.flags
			e, cleanup, err := newSessionEngine(context.Background(), &flags.sessionOpts, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			got, err := newStore(stateDir(), nil).read(e.sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Model != e.sess.Model || got.Mode != flags.mode || got.System == "" {
				t.Errorf("stored model %q mode %q system %d bytes; in memory %q %q", got.Model, got.Mode, len(got.System), e.sess.Model, e.sess.Mode)
			}
		})
	}
}

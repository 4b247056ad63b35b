package main

// The REPL driven through its reader and writer as (typed, printed) pairs
// against the scripted fake model over real HTTP (mvdan/sh's gosh shape):
// the test types a line, then waits until the output shows what it
// should. No timing is asserted; a wait that never ends fails after a
// generous deadline.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is the REPL's output: written by the REPL, read by the test.
type syncBuffer struct {
	mu     sync.Mutex
	b      strings.Builder
	notify chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{notify: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.b.Write(p)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type replHarness struct {
	t    *testing.T
	fm   *fakeModel
	r    *repl
	in   *io.PipeWriter
	out  *syncBuffer
	mark int // output before this was matched already
	done chan error
	proj string
	tty  bool
}

// replEnv points lembas's folders and model at test ones.
func replEnv(t testing.TB, fm *fakeModel) {
	t.Setenv("OPENAI_BASE_URL", fm.url())
	t.Setenv("OPENAI_API_KEY", "x")
	t.Setenv("LEMBAS_MODEL", "mock")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("NO_COLOR", "")
}

// startRepl runs a REPL on the basic fixture project in the given mode.
// trusted nil leaves the trust question to be answered.
func startRepl(t *testing.T, fm *fakeModel, mode string, tty bool, trusted *bool) *replHarness {
	t.Helper()
	replEnv(t, fm)
	proj := copyProject(t, "basic")
	if trusted != nil {
		setTrust(proj, *trusted)
	}
	return startReplAt(t, fm, mode, tty, proj, false)
}

// startReplIn runs a REPL in proj, with the environment as it is; cont is -c.
func startReplIn(t *testing.T, fm *fakeModel, proj string, cont bool) *replHarness {
	t.Helper()
	return startReplAt(t, fm, "", false, proj, cont) // the mode config.yaml (or the session, with -c) gives
}

func startReplAt(t *testing.T, fm *fakeModel, mode string, tty bool, proj string, cont bool) *replHarness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &runFlags{sessionOpts: sessionOpts{mode: mode, cwd: proj, cont: cont}}
	e, cleanup, err := newSessionEngine(ctx, &f.sessionOpts, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	cfg, _ := loadConfig()
	pr, pw := io.Pipe()
	h := &replHarness{t: t, fm: fm, in: pw, out: newSyncBuffer(), done: make(chan error, 1), proj: proj, tty: tty}
	h.r = newRepl(ctx, e, f, cfg, replIO{in: pr, out: h.out, tty: tty, width: 100})
	go func() {
		h.r.start()
		h.done <- h.r.run("")
	}()
	t.Cleanup(func() { pw.Close() })
	return h
}

// typ types a line (and Enter).
func (h *replHarness) typ(s string) {
	h.t.Helper()
	end := "\n"
	if h.tty {
		end = "\r"
	}
	if _, err := io.WriteString(h.in, s+end); err != nil {
		h.t.Fatalf("typing %q: %v", s, err)
	}
}

// key sends raw bytes (Ctrl-C is "\x03").
func (h *replHarness) key(s string) {
	io.WriteString(h.in, s)
}

// expect waits until the output after the last match contains want.
func (h *replHarness) expect(want string) string {
	h.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		all := h.out.String()
		live := len(all) // where the row that is redrawn in place starts
		if h.tty {
			// On a terminal, what the screen shows. The input row (the
			// prompt, the progress line) is drawn again and again, so a
			// match there is not passed: what comes next may go above it.
			sc := h.screen()
			all = sc.text()
			live = len(all) - len(sc.cursorRow())
		}
		if h.mark > len(all) {
			h.mark = len(all)
		}
		if i := strings.Index(all[h.mark:], want); i >= 0 {
			got := all[h.mark : h.mark+i+len(want)]
			h.mark += i + len(want)
			if h.mark > live {
				h.mark = max(live, h.mark-i-len(want))
			}
			return got
		}
		select {
		case <-h.out.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			if h.tty {
				all = h.screen().text()
			}
			h.t.Fatalf("the REPL never printed %q; it printed:\n%s\n(screen before the mark: %q)", want, all[h.mark:], all[max(0, h.mark-300):h.mark])
		}
	}
}

// screen is what a terminal shows after the REPL's output so far.
func (h *replHarness) screen() *vtScreen { return screenOf(h.out.String(), 100) }

// atPrompt waits (on a terminal) until the input row is the bare prompt:
// the turn is over, not only its last line printed — a key pressed while
// the progress line still shows belongs to the running turn.
func (h *replHarness) atPrompt() {
	h.t.Helper()
	deadline := time.After(20 * time.Second)
	for strings.TrimSpace(h.screen().cursorRow()) != "›" {
		select {
		case <-h.out.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			h.t.Fatalf("the prompt never came back; the input row is %q", h.screen().cursorRow())
		}
	}
}

// turnDone waits for the line that ends a turn.
func (h *replHarness) turnDone() {
	h.t.Helper()
	h.expect(" cached · ")
}

// exit quits with Ctrl-D (end of input) and waits for the REPL to end.
func (h *replHarness) exit() {
	h.t.Helper()
	h.in.Close()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("repl ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		h.t.Fatalf("the REPL did not end at the end of input; it printed:\n%s", h.out.String())
	}
}

func yes() *bool { b := true; return &b }

// lastUser is the content of the last user message of a request.
func lastUser(r fakeRequest) string {
	ms := r.messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i]["role"] == "user" {
			s, _ := ms[i]["content"].(string)
			return withoutNote(s)
		}
	}
	return ""
}

// withoutNote is a message's words without the session note before them
// (context.md §1.3).
func withoutNote(s string) string {
	if strings.HasPrefix(s, "<session-note>") {
		if i := strings.Index(s, "</session-note>\n\n"); i >= 0 {
			return s[i+len("</session-note>\n\n"):]
		}
	}
	return s
}

func TestReplToolCallAndApproval(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			fm := newFakeModel(t)
			fm.push(
				callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}),
				callsReply(fakeCall{"edit", map[string]any{"path": "src/app.txt", "old_string": "TODO", "new_string": "DONE"}}),
				textReply("Done: TODO is DONE."),
			)
			h := startRepl(t, fm, "manual", tty, yes())
			h.expect("/help for commands")
			h.typ("mark it done")
			h.expect("read src/app.txt")
			h.expect("1\tstatus: TODO")
			h.expect("#0001")
			h.expect("┌ edit · write")
			h.expect("-status: TODO")
			h.expect("+status: DONE")
			// Each always answer says how far it goes, before the keys.
			h.expect("│ a always: edit on any file in this project, for the rest of this session")
			h.expect("│ p always here: edit on any file in this project, in later sessions here too, until revoked")
			h.expect("│ /permissions")
			h.expect("└ y once · a always · p always here · n deny")
			if tty {
				h.key("y")
			} else {
				h.typ("y")
			}
			h.expect("allowed once")
			h.expect("edit src/app.txt (+1 −1)")
			h.expect("Done: TODO is DONE.")
			h.expect("openai/mock · 500 in · 50 out · 80 cached")
			h.exit()
			if data, _ := os.ReadFile(filepath.Join(h.proj, "src/app.txt")); string(data) != "status: DONE\n" {
				t.Errorf("src/app.txt = %q", data)
			}
			if strings.Contains(h.out.String(), "\x1b[") && !tty {
				t.Errorf("plain output carries escape codes: %q", h.out.String())
			}
		})
	}
}

func TestReplDenyWithFeedbackAndEdit(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "rm -r build"}}),
		textReply("OK, I will not."),
		// expr, not echo: echo is allowed by harness/permission/defaults.json and never asked.
		callsReply(fakeCall{"bash", map[string]any{"command": "expr one"}}),
		textReply("Ran it."),
	)
	h := startRepl(t, fm, "manual", false, yes())
	h.typ("clean up")
	h.expect("$ rm -r build")
	h.expect("e edit")
	h.typ("n")
	h.expect("tell the model why")
	h.typ("keep the build folder")
	h.expect("denied")
	h.expect("OK, I will not.")
	if res := toolResults(fm.got()[1]); len(res) != 1 || !strings.Contains(res[0], "keep the build folder") {
		t.Errorf("the model was not told the feedback: %q", res)
	}
	h.typ("say one")
	h.expect("$ expr one")
	h.typ("e")
	h.expect("edit the command")
	h.typ("echo two")
	h.expect("allowed, edited: echo two")
	h.expect("Ran it.")
	if res := toolResults(fm.got()[3]); len(res) == 0 || !strings.Contains(res[len(res)-1], "two") {
		t.Errorf("the edited command did not run: %q", res)
	}
	h.exit()
}

// stallingModel answers the first request with some text and then holds
// the stream open until the request is cancelled or release is closed.
func stallingModel(t *testing.T, fm *fakeModel, first string, then fakeReply) (started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	inner := fm.srv.Config.Handler
	fm.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stall := false
		if r.Method == "POST" {
			once.Do(func() { stall = true })
		}
		if !stall {
			inner.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if first != "" {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", first)
		}
		w.(http.Flusher).Flush()
		close(started)
		select {
		case <-r.Context().Done():
			return
		case <-release:
		}
		io.WriteString(w, strings.TrimPrefix(then.body, ""))
	})
	return started, release
}

func TestReplCancelMidStream(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			fm := newFakeModel(t)
			started, _ := stallingModel(t, fm, "Thinking about it ", fakeReply{})
			h := startRepl(t, fm, "manual", tty, yes())
			h.typ("a long one")
			<-started
			h.expect("Thinking about it")
			h.key("\x03")
			h.expect("turn cancelled")
			h.turnDone()
			fm.push(textReply("Still here."))
			h.typ("are you there")
			h.expect("Still here.")
			h.exit()
			if s := h.r.e.sess.Turns[0].Status; s != "cancelled" {
				t.Errorf("turn 1 status %q, want cancelled", s)
			}
		})
	}
}

// TestReplLineAfterCtrlC: a line typed after Ctrl-C, before the cancelled
// turn has wound down, is the person's next prompt — not a steer message
// of the turn going away, dropped with it.
func TestReplLineAfterCtrlC(t *testing.T) {
	fm := newFakeModel(t)
	started, _ := stallingModel(t, fm, "Thinking about it ", fakeReply{})
	h := startRepl(t, fm, "manual", false, yes())
	h.typ("a long one")
	<-started
	h.expect("Thinking about it")
	fm.push(textReply("Still here."))
	h.key("\x03")
	h.typ("are you there")
	h.expect("Still here.")
	h.exit()
	if strings.Contains(h.out.String(), "not sent") {
		t.Errorf("the line typed after Ctrl-C was dropped with the turn:\n%s", h.out.String())
	}
}

func TestReplCtrlCAtEmptyPromptQuits(t *testing.T) {
	fm := newFakeModel(t)
	h := startRepl(t, fm, "manual", true, yes())
	h.expect("/help")
	h.key("abc\x03") // clears the line
	h.key("\x03")    // empty: quits
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		t.Fatal("Ctrl-C at an empty prompt did not quit")
	}
}

func TestReplSteer(t *testing.T) {
	fm := newFakeModel(t)
	started, release := stallingModel(t, fm, "", callsReply(fakeCall{"list", map[string]any{"path": "."}}))
	fm.push(textReply("Checked the README too."))
	h := startRepl(t, fm, "manual", false, yes())
	h.typ("look around")
	<-started
	h.typ("also check the README")
	h.expect("queued for the model's next step: also check the README")
	close(release)
	h.expect("↳ the model took in: also check the README")
	h.expect("Checked the README too.")
	h.exit()
	reqs := fm.got() // the stalled first request is not recorded
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	ms := reqs[0].messages()
	last := ms[len(ms)-1]
	if last["role"] != "user" || last["content"] != "also check the README" || ms[len(ms)-2]["role"] != "tool" {
		t.Errorf("the steer message is not after the tool result: %v", ms[len(ms)-2:])
	}
}

func TestReplUndo(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the turn runs a POSIX shell command")
	}
	fm := newFakeModel(t)
	fm.push(
		callsReply(fakeCall{"write", map[string]any{"path": "new.txt", "content": "fresh\n"}}),
		callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}),
		callsReply(fakeCall{"edit", map[string]any{"path": "src/app.txt", "old_string": "TODO", "new_string": "DONE"}}),
		callsReply(fakeCall{"bash", map[string]any{"command": "echo hi > other.txt"}}),
		textReply("All changed."),
	)
	h := startRepl(t, fm, "auto", false, yes())
	h.typ("change things")
	h.expect("All changed.")
	h.turnDone()
	if data, _ := os.ReadFile(filepath.Join(h.proj, "src/app.txt")); string(data) != "status: DONE\n" {
		t.Fatalf("the turn did not edit: %q", data)
	}
	h.typ("/undo")
	h.expect("took back turn 1: change things")
	h.expect("restored src/app.txt")
	h.expect("removed new.txt (the turn created it)")
	h.expect("$ echo hi > other.txt")
	if data, _ := os.ReadFile(filepath.Join(h.proj, "src/app.txt")); string(data) != "status: TODO\n" {
		t.Errorf("src/app.txt after undo = %q", data)
	}
	if _, err := os.Stat(filepath.Join(h.proj, "new.txt")); err == nil {
		t.Errorf("new.txt is still there after undo")
	}
	fm.push(textReply("Fresh start."))
	h.typ("what now")
	h.expect("Fresh start.")
	h.turnDone()
	ms := fm.got()[len(fm.got())-1].messages()
	if len(ms) != 2 || ms[1]["content"] != "what now" {
		t.Errorf("the undone turn is still sent: %d messages %v", len(ms), ms)
	}
	h.typ("/undo")
	h.expect("took back turn 2")
	h.typ("/undo")
	h.expect("nothing to undo")
	h.exit()
}

func TestReplAtPathOutsideStaysText(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("Seen."))
	h := startRepl(t, fm, "manual", false, yes())
	outside := filepath.Join(filepath.Dir(h.proj), "outside-"+filepath.Base(h.proj))
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o644)
	t.Cleanup(func() { os.RemoveAll(outside) })
	rel := "../" + filepath.Base(outside) + "/secret.txt"
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(h.proj, "link.txt"))
	os.WriteFile(filepath.Join(h.proj, ".env"), []byte("KEY=SECRET2\n"), 0o644)
	h.typ("compare @" + rel + " and @link.txt and @.env with @src/app.txt#1")
	h.expect("Seen.")
	h.exit()
	sent := lastUser(fm.got()[0])
	if strings.Contains(sent, "TOPSECRET") || strings.Contains(sent, "SECRET2") {
		t.Errorf("a path outside the project or protected was read: %q", sent)
	}
	if !strings.HasPrefix(sent, "compare @"+rel+" and @link.txt and @.env with @src/app.txt#1") {
		t.Errorf("the mentions did not stay as text: %q", sent)
	}
	if !strings.Contains(sent, "<file path=\"src/app.txt\" lines=\"1-1\">\n1\tstatus: TODO\n</file>") {
		t.Errorf("the project file was not attached: %q", sent)
	}
}

// TestReplCompactEffortAsk covers /compact, /effort and the model's
// questions answered inline.
func TestReplCompactEffortAsk(t *testing.T) {
	fm := newFakeModel(t)
	h := startRepl(t, fm, "manual", false, yes())
	fm.push(textReply("Hello back."))
	h.typ("hello")
	h.expect("Hello back.")
	h.turnDone()
	fm.push(textReply("We said hello."))
	h.typ("/compact")
	h.expect("compacted: the history is now a summary")
	if got := lastUser(fm.got()[1]); !strings.Contains(got, "compacted") {
		t.Errorf("/compact asked %q", got)
	}
	h.typ("/effort")
	h.expect("effort: default (levels: default)")
	h.typ("/effort high")
	h.expect("has no effort level high")
	fm.push(callsReply(fakeCall{"ask_user", map[string]any{"questions": []any{
		map[string]any{"question": "Which colour?", "options": []any{map[string]any{"label": "red"}, map[string]any{"label": "blue"}}}}}}),
		textReply("Blue it is."))
	h.typ("pick a colour")
	h.expect("Which colour?")
	h.expect("1. red")
	h.typ("2")
	h.expect("Blue it is.")
	h.turnDone()
	res := toolResults(fm.got()[len(fm.got())-1])
	if len(res) != 1 || !strings.Contains(res[0], "blue") {
		t.Errorf("the answer sent to the model: %q", res)
	}
	h.exit()
}

func TestReplCommands(t *testing.T) {
	fm := newFakeModel(t)
	h := startRepl(t, fm, "manual", false, yes())
	h.typ("/help")
	h.expect("/compact — summarise")
	h.expect("/quit — leave lembas")
	h.typ("/mode edit")
	h.expect("mode: edit")
	h.typ("/theme plain")
	h.expect("theme: plain")
	h.typ("/settings reasoning off")
	h.expect("reasoning: off")
	h.typ("/settings reasoning maybe")
	h.expect(`reasoning: expected on or off, found "maybe"`)
	h.typ("/settings reasoning on")
	h.expect("reasoning: on")
	h.typ("/title My work")
	h.expect("title: My work")
	fm.push(textReply("Path noted."))
	h.typ("/usr/bin is where it is")
	h.expect("Path noted.")
	h.turnDone()
	// The mode switch reaches the model as a note after the prompt.
	ms := fm.got()[0].messages()
	if got := withoutNote(fmt.Sprint(ms[len(ms)-2]["content"])); got != "/usr/bin is where it is" {
		t.Errorf("a /word that is not a command was sent as %q", got)
	}
	if !strings.Contains(fmt.Sprint(ms[len(ms)-1]["content"]), "switched the session to edit mode") {
		t.Errorf("the mode note was not sent: %v", ms[len(ms)-1])
	}
	fm.push(textReply("Reviewed."))
	h.typ("/review main")
	h.expect("Reviewed.")
	h.turnDone()
	if got := lastUser(fm.got()[1]); !strings.Contains(got, "(target: main)") {
		t.Errorf("/review sent %q", got)
	}
	first := h.r.e.sess.ID
	h.typ("/new")
	h.expect("new session")
	h.typ("/sessions")
	h.expect("(this one)")
	h.expect(first)
	h.typ("/sessions " + first)
	h.expect("opened session " + first)
	h.typ("/usage")
	h.expect("this session: 2 turns")
	h.typ("/quit")
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		t.Fatal("/quit did not end the REPL")
	}
}

// TestReplTrustAsked: on a terminal the question takes only y or n (any
// other key asks again); an untrusted folder's /command goes as text, with
// a word that project commands are off.
func TestReplTrustAsked(t *testing.T) {
	fm := newFakeModel(t)
	h := startRepl(t, fm, "manual", true, nil)
	os.MkdirAll(filepath.Join(h.proj, ".agent", "commands"), 0o755)
	os.WriteFile(filepath.Join(h.proj, ".agent", "commands", "hello.md"), []byte("---\ndescription: greet\n---\nSay hello to $ARGUMENTS.\n"), 0o644)
	h.expect("Do you trust")
	h.expect("[y/n]")
	h.key("\r")
	h.expect("press y to trust this folder or n not to")
	if _, known := trustOf(h.proj); known {
		t.Fatalf("Enter at the trust question was remembered as an answer")
	}
	h.key("abc") // a line typed ahead says the keys once, not once a key (seen in tmux)
	h.key("n")
	h.expect("not trusted")
	if got := strings.Count(h.out.String(), "press y to trust"); got != 1 {
		t.Errorf("the trust keys were said %d times, want once", got)
	}
	fm.push(textReply("Hi."))
	h.typ("/hello Bob")
	h.expect("project commands are off")
	h.expect("Hi.")
	if got := lastUser(fm.got()[0]); got != "/hello Bob" {
		t.Errorf("an untrusted folder's command was used: %q", got)
	}

	h.exit()
	if tr, known := trustOf(h.proj); !known || tr {
		t.Errorf("trust not remembered: %v %v", tr, known)
	}
}

// TestReplTrustPiped: on plain input nothing is asked and nothing is
// remembered; the first piped line is the prompt, never the answer, and
// the folder is untrusted for the run, said once.
func TestReplTrustPiped(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("On it."))
	proj := copyProject(t, "basic")
	os.WriteFile(filepath.Join(proj, "AGENTS.md"), []byte("PROJECT-INSTRUCTION\n"), 0o644)
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	r := runLembas(t, env, proj, "fix it\n", "-i")
	if r.code != 0 || len(fm.got()) != 1 {
		t.Fatalf("exit %d, %d requests\n%s\n%s", r.code, len(fm.got()), r.stdout, r.stderr)
	}
	if got := lastUser(fm.got()[0]); got != "fix it" {
		t.Errorf("the piped prompt was not sent as the prompt: %q", got)
	}
	if strings.Contains(string(fm.got()[0].Raw), "PROJECT-INSTRUCTION") {
		t.Errorf("an unasked folder's instructions were sent on a piped run")
	}
	if strings.Contains(r.stdout, "Do you trust") || strings.Count(r.stdout, "is not trusted yet") != 1 {
		t.Errorf("want no question and one notice:\n%s", r.stdout)
	}
	if data, _ := os.ReadFile(filepath.Join(env[2][len("XDG_STATE_HOME="):], "lembas", "trust.json")); strings.Contains(string(data), filepath.Base(proj)) {
		t.Errorf("a piped run remembered trust: %s", data)
	}
}

// TestReplBinary runs the real binary's interactive session on plain
// lines (-i): the trust question, a turn, /quit; then -c resumes it with
// the last turn shown.
func TestReplBinary(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("Hello back."))
	proj := copyProject(t, "basic")
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	if r := runLembas(t, env, proj, "", "trust"); r.code != 0 {
		t.Fatalf("lembas trust: %d %s", r.code, r.stderr)
	}
	r := runLembas(t, env, proj, "hello\n/quit\n", "-i")
	if r.code != 0 || !strings.Contains(r.stdout, "Hello back.") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("plain lines carry escape codes: %q", r.stdout)
	}
	r = runLembas(t, env, proj, "", "-c", "-i")
	if r.code != 0 || !strings.Contains(r.stdout, "resuming") || !strings.Contains(r.stdout, "› hello") || !strings.Contains(r.stdout, "Hello back.") {
		t.Errorf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "Do you trust") {
		t.Errorf("trust was asked twice")
	}
	if r := runLembas(t, env, proj, "", "-p", "-i", "x"); r.code != 2 {
		t.Errorf("-p with -i: exit %d, want 2", r.code)
	}
}

// The repl_tool_line conformance area runs the real toolLine.
func init() {
	conformanceRunners["repl_tool_line"] = func(input json.RawMessage) (any, error) {
		var t toolEvent
		if err := json.Unmarshal(input, &t); err != nil {
			return nil, err
		}
		return toolLine(&t, theReplSpec().Numbers.ToolLineChars), nil
	}
}

// TestReplInstructionsFollowTrust: the project's AGENTS.md reaches the model
// when the person trusts the folder, and not when they do not — the
// question comes after the session's prompt was first made.
func TestReplInstructionsFollowTrust(t *testing.T) {
	for _, answer := range []string{"y", "n"} {
		fm := newFakeModel(t)
		fm.push(textReply("ok"))
		proj := copyProject(t, "basic")
		os.WriteFile(filepath.Join(proj, "AGENTS.md"), []byte("PROJECT-INSTRUCTION\n"), 0o644)
		env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
		verb := map[string]string{"y": "trust", "n": "untrust"}[answer]
		if r := runLembas(t, env, proj, "", verb, "."); r.code != 0 {
			t.Fatalf("lembas %s: %d %s", verb, r.code, r.stderr)
		}
		r := runLembas(t, env, proj, "hello\n/quit\n", "-i")
		if r.code != 0 || len(fm.got()) != 1 {
			t.Fatalf("answer %s: exit %d, %d requests\n%s", answer, r.code, len(fm.got()), r.stderr)
		}
		if got := strings.Contains(string(fm.got()[0].Raw), "PROJECT-INSTRUCTION"); got != (answer == "y") {
			t.Errorf("answer %s: instructions sent %v", answer, got)
		}
	}
}

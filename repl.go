package main

// The line-mode REPL: where a person spends the day with lembas. No
// full-screen UI — output scrolls like any command's, so scrollback, copy
// and paste, tmux and slow SSH links all just work.
//
//	keys ──► keyFilter ──► x/term line editor ──► reader goroutine ──► lines
//	             │ Ctrl-C, card keys                                     │
//	             ▼                                                       ▼
//	          ctrlC / card                    main loop: command, prompt, or (during a turn) steer
//	                                                                     │
//	engine events ──► onEvent (repl_render.go) ──► the terminal ◄────────┘
//
// On a terminal, input goes through golang.org/x/term's line editor
// (history kept per user across runs, bracketed paste, Tab completion of
// /commands and @paths); when stdin or stdout is not a terminal, or
// TERM=dumb, the same loop reads plain lines and writes no escape codes.
// A line ending in "\" continues on the next. Ctrl-C cancels the running
// turn (twice within a second, or at an empty prompt, quits); Ctrl-D at an
// empty prompt quits; a line typed while a turn runs is given to the model
// at its next step.
//
// A front end (floor 5): it calls the session (session.go, the engine) and
// implements ask.go's seam for the terminal.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// repl is one interactive session on a terminal or on plain lines.
type repl struct {
	ctx     context.Context
	keepErr string    // the last session save fault said (repl_commands.go keep)
	level   string    // the effort level set with /effort ("" the model's default)
	out     io.Writer // the terminal, or plain output
	tty     bool      // the line editor and its escape codes
	color   bool
	width   int
	ed      *lineEditor // the input row; nil on plain lines (repl_line.go)
	cards   *cardKeys
	pend    []string // lines of a message still being entered ("\\" or a paste)
	in      io.Reader
	filter  *keyFilter
	plainR  *bufio.Reader
	lines   chan string // what the person typed, line by line (closed at end of input)
	quitCh  chan struct{}
	once    sync.Once

	e        *engine
	f        *runFlags
	cfg      *config
	trusted  bool
	settings replSettings
	theme    map[string]string
	spec     *spec

	mu        mutex     // output state, below
	col       int       // the output cursor's column (our text only)
	word      []rune    // a word not yet written, for wrapping
	inReason  bool      // the output is in a reasoning stretch
	progress  string    // what the turn is doing, for the progress line
	since     time.Time // when progress last changed or output last came
	shownWait bool      // plain output: the progress line was printed
	running   bool
	cancel    context.CancelFunc
	turnStart time.Time
	lastCtrlC time.Time
	waiter    chan string // a card waiting for a line
	dialog    int         // approval cards in their dialog (the key, then feedback or an edit): plain lines between its waits are held
	held      []string    // lines typed in a dialog while none of its waits listened, for its next
	inputEnd  bool        // the plain input has ended: a card gets no line, ever
	asking    bool        // a question is the prompt: progress does not take its place
	after     []string    // commands typed during a turn, run when it ends
	// stopping: Ctrl-C has cancelled the running turn (under mu); a line
	// typed from then until it ends is no steer of the turn going away but
	// the person's next line, kept in afterStop and handled once it ends.
	stopping  bool
	afterStop []string
	quiet     map[string]bool
	size      func() int // the terminal's width now (nil: fixed)

	wakeCh   chan struct{} // a job ended while idle: run the machine's turn (repl_jobs.go)
	webQueue []shareWork   // the web UI's prompts that came during a turn, run after it (repl_share.go)
	link     *replLink     // turns file, usage, personalization (repl_link.go)
}

// replIO is where a REPL reads and writes, and whether that is a terminal.
type replIO struct {
	in    io.Reader
	out   io.Writer
	tty   bool
	color bool
	width int
}

// newRepl makes a REPL for an engine on the given input and output.
func newRepl(ctx context.Context, e *engine, f *runFlags, cfg *config, rio replIO) *repl {
	sp := theSpec()
	r := &repl{ctx: ctx, out: rio.out, tty: rio.tty, color: rio.color, width: rio.width, e: e, f: f, cfg: cfg, spec: sp,
		lines: make(chan string, 16), quitCh: make(chan struct{}), quiet: map[string]bool{}}
	if r.width <= 0 {
		r.width = 80
	}
	r.settings = loadReplSettings()
	r.theme = pickTheme(r.settings.Theme)
	r.in = rio.in
	r.cards = &cardKeys{}
	if rio.tty {
		r.ed = newLineEditor(rio.out, r.width)
		r.ed.hist = openHistory()
	} else {
		r.filter = &keyFilter{src: rio.in, onCtrlC: r.ctrlC}
		r.plainR = bufio.NewReader(r.filter)
	}
	e.ask = r
	e.asker = r
	e.planner = r
	e.emit = r.onEvent
	r.hookJobs()
	r.link = newReplLink(r)
	r.offerShow() // repl_share.go
	return r
}

// text fills one of repl.json's texts.
func (r *repl) text(key string, kv ...any) string {
	s, ok := theReplSpec().Texts[key]
	if !ok {
		panic("harness: repl.json has no text " + key)
	}
	return fillPairs(s, kv...)
}

// write puts s on the screen: through the line editor, which keeps the
// prompt and the line being typed below it, or straight out.
func (r *repl) write(s string) {
	if r.ed != nil {
		r.ed.Write([]byte(s))
		return
	}
	io.WriteString(r.out, s)
}

// say prints whole lines in a style, after ending any line in progress.
func (r *repl) say(role, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sayLocked(role, s)
}

func (r *repl) sayLocked(role, s string) {
	r.endLineLocked()
	s = strings.TrimRight(s, "\n")
	if r.tty {
		// The terminal would break a long notice wherever the row ends,
		// mid-word; break it at spaces instead.
		s = wrapWords(s, r.cols())
	}
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		b.WriteString(r.paint(role, line))
		b.WriteByte('\n')
	}
	r.write(b.String())
	r.col = 0
	r.since = time.Now()
	r.shownWait = false
	r.updatePromptLocked()
}

// cols is the terminal's width now.
//
//go:noinline
func (r *repl) cols() int {
	if r.size != nil {
		if w := r.size(); w > 0 {
			return w
		}
	}
	return r.width
}

// paint wraps s in a theme role's colour, when colour is on.
//
//go:noinline
func (r *repl) paint(role, s string) string {
	sgr := r.theme[role]
	if !r.color || sgr == "" || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

// setPromptNow shows p as the editor's prompt (on plain lines it is
// printed when a line is read); keep leaves an entered line on screen.
//
//go:noinline
func (r *repl) setPromptNow(p string, keep bool) {
	if r.ed != nil {
		r.ed.setPrompt(p, keep)
	}
}

// updatePromptLocked shows the prompt at rest, and the turn's progress in
// its place while a turn runs; the row is always below the output, so
// what is typed meanwhile stays there and out of the answer.
func (r *repl) updatePromptLocked() {
	if r.ed == nil || r.asking {
		return
	}
	switch {
	case !r.running:
		r.setPromptNow(r.paint("prompt", r.text("prompt")), true)
	default:
		what := r.progress
		if what == "" {
			what = r.text("progress_writing")
		}
		secs := int(time.Since(r.turnStart).Seconds())
		r.setPromptNow(r.paint("status", "⋯ "+r.text("progress_elapsed", "what", what, "seconds", secs)+" "), false)
	}
}

// run is the session: the banner, a first prompt if given, then lines
// until the person quits.
func (r *repl) run(first string) error {
	if first != "" && !r.quitting() {
		r.handle(first)
	}
	for !r.quitting() {
		if !r.tty {
			io.WriteString(r.out, r.text("prompt"))
		} else if !r.quitting() {
			r.mu.Lock()
			r.updatePromptLocked()
			r.mu.Unlock()
		}
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.quit()
				break
			}
			if r.answerCard(line) {
				continue // a background subagent's card was waiting for it (repl_jobs.go)
			}
			r.handle(line)
		case <-r.wakeCh:
			r.machineTurn()
		case w := <-r.link.shareConn.web:
			r.shareWork(w) // the web UI's prompt or delete for a shared session (repl_share.go)
		case <-r.quitCh:
		}
		for (len(r.after) > 0 || len(r.webQueue) > 0) && !r.quitting() {
			if len(r.after) > 0 {
				line := r.after[0]
				r.after = r.after[1:]
				r.handle(line)
				continue
			}
			w := r.webQueue[0]
			r.webQueue = r.webQueue[1:]
			r.shareWork(w)
		}
	}
	r.endShare() // the web UI hears left now, not when the process ends (repl_share.go)
	if !r.tty {
		io.WriteString(r.out, "\n")
	} else {
		r.ed.hide() // the shell's prompt comes next, at the left of a clean row
	}
	return nil
}

func (r *repl) quit() { r.once.Do(func() { close(r.quitCh) }) }

func (r *repl) quitting() bool {
	select {
	case <-r.quitCh:
		return true
	default:
		return false
	}
}

// readLines reads what the person types, joining a line that ends in "\"
// with the next and a multi-line paste into one message, and hands each
// message to the loop. It ends, closing lines, at the end of input.
func (r *repl) readLines() {
	if r.ed != nil {
		r.readKeys(r.in)
		return
	}
	defer close(r.lines)
	var msg []string
	for {
		line, pasted, err := r.readPhysical()
		if err != nil {
			if len(msg) > 0 {
				r.lines <- strings.Join(msg, "\n")
			}
			return
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			msg = append(msg, strings.TrimSuffix(line, `\`))
			continue
		}
		msg = append(msg, line)
		if pasted {
			continue // the rest of the paste, or Enter, ends the message
		}
		r.lines <- strings.Join(msg, "\n")
		msg = nil
	}
}

// readPhysical reads one line from the plain input.
func (r *repl) readPhysical() (line string, pasted bool, err error) {
	line, err = r.plainR.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", false, err
	}
	return strings.TrimRight(line, "\r\n"), false, nil
}

// handle runs one message: a terminal command, or a prompt (a shared
// command or text with @paths).
func (r *repl) handle(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	if name, args, ok := splitCommand(line); ok {
		if _, term := r.spec.Commands.Terminal[name]; term {
			r.terminalCommand(name, args)
			return
		}
	}
	r.prompt(line)
}

// prompt expands a message and runs it as a turn (or does the action a
// shared command names).
func (r *repl) prompt(line string) {
	if name, _, ok := splitCommand(line); ok && !r.trusted && !r.isCommand(name) {
		trusting := r.expandOptions()
		trusting.Trusted = true
		if findCustomCommand(trusting, name) != nil {
			r.say("notice", r.text("untrusted_command", "name", name))
		}
	}
	exp, err := expandWith(r.expandOptions(), line)
	if err != nil {
		r.say("error", r.text("error", "text", err.Error()))
		return
	}
	if exp.Mode != "" && exp.Mode != r.e.perm.mode() {
		r.setMode(exp.Mode)
	}
	switch exp.Action {
	case "undo":
		r.undo()
		return
	case "compact":
		r.compactNow()
		return
	case "plan":
		return // the mode switch was the whole of it
	}
	if exp.Model != "" {
		old := r.e.ref
		if ref, err := chooseModel(r.ctx, r.cfg, exp.Model, os.Getenv); err == nil {
			r.e.ref = ref
			defer func() { r.e.ref = old; r.e.sess.Model = old.String() }()
		} else {
			r.say("error", r.text("error", "text", err.Error()))
			return
		}
	}
	for _, p := range exp.Read {
		r.e.tb.stamp(p)
	}
	r.runTurn(exp.Text, exp.Images...)
}

// runTurn runs one turn while the loop keeps reading: lines typed now are
// steer messages (or a card's answer), Ctrl-C cancels.
func (r *repl) runTurn(text string, images ...imagePart) { r.runTurnAs("", text, images...) }

// runTurnAs is runTurn under a turn id the web UI gave ("" makes a
// terminal's), and gives the turn's answer as its record has it.
func (r *repl) runTurnAs(tid, text string, images ...imagePart) json.RawMessage {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	tid = r.link.beginTurnAs(tid)
	r.mu.Lock()
	if r.size != nil {
		if w := r.size(); w > 0 {
			r.width = w
		}
	}
	r.running, r.cancel = true, cancel
	r.turnStart, r.since = time.Now(), time.Now()
	r.progress, r.shownWait = r.text("progress_wait"), false
	r.updatePromptLocked()
	r.mu.Unlock()
	done := make(chan outcome, 1)
	go func() { done <- r.e.runTurn(ctx, text, images...) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var out outcome
	eof := false
loop:
	for {
		select {
		case out = <-done:
			break loop
		case line, ok := <-r.lines:
			if !ok {
				eof = true // finish the turn, then quit
				r.lines = nil
				r.endInput()
				continue
			}
			r.typedDuringTurn(line)
		case w := <-r.link.shareConn.web:
			r.webDuringTurn(w, cancel) // repl_share.go
		case <-tick.C:
			r.tick()
		case <-r.quitCh:
			cancel()
			out = <-done
			break loop
		}
	}
	r.mu.Lock()
	r.running, r.cancel, r.stopping = false, nil, false
	r.updatePromptLocked()
	r.mu.Unlock()
	if eof {
		r.quit()
	}
	out.Unsent = append(out.Unsent, r.e.drainSteer()...) // typed as the turn ended
	ans := r.link.endTurn(tid, out)
	if out.StopReason == "cancelled" || ctx.Err() != nil {
		r.dropQueued(out.Unsent)
		r.after, r.afterStop = append(r.after, r.afterStop...), nil // typed after Ctrl-C: the next lines
		return ans
	}
	r.after, r.afterStop = append(r.after, r.afterStop...), nil
	if len(out.Unsent) > 0 && !r.quitting() {
		var keep []string
		r.mu.Lock()
		for _, u := range out.Unsent {
			if !r.quiet[u] {
				keep = append(keep, u)
			}
		}
		r.mu.Unlock()
		if len(keep) > 0 {
			r.say("notice", r.text("unsent"))
			r.runTurn(strings.Join(keep, "\n\n"))
		}
	}
	return ans
}

// dropQueued is a cancelled turn's queue: the lines typed for its next
// step and the commands waiting for its end go with it, and the screen
// says which.
func (r *repl) dropQueued(unsent []string) {
	var gone []string
	r.mu.Lock()
	for _, u := range unsent {
		if !r.quiet[u] {
			gone = append(gone, u)
		}
	}
	r.mu.Unlock()
	gone = append(gone, r.after...)
	r.after = nil
	if len(gone) == 0 || r.quitting() {
		return
	}
	r.say("notice", r.text("cancel_dropped", "n", len(gone), "lines", plural(len(gone), r.text("line_one"), r.text("line_many")), "text", strings.Join(gone, " · ")))
}

// endInput is the end of input during a turn: a card waiting for a line
// (an approval, its feedback, a question) and any card still to come get
// none, which each takes as "no answer" at once, rather than waiting out
// the approval timeout for a person who can no longer type.
func (r *repl) endInput() {
	r.mu.Lock()
	w := r.waiter
	r.waiter = nil
	r.inputEnd = true
	r.mu.Unlock()
	if w != nil {
		close(w)
	}
}

// waitLineLocked makes the channel a card waits on for a line: closed at
// once when input has ended, else the waiter the next line goes to.
func (r *repl) waitLineLocked() chan string {
	w := make(chan string, 1)
	switch {
	case len(r.held) > 0: // typed while the dialog's last wait was ending
		w <- r.held[0]
		r.held = r.held[1:]
	case r.inputEnd:
		close(w)
	default:
		r.waiter = w
	}
	return w
}

// heldLocked keeps a line typed in an approval card's dialog when none of
// its waits listens (the answer's key taken, the feedback's question not
// yet asked: "n⏎⏎" typed at once), for the dialog's next wait.
func (r *repl) heldLocked(line string) bool {
	if r.dialog == 0 {
		return false
	}
	r.held = append(r.held, line)
	return true
}

// dialogDone ends an approval card's dialog: lines it held and did not
// use are taken as typed now.
func (r *repl) dialogDone() {
	r.mu.Lock()
	r.dialog--
	var left []string
	if r.dialog == 0 {
		left, r.held = r.held, nil
	}
	r.mu.Unlock()
	for _, l := range left {
		r.typedDuringTurn(l)
	}
}

// typedDuringTurn is a line typed while a turn runs: a card's answer when
// one waits, else a steer message for the model's next step.
func (r *repl) typedDuringTurn(line string) {
	r.mu.Lock()
	w := r.waiter
	r.waiter = nil
	if w == nil && r.heldLocked(line) {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	if w != nil {
		w <- line
		return
	}
	if strings.TrimSpace(line) == "" {
		return
	}
	r.mu.Lock()
	stopping := r.stopping
	r.mu.Unlock()
	if stopping {
		r.afterStop = append(r.afterStop, line)
		r.say("notice", r.text("after_stop", "text", line))
		return
	}
	if name, _, ok := splitCommand(line); ok && r.isCommand(name) {
		r.after = append(r.after, line)
		r.say("notice", r.text("after_turn", "text", line))
		return
	}
	r.e.steer(line)
	r.say("notice", r.text("queued", "text", line))
}

// isCommand says whether /name is a command here: the terminal's, a
// shared built-in, or a custom one.
func (r *repl) isCommand(name string) bool {
	if reservedCommand(name) {
		return true
	}
	return findCustomCommand(r.expandOptions(), name) != nil
}

// tick keeps a long wait from being silent: on a terminal the progress
// prompt shows the seconds; on plain output one line says what it waits
// for after a quiet while.
func (r *repl) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return
	}
	if r.ed != nil {
		r.updatePromptLocked()
		return
	}
	quiet := time.Duration(theReplSpec().Numbers.ProgressQuietS) * time.Second
	if r.col == 0 && !r.shownWait && time.Since(r.since) >= quiet {
		secs := int(time.Since(r.turnStart).Seconds())
		io.WriteString(r.out, "… "+r.text("progress_elapsed", "what", r.progress, "seconds", secs)+"\n")
		r.shownWait = true
	}
}

// ctrlC is Ctrl-C: cancel the running turn (a second within the window
// quits); with no turn, quit when the line is empty. It says whether the
// line being typed should be cleared.
func (r *repl) ctrlC(lineEmpty bool) (clear bool) {
	r.mu.Lock()
	running, cancel := r.running, r.cancel
	now := time.Now()
	double := now.Sub(r.lastCtrlC) < time.Duration(theReplSpec().Numbers.DoubleCtrlCMS)*time.Millisecond
	r.lastCtrlC = now
	w := r.waiter
	r.waiter = nil
	r.mu.Unlock()
	if w != nil {
		close(w)
	}
	switch {
	case running && double:
		cancel()
		r.quit()
	case running:
		r.mu.Lock()
		r.stopping = true
		r.mu.Unlock()
		cancel()
		r.say("notice", r.text("cancelling"))
	case lineEmpty:
		r.quit()
	default:
		return true
	}
	return false
}

// keyFilter sits between plain input and its line reader: a Ctrl-C byte
// (a terminal in cooked mode sends SIGINT instead) goes to the handler.
type keyFilter struct {
	src     io.Reader
	onCtrlC func(lineEmpty bool) bool

	mu      mutex
	pending []byte
	capture chan byte
	buf     [512]byte
	midLine bool // plain input: bytes since the last newline
}

func (k *keyFilter) push(b []byte) {
	k.mu.Lock()
	k.pending = append(k.pending, b...)
	k.mu.Unlock()
}

// startCapture sends every key to the returned channel until stopCapture.
func (k *keyFilter) startCapture() chan byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.capture = make(chan byte, 64)
	return k.capture
}

func (k *keyFilter) stopCapture() {
	k.mu.Lock()
	k.capture = nil
	k.mu.Unlock()
}

func (k *keyFilter) Read(p []byte) (int, error) {
	for {
		k.mu.Lock()
		if len(k.pending) > 0 {
			n := copy(p, k.pending)
			k.pending = k.pending[n:]
			k.mu.Unlock()
			return n, nil
		}
		k.mu.Unlock()
		max := len(p)
		if max > len(k.buf) {
			max = len(k.buf)
		}
		n, err := k.src.Read(k.buf[:max])
		out := 0
		for _, c := range k.buf[:n] {
			k.mu.Lock()
			capture := k.capture
			k.mu.Unlock()
			switch {
			case capture != nil:
				select {
				case capture <- c:
				default:
				}
			case c == 3:
				k.onCtrlC(!k.midLine)
			default:
				k.midLine = c != '\n'
				p[out] = c
				out++
			}
		}
		if out > 0 || err != nil {
			return out, err
		}
	}
}

// runREPL is `lembas` on a terminal (or with -i): the interactive session,
// optionally starting with a prompt.
func runREPL(ctx context.Context, f *runFlags, first string, stdin io.Reader, stdout, stderr io.Writer) error {
	rio := replIO{in: stdin, out: stdout}
	inF, inOK := stdin.(*os.File)
	outF, outOK := stdout.(*os.File)
	dumb := os.Getenv("TERM") == "dumb"
	if inOK && outOK && term.IsTerminal(int(inF.Fd())) && term.IsTerminal(int(outF.Fd())) && !dumb {
		rio.tty = true
		rio.color = os.Getenv("NO_COLOR") == ""
		if w, _, err := term.GetSize(int(outF.Fd())); err == nil {
			rio.width = w
		}
		old, err := term.MakeRaw(int(inF.Fd()))
		if err != nil {
			return errorf("setting up the terminal: %v; run with -p for one prompt", err)
		}
		defer term.Restore(int(inF.Fd()), old)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e, cleanup, err := newSessionEngine(ctx, &f.sessionOpts, false, func(s string) { fmt.Fprintln(stderr, "lembas: "+s) })
	if err != nil {
		return err
	}
	defer cleanup()
	defer func() { e.st.dropEmpty(e.sess) }() // quit without a turn: nothing is kept
	cfg, _ := loadConfig()
	r := newRepl(ctx, e, f, cfg, rio)
	defer r.endOnSignals()() // SIGTERM, SIGHUP (signals.go)
	if !rio.tty {
		// Plain lines on a terminal still get SIGINT for Ctrl-C.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		go func() {
			for range sig {
				r.ctrlC(true)
			}
		}()
	}
	if rio.tty {
		r.size = func() int {
			w, _, err := term.GetSize(int(outF.Fd()))
			if err != nil {
				return 0
			}
			return w
		}
		r.ed.size = r.size
		// Bracketed paste while we read; the shell gets its terminal back as it was.
		io.WriteString(stdout, "\x1b[?2004h")
		defer io.WriteString(stdout, "\x1b[?2004l")
	}
	r.start()
	return r.run(first)
}

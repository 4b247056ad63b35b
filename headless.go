package main

// lembas -p: one prompt, no person. The engine's events are printed in one
// of three formats — text (only the final answer on stdout), json (one
// object at the end), stream-json (one event per line as it happens) — and
// the exit status says how the turn ended. SIGINT cancels the turn: the
// stream stops, running commands are killed, the turn is stored as
// cancelled, and the exit status is 130.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"golang.org/x/term"
)

// runFlags are the command line's: how -p prints, and the session's options.
type runFlags struct {
	sessionOpts
	print  bool
	format string
	repl   bool // -i: the interactive session even when stdin is not a terminal
}

// parseRunFlags reads flags and positional words in any order.
func parseRunFlags(args []string) (*runFlags, []string, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("lembas", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&f.print, "p", false, "")
	fs.BoolVar(&f.print, "print", false, "")
	fs.StringVar(&f.format, "output-format", "text", "")
	fs.StringVar(&f.model, "model", "", "")
	fs.StringVar(&f.mode, "mode", "", "")
	fs.StringVar(&f.cwd, "cwd", "", "")
	fs.IntVar(&f.maxSteps, "max-steps", 0, "")
	fs.BoolVar(&f.cont, "c", false, "")
	fs.BoolVar(&f.cont, "continue", false, "")
	fs.StringVar(&f.sessionID, "session", "", "")
	fs.BoolVar(&f.repl, "i", false, "")
	fs.BoolVar(&f.repl, "interactive", false, "")
	fs.StringVar(&f.effort, "effort", "", "")
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, usageError{err.Error() + "; see lembas --help"}
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch f.format {
	case "text", "json", "stream-json":
	default:
		return nil, nil, usageError{fmt.Sprintf("unknown --output-format %q; use text, json or stream-json", f.format)}
	}
	if f.maxSteps < 0 {
		return nil, nil, usageError{"--max-steps must be a positive number"}
	}
	if f.print && f.repl {
		return nil, nil, usageError{"-p and -i cannot be used together; -p runs one prompt, -i the interactive session"}
	}
	if f.cont && f.sessionID != "" {
		return nil, nil, usageError{"-c and --session cannot be used together"}
	}
	return f, words, nil
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, words, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	prompt := strings.Join(words, " ")
	stdinIsTTY := false
	if fh, ok := stdin.(*os.File); ok {
		stdinIsTTY = term.IsTerminal(int(fh.Fd()))
	}
	if !f.print && (stdinIsTTY || f.repl) && prompt != "-" {
		return runREPL(context.Background(), f, prompt, stdin, stdout, stderr)
	}
	if prompt == "-" || (prompt == "" && !stdinIsTTY) {
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
		if err != nil {
			return errorf("reading the prompt from stdin: %v", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return usageError{"the prompt is empty; give it with -p \"...\" or on stdin"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	return runHeadless(ctx, f, prompt, stdout, stderr)
}

// headlessOutput collects what the json format prints at the end.
type headlessOutput struct {
	Answer     string       `json:"answer"`
	SessionID  string       `json:"session_id"`
	Model      string       `json:"model"`
	Usage      usage        `json:"usage"`
	ToolCalls  []callRecord `json:"tool_calls"`
	StopReason string       `json:"stop_reason"`
	Error      string       `json:"error,omitempty"`
}

func runHeadless(ctx context.Context, f *runFlags, prompt string, stdout, stderr io.Writer) error {
	e, cleanup, err := newSessionEngine(ctx, &f.sessionOpts, true, func(s string) { fmt.Fprintln(stderr, "lembas: "+s) })
	if err != nil {
		return err
	}
	tracef("session engine ready")
	defer func() {
		t0 := time.Now()
		cleanup() // the sandbox's world closes here, after the answer is out
		traceSince(t0, "session closed")
	}()
	if e.perm.mode() == "auto" {
		e.tb.theSandbox().prewarm() // the world starts while the model is asked
	}
	// The process ends with the session: its sandbox folder (a few dozen
	// folders on disk, 5–60 ms to remove on an ext4 with discard) is left,
	// unowned, for the next session's sweep rather than removed before the
	// exit (sandbox_world.go).
	e.tb.theSandbox().leaveFolder()
	// Set-up (the harness parse above all) leaves most of the binary
	// mapped, 64 KB around each page it ran; the turn takes back what it
	// runs. One release, here: each costs about 0.2 ms to unmap and more to
	// fault back, so none is made per step (proc_pages_linux.go).
	releaseBinaryPages()
	if f.format != "stream-json" {
		// text and json show the person nothing before the turn ends but
		// notices: saves are made durable before those (store.deferSyncs).
		e.st.deferSyncs()
	}
	flush := func() {
		if err := e.st.flush(); err != nil {
			fmt.Fprintln(stderr, "lembas: "+err.Error())
		}
	}
	refused := &refusalLog{}
	e.ask = headlessApprover{log: refused}
	var mu mutex
	enc := json.NewEncoder(stdout)
	done := false
	e.emit = func(ev event) {
		mu.Lock()
		defer mu.Unlock()
		switch f.format {
		case "stream-json":
			if done && ev.Type == evProgress {
				return // the turn is over: done is the stream's last word on it
			}
			done = done || ev.Type == evDone
			enc.Encode(ev)
		case "text":
			if ev.Type == evNotice || ev.Type == evRetry {
				flush()
				fmt.Fprintln(stderr, "lembas: "+ev.Text)
			}
		}
	}
	// @path attaches as in the REPL (expand.go); a leading /word stays text.
	exp := expansion{Text: prompt}
	attachMentions(defaultExpandOptions(e.perm.root, e.ref.Meta.vision(), false), &exp, prompt)
	for _, p := range exp.Read {
		e.tb.stamp(p)
	}
	ctx = withQuietNotice(ctx, func(s string) { flush(); fmt.Fprintln(stderr, "lembas: "+s) })
	out := e.runTurn(ctx, exp.Text, exp.Images...)
	if err := e.st.flush(); err != nil && out.Err == nil {
		out.Err = err // the turn is not known to be on disk: said, as a failed save is
	}
	if ids := e.stopJobs(); len(ids) > 0 {
		fmt.Fprintln(stderr, "lembas: "+jobText("print_leftover", "n", len(ids), "ids", strings.Join(ids, ", ")))
	}
	if out.Calls == nil {
		out.Calls = []callRecord{}
	}
	switch f.format {
	case "text":
		if out.Answer != "" {
			fmt.Fprintln(stdout, strings.TrimRight(out.Answer, "\n"))
		}
	case "json":
		ho := headlessOutput{Answer: out.Answer, SessionID: e.sess.ID, Model: e.ref.String(), Usage: out.Usage,
			ToolCalls: out.Calls, StopReason: out.StopReason}
		if out.Err != nil {
			ho.Error = out.Err.Error()
		}
		enc.SetIndent("", "  ")
		enc.Encode(ho)
	}
	switch {
	case out.StopReason == "cancelled":
		return exitError{code: exitCancelled, msg: "cancelled"}
	case out.Err != nil:
		return out.Err
	case out.StopReason == "max_turn_requests":
		return exitError{code: exitFailure, msg: fmt.Sprintf("the turn stopped at its step limit (%d); raise --max-steps or continue with -c", e.maxSteps)}
	}
	if msg := refusedText(refused, e.perm.mode()); msg != "" {
		return exitError{code: exitNotDone, msg: msg}
	}
	return nil
}

// refusedText is -p's closing word on stderr when calls were refused for
// want of an approval — which tools, the mode, the --mode that would have
// let them run; which hosts the network gate refused, and the config key
// that allows them — or "" when none was. The run then exits 5: not done.
func refusedText(h *refusalLog, mode string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var hosts string
	if len(h.hosts) > 0 {
		hosts = theCLI().text("refused_headless_hosts", "hosts", strings.Join(h.hosts, ", "))
	}
	if len(h.tools) == 0 {
		return hosts
	}
	seen := map[string]bool{}
	var names []string
	for _, t := range h.tools {
		if !seen[t] {
			seen[t] = true
			names = append(names, t)
		}
	}
	calls := "1 call was"
	if len(h.tools) > 1 {
		calls = fmt.Sprintf("%d calls were", len(h.tools))
	}
	c := theCLI()
	key := "refused_headless"
	wider := theSpec().Modes.Wider[mode]
	if wider == "" || wider == mode {
		key = "refused_headless_rule"
	}
	msg := c.text(key, "calls", calls, "tools", strings.Join(names, ", "), "mode", mode, "wider", wider)
	if hosts != "" {
		msg += "\nlembas: " + hosts // main writes the first line's "lembas: "
	}
	return msg
}

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
	"sync"

	"golang.org/x/term"
)

type runFlags struct {
	print     bool
	format    string
	model     string
	mode      string
	cwd       string
	maxSteps  int
	cont      bool
	sessionID string
	repl      bool // -i: the interactive session even when stdin is not a terminal
	effort    string

	mcpServers []json.RawMessage // ACP session/new's, beside config.yaml's and the project's (mcp_config.go)
	linkOpened bool              // the link's client opened the session: the instance's library scopes its calls by it
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
			return fmt.Errorf("reading the prompt from stdin: %v", err)
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
	e, cleanup, err := newSessionEngine(ctx, f, true, func(s string) { fmt.Fprintln(stderr, "lembas: "+s) })
	if err != nil {
		return err
	}
	defer cleanup()
	e.ask = headlessApprover{}
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	e.emit = func(ev event) {
		mu.Lock()
		defer mu.Unlock()
		switch f.format {
		case "stream-json":
			enc.Encode(ev)
		case "text":
			if ev.Type == evNotice || ev.Type == evRetry {
				fmt.Fprintln(stderr, "lembas: "+ev.Text)
			}
		}
	}
	out := e.runTurn(ctx, prompt)
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
	return nil
}

// newSessionEngine sets up a session to work in — new, the newest of the
// project (-c), or a given one (--session) — and an engine for it.
func newSessionEngine(ctx context.Context, f *runFlags, headless bool, warn func(string)) (*engine, func(), error) {
	warmSessionSpecs() // beside this path, what it needs further down (startup.go)
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, err
	}
	dir := f.cwd
	if dir == "" {
		dir = "."
	}
	root, err := projectRoot(dir)
	if err != nil {
		return nil, nil, usageError{fmt.Sprintf("--cwd %s: %v", dir, err)}
	}
	modeName := f.mode
	if modeName == "" {
		modeName = cfg.Mode
	}
	mode, err := normMode(modeName)
	if err != nil {
		if f.mode != "" {
			return nil, nil, usageError{err.Error()}
		}
		return nil, nil, fmt.Errorf("config.yaml: %v", err)
	}
	var early *modelLookup // a new session's model does not depend on it: look it up while it is made
	if !f.cont && f.sessionID == "" {
		early = lookupModel(ctx, cfg, f.model, os.Getenv)
	}
	defer early.stop()
	st := newStore(stateDir(), warn)
	var sess *session
	switch {
	case f.sessionID != "":
		sess, err = st.open(f.sessionID)
	case f.cont:
		var latest *session
		if latest, err = st.latest(root); err == nil {
			sess, err = st.open(latest.ID)
		}
	case headless:
		sess, err = st.begin(root) // on disk at its first message (store.go)
	default:
		sess, err = st.create(root)
	}
	if err != nil {
		st.close()
		return nil, nil, err
	}
	if sess.Project != root && f.sessionID == "" {
		st.close()
		return nil, nil, fmt.Errorf("session %s belongs to %s", sess.ID, sess.Project)
	}
	if sess.Project != "" {
		root = sess.Project
	}
	model := f.model
	if model == "" && sess.Model != "" && (f.cont || f.sessionID != "") && os.Getenv("LEMBAS_MODEL") == "" {
		model = sess.Model
	}
	offer := sessionOffer(sess, root, mode, headless, st) // needs no model: decided while the lookup runs
	var ref *modelRef
	if early != nil {
		ref, err = early.wait()
	} else {
		ref, err = chooseModel(ctx, cfg, model, os.Getenv)
	}
	if err != nil {
		st.close()
		return nil, nil, err
	}
	tb, err := newToolboxFor(root, ref.Meta.vision(), offer)
	if err != nil {
		st.close()
		return nil, nil, err
	}
	tb.sandbox = newSandbox(cfg.Sandbox, root) // every bash call runs in it (sandbox.go)
	if n := tb.sandbox.notice(); n != "" && warn != nil {
		warn(n) // once per session: no OS sandbox here
	}
	if sess.System == "" {
		sess.System, err = systemPrompt(root, mode, tb.shell, sess.Plan)
		if err != nil {
			st.close()
			return nil, nil, err
		}
		// Only the library tools offered are named (tools_offer.go).
		sess.System = trimLibraryBlock(sess.System, tb)
		sess.NoteMode = mode // the mode the system prompt tells
	}
	var extra map[string]any
	if f.effort != "" {
		if extra, err = levelFields(ref.String(), ref.Meta, f.effort); err != nil {
			if len(sess.Messages) == 0 && !f.cont && f.sessionID == "" {
				st.remove(sess.ID) // made for this run, which never starts
			}
			st.close()
			return nil, nil, usageError{"--effort: " + err.Error()}
		}
	}
	sess.Model = ref.String()
	sess.Mode = mode
	// On disk before any front end names the session (session/new's
	// answer): a kill -9 before its first turn must leave one that opens
	// again on its model (the soak, soak_test.go).
	if err := st.save(sess); err != nil {
		st.close()
		return nil, nil, err
	}
	maxSteps := theSpec().Loop.Budgets["cli"].MaxSteps
	if f.maxSteps > 0 {
		maxSteps = f.maxSteps
	}
	perm := newPermissions(mode, root, headless)
	tb.protected = func(abs string) bool { _, ok := perm.protectedFor(abs); return ok }
	tb.privateWeb = func(host string) bool { _, ok := perm.privateWebRule("webfetch", host); return ok }
	e := &engine{ref: ref, tb: tb, perm: perm, st: st, sess: sess, maxSteps: maxSteps,
		hygiene: hygieneOn(os.Getenv), extra: extra}
	e.jx.models = func(ctx context.Context, name string) (*modelRef, error) {
		return chooseModel(ctx, cfg, name, os.Getenv)
	}
	tb.mcp = startSessionMCP(cfg, root, f.mcpServers, ref.Meta.vision(), f.linkOpened, !headless, warn, tb.sandbox)
	return e, func() { e.stopJobs(); tb.mcp.close(); tb.sandbox.close(); st.close() }, nil
}

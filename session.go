package main

// session.go: a session assembled for a front end — the REPL, -p, ACP and
// the link all open one here: the session on disk (new, the newest of the
// project, or a given one), its model, its toolbox, sandbox and MCP
// servers, its permissions, and the engine that runs its turns. It calls
// the workers' and the store's floors only.
//
//	sessionOpts ──► openSession (store) ──► the model (early lookup) ──► toolbox + sandbox
//	            ──► system prompt ──► permissions ──► newEngine ──► MCP servers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// sessionOpts are what a session is opened with, whichever front end
// opens it: the command line, the REPL, ACP's session/new, the link's.
type sessionOpts struct {
	model     string
	mode      string
	cwd       string
	maxSteps  int
	cont      bool
	sessionID string
	effort    string

	mcpServers []json.RawMessage // ACP session/new's, beside config.yaml's and the project's (mcp_config.go)
	linkOpened bool              // the link's client opened the session: the instance's library scopes its calls by it
	agents     []int             // the link's agents {min, max}: the Subagents setting for this session (team_setting.go)

	sandboxProbe func() sandboxProbe // the machine's sandbox as a test has it (sandbox.probeHook); nil probes this one
}

// newSessionEngine sets up a session to work in — new, the newest of the
// project (-c), or a given one (--session) — and an engine for it.
func newSessionEngine(ctx context.Context, f *sessionOpts, headless bool, warn func(string)) (*engine, func(), error) {
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
		return nil, nil, errorf("config.yaml: %v", err)
	}
	if headless {
		holdGC(int64(theSpec().Loop.Budgets["cli"].HeadlessGCHoldMiB)<<20, os.Getenv)
	}
	var early *modelLookup // a new session's model does not depend on it: look it up while it is made
	if !f.cont && f.sessionID == "" {
		early = lookupModel(ctx, cfg, f.model, os.Getenv)
	}
	defer early.stop()
	st := newStore(stateDir(), warn)
	sess, err := openSession(st, f, root, headless)
	if err != nil {
		st.close()
		return nil, nil, err
	}
	if sess.Project != "" {
		root = sess.Project
	}
	if f.mode == "" && f.cont && !headless && sess.Mode != "" {
		// The REPL's -c goes on in the mode the session was left in
		// (/mode auto is kept); --mode still chooses, and -p's mode is
		// always the one its command line or config.yaml names.
		if m, err := normMode(sess.Mode); err == nil {
			mode = m
		}
	}
	model := f.model
	if model == "" && sess.Model != "" && (f.cont || f.sessionID != "") && os.Getenv("LEMBAS_MODEL") == "" {
		model = sess.Model
	}
	sb := newSandbox(cfg.Sandbox, root) // every bash call runs in it (sandbox.go)
	perm := newPermissions(mode, root, headless)
	webOK := func() bool { return webReaches(sb, perm) }
	offer := sessionOffer(sess, root, mode, headless, st, namePatches(cfg, model, os.Getenv), webOK) // the model's name, not its lookup: decided while it runs
	teamOfferFor(sess, offer, f.agents)                                                              // the link's Subagents setting (team_setting.go)
	var ref *modelRef
	if early != nil {
		ref, err = early.wait()
	} else {
		ref, err = chooseModel(ctx, cfg, model, os.Getenv)
		if err != nil && model != f.model {
			// The resumed session's model is gone (its connection was the
			// environment's, now unset; its server is down): the configured
			// one carries the conversation on, and the person is told.
			if now, err2 := chooseModel(ctx, cfg, f.model, os.Getenv); err2 == nil {
				if warn != nil {
					warn(fillPairs(theSpec().Loop.ModelErrors["resume_fallback"], "model", model, "error", err, "now", now))
				}
				ref, err = now, nil
			}
		}
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
	tb.sandbox = sb
	tb.sandbox.probeHook = f.sandboxProbe
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
	// again on its model (the soak, soak_test.go). -p names it only after
	// its first message is saved, which writes it whole (store.go begin).
	if !headless {
		if err := st.save(sess); err != nil {
			st.close()
			return nil, nil, err
		}
	}
	maxSteps := theSpec().Loop.Budgets["cli"].MaxSteps
	if f.maxSteps > 0 {
		maxSteps = f.maxSteps
	}
	perm.setSandbox(sandboxWhy(tb.sandbox)) // none in force: auto asks what is not contained (permission_boundary.go)
	if sb := tb.sandbox; sb != nil {
		perm.setSandboxLate(func() string { return sandboxWeakWhy(sb) }) // Landlock alone counts as none
	}
	tb.protected = func(abs string) bool { _, ok := perm.protectedFor(abs); return ok }
	tb.privateWeb = func(host string) bool { _, ok := perm.privateWebRule("webfetch", host); return ok }
	tb.webAllowed, perm.net = perm.webAllowRule, tb.sandbox // webfetch follows the commands' network rules (web.go)
	e := newEngine(ref, tb, perm, st, sess, maxSteps)
	e.hygiene, e.extra = hygieneOn(os.Getenv), extra
	e.jx.models = func(ctx context.Context, name string) (*modelRef, error) {
		return chooseModel(ctx, cfg, name, os.Getenv)
	}
	teamSessionStart(e, f.agents, warn) // the lead block and the team's notes (team_setting.go)
	tb.mcp = startSessionMCP(cfg, root, f.mcpServers, ref.Meta.vision(), f.linkOpened, !headless, warn, tb.sandbox)
	return e, func() { e.stopJobs(); tb.mcp.close(); tb.sandbox.close(); st.close() }, nil
}

// openSession is the session a front end works in: the one named
// (--session), the newest of the project (-c), or a new one — for -p, one
// that is on disk only from its first message (store.go begin).
func openSession(st *store, f *sessionOpts, root string, headless bool) (*session, error) {
	var sess *session
	var err error
	switch {
	case f.sessionID != "":
		sess, err = st.open(f.sessionID)
	case f.cont:
		var latest *session
		if latest, err = st.latest(root); err == nil {
			sess, err = st.open(latest.ID)
		}
	case headless:
		sess, err = st.begin(root)
	default:
		sess, err = st.create(root)
	}
	if err != nil {
		return nil, err
	}
	if sess.Project != root && f.sessionID == "" {
		return nil, errorf("session %s belongs to %s", sess.ID, sess.Project)
	}
	return sess, nil
}

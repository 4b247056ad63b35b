package main

// The team in the terminal: /settings subagents sets the setting in
// config.yaml, a new session is offered the team tools, /agents draws the
// tree (id, name, position, state, phase, elapsed) and /agents s1 shows a
// member's transcript and findings.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTeamInRepl(t *testing.T) {
	fm := newFakeModel(t)
	member := 0
	fm.route = func(req fakeRequest) fakeReply {
		all := allUser(req)
		if strings.Contains(all, "ROUTE-MEMBER") {
			member++
			if member == 1 {
				return callsReply(fakeCall{"team_findings", map[string]any{"add": "F1 at src/app.txt:1"}})
			}
			return callsReply(fakeCall{"team_finish", map[string]any{"report": "R1 said hi"}})
		}
		if lastIsUserWith(req, `<team-report id="s1"`) {
			return textReply("Team done.")
		}
		if strings.Contains(all, "ROUTE-MAIN") && strings.Count(string(req.Raw), `"role":"assistant"`) == 0 {
			return callsReply(fakeCall{"team_add", map[string]any{"name": "helper", "position": "greeter", "task": "ROUTE-MEMBER: say hi"}})
		}
		return textReply("Waiting.")
	}
	h := startRepl(t, fm, "edit", false, yes())
	h.expect("/help for commands")
	h.typ("/settings subagents 0 4")
	h.expect("Subagents takes two numbers")
	h.typ("/settings subagents 1 4")
	h.expect("Subagents set to Min 1, Max 4")
	if b, _ := os.ReadFile(configPath()); !strings.Contains(string(b), "max: 4") || strings.Contains(string(b), `"4"`) {
		t.Errorf("config.yaml:\n%s", b)
	}
	h.typ("/settings subagents")
	h.expect("Subagents: Min 1, Max 4")
	h.exit()
	conf, _ := os.ReadFile(configPath())
	// A session begun after the setting is offered the team tools.
	h = startReplWithConfig(t, fm, "edit", string(conf))
	h.expect("/help for commands")
	h.typ("ROUTE-MAIN: say hi through a member")
	h.expect("Team done.")
	h.turnDone()
	h.typ("/agents")
	h.expect("s1  helper  greeter  finished  -  ")
	h.typ("/agents s1")
	h.expect("1. F1 at src/app.txt:1")
	h.expect("R1 said hi")
	h.exit()
	var tools string
	for _, q := range fm.got() {
		if strings.Contains(allUser(q), "ROUTE-MAIN") {
			tools = teamToolNames(q)
			break
		}
	}
	if !strings.Contains(tools, " team_add ") {
		t.Errorf("the new session was not offered the team tools: %s", tools)
	}
}

// startReplWithConfig is startRepl with config.yaml written first.
func startReplWithConfig(t *testing.T, fm *fakeModel, mode, conf string) *replHarness {
	t.Helper()
	replEnv(t, fm)
	os.MkdirAll(filepath.Dir(configPath()), 0o700)
	if err := os.WriteFile(configPath(), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := copyProject(t, "basic")
	setTrust(proj, true)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &runFlags{sessionOpts: sessionOpts{mode: mode, cwd: proj}}
	e, cleanup, err := newSessionEngine(ctx, &f.sessionOpts, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	cfg, _ := loadConfig()
	pr, pw := io.Pipe()
	h := &replHarness{t: t, fm: fm, in: pw, out: newSyncBuffer(), done: make(chan error, 1), proj: proj}
	h.r = newRepl(ctx, e, f, cfg, replIO{in: pr, out: h.out, width: 100})
	go func() {
		h.r.start()
		h.done <- h.r.run("")
	}()
	t.Cleanup(func() { pw.Close() })
	return h
}

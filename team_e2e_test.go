package main

// The team end to end, through the real binary (lembas -p, stream-json)
// and a scripted model that answers each agent of the tree by its own
// script: the main agent adds a sub-manager; the sub-manager adds two
// members (and its own write is refused: it directs); one member asks for
// write, the main agent grants it and the member writes; the other runs
// out of context, saves a finding in its one final turn and ends as
// out_of_context; each report goes to its parent; the session on disk
// keeps the findings and the transcripts.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// routedModel answers each request by the agent that sent it: the script
// whose key is in the request's first user message.
type routedModel struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	seen   map[string][]fakeRequest
	script map[string]func(n int, req fakeRequest) fakeReply
}

func newRoutedModel(t *testing.T, script map[string]func(n int, req fakeRequest) fakeReply) *routedModel {
	r := &routedModel{t: t, seen: map[string][]fakeRequest{}, script: script}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *routedModel) serve(w http.ResponseWriter, hr *http.Request) {
	if hr.Method == "GET" {
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]string{"id": "mock", "object": "model"}}})
		return
	}
	raw, _ := io.ReadAll(hr.Body)
	req := fakeRequest{Raw: raw}
	json.Unmarshal(raw, &req.Body)
	first := ""
	for _, m := range req.messages() {
		if m["role"] == "user" {
			first, _ = m["content"].(string)
			break
		}
	}
	r.mu.Lock()
	var key string
	for k := range r.script {
		if strings.Contains(first, k) {
			key = k
		}
	}
	if key == "" {
		r.mu.Unlock()
		r.t.Errorf("routed model: no script for %.200q", first)
		http.Error(w, `{"error":{"message":"no script"}}`, 500)
		return
	}
	r.seen[key] = append(r.seen[key], req)
	n := len(r.seen[key])
	f := r.script[key]
	r.mu.Unlock()
	rep := f(n, req)
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, rep.body)
}

func (r *routedModel) got(key string) []fakeRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fakeRequest(nil), r.seen[key]...)
}

// bigCallsReply is callsReply with an input count past any context window.
func bigCallsReply(calls ...fakeCall) fakeReply {
	rep := callsReply(calls...)
	rep.body = strings.Replace(rep.body, `"prompt_tokens":200`, `"prompt_tokens":90000000`, 1)
	return rep
}

// allUser is every user message of a request, joined.
func allUser(req fakeRequest) string {
	var b strings.Builder
	for _, m := range req.messages() {
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}

func teamToolNames(req fakeRequest) string {
	var names []string
	for _, raw := range req.Body.Tools {
		var d struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		json.Unmarshal(raw, &d)
		names = append(names, d.Function.Name)
	}
	return " " + strings.Join(names, " ") + " "
}

// teamScript is the tree's scripts, shared by the stream-json and link tests.
func teamScript(t *testing.T) map[string]func(int, fakeRequest) fakeReply {
	return map[string]func(int, fakeRequest) fakeReply{
		"PROMPT-MAIN": func(n int, req fakeRequest) fakeReply {
			switch {
			case n == 1:
				return callsReply(fakeCall{"team_add", map[string]any{"name": "lead", "position": "sub-manager", "lead": true,
					"task": "LEAD-TASK: direct two members, one writes notes.txt, one reads src/app.txt"}})
			case lastIsUserWith(req, "<team-request"):
				return callsReply(fakeCall{"team_decide", map[string]any{"id": "r1", "allow": true, "note": "go ahead"}})
			case strings.Contains(allUser(req), "<team-report id=\"s1\""):
				// The lead's report may come in the same message as a
				// request (decided first) or after it: read the whole turn.
				return textReply("MAIN-DONE: the team wrote notes.txt and read src/app.txt.")
			}
			return textReply("Waiting for the team.")
		},
		"LEAD-TASK": func(n int, req fakeRequest) fakeReply {
			all := allUser(req)
			switch {
			case n == 1:
				return callsReply(
					fakeCall{"team_add", map[string]any{"name": "writer", "position": "writer", "task": "WRITER-TASK: write notes.txt", "mode": "manual", "request": []string{"write"}}},
					fakeCall{"team_add", map[string]any{"name": "reader", "position": "reader", "task": "READER-TASK: read src/app.txt"}},
					fakeCall{"write", map[string]any{"path": "lead.txt", "content": "x"}})
			case strings.Contains(all, `<team-report id="s2"`) && strings.Contains(all, `<team-report id="s3"`):
				return callsReply(fakeCall{"team_finish", map[string]any{"report": "LEAD-REPORT: notes.txt written; app.txt read by reader before it ran out of context"}})
			}
			return textReply("Directing.")
		},
		"WRITER-TASK": func(n int, req fakeRequest) fakeReply {
			switch {
			case n == 1:
				return callsReply(fakeCall{"team_request", map[string]any{"option": "write", "why": "to write notes.txt"}})
			case lastResultHas(req, "notes.txt"):
				return callsReply(fakeCall{"team_findings", map[string]any{"add": "notes.txt holds the team notes"}},
					fakeCall{"team_finish", map[string]any{"report": "WRITER-REPORT: wrote notes.txt"}})
			case lastIsUserWith(req, "<team-decision"):
				return callsReply(fakeCall{"write", map[string]any{"path": "notes.txt", "content": "team notes\n"}})
			}
			return textReply("Waiting for the decision.")
		},
		"READER-TASK": func(n int, req fakeRequest) fakeReply {
			switch n {
			case 1:
				return bigCallsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}})
			case 2:
				if !strings.Contains(lastUser(req), "out of context") {
					t.Errorf("reader's second request is not its final turn: %q", lastUser(req))
				}
				return callsReply(fakeCall{"team_findings", map[string]any{"add": "READER-FINDING: src/app.txt says status TODO"}})
			}
			return callsReply(fakeCall{"team_finish", map[string]any{"report": "READER-REPORT: out of room after reading app.txt"}})
		},
	}
}

// teamEnv is a project, a state folder and a config that allows a team.
func teamEnv(t *testing.T, url string) (string, []string) {
	proj := copyProject(t, "basic")
	state, conf := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(conf, "lembas"), 0o755)
	if err := os.WriteFile(filepath.Join(conf, "lembas", "config.yaml"), []byte("subagents:\n  min: 1\n  max: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return proj, []string{"OPENAI_BASE_URL=" + url, "OPENAI_API_KEY=x", "LEMBAS_MODEL=mock",
		"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + conf}
}

func TestTeamEndToEnd(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fixture runs through a POSIX shell")
	}
	fm := newRoutedModel(t, teamScript(t))
	proj, env := teamEnv(t, fm.srv.URL+"/v1")
	r := runLembas(t, env, proj, "", "--mode", "edit", "--output-format", "stream-json", "-p", "PROMPT-MAIN: build a team")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout: %s", r.code, r.stderr, r.stdout)
	}
	// What the members did is on disk.
	if data, err := os.ReadFile(filepath.Join(proj, "notes.txt")); err != nil || string(data) != "team notes\n" {
		t.Errorf("notes.txt = %q, %v: the granted write did not run", data, err)
	}
	if _, err := os.Stat(filepath.Join(proj, "lead.txt")); err == nil {
		t.Errorf("the sub-manager's own write ran; a manager's work tools are refused")
	}
	// stream-json carries the tree, the members' events and the final answer.
	var last *teamTree
	agents := map[string]bool{}
	var done string
	var sessionID string
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stream-json line is not an event: %v: %s", err, sc.Bytes())
		}
		if ev.Type == evTeam && ev.Team != nil {
			last = ev.Team
		}
		if ev.Agent != "" {
			agents[ev.Agent] = true
		}
		if ev.Type == evDone && ev.Agent == "" {
			done = ev.Text
			sessionID = ev.Session
		}
	}
	if !strings.Contains(done, "MAIN-DONE") {
		t.Errorf("the main agent's answer is %q", done)
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		if !agents[id] {
			t.Errorf("no event of %s in stream-json", id)
		}
	}
	if last == nil {
		t.Fatalf("no team event in stream-json:\n%s", r.stdout)
	}
	checkTree(t, last)
	// What each agent was told.
	lead := fm.got("LEAD-TASK")
	if len(lead) < 2 {
		t.Fatalf("the sub-manager made %d requests", len(lead))
	}
	res := toolResults(lead[1])
	if len(res) < 3 || !strings.Contains(res[0], "Added s2 (writer, writer) under s1") || !strings.Contains(res[0], "Its report goes to s1") ||
		!strings.Contains(res[2], theSpec().Loop.Team.Refusals["manager_work"]) {
		t.Errorf("the sub-manager's results: %q", res)
	}
	if names := teamToolNames(lead[0]); !strings.Contains(names, " team_add ") || !strings.Contains(names, " team_finish ") || strings.Contains(names, " team_decide ") {
		t.Errorf("the sub-manager's tools: %s", names)
	}
	writer := fm.got("WRITER-TASK")
	if names := teamToolNames(writer[0]); strings.Contains(names, " team_add ") || !strings.Contains(names, " team_request ") {
		t.Errorf("a member's tools: %s", names)
	}
	main := fm.got("PROMPT-MAIN")
	if names := teamToolNames(main[0]); !strings.Contains(names, " team_decide ") || strings.Contains(names, " team_finish ") || strings.Contains(names, " team_request ") {
		t.Errorf("the main agent's tools: %s", names)
	}
	granted := false
	for _, q := range main {
		for _, res := range toolResults(q) {
			granted = granted || strings.Contains(res, "Granted write to s2: it now works in edit mode.")
		}
	}
	// add, decide, the answer, and a wait or two between them as the
	// members' marks happen to arrive.
	if !granted || len(main) < 3 || len(main) > 5 {
		t.Errorf("the main agent made %d requests (want 3 to 5: add, decide, waits, answer); granted: %v", len(main), granted)
	}
	// The session keeps the findings and transcripts: sessions show prints them.
	show := runLembas(t, env, proj, "", "sessions", "show", sessionID)
	for _, want := range []string{"READER-FINDING", "notes.txt holds the team notes", "WRITER-REPORT", "LEAD-REPORT", "out_of_context"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, show.stdout)
		}
	}
}

// checkTree checks the tree the run ended with.
func checkTree(t *testing.T, tr *teamTree) {
	t.Helper()
	byID := map[string]teamNode{}
	for _, n := range tr.Agents {
		byID[n.ID] = n
	}
	want := []struct{ id, parent, state, mode string }{
		{"s1", "main", "finished", "edit"},
		{"s2", "s1", "finished", "edit"},
		{"s3", "s1", "out_of_context", "edit"},
	}
	for _, w := range want {
		n, ok := byID[w.id]
		if !ok {
			t.Errorf("tree has no %s: %+v", w.id, tr)
			continue
		}
		if n.Parent != w.parent || n.State != w.state || n.Mode != w.mode {
			t.Errorf("%s: parent %s state %s mode %s, want %s %s %s", w.id, n.Parent, n.State, n.Mode, w.parent, w.state, w.mode)
		}
	}
	if !byID["s1"].Lead || fmt.Sprint(byID["s2"].Granted) != "[write]" || byID["s3"].Findings != 1 {
		t.Errorf("tree %+v", tr)
	}
}

// lastResultHas says whether the request's last message is a tool result
// that says s.
func lastResultHas(req fakeRequest, s string) bool {
	ms := req.messages()
	if len(ms) == 0 || ms[len(ms)-1]["role"] != "tool" {
		return false
	}
	c, _ := ms[len(ms)-1]["content"].(string)
	return strings.Contains(c, s)
}

// lastIsUserWith says whether the request's last message is a user
// message (a mark) that says s.
func lastIsUserWith(req fakeRequest, s string) bool {
	ms := req.messages()
	if len(ms) == 0 || ms[len(ms)-1]["role"] != "user" {
		return false
	}
	c, _ := ms[len(ms)-1]["content"].(string)
	return strings.Contains(c, s)
}

// TestTeamOverACP: the same tree through lembas serve --stdio; a LLeMbas
// client gets the team event as a team session update, and a plain editor
// none.
func TestTeamOverACP(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fixture runs through a POSIX shell")
	}
	for _, lembas := range []bool{true, false} {
		fm := newRoutedModel(t, teamScript(t))
		proj, env := teamEnv(t, fm.srv.URL+"/v1")
		p := startACP(t, env, proj)
		caps := map[string]any{}
		if lembas {
			caps["_meta"] = map[string]any{"lembas": map[string]any{"protocol": 3}}
		}
		p.initialize(caps)
		sid := p.newSession(proj, "edit")
		var last *teamTree
		r := p.result(p.request("session/prompt", prompt(sid, "PROMPT-MAIN: build a team")), func(m map[string]any) {
			if u := update(m); u != nil && u["sessionUpdate"] == "team" {
				raw, _ := json.Marshal(u["_meta"].(map[string]any)["lembas"].(map[string]any)["team"])
				var tr teamTree
				json.Unmarshal(raw, &tr)
				last = &tr
			}
		})
		if r["stopReason"] != "end_turn" {
			t.Fatalf("prompt: %v", r)
		}
		if !lembas {
			if last != nil {
				t.Errorf("a plain editor got a team update")
			}
			continue
		}
		if last == nil {
			t.Fatalf("no team update; stderr:\n%s", p.stderr.String())
		}
		checkTree(t, last)
	}
}

// TestTeamFindingsSurviveKill: a member saves a finding, and lembas is
// killed (SIGKILL) while it works; the session on disk still holds the
// finding, the member's place and its transcript.
func TestTeamFindingsSurviveKill(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("kill -9 is a POSIX signal")
	}
	reached := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	var once sync.Once
	fm := newRoutedModel(t, map[string]func(int, fakeRequest) fakeReply{
		"KILL-MAIN": func(n int, req fakeRequest) fakeReply {
			if n == 1 {
				return callsReply(fakeCall{"team_add", map[string]any{"name": "digger", "task": "KILL-MEMBER: dig"}})
			}
			return textReply("Waiting.")
		},
		"KILL-MEMBER": func(n int, req fakeRequest) fakeReply {
			if n == 1 {
				return callsReply(fakeCall{"team_findings", map[string]any{"add": "KILL-FINDING at src/app.txt:1"}})
			}
			once.Do(func() { close(reached) })
			<-release // works on until lembas is killed
			return textReply("never")
		},
	})
	proj, env := teamEnv(t, fm.srv.URL+"/v1")
	cmd := exec.Command(lembasBin(t), "--mode", "edit", "--output-format", "stream-json", "-p", "KILL-MAIN: dig")
	cmd.Dir = proj
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh"}, env...)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	sid := ""
	for sid == "" && sc.Scan() {
		var ev event
		json.Unmarshal(sc.Bytes(), &ev)
		sid = ev.Session
	}
	go io.Copy(io.Discard, out)
	select {
	case <-reached:
	case <-time.After(guard):
		cmd.Process.Kill()
		t.Fatalf("the member never made its second request")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	show := runLembas(t, env, proj, "", "sessions", "show", sid)
	for _, want := range []string{"KILL-FINDING at src/app.txt:1", "subagent s1 (digger)", "KILL-MEMBER: dig", "· working"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("after kill -9, sessions show lacks %q:\n%s%s", want, show.stdout, show.stderr)
		}
	}
}

package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestACPJobUpdates: a background command reaches an ACP client as a tool
// call of its own (in progress, then completed with its end line), and its
// end mark goes to the model with the next prompt.
func TestACPJobUpdates(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the job runs through a POSIX shell")
	}
	f := newFakeModel(t)
	f.push(callsReply(fakeCall{"bash", map[string]any{"command": "echo hi", "background": true}}),
		textReply("started"), textReply("it is done"))
	proj := copyProject(t, "basic")
	p := startACP(t, acpEnv(t, f, t.TempDir()), proj)
	p.initialize(map[string]any{})
	sid := p.newSession(proj, "auto")
	var seq []string
	ended := false
	on := func(m map[string]any) {
		u := update(m)
		if u == nil || !strings.HasPrefix(fmt.Sprint(u["toolCallId"]), "job:") {
			return
		}
		seq = append(seq, fmt.Sprintf("%v:%v", u["sessionUpdate"], u["status"]))
		if u["status"] == "completed" {
			ended = true
			if !strings.Contains(fmt.Sprint(u["content"]), "job j1 done (exit 0): echo hi") {
				t.Errorf("end content %v", u["content"])
			}
		}
	}
	p.result(p.request("session/prompt", prompt(sid, "run echo in the background")), on)
	for !ended {
		on(p.read())
	}
	if got := strings.Join(seq, " "); got != "tool_call:in_progress tool_call_update:completed" {
		t.Errorf("job updates %s", got)
	}
	p.result(p.request("session/prompt", prompt(sid, "and now?")), nil2)
	reqs := f.got()
	users := userTexts(reqs[len(reqs)-1])
	if countContaining(users, `<job-ended id="j1" kind="command" status="done">echo hi (exit 0).`) != 1 {
		t.Errorf("the next prompt's request %q lacks the end mark", users)
	}
}

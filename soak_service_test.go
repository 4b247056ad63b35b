package main

// The service soak: the real service linked to a raw-TCP fake instance for
// LEMBAS_SERVICE_SOAK seconds of mixed traffic — sessions opened, prompted,
// cancelled and deleted, a tool call to an MCP server that crashes in it,
// an MCP server that hangs at start, hostile frames that close the link,
// and the redials after them — then the process's RSS, goroutines and open
// files compared with the first round's. It runs in a child process of its
// own, so that what is counted is the service's.
//
//	LEMBAS_SERVICE_SOAK=50 go test -count=1 -run '^TestSoakService$' -v .     # CI
//	LEMBAS_SERVICE_SOAK=600 go test -count=1 -run '^TestSoakService$' -v -timeout 20m .

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSoakService(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("LEMBAS_SERVICE_SOAK"))
	if secs <= 0 {
		t.Skip("the service soak runs with LEMBAS_SERVICE_SOAK=seconds")
	}
	if runtime.GOOS != "linux" {
		t.Skip("RSS and open files are read from /proc")
	}
	if os.Getenv("LEMBAS_SERVICE_SOAK_CHILD") == "" {
		skipNoFork(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestSoakService$", "-test.count=1", "-test.v", "-test.timeout=0")
		cmd.Env = append(os.Environ(), "LEMBAS_SERVICE_SOAK_CHILD=1")
		out, err := cmd.CombinedOutput()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "soak:") {
				t.Log(strings.TrimSpace(line))
			}
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSoakService") {
			t.Fatalf("the service soak failed (%v):\n%s", err, out)
		}
		return
	}
	soakServiceChild(t, time.Duration(secs)*time.Second)
}

// procStat is what the soak compares: bytes resident, goroutines, open
// file descriptors.
type procStat struct{ rss, goroutines, files int64 }

func readProcStat(t *testing.T) procStat {
	var p procStat
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			p.rss = n << 10
		}
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	p.files = int64(len(fds))
	p.goroutines = int64(runtime.NumGoroutine())
	return p
}

func soakServiceChild(t *testing.T, d time.Duration) {
	mcp := func(name, mode string) string {
		return "  " + name + ":\n    command: " + strconv.Quote(os.Args[0]) + "\n    args: [\"-test.run=^TestFakeMCPProcess$\"]\n    startup_timeout: 1\n    call_timeout: 5\n    env:\n      LEMBAS_FAKE_MCP: " + mode + "\n"
	}
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  max_mode: auto\nmcp:\n"+mcp("crash", "normal")+mcp("hang", "silent"))
	e.fi.model.t = killedTB{t} // a cancelled turn's request is cut short: expected
	ri := startRawService(t, e)
	l := ri.next(t)
	var base procStat
	start := time.Now()
	n := 0
	for round := 0; round == 0 || time.Since(start) < d; round++ {
		e.fi.model.clearReplies()
		e.fi.model.forgetRequests()
		id := func(what string) string { return fmt.Sprintf("%s-%d", what, round) }
		params, _ := json.Marshal(map[string]any{"cwd": e.proj, "mcpServers": []any{}, "_meta": map[string]any{"mode": "auto", "lembas_model": "acme/chat-1"}})
		l.text(`{"jsonrpc":"2.0","id":"` + id("new") + `","method":"session/new","params":` + string(params) + `}`)
		r, _ := l.answer(t, id("new"))["result"].(map[string]any)
		sid, _ := r["sessionId"].(string)
		if sid == "" {
			t.Fatalf("round %d: no session", round)
		}
		prompt := func(what, text string) map[string]any {
			p, _ := json.Marshal(promptParams(sid, text, id(what)))
			l.text(`{"jsonrpc":"2.0","id":"` + id(what) + `","method":"session/prompt","params":` + string(p) + `}`)
			return l.answer(t, id(what))
		}
		// A plain turn.
		e.fi.model.push(textReply("plain"))
		if a := prompt("plain", "hello"); a["result"] == nil {
			t.Fatalf("round %d: a plain turn: %v", round, a)
		}
		// A turn whose MCP tool call kills its server.
		e.fi.model.push(callsReply(fakeCall{"mcp__crash__die", map[string]any{}}), textReply("after the crash"))
		if a := prompt("crash", "call die"); a["result"] == nil {
			t.Fatalf("round %d: the crashing MCP call: %v", round, a)
		}
		// A turn cancelled as it starts.
		e.fi.model.push(textReply("maybe"))
		p, _ := json.Marshal(promptParams(sid, "cancel me", id("cancel")))
		l.text(`{"jsonrpc":"2.0","id":"` + id("cancel") + `","method":"session/prompt","params":` + string(p) + `}`)
		l.text(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
		if a := l.answer(t, id("cancel")); a["result"] == nil {
			t.Fatalf("round %d: a cancelled turn: %v", round, a)
		}
		// The session deleted, so the soak holds no more sessions than a round.
		l.text(`{"jsonrpc":"2.0","id":"` + id("del") + `","method":"_lembas/session/delete","params":{"sessionId":"` + sid + `"}}`)
		if a := l.answer(t, id("del")); a["error"] != nil {
			t.Fatalf("round %d: delete: %v", round, a)
		}
		// A hostile frame: the link closes with 1002 and is dialled again.
		hostile := [][]byte{wsFrame(0x89, make([]byte, 200)), wsFrame(0xc1, []byte("{}")), wsFrame(0x83, nil), wsFrame(0x80, []byte("x"))}
		l.send(hostile[round%len(hostile)])
		if c := l.closeCode(t); c != 1002 {
			t.Fatalf("round %d: closed with %d", round, c)
		}
		l.c.Close()
		l = ri.next(t)
		n++
		if round == 0 {
			base = settled(t, procStat{})
		}
	}
	end := settled(t, base)
	t.Logf("soak: %d rounds in %v; rss %d -> %d MB, goroutines %d -> %d, open files %d -> %d",
		n, time.Since(start).Round(time.Second), base.rss>>20, end.rss>>20, base.goroutines, end.goroutines, base.files, end.files)
	if end.rss-base.rss > 40<<20 {
		t.Errorf("RSS grew by %d MB", (end.rss-base.rss)>>20)
	}
	if end.goroutines > base.goroutines+5 {
		t.Errorf("goroutines grew from %d to %d:\n%s", base.goroutines, end.goroutines, allStacks())
	}
	if end.files > base.files+3 {
		t.Errorf("open files grew from %d to %d", base.files, end.files)
	}
}

// settled reads the process's numbers once goroutines of the round just
// ended have had their chance to end (up to a guard, while the count is
// above want's): a settle, not a timing.
func settled(t *testing.T, want procStat) procStat {
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		p := readProcStat(t)
		if want.goroutines == 0 || p.goroutines <= want.goroutines+5 && p.files <= want.files+3 || time.Now().After(deadline) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

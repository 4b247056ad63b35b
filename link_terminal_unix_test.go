//go:build unix

package main

// Terminals end to end: the real service, the real terminal handler and a
// real login shell on a real PTY, driven by the fake instance over the
// real WebSocket on loopback (link_test.go's fakeInstance).

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// termOutput waits until the decoded output of terminal id, from the start
// of the link, contains want, and gives its last part.
func termOutput(l *instLink, id, want string) []byte {
	l.t.Helper()
	return termOutputMatch(l, id, "output "+strconv.Quote(want), func(got []byte) bool { return bytes.Contains(got, []byte(want)) })
}

// termOutputMatch waits until ok holds for the decoded output so far.
func termOutputMatch(l *instLink, id, what string, ok func([]byte) bool) []byte {
	l.t.Helper()
	var got []byte
	l.waitNote(what, func(m map[string]any) bool {
		if m["method"] != "_lembas/terminal/output" {
			return false
		}
		p, _ := m["params"].(map[string]any)
		if p["terminalId"] != id {
			return false
		}
		b, err := base64.StdEncoding.DecodeString(fmt.Sprint(p["data"]))
		if err != nil {
			l.t.Fatalf("output that is not base64: %v", err)
		}
		got = append(got, b...)
		if len(got) > 1<<20 {
			got = append([]byte(nil), got[len(got)-8192:]...)
		}
		return ok(got)
	})
	return got
}

// termExit waits for terminal id's exit notification and gives its code.
func termExit(l *instLink, id string) float64 {
	l.t.Helper()
	m := l.waitNote("exit of "+id, func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		return m["method"] == "_lembas/terminal/exit" && p["terminalId"] == id
	})
	return m["params"].(map[string]any)["code"].(float64)
}

// shellPid asks the shell of terminal id for its process id.
func shellPid(l *instLink, id, tag string) int {
	l.t.Helper()
	l.result("_lembas/terminal/input", map[string]any{"terminalId": id, "data": b64("echo " + tag + "-$$-END\n")})
	re := regexp.MustCompile(tag + `-([0-9]+)-END`)
	m := re.FindSubmatch(termOutputMatch(l, id, "the pid of "+id, re.Match))
	pid, _ := strconv.Atoi(string(m[1]))
	return pid
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func linkCaps(l *instLink) string {
	init := l.result("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"lembas": map[string]any{"protocol": 3}}}})
	return fmt.Sprint(init["_meta"].(map[string]any)["lembas"].(map[string]any)["capabilities"])
}

// TestLinkTerminalsEndToEnd: a real shell over the real link — open in a
// folder of the roots, keystrokes in and output back as base64, a resize
// `stty size` sees (clamped), input as a request and as a notification,
// exit with the shell's status, close hanging the shell up, the fifth
// terminal refused, every shell hung up when the link drops, terminals
// opening again on the next link, and remote.terminal: false taking the
// capability away.
func TestLinkTerminalsEndToEnd(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  terminal: true\n  terminal_integration: false\n")
	e.startService()
	l := e.link()
	if caps := linkCaps(l); !strings.Contains(caps, "terminal") || !strings.Contains(caps, "shell") {
		t.Fatalf("capabilities without terminal and shell: %s", caps)
	}
	r := l.result("_lembas/terminal/open", map[string]any{"cwd": e.proj, "cols": 90, "rows": 30})
	id, _ := r["terminalId"].(string)
	if id == "" || r["cwd"] != e.proj || r["cols"] != float64(90) || r["rows"] != float64(30) || r["shell"] == "" || r["integration"] != false {
		t.Fatalf("open %v", r)
	}
	in := func(id, s string) {
		l.result("_lembas/terminal/input", map[string]any{"terminalId": id, "data": b64(s)})
	}
	in(id, "stty size; pwd; echo S-$((6*7))\n")
	if out := termOutput(l, id, "S-42"); !bytes.Contains(out, []byte("30 90")) || !bytes.Contains(out, []byte(e.proj)) {
		t.Errorf("stty size and pwd in %q", out)
	}
	l.result("_lembas/terminal/resize", map[string]any{"terminalId": id, "cols": 120, "rows": 40})
	in(id, "stty size; echo R-$((1+1))\n")
	if out := termOutput(l, id, "R-2"); !bytes.Contains(out, []byte("40 120")) {
		t.Errorf("resize not seen by stty size: %q", out)
	}
	l.result("_lembas/terminal/resize", map[string]any{"terminalId": id, "cols": 5000, "rows": 1})
	in(id, "stty size; echo C-$((2+1))\n")
	if out := termOutput(l, id, "C-3"); !bytes.Contains(out, []byte("5 500")) {
		t.Errorf("a resize out of range is not clamped to 500 x 5: %q", out)
	}
	// Input, resize and close may also come as notifications; keystrokes
	// keep their order either way.
	l.send(`{"jsonrpc":"2.0","method":"_lembas/terminal/input","params":{"terminalId":"` + id + `","data":"` + b64("echo N-") + `"}}`)
	in(id, "$((2+2))")
	l.send(`{"jsonrpc":"2.0","method":"_lembas/terminal/input","params":{"terminalId":"` + id + `","data":"` + b64("-$((3+3))\n") + `"}}`)
	termOutput(l, id, "N-4-6")
	if er := l.rpcErr("_lembas/terminal/input", map[string]any{"terminalId": id, "data": "not base64!"}); er["code"] != float64(-32602) {
		t.Errorf("bad base64: %v", er)
	}
	in(id, "exit 7\n")
	if code := termExit(l, id); code != 7 {
		t.Errorf("exit code %v, want 7", code)
	}

	// Four at most; close hangs one up.
	var ids []string
	for i := 0; i < 4; i++ {
		r := l.result("_lembas/terminal/open", map[string]any{})
		if r["cwd"] != e.root {
			t.Errorf("default cwd %v, want the first root %s", r["cwd"], e.root)
		}
		ids = append(ids, r["terminalId"].(string))
	}
	if er := l.rpcErr("_lembas/terminal/open", map[string]any{}); er["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(er["message"]), "4") {
		t.Errorf("the fifth terminal: %v", er)
	}
	pid0 := shellPid(l, ids[0], "P0")
	l.result("_lembas/terminal/close", map[string]any{"terminalId": ids[0]})
	if code := termExit(l, ids[0]); code == 0 {
		t.Errorf("a hung-up shell exited 0")
	}
	if !processGone(pid0) {
		t.Errorf("shell %d still there after close and exit", pid0)
	}
	var pids []int
	for i, tid := range ids[1:] {
		pids = append(pids, shellPid(l, tid, fmt.Sprintf("Q%d", i)))
	}

	// The link drops: every shell is hung up before the device dials again.
	e.fi.kill()
	e.fi.restart()
	l = e.link()
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("shell %d outlived the link", pid)
		}
	}
	// The next link opens terminals again (a fresh handler per link).
	r = l.result("_lembas/terminal/open", map[string]any{})
	id = r["terminalId"].(string)
	in(id, "echo A-$((5+5))\n")
	termOutput(l, id, "A-10")
	l.send(`{"jsonrpc":"2.0","method":"_lembas/terminal/close","params":{"terminalId":"` + id + `"}}`)
	termExit(l, id)

	// remote.terminal: false — no capability, the methods unknown.
	os.WriteFile(configPath(), []byte("remote:\n  roots: [~/work]\n"), 0o600)
	if caps := linkCaps(l); strings.Contains(caps, "terminal") || strings.Contains(caps, "shell") {
		t.Errorf("terminal listed while off: %s", caps)
	}
	if er := l.rpcErr("_lembas/terminal/open", map[string]any{}); er["code"] != float64(-32601) {
		t.Errorf("open while off: %v", er)
	}
}

// TestLinkTerminalFlood: a 100 MB flood while the instance reads nothing.
// The link's send queue fills and blocks the terminal's notify, the
// terminal stops reading its PTY at high water, and the device's memory
// stays bounded however much the shell writes; once the instance reads
// again, the shell answers.
func TestLinkTerminalFlood(t *testing.T) {
	e := newLinkEnv(t, "remote:\n  roots: [~/work]\n  terminal: true\n  terminal_integration: false\n")
	e.startService()
	l := e.link()
	r := l.result("_lembas/terminal/open", map[string]any{})
	id := r["terminalId"].(string)
	l.result("_lembas/terminal/input", map[string]any{"terminalId": id, "data": b64("echo READY-$((4*4))\n")})
	termOutput(l, id, "READY-16")
	th, _ := e.svc.terminals().(*terminals)
	if th == nil {
		t.Fatal("the link's terminal handler is not terminal.go's")
	}
	term, err := th.get(id)
	if err != nil {
		t.Fatal(err)
	}
	const flood = 100 << 20
	before := rssBytes(t)
	l.hold.Lock() // the instance stops reading
	held := true
	defer func() {
		if held {
			l.hold.Unlock()
		}
	}()
	l.send(`{"jsonrpc":"2.0","method":"_lembas/terminal/input","params":{"terminalId":"` + id + `","data":"` + b64(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x\n", flood)) + `"}}`)
	deadline := time.Now().Add(guard)
	for !term.flow().paused {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never stopped reading its PTY: %+v", term.flow())
		}
		time.Sleep(20 * time.Millisecond)
	}
	f := term.flow()
	grew := rssBytes(t) - before
	t.Logf("paused after reading %d bytes of %d; RSS grew %d KiB", f.read, flood, grew>>10)
	if f.read >= flood/2 {
		t.Errorf("read %d bytes of a %d flood while the client read nothing: the link's queue did not hold the terminal back", f.read, flood)
	}
	if grew > 64<<20 {
		t.Errorf("RSS grew %d MiB during a flood the client did not read", grew>>20)
	}
	// ^C as a notification (the instance may send while it does not read).
	l.send(`{"jsonrpc":"2.0","method":"_lembas/terminal/input","params":{"terminalId":"` + id + `","data":"` + b64("\x03") + `"}}`)
	l.hold.Unlock()
	held = false
	l.result("_lembas/terminal/input", map[string]any{"terminalId": id, "data": b64("echo BACK-$((8*8))\n")})
	termOutput(l, id, "BACK-64")
	if f := term.flow(); f.read >= flood {
		t.Errorf("the whole flood was read (%d bytes): ^C did not reach the shell while output was held", f.read)
	}
}

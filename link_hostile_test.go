package main

// The link under hostile frames, over a real socket: a fake instance written
// here on raw TCP (x/net's server would refuse to send a bad frame) answers
// discovery over HTTP, the upgrade by hand, and then sends each case's bytes.
// For every protocol violation the device must close with the RFC 6455 code,
// dial again, and serve on the new link; every frame it sends must be valid
// UTF-8 JSON; under the whole sequence its RSS grows by at most 40 MB.

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// rawLink is the instance's side of one link: frames in, bytes out.
type rawLink struct {
	c      net.Conn
	msgs   chan map[string]any
	closes chan int
	bad    chan string // a frame of the device that is not valid UTF-8 JSON, or masked wrong
}

// wsFrame builds one unmasked server frame with the header bits given.
func wsFrame(b0 byte, payload []byte) []byte {
	h := []byte{b0}
	switch n := len(payload); {
	case n <= 125:
		h = append(h, byte(n))
	case n <= 0xffff:
		h = append(h, 126, byte(n>>8), byte(n))
	default:
		h = append(h, 127)
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	return append(h, payload...)
}

func (l *rawLink) send(b []byte) { l.c.Write(b) }

func (l *rawLink) text(s string) { l.send(wsFrame(0x81, []byte(s))) }

// header is a final text frame's header for n bytes of payload.
func wsTextHeader(n int) []byte {
	return binary.BigEndian.AppendUint64([]byte{0x81, 127}, uint64(n))
}

// stream sends one text frame of head, n bytes fill, tail, in pieces.
func (l *rawLink) stream(head string, fill byte, n int, tail string) {
	l.send(wsTextHeader(len(head) + n + len(tail)))
	l.send([]byte(head))
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = fill
	}
	for sent := 0; sent < n; sent += len(chunk) {
		l.send(chunk[:min(len(chunk), n-sent)])
	}
	l.send([]byte(tail))
}

// streamRepeat sends one text frame of head, item n times, tail.
func (l *rawLink) streamRepeat(head, item string, n int, tail string) {
	l.send(wsTextHeader(len(head) + n*len(item) + len(tail)))
	l.send([]byte(head))
	piece := []byte(strings.Repeat(item, 1000))
	for i := 0; i < n; i += 1000 {
		l.send(piece[:min(1000, n-i)*len(item)])
	}
	l.send([]byte(tail))
}

// read is the instance's reader: every client frame must be masked (the
// device is the client); text frames must be UTF-8 JSON.
func (l *rawLink) read() {
	br := bufio.NewReader(l.c)
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			close(l.msgs)
			return
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var e [2]byte
			io.ReadFull(br, e[:])
			n = uint64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			io.ReadFull(br, e[:])
			n = binary.BigEndian.Uint64(e[:])
		}
		if h[1]&0x80 == 0 {
			l.bad <- "an unmasked client frame"
		}
		var key [4]byte
		io.ReadFull(br, key[:])
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			close(l.msgs)
			return
		}
		for i := range p {
			p[i] ^= key[i%4]
		}
		switch op := h[0] & 0x0f; op {
		case 0x8:
			code := 1005
			if len(p) >= 2 {
				code = int(binary.BigEndian.Uint16(p))
			}
			l.closes <- code
		case 0x1, 0x0:
			msg = append(msg, p...)
			if h[0]&0x80 == 0 {
				continue
			}
			var m map[string]any
			if !utf8.Valid(msg) || json.Unmarshal(msg, &m) != nil {
				l.bad <- fmt.Sprintf("not UTF-8 JSON: %.200q", msg)
			} else {
				l.msgs <- m
			}
			msg = nil
		}
	}
}

// next waits for the device's next message that is not a notification.
func (l *rawLink) answer(t *testing.T, id string) map[string]any {
	t.Helper()
	for {
		select {
		case m, ok := <-l.msgs:
			if !ok {
				t.Fatalf("the link ended before answer %s", id)
			}
			if _, isReq := m["method"]; isReq {
				continue
			}
			if fmt.Sprint(m["id"]) == id {
				return m
			}
		case b := <-l.bad:
			t.Fatalf("the device sent %s", b)
		case <-time.After(guard):
			t.Fatalf("no answer %s", id)
		}
	}
}

func (l *rawLink) closeCode(t *testing.T) int {
	t.Helper()
	for {
		select {
		case c := <-l.closes:
			return c
		case <-l.msgs:
		case b := <-l.bad:
			t.Fatalf("the device sent %s", b)
		case <-time.After(guard):
			t.Fatal("the device never closed the link")
		}
	}
}

// rawInstance accepts links on raw TCP and hands each over once upgraded.
type rawInstance struct {
	ln    net.Listener
	links chan *rawLink
}

func newRawInstance(t *testing.T) *rawInstance {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ri := &rawInstance{ln: ln, links: make(chan *rawLink, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil || br.Buffered() > 0 {
					c.Close()
					return
				}
				h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
				fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", base64.StdEncoding.EncodeToString(h[:]))
				l := &rawLink{c: c, msgs: make(chan map[string]any, 64), closes: make(chan int, 4), bad: make(chan string, 4)}
				go l.read()
				ri.links <- l
			}()
		}
	}()
	return ri
}

// next takes the device's next link and initializes it.
func (ri *rawInstance) next(t *testing.T) *rawLink {
	t.Helper()
	var l *rawLink
	select {
	case l = <-ri.links:
	case <-time.After(guard):
		t.Fatal("the device did not dial again")
	}
	t.Cleanup(func() { l.c.Close() })
	l.text(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"lembas":{"protocol":3}}}}}`)
	if a := l.answer(t, "init"); a["result"] == nil {
		t.Fatalf("initialize: %v", a)
	}
	return l
}

// TestLinkHostileSocket runs the whole hostile sequence in a child process
// of its own, so that its RSS high-water mark is the sequence's alone.
func TestLinkHostileSocket(t *testing.T) {
	if os.Getenv("LEMBAS_HOSTILE_CHILD") == "" {
		if runtime.GOOS != "linux" {
			t.Skip("the RSS high-water mark is read from /proc")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestLinkHostileSocket$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "LEMBAS_HOSTILE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestLinkHostileSocket") {
			t.Fatalf("the hostile sequence failed (%v):\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "rss") {
				t.Log(strings.TrimSpace(line))
			}
		}
		return
	}
	hostileSequence(t)
}

func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

func hostileSequence(t *testing.T) {
	e := newLinkEnv(t, "")
	ri := startRawService(t, e)
	before := vmHWM(t)

	l := ri.next(t)
	sid := e.newSessionRaw(t, l)
	violations := []struct {
		name  string
		frame []byte
		code  int
	}{
		{"a ping of 200 bytes", wsFrame(0x89, make([]byte, 200)), 1002},
		{"a fragmented ping", wsFrame(0x09, []byte("x")), 1002},
		{"reserved bit 1 on a text frame", wsFrame(0xc1, []byte("{}")), 1002},
		{"reserved bits 2 and 3", wsFrame(0xb1, []byte("{}")), 1002},
		{"opcode 3", wsFrame(0x83, []byte("{}")), 1002},
		{"opcode 0xb", wsFrame(0x8b, nil), 1002},
		{"a masked server frame", []byte{0x81, 0x82, 1, 2, 3, 4, '{' ^ 1, '}' ^ 2}, 1002},
		{"a continuation with nothing to continue", wsFrame(0x80, []byte("{}")), 1002},
		{"a text frame inside a fragmented message", append(wsFrame(0x01, []byte(`{"jsonrpc"`)), wsFrame(0x81, []byte("{}"))...), 1002},
		{"a close of one byte", wsFrame(0x88, []byte{3}), 1002},
		{"a close with code 1005", wsFrame(0x88, []byte{0x03, 0xed}), 1002},
		{"a close reason that is not UTF-8", wsFrame(0x88, []byte{0x03, 0xe8, 0xff}), 1007},
	}
	for _, v := range violations {
		l.send(v.frame)
		if got := l.closeCode(t); got != v.code {
			t.Errorf("%s: closed with %d, want %d", v.name, got, v.code)
		}
		l = ri.next(t) // dialled again
		l.text(`{"jsonrpc":"2.0","id":"st","method":"_lembas/session/status","params":{"sessionId":"` + sid + `"}}`)
		if a := l.answer(t, "st"); a["error"] != nil {
			t.Errorf("after %s the session did not resume: %v", v.name, a)
		}
	}

	// What the link takes and goes on after.
	l.send(wsFrame(0x89, make([]byte, 125))) // the largest ping: answered, not closed
	l.send(append(append(wsFrame(0x01, []byte(`{"jsonrpc":"2.0","id":"frag",`)), wsFrame(0x89, []byte("mid"))...),
		wsFrame(0x80, []byte(`"method":"_lembas/session/status","params":{"sessionId":"`+sid+`"}}`))...))
	if a := l.answer(t, "frag"); a["error"] != nil {
		t.Errorf("a fragmented message with a ping between its parts: %v", a)
	}
	l.send(wsFrame(0x81, []byte("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}")))
	if a := l.answer(t, "<nil>"); a["error"].(map[string]any)["code"] != float64(rpcParseError) {
		t.Errorf("invalid UTF-8: %v", a)
	}
	// The big ones are written in pieces from one small buffer, so that
	// the high-water mark is the device's memory, not the test's.
	l.stream(`{"jsonrpc":"2.0","id":"big","method":"x/big","params":{"pad":"`, 'z', 20<<20, `"}}`)
	if a := l.answer(t, "big"); a["error"] == nil {
		t.Errorf("a 20 MB frame: %v", a)
	}
	req := `{"jsonrpc":"2.0","id":1,"method":"x"},`
	l.streamRepeat("[", req, 100000, `{"jsonrpc":"2.0","id":1,"method":"x"}]`)
	if a := l.answer(t, "<nil>"); a["error"].(map[string]any)["code"] != float64(rpcInvalidRequest) {
		t.Errorf("a batch of 100000: %v", a)
	}
	// A frame past the limit (48 MB) is refused from its header: its
	// payload, sent in 1 MB pieces, is read and dropped, never held (the
	// high-water mark below would show 48 MB).
	l.stream("", 'z', theLinkSpec().WS.MaxMessageBytes+1, "")
	if a := l.answer(t, "<nil>"); a["error"].(map[string]any)["code"] != float64(rpcInvalidRequest) {
		t.Errorf("a frame past the limit: %v", a)
	}
	l.text(`{"jsonrpc":"2.0","id":"last","method":"_lembas/session/status","params":{"sessionId":"` + sid + `"}}`)
	if a := l.answer(t, "last"); a["error"] != nil {
		t.Errorf("after the sequence: %v", a)
	}
	after := vmHWM(t)
	t.Logf("rss high-water mark %d MB before the hostile sequence, %d MB after", before>>20, after>>20)
	if after-before > 40<<20 {
		t.Errorf("RSS grew by %d MB under the hostile sequence, over 40 MB", (after-before)>>20)
	}
}

// startRawService points the login at a raw instance (discovery here,
// everything else the fake instance's) and starts the real service.
func startRawService(t *testing.T, e *linkEnv) *rawInstance {
	ri := newRawInstance(t)
	disc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/lembas.json" {
			e.fi.srv.Config.Handler.ServeHTTP(w, r) // models, chat: the fake instance's
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"name": "Raw Instance", "version": "2.0.0", "protocol": 3, "protocols": []int{3},
			"link": "ws://" + ri.ln.Addr().String() + "/api/devices/link"})
	}))
	t.Cleanup(disc.Close)
	if err := saveLogin(&loginRecord{Name: "test", URL: disc.URL, Instance: "Raw Instance", Token: e.fi.token}); err != nil {
		t.Fatal(err)
	}
	e.startService()
	return ri
}

// newSessionRaw opens a session over a raw link.
func (e *linkEnv) newSessionRaw(t *testing.T, l *rawLink) string {
	t.Helper()
	p, _ := json.Marshal(map[string]any{"cwd": e.proj, "mcpServers": []any{}, "_meta": map[string]any{"mode": "manual", "lembas_model": "acme/chat-1"}})
	l.text(`{"jsonrpc":"2.0","id":"new","method":"session/new","params":` + string(p) + `}`)
	a := l.answer(t, "new")
	r, _ := a["result"].(map[string]any)
	sid, _ := r["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", a)
	}
	return sid
}

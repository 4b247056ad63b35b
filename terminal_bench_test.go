//go:build unix

package main

// Terminal benchmarks (go test -bench Terminal -run '^$'): throughput of a
// large cat through the handler next to reading the PTY directly, the
// keystroke-to-echo round trip (through the handler, and over a JSON-RPC
// hop on loopback TCP the way the link carries it), and RSS during a flood
// with a paused client.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const benchCatBytes = 64 << 20

// benchCatFile is a file of benchCatBytes with no newline, so the PTY
// passes it through byte for byte.
func benchCatFile(b *testing.B) string {
	p := filepath.Join(b.TempDir(), "big")
	if err := os.WriteFile(p, bytes.Repeat([]byte("lembas-terminal-"), benchCatBytes/16), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkTerminalCat: cat of 64 MiB in a shell, through the handler to a
// fast notify that decodes the base64 (as a client must) and watches for
// the end; in /json it also encodes and decodes each message as JSON, as
// the link and the client do.
func BenchmarkTerminalCat(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchTerminalCat(b, false) })
	b.Run("json", func(b *testing.B) { benchTerminalCat(b, true) })
}

func benchTerminalCat(b *testing.B, withJSON bool) {
	file := benchCatFile(b)
	home := resolvedTemp(b)
	ts, link := newTestTerminals(b, needShell(b, "bash"), home, home)
	link.lim.Integration = false
	var mu sync.Mutex
	var tail []byte
	var msgs int
	want := ""
	found := make(chan struct{}, 1)
	ts.notify = func(method string, params any) error {
		m, ok := params.(terminalData)
		if !ok {
			return nil
		}
		if withJSON {
			line, err := json.Marshal(params)
			if err != nil {
				return err
			}
			if json.Unmarshal(line, &m) != nil {
				return nil
			}
		}
		d, _ := base64.StdEncoding.DecodeString(m.Data)
		mu.Lock()
		defer mu.Unlock()
		msgs++
		tail = append(tail, d...)
		if want != "" && bytes.Contains(tail, []byte(want)) {
			want = ""
			found <- struct{}{}
		}
		if len(tail) > 64 {
			tail = append(tail[:0], tail[len(tail)-64:]...)
		}
		return nil
	}
	s := ts.openT(b, link, `{}`)
	await := func(w string) {
		mu.Lock()
		want = w
		mu.Unlock()
		<-found
	}
	s.typeIn("PS1='> '\r")
	await("> ")
	b.SetBytes(benchCatBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mu.Lock()
		want = fmt.Sprintf("cat-done-%d\r\n", i+1)
		mu.Unlock()
		s.typeIn(fmt.Sprintf("cat %s; echo; echo cat-done-$((%d+1))\r", file, i))
		<-found
	}
	b.StopTimer()
	mu.Lock()
	b.ReportMetric(float64(msgs)/float64(b.N), "msgs/op")
	mu.Unlock()
}

// BenchmarkPTYCatDirect: the same cat on a PTY read directly, no handler.
func BenchmarkPTYCatDirect(b *testing.B) {
	file := benchCatFile(b)
	buf := make([]byte, 32<<10)
	b.SetBytes(benchCatBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := startPTY("/bin/cat", []string{"cat", file}, "/", os.Environ(), 80, 24)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{p}, buf)
		<-p.done
		p.close()
		if n < benchCatBytes {
			b.Fatalf("read %d of %d", n, benchCatBytes)
		}
	}
}

// BenchmarkTerminalEcho: one keystroke in, its echo by readline out,
// through the handler.
func BenchmarkTerminalEcho(b *testing.B) {
	home := resolvedTemp(b)
	ts, link := newTestTerminals(b, needShell(b, "bash"), home, home)
	s := ts.openT(b, link, `{}`)
	s.expect("\x1b]133;B\x07")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.typeIn("x")
		s.expect("x")
		if i%1000 == 999 {
			s.typeIn("\x15") // ^U: keep the line short
		}
	}
}

// BenchmarkTerminalEchoLoopback: the same round trip with the link's hop
// in it: output notifications written as JSON-RPC lines to a loopback TCP
// socket and read and decoded by the client, keystrokes sent back the same
// way and decoded before they reach the handler. (link.go adds WebSocket
// framing on top; this measures the terminal side and the socket.)
func BenchmarkTerminalEchoLoopback(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	device, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer device.Close()
	var wmu sync.Mutex
	dw := bufio.NewWriter(device)
	notify := func(method string, params any) error {
		line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		dw.Write(append(line, '\n'))
		return dw.Flush()
	}
	home := resolvedTemp(b)
	ts := newTerminals(notify, func() terminalLimits { return terminalLimits{Enabled: true, Integration: true, Roots: []string{home}} })
	ts.shell = func() string { return needShell(b, "bash") }
	env := setEnv(os.Environ(), "HOME", home)
	ts.env = func() []string { return env }
	defer ts.closeAll()
	// the device side: keystrokes from the client, as JSON-RPC lines
	go func() {
		sc := bufio.NewScanner(device)
		for sc.Scan() {
			var m struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ts.request(b.Context(), m.Method, m.Params)
			}
		}
	}()
	res, err := ts.request(b.Context(), "_lembas/terminal/open", json.RawMessage(`{}`))
	if err != nil {
		b.Fatal(err)
	}
	id := res.(terminalOpenResult).TerminalID
	cr := bufio.NewReader(client)
	var screen strings.Builder
	readUntil := func(want string) {
		for !strings.HasSuffix(screen.String(), want) && !strings.Contains(screen.String(), want) {
			line, err := cr.ReadBytes('\n')
			if err != nil {
				b.Fatalf("reading the link: %v (screen %q)", err, screen.String())
			}
			var m struct {
				Params terminalData `json:"params"`
			}
			json.Unmarshal(line, &m)
			d, _ := base64.StdEncoding.DecodeString(m.Params.Data)
			screen.Write(d)
		}
		screen.Reset()
	}
	send := func(keys string) {
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "_lembas/terminal/input", "params": terminalData{TerminalID: id, Data: base64.StdEncoding.EncodeToString([]byte(keys))}})
		client.Write(append(line, '\n'))
	}
	readUntil("\x1b]133;B\x07")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send("x")
		readUntil("x")
		if i%1000 == 999 {
			send("\x15")
		}
	}
}

// BenchmarkTerminalFloodRSS: RSS growth while 100 MB flood a terminal
// whose client first stops reading, then reads it all.
func BenchmarkTerminalFloodRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		growth, peak, got := floodPausedPeak(b, 100_000_000)
		b.ReportMetric(float64(growth)/(1<<20), "MiB-rss-growth")
		b.ReportMetric(float64(peak)/(1<<20), "MiB-rss-peak")
		b.ReportMetric(float64(got)/1e6, "MB-delivered")
	}
}

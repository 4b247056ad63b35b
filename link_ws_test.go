package main

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// TestLinkSendQueueBytes: with an instance that reads nothing, the link's
// send queue holds at most ws.send_queue_bytes, whatever the item count
// allows (256 terminal chunks of 64 KiB would be 16 MiB), and the sender
// waits instead of growing it.
func TestLinkSendQueueBytes(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go func() {
		req, err := http.ReadRequest(bufio.NewReader(server))
		if err != nil {
			return
		}
		h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		fmt.Fprintf(server, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", base64.StdEncoding.EncodeToString(h[:]))
		// then read nothing: a stalled instance
	}()
	cfg, _ := websocket.NewConfig("ws://127.0.0.1/api/devices/link", "http://127.0.0.1")
	ws, err := websocket.NewClient(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	s := newLinkSocket(ws, client, 1<<26, 256, time.Minute)
	defer func() {
		client.Close() // first: a close frame to a peer that reads nothing would wait out the write timeout
		s.fail(errLinkClosed)
	}()
	chunk := make([]byte, 64<<10)
	var sent atomic.Int64
	go func() {
		for i := 0; i < 256; i++ {
			if s.writeFrame(chunk) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Wait until the sender stops getting anywhere (a settle guard, not a timing).
	for last, deadline := int64(-1), time.Now().Add(guard); ; time.Sleep(100 * time.Millisecond) {
		n := sent.Load()
		if n == last || time.Now().After(deadline) {
			break
		}
		last = n
	}
	budget := int64(theLinkSpec().WS.SendQueueBytes)
	if budget <= 0 || budget >= 256*int64(len(chunk)) {
		t.Fatalf("send_queue_bytes %d does not bound 256 chunks", budget)
	}
	if n, max := sent.Load(), budget/int64(len(chunk)); n == 0 || n > max {
		t.Errorf("%d chunks of 64 KiB queued for a stalled instance, want 1..%d", n, max)
	}
	if q := s.queued.Load(); q > budget {
		t.Errorf("%d bytes queued, over the %d budget", q, budget)
	}
}

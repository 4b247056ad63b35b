package main

// The link's WebSocket: one socket of the device link, as a frameReader and
// frameWriter for jsonrpc.go's JSON-RPC layer. golang.org/x/net/websocket does
// the handshake and the framing; the frames are read here one at a time
// (NewFrameReader) rather than through its Read, because the link must see
// what that hides: the close code (4400 stops the service), pongs (the
// dead-link check), and a frame's length before its payload is read (so an
// oversized message is skipped, never buffered).
//
//	senders ──► out (bounded queue) ──► one writer goroutine ──► socket
//	socket ──► readFrame: text → frame; ping → pong queued; pong → seen; close → code
//
// Every write goes through the one writer goroutine, so the socket's
// PayloadType (which x/net reads at each Write) is only touched there.

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/net/websocket"
)

// wsItem is one frame waiting to be written.
type wsItem struct {
	op   byte // websocket.TextFrame, PingFrame, PongFrame, CloseFrame
	data []byte
	code int   // CloseFrame: the status
	why  error // CloseFrame: the reason the socket ends with (nil: "closed with code")
}

// errLinkClosed is what a send on a socket that has ended returns.
var errLinkClosed = errors.New("the link is closed")

// linkSocket is one WebSocket connection of the link.
type linkSocket struct {
	ws       *websocket.Conn
	raw      io.Closer   // the connection under ws: closed without x/net's own close frame
	closing  atomic.Bool // a close frame was written (or is being): never a second
	max      int
	out      chan wsItem
	wtimeout time.Duration
	seen     atomic.Int64  // unix nanoseconds of the last frame read
	budget   int64         // bytes the queue may hold (one message alone may be larger)
	queued   atomic.Int64  // bytes in the queue now
	room     chan struct{} // a write made room
	done     chan struct{}
	once     sync.Once
	mu       mutex
	err      error
	code     int // the close code the peer sent, 0 if none
}

// newLinkSocket takes a handshaken ws and raw, the connection it runs on.
func newLinkSocket(ws *websocket.Conn, raw io.Closer, max, queue int, wtimeout time.Duration) *linkSocket {
	s := &linkSocket{ws: ws, raw: raw, max: max, out: make(chan wsItem, queue), wtimeout: wtimeout, done: make(chan struct{}),
		budget: int64(theLinkSpec().WS.SendQueueBytes), room: make(chan struct{}, 1)}
	s.seen.Store(time.Now().UnixNano())
	go s.writer()
	return s
}

// writer is the socket's only writer. A write that fails ends the socket.
func (s *linkSocket) writer() {
	for {
		select {
		case it := <-s.out:
			s.ws.SetWriteDeadline(time.Now().Add(s.wtimeout))
			var err error
			if it.op == websocket.CloseFrame {
				// The close frame is best effort: the socket ends either way,
				// and a peer that broke the protocol may not read it.
				if !s.closing.Swap(true) {
					_ = s.ws.WriteClose(it.code)
				}
				if it.why == nil {
					it.why = errorf("closed with %d", it.code)
				}
				s.fail(it.why)
				return
			}
			s.ws.PayloadType = it.op
			_, err = s.ws.Write(it.data)
			s.queued.Add(-int64(len(it.data)))
			select {
			case s.room <- struct{}{}:
			default:
			}
			if err != nil {
				s.fail(err)
				return
			}
		case <-s.done:
			return
		}
	}
}

// fail ends the socket once, keeping the first reason.
func (s *linkSocket) fail(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
		// One close frame at most: x/net's Close writes its own (1000), so
		// a socket whose close was already written closes the connection
		// under it instead. Both are best effort: the socket is over.
		if !s.closing.Swap(true) {
			s.ws.SetWriteDeadline(time.Now().Add(time.Second))
			_ = s.ws.WriteClose(1000)
		}
		_ = s.raw.Close()
	})
}

func (s *linkSocket) reason() (error, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err, s.code
}

// enqueue puts one item in the send queue, waiting while it is full (the
// backpressure terminal output relies on) but never past the socket's end
// or the write timeout.
//
// The queue is bounded twice: by items (link.json ws.send_queue) and by
// bytes (ws.send_queue_bytes), so a link's memory stays small on an SBC
// whatever the messages' sizes; a message larger than the byte budget
// goes alone, once the queue is empty.
func (s *linkSocket) enqueue(it wsItem) error {
	n := int64(len(it.data))
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	expired := func() <-chan time.Time {
		if t == nil {
			t = time.NewTimer(s.wtimeout)
		}
		return t.C
	}
	for {
		q := s.queued.Load()
		if q == 0 || s.budget <= 0 || q+n <= s.budget {
			break
		}
		select {
		case <-s.room:
		case <-s.done:
			return errLinkClosed
		case <-expired():
			s.fail(errorNew("the instance read nothing while the send queue was full"))
			return errLinkClosed
		}
	}
	s.queued.Add(n)
	select {
	case s.out <- it:
		return nil
	case <-s.done:
		s.queued.Add(-n)
		return errLinkClosed
	default:
	}
	select {
	case s.out <- it:
		return nil
	case <-s.done:
		s.queued.Add(-n)
		return errLinkClosed
	case <-expired():
		s.queued.Add(-n)
		s.fail(errorNew("the instance read nothing while the send queue was full"))
		return errLinkClosed
	}
}

// writeFrame sends one JSON-RPC message as a text frame.
//
//go:noinline
func (s *linkSocket) writeFrame(b []byte) error {
	return s.enqueue(wsItem{op: websocket.TextFrame, data: b})
}

// closeWith sends a close frame with code and ends the socket.
func (s *linkSocket) closeWith(code int) { s.closeFor(code, nil) }

// closeFor sends a close frame with code and ends the socket with why.
func (s *linkSocket) closeFor(code int, why error) {
	if s.enqueue(wsItem{op: websocket.CloseFrame, code: code, why: why}) != nil {
		if why == nil {
			why = errLinkClosed
		}
		s.fail(why)
	}
}

// The RFC 6455 close codes the device sends when the instance breaks the
// protocol (section 7.4.1).
const (
	wsProtocolError = 1002 // a frame no endpoint may send
	wsInvalidData   = 1007 // a close reason that is not UTF-8
)

// violate ends the socket for a frame the RFC forbids: a close frame with
// the code, and an error naming the fault for the log; the service dials
// again with its backoff and the link's sessions resume on the new link.
func (s *linkSocket) violate(code int, format string, args ...any) error {
	err := errorf("the instance broke the WebSocket protocol (%s); the link was closed with %d", fmt.Sprintf(format, args...), code)
	s.closeFor(code, err)
	return err
}

// dialLink opens the link's WebSocket as websocket.DialConfig does, but
// keeps the connection under it (newLinkSocket's raw); the handshake is
// bounded by the dialer's timeout.
func dialLink(cfg *websocket.Config) (*websocket.Conn, net.Conn, error) {
	d := cfg.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: 30 * time.Second}
	}
	host := cfg.Location.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		port := "80"
		if cfg.Location.Scheme == "wss" {
			port = "443"
		}
		host = net.JoinHostPort(host, port)
	}
	var c net.Conn
	var err error
	switch cfg.Location.Scheme {
	case "ws":
		c, err = d.Dial("tcp", host)
	case "wss":
		c, err = tls.DialWithDialer(d, "tcp", host, cfg.TlsConfig)
	default:
		return nil, nil, errorf("%s is not a WebSocket URL (ws:// or wss://)", cfg.Location)
	}
	if err != nil {
		return nil, nil, err
	}
	if d.Timeout > 0 {
		c.SetDeadline(time.Now().Add(d.Timeout))
	}
	ws, err := websocket.NewClient(cfg, c)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	c.SetDeadline(time.Time{})
	return ws, c, nil
}

// wsHeader is what readFrame needs of a frame's header (RFC 6455 5.2).
type wsHeader struct {
	fin    bool
	rsv    byte // the three reserved bits; no extension is negotiated, so 0
	op     byte
	masked bool
	n      int64 // the payload's length
}

func parseWSHeader(h []byte, total int) wsHeader {
	var w wsHeader
	if len(h) >= 2 {
		w.fin = h[0]&0x80 != 0
		w.rsv = h[0] & 0x70
		w.op = h[0] & 0x0f
		w.masked = h[1]&0x80 != 0
	}
	w.n = int64(total - len(h))
	return w
}

// readFrame gives the next text or binary message, whole (a fragmented
// one is joined). Control frames are handled here. Every frame is judged by
// its header before its payload is read: a frame the RFC forbids (reserved
// bits, an unknown opcode, a masked frame from the server, a control frame
// over 125 bytes or fragmented, a continuation with nothing to continue)
// ends the socket with 1002; a message over the limit is skipped unread,
// never buffered, and reported as errFrameTooBig; a message's buffer is
// made at its exact size. A close frame ends the socket with its code kept.
func (s *linkSocket) readFrame() ([]byte, error) {
	var msg []byte
	inMessage, tooBig := false, false
	for {
		fr, err := s.ws.NewFrameReader()
		if err != nil {
			s.fail(err)
			return nil, err
		}
		s.seen.Store(time.Now().UnixNano())
		var hb [14]byte
		hn, _ := io.ReadFull(fr.HeaderReader(), hb[:]) // at most 14 bytes; short is the whole header
		h := parseWSHeader(hb[:hn], fr.Len())
		switch {
		case h.rsv != 0:
			return nil, s.violate(wsProtocolError, "reserved bits %#x set", h.rsv>>4)
		case h.masked:
			return nil, s.violate(wsProtocolError, "a masked frame; a server's frames are never masked")
		case h.op >= 0x3 && h.op <= 0x7 || h.op >= 0xb:
			return nil, s.violate(wsProtocolError, "opcode %#x is not defined", h.op)
		}
		if h.op >= 0x8 { // control frames: ping, pong, close
			if h.n > 125 {
				return nil, s.violate(wsProtocolError, "a control frame of %d bytes; at most 125", h.n)
			}
			if !h.fin {
				return nil, s.violate(wsProtocolError, "a fragmented control frame")
			}
			var pb [125]byte
			b := pb[:h.n]
			if _, err := io.ReadFull(fr, b); err != nil {
				s.fail(err)
				return nil, err
			}
			switch h.op {
			case websocket.PingFrame:
				s.enqueue(wsItem{op: websocket.PongFrame, data: append([]byte(nil), b...)})
			case websocket.CloseFrame:
				return nil, s.closed(b)
			}
			continue
		}
		switch {
		case h.op == websocket.ContinuationFrame && !inMessage:
			return nil, s.violate(wsProtocolError, "a continuation frame with no message to continue")
		case h.op != websocket.ContinuationFrame && inMessage:
			return nil, s.violate(wsProtocolError, "a new message before the last one's final fragment")
		}
		inMessage = true
		if tooBig || int64(len(msg))+h.n > int64(s.max) {
			tooBig, msg = true, nil
			if _, err := io.Copy(io.Discard, fr); err != nil {
				s.fail(err)
				return nil, err
			}
		} else if h.n > 0 {
			if msg == nil && h.fin {
				msg = make([]byte, h.n) // the common case: one frame, its exact size
			} else {
				msg = append(msg, make([]byte, h.n)...)
			}
			if _, err := io.ReadFull(fr, msg[len(msg)-int(h.n):]); err != nil {
				s.fail(err)
				return nil, err
			}
		}
		if !h.fin {
			continue
		}
		if tooBig {
			return nil, errFrameTooBig
		}
		if len(msg) == 0 {
			inMessage = false
			continue
		}
		return msg, nil
	}
}

// closed takes the peer's close frame: its code is kept (4400 stops the
// service), echoed as the RFC asks, and the socket ends. A close frame the
// RFC forbids (one byte, a code no endpoint may send, a reason that is not
// UTF-8) is answered 1002 or 1007 instead.
func (s *linkSocket) closed(b []byte) error {
	code := 1005 // no status given
	if len(b) == 1 {
		return s.violate(wsProtocolError, "a close frame of one byte")
	}
	if len(b) >= 2 {
		code = int(binary.BigEndian.Uint16(b))
		if code < 1000 || code >= 1004 && code <= 1006 || code >= 1012 && code < 3000 || code >= 5000 {
			if code != 1012 && code != 1013 && code != 1014 { // registered since the RFC
				return s.violate(wsProtocolError, "close code %d may not be sent", code)
			}
		}
		if !utf8.Valid(b[2:]) {
			return s.violate(wsInvalidData, "a close reason that is not UTF-8")
		}
	}
	s.mu.Lock()
	s.code = code
	s.mu.Unlock()
	echo := code
	if code == 1005 {
		echo = 1000
	}
	s.closeFor(echo, errorf("the instance closed the link (%d)", code))
	return io.EOF
}

// ping queues a WebSocket ping.
func (s *linkSocket) ping() { s.enqueue(wsItem{op: websocket.PingFrame}) }

// linkPipe is the one frame stream the service's JSON-RPC connection reads
// and writes for its whole life, across links: it reads from whichever
// socket is up (waiting while none is) and writes to it (dropping what is
// sent while none is — a turn goes on, and its answer is kept in the turns
// file for the prompt the client sends again).
type linkPipe struct {
	mu     mutex
	cond   *sync.Cond
	cur    *linkSocket
	closed bool
	lost   chan *linkSocket // a socket whose reading ended
}

func newLinkPipe() *linkPipe {
	p := &linkPipe{lost: make(chan *linkSocket, 1)}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *linkPipe) set(s *linkSocket) {
	p.mu.Lock()
	p.cur = s
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *linkPipe) socket() *linkSocket {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

func (p *linkPipe) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *linkPipe) readFrame() ([]byte, error) {
	for {
		p.mu.Lock()
		for p.cur == nil && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return nil, io.EOF
		}
		s := p.cur
		p.mu.Unlock()
		b, err := s.readFrame()
		if err == nil || err == errFrameTooBig {
			return b, err
		}
		p.mu.Lock()
		if p.cur == s {
			p.cur = nil
		}
		p.mu.Unlock()
		select {
		case p.lost <- s:
		default:
		}
	}
}

func (p *linkPipe) writeFrame(b []byte) error {
	s := p.socket()
	if s == nil {
		return nil // not linked: dropped, as the pipe's comment says
	}
	if err := s.writeFrame(b); err != nil && err != errLinkClosed {
		return err
	}
	return nil
}

// socketWriter writes only to the socket a request came on: the answer to a
// request of a link that has gone is never sent to the next one, where its
// id could match a request of the new link's own.
type socketWriter struct {
	s     *linkSocket         // nil: no link was up when the request came
	after func([]byte) []byte // sees (and may rewrite) every frame before it is sent: a turn's answer
}

func (w *socketWriter) writeFrame(b []byte) error {
	if w.after != nil {
		b = w.after(b)
	}
	if w.s == nil {
		return nil
	}
	select {
	case <-w.s.done:
		return nil
	default:
	}
	if err := w.s.writeFrame(b); err != nil && err != errLinkClosed {
		return err
	}
	return nil
}

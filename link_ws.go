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
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/websocket"
)

// wsItem is one frame waiting to be written.
type wsItem struct {
	op   byte // websocket.TextFrame, PingFrame, PongFrame, CloseFrame
	data []byte
	code int // CloseFrame: the status
}

// errLinkClosed is what a send on a socket that has ended returns.
var errLinkClosed = errors.New("the link is closed")

// linkSocket is one WebSocket connection of the link.
type linkSocket struct {
	ws       *websocket.Conn
	max      int
	out      chan wsItem
	wtimeout time.Duration
	seen     atomic.Int64  // unix nanoseconds of the last frame read
	budget   int64         // bytes the queue may hold (one message alone may be larger)
	queued   atomic.Int64  // bytes in the queue now
	room     chan struct{} // a write made room
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	err      error
	code     int // the close code the peer sent, 0 if none
}

func newLinkSocket(ws *websocket.Conn, max, queue int, wtimeout time.Duration) *linkSocket {
	s := &linkSocket{ws: ws, max: max, out: make(chan wsItem, queue), wtimeout: wtimeout, done: make(chan struct{}),
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
				err = s.ws.WriteClose(it.code)
				s.fail(fmt.Errorf("closed with %d", it.code))
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
		s.ws.Close()
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
			s.fail(errors.New("the instance read nothing while the send queue was full"))
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
		s.fail(errors.New("the instance read nothing while the send queue was full"))
		return errLinkClosed
	}
}

// writeFrame sends one JSON-RPC message as a text frame.
func (s *linkSocket) writeFrame(b []byte) error {
	return s.enqueue(wsItem{op: websocket.TextFrame, data: b})
}

// closeWith sends a close frame with code and ends the socket.
func (s *linkSocket) closeWith(code int) {
	if s.enqueue(wsItem{op: websocket.CloseFrame, code: code}) != nil {
		s.fail(errLinkClosed)
	}
}

// readFrame gives the next text or binary message. Control frames are
// handled here; a message over the limit is skipped unread and reported
// as errFrameTooBig. A close frame ends the socket with its code kept.
func (s *linkSocket) readFrame() ([]byte, error) {
	for {
		fr, err := s.ws.NewFrameReader()
		if err != nil {
			s.fail(err)
			return nil, err
		}
		s.seen.Store(time.Now().UnixNano())
		switch fr.PayloadType() {
		case websocket.PingFrame:
			b, _ := io.ReadAll(io.LimitReader(fr, 125))
			s.enqueue(wsItem{op: websocket.PongFrame, data: b})
			continue
		case websocket.PongFrame:
			io.Copy(io.Discard, io.LimitReader(fr, 125))
			continue
		case websocket.CloseFrame:
			b, _ := io.ReadAll(io.LimitReader(fr, 125))
			code := 1005
			if len(b) >= 2 {
				code = int(binary.BigEndian.Uint16(b))
			}
			s.mu.Lock()
			s.code = code
			s.mu.Unlock()
			s.fail(fmt.Errorf("the instance closed the link (%d)", code))
			return nil, io.EOF
		}
		if n := fr.Len(); n > s.max+14 { // Len counts the frame header too (at most 14 bytes)
			if _, err := io.Copy(io.Discard, fr); err != nil {
				s.fail(err)
				return nil, err
			}
			return nil, errFrameTooBig
		}
		b, err := io.ReadAll(io.LimitReader(fr, int64(s.max)+1))
		if err != nil {
			s.fail(err)
			return nil, err
		}
		if len(b) > s.max {
			return nil, errFrameTooBig
		}
		if len(b) == 0 {
			continue
		}
		return b, nil
	}
}

// ping queues a WebSocket ping.
func (s *linkSocket) ping() { s.enqueue(wsItem{op: websocket.PingFrame}) }

// linkPipe is the one frame stream the service's JSON-RPC connection reads
// and writes for its whole life, across links: it reads from whichever
// socket is up (waiting while none is) and writes to it (dropping what is
// sent while none is — a turn goes on, and its answer is kept in the turns
// file for the prompt the client sends again).
type linkPipe struct {
	mu     sync.Mutex
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

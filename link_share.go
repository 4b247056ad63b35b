package main

// A terminal shares its session with the web UI (/share; harness/acp.md,
// "A terminal's session on the link"). The REPL and `lembas service` are
// separate processes; they meet on a Unix socket the service listens on,
// <state>/link/share.sock (mode 0600, in the state folder of mode 0700):
//
//	REPL /share ──dial──► share.sock ──► linkService.shares ──► _lembas/session/announce (now and after every initialize)
//	REPL /share off, exit, crash ──EOF──►                     ──► _lembas/session/left
//
// One JSON object a line from the REPL: {"type":"announce","session":{…}}
// (again whenever it changes). The connection's end is the end of the
// share, so a REPL that dies is never left announced. Only announce and
// left are built: approval cards put to both sides at once (patient,
// settled) are not (acp.md says so).

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
)

func shareSocketPath() string { return filepath.Join(stateDir(), "link", "share.sock") }

// shareAnnounce is _lembas/session/announce's params.
type shareAnnounce struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title"`
	Model     string `json:"model"`
	Instance  bool   `json:"instance"`
	Mode      string `json:"mode"`
	Effort    string `json:"effort"`
	Busy      bool   `json:"busy"`
	Origin    string `json:"origin"`
}

// shareLine is one line a REPL sends.
type shareLine struct {
	Type    string        `json:"type"`
	Session shareAnnounce `json:"session"`
}

// shareTable is the sessions terminals share now, by connection.
type shareTable struct {
	mu sync.Mutex
	by map[net.Conn]shareAnnounce
}

var serviceShares = &shareTable{by: map[net.Conn]shareAnnounce{}}

// serveShares listens on share.sock until the listener is closed. A stale
// socket file (a service that died) is removed first; a live one means
// another service holds it, and this one shares nothing.
func (svc *linkService) serveShares() (net.Listener, error) {
	p := shareSocketPath()
	os.MkdirAll(filepath.Dir(p), 0o700)
	if c, err := net.Dial("unix", p); err == nil {
		c.Close()
		return nil, errors.New(replLinkText("share_taken", "path", p))
	}
	os.Remove(p)
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	os.Chmod(p, 0o600)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go svc.serveShare(c)
		}
	}()
	return ln, nil
}

// serveShare reads one REPL's lines; its end is the share's end.
func (svc *linkService) serveShare(c net.Conn) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), theLinkSpec().WS.MaxMessageBytes)
	var last shareAnnounce
	for sc.Scan() {
		var l shareLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Type != "announce" || l.Session.SessionID == "" {
			continue // hostile or unknown: ignored, never a crash
		}
		l.Session.Origin = "terminal"
		last = l.Session
		serviceShares.mu.Lock()
		serviceShares.by[c] = last
		serviceShares.mu.Unlock()
		svc.announce(last)
	}
	serviceShares.mu.Lock()
	delete(serviceShares.by, c)
	serviceShares.mu.Unlock()
	if last.SessionID != "" {
		svc.shareNote("_lembas/session/left", map[string]any{"sessionId": last.SessionID, "available": true})
	}
}

// announce tells the instance of one shared session, if a lembas client is
// linked now (else the next initialize does).
func (svc *linkService) announce(a shareAnnounce) { svc.shareNote("_lembas/session/announce", a) }

// announceAll is every shared session announced again: right after a
// link's initialize.
func (svc *linkService) announceAll() {
	serviceShares.mu.Lock()
	var all []shareAnnounce
	for _, a := range serviceShares.by {
		all = append(all, a)
	}
	serviceShares.mu.Unlock()
	for _, a := range all {
		svc.announce(a)
	}
}

func (svc *linkService) shareNote(method string, params any) {
	svc.mu.Lock()
	ok := svc.lembas && svc.sock != nil
	svc.mu.Unlock()
	if ok {
		svc.notifyBlocking(method, params)
	}
}

// replShare is a REPL's share: the connection to the service.
type replShare struct {
	mu sync.Mutex
	c  net.Conn
}

// share handles /share (on) and /share off.
func (r *repl) share(args string) {
	rs := &r.link.shareConn
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if args == "off" {
		if rs.c == nil {
			r.say("status", replLinkText("share_not_shared"))
			return
		}
		rs.c.Close()
		rs.c = nil
		r.say("status", replLinkText("share_off"))
		return
	}
	if rs.c == nil {
		c, err := net.Dial("unix", shareSocketPath())
		if err != nil {
			r.say("error", replLinkText("share_no_service"))
			return
		}
		rs.c = c
	}
	if err := r.sendShareLocked(); err != nil {
		rs.c.Close()
		rs.c = nil
		r.say("error", replLinkText("share_no_service"))
		return
	}
	r.say("status", replLinkText("share_on", "session", r.e.sess.ID))
}

// sendShareLocked sends the session as it is now. Called with the share's
// mu held.
func (r *repl) sendShareLocked() error {
	e := r.e
	a := shareAnnounce{SessionID: e.sess.ID, Cwd: e.tb.root, Title: e.sess.Title, Model: e.ref.String(), Mode: e.perm.mode, Effort: r.level}
	if l := loginOfRef(e.ref); l != nil {
		a.Instance, a.Model = true, e.ref.Model // the instance names its own models by served id
	}
	b, _ := json.Marshal(shareLine{Type: "announce", Session: a})
	_, err := r.link.shareConn.c.Write(append(b, '\n'))
	return err
}

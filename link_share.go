package main

// A terminal shares its session with the web UI (/share; harness/acp.md,
// "A terminal's session on the link"). The REPL and `lembas service` are
// separate processes; they meet on a Unix socket the service listens on,
// <state>/link/share.sock (mode 0600, in the state folder of mode 0700):
//
//	REPL /share ──dial──► share.sock ──► linkService.shares ──► _lembas/session/announce (now and after every initialize)
//	REPL /share off, exit, crash ──EOF──►                     ──► _lembas/session/left
//
// One JSON object a line each way (shareLine). From the REPL: announce
// (again whenever the session changes), card (an approval, question or plan
// the terminal shows now, to be put to the web UI as well: patient) and
// settled (the terminal answered it first, or stopped waiting). From the
// service: answer (the web UI answered first; the terminal takes its card
// down) or an answer with none set (the web UI cannot answer this one: the
// terminal's card alone decides). The connection's end is the end of the
// share, so a REPL that dies is never left announced and its cards are
// taken down in the web UI. The cards' side is link_share_cards.go.

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// shareLine is one line on share.sock, either way.
type shareLine struct {
	Type    string        `json:"type"` // announce, card, settled (REPL → service); answer (service → REPL)
	Session shareAnnounce `json:"session"`
	ID      string        `json:"id,omitempty"` // card, settled, answer: the REPL's id of the card
	Card    *shareCard    `json:"card,omitempty"`
	Answer  *shareAnswer  `json:"answer,omitempty"`

	Prompt *sharePrompt    `json:"prompt,omitempty"` // prompt (service → REPL; id: the turn id)
	Result json.RawMessage `json:"result,omitempty"` // prompt_done (REPL → service): the prompt's answer
	Text   string          `json:"text,omitempty"`   // steer (service → REPL)
	Event  map[string]any  `json:"event,omitempty"`  // event (REPL → service): one _lembas/event
}

// shareTable is the sessions terminals share now, by connection.
type shareTable struct {
	mu mutex
	by map[net.Conn]*shareConn
}

// put and drop add and remove a connection's share.
func (t *shareTable) put(c net.Conn, sc *shareConn) {
	t.mu.Lock()
	if t.by == nil {
		t.by = map[net.Conn]*shareConn{}
	}
	t.by[c] = sc
	t.mu.Unlock()
}

func (t *shareTable) drop(c net.Conn) {
	t.mu.Lock()
	delete(t.by, c)
	t.mu.Unlock()
}

// find is the share of a session, if a terminal shares it now.
func (t *shareTable) find(sessionID string) (shareAnnounce, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, sc := range t.by {
		sc.mu.Lock()
		a := sc.last
		sc.mu.Unlock()
		if a.SessionID == sessionID && sessionID != "" {
			return a, true
		}
	}
	return shareAnnounce{}, false
}

// shareConn is one REPL's connection: what it shares and the cards it has
// open.
type shareConn struct {
	c     net.Conn
	out   chan []byte   // answer lines, written by one goroutine: a REPL that stops reading never holds up the service
	done  chan struct{} // closed when the connection's reading ended
	mu    mutex
	last  shareAnnounce
	cards map[string]*shareCardState

	prompts map[string]chan json.RawMessage // the web UI's prompts the REPL runs, by turn id (link_share_prompts.go)
	release chan struct{}                   // a delete waiting for the REPL to let go of the session
}

// serveShares listens on share.sock until the listener is closed. A stale
// socket file (a service that died) is removed first; a live one means
// another service holds it, and this one shares nothing.
func (svc *linkService) serveShares() (net.Listener, error) {
	p := shareSocketPath()
	os.MkdirAll(filepath.Dir(p), 0o700) // a folder that cannot be made fails the Listen below, which says so
	if c, err := net.Dial("unix", p); err == nil {
		c.Close()
		return nil, errorNew(replLinkText("share_taken", "path", p))
	}
	os.Remove(p) // a stale socket: one that cannot be removed fails the Listen below
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(p, 0o600); err != nil {
		// Its folder is 0700 already; the socket's own mode is a second
		// fence, and one that cannot be set is not served.
		ln.Close()
		return nil, errorf("making %s private: %w", p, err)
	}
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

// serveShare reads one REPL's lines; its end is the share's end: its
// cards are taken down and the session is left.
func (svc *linkService) serveShare(c net.Conn) {
	defer c.Close()
	sc := &shareConn{c: c, cards: map[string]*shareCardState{}, out: make(chan []byte, 64), done: make(chan struct{})}
	defer close(sc.done)
	go sc.writeAnswers()
	scan := bufio.NewScanner(c)
	scan.Buffer(make([]byte, 0, 4096), theLinkSpec().WS.MaxMessageBytes)
	for scan.Scan() {
		var l shareLine
		if json.Unmarshal(scan.Bytes(), &l) != nil {
			continue // hostile or unknown: ignored, never a crash
		}
		switch l.Type {
		case "announce":
			if l.Session.SessionID == "" {
				continue
			}
			l.Session.Origin = "terminal"
			sc.mu.Lock()
			sc.last = l.Session
			sc.mu.Unlock()
			svc.shares.put(c, sc)
			if id := l.Session.SessionID; validID(id) && !wasGiven(id) && storedSession(id) {
				markGiven(id, svc.log) // the client may read and delete it from now on (acp.md)
			}
			svc.announce(l.Session)
		case "card":
			svc.openCard(sc, l.ID, l.Card)
		case "settled":
			sc.settle(l.ID)
		case "prompt_done":
			sc.promptDone(l.ID, l.Result)
		case "released":
			sc.released()
		case "event":
			svc.relayEvent(sc, l.Event)
		}
	}
	svc.shares.drop(c)
	sc.settleAll()
	sc.mu.Lock()
	last := sc.last
	sc.mu.Unlock()
	if last.SessionID != "" {
		svc.shareNote("_lembas/session/left", map[string]any{"sessionId": last.SessionID, "available": true})
	}
}

// storedSession says whether a session of that id is in the store (a
// journal, or an old-format file): only such a session is marked as given.
func storedSession(id string) bool {
	p := newStore(stateDir(), nil).path(id)
	for _, f := range []string{p, strings.TrimSuffix(p, ".jsonl") + ".json"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// announce tells the instance of one shared session, if a lembas client is
// linked now (else the next initialize does).
func (svc *linkService) announce(a shareAnnounce) { svc.shareNote("_lembas/session/announce", a) }

// announceAll is every shared session announced again, and the cards
// terminals have open put to the new link: right after a link's
// initialize.
func (svc *linkService) announceAll() {
	svc.shares.mu.Lock()
	var all []*shareConn
	for _, sc := range svc.shares.by {
		all = append(all, sc)
	}
	svc.shares.mu.Unlock()
	for _, sc := range all {
		sc.mu.Lock()
		a := sc.last
		sc.mu.Unlock()
		svc.announce(a)
		svc.putCards(sc)
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

package main

// Request quirks (quirks.json "requests"): what a server demands of the
// requests themselves, beyond the plain API. A quirk is a flag on the
// connection — known from its host, or learned from the server's own
// refusal once — that the request builder (wireMessages) consults; the
// loop never names a server.

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// requestQuirk is one entry of quirks.json's requests.
type requestQuirk struct {
	ID       string   `json:"id"`
	SeenOn   string   `json:"seen_on"`
	What     string   `json:"what"`
	Handling string   `json:"handling"`
	Hosts    []string `json:"hosts"`
	Error    string   `json:"error"`
	Models   []string `json:"models"` // model patterns (thinking-default; model.go reads them)
}

var (
	reqQuirksOnce sync.Once
	reqQuirks     []requestQuirk

	// learned holds the quirks learned per connection (by base URL) in
	// this process, so every session on that connection has them.
	learnedMu mutex
	learned   = map[string][]string{}
)

// requestQuirks parses quirks.json's requests once; a broken file is a
// harness bug that TestQuirks catches.
func requestQuirks() []requestQuirk {
	reqQuirksOnce.Do(func() {
		data, err := fs.ReadFile(harnessFS, "harness/quirks.json")
		if err != nil {
			panic("harness: " + err.Error())
		}
		var q struct {
			Requests []requestQuirk `json:"requests"`
		}
		if err := json.Unmarshal(data, &q); err != nil {
			panic("harness: quirks.json: " + err.Error())
		}
		reqQuirks = q.Requests
	})
	return reqQuirks
}

// connQuirk says whether a connection has a request quirk: by its host,
// or because it was learned on it.
func connQuirk(c *connection, id string) bool {
	for _, q := range requestQuirks() {
		if q.ID != id {
			continue
		}
		if u, err := url.Parse(c.BaseURL); err == nil && slices.Contains(q.Hosts, strings.ToLower(u.Hostname())) {
			return true
		}
	}
	learnedMu.Lock()
	defer learnedMu.Unlock()
	return slices.Contains(learned[c.BaseURL], id)
}

// learnedQuirk names the request quirk a failed request reveals: an HTTP
// 400 whose message is the quirk's error text.
func learnedQuirk(err error) string {
	var me *modelError
	if err == nil || !errors.As(err, &me) || me.Status != 400 {
		return ""
	}
	for _, q := range requestQuirks() {
		if q.Error != "" && strings.Contains(me.Msg, q.Error) {
			return q.ID
		}
	}
	return ""
}

// quirkOn says whether this session's requests follow a quirk: the
// connection has it, or the session learned it earlier (lembas -c).
func (e *engine) quirkOn(id string) bool {
	return slices.Contains(e.sess.Quirks, id) || connQuirk(e.ref.Conn, id)
}

// learnQuirk remembers a quirk for the connection and the session.
func (e *engine) learnQuirk(id string) {
	learnedMu.Lock()
	if !slices.Contains(learned[e.ref.Conn.BaseURL], id) {
		learned[e.ref.Conn.BaseURL] = append(learned[e.ref.Conn.BaseURL], id)
	}
	learnedMu.Unlock()
	if !slices.Contains(e.sess.Quirks, id) {
		e.sess.Quirks = append(e.sess.Quirks, id)
	}
}

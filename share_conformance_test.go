package main

// Conformance area share: what the service answers on share.sock to the
// lines a REPL (or any local process) writes — a card it cannot put is
// answered none at once, one it can waits for the web UI, anything
// unknown or hostile is ignored — and the text the web UI's prompt
// becomes for a terminal's shared session.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

func init() {
	conformanceRunners["share"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Lines  []string        `json:"lines"`
			Prompt json.RawMessage `json:"prompt"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.Prompt != nil {
			text, err := sharedText(in.Prompt)
			if err != nil {
				return map[string]any{"error": err.Error()}, nil
			}
			return map[string]any{"text": text}, nil
		}
		return shareLinesOut(in.Lines)
	}
}

// shareLinesOut feeds lines to a service with no link and gives the lines
// it answered, in order, up to a last card of its own that is always
// answered none (so "nothing answered" is a fact, not a wait).
func shareLinesOut(lines []string) (any, error) {
	svc := &linkService{log: func(string) {}}
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() { svc.serveShare(b); close(done) }()
	got := make(chan shareLine, 64)
	go func() {
		sc := bufio.NewScanner(a)
		for sc.Scan() {
			var l shareLine
			json.Unmarshal(sc.Bytes(), &l)
			got <- l
		}
		close(got)
	}()
	for _, l := range append(lines, `{"type":"card","id":"end"}`) {
		if _, err := a.Write([]byte(l + "\n")); err != nil {
			return nil, err
		}
	}
	var out []map[string]any
	timeout := time.After(20 * time.Second) // a hang guard, not a timing
	for {
		select {
		case l, ok := <-got:
			if !ok {
				return nil, fmt.Errorf("the service closed the connection")
			}
			if l.ID == "end" {
				shared := svc.shares.conn("s1") != nil
				a.Close()
				<-done
				if out == nil {
					out = []map[string]any{}
				}
				return map[string]any{"answers": out, "s1_shared": shared}, nil
			}
			out = append(out, map[string]any{"type": l.Type, "id": l.ID, "none": l.Answer != nil && l.Answer.None})
		case <-timeout:
			a.Close()
			return nil, fmt.Errorf("the service never answered the closing card")
		}
	}
}

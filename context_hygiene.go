package main

// Insert-time hygiene (context.md §2): what a tool result says is decided
// once, when it is inserted into the history, and never changed after.
// A read carries its lines and the file's hash; an unchanged re-read, or
// the same listing or search with the same result, becomes a stub naming
// the earlier result, which is still in the request being built (the
// table is emptied at every compaction). The store keeps every result
// whole, for recall.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// hygieneOn says whether stubs are made: loop.json's context.hygiene,
// unless the environment turns it off (for measuring what it saves).
func hygieneOn(getenv func(string) string) bool {
	c := theSpec().Loop.Context
	switch strings.ToLower(strings.TrimSpace(getenv(c.HygieneEnv))) {
	case "off", "0", "false", "no":
		return false
	case "on", "1", "true", "yes":
		return true
	}
	return c.Hygiene
}

// shortHash is the part of a hash a result shows.
func shortHash(h string) string {
	if n := theSpec().Loop.Context.HashDigits; len(h) > n {
		return h[:n]
	}
	return h
}

// insert decides what a result's message says. It returns the content
// sent and, when that is not the whole output, the whole output for the
// store. on false makes no stubs and remembers nothing.
func (d *dedupeTable) insert(root, tool string, args json.RawMessage, res *toolResult, id string, on bool) (content, full string) {
	c := theSpec().Loop.Context
	text := res.Text
	ok := !res.IsError && (res.Status == "" || res.Status == "completed")
	if ri := res.Read; ri != nil && ok {
		var a struct {
			Path string `json:"path"`
		}
		json.Unmarshal(args, &a)
		key, _ := resolvePath(root, a.Path)
		head := fillPairs(c.ReadHead, "id", id, "path", a.Path, "start", ri.Start, "end", ri.End, "total", ri.Total, "hash", shortHash(ri.Hash))
		if on {
			for _, r := range d.Reads {
				if r.Key == key && r.Hash == ri.Hash && r.Start <= ri.Start && ri.End <= r.End {
					stub := fillPairs(c.Stubs["read"], "id", id, "path", a.Path, "start", ri.Start, "end", ri.End,
						"earlier", r.ID, "hash", shortHash(ri.Hash))
					return stub, head + "\n" + text
				}
			}
		}
		shown, capped := capOutput(text, id)
		if on && !capped {
			// A newer read of the file replaces those of other contents.
			d.Reads = slices.DeleteFunc(d.Reads, func(r readEntry) bool { return r.Key == key && r.Hash != ri.Hash })
			d.Reads = append(d.Reads, readEntry{Key: key, Path: a.Path, Start: ri.Start, End: ri.End, Total: ri.Total, Hash: ri.Hash, ID: id})
		}
		return head + "\n" + shown, fullIf(capped, text)
	}
	shown, capped := capOutput(text, id)
	if ok && on && slices.Contains(c.DedupeTools, tool) {
		key := tool + " " + canonicalArgs(args)
		sum := sha256.Sum256([]byte(text))
		h := hex.EncodeToString(sum[:])
		for _, s := range d.Same {
			if s.Key == key && s.Hash == h {
				return fillPairs(c.Stubs["same"], "id", id, "tool", tool, "earlier", s.ID), text
			}
		}
		if !capped {
			d.Same = slices.DeleteFunc(d.Same, func(s sameEntry) bool { return s.Key == key })
			d.Same = append(d.Same, sameEntry{Key: key, Hash: h, ID: id})
		}
	}
	return fillPairs(c.ResultHead, "id", id) + "\n" + shown, fullIf(capped, text)
}

func fullIf(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

// canonicalArgs writes arguments with sorted keys, so the same call
// written two ways is the same key.
func canonicalArgs(args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return string(args)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// readsTable lists the reads a compaction covers: those of the dedupe
// table, i.e. since the previous compaction, as the summary's table.
func (d *dedupeTable) readsTable() string {
	if d == nil || len(d.Reads) == 0 {
		return ""
	}
	cs := theSpec().Loop.Context.Compaction
	lines := []string{cs.ReadsHead}
	for _, r := range d.Reads {
		lines = append(lines, fillPairs(cs.ReadsRow, "path", r.Path, "start", r.Start, "end", r.End, "hash", shortHash(r.Hash), "id", r.ID))
	}
	return strings.Join(lines, "\n")
}

// insertResult gives a call's result its message content through the
// session's dedupe table.
func (e *engine) insertResult(p *pendingCall, id string) (string, string) {
	if e.sess.Dedupe == nil {
		e.sess.Dedupe = &dedupeTable{}
	}
	name := p.call.Function.Name
	if p.t != nil {
		name = p.t.Name
	}
	if name == "recall" {
		// recall exists to show a result whole: its own paging bounds it.
		return fillPairs(theSpec().Loop.Context.ResultHead, "id", id) + "\n" + p.res.Text, ""
	}
	args := p.args
	if args == nil {
		args = json.RawMessage(p.call.Function.Arguments)
	}
	return e.sess.Dedupe.insert(e.tb.root, name, args, p.res, id, e.hygiene)
}

package main

// context_record.go: hygiene's dedupe table as the session keeps it — the
// reads and listings still in the history. Data only: what hygiene does with
// it is context_hygiene.go's.

import "fmt"

// dedupeTable is one session's memory of what the history holds: reads by
// file and range, and listings and searches by their arguments.
type dedupeTable struct {
	Reads []readEntry `json:"reads,omitempty"`
	Same  []sameEntry `json:"same,omitempty"`
}

// readEntry is one read in the history: the file (resolved), the path as
// the call gave it, the lines it showed, the file's hash, the result's id.
type readEntry struct {
	Key   string `json:"key"`
	Path  string `json:"path"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Total int    `json:"total"`
	Hash  string `json:"hash"`
	ID    string `json:"id"`
}

// sameEntry is one listing or search in the history: the tool and its
// arguments, the hash of what it answered, the result's id.
type sameEntry struct {
	Key  string `json:"key"`
	Hash string `json:"hash"`
	ID   string `json:"id"`
}

// resultID is a result's id: its number in the session, in hex, at least
// loop.json's digits wide.
func resultID(n int) string {
	return fmt.Sprintf("%0*x", theSpec().Loop.Context.ResultIDDigits, n)
}

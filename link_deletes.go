package main

// Two small records of the link, each one JSON list written whole and
// atomically under <state>/link/: the sessions the instance was ever given
// (which it may delete wherever they are), and the deletes made while no
// link was up, sent right after the next initialize and then forgotten —
// so a delete is never lost for want of a link.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

var linkMarksMu sync.Mutex

func linkStateDir() string { return filepath.Join(stateDir(), "link") }

func readIDList(name string) []string {
	data, err := os.ReadFile(filepath.Join(linkStateDir(), name))
	if err != nil {
		return nil
	}
	var ids []string
	json.Unmarshal(data, &ids)
	return ids
}

func writeIDList(name string, ids []string) error {
	if ids == nil {
		ids = []string{}
	}
	if err := os.MkdirAll(linkStateDir(), 0o700); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(linkStateDir(), name), rawJSON(ids), 0o600)
}

// editIDList adds or removes one id.
func editIDList(name, id string, add bool) {
	linkMarksMu.Lock()
	defer linkMarksMu.Unlock()
	ids := readIDList(name)
	var out []string
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	if add {
		out = append(out, id)
	}
	writeIDList(name, out)
}

func markGiven(id string)   { editIDList("given.json", id, true) }
func forgetGiven(id string) { editIDList("given.json", id, false) }

func wasGiven(id string) bool {
	linkMarksMu.Lock()
	defer linkMarksMu.Unlock()
	return slices.Contains(readIDList("given.json"), id)
}

// noteDeleted keeps a delete made on the device (lembas sessions delete,
// prune, /delete) for the instance, when the instance was given that
// session; the next link's initialize sends it. A running service sends it
// on its next link as well: deletes are rare, and one sent twice is
// harmless (the client ignores a delete for a chat it no longer has).
func noteDeleted(id string) {
	if !wasGiven(id) {
		return
	}
	editIDList("deletes.json", id, true)
	forgetGiven(id)
	os.Remove(turnsPath(id))
}

// sendDeletes sends every kept delete as _lembas/session/deleted, then
// forgets those sent.
func (svc *linkService) sendDeletes() {
	linkMarksMu.Lock()
	ids := readIDList("deletes.json")
	linkMarksMu.Unlock()
	if len(ids) == 0 {
		return
	}
	sock := svc.pipe.socket()
	if sock == nil {
		return
	}
	for _, id := range ids {
		b, _ := json.Marshal(rpcMessage{JSONRPC: "2.0", Method: "_lembas/session/deleted", Params: rawJSON(map[string]string{"sessionId": id})})
		if sock.writeFrame(b) != nil {
			return // the link dropped: kept for the next one
		}
	}
	linkMarksMu.Lock()
	defer linkMarksMu.Unlock()
	left := []string{}
	for _, x := range readIDList("deletes.json") {
		if !slices.Contains(ids, x) {
			left = append(left, x)
		}
	}
	writeIDList("deletes.json", left)
}

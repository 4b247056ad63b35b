package main

// Two small records of the link, each one JSON list written whole and
// atomically under <state>/link/: the sessions the instance was ever given
// (which it may delete wherever they are), and the deletes made while no
// link was up, sent right after the next initialize and then forgotten —
// so a delete is never lost for want of a link.

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

var linkMarksMu mutex

func linkStateDir() string { return filepath.Join(stateDir(), "link") }

func readIDList(name string) []string {
	ids, _ := readIDListErr(name)
	return ids
}

// readIDListErr is the list, or why it cannot be read: a missing file is
// an empty list; one that is not a JSON list of strings is an error, and
// must not be written over (its deletes would be lost).
func readIDListErr(name string) ([]string, error) {
	p := filepath.Join(linkStateDir(), name)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	if err := json.Unmarshal(data, &ids); err != nil {
		return nil, errorf("%s is not a list of session ids (%v); fix or remove it", p, err)
	}
	return ids, nil
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

// editIDList adds or removes one id; the error is the write's, and the
// list on disk is as it was when there is one.
func editIDList(name, id string, add bool) error {
	linkMarksMu.Lock()
	defer linkMarksMu.Unlock()
	ids, err := readIDListErr(name)
	if err != nil {
		return err
	}
	var out []string
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	if add {
		out = append(out, id)
	}
	return writeIDList(name, out)
}

// markGiven and forgetGiven report a failed write in the log they are
// given; the given list only widens what the instance may delete, so a
// lost mark costs a refused delete, never a lost record.
func markGiven(id string, log func(string)) {
	if err := editIDList("given.json", id, true); err != nil && log != nil {
		log("noting session " + id + " as the instance's: " + err.Error())
	}
}

func forgetGiven(id string, log func(string)) {
	if err := editIDList("given.json", id, false); err != nil && log != nil {
		log("forgetting session " + id + " as the instance's: " + err.Error())
	}
}

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
//
// The delete is forgotten as given only once the pending list holding it
// is written (fsynced and renamed): when that write fails, the error is
// returned for the caller to tell the person (the session is gone here
// and the instance will not hear of it), and the session stays marked.
func noteDeleted(id string) error {
	if !wasGiven(id) {
		return nil
	}
	if err := editIDList("deletes.json", id, true); err != nil {
		return errorf("keeping the delete of %s for the instance: %w; it is sent once that folder is writable again", id, err)
	}
	forgetGiven(id, nil) // a mark left behind only lets the instance delete a session that is gone
	// The turns file of a deleted session answers no prompt again; one
	// left behind by a failed remove is only bytes.
	_ = os.Remove(turnsPath(id))
	return nil
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
	now, err := readIDListErr("deletes.json")
	if err != nil {
		svc.log("forgetting the deletes sent: " + err.Error())
		return
	}
	left := []string{}
	for _, x := range now {
		if !slices.Contains(ids, x) {
			left = append(left, x)
		}
	}
	if err := writeIDList("deletes.json", left); err != nil {
		// The sent deletes stay on the list and go again on the next
		// link: the client ignores a delete for a chat it no longer has.
		svc.log("forgetting the deletes sent: " + err.Error())
	}
}

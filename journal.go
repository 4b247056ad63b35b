package main

// journal.go: an append-only JSON Lines file, for anything on disk that
// grows with use (sessions, the REPL history, a link's turns). One record
// is one line of JSON; new records are appended with one write and one
// fsync, never by rewriting the file. A crash mid-append leaves at most one
// torn line at the end, which the next reader that may repair (the one
// holding the file's lock) cuts off with a warning; a bad line anywhere
// else is corruption, reported so the caller sets the file aside. When
// the records superseded by later ones make the file too big, the owner
// rewrites it whole from what it holds in memory (compaction: temp file +
// fsync + rename + directory fsync), so the bytes ever written stay within
// a small constant of the state's size.
//
// The API, for other concerns to reuse:
//
//	j, recs, err := loadJournal(path, 0o600, repair, warn)
//	    reads every whole record (each a JSON value, without its newline).
//	    A missing file is an fs.ErrNotExist error (j is still usable, empty).
//	    A torn last line is dropped; with repair the file is truncated to
//	    the last whole record and warn is told. Any other bad line is a
//	    *journalError: set the file aside (setAside) and say so.
//	j.append(rec, ...)     one write + one fsync; on failure the file is cut
//	                       back to where it was, and the caller should
//	                       rewrite it before appending again.
//	j.rewrite(recs)        atomic replacement (compaction, or a first write).
//	j.needsCompaction(live) whether the file has passed store.json's
//	                       compact_factor × live bytes (live = what a fresh
//	                       rewrite would take, which the owner tracks).
//	encodeRecords(values)  json.Marshal each value, for rewrite or append.
//
// Records never contain a newline: encoding/json escapes them, and append
// refuses a record that has one.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// journal is one JSON Lines file and its size as this process last left it.
type journal struct {
	path string
	perm os.FileMode
	size int64
	// lazy appends write without fsync, for a front end that shows the
	// person nothing until it calls sync (store.deferSyncs): the bytes are
	// the kernel's at once, so the process's own crash or kill -9 loses
	// nothing; a power cut before sync loses only what was never shown.
	lazy                  bool
	unsynced, dirUnsynced bool // written since the last fsync: the file, its new name
}

// journalError is a bad record before the last line: the file is corrupt,
// not merely torn, and must be set aside rather than repaired.
type journalError struct {
	Line int
	Err  error
}

func (e *journalError) Error() string {
	return loopText(theStoreSpec().Texts, "corrupt_line", "line", e.Line, "error", e.Err)
}

// storeSpec is harness/store.json: the store's numbers and texts.
type storeSpec struct {
	About   string `json:"about"`
	Numbers struct {
		CompactFactor   int `json:"compact_factor"`
		CompactMinBytes int `json:"compact_min_bytes"`
	} `json:"numbers"`
	Texts map[string]string `json:"texts"`
}

// theStoreSpec parses harness/store.json once, on first use, so a command
// that never touches the store never parses it.
//
//go:noinline
func theStoreSpec() *storeSpec { return storeSpecFile.get() }

var storeSpecFile = &harnessFile[storeSpec]{name: "harness/store.json"}

// loadJournal reads path's records. See the file comment for the contract.
// Only a caller that holds the file's lock may pass repair: another
// process may be in the middle of appending, and its half-written line
// looks exactly like a torn one.
func loadJournal(path string, perm os.FileMode, repair bool, warn func(string)) (*journal, [][]byte, error) {
	j := &journal{path: path, perm: perm}
	data, err := os.ReadFile(path)
	if err != nil {
		return j, nil, err
	}
	recs, whole, lineErr := splitJournal(data)
	if lineErr != nil {
		return j, nil, lineErr
	}
	j.size = int64(whole)
	if whole < len(data) {
		if repair {
			if err := truncateFile(path, int64(whole)); err != nil {
				return j, nil, errorf("cutting the torn end off %s: %w", path, err)
			}
			if warn != nil {
				warn(loopText(theStoreSpec().Texts, "torn_tail", "path", path, "bytes", len(data)-whole, "records", len(recs)))
			}
		} else {
			j.size = int64(len(data)) // the writer owns the tail; never append after it
		}
	}
	return j, recs, nil
}

// splitJournal is the parser: the whole records of data, and how many
// bytes they take with their newlines. A last line without its newline, or
// one that is not JSON, is torn (a crash mid-append, or a file system that
// left zeros after a power cut) and not counted; a bad line before it is a
// *journalError. Blank lines are skipped.
func splitJournal(data []byte) (recs [][]byte, whole int, err error) {
	line := 0
	for off := 0; off < len(data); {
		line++
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 { // no newline: the append never finished
			return recs, off, nil
		}
		rec := data[off : off+nl]
		next := off + nl + 1
		if len(bytes.TrimSpace(rec)) > 0 && !json.Valid(rec) {
			if len(bytes.TrimSpace(data[next:])) == 0 || allZero(data[next:]) {
				return recs, off, nil // the last line: torn
			}
			return nil, 0, &journalError{Line: line, Err: errorNew("invalid JSON")}
		}
		if len(bytes.TrimSpace(rec)) > 0 {
			recs = append(recs, rec)
		}
		off = next
	}
	return recs, len(data), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 && c != '\n' {
			return false
		}
	}
	return true
}

// truncateFile cuts path to size and makes the cut durable.
func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close() // after the Sync below, the cut is durable: Close has nothing left to lose
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// append adds records with one write and one fsync. The file is opened
// for each append rather than held, so nothing stays open between saves
// (and Windows can rename over it at compaction). A failed or short write
// is cut back, so the file never ends in a half record this process made.
func (j *journal) append(recs ...[]byte) error {
	var buf []byte
	for _, r := range recs {
		if bytes.IndexByte(r, '\n') >= 0 {
			return errorf("appending to %s: a record holds a newline; encode it with encoding/json", j.path)
		}
		buf = append(append(buf, r...), '\n')
	}
	if len(buf) == 0 {
		return nil
	}
	_, statErr := os.Lstat(j.path)
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, j.perm)
	if err != nil {
		return errorf("appending to %s: %w", j.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return errorf("appending to %s: %w", j.path, err)
	}
	before := st.Size() // the file as found, which a failed write is cut back to
	_, err = f.Write(buf)
	if err == nil && !j.lazy {
		t0 := time.Now()
		err = f.Sync()
		traceSince(t0, "fsync %d bytes", len(buf))
	}
	if err != nil {
		// The write's error is the one returned. A cut back that fails too
		// leaves a torn last record, which loading cuts off (splitJournal)
		// and the caller's next save rewrites whole (its shadow is dropped).
		f.Truncate(before)
		f.Close()
		return errorf("appending to %s: %w", j.path, err)
	}
	if err := f.Close(); err != nil {
		return errorf("appending to %s: %w", j.path, err)
	}
	j.unsynced = j.unsynced || j.lazy
	if errors.Is(statErr, fs.ErrNotExist) && j.lazy {
		j.dirUnsynced = true
	} else if errors.Is(statErr, fs.ErrNotExist) {
		if err := syncDir(filepath.Dir(j.path)); err != nil { // a new name survives a power cut
			j.size = before + int64(len(buf))
			return errorf("appending to %s: %w", j.path, err)
		}
	}
	j.size = before + int64(len(buf))
	return nil
}

// sync makes what lazy appends wrote durable: the file, and its name when
// they created it. Nothing written, nothing done.
func (j *journal) sync() error {
	if j.unsynced {
		t0 := time.Now()
		f, err := os.OpenFile(j.path, os.O_WRONLY, 0)
		if err == nil {
			err = f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return errorf("saving %s: %w", j.path, err)
		}
		traceSince(t0, "fsync (deferred)")
		j.unsynced = false
	}
	if j.dirUnsynced {
		if err := syncDir(filepath.Dir(j.path)); err != nil {
			return errorf("saving %s: %w", j.path, err)
		}
		j.dirUnsynced = false
	}
	return nil
}

// rewrite replaces the journal with recs atomically: after a crash the
// name holds the old records or the new ones, both whole. The directory is
// synced too, so the new file is the one found after a power cut.
func (j *journal) rewrite(recs [][]byte) error {
	n := 0
	for _, r := range recs {
		n += len(r) + 1
	}
	buf := make([]byte, 0, n)
	for _, r := range recs {
		if bytes.IndexByte(r, '\n') >= 0 {
			return errorf("rewriting %s: a record holds a newline; encode it with encoding/json", j.path)
		}
		buf = append(append(buf, r...), '\n')
	}
	_, statErr := os.Lstat(j.path)
	if err := writeFileAtomic(j.path, buf, j.perm); err != nil {
		return errorf("rewriting %s: %w", j.path, err)
	}
	if statErr == nil {
		if err := syncDir(filepath.Dir(j.path)); err != nil { // writeFileAtomic syncs it only for a new name
			j.size = int64(len(buf))
			return errorf("rewriting %s: %w", j.path, err)
		}
	}
	j.size = int64(len(buf))
	return nil
}

// needsCompaction says whether the file has grown past compact_factor
// times live bytes (what a rewrite would take), and past compact_min_bytes,
// so a small file is not rewritten for every few appends.
func (j *journal) needsCompaction(live int64) bool {
	n := theStoreSpec().Numbers
	return j.size > int64(n.CompactMinBytes) && j.size > int64(n.CompactFactor)*live
}

// encodeRecords marshals each value as one record.
func encodeRecords(values ...any) ([][]byte, error) {
	out := make([][]byte, 0, len(values))
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

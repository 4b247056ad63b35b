package main

// harness_files.go: the embedded harness as the code reads it — each file
// decoded once on first use (harnessFile), and a note of which files were
// read, so a test can hold what a path parsed (TestPStartupReadsLittle).

import (
	"io/fs"
	"sort"
	"sync"
)

// harnessFiles is the embedded harness with a note of each file read
// through it. The note is a set (a file read again adds nothing), so a
// service that runs for weeks keeps at most one entry per harness file.
// TestPStartupReadsLittle reads it at the moment -p's first request
// arrives: which spec files the path to that request parsed is a fact a
// test can hold, where a timing is not.
type harnessFiles struct{ fs.FS }

var (
	harnessReadMu mutex
	harnessRead   map[string]bool // made on the first read: start-up allocates nothing for it
)

func (h harnessFiles) ReadFile(name string) ([]byte, error) {
	noteHarnessRead(name)
	return fs.ReadFile(h.FS, name)
}

// ReadDir lists a folder as the files underneath list it (globbing uses it).
func (h harnessFiles) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(h.FS, name) }

// Open notes a file (not a folder: globbing and walking open folders
// without reading what is in them).
func (h harnessFiles) Open(name string) (fs.File, error) {
	f, err := h.FS.Open(name)
	if err == nil {
		if st, serr := f.Stat(); serr == nil && !st.IsDir() {
			noteHarnessRead(name)
		}
	}
	return f, err
}

func noteHarnessRead(name string) {
	harnessReadMu.Lock()
	if harnessRead == nil {
		harnessRead = map[string]bool{}
	}
	harnessRead[name] = true
	harnessReadMu.Unlock()
}

// harnessFilesRead lists the harness files read so far, sorted.
func harnessFilesRead() []string {
	harnessReadMu.Lock()
	defer harnessReadMu.Unlock()
	out := make([]string, 0, len(harnessRead))
	for n := range harnessRead {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// harnessFile is one harness file, decoded strictly on first use and kept.
// The files are embedded, so one that does not decode is a build-time bug
// its spec test catches; at run time get panics with the decode error, as
// theSpec does. A command that never needs a file never parses it.
type harnessFile[T any] struct {
	name string
	once sync.Once
	val  *T
	err  error
}

func (h *harnessFile[T]) get() *T {
	h.once.Do(func() {
		h.val = new(T)
		h.err = decodeStrict(harnessFS, h.name, h.val)
	})
	if h.err != nil {
		panic("harness: " + h.err.Error())
	}
	return h.val
}

//go:build linux

package main

// proc_pages_linux.go: the binary's own pages out of the resident set
// when the process is about to wait. Linux maps a file's pages into a
// process 64 KB at a time around each fault ("fault-around"), whether or
// not they are used after, and madvise(MADV_RANDOM) does not stop it
// (measured on 6.18: 12 touches of a mapping, 768 KB resident with either
// advice). So by the time a -p run has started, parsed the harness and
// made its first request, nearly the whole 11 MB binary is counted as
// resident (RssFile), though each phase runs a few MB of it.
// releaseBinaryPages unmaps the read-only ones (text, rodata) with
// MADV_DONTNEED: they stay in the page cache, and what is used next comes
// back with a minor fault (about 0.1-0.3 ms for a whole phase). Only
// mappings of the executable that are not writable and hold no private
// (copied) page are released: a PIE's relocated read-only data would be
// lost, so it is never touched.
//
// The ground (floor 1): it calls nothing above it.

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
)

var binaryPages struct {
	once  sync.Once
	spans [][2]uintptr // [start, end) of each read-only mapping of the executable
}

// releaseBinaryPages drops the executable's read-only pages from the
// process's resident set (a few microseconds); on other systems it does
// nothing.
func releaseBinaryPages() {
	binaryPages.once.Do(func() { binaryPages.spans = binarySpans() })
	for _, s := range binaryPages.spans {
		syscall.Syscall(syscall.SYS_MADVISE, s[0], s[1]-s[0], syscall.MADV_DONTNEED)
	}
}

// binarySpans reads /proc/self/smaps once: the executable's mappings
// that are private, not writable and have no anonymous (copied-on-write)
// page.
func binarySpans() [][2]uintptr {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil
	}
	return parseBinarySpans(b, exe)
}

// parseBinarySpans is binarySpans' reading of smaps text for the
// executable exe. A mapping counts only once its Anonymous line says 0 kB.
func parseBinarySpans(b []byte, exe string) [][2]uintptr {
	var spans [][2]uintptr
	var cur [2]uintptr
	ok := false // the mapping being read is a candidate
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if rest, found := bytes.CutPrefix(line, []byte("Anonymous:")); found {
			if ok && bytes.Equal(bytes.TrimSpace(rest), []byte("0 kB")) {
				spans = append(spans, cur)
			}
			ok = false
			continue
		}
		f := bytes.Fields(line)
		if len(f) < 6 || bytes.HasSuffix(f[0], []byte(":")) {
			continue // a field of the mapping, or a mapping of no file
		}
		lo, hi, found := bytes.Cut(f[0], []byte{'-'})
		if !found {
			continue
		}
		a, err1 := strconv.ParseUint(string(lo), 16, 64)
		z, err2 := strconv.ParseUint(string(hi), 16, 64)
		path := string(bytes.Join(f[5:], []byte{' '}))
		perm := f[1]
		ok = err1 == nil && err2 == nil && z > a && path == exe && len(perm) == 4 && perm[1] != 'w' && perm[3] == 'p'
		cur = [2]uintptr{uintptr(a), uintptr(z)}
	}
	return spans
}

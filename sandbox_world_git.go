//go:build linux

package main

// git's history in the world is add-only. The world sees .git/objects,
// .git/refs and .git/logs (the plan's pin paths) through an overlay whose
// upper layer is a folder of the session, so whatever a command does there
// — a commit, a gc, `rm -rf .git/objects/*`, a truncated pack — lands in
// that layer and never in the repository. After each command lembas copies
// what is new from the layer into the real folders (syncGit):
//   - objects: a loose object or a pack file only where none is, and only
//     when it checks (a loose object hashes to its name, a pack file's
//     trailing checksum is its content's), so an existing one is never
//     overwritten and a truncated or forged one never lands; the caches
//     beside them (info/, commit-graph, multi-pack-index) are not copied:
//     a forged one could mislead the person's next gc, and git makes them
//     again;
//   - refs: a new or moved ref (a moved ref is ordinary work: commit,
//     reset, checkout -b);
//   - logs: a new reflog, or one that grew (only appended to: an expired or
//     rewritten reflog stays as it was);
//   - never a delete: the layer's whiteouts are skipped, so a removed
//     object, pack or ref is gone only in the world's view, until the
//     world next starts (it starts with a fresh layer, and sees the whole
//     history again);
//   - packed-refs, a file beside the refs, is rewritten for real; a ref it
//     listed before the command and lists no more is written back as a
//     loose ref (refs are never deleted).
// git inside the world sees a delete succeed; the repository keeps it.

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// gitKeep is the host's side of one world's git layers.
type gitKeep struct {
	mu     sync.Mutex
	layer  string                // the session folder's layer: <layer>/<i>/u is pin i's upper
	pins   []string              // the real folders
	uppers []string              // pin i's upper layer, <layer>/<i>/u
	kinds  []string              // pin i's kind: objects, refs, logs
	packed string                // <common>/packed-refs
	refs   map[string]string     // packed refs seen before commands: name → sha
	synced map[string]string     // upper path → size and time when last copied
	dirs   map[string]gitDirSeen // upper folder → its time and subfolders when last read, once quiet

	packedStamp string            // packed-refs' size, time and file when last read
	packedNow   map[string]string // what it listed then
}

type gitDirSeen struct {
	stamp   string
	subdirs []string
	files   bool // it held files (a reflog grows in place: a folder of them is always read)
}

func newGitKeep(layer string, pins []string) *gitKeep {
	k := &gitKeep{layer: layer, pins: pins, refs: map[string]string{}, synced: map[string]string{}, dirs: map[string]gitDirSeen{}}
	for i, p := range pins {
		k.uppers = append(k.uppers, filepath.Join(layer, strconv.Itoa(i), "u"))
		k.kinds = append(k.kinds, filepath.Base(p))
	}
	for _, p := range pins {
		if filepath.Base(p) == "refs" {
			k.packed = filepath.Join(filepath.Dir(p), "packed-refs")
		}
	}
	return k
}

// reset empties the layers before a world starts with them: everything in
// them was copied back after the command that made it.
func (k *gitKeep) reset() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.synced, k.dirs = map[string]string{}, map[string]gitDirSeen{}
	if err := os.RemoveAll(k.layer); err != nil {
		return err
	}
	// The upper layers are dated in the past, so that an empty one is
	// quiet from the first command (syncDir's 2 s): anything added to one
	// dates it now.
	past := time.Now().Add(-time.Minute)
	for i := range k.pins {
		for _, d := range []string{"u", "w"} {
			p := filepath.Join(k.layer, strconv.Itoa(i), d)
			if err := os.MkdirAll(p, 0o700); err != nil {
				return err
			}
			os.Chtimes(p, past, past)
		}
	}
	return nil
}

// before notes the packed refs as a command starts; with nothing running
// it takes them afresh (the person may have deleted one outside).
func (k *gitKeep) before(idle bool) {
	if k == nil || k.packed == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.packedRefs()
	if idle {
		k.refs = make(map[string]string, len(now))
	}
	for n, sha := range now {
		k.refs[n] = sha
	}
}

var (
	looseObject = lazyRE(`^[0-9a-f]{2}/[0-9a-f]{38,62}$`)
	packFile    = lazyRE(`^pack/pack-[0-9a-f]{40,64}\.[a-z]+$`)
)

// sync copies the layers' news into the real folders (see the file's
// comment); it returns the first error, having tried everything.
func (k *gitKeep) sync() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for i, real := range k.pins {
		k.syncDir(k.uppers[i], k.uppers[i], real, k.kinds[i], keep)
	}
	keep(k.restorePacked())
	return first
}

// syncDir copies the news of one folder p of the upper layer up (and its
// subfolders) into real. A folder of objects or refs whose time has not
// moved holds no new name (objects and refs land by rename), so it is not
// read again: its subfolders, as last read, are looked at, its files not —
// one stat a folder on a command that added nothing. Reflogs grow in place:
// a folder holding one is always read.
func (k *gitKeep) syncDir(up, p, real, kind string, keep func(error)) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return
	}
	// A folder's time is recorded only once it is 2 s old: it is the
	// kernel's coarse clock, and a name landing in the same tick would
	// leave it as it was.
	stamp := "dir@" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
	if seen, ok := k.dirs[p]; ok && seen.stamp == stamp && (kind != "logs" || !seen.files) {
		for _, d := range seen.subdirs {
			k.syncDir(up, filepath.Join(p, d), real, kind, keep)
		}
		return
	}
	rel, _ := filepath.Rel(up, p)
	if p != up {
		keep(os.MkdirAll(filepath.Join(real, rel), 0o755))
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return
	}
	var subdirs []string
	files := false
	failed := false // a file that could not be copied is tried again: the folder is not recorded
	for _, d := range entries {
		child := filepath.Join(p, d.Name())
		if d.IsDir() {
			subdirs = append(subdirs, d.Name())
			k.syncDir(up, child, real, kind, keep)
			continue
		}
		files = true
		if !k.syncFile(up, child, real, kind, d, keep) {
			failed = true
		}
	}
	if !failed && time.Since(fi.ModTime()) > 2*time.Second {
		k.dirs[p] = gitDirSeen{stamp, subdirs, files}
	} else {
		delete(k.dirs, p)
	}
}

// syncFile copies one file of the upper layer back, if it is one to copy
// (see the file's comment); false when copying failed.
func (k *gitKeep) syncFile(up, p, real, kind string, d fs.DirEntry, keep func(error)) bool {
	rel, _ := filepath.Rel(up, p)
	dst := filepath.Join(real, rel)
	name := d.Name()
	if !d.Type().IsRegular() || strings.HasSuffix(name, ".lock") || strings.HasPrefix(name, "tmp_") {
		return true // a whiteout (a delete), a lock or a file being written
	}
	fi, err := d.Info()
	if err != nil {
		return true
	}
	stamp := strconv.FormatInt(fi.Size(), 10) + "@" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
	if k.synced[p] == stamp {
		return true
	}
	rel = filepath.ToSlash(rel)
	switch {
	case kind == "objects":
		if pathExists(dst) || !objectChecks(p, rel) {
			k.synced[p] = stamp
			return true // named by its content: never overwritten; a forged one never lands
		}
	case kind == "logs":
		old, err := os.ReadFile(dst)
		if err == nil {
			now, rerr := os.ReadFile(p)
			if rerr != nil || len(now) <= len(old) || !bytes.HasPrefix(now, old) {
				k.synced[p] = stamp
				return true // only appended to
			}
		}
	default:
		if sameBytes(p, dst) {
			k.synced[p] = stamp
			return true
		}
	}
	if err := copyInto(p, dst, fi.Mode().Perm()); err != nil {
		keep(err)
		return false
	}
	k.synced[p] = stamp
	return true
}

// restorePacked writes back, as loose refs, the packed refs a command took
// out of packed-refs.
func (k *gitKeep) restorePacked() error {
	if k.packed == "" || len(k.refs) == 0 {
		return nil
	}
	now := k.packedRefs()
	common := filepath.Dir(k.packed)
	var first error
	for name, sha := range k.refs {
		if _, ok := now[name]; ok {
			continue
		}
		f := filepath.Join(common, filepath.FromSlash(name))
		if !within(common, f) || pathExists(f) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err == nil {
			err = os.WriteFile(f, []byte(sha+"\n"), 0o644)
			if err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// objectChecks says whether a file of .git/objects is one to copy back: a
// loose object whose content hashes to its name, a pack file (pack, idx,
// rev, mtimes, bitmap) whose trailing checksum is its content's, or a
// pack's .keep or .promisor mark.
func objectChecks(p, rel string) bool {
	switch {
	case looseObject.MatchString(rel):
		f, err := os.Open(p)
		if err != nil {
			return false
		}
		defer f.Close()
		zr, err := zlib.NewReader(f)
		if err != nil {
			return false
		}
		name := strings.Replace(rel, "/", "", 1)
		h := newGitHash(len(name))
		if _, err := io.Copy(h, io.LimitReader(zr, 1<<34)); err != nil {
			return false
		}
		return hex.EncodeToString(h.Sum(nil)) == name
	case packFile.MatchString(rel):
		ext := filepath.Ext(rel)
		if ext == ".keep" || ext == ".promisor" {
			return true
		}
		if ext != ".pack" && ext != ".idx" && ext != ".rev" && ext != ".mtimes" && ext != ".bitmap" {
			return false
		}
		hexName := strings.TrimSuffix(strings.TrimPrefix(rel, "pack/pack-"), ext)
		f, err := os.Open(p)
		if err != nil {
			return false
		}
		defer f.Close()
		fi, err := f.Stat()
		h := newGitHash(len(hexName))
		n := int64(h.Size())
		if err != nil || fi.Size() <= n {
			return false
		}
		if _, err := io.Copy(h, io.LimitReader(f, fi.Size()-n)); err != nil {
			return false
		}
		tail := make([]byte, n)
		if _, err := io.ReadFull(f, tail); err != nil {
			return false
		}
		return bytes.Equal(h.Sum(nil), tail)
	}
	return false
}

// newGitHash is the hash a repository's names of that length are made by.
func newGitHash(hexLen int) hash.Hash {
	if hexLen == 64 {
		return sha256.New()
	}
	return sha1.New()
}

// packedRefs is packed-refs read, again only when its size, time or file
// changed (it is read as each command starts and after it ends, and a
// clone's may list thousands of tags); k.mu is held. The map is not to be
// changed.
func (k *gitKeep) packedRefs() map[string]string {
	stamp := "none"
	if fi, err := os.Stat(k.packed); err == nil {
		stamp = fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			stamp += fmt.Sprintf("#%d", st.Ino)
		}
	}
	if stamp != k.packedStamp || k.packedNow == nil {
		k.packedNow, k.packedStamp = readPackedRefs(k.packed), stamp
	}
	return k.packedNow
}

// readPackedRefs is packed-refs as name → sha.
func readPackedRefs(p string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(p)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		if sha, name, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "refs/") {
			out[name] = sha
		}
	}
	return out
}

// sameBytes says whether two files hold the same bytes.
func sameBytes(a, b string) bool {
	x, err := os.ReadFile(a)
	if err != nil {
		return false
	}
	y, err := os.ReadFile(b)
	return err == nil && bytes.Equal(x, y)
}

// copyInto copies src to dst through a temporary file beside dst, renamed
// over it, so a reader never sees half of it.
func copyInto(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(dst), ".lembas-sync-*")
	if err != nil {
		return err
	}
	tmp := out.Name()
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, mode)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

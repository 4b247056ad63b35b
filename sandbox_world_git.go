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
//     rewritten reflog stays as it was, and the entries the world added
//     to it since are appended: reflogNews);
//   - never a delete: the layer's whiteouts are skipped, so a removed
//     object, pack or ref is gone only in the world's view, until the
//     world next starts (it starts with a fresh layer, and sees the whole
//     history again);
//   - packed-refs, a file beside the refs, is rewritten for real; a ref it
//     listed before the command and lists no more is written back as a
//     loose ref (refs are never deleted), and a loose ref the command
//     packed with another value is moved to it (packedMoved);
//   - a ref or reflog that cannot land, the repository holding a file
//     where it needs a folder or the reverse (a deleted fix kept, the
//     world's fix/x), is named to the command (gitClash).
// git inside the world sees a delete succeed; the repository keeps it, and
// the command's result says so (goneSince), so the model is not misled.

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// gitKeep is the host's side of one world's git layers.
type gitKeep struct {
	mu     mutex
	layer  string                     // the session folder's layer: <layer>/<i>/u is pin i's upper
	pins   []string                   // the real folders
	roots  []*os.Root                 // pin i's real folder, held from the start: every write into it goes through it
	common *os.Root                   // the folder of packed-refs and HEAD, held the same way (nil: none)
	uppers []string                   // pin i's upper layer, <layer>/<i>/u
	kinds  []string                   // pin i's kind: objects, refs, logs
	packed string                     // <common>/packed-refs
	refs   map[string]string          // packed refs seen before commands: name → sha
	synced map[string]string          // upper path → size and time when last copied
	inDir  map[string]map[string]bool // upper folder → names of it synced (to see one vanish)
	dirs   map[string]gitDirSeen      // upper folder → its time and subfolders when last read, once quiet

	head        string            // <common>/HEAD as a command started ("" when there was none)
	packedStamp string            // packed-refs' size, time and file when last read
	packedAt    string            // packedStamp as the last command started
	packedNow   map[string]string // what it listed then

	// The layers' folders are watched (inotify) from when they are first
	// read: a sync after a command that changed nothing in them — most
	// commands — reads the watch's queue, finds it empty, and looks at no
	// folder. -1 where inotify is not to be had (none, or a watch refused:
	// every sync then looks, folder by folder, as before); dirty when the
	// last look must be made again whatever the queue says (a copy failed,
	// a fresh layer).
	ino     int
	dirty   bool
	looks   int  // how many syncs looked
	noWatch bool // inotify refused (none, or the person's limit): every sync looks

	// The deletes the layers hold (whiteouts, and folders made opaque),
	// each once, in the order sync met them: a command is told which of
	// them came while it ran (goneSince), since they never reach the
	// repository. goneSeq counts on across resets, so a count taken
	// before a world starts again still means "after this".
	gone    []gitGone
	goneSet map[string]bool
	goneSeq int

	// made: the objects the session's commands made (copied back into
	// the repository), across its worlds; madePack: a pack among them
	// (what is in one is not read). gitObjectMade answers from them.
	made     map[string]bool
	madePack bool
}

// gitGone is one delete in a git layer — or, clash, a ref or reflog that
// cannot land (gitClash) — by its path as the person knows it
// (.git/refs/heads/topic), and its place in the count.
type gitGone struct {
	seq   int
	path  string
	clash bool
}

type gitDirSeen struct {
	stamp   string
	subdirs []string
	files   bool // it held files (a reflog grows in place: a folder of them is always read)
}

func newGitKeep(layer string, pins []string) *gitKeep {
	k := &gitKeep{layer: layer, pins: pins, refs: map[string]string{}, synced: map[string]string{}, dirs: map[string]gitDirSeen{}, ino: -1}
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

// holdRoots opens the real folders as a world starts (reset), when no
// process of the world is alive to swap a name: every copy, folder and ref
// the sync writes there goes through them (os.Root: no name resolved out
// of them, no link followed out). The project, .git with it, is writable
// in the world, and a command (or a process it left running) that swaps
// .git for a link to the person's home would otherwise have lembas write
// there by name. k.mu is held.
func (k *gitKeep) holdRoots() {
	k.closeRootsLocked()
	k.roots = make([]*os.Root, len(k.pins))
	for i, p := range k.pins {
		k.roots[i], _ = os.OpenRoot(p) // nil: that folder is not there; nothing is copied into it
	}
	if k.packed != "" {
		k.common, _ = os.OpenRoot(filepath.Dir(k.packed))
	}
}

// closeRoots lets the held folders go, when the world has ended; a sync
// after it copies nothing.
func (k *gitKeep) closeRoots() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closeRootsLocked()
}

func (k *gitKeep) closeRootsLocked() {
	for i, r := range k.roots {
		if r != nil {
			r.Close()
			k.roots[i] = nil
		}
	}
	if k.common != nil {
		k.common.Close()
		k.common = nil
	}
}

// reset empties the layers before a world starts with them, once what is
// in them is copied back: a command's own work was after it ended, but a
// process it left (a job, a gc --auto gone to the background) may have
// written since, and a world that ended idle had no last sync.
func (k *gitKeep) reset() error {
	k.sync()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.synced, k.dirs, k.inDir = map[string]string{}, map[string]gitDirSeen{}, nil
	k.gone, k.goneSet = nil, nil // a fresh layer: the world sees the whole history again
	k.unwatch()
	k.dirty = true
	k.holdRoots()
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

// gitWatchMask is what is watched in a layer's folder: every change to
// it or to a file in it (a name made, moved or removed, a file written, a
// folder made opaque), not reads.
const gitWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_MOVED_FROM |
	unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// watch adds the layer's folder p to the watch (one gone since it was
// last read needs none: its going was seen); a watch refused (the
// person's inotify limit) gives it up: every sync looks again.
func (k *gitKeep) watch(p string) {
	if k.ino < 0 {
		return
	}
	_, err := unix.InotifyAddWatch(k.ino, p, gitWatchMask|unix.IN_ONLYDIR)
	if err != nil && err != unix.ENOENT && err != unix.ENOTDIR {
		k.unwatch()
		k.noWatch = true
	}
}

// stop ends the watch, with the world.
func (k *gitKeep) stop() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.unwatch()
}

//go:noinline
func (k *gitKeep) unwatch() {
	if k.ino >= 0 {
		unix.Close(k.ino)
		k.ino = -1
	}
}

// quiet says whether nothing changed in the layers since the last look:
// the watch's queue is empty (it is emptied here, before a look, so a
// change made while sync looks is seen by the next one).
func (k *gitKeep) quiet() bool {
	if k.ino < 0 {
		return false
	}
	var buf [4096]byte
	changed := false
	for {
		n, err := unix.Read(k.ino, buf[:])
		if n > 0 {
			changed = true
			continue
		}
		if err == unix.EINTR {
			continue
		}
		if err != unix.EAGAIN {
			k.unwatch()
			k.noWatch = true
			return false
		}
		return !changed && !k.dirty
	}
}

// before notes the packed refs as a command starts; with nothing running
// it takes them afresh (the person may have deleted one outside).
func (k *gitKeep) before(idle bool) {
	if k == nil || k.packed == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(k.packed), "HEAD")); err == nil && len(b) > 0 {
		k.head = string(b)
	}
	now := k.packedRefs()
	k.packedAt = k.packedStamp
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
	// The watch begins once the session has made git_watch_after looks:
	// closing it costs a kernel grace period (0.5-15 ms measured), more
	// than a short session's syncs save (µs each), and -p waits for it.
	if k.ino < 0 && !k.noWatch && k.looks >= theSandboxSpec().GitWatchAfter {
		if fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
			k.ino, k.dirty = fd, true // this look, whole, adds the watches
		} else {
			k.noWatch = true
		}
	}
	if !k.quiet() {
		k.dirty = false
		k.looks++
		for i, real := range k.pins {
			if i < len(k.roots) && k.roots[i] != nil {
				k.syncDir(k.uppers[i], k.uppers[i], real, k.kinds[i], k.roots[i], keep)
			}
		}
		if first != nil {
			k.dirty = true // what could not be copied is tried again
		}
	}
	keep(k.packedMoved())
	keep(k.restorePacked())
	keep(k.restoreHead())
	return first
}

// packedMoved moves the repository's loose refs that the command packed
// with another value to that value: git gc or pack-refs (after a commit
// in the same command) wrote the world's ref into packed-refs and removed
// its loose file there, and the loose file the repository keeps would
// hide it. A loose ref of the layer is the world's instead; k.mu is held.
func (k *gitKeep) packedMoved() error {
	now := k.packedRefs()
	if k.packedStamp == k.packedAt {
		return nil
	}
	var first error
	for i, kind := range k.kinds {
		if kind != "refs" || i >= len(k.roots) || k.roots[i] == nil {
			continue
		}
		for n, sha := range now {
			f, ok := strings.CutPrefix(n, "refs/")
			if !ok || k.refs[n] == sha || !filepath.IsLocal(f) {
				continue // not packed by the command
			}
			if fi, err := os.Lstat(filepath.Join(k.uppers[i], f)); err == nil && fi.Mode().IsRegular() {
				continue
			}
			if old, err := k.roots[i].ReadFile(f); err == nil && string(old) != sha+"\n" {
				if err := copyInto(strings.NewReader(sha+"\n"), k.roots[i], f, 0o644); err != nil && first == nil {
					first = err
				}
			}
		}
	}
	return first
}

// restoreHead writes HEAD back when a command removed it (rm -rf .git
// empties the git folder of all but its binds): without it git no longer
// takes the folder for a repository. A HEAD the command changed (a
// checkout) is the command's to change.
func (k *gitKeep) restoreHead() error {
	if k.packed == "" || k.head == "" {
		return nil
	}
	if k.common == nil {
		return nil
	}
	if _, err := k.common.Lstat("HEAD"); err == nil {
		return nil
	}
	k.goneSeq++ // told as a delete kept from the repository, each time
	k.gone = append(k.gone, gitGone{seq: k.goneSeq, path: filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(k.packed)), "HEAD"))})
	return rootCreate(k.common, "HEAD", []byte(k.head))
}

// rootCreate writes a new file name under root, never one that is there
// (a link put in its place included: O_EXCL).
func rootCreate(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir copies the news of one folder p of the upper layer up (and its
// subfolders) into real. A folder of objects or refs whose time has not
// moved holds no new name (objects and refs land by rename), so it is not
// read again: its subfolders, as last read, are looked at, its files not —
// one stat a folder on a command that added nothing. Reflogs grow in place:
// a folder holding one is always read.
func (k *gitKeep) syncDir(up, p, real, kind string, root *os.Root, keep func(error)) {
	k.watch(p) // before it is looked at: what lands after is seen
	rel, _ := filepath.Rel(up, p)
	dir, err := openLayer(up, rel, true)
	if err != nil {
		return
	}
	defer dir.Close()
	fi, err := dir.Stat()
	if err != nil || !fi.IsDir() {
		return
	}
	// A folder's time is recorded only once it is 2 s old: it is the
	// kernel's coarse clock, and a name landing in the same tick would
	// leave it as it was.
	// Its change time is in the stamp too: overlayfs, copying a folder of
	// the lower layer up into this one (refs/heads, an objects fan-out the
	// repository has), puts the parent's modification time back as it was,
	// and only the change time says a name came.
	changed := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if c := time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)); c.After(changed) { // int64(): int32 on linux/arm
			changed = c
		}
	}
	stamp := "dir@" + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + "/" + strconv.FormatInt(changed.UnixNano(), 10)
	if seen, ok := k.dirs[p]; ok && seen.stamp == stamp && (kind != "logs" || !seen.files) {
		for _, d := range seen.subdirs {
			k.syncDir(up, filepath.Join(p, d), real, kind, root, keep)
		}
		return
	}
	if p != up {
		if err := root.MkdirAll(rel, 0o755); !gitClash(err) {
			keep(err) // a clash is its files' to tell
		}
		if v, err := unix.Fgetxattr(int(dir.Fd()), "user.overlay.opaque", make([]byte, 1)); err == nil && v == 1 {
			k.noteGone(real, rel+"/") // removed and made again: what it held is hidden in the world
		}
	}
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var subdirs []string
	files := false
	failed := false // a file that could not be copied is tried again: the folder is not recorded
	for _, d := range entries {
		child := filepath.Join(p, d.Name())
		if d.IsDir() {
			subdirs = append(subdirs, d.Name())
			k.syncDir(up, child, real, kind, root, keep)
			continue
		}
		files = true
		if !k.syncFile(up, child, real, kind, d, root, keep) {
			failed = true
		}
	}
	k.vanished(p, real, rel, entries)
	if failed {
		k.dirty = true
	}
	if !failed && time.Since(changed) > 2*time.Second {
		k.dirs[p] = gitDirSeen{stamp, subdirs, files}
	} else {
		delete(k.dirs, p)
	}
}

// syncFile copies one file of the upper layer back, if it is one to copy
// (see the file's comment); false when copying failed.
func (k *gitKeep) syncFile(up, p, real, kind string, d fs.DirEntry, root *os.Root, keep func(error)) bool {
	rel, _ := filepath.Rel(up, p)
	dst := rel // in root
	name := d.Name()
	if d.Type()&fs.ModeCharDevice != 0 {
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Rdev == 0 {
				k.noteGone(real, rel) // a whiteout: deleted in the world, kept in the repository
			}
		}
		return true
	}
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
	if layerSwap != nil {
		layerSwap(p)
	}
	// From here the file is read through one descriptor opened without
	// following a link at any step (openLayer): a command's process left
	// running (a job) can swap a name of the layer for a link between the
	// listing and the read, and lembas, outside the world, would copy what
	// the link names (a key the world cannot read) into the repository.
	f, err := openLayer(up, rel, false)
	if err != nil {
		return true // no longer a plain file of the layer
	}
	defer f.Close()
	rel = filepath.ToSlash(rel)
	var src io.Reader = f
	switch {
	case kind == "objects":
		k.noteMade(rel)
		if _, err := root.Lstat(dst); err == nil || !objectChecks(f, rel) {
			k.synced[p] = stamp
			k.known(p)
			return true // named by its content: never overwritten; a forged one never lands
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			keep(err)
			return false
		}
	default: // refs and reflogs: small files, read once
		now, err := io.ReadAll(io.LimitReader(f, 1<<26))
		if err != nil {
			keep(err)
			return false
		}
		old, oerr := root.ReadFile(dst)
		if kind == "logs" && oerr == nil && !bytes.HasPrefix(now, old) {
			now = reflogNews(old, now)
		}
		if kind == "logs" && oerr == nil && len(now) <= len(old) ||
			kind != "logs" && oerr == nil && bytes.Equal(now, old) {
			k.synced[p] = stamp
			k.known(p)
			return true // a reflog is only appended to; a ref as it is needs no copy
		}
		src = bytes.NewReader(now)
	}
	if err := copyInto(src, root, dst, fi.Mode().Perm()); err != nil {
		if kind != "objects" && gitClash(err) {
			k.note(gitGone{path: filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(real)), filepath.Base(real), rel)), clash: true})
			return true // tried again when the folder next changes
		}
		keep(err)
		return false
	}
	k.synced[p] = stamp
	k.known(p)
	return true
}

// reflogNews is the repository's reflog old with the entries of the
// world's now that it lacks appended, in now's order: the world rewrote
// its reflog (a stash popped or dropped, a branch deleted and made again)
// and went on, and what it dropped stays while what it added lands. Each
// line counts as often as it is there.
func reflogNews(old, now []byte) []byte {
	have := map[string]int{}
	for _, l := range strings.SplitAfter(string(old), "\n") {
		have[l]++
	}
	out := old
	for _, l := range strings.SplitAfter(string(now), "\n") {
		if have[l] > 0 || !strings.HasSuffix(l, "\n") {
			have[l]--
			continue // one the repository has, or a line not yet whole
		}
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, l...)
	}
	return out
}

// known notes that the upper file p was synced, so that its going is seen
// (vanished); k.mu is held.
func (k *gitKeep) known(p string) {
	dir, name := filepath.Split(p)
	dir = filepath.Clean(dir)
	if k.inDir == nil {
		k.inDir = map[string]map[string]bool{}
	}
	if k.inDir[dir] == nil {
		k.inDir[dir] = map[string]bool{}
	}
	k.inDir[dir][name] = true
}

// vanished notes the files synced from the upper folder p (rel in real)
// that are no longer in it, nor in a subfolder of it that is gone: a file
// made in this world and deleted in it leaves no whiteout (the layer below
// did not have it when the world looked), yet the repository keeps the
// copy sync made. Only a folder being read again (its time moved) is
// looked at, so the stat gating stays; k.mu is held.
func (k *gitKeep) vanished(p, real, rel string, entries []fs.DirEntry) {
	if len(k.inDir) == 0 {
		return
	}
	here := make(map[string]bool, len(entries)) // a file (a whiteout is not one)
	dirs := map[string]bool{}
	for _, d := range entries {
		here[d.Name()] = d.Type().IsRegular()
		dirs[d.Name()] = d.IsDir()
	}
	lost := func(dir, name string) {
		delete(k.synced, filepath.Join(dir, name))
		r, _ := filepath.Rel(p, filepath.Join(dir, name))
		if pathExists(filepath.Join(real, rel, r)) {
			k.noteGone(real, filepath.Join(rel, r))
		}
	}
	for _, name := range sortedNames(k.inDir[p]) { // in order, so a note reads the same every time
		if !here[name] {
			lost(p, name)
			delete(k.inDir[p], name)
		}
	}
	for _, dir := range sortedNames(k.inDir) {
		sub, ok := strings.CutPrefix(dir, p+string(filepath.Separator))
		if !ok {
			continue
		}
		if first, _, _ := strings.Cut(sub, string(filepath.Separator)); dirs[first] {
			continue
		}
		for _, name := range sortedNames(k.inDir[dir]) {
			lost(dir, name)
		}
		delete(k.inDir, dir)
	}
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// noteGone keeps a delete the layer of real holds (rel inside it), once;
// k.mu is held.
func (k *gitKeep) noteGone(real, rel string) {
	if filepath.Base(real) == "refs" {
		if _, ok := k.packedRefs()["refs/"+filepath.ToSlash(rel)]; ok {
			return // packed (git pack-refs, gc), not deleted
		}
	}
	path := filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(real)), filepath.Base(real), rel))
	if fi, err := os.Stat(filepath.Join(real, rel)); strings.HasSuffix(rel, "/") || err == nil && fi.IsDir() {
		path += "/" // a folder removed whole
	}
	k.note(gitGone{path: path})
}

// note keeps g, once; k.mu is held.
func (k *gitKeep) note(g gitGone) {
	key := fmt.Sprint(g.clash, g.path)
	if k.goneSet[key] {
		return
	}
	if k.goneSet == nil {
		k.goneSet = map[string]bool{}
	}
	k.goneSet[key] = true
	k.goneSeq++
	g.seq = k.goneSeq
	k.gone = append(k.gone, g)
}

// gitClash says whether a copy into the repository failed on its having
// a file where the layer has a folder, or the reverse: a branch the world
// deleted, which the repository keeps, named fix where the world made
// fix/x (git branch -m fix fix/x). The ref cannot land until the person
// deletes the old one, and the command is told.
func gitClash(err error) bool {
	return errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist)
}

// noteMade notes an object of the objects layer (rel: ab/cdef…, or a
// pack's file); k.mu is held.
func (k *gitKeep) noteMade(rel string) {
	if strings.HasPrefix(rel, "pack/") {
		k.madePack = true
		return
	}
	if k.made == nil {
		k.made = map[string]bool{}
	}
	k.made[strings.Replace(rel, "/", "", 1)] = true
}

// gitObjectMade says whether the session's commands may have made the
// object id: it is one of theirs, or they made a pack. Objects not yet
// copied back are looked for in the layer.
func (w *world) gitObjectMade(id string) bool {
	k := w.git
	if k == nil || len(id) < 4 {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.madePack || k.made[id] {
		return true
	}
	for i, kind := range k.kinds {
		if kind == "objects" && (pathExists(filepath.Join(k.uppers[i], id[:2], id[2:])) || pathExists(filepath.Join(k.uppers[i], "pack"))) {
			return true
		}
	}
	return false
}

// goneCount is where the count of deletes stands (before a command).
func (k *gitKeep) goneCount() int {
	if k == nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.goneSeq
}

// goneSince names the deletes (or, clash, the clashes) sync met after the
// count stood at n. With commands running side by side, one's deletes may
// be named to another that ended after them too: it is told of a delete
// it did not make, never left unaware of one it made.
func (k *gitKeep) goneSince(n int, clash bool) []string {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, g := range k.gone {
		if g.seq > n && g.clash == clash {
			out = append(out, g.path)
		}
	}
	// Refs first, then reflogs, then objects: a lost branch matters most
	// when the note names only the first few.
	rank := func(p string) int { // p is .git/<pin>/…
		if parts := strings.SplitN(p, "/", 3); len(parts) > 1 {
			switch parts[1] {
			case "refs":
				return 0
			case "logs":
				return 1
			}
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

// gitGoneCount and gitGoneSince are the world's deletes in git's history
// (sandbox.go's gitDeletes): a command's result says which it made, since
// they never reach the repository.
func (w *world) gitGoneCount() int { return w.git.goneCount() }

func (w *world) gitGoneSince(n int) []string { return w.git.goneSince(n, false) }

func (w *world) gitClashSince(n int) []string { return w.git.goneSince(n, true) }

// restorePacked writes back, as loose refs, the packed refs a command took
// out of packed-refs.
func (k *gitKeep) restorePacked() error {
	if k.packed == "" || len(k.refs) == 0 {
		return nil
	}
	now := k.packedRefs()
	if k.common == nil {
		return nil
	}
	var first error
	for name, sha := range k.refs {
		if _, ok := now[name]; ok {
			continue
		}
		f := filepath.FromSlash(name)
		if !filepath.IsLocal(f) {
			continue
		}
		if _, err := k.common.Lstat(f); err == nil {
			continue
		}
		if err := k.common.MkdirAll(filepath.Dir(f), 0o755); err == nil {
			err = rootCreate(k.common, f, []byte(sha+"\n"))
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
func objectChecks(f *os.File, rel string) bool {
	switch {
	case looseObject.MatchString(rel):
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

// layerSwap, when set (tests only), runs between a layer file's listing
// and its read: where a leftover process would swap it.
var layerSwap func(p string)

// openLayer opens rel below the upper layer up — a folder (dir) or a plain
// file — resolving every step without following a link (openat2's
// RESOLVE_NO_SYMLINKS, or one openat with O_NOFOLLOW a step on a kernel
// before 5.6). A FIFO put in a file's place does not block the open, and
// anything but a plain file (or a folder) is refused.
func openLayer(up, rel string, dir bool) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK
	if dir {
		flags |= unix.O_DIRECTORY
	}
	root, err := unix.Open(up, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV})
	if err == unix.ENOSYS {
		fd, err = openNoFollow(root, rel, flags)
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), filepath.Join(up, rel))
	fi, err := f.Stat()
	if err == nil && (dir && !fi.IsDir() || !dir && !fi.Mode().IsRegular()) {
		err = errorf("%s: not a plain %s", f.Name(), map[bool]string{true: "folder", false: "file"}[dir])
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openNoFollow is openLayer's walk where openat2 is missing: each folder
// of rel opened below the last with O_NOFOLLOW, then rel's last name.
func openNoFollow(root int, rel string, flags int) (int, error) {
	parts := strings.Split(filepath.Clean(rel), string(filepath.Separator))
	at := root
	for i, name := range parts {
		if name == ".." {
			return -1, unix.EXDEV
		}
		last := i == len(parts)-1
		fl := unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW
		if last {
			fl = flags
		}
		fd, err := unix.Openat(at, name, fl, 0)
		if at != root {
			unix.Close(at)
		}
		if err != nil {
			return -1, err
		}
		if last {
			return fd, nil
		}
		at = fd
	}
	return -1, unix.EINVAL
}

// copyInto copies what in holds to dst (a name in root) through a new
// file beside it, renamed over it, so a reader never sees half of it.
func copyInto(in io.Reader, root *os.Root, dst string, mode fs.FileMode) error {
	if d := filepath.Dir(dst); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(dst), ".lembas-sync-"+hex.EncodeToString(rnd[:]))
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(mode)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, dst)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

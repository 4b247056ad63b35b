//go:build linux

package main

// The world's file system and limits, laid out once by its init (see
// sandbox_world_linux.go's comment): the read-only root, the writable
// roots, the caches' and git's overlays, its own /dev and /proc, the
// masks, and the resource limits.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// limits sets the world's resource limits. Processes: the pid namespace's
// own pid_max (Linux 6.14+), which bounds every process in the world, root
// or not; and RLIMIT_NPROC, which counts the world's processes inside its
// user namespace (the person's others do not count) but does not bind a
// person who is root outside. It says which took: "pid_max", "rlimit".
// And the oom_score_adj every process in the world inherits: raising it
// needs no privilege, and the kernel's OOM killer then takes the world's
// processes (the init too, and with it the whole world) before lembas or
// anything else of the person's. Where /proc refuses it (a read-only
// /proc in a container), the world runs without, and says so (oomAdj).
func (plan worldPlan) limits() (how string, oomAdj int, _ error) {
	if plan.OOMAdj != 0 && os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(plan.OOMAdj)), 0) == nil {
		oomAdj = plan.OOMAdj
	}
	if plan.NProc > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: plan.NProc, Max: plan.NProc}); err != nil {
			return "", 0, errorf("limiting processes: %v", err)
		}
		how = "rlimit"
		n := plan.NProc
		if n < 301 {
			n = 301 // the kernel's least pid_max
		}
		if !plan.NoProc && os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.FormatUint(n, 10)), 0) == nil {
			how = "pid_max"
		}
	}
	if plan.FSize > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: plan.FSize, Max: plan.FSize}); err != nil {
			return "", 0, errorf("limiting file size: %v", err)
		}
	}
	return how, oomAdj, nil
}

// mountOverlay mounts an overlay on target, volatile where the kernel
// has it (5.10+): its upper layer is the session's scratch — what must
// last is copied out by lembas (git's history) or was never kept (the
// caches) — so its unmount need not sync the whole file system under it,
// which made a world's end take tens of milliseconds. A volatile mount
// leaves a mark in its work folder that refuses the next mount there:
// the work folder, scratch too, is emptied first.
func mountOverlay(target, opts, work string, userxattr bool) error {
	if userxattr {
		opts += ",userxattr"
	}
	os.RemoveAll(filepath.Join(work, "work"))
	if unix.Mount("overlay", target, "overlay", 0, opts+",volatile") == nil {
		return nil
	}
	return unix.Mount("overlay", target, "overlay", 0, opts)
}

// layout lays out the world's file system; see the file's comment. It
// says how git's history is kept: "overlay", or "pin" (the folders only
// cannot be removed whole) where this kernel gives no overlay.
func (plan worldPlan) layout() (gitHow string, _ error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "", errorf("making mounts private: %v", err)
	}
	// git's history first, so the writable roots' copies below take the
	// overlays with them (and their upper layers are still writable).
	overlaid := map[string]bool{}
	if plan.GitLayer != "" {
		for i, p := range plan.Pin {
			base := filepath.Join(plan.Session, plan.GitLayer, strconv.Itoa(i))
			opts := "lowerdir=" + overlayEscape(p) + ",upperdir=" + overlayEscape(base+"/u") + ",workdir=" + overlayEscape(base+"/w")
			if mountOverlay(p, opts, base+"/w", true) == nil || mountOverlay(p, opts, base+"/w", false) == nil {
				overlaid[p] = true
			}
		}
	}
	clone := func(p string) (int, error) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return -1, errorf("copying the mount of %s: %v", p, err)
		}
		return fd, nil
	}
	type placed struct {
		fd     int
		target string
	}
	var later []placed
	// The session's temp folders, and the writable roots, taken while
	// they are still writable and in view.
	write := append([]string{}, plan.Write...)
	for _, t := range [][2]string{{"tmp", "/tmp"}, {"var-tmp", "/var/tmp"}} {
		src := filepath.Join(plan.Session, t[0])
		if err := os.MkdirAll(src, 0o700); err != nil {
			return "", err
		}
		if _, err := os.Stat(t[1]); err != nil {
			continue
		}
		fd, err := clone(src)
		if err != nil {
			return "", err
		}
		later = append(later, placed{fd, t[1]})
	}
	sort.Slice(write, func(i, j int) bool { return len(write[i]) < len(write[j]) })
	for _, p := range write {
		fd, err := clone(p)
		if err != nil {
			return "", err
		}
		later = append(later, placed{fd, p})
	}
	if plan.Home != "" {
		if err := plan.hideHome(); err != nil {
			return "", err
		}
	}
	// Build caches: an overlay whose upper layer is the session's.
	var overlays []string
	for i, c := range plan.Overlay {
		up, work := filepath.Join(plan.Session, "cache", strconv.Itoa(i), "u"), filepath.Join(plan.Session, "cache", strconv.Itoa(i), "w")
		if err := os.MkdirAll(up, 0o700); err != nil {
			return "", err
		}
		if err := os.MkdirAll(work, 0o700); err != nil {
			return "", err
		}
		opts := "lowerdir=" + overlayEscape(c) + ",upperdir=" + overlayEscape(up) + ",workdir=" + overlayEscape(work)
		if err := mountOverlay(c, opts, work, false); err != nil {
			return "", errorf("overlaying the cache %s: %v", c, err)
		}
		overlays = append(overlays, c)
	}
	if err := plan.ownDev(); err != nil {
		return "", err
	}
	// Everything read-only, then the writable parts back.
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, ro); err != nil {
		return "", errorf("making the root read-only: %v", err)
	}
	rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, c := range overlays {
		if err := unix.MountSetattr(unix.AT_FDCWD, c, 0, rw); err != nil {
			return "", errorf("making the cache %s writable: %v", c, err)
		}
	}
	for _, pl := range later {
		if _, err := os.Stat(pl.target); err != nil {
			if err := os.MkdirAll(pl.target, 0o755); err != nil { // under the private /tmp
				return "", errorf("making the mount point %s: %v", pl.target, err)
			}
		}
		if err := unix.MoveMount(pl.fd, "", unix.AT_FDCWD, pl.target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return "", errorf("placing %s: %v", pl.target, err)
		}
		unix.Close(pl.fd)
	}
	if len(plan.Dev) > 0 {
		// A devpts of the world's own: the ptys a command makes, and none
		// of the person's. Where the kernel refuses one, no pty at all.
		if unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != nil {
			unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666")
		}
	}
	for _, e := range plan.Empty {
		if _, err := os.Stat(e); err != nil {
			continue
		}
		// Sized: a tmpfs is memory, by default half the machine's each.
		opts := "mode=0700"
		if plan.Tmpfs > 0 {
			opts += ",size=" + strconv.FormatUint(plan.Tmpfs, 10)
		}
		if err := unix.Mount("tmpfs", e, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return "", errorf("emptying %s: %v", e, err)
		}
	}
	if !plan.NoProc {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return "", errorf("mounting the world's /proc: %v", err)
		}
	}
	// git: history add-only (an overlay each, copied back by lembas), or
	// at least pinned; code-running files read-only.
	for _, p := range plan.Pin {
		how := "overlay"
		if !overlaid[p] {
			how = "pin"
			if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
				return "", errorf("pinning %s: %v", p, err)
			}
		}
		if gitHow == "" || how == "pin" {
			gitHow = how
		}
	}
	// The project's .git stays where git looks for it: a mount point is
	// neither renamed nor removed (EBUSY), so no command can move it aside
	// — its read-only files with it — and put a git folder of its own,
	// whose config runs a program, in its place.
	for _, p := range plan.Fixed {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return "", errorf("binding %s: %v", p, err)
		}
	}
	for _, p := range plan.Protect {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return "", errorf("binding %s: %v", p, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE, ro); err != nil {
			return "", errorf("making %s read-only: %v", p, err)
		}
	}
	// Credentials last, so they are empty inside writable roots too; a
	// masked folder's shown files (public keys) are copied before and put
	// back, read-only, into its empty tmpfs.
	for _, p := range plan.Mask {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			var shown []placed
			for _, f := range plan.Shown {
				if filepath.Dir(f) != p {
					continue
				}
				fd, err := unix.OpenTree(unix.AT_FDCWD, f, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
				if err != nil {
					continue // gone, or not a file to bind: not shown
				}
				shown = append(shown, placed{fd, f})
			}
			flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
			if len(shown) == 0 {
				flags |= unix.MS_RDONLY
			}
			err = unix.Mount("tmpfs", p, "tmpfs", flags, "size=4k,mode=0755")
			for _, sh := range shown {
				if err == nil {
					err = os.WriteFile(sh.target, nil, 0o644)
				}
				if err == nil {
					err = unix.MoveMount(sh.fd, "", unix.AT_FDCWD, sh.target, unix.MOVE_MOUNT_F_EMPTY_PATH)
				}
				if err == nil {
					err = unix.MountSetattr(unix.AT_FDCWD, sh.target, 0, ro)
				}
				unix.Close(sh.fd)
			}
			if err == nil && len(shown) > 0 {
				err = unix.MountSetattr(unix.AT_FDCWD, p, 0, ro)
			}
		} else {
			err = unix.Mount(os.DevNull, p, "", unix.MS_BIND, "")
			if err == nil {
				err = unix.MountSetattr(unix.AT_FDCWD, p, 0, ro)
			}
		}
		if err != nil {
			return "", errorf("emptying %s: %v", p, err)
		}
	}
	return gitHow, nil
}

// hideHome puts an empty tmpfs over the home folder and binds back into
// it, from a copy of its mount taken first, only what the plan keeps of
// it (Keep, and the caches to be overlaid there), and makes the mount
// points of the writable roots it holds (placed later, from their own
// copies). A kept symlink is made again as a symlink, and what it points
// to in the home folder is kept too. A kept path that cannot be bound is
// left out: fewer files in view, never more. Everything bound here turns
// read-only with the root.
func (plan worldPlan) hideHome() error {
	home := plan.Home
	fi, err := os.Stat(home)
	if err != nil || !fi.IsDir() {
		return nil
	}
	type kept struct {
		rel, link string
		dir       bool
	}
	var keep []kept
	bound, linked := map[string]bool{}, map[string]bool{}
	var add func(p string, depth int)
	// add walks a kept path down from the home folder on the host, before
	// the tmpfs hides it: each link on the way is made again as the same
	// link (~/.config -> dotfiles/config), and the walk goes on where it
	// leads — in the home folder; outside it, what it leads to is in view
	// already — so what the path names is bound at its real place, found
	// here, never through a link the tmpfs would leave dangling.
	add = func(p string, depth int) {
		rel, err := filepath.Rel(home, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || depth > 8 {
			return
		}
		cur := home
		parts := strings.Split(rel, "/")
		for i, c := range parts {
			if bound[strings.TrimPrefix(strings.TrimPrefix(cur, home), "/")] && cur != home {
				return // a folder already kept holds it
			}
			next := filepath.Join(cur, c)
			fi, err := os.Lstat(next)
			if err != nil {
				return
			}
			nrel := strings.TrimPrefix(next, home+"/")
			if fi.Mode()&os.ModeSymlink != 0 {
				if !linked[nrel] {
					l, err := os.Readlink(next)
					if err != nil {
						return
					}
					linked[nrel] = true
					keep = append(keep, kept{rel: nrel, link: l})
				}
				t, err := filepath.EvalSymlinks(next)
				if err != nil || !within(home, t) || t == home {
					return
				}
				add(filepath.Join(append([]string{t}, parts[i+1:]...)...), depth+1)
				return
			}
			if i == len(parts)-1 {
				if !bound[nrel] && (fi.IsDir() || fi.Mode().IsRegular()) {
					bound[nrel] = true
					keep = append(keep, kept{rel: nrel, dir: fi.IsDir()})
				}
				return
			}
			cur = next
		}
	}
	sorted := append(append([]string{}, plan.Keep...), plan.Overlay...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) < len(sorted[j]) })
	for _, k := range sorted {
		add(k, 0)
	}
	sort.SliceStable(keep, func(i, j int) bool { return strings.Count(keep[i].rel, "/") < strings.Count(keep[j].rel, "/") })
	// The writable roots it holds (a folder, or a file config names),
	// placed later: their mount points, of their kind.
	var writes []kept
	for _, w := range plan.Write {
		if within(home, w) && w != home {
			if fi, err := os.Stat(w); err == nil {
				writes = append(writes, kept{rel: w, dir: fi.IsDir()})
			}
		}
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, home, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return errorf("copying the mount of %s: %v", home, err)
	}
	defer unix.Close(tree)
	if err := unix.Mount("tmpfs", home, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=%o,size=1m", fi.Mode().Perm())); err != nil {
		return errorf("hiding the home folder %s: %v", home, err)
	}
	for _, k := range keep {
		dst := filepath.Join(home, k.rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			continue
		}
		if k.link != "" {
			os.Symlink(k.link, dst)
			continue
		}
		if k.dir {
			if os.Mkdir(dst, 0o755) != nil {
				continue
			}
		} else if f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
			continue
		} else {
			f.Close()
		}
		fd, err := unix.OpenTree(tree, k.rel, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			continue
		}
		unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(fd)
	}
	for _, w := range writes {
		if w.dir {
			err = os.MkdirAll(w.rel, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(w.rel), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(w.rel, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		if err != nil {
			return errorf("making the mount point %s: %v", w.rel, err)
		}
	}
	return nil
}

// ownDev puts a /dev of the world's own over the host's: an empty tmpfs
// holding the plan's device files (each the host's, bound: a user
// namespace makes no device), its links, and the folders for its devpts
// and shm. The host's /dev would give a command the person's terminals
// (/dev/pts: what they type, what their terminal shows) and whatever disk,
// camera or input device their groups open.
func (plan worldPlan) ownDev() error {
	if len(plan.Dev) == 0 {
		return nil
	}
	type dev struct {
		fd   int
		name string
	}
	var devs []dev
	defer func() {
		for _, d := range devs {
			unix.Close(d.fd)
		}
	}()
	for _, name := range plan.Dev {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/dev/"+name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			continue // a device this machine lacks
		}
		devs = append(devs, dev{fd, name})
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return errorf("making the world's /dev: %v", err)
	}
	for _, d := range devs {
		p := "/dev/" + d.name
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return errorf("making the world's %s: %v", p, err)
		}
		f.Close()
		if err := unix.MoveMount(d.fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return errorf("placing the world's %s: %v", p, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir("/dev/"+d, 0o755); err != nil {
			return errorf("making the world's /dev/%s: %v", d, err)
		}
	}
	for name, target := range plan.DevLinks {
		if err := os.Symlink(target, "/dev/"+name); err != nil {
			return errorf("making the world's /dev/%s: %v", name, err)
		}
	}
	return nil
}

// overlayEscape escapes a path for overlay's options (commas, colons and
// backslashes are its separators).
func overlayEscape(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`)
	return r.Replace(p)
}

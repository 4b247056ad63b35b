//go:build linux

package main

// The Linux sandbox: Landlock for the file system and TCP, a seccomp filter
// for the rest of the network, and a user+mount namespace that binds the
// git folder's hooks and config read-only.
//
// Landlock binds only the thread that asks for it (and what that thread
// executes), and a Go program has many threads, so lembas cannot restrict
// itself and then start the shell. It re-executes itself instead, as a
// small helper (the hidden subcommand sandboxHelperArg): the helper locks
// its goroutine to one OS thread, binds the protected paths (when it runs
// in a fresh namespace), drops the namespace's capabilities, sets
// no_new_privs, restricts that thread with Landlock (and seccomp), and
// executes the shell from the same thread. If any step fails the shell is
// never run: the helper exits with sandbox.json's exit_setup.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's file rights by the ABI that added them. Rights this table does
// not know (a newer kernel's) are never handled, so they stay allowed.
var landlockFSByABI = []uint64{
	1: unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM,
	2: unix.LANDLOCK_ACCESS_FS_REFER,
	3: unix.LANDLOCK_ACCESS_FS_TRUNCATE,
	5: unix.LANDLOCK_ACCESS_FS_IOCTL_DEV,
}

var landlockRightNames = map[int]string{2: "refer (ABI 2)", 3: "truncate (ABI 3)", 4: "TCP bind/connect (ABI 4)", 5: "ioctl on devices (ABI 5)", 6: "abstract Unix socket scoping (ABI 6)"}

// landlockFS is every file right an ABI knows.
func landlockFS(abi int) uint64 {
	var r uint64
	for v, bits := range landlockFSByABI {
		if v <= abi {
			r |= bits
		}
	}
	return r
}

// landlockAttr is the ruleset attribute as ABI 6 knows it; older kernels
// accept the longer struct when the fields they do not know are zero.
type landlockAttr struct {
	fs, net, scoped uint64
}

// sandboxProbeOS asks the kernel for Landlock's ABI, then whether a user
// and mount namespace can be made and used (a helper run that only makes
// its mounts private).
func sandboxProbeOS() sandboxProbe {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return sandboxProbe{Why: sandboxText("why_landlock", "error", errno.Error())}
	}
	p := sandboxProbe{Kind: "landlock", ABI: int(abi)}
	var masked []string
	for v := 2; v <= 6; v++ {
		if v > p.ABI {
			masked = append(masked, landlockRightNames[v])
		}
	}
	p.Masked = strings.Join(masked, ", ")
	return p
}

// sandboxNamespacesOS runs the helper in a new user+mount namespace once.
func sandboxNamespacesOS() (bool, string) {
	exe, err := os.Executable()
	if err != nil {
		return false, err.Error()
	}
	cmd := exec.Command(exe, sandboxHelperArg, "--probe")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	namespaceAttr(cmd.SysProcAttr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, strings.TrimSpace(err.Error() + " " + string(out))
	}
	return true, ""
}

// namespaceAttr asks for a user+mount namespace in which the helper keeps
// CAP_SYS_ADMIN (as an ambient capability) long enough to bind mounts; the
// ids map to the person's own, so files keep their owners (git checks).
func namespaceAttr(a *syscall.SysProcAttr) {
	uid, gid := os.Getuid(), os.Getgid()
	a.Cloneflags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

// sandboxCommand readies cmd for pol. The command gets a session of its
// own (setsid), which also closes the TIOCSTI hole of a shared terminal.
// Where paths must be bound read-only it is rewritten to run through the
// helper (its pid is the helper's, then the shell's, so the process group
// lembas kills is the command's); otherwise sandboxStart restricts a
// thread of lembas and starts it from there, which saves a process start.
func sandboxCommand(cmd *exec.Cmd, pol sandboxPolicy) error {
	if !pol.NS {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return nil
	}
	exe, err := os.Executable()
	if pol.Exe != "" {
		exe, err = pol.Exe, nil
	}
	if err != nil {
		return errorf("finding lembas's own executable: %v", err)
	}
	js, err := json.Marshal(pol)
	if err != nil {
		return err
	}
	args := append([]string{exe, sandboxHelperArg, string(js), "--", cmd.Path}, cmd.Args...)
	cmd.Path, cmd.Args, cmd.Err = exe, args, nil
	a := &syscall.SysProcAttr{Setsid: true}
	namespaceAttr(a)
	cmd.SysProcAttr = a
	return nil
}

// sandboxStart starts cmd under pol. Without a namespace the restriction
// is made here: a goroutine locks itself to a fresh OS thread, restricts
// that thread (no_new_privs, Landlock, seccomp) and starts the command,
// which inherits the thread's restrictions; the goroutine then ends
// without unlocking, so the Go runtime throws the thread away and no other
// goroutine ever runs restricted.
func sandboxStart(cmd *exec.Cmd, pol sandboxPolicy) error {
	if pol.NS {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := restrictThread(pol); err != nil {
			errc <- errorf("%s", sandboxText("setup_failed", "error", err))
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// closeInherited marks every descriptor from 3 up close-on-exec, so that a
// command holds only the files it is handed. Go opens its own that way;
// what is left are descriptors lembas inherited without the flag (an
// editor's, a terminal's, a service manager's — open files, sockets), and
// in the world's init its control socket, through which a process a
// command left behind could take the next command's request and answer in
// the init's name. One system call (close_range, Linux 5.11+), else one
// per open descriptor.
func closeInherited() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > 2 {
			unix.FcntlInt(uintptr(n), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}

// restrictThread applies pol to the calling thread, for good.
func restrictThread(pol sandboxPolicy) error {
	fd, err := landlockRuleset(pol)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return restrictThreadWith(pol, fd)
}

// restrictThreadWith applies pol to the calling thread, for good, with
// ruleset, pol's Landlock ruleset (landlockRuleset): each thread
// restricted with it is a Landlock domain of its own.
func restrictThreadWith(pol sandboxPolicy, ruleset int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return errorf("setting no_new_privs: %v", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return errorf("restricting with Landlock: %v", errno)
	}
	return seccompRestrict(pol)
}

// landlockKnownDir and landlockKnownFile, or'ed into the rights given to
// landlockRuleset's add, say what the path is as a folder listing found
// it, so add need not stat it; no Landlock right uses these bits.
const (
	landlockKnownDir  = 1 << 62
	landlockKnownFile = 1 << 63
)

// readAllBut allows reading everywhere but home, and in home only keep:
// folder listings everywhere (names, not contents: a rule on /), and read
// rights on every entry of each folder on the way down to home but the
// next one towards it. An entry that is a link into home (or to a folder
// holding it) is left out, so it cannot lead there.
func readAllBut(home string, keep []string, read, handled uint64, add func(string, uint64) error) error {
	if err := add("/", unix.LANDLOCK_ACCESS_FS_READ_DIR&handled); err != nil {
		return err
	}
	cur := "/"
	for _, next := range strings.Split(strings.Trim(home, "/"), "/") {
		ents, err := os.ReadDir(cur)
		if err != nil {
			// A folder on the way that cannot be listed (a shared host's
			// /home, 0711): nothing else in it is allowed, and the walk goes
			// on towards home.
			ents = nil
		}
		for _, e := range ents {
			if e.Name() == next {
				continue
			}
			p := filepath.Join(cur, e.Name())
			r := read
			switch {
			case e.Type()&os.ModeSymlink != 0:
				t, err := filepath.EvalSymlinks(p)
				if err != nil || within(t, home) || within(home, t) {
					continue
				}
			case e.IsDir():
				r |= landlockKnownDir // the listing says so: no stat of a mount there (a hung NFS one)
			case e.Type().IsRegular():
				r |= landlockKnownFile
			}
			if err := add(p, r); err != nil {
				return err
			}
		}
		cur = filepath.Join(cur, next)
	}
	for _, k := range keep {
		if err := add(k, read); err != nil {
			return err
		}
	}
	return nil
}

// sandboxHelper is the hidden subcommand: lembas __sandbox POLICY -- PATH ARGV...
// It never returns when the command starts; any failure is reported and the
// command is not run.
func sandboxHelper(args []string) int {
	runtime.LockOSThread() // everything below binds this thread, which then executes the shell
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "lembas sandbox: %v; the command did not run\n", err)
		return theSandboxSpec().ExitSetup
	}
	if len(args) == 1 && args[0] == "--probe" {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fail(errorf("making mounts private: %v", err))
		}
		return 0
	}
	if len(args) < 4 || args[1] != "--" {
		return fail(errorf("usage: lembas %s POLICY -- PATH ARGV", sandboxHelperArg))
	}
	var pol sandboxPolicy
	if err := json.Unmarshal([]byte(args[0]), &pol); err != nil {
		return fail(errorf("reading the policy: %v", err))
	}
	path, argv := args[2], args[3:]
	if pol.NS {
		if err := bindReadOnly(pol.Protect); err != nil {
			return fail(err)
		}
		if err := dropCaps(); err != nil {
			return fail(err)
		}
	}
	if err := restrictThread(pol); err != nil {
		return fail(err)
	}
	closeInherited()
	err := unix.Exec(path, argv, os.Environ())
	return fail(errorf("starting %s: %v", path, err))
}

// bindReadOnly binds each path onto itself and remounts it read-only,
// keeping the flags the kernel locks in a namespace (nosuid, nodev, …),
// after making every mount private so nothing leaks out.
func bindReadOnly(paths []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return errorf("making mounts private: %v", err)
	}
	for _, p := range paths {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return errorf("binding %s: %v", p, err)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return errorf("reading %s's mount flags: %v", p, err)
		}
		flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
		for _, f := range [][2]uintptr{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
			{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME}} {
			if uintptr(st.Flags)&f[0] != 0 {
				flags |= f[1]
			}
		}
		if err := unix.Mount("", p, "", flags, ""); err != nil {
			return errorf("making %s read-only: %v", p, err)
		}
	}
	return nil
}

// dropCaps gives up the namespace's capabilities before the shell starts,
// so the command cannot undo the read-only binds.
func dropCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return errorf("clearing ambient capabilities: %v", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return errorf("dropping capabilities: %v", err)
	}
	return nil
}

// landlockRuleset is pol's Landlock ruleset, to restrict threads with:
// reads and execution everywhere, every handled right under the writable
// roots, writes and ioctls on the devices, and (network off, ABI 4+) no
// TCP bind or connect. Its rules hold the paths as they are now.
func landlockRuleset(pol sandboxPolicy) (int, error) {
	abi := pol.ABI
	if abi < 1 {
		abi = 1
	}
	handled := landlockFS(abi)
	attr := landlockAttr{fs: handled}
	if !pol.Network && abi >= 4 {
		attr.net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		// No abstract Unix socket made outside the command (D-Bus, X11, a
		// daemon's) can be reached; and without a pid namespace no signal
		// can leave the command.
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		if pol.Signals {
			attr.scoped |= unix.LANDLOCK_SCOPE_SIGNAL
		}
	}
	size := unsafe.Sizeof(attr)
	if abi < 6 {
		size = 16
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, errorf("creating the Landlock ruleset: %v", errno)
	}
	made := false
	defer func() {
		if !made {
			unix.Close(int(fd))
		}
	}()
	read := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE|unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_READ_DIR) & handled
	fileRights := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE|unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|
		unix.LANDLOCK_ACCESS_FS_TRUNCATE|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV) & handled
	add := func(path string, rights uint64) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // gone since the policy was made: nothing to allow
		}
		defer unix.Close(pfd)
		switch {
		case rights&landlockKnownDir != 0:
			rights &^= landlockKnownDir
		case rights&landlockKnownFile != 0:
			rights = rights &^ landlockKnownFile & fileRights
		default:
			var st unix.Stat_t
			if err := unix.Fstat(pfd, &st); err != nil {
				return errorf("reading %s: %v", path, err)
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				rights &= fileRights // a file takes only file rights
			}
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(pfd)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return errorf("allowing %s: %v", path, errno)
		}
		return nil
	}
	if pol.Home == "" {
		if err := add("/", read); err != nil {
			return -1, err
		}
	} else if err := readAllBut(pol.Home, pol.Keep, read, handled, add); err != nil {
		return -1, err
	}
	for _, p := range pol.Write {
		if err := add(p, handled); err != nil {
			return -1, err
		}
	}
	devRights := (fileRights | unix.LANDLOCK_ACCESS_FS_READ_DIR) & handled
	for _, p := range pol.Devices {
		r := devRights
		if p == "/dev/shm" { // POSIX shared memory: files are made and removed there
			r = handled
		}
		if err := add(p, r); err != nil {
			return -1, err
		}
	}
	made = true
	return int(fd), nil
}

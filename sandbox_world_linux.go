//go:build linux

package main

// The world: one long-lived set of namespaces per session in which every
// command the model asks for runs. lembas starts it once (the hidden
// subcommand worldHelperArg, as pid 1 of new user, mount, pid and — unless
// the network is on — network namespaces), it lays out its file system
// once, and from then on it forks each command on request over a Unix
// socket pair, so a command costs a thread and a fork, not a namespace.
//
//	lembas ── socketpair (SOCK_SEQPACKET) ──► init (pid 1 in the world)
//	  run {argv, env, dir, policy} + fds 0,1,2 ─►  fresh thread: caps dropped,
//	  ◄─ started {pid} / error                     no_new_privs, Landlock,
//	  signal {id, sig} ─►  kill(-pgid)             seccomp; fork+exec (setsid)
//	  ◄─ exit {id, status}                         reaps every child (pid 1)
//
// In the world the root is read-only (mount_setattr, recursively), and
// writable again only where the plan says: the project and its git folders,
// the session's private /tmp and /var/tmp (folders of the session on the
// host, so they last while the session does), the build caches (an overlay
// whose upper layer is the session's: the person's cache is never written),
// /dev/shm and /run/user/<uid> (empty). Credential folders are an empty
// read-only tmpfs and credential files /dev/null; git's code-running files
// are bound read-only, and git's history (.git/objects, refs, logs) is an
// overlay whose upper layer is the session's, copied back add-only after
// each command (sandbox_world_git.go). /proc is the world's own. The
// world dies with lembas: its socket's end closes (and Pdeathsig), and when
// pid 1 ends the kernel kills every process in it, setsid or not.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// worldPlan is what the init lays out once; it is handed over on argv.
type worldPlan struct {
	Write    []string          `json:"write"`              // bound writable again: the project, its git folders, config's writable
	Overlay  []string          `json:"overlay"`            // build caches: copy-on-write into the session folder
	Mask     []string          `json:"mask"`               // emptied: a folder gets an empty read-only tmpfs, a file /dev/null
	Shown    []string          `json:"shown,omitempty"`    // files of a masked folder bound back read-only into its tmpfs (sandbox.json mask_shown)
	Home     string            `json:"home,omitempty"`     // the home folder, shown only in part: a tmpfs over it
	Keep     []string          `json:"keep,omitempty"`     // what of Home is bound back, read-only (besides Write and Overlay)
	Empty    []string          `json:"empty"`              // an empty writable tmpfs each (/dev/shm, /run/user/<uid>)
	Protect  []string          `json:"protect"`            // bound read-only (git's code-running files)
	Fixed    []string          `json:"fixed,omitempty"`    // bound onto themselves, writable: names a command can neither move nor remove (the project's .git)
	Pin      []string          `json:"pin"`                // git's history (objects, refs, logs): add-only overlays (sandbox_world_git.go)
	GitLayer string            `json:"gitlayer,omitempty"` // the pins' upper layers: <session>/<gitlayer>/<i>/{u,w}
	Session  string            `json:"session"`            // the session folder on the host: tmp/, var-tmp/, cache/N/
	Net      bool              `json:"net"`                // a network namespace of its own (loopback only)
	Proxy    int               `json:"proxy,omitempty"`    // with Net: the loopback port forwarded to the proxy socket
	Socket   string            `json:"socket,omitempty"`   // the proxy's socket on the host
	NProc    uint64            `json:"nproc,omitempty"`    // RLIMIT_NPROC of every process in the world
	FSize    uint64            `json:"fsize,omitempty"`    // RLIMIT_FSIZE, bytes
	OOMAdj   int               `json:"oomadj,omitempty"`   // the oom_score_adj of every process in the world
	Tmpfs    uint64            `json:"tmpfs,omitempty"`    // the size of each Empty tmpfs, bytes
	NoProc   bool              `json:"noproc,omitempty"`   // keep the host's /proc (tests of the fallback)
	Dev      []string          `json:"dev,omitempty"`      // the world's own /dev: the host's device files bound into it (null, zero, …)
	DevLinks map[string]string `json:"devlinks,omitempty"` // and its links: name → target
	Version  string            `json:"version,omitempty"`  // lembas's, so a stale binary is noticed
}

// worldMsg is one message on the control socket, either way.
type worldMsg struct {
	Op     string         `json:"op"` // run, signal; started, error, exit
	ID     uint64         `json:"id"`
	Path   string         `json:"path,omitempty"`
	Argv   []string       `json:"argv,omitempty"`
	Env    []string       `json:"env,omitempty"`
	Dir    string         `json:"dir,omitempty"`
	Policy *sandboxPolicy `json:"policy,omitempty"`
	Sig    int            `json:"sig,omitempty"`
	Pid    int            `json:"pid,omitempty"`
	Status int            `json:"status,omitempty"` // a wait status
	Error  string         `json:"error,omitempty"`
	Limits string         `json:"limits,omitempty"` // ready: how processes are bounded (pid_max, rlimit)
	Git    string         `json:"git,omitempty"`    // ready: how git's history is kept (overlay, pin)
	OOMAdj int            `json:"oomadj,omitempty"` // ready: the oom_score_adj its processes have (0: left as it was)
	Key    string         `json:"-"`                // run: the policy's number on this connection
}

// A run request is the one message on every command's path, and JSON cost
// the init more to read (its environment, its policy) than the fork that
// follows. It goes as a frame of length-prefixed fields instead — "run",
// the id, the policy's number, the policy's JSON the first time that
// number is used on the connection (else empty), the path, the folder,
// then argv and env, each a count and its strings — so a NUL or a colon
// in a field cannot shift the others. The init's other messages, rare,
// stay JSON.
const runFrameOp = "run"

//go:noinline
func appendField(b []byte, f string) []byte {
	b = strconv.AppendInt(b, int64(len(f)), 10)
	b = append(b, ':')
	return append(b, f...)
}

func encodeRun(m worldMsg, policy []byte) []byte {
	n := 64 + len(policy) + len(m.Path) + len(m.Dir)
	for _, l := range [][]string{m.Argv, m.Env} {
		for _, f := range l {
			n += len(f) + 8
		}
	}
	b := make([]byte, 0, n)
	for _, f := range []string{runFrameOp, strconv.FormatUint(m.ID, 10), m.Key, string(policy), m.Path, m.Dir} {
		b = appendField(b, f)
	}
	for _, l := range [][]string{m.Argv, m.Env} {
		b = appendField(b, strconv.Itoa(len(l)))
		for _, f := range l {
			b = appendField(b, f)
		}
	}
	return b
}

// decodeRun reads a frame encodeRun made; policy is the JSON when sent.
func decodeRun(b []byte) (m worldMsg, policy []byte, err error) {
	field := func() (string, error) {
		i := 0
		for i < len(b) && i < 10 && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == 0 || i >= len(b) || b[i] != ':' {
			return "", errorNew("a run frame's field has no length")
		}
		n, err := strconv.Atoi(string(b[:i]))
		if err != nil || n > len(b)-i-1 {
			return "", errorNew("a run frame's field runs past its end")
		}
		f := string(b[i+1 : i+1+n])
		b = b[i+1+n:]
		return f, nil
	}
	var head [6]string
	for i := range head {
		if head[i], err = field(); err != nil {
			return m, nil, err
		}
	}
	if head[0] != runFrameOp {
		return m, nil, errorNew("not a run frame")
	}
	if m.ID, err = strconv.ParseUint(head[1], 10, 64); err != nil {
		return m, nil, errorNew("a run frame's id is not a number")
	}
	m.Op, m.Key, m.Path, m.Dir = runFrameOp, head[2], head[4], head[5]
	if head[3] != "" {
		policy = []byte(head[3])
	}
	for _, l := range []*[]string{&m.Argv, &m.Env} {
		c, err := field()
		if err != nil {
			return m, nil, err
		}
		k, err := strconv.Atoi(c)
		if err != nil || k < 0 || k > len(b) {
			return m, nil, errorNew("a run frame's count is wrong")
		}
		*l = make([]string, 0, k)
		for ; k > 0; k-- {
			f, err := field()
			if err != nil {
				return m, nil, err
			}
			*l = append(*l, f)
		}
	}
	if len(b) != 0 {
		return m, nil, errorNew("a run frame has bytes past its end")
	}
	return m, policy, nil
}

// world is lembas's side of one session's world: the plan, and the running
// init's connection (started on first use, again after it went idle).
type world struct {
	mu      mutex
	plan    worldPlan
	cur     *worldConn
	next    uint64
	idle    *time.Timer
	idleFor time.Duration
	err     error  // set for good when it cannot start
	limits  string // how the init bounds processes: pid_max, rlimit
	gitHow  string // how git's history is kept: overlay, or pin where overlays fail
	oomAdj  int    // the oom_score_adj of its processes (0: /proc refused it)
	exeByFD bool   // an MCP server's world: the program is handed over open
	git     *gitKeep
	exe     string // the helper; "" is os.Executable (sandbox.helperExe)
	// stops: why the disk's watch killed the world, each time
	// (sandbox_world_disk_linux.go); stopUntold, one made while no
	// command ran, for the next. Under mu.
	stops      []string
	stopUntold string

	nullMu mutex
	null   [2]*os.File // devNull's
}

// worldConn is one running init.
type worldConn struct {
	uc     *net.UnixConn
	proc   *os.Process
	sendMu mutex
	waits  map[uint64]*worldProc // under world.mu
	pols   map[string]string     // a policy's JSON → its number on this connection, under sendMu
	// last and lastKey: the policy sent last and its number, under sendMu;
	// the next command's is nearly always the same, and comparing it
	// costs far less than the JSON that finds its number.
	last    *sandboxPolicy
	lastKey string
	gone    chan struct{} // closed when its reader ends
	// stopped: killed by the disk's watch (under world.mu); the commands
	// still waiting end as killed, not as a world that failed.
	stopped bool
}

func newWorld(plan worldPlan, idle time.Duration) *world {
	w := &world{plan: plan, idleFor: idle}
	if len(plan.Pin) > 0 && plan.GitLayer != "" {
		w.git = newGitKeep(filepath.Join(plan.Session, plan.GitLayer), plan.Pin)
	}
	return w
}

// newWorldOS makes the session's world and starts it once, so that a
// machine that refuses it is known before the first command runs. Where
// the namespaces are not yet known, the world's own start is their probe:
// it asks for everything the probe's helper does (a user and a mount
// namespace, mounts made private) and more, so a world that starts
// proves them, and one process start (a whole Go runtime's, 3-5 ms of
// CPU beside the first request) is saved. Only a world that fails runs
// the probe, for its answer and reason, as before.
func newWorldOS(s *sandbox, dir, sock string, idle time.Duration) (worldRunner, error) {
	var w *world
	start := func() error {
		plan := worldPlanFor(s, dir)
		plan.Socket, plan.GitLayer = sock, "git"
		w = newWorld(plan, idle)
		w.exe = s.helperExe
		w.mu.Lock()
		defer w.mu.Unlock()
		_, err := w.connLocked()
		return err
	}
	tried, err := false, error(nil)
	s.nsOnce.Do(func() { // the Once of namespaces(): nothing under it asks namespaces()
		if s.probed().Kind != "landlock" {
			return
		}
		t0 := time.Now()
		if tried, err = true, start(); err == nil {
			s.ns = true
			traceSince(t0, "sandbox namespaces: the world started")
			return
		}
		s.ns, s.nsWhy = sandboxNamespacesOS()
		traceSince(t0, "sandbox namespaces probed")
	})
	if !s.ns {
		return nil, errorf("%s", s.nsWhy)
	}
	if !tried {
		err = start()
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (w *world) protected() []string { return w.plan.Protect }

func (w *world) privateTmp() bool { return true } // the session's own, for commands and MCP servers alike

// gitKept is how git's history is kept: overlay (add-only), or pin.
func (w *world) gitKept() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gitHow
}

// newServerWorldOS is a world of its own for one stdio MCP server, laid
// out as the session's — the same private /tmp and /var/tmp (the session's
// folders, not the host's), git's history add-only in layers of its own —
// so that a server cannot reach what a command cannot, and a command
// cannot reach into the server's processes.
func newServerWorldOS(s *sandbox, dir, sock string, names []string) (worldRunner, error) {
	if ok, why := s.namespaces(); !ok {
		return nil, errorf("%s", why)
	}
	plan := worldPlanFor(s, dir)
	if plan.Home != "" {
		plan.Keep = append(plan.Keep, homeNamed(plan.Home, names)...)
	}
	plan.Socket = sock
	plan.GitLayer = "git-server-" + strconv.FormatUint(serverWorlds.Add(1), 10)
	w := newWorld(plan, 0)
	w.exeByFD = true
	w.exe = s.helperExe
	return w, nil
}

// serverWorlds numbers the MCP servers' worlds, for their git layers.
var serverWorlds atomic.Uint64

// processBound says whether the world's processes are bounded for this
// person: by pid_max, or by RLIMIT_NPROC when not root outside.
func (w *world) processBound() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limits == "pid_max" || w.limits == "rlimit" && os.Getuid() != 0
}

// connLocked is the running init, started if need be; w.mu is held.
func (w *world) connLocked() (*worldConn, error) {
	if w.cur != nil {
		return w.cur, nil
	}
	if w.err != nil {
		return nil, w.err
	}
	exe, err := os.Executable()
	if w.exe != "" {
		exe, err = w.exe, nil
	}
	if err != nil {
		return nil, errorf("finding lembas's own executable: %v", err)
	}
	if w.git != nil {
		if err := w.git.reset(); err != nil {
			return nil, errorf("making the world's git layers: %v", err)
		}
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, errorf("making the world's socket: %v", err)
	}
	js, _ := json.Marshal(w.plan)
	theirs := os.NewFile(uintptr(pair[1]), "world")
	cmd := exec.Command(exe, worldHelperArg, string(js))
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	namespaceAttr(a)
	a.Cloneflags |= unix.CLONE_NEWPID
	if w.plan.Net {
		a.Cloneflags |= unix.CLONE_NEWNET
		a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN)
	}
	cmd.SysProcAttr = a
	// Pdeathsig follows the thread that started the child: start it from a
	// thread that stays for as long as the world lives.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		started <- nil
		cmd.Wait()
	}()
	err = <-started
	theirs.Close()
	if err != nil {
		unix.Close(pair[0])
		return nil, errorf("starting the world: %v", err)
	}
	// The init says "ready" (or why not) once its file system is laid out.
	buf := make([]byte, 64<<10)
	n, _, _, _, rerr := unix.Recvmsg(pair[0], buf, nil, 0)
	var m worldMsg
	if rerr != nil || n == 0 || json.Unmarshal(buf[:n], &m) != nil || m.Op != "ready" {
		cmd.Process.Kill()
		unix.Close(pair[0])
		why := m.Error
		if why == "" {
			why = "the world ended while it was being set up"
		}
		w.err = errorf("%s", why)
		return nil, w.err
	}
	w.limits, w.gitHow, w.oomAdj = m.Limits, m.Git, m.OOMAdj
	f := os.NewFile(uintptr(pair[0]), "world")
	// Through the netpoller: no thread sits blocked on it, and the command
	// waiting for its end runs on the thread that read it (a socket read by
	// a blocking thread costs a thread's wake more on every command).
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		cmd.Process.Kill()
		return nil, errorf("reading the world's socket: %v", err)
	}
	c := &worldConn{uc: fc.(*net.UnixConn), proc: cmd.Process, waits: map[uint64]*worldProc{}, pols: map[string]string{}, gone: make(chan struct{})}
	w.cur = c
	go w.read(c)
	if w.diskWatched() {
		go w.watchDisk(c, diskWatchFor(w.plan)) // the free space now, before any command writes
	}
	return c, nil
}

// read delivers the init's messages to the commands waiting for them; when
// the world ends, every command still waiting is told so.
func (w *world) read(c *worldConn) {
	buf := make([]byte, 64<<10)
	for {
		n, _, _, _, err := c.uc.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			break
		}
		var m worldMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		w.mu.Lock()
		p := c.waits[m.ID]
		if m.Op != "started" && p != nil {
			delete(c.waits, m.ID)
		}
		w.mu.Unlock()
		if p != nil {
			p.status <- m
		}
	}
	w.mu.Lock()
	if w.cur == c {
		w.cur = nil
	}
	waits := c.waits
	c.waits = map[uint64]*worldProc{}
	stopped := c.stopped
	w.mu.Unlock()
	for _, p := range waits {
		if stopped {
			p.status <- worldMsg{Op: "exit", Status: int(unix.SIGKILL)} // a wait status: killed
			continue
		}
		p.status <- worldMsg{Op: "error", Error: "the sandbox's world ended"}
	}
	c.proc.Kill()
	c.uc.Close()
	if stopped {
		w.git.sync() // what its commands added, before a new world's layers replace these
	}
	close(c.gone)
}

func (c *worldConn) send(m worldMsg, fds []int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	var js []byte
	var err error
	if m.Op == runFrameOp && m.Policy != nil {
		var pj []byte
		if c.last != nil && samePolicy(*c.last, *m.Policy) {
			m.Key = c.lastKey
		} else {
			pj, _ = json.Marshal(m.Policy)
			key, seen := c.pols[string(pj)]
			if !seen {
				key = strconv.Itoa(len(c.pols) + 1)
				c.pols[string(pj)] = key
			} else {
				pj = nil
			}
			m.Key = key
			p := *m.Policy // its own slices: the caller's may be reused
			p.Write, p.Devices, p.Protect, p.Families, p.Keep = slices.Clone(p.Write), slices.Clone(p.Devices), slices.Clone(p.Protect), slices.Clone(p.Families), slices.Clone(p.Keep)
			c.last, c.lastKey = &p, key
		}
		js = encodeRun(m, pj)
	} else if js, err = json.Marshal(m); err != nil {
		return err
	}
	_, _, err = c.uc.WriteMsgUnix(js, oob, nil)
	return err
}

// close ends the world (its processes with it) and waits for it.
func (w *world) close() {
	w.mu.Lock()
	c := w.cur
	w.cur = nil
	if w.idle != nil {
		w.idle.Stop()
	}
	w.mu.Unlock()
	if c == nil {
		w.git.stop()
		w.git.closeRoots()
		return
	}
	c.uc.CloseWrite()
	c.proc.Kill()
	<-c.gone
	w.git.sync()
	w.git.stop()
	w.git.closeRoots()
}

// idleCheck lets an unused world go; the next command starts it again (its
// folders stay).
func (w *world) idleCheck() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.cur; c != nil && len(c.waits) == 0 {
		w.cur = nil
		c.uc.CloseWrite() // the init reads its end and leaves, and its world with it
	}
}

func (w *world) armIdleLocked() {
	if w.cur == nil || len(w.cur.waits) > 0 || w.idleFor <= 0 {
		return
	}
	if w.idle == nil {
		w.idle = time.AfterFunc(w.idleFor, w.idleCheck)
	} else {
		w.idle.Reset(w.idleFor)
	}
}

// worldProc is one command running in the world.
type worldProc struct {
	w      *world
	c      *worldConn
	id     uint64
	pidIn  int
	status chan worldMsg // the started (or error) message, then the exit
	copies sync.WaitGroup
	closes []*os.File // our ends of the output pipes
	delay  time.Duration
}

// worldExit is a command's end when it did not exit 0: its wait status.
type worldExit struct{ ws unix.WaitStatus }

func (e *worldExit) Error() string {
	if e.ws.Signaled() {
		return "signal: " + e.ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(e.ws.ExitStatus())
}

// code is the exit code as exec.ExitError gives it (-1 for a signal).
func (e *worldExit) code() int {
	if e.ws.Exited() {
		return e.ws.ExitStatus()
	}
	return -1
}

// start runs cmd (built by shellCommand, its stdio set) in the world under
// pol.
func (w *world) start(cmd *exec.Cmd, pol sandboxPolicy) (procHandle, error) {
	p := &worldProc{w: w, status: make(chan worldMsg, 2), delay: cmd.WaitDelay}
	var fds [3]int
	var mine []int // the child's ends, closed here once sent
	fail := func(err error) (procHandle, error) {
		closeAll(mine)
		for _, f := range p.closes {
			f.Close()
		}
		p.copies.Wait()
		return nil, err
	}
	// Stdin: nil is /dev/null, as exec.Cmd gives it.
	switch in := cmd.Stdin.(type) {
	case nil:
		f, err := w.devNull(0)
		if err != nil {
			return fail(err)
		}
		fds[0] = int(f.Fd())
	case *os.File:
		fds[0] = int(in.Fd())
	default:
		return fail(errorNew("the world takes a file or nothing as stdin"))
	}
	for i, o := range []io.Writer{cmd.Stdout, cmd.Stderr} {
		if i == 1 && cmd.Stderr == cmd.Stdout {
			fds[2] = fds[1]
			break
		}
		switch o := o.(type) {
		case nil:
			f, err := w.devNull(1)
			if err != nil {
				return fail(err)
			}
			fds[i+1] = int(f.Fd())
		case *os.File:
			fds[i+1] = int(o.Fd())
		default:
			// The write end is only handed over and closed: made by hand,
			// it stays blocking (the child's) and never joins the netpoller.
			var pp [2]int
			if err := unix.Pipe2(pp[:], unix.O_CLOEXEC); err != nil {
				return fail(err)
			}
			unix.SetNonblock(pp[0], true)
			r := os.NewFile(uintptr(pp[0]), "|0")
			fds[i+1], mine = pp[1], append(mine, pp[1])
			p.closes = append(p.closes, r)
			p.copies.Add(1)
			go func() {
				defer p.copies.Done()
				io.Copy(o, r)
			}()
		}
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	dir := cmd.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	w.mu.Lock()
	for w.cur != nil && w.cur.stopped {
		// Killed by the disk's watch, and not yet gone: the command
		// waits for its end (moments), then starts the next world.
		gone := w.cur.gone
		w.mu.Unlock()
		<-gone
		w.mu.Lock()
	}
	c, err := w.connLocked()
	if err != nil {
		w.mu.Unlock()
		return fail(err)
	}
	if w.idle != nil {
		w.idle.Stop()
	}
	w.next++
	p.id, p.c = w.next, c
	w.git.before(len(c.waits) == 0)
	c.waits[p.id] = p
	w.mu.Unlock()
	m := worldMsg{Op: runFrameOp, ID: p.id, Path: cmd.Path, Argv: cmd.Args, Env: env, Dir: dir, Policy: &pol}
	send := fds[:]
	if w.exeByFD {
		// The program the person approved runs even from a folder the
		// world does not show (the host's /tmp): handed over open, and
		// executed through its descriptor (fd 3 in the child).
		exe, err := unix.Open(cmd.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			w.forget(p)
			return fail(&os.PathError{Op: "open", Path: cmd.Path, Err: err})
		}
		mine = append(mine, exe)
		send = append(send, exe)
		m.Path = "/proc/self/fd/3"
	}
	err = c.send(m, send)
	runtime.KeepAlive(cmd) // its files, whose numbers were sent
	closeAll(mine)
	mine = nil
	if err != nil {
		w.forget(p)
		return fail(errorf("handing the command to the world: %v", err))
	}
	// The init starts commands in the order they come, so a signal sent
	// after this finds the command; whether it started (and its pid) comes
	// with its end, which saves a round trip on every command.
	return p, nil
}

// devNull is /dev/null open for reading (0) or writing (1), opened once
// for every command that is handed nothing there (each gets its own copy
// of the descriptor when it is sent). They stay open while the world
// object does: closing them under a command being handed over could send
// it a number reused for something else.
func (w *world) devNull(write int) (*os.File, error) {
	w.nullMu.Lock()
	defer w.nullMu.Unlock()
	if w.null[write] == nil {
		f, err := os.OpenFile(os.DevNull, []int{os.O_RDONLY, os.O_WRONLY}[write], 0)
		if err != nil {
			return nil, err
		}
		w.null[write] = f
	}
	return w.null[write], nil
}

func (w *world) forget(p *worldProc) {
	w.mu.Lock()
	delete(p.c.waits, p.id)
	w.armIdleLocked()
	w.mu.Unlock()
}

// wait waits for the command's end and its output (at most its WaitDelay
// past the end, for what a child left running holds open).
func (p *worldProc) wait() error {
	m := <-p.status
	if m.Op == "started" { // an older init's
		m = <-p.status
	}
	p.pidIn = m.Pid
	p.w.git.sync() // what the command added to git's history, back into the repository
	p.w.mu.Lock()
	p.w.armIdleLocked()
	p.w.mu.Unlock()
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	if p.delay > 0 {
		t := time.NewTimer(p.delay)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	} else {
		<-done
	}
	for _, f := range p.closes {
		f.Close()
	}
	<-done
	if m.Op != "exit" {
		return errorf("%s", m.Error)
	}
	if ws := unix.WaitStatus(m.Status); ws.Exited() && ws.ExitStatus() == 0 {
		return nil
	}
	return &worldExit{unix.WaitStatus(m.Status)}
}

func (p *worldProc) signal(sig syscall.Signal) {
	p.c.send(worldMsg{Op: "signal", ID: p.id, Sig: int(sig)}, nil)
}

func (p *worldProc) terminate() { p.signal(syscall.SIGTERM) }
func (p *worldProc) kill()      { p.signal(syscall.SIGKILL) }
func (p *worldProc) pid() int   { return p.pidIn }

// ---- inside the world ----

// worldInit is the hidden subcommand: lembas __world PLAN, fd 3 the socket.
func worldInit(args []string) int {
	const sock = 3
	say := func(m worldMsg) {
		js, _ := json.Marshal(m)
		unix.Sendmsg(sock, js, nil, nil, 0)
	}
	if len(args) != 1 {
		say(worldMsg{Op: "error", Error: "usage: lembas " + worldHelperArg + " PLAN"})
		return theSandboxSpec().ExitSetup
	}
	var plan worldPlan
	if err := json.Unmarshal([]byte(args[0]), &plan); err != nil {
		say(worldMsg{Op: "error", Error: "reading the world's plan: " + err.Error()})
		return theSandboxSpec().ExitSetup
	}
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	closeInherited() // the socket (fd 3) and whatever lembas inherited: no command's
	standFirm()
	sessFD, err := unix.Open(plan.Session, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	gitHow := ""
	if err == nil {
		gitHow, err = plan.layout()
	}
	if err == nil && plan.Net {
		err = loopbackUp()
	}
	limits, oomAdj := "", 0
	if err == nil {
		limits, oomAdj, err = plan.limits()
	}
	if err != nil {
		say(worldMsg{Op: "error", Error: "setting up the sandbox's world: " + err.Error()})
		return theSandboxSpec().ExitSetup
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		say(worldMsg{Op: "error", Error: "setting up the sandbox's world: " + err.Error()})
		return theSandboxSpec().ExitSetup
	}
	in := &initState{pols: map[string]*sandboxPolicy{}, sock: sock, wake: wake, kick: make(chan struct{}, 1), procs: map[int]uint64{}, ids: map[uint64]int{}, rules: map[string]int{}}
	go in.reap()
	if plan.Net && plan.Proxy > 0 && plan.Socket != "" {
		go forwardProxy(plan.Proxy, fmt.Sprintf("/proc/self/fd/%d/%s", sessFD, filepath.Base(plan.Socket)), in.peerOf)
	}
	say(worldMsg{Op: "ready", Limits: limits, Git: gitHow, OOMAdj: oomAdj})
	// The socket is read by the thread made ready for the next command
	// when there is one, so that a command for its policy is forked by the
	// thread the kernel woke, not handed to it (a thread's wake less on
	// every command); else here, waiting for the socket or for a thread to
	// become ready (wake).
	for {
		if t := in.readyWarm(); t != nil {
			t.turn <- struct{}{}
			r := <-t.back
			if r.gone {
				return 0 // lembas is gone: pid 1 ends, and the kernel ends the rest
			}
			if r.ran {
				continue
			}
			in.handle(r.m, r.fds)
			continue
		}
		pfd := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return 0
		}
		if pfd[1].Revents != 0 {
			var b [8]byte
			unix.Read(wake, b[:])
		}
		if pfd[0].Revents == 0 {
			continue
		}
		m, fds, gone := in.receive()
		if gone {
			return 0
		}
		in.handle(m, fds)
	}
}

// standFirm keeps the init from ending on a signal a command sends it
// (kill 1, pkill lembas): the kernel drops only those pid 1 leaves at
// their default, and Go's runtime catches most of them to end the program
// — and with pid 1 the whole world, every process of the session. Caught
// here and dropped, they stay caught, not ignored, so the commands the
// init forks start with every signal at its default.
func standFirm() {
	sigs := []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGSYS,
		syscall.SIGTRAP, syscall.SIGILL, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSTKFLT, syscall.SIGPIPE,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGPROF}
	c := make(chan os.Signal, 16)
	signal.Notify(c, sigs...)
	go func() {
		for range c {
		}
	}()
}

// receive reads one message from lembas: its op "" when it was unreadable
// (and said so where it had an id); gone when lembas is.
func (in *initState) receive() (m worldMsg, fds []int, gone bool) {
	if in.buf == nil { // one reader at a time (the main loop, or the thread it gave the turn)
		in.buf, in.oob = make([]byte, 1<<20), make([]byte, unix.CmsgSpace(4*4))
	}
	buf, oob := in.buf, in.oob
	n, oobn, _, _, err := unix.Recvmsg(in.sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	for err == unix.EINTR {
		n, oobn, _, _, err = unix.Recvmsg(in.sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	}
	if err != nil || n == 0 {
		return m, nil, true
	}
	if oobn > 0 {
		if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, c := range cms {
				if f, err := unix.ParseUnixRights(&c); err == nil {
					fds = append(fds, f...)
				}
			}
		}
	}
	if bytes.HasPrefix(buf[:n], []byte("3:"+runFrameOp)) {
		var pj []byte
		if m, pj, err = decodeRun(buf[:n]); err == nil {
			m.Policy, err = in.policy(m.Key, pj)
		}
		if err != nil {
			closeAll(fds)
			in.say(worldMsg{Op: "error", ID: m.ID, Error: err.Error()})
			return worldMsg{}, nil, false
		}
	} else if err := json.Unmarshal(buf[:n], &m); err != nil || m.Op == runFrameOp {
		closeAll(fds) // a run request comes as a frame, never as JSON
		return worldMsg{}, nil, false
	}
	return m, fds, false
}

// handle does what one message asks.
func (in *initState) handle(m worldMsg, fds []int) {
	switch m.Op {
	case runFrameOp:
		in.run(m, fds)
	case "signal":
		closeAll(fds)
		in.signal(m.ID, syscall.Signal(m.Sig))
	default:
		closeAll(fds)
	}
}

//go:noinline
func closeAll(fds []int) {
	for _, f := range fds {
		unix.Close(f)
	}
}

// initState is the init's record of the commands it started.
type initState struct {
	sock    int
	wake    int // an eventfd: a thread became ready to read the socket
	buf     []byte
	oob     []byte
	kick    chan struct{}
	rulesM  mutex
	rules   map[string]int // a policy's Landlock ruleset, by its number
	warmM   mutex
	warm    *warmThread    // the next command's thread, made ready
	last    *sandboxPolicy // the last command's policy: the next one's, most likely
	lastKey string         // its number
	sendM   mutex
	mu      mutex
	procs   map[int]uint64            // pid → id
	pols    map[string]*sandboxPolicy // the connection's policies by number
	ids     map[uint64]int            // id → pid
}

func (in *initState) say(m worldMsg) {
	js, _ := json.Marshal(m)
	in.sendM.Lock()
	unix.Sendmsg(in.sock, js, nil, nil, 0)
	in.sendM.Unlock()
}

// policy is the run request's policy: read from its JSON the first time
// lembas uses its number, and known by the number after.
func (in *initState) policy(key string, js []byte) (*sandboxPolicy, error) {
	if js == nil {
		if p := in.pols[key]; p != nil {
			return p, nil
		}
		return nil, errorf("a run request names policy %q, never sent", key)
	}
	p := &sandboxPolicy{}
	if err := json.Unmarshal(js, p); err != nil {
		return nil, errorf("reading a run request's policy: %v", err)
	}
	in.pols[key] = p
	return p, nil
}

// runRequestWrong says what a run request lacks: "" when it can run.
func runRequestWrong(m worldMsg, fds []int) string {
	if len(fds) < 3 || len(fds) > 4 || m.Policy == nil || len(m.Argv) == 0 {
		return "a run request needs a policy, argv and three files"
	}
	return ""
}

// run starts one command from a thread of its own, restricted for good and
// then thrown away, so no other goroutine of the init runs restricted. The
// thread for the next command is made ready (caps dropped, Landlock and
// seccomp on) when a command ends — not while it runs, where it would take
// a core from it — so the next command usually waits for neither.
func (in *initState) run(m worldMsg, fds []int) {
	if why := runRequestWrong(m, fds); why != "" {
		closeAll(fds)
		in.say(worldMsg{Op: "error", ID: m.ID, Error: why})
		return
	}
	in.warmM.Lock()
	t := in.warm
	in.warm, in.last, in.lastKey = nil, m.Policy, m.Key
	in.warmM.Unlock()
	if t == nil || t.key != m.Key {
		if t != nil {
			close(t.reqs) // its thread ends unused
		}
		t = in.prepare(m.Key, *m.Policy)
	}
	done := make(chan struct{})
	t.reqs <- warmReq{m: m, fds: fds, done: done}
	<-done
}

// warmUp makes the next command's thread ready for the last policy, unless
// one is.
func (in *initState) warmUp() {
	in.warmM.Lock()
	defer in.warmM.Unlock()
	if in.warm == nil && in.last != nil {
		in.warm = in.prepare(in.lastKey, *in.last)
	}
}

// warmThread is a thread restricted for a policy, waiting for a command:
// handed one (reqs), or given the socket to read the next message itself
// (turn), whose outcome it hands back.
type warmThread struct {
	key   string
	reqs  chan warmReq
	turn  chan struct{}
	back  chan turnResult
	ready atomic.Bool // restricted, and able to take a turn
}

// turnResult is what a warm thread's turn at the socket came to: a command
// it forked (ran), lembas gone, or a message for the init to handle.
type turnResult struct {
	ran, gone bool
	m         worldMsg
	fds       []int
}

// readyWarm is the warm thread, when it is ready to take a turn.
func (in *initState) readyWarm() *warmThread {
	in.warmM.Lock()
	defer in.warmM.Unlock()
	if t := in.warm; t != nil && t.ready.Load() {
		return t
	}
	return nil
}

// restrict restricts the calling thread for the policy numbered key on
// this connection (no_new_privs, Landlock, seccomp), with the policy's
// Landlock ruleset made on its first command and kept: each command's
// thread is still a Landlock domain of its own, but the ruleset is not
// made again, an open, a stat and a rule for every writable root and
// device. Its rules hold the paths as they were then, and those are the
// world's mount points (the roots, the session's temp folders, the
// caches, /dev's files), which a command can neither remove nor replace.
// The lock is held through the restriction, so no ruleset is closed under
// a thread about to use it.
func (in *initState) restrict(key string, pol sandboxPolicy) error {
	in.rulesM.Lock()
	defer in.rulesM.Unlock()
	fd, ok := in.rules[key]
	if !ok {
		var err error
		if fd, err = landlockRuleset(pol); err != nil {
			return err
		}
		if len(in.rules) >= worldRulesetsKept { // past the bound, all go: the next commands make theirs again
			for k, old := range in.rules {
				unix.Close(old)
				delete(in.rules, k)
			}
		}
		in.rules[key] = fd
	}
	return restrictThreadWith(pol, fd)
}

// worldRulesetsKept bounds the rulesets the init keeps: a connection's
// policies are a handful (a mode or two, a network allowed or not), and
// each kept one is an open descriptor.
const worldRulesetsKept = 16

type warmReq struct {
	m    worldMsg
	fds  []int
	done chan struct{}
}

func (in *initState) prepare(key string, pol sandboxPolicy) *warmThread {
	t := &warmThread{key: key, reqs: make(chan warmReq, 1), turn: make(chan struct{}), back: make(chan turnResult)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		err := dropCaps()
		if err == nil {
			err = in.restrict(key, pol)
		}
		if err == nil {
			t.ready.Store(true)
			one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
			unix.Write(in.wake, one)
		}
		for {
			select {
			case req, ok := <-t.reqs:
				if !ok {
					return
				}
				defer close(req.done)
				t.fork(in, req.m, req.fds, err)
				return
			case <-t.turn:
				m, fds, gone := in.receive()
				if gone || m.Op != runFrameOp || m.Key != t.key || !in.takeWarm(t) {
					t.back <- turnResult{gone: gone, m: m, fds: fds}
					continue
				}
				t.fork(in, m, fds, nil)
				t.back <- turnResult{ran: true}
				return
			}
		}
	}()
	return t
}

// takeWarm takes t as the thread of the command it read (so that no one
// else hands it one), and notes its policy as the last; false when t is
// no longer the warm thread.
func (in *initState) takeWarm(t *warmThread) bool {
	in.warmM.Lock()
	defer in.warmM.Unlock()
	if in.warm != t {
		return false
	}
	in.warm = nil
	return true
}

// fork starts the command m on the calling thread, restricted for its
// policy (err: why it could not be), and records it.
func (t *warmThread) fork(in *initState, m worldMsg, fds []int, err error) {
	defer closeAll(fds)
	if err != nil {
		in.say(worldMsg{Op: "error", ID: m.ID, Error: sandboxText("setup_failed", "error", err)})
		return
	}
	if why := runRequestWrong(m, fds); why != "" {
		in.say(worldMsg{Op: "error", ID: m.ID, Error: why})
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	files := make([]uintptr, len(fds))
	for i, f := range fds {
		files[i] = uintptr(f)
	}
	attr := &syscall.ProcAttr{Dir: m.Dir, Env: m.Env, Files: files, Sys: &syscall.SysProcAttr{Setsid: true}}
	pid, err := syscall.ForkExec(m.Path, m.Argv, attr)
	// At the process limit, the last command's processes may still be
	// on their way out (killed, not yet reaped): try again for a while
	// before saying so, rather than fail the next command of a person
	// whose fork loop was just ended.
	for waited := 0; err == syscall.EAGAIN && waited < theSandboxSpec().Limits.SpawnRetryMS; waited += 20 {
		in.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		in.mu.Lock()
		pid, err = syscall.ForkExec(m.Path, m.Argv, attr)
	}
	if err != nil {
		in.say(worldMsg{Op: "error", ID: m.ID, Error: fmt.Sprintf("exec: %q: %v", m.Path, err)})
		return
	}
	select {
	case in.kick <- struct{}{}: // the reaper may be waiting for a child to exist
	default:
	}
	// Recorded before the reaper can look: it reaps without the lock,
	// but looks the pid up with it. The pid goes with the exit: one
	// message a command, not two.
	in.procs[pid], in.ids[m.ID] = m.ID, pid
}

// signal sends sig to a command's process group (its session: the
// command is a session leader).
func (in *initState) signal(id uint64, sig syscall.Signal) {
	in.mu.Lock()
	pid, ok := in.ids[id]
	in.mu.Unlock()
	if ok {
		syscall.Kill(-pid, sig)
	}
}

// reap waits for every child — the commands and whatever they left to pid
// 1 — blocked in wait4 on a thread of its own (the kernel wakes it as a
// child ends, with no signal to pass through the runtime); with no child
// it waits for run to start one.
func (in *initState) reap() {
	for {
		{
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, 0, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				<-in.kick
				continue
			}
			in.mu.Lock()
			id, ok := in.procs[pid]
			if ok { // else an orphan the world inherited
				delete(in.procs, pid)
				delete(in.ids, id)
			}
			in.mu.Unlock()
			if ok {
				in.say(worldMsg{Op: "exit", ID: id, Status: int(ws), Pid: pid})
				in.warmUp()
			}
		}
	}
}

// loopbackUp brings up lo in the world's own network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errorf("bringing up loopback: %v", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return errorf("reading loopback's flags: %v", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return errorf("bringing up loopback: %v", err)
	}
	return nil
}

// forwardProxy listens on the world's loopback and carries each connection
// to the proxy lembas runs outside, through its Unix socket, after a line
// naming the command that connected (who; sandbox_world_peer_linux.go).
func forwardProxy(port int, sock string, who func(net.Conn) (uint64, bool)) {
	var ls []net.Listener
	for _, a := range []string{"127.0.0.1", "[::1]"} {
		if l, err := net.Listen("tcp", a+":"+strconv.Itoa(port)); err == nil {
			ls = append(ls, l)
		}
	}
	for _, l := range ls {
		go func(l net.Listener) {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					u, err := net.Dial("unix", sock)
					if err != nil {
						return
					}
					defer u.Close()
					if _, err := io.WriteString(u, peerLine(who(c))); err != nil {
						return
					}
					go func() { io.Copy(u, c); u.(*net.UnixConn).CloseWrite() }()
					io.Copy(c, u)
				}()
			}
		}(l)
	}
	select {}
}

// worldPlanFor lays out a session's world from its widest policy (a
// command in plan mode is narrowed by Landlock, per command).
func worldPlanFor(s *sandbox, session string) worldPlan {
	sp := theSandboxSpec()
	parts := s.partsCached("auto") // what the session's first command reads too: worked out once
	plan := worldPlan{Session: session, Net: parts.Network != "on", NProc: sp.Limits.Processes, FSize: sp.Limits.FileBytes, OOMAdj: sp.Limits.OOMScoreAdj, Tmpfs: sp.Limits.TmpfsBytes, Version: version}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	for _, p := range parts.Write {
		if exists(p) {
			plan.Write = append(plan.Write, evalExisting(p))
		}
	}
	for _, c := range parts.Caches {
		if exists(c) && !underAnyRoot(evalExisting(c), []string{"/tmp", "/var/tmp"}) {
			plan.Overlay = append(plan.Overlay, evalExisting(c))
		}
	}
	plan.Overlay = outermost(uniq(plan.Overlay))
	for _, p := range parts.Protect {
		if exists(p) {
			plan.Protect = append(plan.Protect, p)
		}
	}
	if dot := filepath.Join(s.root, ".git"); exists(dot) {
		plan.Fixed = append(plan.Fixed, dot)
	}
	for _, p := range parts.Pin {
		if !exists(p) && exists(filepath.Dir(p)) {
			os.MkdirAll(p, 0o755) // logs/ before the first commit: git would make it, outside the layer
		}
		if exists(p) {
			plan.Pin = append(plan.Pin, p)
		}
	}
	for _, m := range parts.Mask {
		if exists(m) {
			plan.Mask = append(plan.Mask, m)
		}
	}
	for _, e := range sp.MaskShown {
		pat, ok := expandRoot(e, os.Getenv, homeDir())
		if !ok {
			continue
		}
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			// A regular file of its own, directly in a masked folder: a
			// link could lead to the key beside it.
			if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() && slices.Contains(plan.Mask, filepath.Dir(f)) {
				plan.Shown = append(plan.Shown, f)
			}
		}
	}
	if parts.Home != "" {
		plan.Home = parts.Home
		for _, k := range parts.Keep {
			if exists(k) {
				plan.Keep = append(plan.Keep, k)
			}
		}
		plan.Keep = append(plan.Keep, plan.Shown...) // in view of the hidden home, for the mask to show again
	}
	// The host's temp folder when it is not /tmp (TMPDIR in home): every
	// lembas's session folder is there — other sessions' temp files, git
	// layers, proxy sockets — and the world has a /tmp of its own. Emptied,
	// unless it holds the project or a writable root.
	if t := evalExisting(os.TempDir()); !underAnyRoot(t, []string{"/tmp", "/var/tmp"}) && t != "/" && t != evalExisting(homeDir()) && !underAnyRoot(t, plan.Write) {
		holds := false
		for _, w := range plan.Write {
			holds = holds || within(t, w)
		}
		if !holds {
			plan.Mask = append(plan.Mask, t)
		}
	}
	plan.Empty = []string{"/dev/shm", "/run/user/" + strconv.Itoa(os.Getuid())}
	plan.Dev, plan.DevLinks = sp.WorldDev.Bind, sp.WorldDev.Links
	if parts.Network == "proxy" {
		plan.Proxy = sp.Proxy.Port
	}
	return plan
}

// outermost drops each path inside another of paths: one overlay over
// ~/.cache already holds ~/.cache/go-build's writes (an overlay on an
// overlay would stack their layers for nothing).
func outermost(paths []string) []string {
	var out []string
	for _, p := range paths {
		inner := false
		for _, q := range paths {
			inner = inner || q != p && within(q, p)
		}
		if !inner {
			out = append(out, p)
		}
	}
	return out
}

// samePolicy says whether a and b marshal alike (Exe is not sent).
func samePolicy(a, b sandboxPolicy) bool {
	return a.Network == b.Network && a.Signals == b.Signals && a.NS == b.NS && a.NoUnix == b.NoUnix &&
		a.NoMeta == b.NoMeta && a.ABI == b.ABI && a.Home == b.Home &&
		slices.Equal(a.Write, b.Write) && slices.Equal(a.Devices, b.Devices) && slices.Equal(a.Protect, b.Protect) &&
		slices.Equal(a.Families, b.Families) && slices.Equal(a.Keep, b.Keep)
}

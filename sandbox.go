package main

// The OS sandbox every bash call runs in. The approval says whether a
// command runs; the sandbox bounds what it can do, whatever its spelling:
// it may read everywhere but the home folder's hidden part, and write
// only under the writable roots (the project, the temp folders, a few
// devices, the build caches), with the git folder's hooks and config
// kept as they were.
//
//	toolBash ─ sandboxFor ─┬─ refused (sandbox.required, no approval for unsandboxed)
//	                       └─ sandboxRun: policy in ctx ─ runShell ─ sandboxed(ctx, cmd)
//	                                                        └─ sandboxCommand (per OS) rewrites
//	                                                           the command: linux re-executes
//	                                                           lembas as a helper, darwin runs
//	                                                           sandbox-exec, others run it bare
//	               finish: the git folder compared and put back, a denial explained
//
// Beside this file: sandbox_home.go (what the world shows of the home
// folder), sandbox_agent.go (the agent and editor configuration),
// sandbox_snapshot.go (protected paths compared and put back),
// sandbox_check.go (lembas sandbox check), sandbox_env.go (the
// environment), sandbox_proxy.go and sandbox_netask.go (the network).
// The per-OS files give sandboxProbeOS, sandboxCommand and (on Linux) the
// helper behind the hidden subcommand sandboxHelperArg. Texts and the
// default lists are harness/sandbox.json.
//
// A worker (floor 3): config.yaml's sandbox section is config_sandbox.go
// (floor 2); it calls the ground.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sandboxHelperArg is the hidden subcommand the Linux helper answers to.
const sandboxHelperArg = "__sandbox"

// sandboxSpec is harness/sandbox.json.
type sandboxSpec struct {
	About    string   `json:"about"`
	Network  string   `json:"network"` // on, off, proxy
	Required bool     `json:"required"`
	Caches   []string `json:"caches"`
	Overlays []string `json:"overlays"` // caches too, but not writable roots to the floor
	Temp     []string `json:"temp"`
	Devices  []string `json:"devices"`
	// WorldDev is the world's own /dev: the host's device files it binds
	// (bind), and its links (name → target); pts is a devpts of the
	// world's own and shm an empty tmpfs.
	WorldDev struct {
		Bind  []string          `json:"bind"`
		Links map[string]string `json:"links"`
	} `json:"world_dev"`
	Protect   []string `json:"protect"`
	Pin       []string `json:"pin"`
	Mask      []string `json:"mask"`
	MaskShown []string `json:"mask_shown"` // files a masked folder still shows (public keys)
	// Home is what of the home folder the world shows besides the writable
	// roots and the caches: keep, and config's sandbox.readable.
	Home struct {
		About     string   `json:"about"`
		Keep      []string `json:"keep"`
		Missing   []string `json:"missing"`    // a failed command's line saying a path is not there (lower case)
		BinParent []string `json:"bin_parent"` // a PATH bin folder's parent holding one of these is kept whole
		BinLinks  int      `json:"bin_links"`  // entries of a PATH folder read for links leading elsewhere
		GitKeys   []string `json:"git_keys"`   // keys of the global git config whose values name files git reads
	} `json:"home"`
	Env struct {
		DropSubstrings []string `json:"drop_substrings"`
		DropWords      []string `json:"drop_words"`
		Keep           []string `json:"keep"`
		DropURLPass    bool     `json:"drop_url_password"`
		DropPrefixes   []string `json:"drop_value_prefixes"`
		DropValueSubs  []string `json:"drop_value_substrings"`
		Drop           []string `json:"drop"`
	} `json:"env"`
	GitConfig struct {
		About       string   `json:"about"`
		PathKeys    []string `json:"path_keys"`
		CommandKeys []string `json:"command_keys"`
		MaxFiles    int      `json:"max_files"`
		MaxBytes    int      `json:"max_bytes"`
	} `json:"git_config"`
	CacheEnv     map[string]string   `json:"cache_env"`
	CacheDefault map[string][]string `json:"cache_default"`
	// CacheEnvKept: cache_env variables left as they are without a world
	// where their folder exists (read-only, still read).
	CacheEnvKept []string `json:"cache_env_kept"`
	Limits       struct {
		Processes uint64 `json:"processes"`
		FileBytes uint64 `json:"file_bytes"`
		// SpawnRetryMS: how long a start that meets the process limit is
		// tried again (a command that just ended may leave processes the
		// world's init has not reaped yet).
		SpawnRetryMS int `json:"spawn_retry_ms"`
		OOMScoreAdj  int `json:"oom_score_adj"` // of every process in the world
		// TmpfsBytes: the size of each tmpfs the world gives a command
		// to write (/dev/shm, /run/user/<uid>): memory.
		TmpfsBytes uint64 `json:"tmpfs_bytes"`
		// WrittenBytes, FreeFloorBytes, DiskCheckMS: the disk's watch
		// (sandbox_world_disk_linux.go).
		WrittenBytes   uint64 `json:"written_bytes"`
		FreeFloorBytes uint64 `json:"free_floor_bytes"`
		DiskCheckMS    int    `json:"disk_check_ms"`
	} `json:"limits"`
	WorldIdleS int `json:"world_idle_s"`
	GitGoneMax int `json:"git_gone_max"` // deletes in git's history a command's note names; beyond, counted
	// GitWatchAfter: git's layers are watched (inotify) from this many
	// looks of the sync on (sandbox_world_git.go).
	GitWatchAfter int `json:"git_watch_after"`
	NewRepo       struct {
		About       string   `json:"about"`
		ConfigKeep  []string `json:"config_keep"`
		ModuleDepth int      `json:"module_depth"` // modules of modules read, this deep
	} `json:"new_repo"` // a repository the session made: what its config keeps (sandbox_newrepo.go)
	// LocalAddresses: what privateIP (web.go) takes for the machine's own
	// or its network's, beyond loopback, private, link-local and
	// unspecified: more prefixes, and prefixes an IPv4 address is embedded
	// in (NAT64, 6to4), with the byte it starts at.
	LocalAddresses struct {
		About    string         `json:"about"`
		Prefixes []string       `json:"prefixes"`
		EmbedV4  map[string]int `json:"embed_v4"`
	} `json:"local_addresses"`
	UnixSockets bool `json:"unix_sockets"` // whether a command in the world may make a Unix socket (socketpair always)
	Keyring     bool `json:"keyring"`      // whether a command may reach the kernel's keyrings (keyctl, add_key, request_key)
	// WorldFamilies: the socket families a command in the world may make
	// besides AF_UNIX (unix_sockets says); the others fail with EPERM,
	// and io_uring with them (its IORING_OP_SOCKET makes any socket past
	// the filter on socket(2)).
	WorldFamilies []uint32 `json:"world_socket_families"`
	Proxy         struct {
		Port           int      `json:"port"`
		Allow          []string `json:"allow"`
		MaxHeaderBytes int      `json:"max_header_bytes"`
		AskMaxHosts    int      `json:"ask_max_hosts"`    // cards one command may raise; beyond, refused unasked
		CardCommandMax int      `json:"card_command_max"` // characters of the command line a network card shows
	} `json:"proxy"`
	DenialMarkers []string          `json:"denial_markers"`
	ExitSetup     int               `json:"exit_setup"`
	Texts         map[string]string `json:"texts"`
	Check         map[string]string `json:"check"`
}

// theSandboxSpec reads harness/sandbox.json once. It is loaded here rather
// than in loadSpec so that only a process that runs a command pays for it.
//
//go:noinline
func theSandboxSpec() *sandboxSpec { return sandboxSpecFile.get() }

var sandboxSpecFile = &harnessFile[sandboxSpec]{name: "harness/sandbox.json"}

// sandboxText fills one of sandbox.json's texts.
func sandboxText(key string, kv ...any) string {
	s, ok := theSandboxSpec().Texts[key]
	if !ok {
		panic("harness: sandbox.json has no text " + key)
	}
	return fillPairs(s, kv...)
}

// sandboxProbe is what this machine gives.
type sandboxProbe struct {
	Kind   string `json:"kind"`             // landlock, seatbelt, or "" (none)
	Why    string `json:"why,omitempty"`    // with no sandbox: why not
	ABI    int    `json:"abi,omitempty"`    // Landlock's ABI
	Masked string `json:"masked,omitempty"` // rights this kernel does not know
}

// sandboxPolicy is what one command may do; on Linux it is handed to the
// helper as JSON.
type sandboxPolicy struct {
	Exe      string   `json:"-"`                  // the helper to run; "" is os.Executable (sandbox.helperExe)
	Write    []string `json:"write"`              // writable roots: folders or files, resolved, existing
	Devices  []string `json:"devices"`            // device files and folders: written and ioctl'd
	Network  bool     `json:"network"`            // false: no TCP, no non-Unix sockets, no io_uring
	Signals  bool     `json:"signals,omitempty"`  // Landlock ABI 6: no signals outside the command (no pid namespace)
	Protect  []string `json:"protect,omitempty"`  // bound read-only (namespaces) or denied (seatbelt)
	NS       bool     `json:"ns,omitempty"`       // run in a user+mount namespace
	NoUnix   bool     `json:"nounix,omitempty"`   // seccomp: no socket(AF_UNIX) (socketpair stays): no Unix socket reached by path
	Families []uint32 `json:"families,omitempty"` // seccomp: the only other socket families (none: any); io_uring refused
	NoMeta   bool     `json:"nometa,omitempty"`   // seccomp: no chmod, chown, utime (plan mode: Landlock does not mediate them)
	NoKeys   bool     `json:"nokeys,omitempty"`   // seccomp: no keyctl, add_key, request_key (the kernel's keyrings are not namespaced)
	ABI      int      `json:"abi,omitempty"`
	// Home, with no world: Landlock reads everywhere but the home folder,
	// where only Keep is read (besides Write); the world hides it by its
	// mounts instead (policyParts.Home).
	Home string   `json:"home,omitempty"`
	Keep []string `json:"keep,omitempty"`
}

// sandbox is one session's sandbox: its settings, the project, and what the
// machine gives (probed once, on first use).
type sandbox struct {
	root string
	cfg  sandboxConfig

	// Set by whoever makes the sandbox, before its first use: the probe
	// (nil probes this machine; a test's is a kernel without Landlock),
	// no world (the per-command sandbox alone: Landlock, seccomp and the
	// helper's namespace), and the helper (nil is os.Executable; the
	// benchmarks time the lembas binary, not the test binary).
	probeHook func() sandboxProbe
	noWorld   bool
	helperExe string

	once   sync.Once
	probe  sandboxProbe
	nsOnce sync.Once
	ns     bool
	nsWhy  string
	toldMu mutex
	told   bool // the model has been told there is no sandbox

	partsMu mutex
	parts   map[string]policyParts // by mode, while the git folder's stamp holds
	stamp   string

	worldMu  mutex
	world    worldRunner // the session's world (Linux), started on first use
	worldErr error       // why there is none (then the per-command sandbox)
	session  string      // the session's own folder on the host (temp, caches, the proxy's socket)
	owner    *os.File    // its owner file, locked while the session lives (sandbox_session_*.go)
	proxy    *sandboxProxy
	warming  chan struct{} // closed when prewarm's start has ended (nil: none began)

	net netState // the commands that may be asked about a host (sandbox_netask.go)

	leave atomic.Bool   // close leaves the session's folder to the next sweep (leaveFolder)
	swept chan struct{} // closed when the sweep begun with the session's folder ends

	envMu   mutex
	envMemo map[string]bool // a variable's name → dropped (sandbox_env.go)

	gitStartOnce sync.Once
	// base is git's protected paths and the agent configuration as the
	// session's first command found them: what a process left running
	// added there after the last command's look is taken away at close
	// (sandbox_agent.go closeAdded).
	baseOnce        sync.Once
	base, baseAgent gitSnapshot
	gitAtStart      bool      // the project had a .git when its first command began (sandbox_newrepo.go)
	gitRan          bool      // set with gitAtStart: a command began
	firstCmd        time.Time // set with gitAtStart: when (a repository born after it is the session's: screenNestedRepos)
}

//go:noinline
func newSandbox(cfg sandboxConfig, root string) *sandbox {
	return &sandbox{root: root, cfg: cfg}
}

// sandboxFromConfig is the sandbox of a toolbox made without one (tests,
// tools run outside a session): config.yaml's settings, else defaults.
func sandboxFromConfig(root string) *sandbox {
	cfg, err := loadConfig()
	if err != nil || cfg == nil {
		return newSandbox(sandboxConfig{}, root)
	}
	return newSandbox(cfg.Sandbox, root)
}

// probed is the machine's sandbox, probed on first use (a system call).
func (s *sandbox) probed() sandboxProbe {
	s.once.Do(func() {
		if s.cfg.Off {
			s.probe = sandboxProbe{Why: sandboxText("why_off")}
			return
		}
		if s.probeHook != nil {
			s.probe = s.probeHook()
			return
		}
		s.probe = sandboxProbeOS()
	})
	return s.probe
}

// namespaces says whether the protected paths can be bound read-only; it
// starts a helper, so it is asked only when a command runs (or by check).
func (s *sandbox) namespaces() (bool, string) {
	s.nsOnce.Do(func() {
		if s.probed().Kind != "landlock" {
			return
		}
		t0 := time.Now()
		s.ns, s.nsWhy = sandboxNamespacesOS()
		traceSince(t0, "sandbox namespaces probed")
	})
	return s.ns, s.nsWhy
}

// networkMode is on, off or proxy (only the allowed hosts).
//
//go:noinline
func (s *sandbox) networkMode() string {
	if s.cfg.Network != "" {
		return s.cfg.Network
	}
	return theSandboxSpec().Network
}

// network says whether a command may open network sockets at all.
func (s *sandbox) network() bool { return s.networkMode() != "off" }

func (s *sandbox) required() bool {
	if s.cfg.Required != nil {
		return *s.cfg.Required
	}
	return theSandboxSpec().Required
}

// notice is what the person is told once per session when the machine
// gives no sandbox ("" when it gives one).
func (s *sandbox) notice() string {
	if p := s.probed(); p.Kind == "" {
		return sandboxText("none_notice", "why", p.Why)
	}
	return ""
}

// expandRoot reads one entry of a roots list: ~/ is home, a leading $NAME
// is that variable (the entry is dropped when it is unset), anything else
// must be absolute.
func expandRoot(entry string, getenv func(string) string, home string) (string, bool) {
	e := strings.TrimSpace(entry)
	switch {
	case e == "~":
		return home, home != ""
	case strings.HasPrefix(e, "~/"):
		if home == "" {
			return "", false
		}
		return filepath.Join(home, e[2:]), true
	case strings.HasPrefix(e, "$"):
		name, rest := e[1:], ""
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name, rest = name[:i], name[i:]
		}
		v := getenv(name)
		if v == "" || !filepath.IsAbs(v) {
			return "", false
		}
		return filepath.Join(v, rest), true
	case filepath.IsAbs(e):
		return filepath.Clean(e), true
	}
	return "", false
}

// gitDirs finds the project's git folder and its common folder (they differ
// in a linked worktree, where .git is a file naming the folder).
func gitDirs(root string) (gitDir, common string, ok bool) {
	dot := filepath.Join(root, ".git")
	fi, err := os.Lstat(dot)
	if err != nil {
		return "", "", false
	}
	gitDir = dot
	if !fi.IsDir() {
		b, err := os.ReadFile(dot)
		if err != nil || !strings.HasPrefix(string(b), "gitdir:") {
			return "", "", false
		}
		gitDir = strings.TrimSpace(strings.TrimPrefix(string(b), "gitdir:"))
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(root, gitDir)
		}
	}
	common = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	return evalExisting(gitDir), evalExisting(common), true
}

// policyParts is a policy before the paths are checked on disk: what the
// conformance cases compare, since it does not depend on the machine.
type policyParts struct {
	Write   []string `json:"write"`           // written for real: the project, its git folders, config's writable
	Temp    []string `json:"temp"`            // the temp folders (private to the session in the world)
	Caches  []string `json:"caches"`          // build caches (sandbox.json caches and overlays): copy-on-write in the world, read-only without one
	Devices []string `json:"devices"`         // written and ioctl'd
	Protect []string `json:"protect"`         // git's code-running files: read-only
	Later   []string `json:"later,omitempty"` // protect's patterns (a * in them): a match made by a command is taken away
	Pin     []string `json:"pin"`             // git's history (objects, refs, logs): add-only in the world
	Mask    []string `json:"mask"`            // credentials: empty in the world
	Agent   []string `json:"agent,omitempty"` // the project's agent and editor configuration at its root: in Protect too
	GitDir  string   `json:"-"`               // the project's git folder, "" when it is none (what its index tracks)
	Network string   `json:"network"`         // on, off, proxy
	// Home is the home folder the world shows only Keep of (besides the
	// writable roots and caches); "" where the whole of it stays in view
	// (sandbox.readable holds ~, a writable root holds it, or it is a
	// temp folder or /).
	Home string   `json:"home,omitempty"`
	Keep []string `json:"keep,omitempty"`
}

// policyFor lays out a command's policy for a mode: in plan mode the
// project (and its git folders) is not writable.
func (s *sandbox) policyFor(mode string, getenv func(string) string, home string) policyParts {
	sp := theSandboxSpec()
	var p policyParts
	p.Network = s.networkMode()
	gd, common, isGit := gitDirs(s.root)
	if mode != "plan" {
		p.Write = append(p.Write, s.root)
		if isGit {
			for _, d := range []string{gd, common} {
				if !within(s.root, d) {
					p.Write = append(p.Write, d)
				}
			}
		}
	}
	for _, e := range s.cfg.Writable {
		if r, ok := expandRoot(e, getenv, home); ok {
			p.Write = append(p.Write, r)
		}
	}
	for _, e := range sp.Temp {
		if r, ok := expandRoot(e, getenv, home); ok {
			p.Temp = append(p.Temp, r)
		}
	}
	for _, e := range append(sp.Caches[:len(sp.Caches):len(sp.Caches)], sp.Overlays...) {
		if r, ok := expandRoot(e, getenv, home); ok && !underAnyRoot(r, p.Write) {
			p.Caches = append(p.Caches, r)
		}
	}
	if mode == "plan" {
		// Plan mode writes nothing of the project wherever it lives: a temp
		// folder or cache that holds the project is not writable then.
		p.Temp, p.Caches = outsideOf(p.Temp, s.root), outsideOf(p.Caches, s.root)
	}
	p.Devices = append(p.Devices, sp.Devices...)
	if isGit && mode != "plan" {
		p.Protect = gitPaths(sp.Protect, gd, common)
		p.Protect = append(p.Protect, gitConfigProjectNames(s.root, gd, common, home, getenv)...) // husky's .husky, an included config (sandbox_gitconfig.go)
		for _, e := range sp.Protect {
			if strings.Contains(e, "*") {
				p.Later = append(p.Later, strings.NewReplacer("<git>", gd, "<common>", common).Replace(e))
			}
		}
		p.Pin = gitPaths(sp.Pin, gd, common)
	}
	for _, e := range sp.Mask {
		if r, ok := expandRoot(e, getenv, home); ok {
			p.Mask = append(p.Mask, r)
		}
	}
	if mode != "plan" {
		// The agent and editor configuration the file tools always ask
		// about, where it exists and git does not track it: read-only to
		// commands (bound so in the world and the helper's namespace), so
		// a script cannot rewrite it either. Not what git tracks (a
		// checkout or pull must write it), nor a link (bound, it would
		// stop the world's start), nor one that is not there: putting
		// back what appeared while a command ran would delete what the
		// person's editor wrote meanwhile.
		p.Agent = agentConfigRoots(s.root, gd, isGit)
		if isGit {
			p.GitDir = gd
		}
		p.Protect = append(p.Protect, p.Agent...)
	}
	p.Write, p.Temp, p.Caches, p.Mask = uniq(p.Write), uniq(p.Temp), uniq(p.Caches), uniq(p.Mask)
	p.Home, p.Keep = s.homeView(sp, getenv, home, p, gd, common, isGit)
	return p
}

// outsideOf is the roots that do not hold dir.
//
//go:noinline
func outsideOf(roots []string, dir string) []string {
	var out []string
	for _, r := range roots {
		if !within(r, dir) {
			out = append(out, r)
		}
	}
	return out
}

// partsCached is policyFor with the process's environment, kept per mode
// while the project's .git (its kind, size and time) is as it was: a
// command should not pay for globbing the git folder every time.
func (s *sandbox) partsCached(mode string) policyParts {
	stamp := "none"
	if fi, err := os.Lstat(filepath.Join(s.root, ".git")); err == nil {
		stamp = fmt.Sprint(fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
	}
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	if stamp != s.stamp || s.parts == nil {
		s.parts, s.stamp = map[string]policyParts{}, stamp
	}
	p, ok := s.parts[mode]
	if !ok {
		p = s.policyFor(mode, os.Getenv, homeDir())
		s.parts[mode] = p
	}
	return p
}

// underAnyRoot says whether p is one of roots or inside one.
//
//go:noinline
func underAnyRoot(p string, roots []string) bool {
	for _, r := range roots {
		if within(r, p) {
			return true
		}
	}
	return false
}

// gitPaths expands protect or pin entries: <git> is the git folder, <common>
// its common folder, and a * one name that exists (the git folder of a
// linked worktree is never matched: it is the project's own).
func gitPaths(entries []string, gd, common string) []string {
	var out []string
	for _, e := range entries {
		p := strings.NewReplacer("<git>", gd, "<common>", common).Replace(e)
		if !strings.Contains(p, "*") {
			out = append(out, filepath.Clean(p))
			continue
		}
		matches, _ := filepath.Glob(p)
		sort.Strings(matches)
		for _, m := range matches {
			if m != gd && !within(m, gd) {
				out = append(out, m)
			}
		}
	}
	return uniq(out)
}

// policy is the policy one command runs under, with every root resolved
// (Landlock and Seatbelt see resolved paths) and the missing ones left out
// and returned, so `sandbox check` can name them. In the world the caches
// (copy-on-write there) and its empty folders are writable too.
func (s *sandbox) policy(mode string) (sandboxPolicy, []string) {
	return s.policyIn(mode, false)
}

func (s *sandbox) policyIn(mode string, inWorld bool) (sandboxPolicy, []string) {
	return s.policyOf(s.policyFor(mode, os.Getenv, homeDir()), inWorld)
}

// worldPolicy is a command's policy in the world, without a look at the
// disk: the init's Landlock resolves each root itself (a link to its
// target) and leaves out what is missing, so lembas's side of a command
// stays a few microseconds.
func (s *sandbox) worldPolicy(parts policyParts) sandboxPolicy {
	pol := sandboxPolicy{Network: parts.Network != "off", ABI: s.probed().ABI}
	pol.Write = append(append(append(pol.Write, parts.Write...), parts.Temp...), parts.Caches...)
	pol.Write = append(pol.Write, fmt.Sprintf("/run/user/%d", os.Getuid()))
	pol.Devices = parts.Devices
	pol.Protect = parts.Protect // named in a denial; the world binds them
	pol.NoUnix = !theSandboxSpec().UnixSockets
	pol.NoKeys = !theSandboxSpec().Keyring
	pol.Families = theSandboxSpec().WorldFamilies
	return pol
}

func (s *sandbox) policyOf(parts policyParts, inWorld bool) (sandboxPolicy, []string) {
	pr := s.probed()
	pol := sandboxPolicy{Network: parts.Network != "off", ABI: pr.ABI, Signals: !inWorld, Exe: s.helperExe, NoKeys: !theSandboxSpec().Keyring}
	// Without a world /tmp and /run/user are the person's: their tmux,
	// ssh-agent and D-Bus sockets would be reached by path.
	pol.NoUnix = !theSandboxSpec().UnixSockets
	if len(parts.Protect) > 0 && !inWorld {
		pol.NS, _ = s.namespaces()
	}
	var missing []string
	roots := append(append([]string{}, parts.Write...), parts.Temp...)
	if inWorld {
		roots = append(roots, parts.Caches...)
		if ru := fmt.Sprintf("/run/user/%d", os.Getuid()); pathExists(ru) {
			roots = append(roots, ru)
		}
	}
	for _, r := range roots {
		if _, err := os.Stat(r); err != nil {
			missing = append(missing, r)
			continue
		}
		pol.Write = append(pol.Write, evalExisting(r))
	}
	for _, d := range parts.Devices {
		if _, err := os.Stat(d); err == nil {
			pol.Devices = append(pol.Devices, evalExisting(d))
		}
	}
	for _, p := range parts.Protect {
		if _, err := os.Lstat(p); err == nil {
			pol.Protect = append(pol.Protect, p)
		}
	}
	pol.Write = uniq(pol.Write)
	if parts.Home != "" && !inWorld {
		pol.Home = parts.Home
		for _, k := range append(append([]string{}, parts.Keep...), parts.Caches...) {
			if _, err := os.Stat(k); err == nil {
				pol.Keep = append(pol.Keep, k)
			}
		}
	}
	return pol, missing
}

// sandboxCall is what the engine knows of one call: the mode (plan is
// read-only) and whether the person approved running it unsandboxed.
type sandboxCall struct {
	mode string
	bare bool
}

type sandboxCallKey struct{}

type netAskerKey struct{}

// withNetAsker is set by the engine for every tool call it runs: who is
// asked when the call's command (or fetch) reaches a host not allowed.
func withNetAsker(ctx context.Context, a approver) context.Context {
	return context.WithValue(ctx, netAskerKey{}, a)
}

// netRunFor is the gate's record of one call: its command, its asker, and -p's stderr (the quiet notice) to name the config key on.
// Its cards last as long as parent (a command's: until it is released).
func netRunFor(ctx, parent context.Context, what string) *netRun {
	a, _ := ctx.Value(netAskerKey{}).(approver)
	say, _ := ctx.Value(quietKey{}).(func(string))
	return newNetRun(parent, what, a, say)
}

// withSandboxCall is set by the engine for every tool call it runs.
func withSandboxCall(ctx context.Context, mode string, bare bool) context.Context {
	return context.WithValue(ctx, sandboxCallKey{}, sandboxCall{mode, bare})
}

func sandboxCallFrom(ctx context.Context) sandboxCall {
	c, _ := ctx.Value(sandboxCallKey{}).(sandboxCall)
	return c
}

// sandboxRun is one command on its way through the sandbox.
type sandboxRun struct {
	sb     *sandbox
	pol    sandboxPolicy
	kind   string
	bare   bool        // runs outside the sandbox (approved, or none here)
	world  worldRunner // runs in the session's world
	note   string      // said to the model after the result
	plan   bool
	before gitSnapshot
	agent  gitSnapshot // the agent configuration absent when the command began (sandbox_agent.go)
	hosts  int         // the proxy's refusals before the command, to name the new ones
	net    *netRun     // asked about hosts not allowed while it runs (sandbox_netask.go)
	gone   int         // the world's count of deletes in git's history before the command
	stops  int         // the world's count of its disk watch's stops before the command
	// newRepo: the project had no .git when the session's first command
	// began, so one there now is the session's, screened after each
	// command (sandbox_newrepo.go).
	newRepo bool
}

// gitDeletes is a world whose git history is add-only
// (sandbox_world_git.go): a delete there succeeds in the world and never
// reaches the repository, and the command is told which.
type gitDeletes interface {
	gitGoneCount() int
	gitGoneSince(n int) []string
	gitClashSince(n int) []string // refs that cannot land beside one the repository kept
}

// diskStops is a world whose disk is watched
// (sandbox_world_disk_linux.go): a command it ended is told why.
type diskStops interface {
	diskStopCount() int
	diskStopsSince(n int) []string
}

type sandboxRunKey struct{}

// sandboxed is the hook in runShell: the command rewritten to run inside
// the sandbox the context carries. A context without one is a caller that
// did not ask for a sandbox (lembas's own commands); the command is left
// as it is.
func sandboxed(ctx context.Context, cmd *exec.Cmd) *exec.Cmd {
	r, _ := ctx.Value(sandboxRunKey{}).(*sandboxRun)
	if r == nil {
		return cmd
	}
	cmd.Env = r.sb.commandEnv(cmd.Env, r) // secrets dropped, even with no sandbox (sandbox_env.go)
	if r.bare || r.world != nil {
		return cmd // the world takes the command as it is
	}
	if err := sandboxCommand(cmd, r.pol); err != nil {
		cmd.Err = errorf("%s", sandboxText("setup_failed", "error", err))
	}
	return cmd
}

// startCommand is the hook in runShell that starts a command: in the
// session's world, inside the sandbox the context carries, else plainly.
func startCommand(ctx context.Context, cmd *exec.Cmd) (procHandle, error) {
	r, _ := ctx.Value(sandboxRunKey{}).(*sandboxRun)
	closeInherited() // what lembas inherited is not the command's
	var err error
	switch {
	case r == nil || r.bare || cmd.Err != nil:
		err = cmd.Start()
	case r.world != nil:
		p, err := r.world.start(cmd, r.pol)
		if err != nil {
			r.release()
			return nil, errorf("%s", sandboxText("setup_failed", "error", err))
		}
		r.sb.netPlaced(r.net, p) // its connections are known to be its own
		return p, nil
	default:
		err = sandboxStart(cmd, r.pol)
	}
	if err != nil {
		r.release()
		return nil, err
	}
	return execProc{cmd}, nil
}

// release ends the command's part in the network gate: a card still up
// for it is taken down. finish calls it; a command stopped or never
// started calls it alone. A nil run (no sandbox context) does nothing.
//
//go:noinline
func (r *sandboxRun) release() {
	if r != nil && r.sb != nil {
		r.sb.netRelease(r.net)
	}
}

// startsOnOwnThread says whether startCommand will start the command from
// a thread it then throws away (Linux's sandbox without a namespace): a
// child told to die with the thread that started it (Pdeathsig) would die
// at once.
func startsOnOwnThread(ctx context.Context) bool {
	r, _ := ctx.Value(sandboxRunKey{}).(*sandboxRun)
	return r != nil && !r.bare && r.world == nil && !r.pol.NS && runtime.GOOS == "linux"
}

// unsandboxedArg reads a bash call's unsandboxed reason.
func unsandboxedArg(args json.RawMessage) string {
	var a struct {
		Unsandboxed string `json:"unsandboxed"`
	}
	json.Unmarshal(args, &a)
	return strings.TrimSpace(a.Unsandboxed)
}

// unsandboxedAsk is the permission hook: a bash call that asks to run
// outside the sandbox is always put to the person — whatever the mode, a
// rule or an earlier "always" said — and only "once" is on offer, so no
// answer can cover a later call. A refusal stays a refusal.
func unsandboxedAsk(args json.RawMessage, d decision) decision {
	reason := unsandboxedArg(args)
	if reason == "" || d.Verdict == "deny" {
		return d
	}
	return decision{Verdict: "ask", Rule: "sandbox: unsandboxed", Reason: sandboxText("unsandboxed_reason", "reason", reason)}
}

// theSandbox is the toolbox's sandbox: the session's, else one made from
// config.yaml on first use.
func (tb *toolbox) theSandbox() *sandbox {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.sandbox == nil {
		tb.sandbox = sandboxFromConfig(tb.root)
	}
	return tb.sandbox
}

// sandboxFor prepares one bash call: refused text when it must not run,
// else the context runShell needs. toolbox.sandbox is the session's; a
// toolbox made without one reads config.yaml.
func (tb *toolbox) sandboxFor(ctx context.Context, raw json.RawMessage) (context.Context, *sandboxRun, string) {
	sb := tb.theSandbox()
	call := sandboxCallFrom(ctx)
	r := &sandboxRun{sb: sb, plan: call.mode == "plan"}
	if unsandboxedArg(raw) != "" {
		if !call.bare {
			return ctx, nil, sandboxText("unsandboxed_unapproved")
		}
		r.bare = true
		r.note = sandboxText("unsandboxed_ran")
		return context.WithValue(ctx, sandboxRunKey{}, r), r, ""
	}
	p := sb.probed()
	if p.Kind == "" {
		if sb.required() {
			return ctx, nil, sandboxText("required_refused", "why", p.Why)
		}
		r.bare = true
		sb.toldMu.Lock()
		if !sb.told {
			sb.told = true
			r.note = sandboxText("none_model", "why", p.Why)
		}
		sb.toldMu.Unlock()
	}
	r.kind = p.Kind
	if !r.bare {
		r.world = sb.theWorld()
	}
	parts := sb.partsCached(call.mode)
	if r.world != nil {
		r.pol = sb.worldPolicy(parts)
	} else {
		r.pol, _ = sb.policyOf(parts, false)
	}
	r.pol.NoMeta = r.plan                                                                                       // Landlock does not mediate chmod, chown, utime
	r.before = takeGitSnapshot(sb.snapshotPaths(notUnder(parts.Protect, parts.Agent), r.world), parts.Later...) // the agent configuration is bound, never put back
	r.newRepo = sb.gitMadeHere()                                                                                // read before the first command can make one
	r.agent = takeGitSnapshot(agentConfigWatched(sb.root, parts.Agent))
	sb.baseOnce.Do(func() {
		sb.base = takeGitSnapshot(sb.snapshotPaths(notUnder(parts.Protect, parts.Agent), r.world), parts.Later...)
		sb.baseAgent = takeGitSnapshot(agentConfigWatched(sb.root, parts.Agent))
	})
	if g, ok := r.world.(gitDeletes); ok {
		r.gone = g.gitGoneCount()
	}
	if d, ok := r.world.(diskStops); ok {
		r.stops = d.diskStopCount()
	}
	if sb.proxy != nil {
		r.hosts = sb.proxy.refusedCount()
	}
	r.net = netRunFor(ctx, context.Background(), shellCommandArg(raw))
	sb.netHold(r.net)
	return context.WithValue(ctx, sandboxRunKey{}, r), r, ""
}

// shownList is names joined, the first max of them and how many more.
func shownList(names []string, max int) string {
	if max <= 0 || len(names) <= max {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:max], ", ") + sandboxText("more", "n", len(names)-max)
}

// shellCommandArg reads a bash call's command line, for the network card.
func shellCommandArg(args json.RawMessage) string {
	var a struct {
		Command string `json:"command"`
	}
	json.Unmarshal(args, &a)
	line := []rune(strings.Join(strings.Fields(a.Command), " "))
	if max := theSandboxSpec().Proxy.CardCommandMax; len(line) > max {
		return string(line[:max]) + "…"
	}
	return string(line)
}

// finish is what is added to a command's result: the git folder put back
// if the command changed it, and a denial explained.
func (r *sandboxRun) finish(out string, code int) string {
	if r == nil {
		return "" // a command run without a sandbox context (benchmarks)
	}
	r.release()
	var notes []string
	if r.note != "" {
		notes = append(notes, r.note)
	}
	defer r.before.close()
	defer r.agent.close()
	if n := r.agentMade(); n != "" {
		notes = append(notes, n)
	}
	if changed := r.before.changed(); len(changed) > 0 {
		if err := r.before.restore(); err != nil {
			notes = append(notes, sandboxText("git_restore_failed", "paths", strings.Join(changed, ", "), "error", err))
		} else {
			notes = append(notes, sandboxText("git_restored", "paths", strings.Join(changed, ", ")))
		}
	}
	if r.newRepo && r.sb != nil {
		if taken := screenNewRepo(r.sb.root, theSandboxSpec().NewRepo.ConfigKeep); len(taken) > 0 {
			notes = append(notes, sandboxText("git_new_repo", "what", shownList(taken, theSandboxSpec().GitGoneMax)))
		}
	}
	if g, ok := r.world.(gitDeletes); ok {
		if gone := g.gitGoneSince(r.gone); len(gone) > 0 {
			notes = append(notes, sandboxText("git_deletes_kept", "paths", shownList(gone, theSandboxSpec().GitGoneMax)))
		}
		if c := g.gitClashSince(r.gone); len(c) > 0 {
			notes = append(notes, sandboxText("git_ref_clash", "paths", shownList(c, theSandboxSpec().GitGoneMax)))
		}
	}
	if d, ok := r.world.(diskStops); ok {
		notes = append(notes, d.diskStopsSince(r.stops)...)
	}
	if !r.bare && code == theSandboxSpec().ExitSetup && strings.Contains(out, "lembas sandbox:") {
		return strings.Join(notes, "\n") // the helper said why already
	}
	if r.sb != nil && r.sb.proxy != nil {
		if hosts := r.sb.proxy.refusedSince(r.hosts); len(hosts) > 0 {
			notes = append(notes, sandboxText("host_refused", "hosts", strings.Join(hosts, ", ")))
		}
	}
	if !r.bare && code != 0 && r.world != nil && r.sb != nil {
		mode := "auto"
		if r.plan {
			mode = "plan"
		}
		if hidden := hiddenNamed(out, r.sb.root, r.sb.partsCached(mode)); len(hidden) > 0 {
			if len(hidden) > 4 {
				hidden = hidden[:4]
			}
			notes = append(notes, sandboxText("home_hidden", "paths", showRoots(hidden)))
		}
	}
	if !r.bare && code != 0 {
		if what := denialLine(out); what != "" {
			if r.plan {
				notes = append(notes, sandboxText("denied_plan", "what", what))
			} else if agent := r.sb.partsCached("auto").Agent; agentNamed(what, agent) {
				notes = append(notes, sandboxText("denied_agent", "what", what))
			} else if names := protectedNamed(what, r.pol.Protect); names != "" {
				notes = append(notes, sandboxText("denied_git", "what", what, "paths", names))
			} else {
				net := ""
				switch r.sb.networkMode() {
				case "off":
					net = sandboxText("network_off")
				case "proxy":
					net = sandboxText("network_proxy")
				}
				notes = append(notes, sandboxText("denied", "what", what, "kind", r.kind, "roots", showRoots(r.pol.Write), "network", net))
			}
		}
	}
	return strings.Join(notes, "\n")
}

// denialLine is the first line of out that reads as the sandbox refusing
// something, cut short; "" when none does.
func denialLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		for _, m := range theSandboxSpec().DenialMarkers {
			if strings.Contains(line, m) {
				line = strings.TrimSpace(line)
				if r := []rune(line); len(r) > 200 {
					line = string(r[:200]) + "…"
				}
				return line
			}
		}
	}
	return ""
}

// notUnder is paths less those under one of roots.
//
//go:noinline
func notUnder(paths, roots []string) []string {
	var out []string
	for _, p := range paths {
		if !underAnyRoot(p, roots) {
			out = append(out, p)
		}
	}
	return out
}

// protectedNamed lists the protected paths when a denial line names one of
// them (by its last two elements, as a command in the project spells it).
func protectedNamed(what string, protect []string) string {
	for _, p := range protect {
		if strings.Contains(what, filepath.Join(filepath.Base(filepath.Dir(p)), filepath.Base(p))) {
			return showRoots(protect)
		}
	}
	return ""
}

// showRoots lists roots for a person or a model, home as ~.
func showRoots(roots []string) string {
	home := homeDir()
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if home != "" && home != "/" && (r == home || strings.HasPrefix(r, home+string(filepath.Separator))) {
			r = "~" + r[len(home):]
		}
		out = append(out, r)
	}
	return strings.Join(out, ", ")
}

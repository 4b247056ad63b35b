//go:build unix

package main

// The terminals through the real handler with real shells on real PTYs:
// a fake link (fakeTermLink) stands in for link.go, holding what the
// handler notifies and, when paused, blocking notify the way a slow link
// does.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeTermLink is the link as the handler sees it: notify and limits.
type fakeTermLink struct {
	mu     sync.Mutex
	cond   *sync.Cond
	out    map[string][]byte // output so far (its last tailMax bytes in tail mode)
	total  map[string]int64  // output bytes, all told
	cut    map[string]int    // bytes dropped from the front of out (tail mode)
	exits  map[string]int
	paused bool
	tail   bool // keep only the end of the output (floods)
	calls  int
	onCall func() // called at each output notification (RSS samples)
	lim    terminalLimits
}

const tailMax = 1 << 16

func newFakeTermLink(roots ...string) *fakeTermLink {
	f := &fakeTermLink{out: map[string][]byte{}, total: map[string]int64{}, cut: map[string]int{}, exits: map[string]int{},
		lim: terminalLimits{Enabled: true, Integration: true, Roots: roots}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *fakeTermLink) notify(method string, params any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.paused {
		f.cond.Wait()
	}
	switch p := params.(type) {
	case terminalData:
		if method != "_lembas/terminal/output" {
			return fmt.Errorf("output sent as %s", method)
		}
		b, err := base64.StdEncoding.DecodeString(p.Data)
		if err != nil {
			return err
		}
		f.out[p.TerminalID] = append(f.out[p.TerminalID], b...)
		if o := f.out[p.TerminalID]; f.tail && len(o) > tailMax {
			f.cut[p.TerminalID] += len(o) - tailMax/2
			f.out[p.TerminalID] = append([]byte(nil), o[len(o)-tailMax/2:]...)
		}
		f.total[p.TerminalID] += int64(len(b))
		f.calls++
		if f.onCall != nil {
			f.onCall()
		}
	case terminalExit:
		if method != "_lembas/terminal/exit" {
			return fmt.Errorf("exit sent as %s", method)
		}
		f.exits[p.TerminalID] = p.Code
	default:
		return fmt.Errorf("unexpected notification %s %T", method, params)
	}
	f.cond.Broadcast()
	return nil
}

func (f *fakeTermLink) setPaused(p bool) {
	f.mu.Lock()
	f.paused = p
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *fakeTermLink) output(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.out[id])
}

// waitFor waits until cond (called with the link locked) holds; the
// deadline only turns a hang into a failure, it asserts no speed.
func (f *fakeTermLink) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f.mu.Lock()
		for !cond() {
			f.cond.Wait()
		}
		f.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
		t.Fatalf("waited in vain for %s", what)
	}
}

// termSession is one open terminal in a test.
type termSession struct {
	t    testing.TB
	ts   *terminals
	link *fakeTermLink
	id   string
	res  terminalOpenResult
	mark int // how far expect has read
}

// newTestTerminals makes a handler on a fake link whose shell is sh and
// whose environment is this process's with HOME set to home.
func newTestTerminals(t testing.TB, sh, home string, roots ...string) (*terminals, *fakeTermLink) {
	t.Helper()
	link := newFakeTermLink(roots...)
	ts := newTerminals(link.notify, func() terminalLimits { return link.lim })
	ts.shell = func() string { return sh }
	env := setEnv(os.Environ(), "HOME", home)
	env = setEnv(env, "LANG", "C.UTF-8")
	var clean []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ZDOTDIR=") && !strings.HasPrefix(kv, "PROMPT_COMMAND=") && !strings.HasPrefix(kv, "ENV=") && !strings.HasPrefix(kv, "BASH_ENV=") {
			clean = append(clean, kv)
		}
	}
	ts.env = func() []string { return clean }
	t.Cleanup(ts.closeAll)
	return ts, link
}

func (ts *terminals) openT(t testing.TB, link *fakeTermLink, params string) *termSession {
	t.Helper()
	res, err := ts.request(t.Context(), "_lembas/terminal/open", json.RawMessage(params))
	if err != nil {
		t.Fatalf("open %s: %v", params, err)
	}
	r := res.(terminalOpenResult)
	return &termSession{t: t, ts: ts, link: link, id: r.TerminalID, res: r}
}

// expect waits for want in the output after what expect saw last (marks
// count from the start of all output, tail mode or not).
func (s *termSession) expect(want string) string {
	s.t.Helper()
	var got string
	s.link.waitFor(s.t, fmt.Sprintf("%q in the output of %s; it printed %q", want, s.id, s.tailOut()), func() bool {
		all, from := string(s.link.out[s.id]), max(s.mark-s.link.cut[s.id], 0)
		if i := strings.Index(all[from:], want); i >= 0 {
			got = all[from : from+i+len(want)]
			s.mark = s.link.cut[s.id] + from + i + len(want)
			return true
		}
		return false
	})
	return got
}

// expectRe waits for re in the output after what expect saw last and
// returns its submatches.
func (s *termSession) expectRe(re *regexp.Regexp) []string {
	s.t.Helper()
	var m []string
	s.link.waitFor(s.t, fmt.Sprintf("%s in the output of %s; it printed %q", re, s.id, s.tailOut()), func() bool {
		all, from := string(s.link.out[s.id]), max(s.mark-s.link.cut[s.id], 0)
		loc := re.FindStringSubmatchIndex(all[from:])
		if loc == nil {
			return false
		}
		for i := 0; i < len(loc); i += 2 {
			m = append(m, all[from+loc[i]:from+loc[i+1]])
		}
		s.mark = s.link.cut[s.id] + from + loc[1]
		return true
	})
	return m
}

func (s *termSession) tailOut() string {
	o := s.link.output(s.id)
	if len(o) > 3000 {
		o = o[len(o)-3000:]
	}
	return o
}

// typeIn sends keystrokes the way the link does, base64 in input.
func (s *termSession) typeIn(keys string) {
	s.t.Helper()
	p, _ := json.Marshal(terminalData{TerminalID: s.id, Data: base64.StdEncoding.EncodeToString([]byte(keys))})
	if _, err := s.ts.request(s.t.Context(), "_lembas/terminal/input", p); err != nil {
		s.t.Fatalf("input: %v", err)
	}
}

func (s *termSession) call(method, params string) error {
	_, err := s.ts.request(s.t.Context(), method, json.RawMessage(params))
	return err
}

// waitExit waits for the exit notification and returns its code.
func (s *termSession) waitExit() int {
	s.t.Helper()
	var code int
	s.link.waitFor(s.t, "the exit of "+s.id, func() bool {
		c, ok := s.link.exits[s.id]
		code = c
		return ok
	})
	return code
}

var reMark = regexp.MustCompile("\x1b\\]((?:133;[A-D](?:;[0-9]+)?)|(?:7;[^\x07]*))\x07")

// marks lists the OSC 133 and OSC 7 marks in out, in order; OSC 7 as "7".
func marks(out string) []string {
	var m []string
	for _, x := range reMark.FindAllStringSubmatch(out, -1) {
		if strings.HasPrefix(x[1], "7;") {
			m = append(m, "7")
		} else {
			m = append(m, strings.TrimPrefix(x[1], "133;"))
		}
	}
	return m
}

// osc7Path is what OSC 7 carries for dir: each byte outside
// A-Za-z0-9/._~- as %XX.
func osc7Path(dir string) string {
	var b strings.Builder
	for i := 0; i < len(dir); i++ {
		c := dir[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._~-", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// needShell finds a shell or skips: bash always (it is CI's), zsh and fish
// where installed.
func needShell(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if name == "bash" {
			t.Fatalf("bash is needed: %v", err)
		}
		t.Skipf("%s is not installed (.ci/run installs it)", name)
	}
	p, _ = filepath.EvalSymlinks(p)
	return p
}

// resolvedTemp is a temporary directory with symlinks resolved, as roots are.
func resolvedTemp(t testing.TB) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var integratedShells = []string{"bash", "zsh", "fish"}

// The marks in order with each command's status, an empty line ending no
// command, and OSC 7 of a folder whose name has a space and a non-ASCII
// letter, at the start and after a cd.
func TestTerminalMarks(t *testing.T) {
	for _, name := range integratedShells {
		t.Run(name, func(t *testing.T) {
			sh := needShell(t, name)
			root := resolvedTemp(t)
			odd := filepath.Join(root, "a b", "é")
			if err := os.MkdirAll(odd, 0o755); err != nil {
				t.Fatal(err)
			}
			ts, link := newTestTerminals(t, sh, resolvedTemp(t), root)
			s := ts.openT(t, link, fmt.Sprintf(`{"cwd": %q}`, odd))
			if !s.res.Integration || s.res.Shell != name {
				t.Fatalf("open answered %+v, want shell %s with integration", s.res, name)
			}
			host, _ := os.Hostname()
			want7 := "\x1b]7;file://" + host + osc7Path(odd) + "\x07"
			s.expect(want7)
			s.expect("\x1b]133;B\x07")
			start := s.mark
			for _, cmd := range []string{"true", "false", "", "sh -c 'exit 3'", "cd .."} {
				s.typeIn(cmd + "\r")
				s.expect("\x1b]133;B\x07")
			}
			got := strings.Join(marks(s.link.output(s.id)[start:]), " ")
			want := "C D;0 7 A B C D;1 7 A B 7 A B C D;3 7 A B C D;0 7 A B"
			if got != want {
				t.Errorf("marks %q, want %q; output %q", got, want, s.link.output(s.id)[start:])
			}
			if !strings.Contains(s.link.output(s.id)[start:], "\x1b]7;file://"+host+osc7Path(filepath.Dir(odd))+"\x07") {
				t.Errorf("no OSC 7 of %s after cd ..: %q", filepath.Dir(odd), s.link.output(s.id)[start:])
			}
			s.typeIn("exit 5\r")
			if code := s.waitExit(); code != 5 {
				t.Errorf("exit code %d, want 5", code)
			}
		})
	}
}

// A prompt hook in the user's own startup files that rebuilds the prompt
// still gets B at its end (and A at its start).
func TestTerminalPromptHookKeepsMarks(t *testing.T) {
	cases := []struct{ shell, file, rc string }{
		{"bash", ".bashrc", "PROMPT_COMMAND='PS1=\"rebuilt\\$ \"'\n"},
		{"bash", ".bashrc", "__hook() { PS1='rebuilt$ '; }\nPROMPT_COMMAND=(__hook)\n"},
		{"zsh", ".zshrc", "precmd() { PS1='rebuilt$ ' }\n"},
		{"zsh", ".zshrc", "autoload -Uz add-zsh-hook\n__hook() { PS1='rebuilt$ ' }\nadd-zsh-hook precmd __hook\n"},
		{"fish", ".config/fish/config.fish", "function fish_prompt\n  printf 'rebuilt$ '\nend\n"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s%d", c.shell, i), func(t *testing.T) {
			sh := needShell(t, c.shell)
			home := resolvedTemp(t)
			os.MkdirAll(filepath.Dir(filepath.Join(home, c.file)), 0o755)
			os.WriteFile(filepath.Join(home, c.file), []byte(c.rc), 0o644)
			if c.shell == "bash" { // a login shell reads .bashrc through .bash_profile, as a person sets it up
				os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(". ~/.bashrc\n"), 0o644)
			}
			ts, link := newTestTerminals(t, sh, home, home)
			s := ts.openT(t, link, `{}`)
			s.expect("\x1b]133;A\x07rebuilt$ \x1b]133;B\x07")
			s.typeIn("echo hi\r")
			s.expect("\x1b]133;A\x07rebuilt$ \x1b]133;B\x07")
			s.typeIn("false\r") // the hooks before ours leave the status as it was
			s.expect("\x1b]133;D;1\x07")
			s.expect("\x1b]133;A\x07rebuilt$ \x1b]133;B\x07")
		})
	}
}

// bash reads the first of the login files, keeps logout and runs
// ~/.bash_logout.
func TestTerminalBashLoginFiles(t *testing.T) {
	sh := needShell(t, "bash")
	home := resolvedTemp(t)
	os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("echo read-bash-profile\ntrap 'echo own > ~/own-exit-trap' EXIT\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".profile"), []byte("echo read-profile\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".bash_logout"), []byte("echo bye > ~/logged-out\n"), 0o644)
	ts, link := newTestTerminals(t, sh, home, home)
	s := ts.openT(t, link, `{}`)
	s.expect("read-bash-profile")
	s.expect("\x1b]133;B\x07")
	s.typeIn("logout\r")
	if code := s.waitExit(); code != 0 {
		t.Errorf("logout ended bash with %d", code)
	}
	if strings.Contains(s.link.output(s.id), "read-profile") {
		t.Errorf("~/.profile was read though ~/.bash_profile is there")
	}
	if strings.Contains(s.link.output(s.id), "not login shell") {
		t.Errorf("logout refused: %q", s.tailOut())
	}
	if b, _ := os.ReadFile(filepath.Join(home, "logged-out")); string(b) != "bye\n" {
		t.Errorf("~/.bash_logout did not run: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "own-exit-trap")); string(b) != "own\n" {
		t.Errorf("the user's own EXIT trap did not run: %q", b)
	}
}

// zsh follows a ZDOTDIR the user's .zshenv sets, our ZDOTDIR is gone
// before their .zshrc runs, and once started ZDOTDIR is as the user had it.
func TestTerminalZshZdotdir(t *testing.T) {
	sh := needShell(t, "zsh")
	t.Run("set in .zshenv", func(t *testing.T) {
		home := resolvedTemp(t)
		zd := filepath.Join(home, "zdot")
		os.MkdirAll(zd, 0o755)
		os.WriteFile(filepath.Join(home, ".zshenv"), []byte("ZDOTDIR=$HOME/zdot\n"), 0o644)
		os.WriteFile(filepath.Join(zd, ".zshrc"), []byte("echo \"rc-zd=$ZDOTDIR ours=$(env | grep -c lembas-term-)\"\n"), 0o644)
		os.WriteFile(filepath.Join(zd, ".zprofile"), []byte("echo zprofile-read\n"), 0o644)
		os.WriteFile(filepath.Join(zd, ".zlogout"), []byte("echo out > $HOME/zlogout-ran\n"), 0o644)
		ts, link := newTestTerminals(t, sh, home, home)
		s := ts.openT(t, link, `{}`)
		s.expect("zprofile-read")
		s.expect("rc-zd=" + zd + " ours=0")
		s.expect("\x1b]133;B\x07")
		s.typeIn("echo \"now-zd=$ZDOTDIR\"\r")
		s.expect("now-zd=" + zd + "\r\n")
		s.typeIn("exit\r")
		s.waitExit()
		if _, err := os.Stat(filepath.Join(home, "zlogout-ran")); err != nil {
			t.Errorf("the user's .zlogout did not run: %v", err)
		}
	})
	t.Run("unset", func(t *testing.T) {
		home := resolvedTemp(t)
		os.WriteFile(filepath.Join(home, ".zshrc"), []byte("echo zshrc-read\n"), 0o644)
		ts, link := newTestTerminals(t, sh, home, home)
		s := ts.openT(t, link, `{}`)
		s.expect("zshrc-read")
		s.expect("\x1b]133;B\x07")
		s.typeIn("echo \"zd=${ZDOTDIR-unset} env=$(env | grep -c ZDOTDIR)\"\r")
		s.expect("zd=unset env=0")
	})
}

// resize reaches the shell: stty size says the new size, clamped.
func TestTerminalResize(t *testing.T) {
	sh := needShell(t, "bash")
	home := resolvedTemp(t)
	ts, link := newTestTerminals(t, sh, home, home)
	s := ts.openT(t, link, `{"cols": 100, "rows": 30}`)
	s.expect("\x1b]133;B\x07")
	s.typeIn("stty size\r")
	s.expect("30 100")
	if err := s.call("_lembas/terminal/resize", fmt.Sprintf(`{"terminalId": %q, "cols": 132, "rows": 43}`, s.id)); err != nil {
		t.Fatal(err)
	}
	s.typeIn("stty size\r")
	s.expect("43 132")
	s.call("_lembas/terminal/resize", fmt.Sprintf(`{"terminalId": %q, "cols": 5, "rows": 9000}`, s.id))
	s.typeIn("stty size\r")
	s.expect("300 20")
}

// close hangs up: the shell gets SIGHUP (its trap runs) and is gone.
func TestTerminalCloseHangsUp(t *testing.T) {
	sh := needShell(t, "bash")
	home := resolvedTemp(t)
	ts, link := newTestTerminals(t, sh, home, home)
	// The grace before the kill is the product's; on a loaded CI machine
	// 3 s were seen to pass before bash ran its trap, so this test, which
	// checks that the trap runs and not how fast, waits longer.
	sp := *ts.sp
	sp.HangupGraceMS = 30000
	ts.sp = &sp
	s := ts.openT(t, link, `{}`)
	s.expect("\x1b]133;B\x07")
	s.typeIn("trap 'echo hup > ~/got-hup; exit 7' HUP; echo pid=$$.\r")
	pid, _ := strconv.Atoi(s.expectRe(regexp.MustCompile(`pid=([0-9]+)\.`))[1])
	if pid <= 1 {
		t.Fatalf("no pid in %q", s.tailOut())
	}
	s.expect("\x1b]133;B\x07")
	if err := s.call("_lembas/terminal/close", fmt.Sprintf(`{"terminalId": %q}`, s.id)); err != nil {
		t.Fatal(err)
	}
	if code := s.waitExit(); code != 7 {
		t.Errorf("exit code %d, want the HUP trap's 7", code)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "got-hup")); string(b) != "hup\n" {
		t.Errorf("the shell's HUP trap did not run: %q", b)
	}
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("the shell %d is still there: %v", pid, err)
	}
	if err := s.call("_lembas/terminal/input", fmt.Sprintf(`{"terminalId": %q, "data": "eA=="}`, s.id)); err == nil {
		t.Errorf("input to a closed terminal was taken")
	}
}

// The link closing ends every shell; the fifth terminal is refused.
func TestTerminalCloseAll(t *testing.T) {
	home := resolvedTemp(t)
	var shells []string
	for _, n := range []string{"bash", "zsh", "fish", "bash"} {
		if p, err := exec.LookPath(n); err == nil {
			shells = append(shells, p)
		} else {
			shells = append(shells, needShell(t, "bash"))
		}
	}
	ts, link := newTestTerminals(t, shells[0], home, home)
	var ss []*termSession
	var pids []int
	for i, sh := range shells {
		ts.shell = func() string { return sh }
		s := ts.openT(t, link, `{}`)
		s.expect("\x1b]133;B\x07")
		s.typeIn(fmt.Sprintf("sh -c 'echo pid-%d=$PPID.'\r", i))
		m := s.expectRe(regexp.MustCompile(fmt.Sprintf(`pid-%d=([0-9]+)\.`, i)))
		pid, _ := strconv.Atoi(m[1])
		ss, pids = append(ss, s), append(pids, pid)
	}
	_, err := ts.request(t.Context(), "_lembas/terminal/open", json.RawMessage(`{}`))
	var re *rpcError
	if !errors.As(err, &re) || re.Code != rpcInvalidParams || !strings.Contains(re.Message, "already has 4 terminals") {
		t.Errorf("the fifth terminal: %v, want a -32602 saying there are 4", err)
	}
	ts.closeAll() // returns once every terminal has ended
	for i := range ss {
		if err := unix.Kill(pids[i], 0); !errors.Is(err, unix.ESRCH) {
			t.Errorf("%s (%d) is still there after closeAll: %v", shells[i], pids[i], err)
		}
	}
	if _, err := ts.request(t.Context(), "_lembas/terminal/open", json.RawMessage(`{}`)); err == nil {
		t.Errorf("a terminal opened after closeAll")
	}
}

// rssBytes is this process's resident set size.
func rssBytes(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	m := regexp.MustCompile(`VmRSS:\s+([0-9]+) kB`).FindSubmatch(b)
	if m == nil {
		t.Skip("no VmRSS")
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n << 10
}

// floodPaused runs a 100 MB flood in a terminal whose client has stopped
// reading, checks the reader stopped at high water, lets the client read,
// and returns the largest RSS growth seen and the bytes the client got.
func floodPaused(t testing.TB, size int64) (rssGrowth, got int64) {
	growth, _, got := floodPausedPeak(t, size)
	return growth, got
}

// floodPausedPeak is floodPaused, also returning the peak RSS seen.
func floodPausedPeak(t testing.TB, size int64) (rssGrowth, rssPeak, got int64) {
	sh := needShell(t, "bash")
	home := resolvedTemp(t)
	ts, link := newTestTerminals(t, sh, home, home)
	link.lim.Integration = false
	link.tail = true
	s := ts.openT(t, link, `{}`)
	s.typeIn("PS1='ready> '\r")
	s.expect("ready> ")
	base := rssBytes(t)
	peak := base
	link.mu.Lock()
	link.onCall = func() {
		if link.calls%64 == 0 {
			peak = max(peak, rssBytes(t))
		}
	}
	link.mu.Unlock()
	link.setPaused(true)
	s.typeIn(fmt.Sprintf("head -c %d /dev/zero; echo; echo flood-$((40+2))\r", size))
	tm := ts.open[s.id]
	sp := ts.sp.Flow
	deadline := time.Now().Add(60 * time.Second)
	for !tm.flow().paused {
		if time.Now().After(deadline) {
			t.Fatalf("the reader never stopped: %+v", tm.flow())
		}
		time.Sleep(10 * time.Millisecond)
	}
	f := tm.flow()
	if f.read > int64(sp.HighWater+sp.ReadBytes) {
		t.Errorf("read %d bytes with the client paused, past high water %d + one read", f.read, sp.HighWater)
	}
	peak = max(peak, rssBytes(t))
	link.setPaused(false)
	s.expect("flood-42")
	s.typeIn("echo answer-$((6*7))\r")
	s.expect("answer-42")
	link.mu.Lock()
	got = link.total[s.id]
	link.mu.Unlock()
	return peak - base, peak, got
}

// A 100 MB flood with a client that stops reading keeps RSS bounded, and
// the shell answers again once the client reads.
func TestTerminalFloodPausedClient(t *testing.T) {
	const size = 100_000_000
	growth, got := floodPaused(t, size)
	if got < size {
		t.Errorf("the client got %d bytes of %d", got, size)
	}
	if growth > 48<<20 {
		t.Errorf("RSS grew by %d MiB during a %d MB flood: the output is being buffered", growth>>20, size/1_000_000)
	}
	t.Logf("RSS growth %.1f MiB over %d MB", float64(growth)/(1<<20), size/1_000_000)
}

// Bad requests get -32602 errors with what to do, never a crash.
func TestTerminalBadRequests(t *testing.T) {
	home := resolvedTemp(t)
	ts, link := newTestTerminals(t, "/bin/sh", home, home)
	link.lim.Integration = false
	s := ts.openT(t, link, `{}`)
	for _, c := range []struct{ method, params, want string }{
		{"_lembas/terminal/input", `{"terminalId": "nope", "data": ""}`, "no terminal"},
		{"_lembas/terminal/input", fmt.Sprintf(`{"terminalId": %q, "data": "%%%%"}`, s.id), "not base64"},
		{"_lembas/terminal/resize", `{"terminalId": 3}`, "it takes"},
		{"_lembas/terminal/open", `{"colz": 3}`, "it takes"},
		{"_lembas/terminal/open", `[`, "it takes"},
		{"_lembas/terminal/bogus", `{}`, "not a terminal method"},
	} {
		_, err := ts.request(t.Context(), c.method, json.RawMessage(c.params))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want an error with %q", c.method, c.params, err, c.want)
		}
	}
}

// The integration changes nothing in the shell's environment: env in an
// integrated shell is env in the same shell started as a plain login shell.
func TestTerminalEnvUnchanged(t *testing.T) {
	for _, name := range integratedShells {
		t.Run(name, func(t *testing.T) {
			sh := needShell(t, name)
			home := resolvedTemp(t)
			ts, link := newTestTerminals(t, sh, home, home)
			for i, integrate := range []bool{true, false} {
				link.mu.Lock()
				link.lim.Integration = integrate
				link.mu.Unlock()
				s := ts.openT(t, link, `{}`)
				if s.res.Integration != integrate {
					t.Fatalf("integration %v, asked %v", s.res.Integration, integrate)
				}
				s.expect("# ") // root's prompt in each shell (tests run as root here and in CI)
				s.typeIn(fmt.Sprintf("env | grep -v '^_=' | sort > ~/env-%d; echo env-done-%d\r", i, i+1))
				s.expect(fmt.Sprintf("env-done-%d\r\n", i+1))
				s.typeIn("exit\r")
				s.waitExit()
			}
			with, _ := os.ReadFile(filepath.Join(home, "env-0"))
			without, _ := os.ReadFile(filepath.Join(home, "env-1"))
			if len(with) == 0 || string(with) != string(without) {
				t.Errorf("env with the integration:\n%s\nwithout:\n%s", with, without)
			}
		})
	}
}

// A shell that cannot start is an error that names it, and its place is
// given back: four terminals still open afterwards.
func TestTerminalStartFails(t *testing.T) {
	home := resolvedTemp(t)
	ts, link := newTestTerminals(t, filepath.Join(home, "no-such-shell"), home, home)
	link.lim.Integration = false
	for i := 0; i < 5; i++ {
		_, err := ts.request(t.Context(), "_lembas/terminal/open", json.RawMessage(`{}`))
		var re *rpcError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "starting "+filepath.Join(home, "no-such-shell")) {
			t.Fatalf("open with a missing shell: %v", err)
		}
	}
	ts.shell = func() string { return "/bin/sh" }
	for i := 0; i < 4; i++ {
		ts.openT(t, link, `{}`)
	}
}

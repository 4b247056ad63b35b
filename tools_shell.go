package main

// The bash tool: one shell line, run in the project root with the user's
// shell, no stdin, a timeout, and the whole process group killed on timeout
// or cancel so nothing it started lives on. Output is kept bounded while it
// runs (head and tail) so a runaway command cannot eat the memory.

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func init() { toolImpls["bash"] = toolBash }

// liveKey carries, in a call's context, where a running command's output
// goes as it comes (engine.runOne sets it; nil: nowhere).
type liveKey struct{}

func withLive(ctx context.Context, f func(string)) context.Context {
	return context.WithValue(ctx, liveKey{}, f)
}

func liveFrom(ctx context.Context) func(string) {
	f, _ := ctx.Value(liveKey{}).(func(string))
	return f
}

// liveWriter passes on the latest tail of what a command writes, at most
// once an interval, so a front end can show a long command's progress
// without lembas holding or sending all of it.
type liveWriter struct {
	mu    mutex
	tail  []byte
	keep  int
	every time.Duration
	last  time.Time
	send  func(string)
}

func (l *liveWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.tail = append(l.tail, p...)
	if over := len(l.tail) - l.keep; over > 0 {
		l.tail = append(l.tail[:0], l.tail[over:]...)
	}
	var out string
	if now := time.Now(); now.Sub(l.last) >= l.every {
		l.last = now
		out = string(l.tail)
	}
	l.mu.Unlock()
	if out != "" {
		l.send(out)
	}
	return len(p), nil
}

// boundedBuffer keeps the first and last keep bytes of what is written and
// counts the rest.
type boundedBuffer struct {
	mu      mutex
	keep    int
	head    []byte
	tail    []byte
	dropped int64
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.keep - len(b.head); room > 0 {
		if room > len(p) {
			room = len(p)
		}
		b.head = append(b.head, p[:room]...)
		p = p[room:]
	}
	if len(p) == 0 {
		return n, nil
	}
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - b.keep; over > 0 {
		b.dropped += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return n, nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped == 0 {
		return string(b.head) + string(b.tail)
	}
	return string(b.head) + "\n" + loopText(theSpec().Loop.ToolErrors, "bytes_dropped", "n", b.dropped) + "\n" + string(b.tail)
}

func toolBash(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
	var a struct {
		Command     string `json:"command"`
		Timeout     int    `json:"timeout"`
		Unsandboxed string `json:"unsandboxed"`
		Background  bool   `json:"background"`
	}
	json.Unmarshal(raw, &a)
	t := tb.spec.Tools["bash"]
	if strings.TrimSpace(a.Command) == "" {
		return errResult(t.text("empty_command"))
	}
	timeout := t.limit("timeout_default")
	if a.Timeout > 0 {
		timeout = a.Timeout
	}
	if max := t.limit("timeout_max"); timeout > max {
		timeout = max
	}
	var live io.Writer
	if send := liveFrom(ctx); send != nil {
		live = &liveWriter{keep: t.limit("live_tail_bytes"), every: time.Duration(t.limit("live_interval_ms")) * time.Millisecond, send: send}
	}
	ctx, sb, refused := tb.sandboxFor(ctx, raw)
	if refused != "" {
		return errResult(refused)
	}
	if j := shellJobsOf(ctx); j != nil {
		return j.runBash(tb, ctx, t, a.Command, timeout, a.Background, live, sb)
	}
	out, code, how := runShell(ctx, tb.shell, a.Command, tb.root, time.Duration(timeout)*time.Second,
		time.Duration(t.limit("kill_grace_ms"))*time.Millisecond, live)
	text := strings.TrimRight(out, "\n")
	if text == "" {
		text = t.text("no_output")
	}
	res := toolResult{}
	switch how {
	case "timeout":
		text += "\n" + t.text("timeout", "seconds", timeout)
		res.IsError = true
	case "cancelled":
		text += "\n" + t.text("cancelled")
		res.Status = "cancelled"
		res.IsError = true
	default:
		text += "\n" + t.text("exit", "code", code)
		res.IsError = code != 0
	}
	if note := sb.finish(out, code); note != "" {
		text += "\n" + note
	}
	if k := lineShellKind(tb.shell); k == "cmd" || k == "powershell" {
		text += "\n" + t.text("ran_in", "shell", filepath.Base(tb.shell)) // not bash: say so in every result
	}
	res.Text = text
	return res
}

// runShell runs line with shell in dir and returns its combined output, its
// exit code and how it ended ("" normally, "timeout", "cancelled",
// "error"). The command gets its own process group; on timeout or cancel
// the group is asked to stop, then killed after grace.
func runShell(ctx context.Context, shell, line, dir string, timeout, grace time.Duration, live io.Writer) (string, int, string) {
	cmd := sandboxed(ctx, shellCommand(shell, line, dir)) // the sandbox the context carries (sandbox.go)
	buf := &boundedBuffer{keep: 256 << 10}
	var w io.Writer = buf
	if live != nil {
		w = io.MultiWriter(buf, live)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.WaitDelay = grace + time.Second
	proc, err := startCommand(ctx, cmd) // in the sandbox (sandbox.go)
	if err != nil {
		return err.Error(), -1, "error"
	}
	done := make(chan error, 1)
	go func() { done <- proc.wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	how := ""
	select {
	case err = <-done:
	case <-timer.C:
		how = "timeout"
	case <-ctx.Done():
		how = "cancelled"
	}
	if how != "" {
		stopGroup(proc, grace, done)
		err = <-done
	}
	code, coded := exitCodeOf(err)
	if !coded {
		if how == "" {
			return buf.String() + "\n" + err.Error(), -1, "error"
		}
		code = 0
	}
	return buf.String(), code, how
}

// shellCommand builds the process for one command line: the shell, its
// folder, the environment every command gets, and a process group of its
// own. Every way lembas runs a model's command (foreground or a job) goes
// through here, so that what is done to a command (a sandbox, say) is done
// to all of them.
func shellCommand(shell, line, dir string) *exec.Cmd {
	var cmd *exec.Cmd
	switch lineShellKind(shell) {
	case "cmd":
		cmd = exec.Command(shell, "/C", line)
	case "powershell":
		cmd = exec.Command(shell, "-NoProfile", "-NonInteractive", "-Command", line)
	default:
		cmd = exec.Command(shell, "-c", line)
	}
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Env = append(os.Environ(), "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "LEMBAS=1")
	setProcessGroup(cmd)
	return cmd
}

// stopGroup ends a command's whole process group: a polite signal first,
// then a kill if it has not ended within grace.
func stopGroup(p procHandle, grace time.Duration, done chan error) {
	p.terminate()
	select {
	case err := <-done:
		// Put it back for the caller.
		go func() { done <- err }()
		p.kill() // children that ignored the signal
	case <-time.After(grace):
		p.kill()
	}
}

func init() {
	toolFacts["bash"] = func(tb *toolbox) map[string]string {
		note := ""
		switch lineShellKind(tb.shell) {
		case "cmd":
			note = tb.spec.Tools["bash"].text("shell_note_cmd")
		case "powershell":
			note = tb.spec.Tools["bash"].text("shell_note_powershell")
		}
		return map[string]string{"shell_note": note}
	}
}

// lineShellKind is how a shell takes a command line: cmd (/C), powershell
// (-Command) or sh (-c: bash, sh, zsh…), by its name.
func lineShellKind(shell string) string {
	name := strings.ToLower(filepath.Base(strings.ReplaceAll(shell, `\`, "/")))
	name = strings.TrimSuffix(name, ".exe")
	switch name {
	case "cmd":
		return "cmd"
	case "powershell", "pwsh":
		return "powershell"
	}
	return "sh"
}

// windowsShell is the shell commands run in on Windows: bash where it is
// installed — on PATH (but not System32's, which is WSL's launcher into
// another system), Git for Windows' usual folders, MSYS2's — else
// %COMSPEC% (cmd.exe). getenv, exists and look are os.Getenv, a file
// test and exec.LookPath, injected so that Linux tests can try it.
func windowsShell(getenv func(string) string, exists func(string) bool, look func(string) (string, error)) string {
	if p, err := look("bash.exe"); err == nil && p != "" && !strings.Contains(strings.ToLower(p), `\system32\`) && !strings.Contains(strings.ToLower(p), `\windowsapps\`) {
		return p
	}
	var cands []string
	for _, v := range []string{"ProgramFiles", "ProgramW6432", "ProgramFiles(x86)"} {
		if d := getenv(v); d != "" {
			cands = append(cands, d+`\Git\bin\bash.exe`, d+`\Git\usr\bin\bash.exe`)
		}
	}
	if d := getenv("LOCALAPPDATA"); d != "" {
		cands = append(cands, d+`\Programs\Git\bin\bash.exe`)
	}
	cands = append(cands, `C:\Program Files\Git\bin\bash.exe`, `C:\msys64\usr\bin\bash.exe`, `C:\msys32\usr\bin\bash.exe`)
	if d := getenv("MSYS2_ROOT"); d != "" {
		cands = append([]string{d + `\usr\bin\bash.exe`}, cands...)
	}
	for _, c := range cands {
		if exists(c) {
			return c
		}
	}
	if s := getenv("COMSPEC"); s != "" {
		return s
	}
	return "cmd.exe"
}

// fileExists says whether a file is there.
func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// shellJobs is a session that can hold jobs: bash hands it the command, so
// a long one can become a job (jobs.go's engine implements it). A call
// without one (a bare toolbox) runs in the foreground only.
type shellJobs interface {
	runBash(tb *toolbox, ctx context.Context, t *toolSpec, line string, timeout int, background bool, live io.Writer, sb *sandboxRun) toolResult
}

// jobsKey carries the session's shellJobs in a call's context.
type jobsKey struct{}

func withJobs(ctx context.Context, j shellJobs) context.Context {
	return context.WithValue(ctx, jobsKey{}, j)
}

func shellJobsOf(ctx context.Context) shellJobs {
	j, _ := ctx.Value(jobsKey{}).(shellJobs)
	return j
}

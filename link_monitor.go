package main

// Monitor mode, the device's half (harness 3.5.0; acp.md "_lembas/monitor"):
// the instance asks the device to run a schedule's watch command in its
// folder and answers with the output's hash, so that the server runs the
// model only when the hash changed. No model is called here. The command
// goes through the mode's permission rules as a bash call would — a
// command the mode would ask about is refused, since nobody is there to
// answer — and then through the floor and the OS sandbox, as every
// command of a session does. Limits are loop.json scheduled.watch.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type monitorParams struct {
	Cwd      string          `json:"cwd"`
	Command  string          `json:"command"`
	Mode     string          `json:"mode"`
	Timeout  json.RawMessage `json:"timeout"`
	Schedule string          `json:"schedule"`
	Run      string          `json:"run"`
}

// monitor answers _lembas/monitor under the limits as they are now.
func (svc *linkService) monitor(raw json.RawMessage, lim remoteLimits) (any, error) {
	if !lim.Scheduled {
		return nil, schedRefusal("off")
	}
	var p monitorParams
	if err := decodeParams("_lembas/monitor", raw, &p); err != nil {
		return nil, err
	}
	dir, jerr := lim.judgeDir(p.Cwd)
	if jerr != nil {
		return nil, jerr
	}
	_, mode, merr := schedMode(lim, p.Mode)
	if merr != nil {
		return nil, merr
	}
	w := theSchedSpec().Watch
	timeout := w.TimeoutDefaultS
	if t := strings.TrimSpace(string(p.Timeout)); t != "" && t != "null" {
		n, ok := wholeNumber(p.Timeout)
		if !ok || n < 1 || n > w.TimeoutMaxS {
			return nil, schedRefusal("watch_timeout_arg", "max", w.TimeoutMaxS, "got", cutForError(t, 32))
		}
		timeout = n
	}
	res, rerr := runWatch(svc.agent.ctx, dir, mode, p.Command, time.Duration(timeout)*time.Second)
	if rerr != nil {
		return nil, rerr
	}
	return res, nil
}

// watchResult is _lembas/monitor's answer.
type watchResult struct {
	Hash      string `json:"hash"` // sha256: over the output's bytes, then the exit status
	Exit      int    `json:"exit"`
	Excerpt   string `json:"excerpt"`
	Bytes     int64  `json:"bytes"`     // the output's size
	Truncated bool   `json:"truncated"` // more than max_output_bytes: the hash covers those only
	Mode      string `json:"mode"`
	Note      string `json:"note,omitempty"` // what the sandbox did (a .git put back)
}

// watchJudge says whether mode's rules, config.yaml's and the project's,
// run command without asking: nil to run it, else the refusal.
func watchJudge(dir, mode, command string) *rpcError {
	cfg, err := loadConfig()
	if err != nil {
		return schedRefusal("watch_denied", "reason", err.Error()) // fail closed: the rules could not be read
	}
	return watchJudgeWith(dir, mode, command, cfg)
}

func watchJudgeWith(dir, mode, command string, cfg *config) *rpcError {
	w := theSchedSpec().Watch
	if strings.TrimSpace(command) == "" {
		return schedRefusal("watch_empty")
	}
	if len(command) > w.CommandMaxBytes {
		return schedRefusal("watch_long", "n", len(command), "max", w.CommandMaxBytes)
	}
	perm := permissionsFor(mode, dir, false, cfg)
	args, _ := json.Marshal(map[string]string{"command": command})
	d := perm.decide(theSpec().Tools["bash"], args)
	switch d.Verdict {
	case "allow":
		return nil
	case "ask":
		return schedRefusal("watch_asked", "mode", mode, "reason", d.Reason)
	}
	return schedRefusal("watch_denied", "reason", d.Reason)
}

// watchHash is the hash a watch command's output and exit status give:
// sha256 over the bytes and then the status in decimal.
func watchHash(out []byte, exit int) string {
	h := sha256.New()
	h.Write(out)
	h.Write([]byte(strconv.Itoa(exit)))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// watchWriter hashes what a watch command writes, up to max bytes, and
// keeps the excerpt; beyond max it only counts.
type watchWriter struct {
	mu      mutex
	h       hash.Hash
	max     int64
	n       int64
	excerpt []byte
	keep    int
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	take := p
	if room := w.max - w.n; room < int64(len(take)) {
		if room < 0 {
			room = 0
		}
		take = take[:room]
	}
	w.h.Write(take)
	if room := w.keep - len(w.excerpt); room > 0 {
		if room > len(take) {
			room = len(take)
		}
		w.excerpt = append(w.excerpt, take[:room]...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

// runWatch runs one watch command in dir under mode, with a timeout.
func runWatch(ctx context.Context, dir, mode, command string, timeout time.Duration) (*watchResult, *rpcError) {
	if err := watchJudge(dir, mode, command); err != nil {
		return nil, err
	}
	w := theSchedSpec().Watch
	tb := &toolbox{root: dir, spec: theSpec(), shell: userShell()}
	args, _ := json.Marshal(map[string]string{"command": command})
	ctx = withSandboxCall(ctx, mode, false)
	ctx, sb, refused := tb.sandboxFor(ctx, args)
	if refused != "" {
		return nil, schedRefusal("watch_sandbox", "reason", refused)
	}
	out := &watchWriter{h: sha256.New(), max: int64(w.MaxOutputBytes), keep: w.ExcerptBytes}
	cmd := sandboxed(ctx, shellCommand(tb.shell, command, dir))
	cmd.Stdout, cmd.Stderr = out, out // one pipe: the bytes in the order written
	grace := time.Duration(theSpec().Tools["bash"].limit("kill_grace_ms")) * time.Millisecond
	cmd.WaitDelay = grace + time.Second
	proc, err := startCommand(ctx, cmd) // in the mode's sandbox, the world where there is one (sandbox.go)
	if err != nil {
		return nil, &rpcError{Code: rpcInternalError, Message: loopText(theSchedSpec().Refusals, "watch_failed", "error", err)}
	}
	done := make(chan error, 1)
	go func() { done <- proc.wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		stopGroup(proc, grace, done)
		<-done
		return nil, &rpcError{Code: rpcInternalError, Message: loopText(theSchedSpec().Refusals, "watch_timed_out",
			"seconds", int(timeout/time.Second), "max", w.TimeoutMaxS)}
	case <-ctx.Done():
		stopGroup(proc, grace, done)
		<-done
		return nil, &rpcError{Code: rpcInternalError, Message: "the service is stopping; the watch command was stopped"}
	}
	code, coded := exitCodeOf(err)
	if !coded {
		return nil, &rpcError{Code: rpcInternalError, Message: loopText(theSchedSpec().Refusals, "watch_failed", "error", err)}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	h := out.h
	h.Write([]byte(strconv.Itoa(code)))
	res := &watchResult{Hash: "sha256:" + hex.EncodeToString(h.Sum(nil)), Exit: code,
		Excerpt: excerptText(out.excerpt), Bytes: out.n, Truncated: out.n > out.max, Mode: mode}
	res.Note = sb.finish(string(out.excerpt), code)
	return res, nil
}

// excerptText is the excerpt as text: a character cut at its end dropped,
// any other byte that is not UTF-8 replaced.
func excerptText(b []byte) string {
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
		if r, _ := utf8.DecodeLastRune(b); r != utf8.RuneError {
			break
		}
		b = b[:len(b)-1]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

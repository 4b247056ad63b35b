package main

// Background jobs (harness README 2.0.0): work a session started that goes
// on while the conversation does — a command run with bash background:
// true or still running when its timeout passed (it is no longer killed),
// and a subagent run with task background: true. A session's jobs share one
// id sequence (j1, j2, …) and one jobManager, which its root engine owns;
// subagents use their root's. A job that ends is marked to the engine that
// started it (loop.json jobs.marks): the mark is taken at that engine's
// next step, and a root engine that is idle is woken through its front
// end's hook to run a turn of its own, marked as the machine's.
//
//	bash/task ──► jobManager.start ──► job (process group | subagent)
//	                                      │ ends
//	                                      ▼
//	                     owner.jx.marks ──► next step: user message kind "job"
//	                                    └─► idle root: wake() → machine turn
//
// Jobs die with lembas: stopAll on every exit path, and on Unix a watchdog
// (jobs_unix.go) that kills a command's group when lembas's end of a pipe
// closes — also on kill -9, when no code of ours runs.
//
// The session floor (4): bash hands it commands through tools_shell.go's
// shellJobs; it calls the workers and the ground.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// jobsState is what an engine keeps of background work: the session's job
// manager (shared by a whole tree of subagents), the marks of ended jobs
// waiting for its next step, and, for a subagent, where it sits.
type jobsState struct {
	mu       mutex
	mgr      *jobManager
	marks    []string
	machine  bool  // the running turn was started by lembas (a job ended), not the person
	subUsage usage // subagents' usage, for the parent's turn
	sub      *subagentInfo
	wake     func()                                                    // the front end's: run a machine turn when idle (nil: nobody wakes)
	models   func(ctx context.Context, name string) (*modelRef, error) // finds a model a task names (nil: the session's connection only)
	busy     bool                                                      // a turn is running
	progress progressState
	askMu    mutex // one approval card at a time in a tree (progress.go waitingForPerson)
}

// job is one background command or subagent.
type job struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"` // command, subagent
	Title   string    `json:"title"`
	Started time.Time `json:"started"`

	mgr     *jobManager
	owner   *engine
	mu      mutex
	state   string // running, done, failed, stopped
	code    int
	coded   bool // code is an exit status
	ended   time.Time
	out     jobBuffer
	wait    chan struct{} // closed when output or state changes; nil while nobody waits
	stop    func()        // ends it (a process group, a subagent's context)
	settled bool          // its end is fully told (marks queued)
	quiet   bool          // its end is not marked: a foreground task's answer is its call's result
	sub     *subagentRun  // a subagent job's run
}

// info is the job as an event carries it.
func (j *job) info() *jobInfo {
	st, code, coded := j.status()
	in := &jobInfo{ID: j.ID, Kind: j.Kind, Title: j.Title, Status: st}
	if coded {
		in.Code = &code
	}
	if j.sub != nil && j.sub.e.jx.sub != nil {
		in.Agent = j.sub.e.jx.sub.agent
	}
	return in
}

// emitJob tells the session's front ends about a job (the main agent's
// stream, whoever in its tree started the job).
func (j *job) emitJob() {
	if j.owner == nil {
		return
	}
	root := j.owner.rootEngine()
	if root.emit == nil {
		return
	}
	ev := event{Type: evJob, Job: j.info(), Time: time.Now()}
	if root.sess != nil {
		ev.Session = root.sess.ID
	}
	root.emit(ev)
}

// jobBuffer keeps the last keep bytes of a job's output and where the
// model last read up to, counted from the job's first byte.
type jobBuffer struct {
	keep  int
	data  []byte
	start int64 // offset of data[0]
	read  int64 // offset the last read ended at
}

// write keeps up to twice keep bytes and trims back to keep only then, so
// a flood costs one copy per keep bytes rather than one per write; what
// is read is always at most the last keep bytes (view).
func (b *jobBuffer) write(p []byte) {
	b.data = append(b.data, p...)
	if over := len(b.data) - b.keep; over > b.keep {
		n := copy(b.data, b.data[over:])
		b.data = b.data[:n]
		b.start += int64(over)
	}
}

// view is the kept output: the last keep bytes, and the offset of its
// first byte.
func (b *jobBuffer) view() ([]byte, int64) {
	if over := len(b.data) - b.keep; over > 0 {
		return b.data[over:], b.start + int64(over)
	}
	return b.data, b.start
}

func (b *jobBuffer) end() int64 { return b.start + int64(len(b.data)) }

// next takes up to max bytes the model has not read; dropped is how many
// unread bytes were no longer kept.
func (b *jobBuffer) next(max int) (text string, dropped int64, more bool) {
	data, start := b.view()
	if b.read < start {
		dropped = start - b.read
		b.read = start
	}
	from := int(b.read - start)
	to := len(data)
	if max > 0 && to-from > max {
		to = from + max
		for to > from && to < len(data) && data[to]&0xC0 == 0x80 {
			to-- // not inside a UTF-8 sequence
		}
		more = true
	}
	b.read = start + int64(to)
	return string(data[from:to]), dropped, more
}

// tail is the last n lines kept; it counts as read.
func (b *jobBuffer) tail(n int) string {
	data, _ := b.view()
	b.read = b.end()
	s := strings.TrimRight(string(data), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Write makes a job an io.Writer for its command's output.
func (j *job) Write(p []byte) (int, error) {
	j.mu.Lock()
	j.out.write(p)
	j.changedLocked()
	j.mu.Unlock()
	return len(p), nil
}

// changedLocked wakes whoever waits for the job (job_output's wait).
func (j *job) changedLocked() {
	if j.wait != nil {
		close(j.wait)
		j.wait = nil
	}
}

// status is the job's state and exit code.
func (j *job) status() (string, int, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state, j.code, j.coded
}

// jobManager holds one session's jobs.
type jobManager struct {
	mu      mutex
	seq     int
	jobs    []*job
	spec    jobsSpec
	base    context.Context // background subagents run under it; cancelled by stopAll
	cancel  context.CancelFunc
	onEnd   func(j *job) // a front end's line when one ends
	stopped bool
	team    *teamState // the session's team, made on first use (team.go)
}

func newJobManager() *jobManager {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobManager{spec: theSpec().Loop.Jobs, base: ctx, cancel: cancel}
}

// jobs gives the engine's job manager, made on first use; a subagent's is
// its root's.
func (e *engine) jobs() *jobManager {
	e.jx.mu.Lock()
	defer e.jx.mu.Unlock()
	if e.jx.mgr == nil {
		e.jx.mgr = newJobManager()
	}
	return e.jx.mgr
}

// jobText fills one of loop.json's jobs.texts.
func jobText(key string, kv ...any) string { return loopText(theSpec().Loop.Jobs.Texts, key, kv...) }

// add registers a job, or says why it may not start (the limits).
func (m *jobManager) add(kind, title string, owner *engine) (*job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return nil, errorf("%s", jobText("closing"))
	}
	if len(m.jobs) >= m.spec.MaxPerSession {
		return nil, errorf("%s", jobText("session_full", "max", m.spec.MaxPerSession))
	}
	if m.runningLocked("") >= m.spec.MaxRunning {
		return nil, errorf("%s", jobText("too_many", "max", m.spec.MaxRunning))
	}
	m.seq++
	j := &job{ID: fmt.Sprintf("j%d", m.seq), Kind: kind, Title: title, Started: time.Now(), mgr: m, owner: owner,
		state: "running", out: jobBuffer{keep: m.spec.OutputKeepBytes}}
	m.jobs = append(m.jobs, j)
	return j, nil
}

func (m *jobManager) runningLocked(kind string) int {
	n := 0
	for _, j := range m.jobs {
		if st, _, _ := j.status(); st == "running" && (kind == "" || j.Kind == kind) {
			n++
		}
	}
	return n
}

func (m *jobManager) get(id string) *job {
	m.mu.Lock()
	defer m.mu.Unlock()
	id = strings.TrimSpace(id)
	for _, j := range m.jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

func (m *jobManager) list() []*job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*job(nil), m.jobs...)
}

// finish records how a job ended, tells the front end, and marks it to
// its owner. A job stopped by stopAll (lembas exiting) is not marked.
func (j *job) finish(state string, code int, coded bool) {
	j.mu.Lock()
	if j.state != "running" {
		j.mu.Unlock()
		return
	}
	j.state, j.code, j.coded, j.ended = state, code, coded, time.Now()
	quiet := j.quiet
	j.mu.Unlock()
	// Whoever waits for the job (job_output's wait, job_stop) is woken
	// last, so the mark is queued by the time they go on.
	defer func() {
		j.mu.Lock()
		j.settled = true
		j.changedLocked()
		j.mu.Unlock()
	}()
	m := j.mgr
	m.mu.Lock()
	onEnd, exiting := m.onEnd, m.stopped
	m.mu.Unlock()
	if exiting {
		return
	}
	// The mark is queued before anyone is told the job ended: a client
	// that sees it end (ACP's completed update, the REPL's line) and at
	// once sends the next prompt finds the mark in that prompt's request
	// (TestACPJobUpdates lost it now and then under load).
	if !quiet && j.owner != nil {
		j.owner.markJob(j.endMark())
	}
	j.emitJob()
	if quiet {
		return
	}
	if onEnd != nil {
		onEnd(j)
	}
}

// endMark is the message that tells the model a job ended.
func (j *job) endMark() string {
	mk := theSpec().Loop.Jobs.Marks
	state, code, coded := j.status()
	codeText := ""
	if coded {
		codeText = fillPairs(mk["code"], "code", code)
	}
	next := fillPairs(mk["next_command"], "id", j.ID)
	if j.Kind == "subagent" && j.sub != nil {
		ans := j.sub.lastAnswer()
		if ans == "" {
			ans = theSpec().Loop.Subagents.Texts["no_answer"]
		}
		next = fillPairs(mk["next_subagent"], "answer", ans)
	}
	return fillPairs(mk["ended"], "id", j.ID, "kind", j.Kind, "status", state, "title", j.Title, "code", codeText, "next", next)
}

// markJob queues a mark for the engine's next step; a root engine with no
// turn running is woken to run one of its own.
func (e *engine) markJob(mark string) {
	e.jx.mu.Lock()
	e.jx.marks = append(e.jx.marks, mark)
	wake := e.jx.wake
	idle := !e.jx.busy
	e.jx.mu.Unlock()
	if idle && wake != nil && e.jx.sub == nil {
		wake()
	}
}

// takeJobMarks gives the waiting marks to the model before its next
// request, as one user message of kind job.
func (e *engine) takeJobMarks() error {
	e.jx.mu.Lock()
	marks := e.jx.marks
	e.jx.marks = nil
	e.jx.mu.Unlock()
	if len(marks) == 0 {
		return nil
	}
	text := strings.Join(marks, "\n")
	if err := e.appendMsg(message{Role: "user", Content: text, Kind: "job"}); err != nil {
		return err
	}
	e.send(event{Type: evJob, Text: text})
	return nil
}

// pendingMarks says whether marks wait for a turn.
func (e *engine) pendingMarks() bool {
	e.jx.mu.Lock()
	defer e.jx.mu.Unlock()
	return len(e.jx.marks) > 0
}

// takeMachinePrompt takes the waiting marks as the prompt of a turn of
// lembas's own (marks.machine) and marks the next turn as the machine's;
// false when no mark waits.
func (e *engine) takeMachinePrompt() (string, bool) {
	e.jx.mu.Lock()
	marks := e.jx.marks
	e.jx.marks = nil
	e.jx.machine = len(marks) > 0
	e.jx.mu.Unlock()
	if len(marks) == 0 {
		return "", false
	}
	return fillPairs(theSpec().Loop.Jobs.Marks["machine"], "marks", strings.Join(marks, "\n")), true
}

// runMachineTurn runs a turn started by lembas because background work
// ended while nobody was typing. With no marks waiting it does nothing.
func (e *engine) runMachineTurn(ctx context.Context) (outcome, bool) {
	prompt, ok := e.takeMachinePrompt()
	if !ok {
		return outcome{}, false
	}
	return e.runTurn(ctx, prompt), true
}

// turnStarted and turnEnded bracket a turn for the job marks: while busy,
// an ended job waits for the next step instead of waking the session.
func (e *engine) turnStarted() (machine bool) {
	e.jx.mu.Lock()
	defer e.jx.mu.Unlock()
	e.jx.busy = true
	return e.jx.machine
}

func (e *engine) turnEnded() {
	e.jx.mu.Lock()
	e.jx.busy, e.jx.machine = false, false
	wake := e.jx.wake
	waiting := len(e.jx.marks) > 0 && e.jx.sub == nil
	e.jx.mu.Unlock()
	if waiting && wake != nil {
		wake() // a job ended after the last step took its marks
	}
}

// takeSubUsage is what subagents used since the last call, for the
// parent's turn.
func (e *engine) takeSubUsage() usage {
	e.jx.mu.Lock()
	defer e.jx.mu.Unlock()
	u := e.jx.subUsage
	e.jx.subUsage = usage{}
	return u
}

// stopAll ends every job, without marking them: the session's process is
// exiting. It waits for commands' groups to be killed.
func (m *jobManager) stopAll() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.stopped = true
	jobs := append([]*job(nil), m.jobs...)
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, j := range jobs {
		if st, _, _ := j.status(); st == "running" && j.stop != nil {
			wg.Add(1)
			go func(j *job) { defer wg.Done(); j.stop() }(j)
		}
	}
	wg.Wait()
}

// resetJobs stops the session's jobs and starts a new manager: the
// engine now works on another session (/new, /resume).
func (e *engine) resetJobs() {
	e.stopJobs()
	e.jx.mu.Lock()
	old := e.jx.mgr
	e.jx.mgr, e.jx.marks = nil, nil
	e.jx.mu.Unlock()
	if old != nil {
		m := e.jobs()
		old.mu.Lock()
		onEnd := old.onEnd
		old.mu.Unlock()
		m.onEnd = onEnd
	}
}

// stopOwned stops the running jobs an engine started (a subagent whose run
// ended: nobody would be told of their end).
func (m *jobManager) stopOwned(owner *engine) {
	for _, j := range m.list() {
		if st, _, _ := j.status(); st == "running" && j.owner == owner && j.stop != nil {
			j.stop()
		}
	}
}

// stopJobs ends the session's jobs (when it closes); safe with none.
func (e *engine) stopJobs() []string {
	e.jx.mu.Lock()
	m := e.jx.mgr
	e.jx.mu.Unlock()
	if m == nil {
		return nil
	}
	var ids []string
	for _, j := range m.list() {
		if st, _, _ := j.status(); st == "running" {
			ids = append(ids, j.ID)
		}
	}
	m.stopAll()
	return ids
}

// runBash is the engine's side of the bash tool (tools_shell.go): a
// command that may become a job of the session.
func (e *engine) runBash(tb *toolbox, ctx context.Context, t *toolSpec, line string, timeout int, background bool, live io.Writer, sb *sandboxRun) toolResult {
	return bashWithJobs(e, tb, ctx, t, line, timeout, background, live, sb)
}

// shellProc is a command that may become a job: while the call waits it
// writes to the call's buffer (and live tail); once adopted, to its job.
type shellProc struct {
	cmd   *exec.Cmd
	proc  procHandle // the started command (a child, or the world's)
	done  chan error
	mu    mutex
	fg    io.Writer // the waiting call's buffer; nil once a job
	job   *job
	guard *groupGuard
	sb    *sandboxRun // the call's sandbox: its notes when the command ends
}

func (p *shellProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	fg, j := p.fg, p.job
	p.mu.Unlock()
	if fg != nil {
		fg.Write(b)
	}
	if j != nil {
		j.Write(b)
	}
	return len(b), nil
}

// startShellProc starts one command line through shellCommand (so a
// sandbox applies to jobs too), in a process group that dies with lembas.
//
// A command the sandbox starts from a thread it then throws away is not
// tied to that thread's death (Pdeathsig would kill it at once); the
// watchdog still ends it with lembas.
func startShellProc(ctx context.Context, shell, line, dir string, fg io.Writer, j *job, grace time.Duration) (*shellProc, error) {
	cmd := sandboxed(ctx, shellCommand(shell, line, dir))
	if !startsOnOwnThread(ctx) {
		dieWithParent(cmd)
	}
	p := &shellProc{cmd: cmd, fg: fg, job: j, done: make(chan error, 1)}
	cmd.Stdout = p
	cmd.Stderr = p
	cmd.WaitDelay = grace + time.Second
	proc, err := startCommand(ctx, cmd)
	if err != nil {
		return nil, err
	}
	p.proc = proc
	go func() { p.done <- proc.wait() }()
	return p, nil
}

// adopt makes a running command a job: from now on its output goes to the
// job, a watchdog kills its group if lembas dies, and its end is marked.
func (p *shellProc) adopt(j *job) {
	grace := time.Duration(j.mgr.spec.StopGraceMS) * time.Millisecond
	p.mu.Lock()
	p.fg, p.job = nil, j
	p.mu.Unlock()
	if _, ok := p.proc.(execProc); ok {
		p.guard = guardGroup(p.cmd) // a world's commands die with the world, and it with lembas
	}
	j.emitJob()
	stopped := make(chan struct{})
	exited := make(chan struct{})
	var once sync.Once
	j.stop = func() {
		once.Do(func() {
			close(stopped)
			p.proc.terminate()
			timer := time.NewTimer(grace)
			defer timer.Stop()
			select {
			case <-exited:
			case <-timer.C:
			}
			p.proc.kill() // what ignored the signal, or is left in the group
		})
		<-j.doneCh()
	}
	go func() {
		err := <-p.done // the only reader once adopted
		close(exited)
		p.proc.kill() // what it left behind in its group
		p.guard.release()
		select {
		case <-stopped:
			p.sb.release() // its network cards go with it (nil-safe)
			j.finish("stopped", 0, false)
			return
		default:
		}
		code, coded := jobExitCode(err)
		if p.sb != nil {
			j.mu.Lock()
			data, _ := j.out.view()
			j.mu.Unlock()
			if note := p.sb.finish(string(data), code); note != "" {
				j.Write([]byte("\n" + note + "\n"))
			}
		}
		state := "done"
		if !coded || code != 0 {
			state = "failed"
		}
		j.finish(state, code, coded)
	}()
}

// doneCh is closed once the job has ended and its end is fully told (its
// mark queued), so that whoever waits sees the mark.
func (j *job) doneCh() chan struct{} {
	ch := make(chan struct{})
	go func() {
		for {
			j.mu.Lock()
			if j.state != "running" && j.settled {
				j.mu.Unlock()
				close(ch)
				return
			}
			if j.wait == nil {
				j.wait = make(chan struct{})
			}
			w := j.wait
			j.mu.Unlock()
			<-w
		}
	}()
	return ch
}

// jobExitCode reads a command's exit status from Wait's error.
func jobExitCode(err error) (int, bool) {
	if err == nil {
		return 0, true
	}
	code, ok := exitCodeOf(err)
	return code, ok && code >= 0
}

// jobTool looks up a call's job or answers the tool's unknown text.
func jobTool(e *engine, t *toolSpec, raw json.RawMessage) (*job, map[string]any, *toolResult) {
	var a map[string]any
	json.Unmarshal(raw, &a)
	id, _ := a["id"].(string)
	j := e.jobs().get(id)
	if j == nil {
		r := errResult(t.text("unknown", "id", strings.TrimSpace(id)))
		return nil, a, &r
	}
	return j, a, nil
}

func init() {
	sessionTools["job"] = engineTool(toolJob)
}

// toolJob runs one action on this session's jobs (the four job tools
// folded into one); each takes the arguments the tool of its former name
// took: id for all but list, and message for send.
func toolJob(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a map[string]any
	json.Unmarshal(raw, &a)
	action, _ := a["action"].(string)
	var run func(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult
	var needs []string
	switch action {
	case "list":
		run = toolJobList
	case "output":
		run, needs = toolJobOutput, []string{"id"}
	case "stop":
		run, needs = toolJobStop, []string{"id"}
	case "send":
		run, needs = toolJobSend, []string{"id", "message"}
	default:
		return errResult(t.text("bad_action", "action", action))
	}
	for _, k := range needs {
		if _, ok := a[k]; !ok {
			return errResult(t.text("needs", "action", action, "what", k))
		}
	}
	return run(e, ctx, t, raw)
}

func toolJobList(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	jobs := e.jobs().list()
	if len(jobs) == 0 {
		return toolResult{Text: t.text("none")}
	}
	var b strings.Builder
	for _, j := range jobs {
		st, _, _ := j.status()
		fmt.Fprintln(&b, t.text("row", "id", j.ID, "kind", j.Kind, "status", st, "elapsed", j.elapsed(), "title", j.Title))
	}
	return toolResult{Text: strings.TrimRight(b.String(), "\n")}
}

// elapsed is how long a job ran (or has been running), in whole seconds.
func (j *job) elapsed() string {
	j.mu.Lock()
	end := j.ended
	j.mu.Unlock()
	if end.IsZero() {
		end = time.Now()
	}
	return end.Sub(j.Started).Truncate(time.Second).String()
}

func toolJobOutput(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	j, a, bad := jobTool(e, t, raw)
	if bad != nil {
		return *bad
	}
	tail, _ := a["tail"].(bool)
	wait := 0
	if w, ok := a["wait"].(float64); ok && w > 0 {
		wait = int(w)
	}
	if max := t.limit("wait_max"); wait > max {
		wait = max
	}
	if wait > 0 && !tail {
		j.waitChange(ctx, time.Duration(wait)*time.Second)
	}
	return toolResult{Text: j.read(t, tail)}
}

// waitChange waits, at most d, until a running job with nothing unread
// writes or ends. Only this call's timer runs meanwhile.
func (j *job) waitChange(ctx context.Context, d time.Duration) {
	j.mu.Lock()
	if j.settled || (j.state == "running" && j.out.end() > j.out.read) {
		j.mu.Unlock()
		return
	}
	if j.wait == nil {
		j.wait = make(chan struct{})
	}
	w := j.wait
	j.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-w:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// read is job_output's answer: a head line, then the new output or a tail.
func (j *job) read(t *toolSpec, tail bool) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	code := ""
	if j.coded && j.state != "running" {
		code = t.text("code", "code", j.code)
	}
	var b strings.Builder
	if tail {
		n := t.limit("tail_lines")
		b.WriteString(t.text("head", "id", j.ID, "status", j.state, "code", code, "what", t.text("what_tail", "lines", n)))
		if s := j.out.tail(n); s != "" {
			b.WriteString("\n" + s)
		}
		return b.String()
	}
	b.WriteString(t.text("head", "id", j.ID, "status", j.state, "code", code, "what", t.text("what_new")))
	text, dropped, more := j.out.next(t.limit("read_max_bytes"))
	if dropped > 0 {
		b.WriteString("\n" + t.text("dropped", "n", dropped, "keep", j.out.keep))
	}
	if text == "" {
		b.WriteString("\n" + t.text("none_new"))
	} else {
		b.WriteString("\n" + strings.TrimRight(text, "\n"))
	}
	if more {
		b.WriteString("\n" + t.text("more", "id", j.ID))
	}
	return b.String()
}

func toolJobStop(e *engine, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	j, _, bad := jobTool(e, t, raw)
	if bad != nil {
		return *bad
	}
	if st, _, _ := j.status(); st != "running" || j.stop == nil {
		return toolResult{Text: t.text("already", "id", j.ID, "status", st)}
	}
	j.stop()
	return toolResult{Text: t.text("stopped", "id", j.ID, "title", j.Title)}
}

// jobRows is the session's jobs for a person (/jobs), oldest first.
func jobRows(m *jobManager) []string {
	if m == nil {
		return nil
	}
	jobs := m.list()
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Started.Before(jobs[b].Started) })
	var rows []string
	for _, j := range jobs {
		st, _, _ := j.status()
		rows = append(rows, jobText("repl_row", "id", j.ID, "kind", j.Kind, "status", st, "elapsed", j.elapsed(), "title", oneLine(j.Title, 80)))
	}
	return rows
}

// endedLine is the line a front end shows when a job ends.
func endedLine(j *job) string {
	st, code, coded := j.status()
	c := ""
	if coded {
		c = fillPairs(theSpec().Loop.Jobs.Marks["code"], "code", code)
	}
	return jobText("repl_ended", "id", j.ID, "status", st, "code", c, "title", oneLine(j.Title, 80))
}

// bashWithJobs runs a bash call where a session can hold jobs: in the
// background at once, or in the foreground until its timeout, when it
// goes on as a job instead of being killed (2.0.0). Without room for
// another job a command past its timeout is killed, as before.
//
// ctx carries the call's sandbox (tools_shell.go's sandboxFor); sb adds
// its notes to the answer, or, for a job, to the job's output when it
// ends.
func bashWithJobs(e *engine, tb *toolbox, ctx context.Context, t *toolSpec, line string, timeout int, background bool, live io.Writer, sb *sandboxRun) toolResult {
	grace := time.Duration(t.limit("kill_grace_ms")) * time.Millisecond
	m := e.jobs()
	if background {
		j, err := m.add("command", line, e)
		if err != nil {
			return errResult(err.Error())
		}
		p, err := startShellProc(ctx, tb.shell, line, tb.root, nil, j, grace)
		if err != nil {
			j.finish("failed", -1, false)
			return errResult(err.Error())
		}
		p.sb = sb
		p.adopt(j)
		return toolResult{Text: t.text("started_job", "id", j.ID, "title", oneLine(line, 120))}
	}
	buf := &boundedBuffer{keep: 256 << 10}
	var fg io.Writer = buf
	if live != nil {
		fg = io.MultiWriter(buf, live)
	}
	p, err := startShellProc(ctx, tb.shell, line, tb.root, fg, nil, grace)
	if err != nil {
		return errResult(err.Error())
	}
	p.sb = sb
	timer := time.NewTimer(time.Duration(timeout) * time.Second)
	defer timer.Stop()
	var werr error
	how := ""
	select {
	case werr = <-p.done:
	case <-ctx.Done():
		how = "cancelled"
	case <-timer.C:
		j, err := m.add("command", line, e)
		if err == nil {
			p.adopt(j)
			text := strings.TrimRight(buf.String(), "\n")
			if text != "" {
				text += "\n"
			}
			return toolResult{Text: text + t.text("became_job", "seconds", timeout, "id", j.ID)}
		}
		how = "timeout"
	}
	if how != "" {
		stopGroup(p.proc, grace, p.done)
		werr = <-p.done
	}
	text := strings.TrimRight(buf.String(), "\n")
	if text == "" {
		text = t.text("no_output")
	}
	code, coded := jobExitCode(werr)
	res := toolResult{}
	switch {
	case how == "timeout":
		text += "\n" + t.text("timeout", "seconds", timeout)
		res.IsError = true
	case how == "cancelled":
		text += "\n" + t.text("cancelled")
		res.Status, res.IsError = "cancelled", true
	case !coded:
		text += "\n" + werr.Error()
		res.IsError = true
	default:
		text += "\n" + t.text("exit", "code", code)
		res.IsError = code != 0
	}
	if note := sb.finish(buf.String(), code); note != "" {
		text += "\n" + note
	}
	res.Text = text
	return res
}

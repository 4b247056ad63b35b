//go:build unix

package main

// The watchdog that keeps a job from outliving lembas on Unix. Each job
// gets a small /bin/sh, in a process group of its own, that blocks reading
// a pipe whose only writer is lembas. When lembas ends — exit, crash or
// kill -9 — the kernel closes that end, the read returns, and the watchdog
// kills the job's whole group. No goroutine or timer of ours is involved,
// which is the point: after a kill -9 no code of ours runs.

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

type groupGuard struct {
	w    *os.File
	cmd  *exec.Cmd
	once sync.Once
}

// guardGroup starts the watchdog of a running command's group; nil when
// it cannot (the job then still dies with lembas by stopAll and, on
// Linux, by Pdeathsig on its shell).
func guardGroup(job *exec.Cmd) *groupGuard {
	if job.Process == nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", `read _ <&3; kill -9 -"$1" 2>/dev/null`, "lembas-job-guard", strconv.Itoa(job.Process.Pid))
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil
	}
	r.Close()
	go cmd.Wait()
	return &groupGuard{w: w, cmd: cmd}
}

// release lets the watchdog go: it kills what is left of the group (the
// job has ended) and exits.
func (g *groupGuard) release() {
	if g == nil {
		return
	}
	g.once.Do(func() { g.w.Close() })
}

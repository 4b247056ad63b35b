//go:build unix

package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// mcpAlive says whether a process exists and is not a zombie.
func mcpAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux"
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// fakeServerPids lists running processes whose environment names the fake
// server's log (Linux /proc; elsewhere none are found).
func fakeServerPids(t *testing.T, log string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains(string(env), "LEMBAS_FAKE_MCP_LOG="+log) && mcpAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// fakeChildSleep is the argument of the fake server's child's sleep.
const fakeChildSleep = "299.25"

// sleepAlive says whether a `sleep arg` process is running (not a zombie),
// as seen from here whatever namespace it is in.
func sleepAlive(arg string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); string(b) == "sleep\x00"+arg+"\x00" && mcpAlive(pid) {
			return true
		}
	}
	return false
}

package main

import (
	"os"
	"syscall"
)

// storageWrites is the bytes a finished child sent to storage: wait4's
// ru_oublock counts them in 512-byte blocks (the kernel's write_bytes, as
// in /proc/PID/io).
func storageWrites(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return -1
	}
	return int64(ru.Oublock) * 512
}

//go:build !linux

package main

import "os"

// storageWrites is not counted off Linux; BenchmarkTurnWriteBytes skips.
func storageWrites(ps *os.ProcessState) int64 { return -1 }

package main

import "testing"

// mcpAlive is not checked on Windows: the fake stdio server's no-orphans test
// skips there (no process groups to signal).
func mcpAlive(pid int) bool { return false }

func fakeServerPids(t *testing.T, log string) []int { return nil }

const fakeChildSleep = "299.25"

func sleepAlive(arg string) bool { return false }

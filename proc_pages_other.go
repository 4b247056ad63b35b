//go:build !linux

package main

// proc_pages_other.go: only Linux counts the binary's pages that fault-
// around mapped and nothing used (proc_pages_linux.go); here releasing
// them does nothing.

func releaseBinaryPages() {}

//go:build memprof

package main

// Built with -tags memprof (never in a release: runtime/pprof is not in
// the binary otherwise), LEMBAS_TRACE=1 LEMBAS_MEMPROFILE=path writes
// every allocation of the run (MemProfileRate 1) as a heap profile at its
// end, for `go tool pprof -sample_index=alloc_space -top BINARY path`:
// what a -p run allocates, and where (docs/measurements.md).

import (
	"os"
	"runtime"
	"runtime/pprof"
)

func init() {
	path := os.Getenv("LEMBAS_MEMPROFILE")
	if path == "" {
		return
	}
	runtime.MemProfileRate = 1
	traceAtEnd = func() {
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		pprof.Lookup("allocs").WriteTo(f, 0)
	}
}

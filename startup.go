package main

// startup.go: what a session's start runs beside its critical path. The
// path to the first request is config → the main spec → the session on
// disk (a lock, an fsync) → the model's lookup (a round trip) → the tools
// offered → the system prompt → the permissions → the request. Two pieces
// of it need nothing before them and can overlap the rest:
//
//   - the harness files needed further down (the store's, the library's,
//     the request quirks, the permission defaults and arity) are parsed on
//     a goroutine while the main path parses the main spec and waits on
//     the disk; each is behind its own sync.Once, so the main path's first
//     use waits for the parse in flight and never does it twice;
//   - a new session's model lookup (which may ask the server for its
//     models) runs while the session is created on disk.
//
// Nothing here changes what is decided or said, only when: the main path
// still takes every result, and reports every error, where it did before.
// (lazyre.go keeps --version and --help from doing any of it.)

import (
	"context"
	"sync"
)

// warmSessionSpecs starts the parse of the harness files a session needs
// after the main spec. The goroutine ends when they are parsed; a broken
// file (a build-time bug TestHarness catches) panics as it would on the
// main path.
func warmSessionSpecs() {
	go func() {
		theStoreSpec()
		theLibrarySpec()
		requestQuirks()
		permDefaults() // and, through its rules, the arity table
	}()
}

// warmCallSpecs starts, once a process, the parse of what the first tool
// call needs and the first request does not: the floor (every path a call
// names is checked against it) and the sandbox's boundary. The engine
// calls it when the model has begun to answer (withAnswering), so the
// parse overlaps the model's answer instead of delaying either the first
// request or the first call.
func warmCallSpecs() {
	warmCallOnce.Do(func() {
		go func() {
			loadHardline()
			loadBoundary()
		}()
	})
}

var warmCallOnce sync.Once // a plain Once: nothing allocated at start-up

// modelLookup is chooseModel running on its own goroutine.
type modelLookup struct {
	done   chan struct{}
	cancel context.CancelFunc
	ref    *modelRef
	err    error
}

// lookupModel starts chooseModel(ctx, cfg, name, getenv). Its caller
// either takes the answer (wait) or drops it (stop), which cancels a
// lookup still asking a server.
func lookupModel(ctx context.Context, cfg *config, name string, getenv func(string) string) *modelLookup {
	ctx, cancel := context.WithCancel(ctx)
	m := &modelLookup{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(m.done)
		m.ref, m.err = chooseModel(ctx, cfg, name, getenv)
	}()
	return m
}

// wait returns the lookup's answer once it has one.
func (m *modelLookup) wait() (*modelRef, error) {
	<-m.done
	return m.ref, m.err
}

// stop drops a lookup whose answer is not wanted (or already taken).
func (m *modelLookup) stop() {
	if m != nil {
		m.cancel()
	}
}

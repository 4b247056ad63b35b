package main

// The signals that end lembas. Ctrl-C (os.Interrupt) is not the only way a
// run is stopped: a service manager, `timeout`, a CI runner or `kill` send
// SIGTERM, and a closed terminal or SSH session sends SIGHUP. Go's default
// for those is to exit at once, skipping every deferred cleanup — the
// session's jobs, MCP servers and the store's lock are then left to the
// kernel, and the turn is never recorded as ended. Every mode catches all
// three, so they end the run as Ctrl-C does and the cleanup runs.
// (Windows delivers SIGTERM for a closed console and never SIGHUP; both
// are defined there, so the list builds everywhere.)

import (
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are what -p, serve --stdio and the service end on.
func stopSignals() []os.Signal {
	return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
}

// endOnSignals makes SIGTERM and SIGHUP end the REPL as a double Ctrl-C
// does: the running turn is cancelled and the loop quits, so runREPL's
// deferred cleanup (jobs, MCP servers, the store, the terminal's mode)
// runs. os.Interrupt is left to the REPL's own Ctrl-C handling.
func (r *repl) endOnSignals() (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		r.mu.Lock()
		cancel := r.cancel
		r.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		r.quit()
	}()
	return func() { signal.Stop(sig); close(done) }
}

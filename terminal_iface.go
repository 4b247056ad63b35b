package main

// The seam between the device link (link.go) and the device's terminals
// (terminal.go): the link hands every _lembas/terminal/* request to a
// terminalHandler and sends what the handler notifies; the terminals know
// nothing of WebSockets. When newTerminalHandler is nil (no terminal code
// on this build) the link offers neither the terminal nor the shell
// capability.

import (
	"context"
	"encoding/json"
)

// terminalLimits are the limits a terminal is opened under, read from
// config.yaml's remote: block at the moment of each request.
type terminalLimits struct {
	Enabled     bool     // remote.terminal
	Integration bool     // remote.terminal_integration (default true)
	Roots       []string // remote.roots, absolute, symlinks resolved; the first is the default cwd
}

// terminalHandler serves one link's terminals.
type terminalHandler interface {
	// request answers _lembas/terminal/open, input, resize and close;
	// an error is an *rpcError the link sends as the JSON-RPC error.
	request(ctx context.Context, method string, params json.RawMessage) (any, error)
	// closeAll hangs up every terminal of the link (the link closed).
	closeAll()
}

// newTerminalHandler makes the handler for one link. notify sends a
// notification to the instance (_lembas/terminal/output and exit); it may
// block while the link is slow, which is how flow control reaches the
// PTY reader. limits is called at every request.
var newTerminalHandler func(notify func(method string, params any) error, limits func() terminalLimits) terminalHandler

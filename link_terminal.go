package main

// The link's side of the terminals (terminal_iface.go is the seam): one
// handler per link, made when the link comes up and hung up when it goes,
// so a redial starts with no terminals and may open four again; and the
// order the instance sent keystrokes in is the order the shell reads them.

import "encoding/json"

// terminals is the current link's terminal handler, or nil.
func (svc *linkService) terminals() terminalHandler {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.term
}

// openTerminals makes the handler of a link that just came up. The
// previous link's handler was closed when that link ended; a closed
// handler refuses every open, so it is never reused.
func (svc *linkService) openTerminals() {
	if svc.newTerm == nil {
		return
	}
	th := svc.newTerm(svc.notifyBlocking, func() terminalLimits {
		l, _ := readRemoteLimits()
		return l.termLimits()
	})
	svc.mu.Lock()
	svc.term = th
	svc.mu.Unlock()
}

// closeTerminals hangs up every terminal of the link that ended.
func (svc *linkService) closeTerminals() {
	if th := svc.terminals(); th != nil {
		th.closeAll()
	}
}

// terminalRequest answers a _lembas/terminal/* request. The seed has
// input, resize and close as requests (client → agent, like initialize;
// only session/cancel is marked a notification); a client sending them as
// notifications is served the same way, without an answer. open may take
// a while (a shell starts) and runs beside the read loop; input, resize
// and close only queue keystrokes, set a size or send a signal, and are
// done here on the read loop, so keystrokes keep their order — one
// goroutine each could reorder a fast typist's input.
func (svc *linkService) terminalRequest(c *rpcCall, async func(func() (any, error))) {
	th := svc.terminals()
	if th == nil {
		c.reply(nil, rpcErrorf(rpcMethodNotFound, "%s", loopText(svc.sp.Errors, "unknown_method", "method", c.Method)))
		return
	}
	if c.Method == "_lembas/terminal/open" {
		async(func() (any, error) { return th.request(svc.agent.ctx, c.Method, c.Params) })
		return
	}
	c.reply(th.request(svc.agent.ctx, c.Method, c.Params))
}

// terminalNotification serves input, resize or close sent as a
// notification, when the terminal capability is on.
func (svc *linkService) terminalNotification(method string, params json.RawMessage) {
	lim, _ := readRemoteLimits()
	if th := svc.terminals(); th != nil && svc.hasCap(lim, "terminal") {
		th.request(svc.agent.ctx, method, params)
	}
}

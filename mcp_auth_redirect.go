package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// serveLoginRedirect answers the browser's visit to the login's redirect
// address on ln until ln is closed: one request a connection, its header
// read within timeout, and a short plain-text page back. It is all the
// HTTP server the login needs; net/http's Server (with its HTTP/2 server,
// routing and keep-alive machinery) would add about 150 KB to the binary
// for this one page. A request is read from at most max bytes (what the
// Server's MaxHeaderBytes bounded): past them it reads as cut short.
func serveLoginRedirect(ln net.Listener, timeout time.Duration, max int64, answer func(u *url.URL) (status int, body string)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(timeout))
			req, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, max)))
			if err != nil {
				return
			}
			status, body := answer(req.URL)
			fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
				status, http.StatusText(status), len(body), body)
		}()
	}
}

package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestLoginRedirectResponder: the login's redirect page answers a request
// with the page its answer gives, and a request past the byte bound (a
// megabyte of header) is cut short, not read into memory whole.
func TestLoginRedirectResponder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 4)
	go serveLoginRedirect(ln, 5*time.Second, 4096, func(u *url.URL) (int, string) {
		seen <- u.RawQuery
		if u.Path != "/callback" {
			return http.StatusNotFound, "nope\n"
		}
		return http.StatusOK, "done\n"
	})
	resp, err := http.Get("http://" + ln.Addr().String() + "/callback?code=c&state=s")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "done\n" || <-seen != "code=c&state=s" {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	go c.Write([]byte("GET /callback?code=x HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n"))
	got, _ := io.ReadAll(c)
	if len(got) != 0 {
		t.Errorf("a request past the bound was answered: %q", got[:min(len(got), 80)])
	}
	select {
	case q := <-seen:
		t.Errorf("a request past the bound reached the answer: %q", q)
	default:
	}
}

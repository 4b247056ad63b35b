package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readAllSSE(r io.Reader) ([]string, error) {
	s := newSSEReader(r)
	var out []string
	for {
		d, err := s.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(d))
	}
}

func TestSSEReader(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"data:a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"data: a\r\rdata: b\r\r", []string{"a", "b"}},
		{": comment\nevent: x\nid: 1\nretry: 5\ndata: a\n\n", []string{"a"}},
		{"data: one\ndata: two\n\n", []string{"one\ntwo"}},
		{"data: last without blank line", []string{"last without blank line"}},
		{"\n\n\ndata: x\n\n\n\n", []string{"x"}},
		{"data\n\n", []string{""}},
		{"data:  two spaces\n\n", []string{" two spaces"}},
	}
	for _, c := range cases {
		// Every chunk size, down to one byte.
		for _, n := range []int{1, 2, 5, 1000} {
			got, err := readAllSSE(&chunkReader{data: []byte(c.in), n: n})
			if err != nil {
				t.Errorf("%q: %v", c.in, err)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
				t.Errorf("%q at %d bytes: got %q, want %q", c.in, n, got, c.want)
			}
		}
	}
}

// TestSSEReadError holds the one rule at a read error, for the model's
// stream and MCP's alike: an event cut by the end of the stream is
// delivered, one cut by any other error is dropped (its data may be cut
// mid-way; MCP resumes from the last id instead), and the fields MCP needs
// (id, retry) come with the event.
func TestSSEReadError(t *testing.T) {
	reset := errors.New("connection reset")
	cut := func() io.Reader {
		return io.MultiReader(strings.NewReader("id: 7\nretry: 250\ndata: {\"a\":1}\n\ndata: {\"cut"), errReader{reset})
	}
	s := newSSEReader(cut())
	e, err := s.event()
	if err != nil || string(e.data) != `{"a":1}` || e.id != "7" || e.retry != 250 || !e.hasData {
		t.Fatalf("first event = %+v, %v", e, err)
	}
	if e, err = s.event(); err != reset || e.hasData {
		t.Errorf("an event cut by a reset = %+v, %v; want it dropped and the error", e, err)
	}
	if got, err := readAllSSE(cut()); err != reset || len(got) != 1 {
		t.Errorf("the model's reader at a reset: %q, %v; want one event and the error", got, err)
	}
	s = newSSEReader(strings.NewReader("id: 9\n\ndata: tail"))
	if e, err = s.event(); err != nil || e.id != "9" || e.hasData {
		t.Errorf("a priming event (id only) = %+v, %v", e, err)
	}
	if e, err = s.event(); err != nil || string(e.data) != "tail" {
		t.Errorf("an event cut by the end of the stream = %+v, %v; want it delivered", e, err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// chunkReader hands out at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := c.n
	if n > len(p) {
		n = len(p)
	}
	if n > len(c.data) {
		n = len(c.data)
	}
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzSSE: the reader never panics, and how the bytes are chunked never
// changes what it reads.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(": c\r\ndata: x\r\n\r\n"))
	f.Add([]byte("data: a\rdata: b\r\r"))
	f.Add([]byte("event: e\ndata\ndata:\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err1 := readAllSSE(bytes.NewReader(in))
		bytewise, err2 := readAllSSE(&chunkReader{data: in, n: 1})
		if (err1 == nil) != (err2 == nil) || strings.Join(whole, "\x00") != strings.Join(bytewise, "\x00") || len(whole) != len(bytewise) {
			t.Fatalf("chunking changed the result: %q vs %q (%v, %v)", whole, bytewise, err1, err2)
		}
	})
}

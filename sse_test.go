package main

import (
	"bytes"
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

package main

// A small reader for server-sent events (text/event-stream), written here
// instead of pulling a module. Model servers send one JSON object per
// "data:" field; only the data matters to us, so comments, event names, ids
// and retry fields are read and dropped.

import (
	"bufio"
	"bytes"
	"io"
)

// sseReader yields the data of each event of a stream.
type sseReader struct {
	r    *bufio.Reader
	data bytes.Buffer
}

// maxSSELine bounds one line so a hostile or broken server cannot make us
// hold an unbounded buffer; a model's chunk is far smaller.
const maxSSELine = 16 << 20

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the data of the next event. It returns io.EOF at the end of
// the stream; an event cut off by the end of the stream (no blank line after
// it) is still returned, since some servers close without the last blank
// line. Lines end in \n, \r\n or \r.
func (s *sseReader) next() ([]byte, error) {
	s.data.Reset()
	have := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && have {
				return s.data.Bytes(), nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if have {
				return s.data.Bytes(), nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if have {
			s.data.WriteByte('\n')
		}
		s.data.Write(value)
		have = true
	}
}

// readLine reads one line without its terminator.
func (s *sseReader) readLine() ([]byte, error) {
	var line []byte
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		switch b {
		case '\n':
			return line, nil
		case '\r':
			if nb, err := s.r.Peek(1); err == nil && nb[0] == '\n' {
				s.r.ReadByte()
			}
			return line, nil
		}
		if len(line) >= maxSSELine {
			return nil, errSSELineTooLong
		}
		line = append(line, b)
	}
}

type sseError string

func (e sseError) Error() string { return string(e) }

const errSSELineTooLong = sseError("event stream line over 16 MiB")

package main

// A small reader for server-sent events (text/event-stream), written here
// instead of pulling a module, and the only one: model streams take each
// event's data (next), MCP's Streamable HTTP takes the id and retry too
// (event), to resume a stream from its last id. Comments and event names
// are read and dropped.

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
)

// sseReader yields the data of each event of a stream.
type sseReader struct {
	r    *bufio.Reader
	data bytes.Buffer
}

// maxSSELine bounds one line so a hostile or broken server cannot make us
// hold an unbounded buffer; a model's chunk is far smaller.
const maxSSELine = 16 << 20

// sseBuffer is the reader's buffer. readLine takes a byte at a time and
// grows its own line, so a line is not bounded by it; what arrives per
// read of a model's stream is one chunk or a few (the transport reads 4
// KB at a time). 64 KB here cost -p 384 KB of its 4.4 MB of allocations.
const sseBuffer = 4 << 10

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, sseBuffer)}
}

// sseEvent is one event: its data (lines joined by \n), and the id and
// retry fields when it had them (retry -1: none).
type sseEvent struct {
	data    []byte
	hasData bool // a data field was given, even an empty one
	id      string
	retry   int
}

// next returns the data of the next event that has data. It returns io.EOF
// at the end of the stream.
func (s *sseReader) next() ([]byte, error) {
	for {
		e, err := s.event()
		if err != nil {
			return nil, err
		}
		if e.hasData {
			return e.data, nil
		}
	}
}

// event returns the next event, whichever fields it has. At the end of
// the stream an event cut off (no blank line after it) is still returned,
// since some servers close without the last blank line; at any other read
// error (a reset, a line over maxSSELine) the part read is dropped, since
// its data may be cut mid-way, and the error returned: a stream that can
// resume (MCP's) gets the event again from its last id. Lines end in \n,
// \r\n or \r. The data is valid until the next call.
func (s *sseReader) event() (sseEvent, error) {
	s.data.Reset()
	e := sseEvent{retry: -1}
	have := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && have {
				e.data = s.data.Bytes()
				return e, nil
			}
			return sseEvent{retry: -1}, err
		}
		if len(line) == 0 {
			if have {
				e.data = s.data.Bytes()
				return e, nil
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
		switch string(field) {
		case "data":
			if e.hasData {
				s.data.WriteByte('\n')
			}
			s.data.Write(value)
			e.hasData, have = true, true
		case "id":
			if !bytes.ContainsRune(value, 0) {
				e.id, have = string(value), true
			}
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				e.retry, have = n, true
			}
		case "event":
			have = true
		}
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

package anthropic

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// maxLine is the longest SSE line the reader accepts.
const maxLine = 1 << 20

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	name string
	data []byte // data lines joined with "\n"; valid until the next read
}

// sseReader reads server-sent events: lines end in LF, CRLF or CR; a line
// starting with ':' is a comment; "data:" with or without the space; the
// data lines of one event are joined with "\n"; a blank line dispatches.
// An event still pending at EOF is dispatched too, for servers that omit
// the last blank line.
type sseReader struct {
	sc   *bufio.Scanner
	name string
	data []byte
	has  bool // a data line was seen
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine+2) // +2: the line end
	sc.Split(splitLines)
	return &sseReader{sc: sc}
}

// next returns the next event, or io.EOF, or a *bridge.Error.
func (r *sseReader) next() (sseEvent, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) > maxLine {
			return sseEvent{}, errLineTooLong()
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
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
			if r.has {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			r.has = true
		case "event":
			r.name = string(value)
		}
		// id and retry are not used: Anthropic sends neither.
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseEvent{}, errLineTooLong()
		}
		var be *bridge.Error
		if errors.As(err, &be) {
			return sseEvent{}, be
		}
		return sseEvent{}, bridge.Errorf(bridge.CodeUpstream, "reading upstream stream: %v", err)
	}
	if ev, ok := r.dispatch(); ok {
		return ev, nil
	}
	return sseEvent{}, io.EOF
}

func errLineTooLong() error {
	return bridge.Errorf(bridge.CodeUpstream, "upstream stream: SSE line longer than %d bytes", maxLine)
}

func (r *sseReader) dispatch() (sseEvent, bool) {
	if !r.has {
		r.name = ""
		return sseEvent{}, false
	}
	ev := sseEvent{name: r.name, data: r.data}
	r.name, r.data, r.has = "", r.data[:0], false
	return ev, true
}

// splitLines is a bufio.SplitFunc for SSE line ends: LF, CRLF or a lone CR.
func splitLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		switch {
		case i+1 < len(data) && data[i+1] == '\n':
			return i + 2, data[:i], nil
		case i+1 < len(data) || atEOF:
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a CR at the end: wait to see whether LF follows
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

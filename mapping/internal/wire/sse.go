package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// MaxLine is the longest SSE line an SSEReader accepts.
const MaxLine = 1 << 20

// SSEEvent is one dispatched server-sent event.
type SSEEvent struct {
	Name string // the event: field, "" when none
	ID   string // the id: field of this event, "" when none
	Data []byte // data lines joined with "\n"; valid until the next Next
}

// SSEReader reads server-sent events: lines end in LF, CRLF or CR; a line
// starting with ':' is a comment; "data:" with or without the space; the
// data lines of one event are joined with "\n"; a blank line dispatches.
// An event still pending at EOF is dispatched too, for servers that omit
// the last blank line. It is not safe for concurrent use.
type SSEReader struct {
	sc   *bufio.Scanner
	name string
	id   string
	data []byte
	has  bool // a data line was seen
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine+2) // +2: the line end
	sc.Split(splitLines)
	return &SSEReader{sc: sc}
}

// Next returns the next event, or io.EOF, or a *bridge.Error (CodeUpstream
// for a line too long or a failed read).
func (r *SSEReader) Next() (SSEEvent, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) > MaxLine {
			return SSEEvent{}, errLineTooLong()
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
		case "id":
			r.id = string(value)
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return SSEEvent{}, errLineTooLong()
		}
		var be *bridge.Error
		if errors.As(err, &be) {
			return SSEEvent{}, be
		}
		return SSEEvent{}, bridge.Errorf(bridge.CodeUpstream, "reading upstream stream: %v", err)
	}
	if ev, ok := r.dispatch(); ok {
		return ev, nil
	}
	return SSEEvent{}, io.EOF
}

func errLineTooLong() error {
	return bridge.Errorf(bridge.CodeUpstream, "upstream stream: SSE line longer than %d bytes", MaxLine)
}

func (r *SSEReader) dispatch() (SSEEvent, bool) {
	if !r.has {
		r.name, r.id = "", ""
		return SSEEvent{}, false
	}
	ev := SSEEvent{Name: r.name, ID: r.id, Data: r.data}
	r.name, r.id, r.data, r.has = "", "", r.data[:0], false
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

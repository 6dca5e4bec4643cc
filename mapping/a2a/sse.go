package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// MaxEvent bounds one SSE event an upstream sends (the a2a-v1 client's
// cap).
const MaxEvent = 4 << 20

// SSEEvent is one dispatched server-sent event.
type SSEEvent struct {
	ID   string // the last id: seen (SSE ids persist across events)
	Name string // event:, "" for message
	Data []byte // data lines joined with "\n"; valid until the next Next
}

// SSEReader reads server-sent events: LF, CRLF or CR line ends, comments,
// "field:value" with an optional space, data lines joined, an event still
// pending at EOF dispatched. It is not safe for concurrent use.
type SSEReader struct {
	sc   *bufio.Scanner
	id   string
	name string
	data []byte
	has  bool
}

// NewSSEReader reads r.
func NewSSEReader(r io.Reader) *SSEReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxEvent+2)
	sc.Split(splitLines)
	return &SSEReader{sc: sc}
}

// Next returns the next event, io.EOF at the end, or a *bridge.Error.
func (r *SSEReader) Next() (SSEEvent, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
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
			if len(r.data)+len(value) > MaxEvent {
				return SSEEvent{}, bridge.Errorf(bridge.CodeUpstream, "upstream agent: an SSE event longer than %d bytes", MaxEvent)
			}
			r.data = append(r.data, value...)
			r.has = true
		case "event":
			r.name = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.id = string(value)
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return SSEEvent{}, bridge.Errorf(bridge.CodeUpstream, "upstream agent: an SSE line longer than %d bytes", MaxEvent)
		}
		var be *bridge.Error
		if errors.As(err, &be) {
			return SSEEvent{}, be
		}
		return SSEEvent{}, bridge.Errorf(bridge.CodeUpstream, "reading the upstream agent's stream: %v", err)
	}
	if ev, ok := r.dispatch(); ok {
		return ev, nil
	}
	return SSEEvent{}, io.EOF
}

func (r *SSEReader) dispatch() (SSEEvent, bool) {
	if !r.has {
		r.name = ""
		return SSEEvent{}, false
	}
	ev := SSEEvent{ID: r.id, Name: r.name, Data: r.data}
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
		return 0, nil, nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

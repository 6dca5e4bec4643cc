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
	ID   string // the id: field of this event ("" when none), or with KeepID the last one seen
	Data []byte // data lines joined with "\n"; valid until the next Next
}

// SSEOptions adjust an SSEReader.
type SSEOptions struct {
	// MaxEvent bounds one event's data, its lines joined; 0 bounds only
	// each line, by MaxLine.
	MaxEvent int
	// KeepID makes an event's ID the last id: seen, in it or an earlier
	// event, as the SSE spec's last event ID (an id with a NUL is
	// ignored). Without it ID is the event's own id: field.
	KeepID bool
	// Who names the peer in errors; "" is "upstream stream".
	Who string
}

// SSEReader reads server-sent events: lines end in LF, CRLF or CR; a line
// starting with ':' is a comment; "data:" with or without the space; the
// data lines of one event are joined with "\n"; a blank line dispatches.
// An event still pending at EOF is dispatched too, for servers that omit
// the last blank line. It is not safe for concurrent use.
type SSEReader struct {
	sc   *bufio.Scanner
	opt  SSEOptions
	max  int // the longest line, or event with opt.MaxEvent
	name string
	last string // the last event: name seen, reused while names repeat
	id   string
	data []byte
	has  bool // a data line was seen
}

// NewSSEReader reads events from r with the default options.
func NewSSEReader(r io.Reader) *SSEReader { return NewSSEReaderOptions(r, SSEOptions{}) }

// NewSSEReaderOptions reads events from r as opt says.
func NewSSEReaderOptions(r io.Reader, opt SSEOptions) *SSEReader {
	max := MaxLine
	if opt.MaxEvent > 0 {
		max = opt.MaxEvent
	}
	if opt.Who == "" {
		opt.Who = "upstream stream"
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), max+2) // +2: the line end
	sc.Split(splitLines)
	return &SSEReader{sc: sc, opt: opt, max: max}
}

// Next returns the next event, or io.EOF, or a *bridge.Error (CodeUpstream
// for a line too long or a failed read).
func (r *SSEReader) Next() (SSEEvent, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) > r.max {
			return SSEEvent{}, r.errTooLong()
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
			if r.opt.MaxEvent > 0 && len(r.data)+len(value) > r.opt.MaxEvent {
				return SSEEvent{}, r.errTooLong()
			}
			r.data = append(r.data, value...)
			r.has = true
		case "event":
			if string(value) != r.last { // no copy while a stream repeats its names
				r.last = string(value)
			}
			r.name = r.last
		case "id":
			if !r.opt.KeepID || bytes.IndexByte(value, 0) < 0 {
				r.id = string(value)
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return SSEEvent{}, r.errTooLong()
		}
		var be *bridge.Error
		if errors.As(err, &be) {
			return SSEEvent{}, be
		}
		// Go's text ("unexpected EOF", "read tcp 10.0.0.5:41234->...")
		// names internal addresses and means nothing to a client.
		what := "the connection failed"
		if errors.Is(err, io.ErrUnexpectedEOF) {
			what = "it ended in the middle"
		}
		return SSEEvent{}, bridge.Errorf(bridge.CodeUpstream, "reading %s: %s", r.opt.Who, what)
	}
	if ev, ok := r.dispatch(); ok {
		return ev, nil
	}
	return SSEEvent{}, io.EOF
}

func (r *SSEReader) errTooLong() error {
	what := "line"
	if r.opt.MaxEvent > 0 {
		what = "event"
	}
	return bridge.Errorf(bridge.CodeUpstream, "%s: an SSE %s longer than %d bytes", r.opt.Who, what, r.max)
}

func (r *SSEReader) dispatch() (SSEEvent, bool) {
	if !r.has {
		r.name = ""
		if !r.opt.KeepID {
			r.id = ""
		}
		return SSEEvent{}, false
	}
	ev := SSEEvent{Name: r.name, ID: r.id, Data: r.data}
	r.name, r.data, r.has = "", r.data[:0], false
	if !r.opt.KeepID {
		r.id = ""
	}
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

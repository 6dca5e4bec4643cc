package inbound

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
)

// Cursor is where a client resumes a run's stream: after the frame whose
// id it last received. An event may render as several frames; the last
// has the event's id (bridge.EventID), the ones before it bridge.FrameID
// (see mapping/internal/wire.FrameIDs). The zero Cursor is the start.
type Cursor struct {
	Seq   int64 // the event
	Frame int   // which of its frames: k >= 1, or 0 for the last
}

// ParseCursor reads a client's resume cursor of run: "" is the start, a
// bare number an event seq (after all of that event), else a
// bridge.EventID or bridge.FrameID naming run. ok is false for anything
// else, which a dialect answers as a bad request.
func ParseCursor(run, c string) (cur Cursor, ok bool) {
	if c == "" {
		return Cursor{}, true
	}
	if seq, err := strconv.ParseInt(c, 10, 64); err == nil && seq >= 0 {
		return Cursor{Seq: seq}, true
	}
	r, seq, frame, ok := bridge.ParseFrameID(c)
	if !ok || r != run {
		return Cursor{}, false
	}
	return Cursor{Seq: seq, Frame: frame}, true
}

// IsZero reports whether c is the start of the stream.
func (c Cursor) IsZero() bool { return c == Cursor{} }

// ID is the frame id c names in run's stream.
func (c Cursor) ID(run string) string {
	if c.Frame > 0 {
		return bridge.FrameID(run, c.Seq, c.Frame)
	}
	return bridge.EventID(run, c.Seq)
}

// cmp orders frame (seq, frame) of a stream against c: -1 before it, 0 the
// frame c names, +1 after it.
func (c Cursor) cmp(seq int64, frame int) int {
	switch {
	case seq != c.Seq:
		if seq < c.Seq {
			return -1
		}
		return 1
	case frame == c.Frame:
		return 0
	case c.Frame == 0: // c is the event's last frame, frame an earlier one
		return -1
	case frame == 0 || frame > c.Frame:
		return 1
	}
	return -1
}

// Resume subscribes to run's events for a client resuming after cur, so
// the dialect's encoder, started fresh, renders the very frames the
// client's stream had and SkipFrames drops the ones it has already: the
// events start where that stream started. Each request of a run that
// waited for tool results and was continued was answered with a stream of
// its own, from the event after the run's final before it; so the events
// start after the last final before event cur.Seq (at the run's first,
// for a cursor in its first step). The engine finds that final in the
// store (bridge.Engine.StepStart), so a resume deep into a long run holds
// none of the events before it.
func Resume(ctx context.Context, e *bridge.Engine, runID string, cur Cursor) (*bridge.Run, bridge.Stream, error) {
	var after int64
	if cur.Seq > 1 {
		var err error
		if after, err = e.StepStart(ctx, runID, cur.Seq); err != nil {
			return nil, nil, err
		}
	}
	return e.Subscribe(ctx, runID, after)
}

// SkipFrames returns w wrapped to drop the SSE frames a resuming client
// has: each frame up to and including the one cur names, by its id: line
// (a frame without one, such as [DONE] or a ping, is dropped until a frame
// at or past cur was seen, then kept). It expects whole frames in each
// Write, as every encoder writes them. Header, WriteHeader and flushes
// (through Unwrap) go to w. A zero cur gives w itself.
func SkipFrames(w http.ResponseWriter, cur Cursor) http.ResponseWriter {
	if cur.IsZero() {
		return w
	}
	return &frameSkipper{ResponseWriter: w, cur: cur}
}

type frameSkipper struct {
	http.ResponseWriter
	cur    Cursor
	passed bool   // a frame at or past cur was seen: the rest goes through
	part   []byte // an incomplete frame, before passed
}

// Unwrap lets http.ResponseController flush the underlying writer.
func (s *frameSkipper) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *frameSkipper) Write(p []byte) (int, error) {
	if s.passed {
		return s.ResponseWriter.Write(p)
	}
	b := p
	if len(s.part) > 0 {
		s.part = append(s.part, p...)
		b = s.part
	}
	for len(b) > 0 {
		end := bytes.Index(b, frameEnd)
		if end < 0 {
			s.part = append(s.part[:0], b...)
			return len(p), nil
		}
		frame := b[:end+len(frameEnd)]
		seq, k, ok := frameID(frame)
		if !ok {
			b = b[len(frame):]
			continue
		}
		switch s.cur.cmp(seq, k) {
		case 0:
			b = b[len(frame):]
			s.passed = true
		case 1:
			s.passed = true
		default:
			b = b[len(frame):]
			continue
		}
		break
	}
	s.part = nil
	if s.passed && len(b) > 0 {
		if _, err := s.ResponseWriter.Write(b); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

var frameEnd = []byte("\n\n")

// frameID finds the id: line of one frame and reads its seq and frame.
func frameID(frame []byte) (seq int64, k int, ok bool) {
	for off := 0; off < len(frame); {
		nl := bytes.IndexByte(frame[off:], '\n')
		if nl < 0 {
			return 0, 0, false
		}
		if line := frame[off : off+nl]; bytes.HasPrefix(line, []byte("id: ")) {
			_, seq, k, ok := bridge.ParseFrameID(string(line[len("id: "):]))
			return seq, k, ok
		}
		off += nl + 1
	}
	return 0, 0, false
}

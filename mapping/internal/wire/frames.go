package wire

import (
	"bytes"
	"strconv"
)

// FrameIDs gives each SSE frame of one hub event an id of its own. An
// encoder builds the frames of an event with the event's id,
// "id: <run>:<seq>", on each; Number then appends ".1", ".2", ... to the
// id of every frame but the last that has one (bridge.FrameID), which
// keeps bridge.EventID. So every frame is a resume cursor of its own, and
// "run:seq" still means "after all of event seq". The zero value is
// ready; it is not safe for concurrent use.
type FrameIDs struct {
	spare []byte // the buffer Number builds into; the caller's old one is kept for the next call
	ends  []int  // the end of each id line (its '\n'), reused
}

// Number returns the frames in b with their ids numbered: b itself when at
// most one of them has an id, else a buffer of the FrameIDs' own, which
// the caller uses as its new frame buffer (and b becomes the FrameIDs').
func (n *FrameIDs) Number(b []byte) []byte {
	n.ends = n.ends[:0]
	for off := 0; off < len(b); {
		nl := bytes.IndexByte(b[off:], '\n')
		if nl < 0 {
			break
		}
		if bytes.HasPrefix(b[off:], idPrefix) {
			n.ends = append(n.ends, off+nl)
		}
		off += nl + 1
	}
	if len(n.ends) < 2 {
		return b
	}
	out := n.spare[:0]
	prev := 0
	for k, end := range n.ends[:len(n.ends)-1] {
		out = append(out, b[prev:end]...)
		out = append(out, '.')
		out = strconv.AppendInt(out, int64(k+1), 10)
		prev = end
	}
	out = append(out, b[prev:]...)
	n.spare = b[:0]
	return out
}

var idPrefix = []byte("id: ")

// AppendID appends a frame's id line, "id: <run>:<seq>\n": bridge.EventID,
// or with frame > 0 bridge.FrameID, without their allocation. Nothing is
// appended when run is "".
func AppendID(b []byte, run string, seq int64, frame int) []byte {
	if run == "" {
		return b
	}
	b = append(b, idPrefix...)
	b = append(b, run...)
	b = append(b, ':')
	b = strconv.AppendInt(b, seq, 10)
	if frame > 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(frame), 10)
	}
	return append(b, '\n')
}

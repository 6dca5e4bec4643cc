// Package sseframe splits an SSE body the bridge wrote into its frames as
// they came off the wire, line counts and stray lines included, for the
// stream validators of the dialects' tests (a decoder's reader forgives
// what a validator must see).
package sseframe

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Frame is one SSE event as it came off the wire.
type Frame struct {
	ID    string
	HasID bool
	Event string
	Data  string
	IDs   int      // id lines seen
	Datas int      // data lines seen
	Other []string // the lines of other fields
}

func (f Frame) String() string {
	var b strings.Builder
	if f.HasID {
		fmt.Fprintf(&b, "id: %s | ", f.ID)
	}
	fmt.Fprintf(&b, "event: %s | data: %s", f.Event, f.Data)
	return b.String()
}

// Parse splits an SSE body into frames (LF line ends, as the bridge
// writes). A body that ends inside a frame returns the frames before it and
// an error.
func Parse(sse []byte) ([]Frame, error) {
	var out []Frame
	sc := bufio.NewScanner(bytes.NewReader(sse))
	sc.Buffer(make([]byte, 0, 64<<10), 32<<20)
	var f Frame
	lines := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if lines > 0 {
				out = append(out, f)
			}
			f, lines = Frame{}, 0
			continue
		}
		lines++
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			f.ID, f.HasID = value, true
			f.IDs++
		case "event":
			f.Event = value
		case "data":
			f.Data = value
			f.Datas++
		default:
			f.Other = append(f.Other, line)
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	if lines > 0 {
		return out, fmt.Errorf("the stream ends inside a frame: %s", f)
	}
	return out, nil
}

// ParseID splits a bridge frame id: "run:seq" (bridge.EventID, the
// last frame of event seq) or "run:seq.k" (bridge.FrameID, its frame k),
// without importing the hub into test support. pos orders the ids as the
// frames go: every frame's id is greater than the one before.
func ParseID(id string) (run string, pos [2]int64, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", pos, false
	}
	s, k, dotted := strings.Cut(id[i+1:], ".")
	seq, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return "", pos, false
	}
	pos = [2]int64{int64(seq), math.MaxInt64}
	if dotted {
		n, err := strconv.ParseUint(k, 10, 31)
		if err != nil || n == 0 {
			return "", pos, false
		}
		pos[1] = int64(n)
	}
	return id[:i], pos, true
}

// Before reports whether frame position a comes before b.
func Before(a, b [2]int64) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

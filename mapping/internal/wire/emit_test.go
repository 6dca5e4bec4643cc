package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// frames is an SSEFrames that records what RunSSE hands it and finishes
// at a frame whose data is "stop".
type frames struct {
	e    *Emitter
	seen []string
}

func (f *frames) Frame(ev SSEEvent) bool {
	f.seen = append(f.seen, string(ev.Data))
	f.e.Emit(bridge.Event{Kind: bridge.KindTextDelta, Text: string(ev.Data)})
	return string(ev.Data) == "stop"
}

func (f *frames) End() { f.seen = append(f.seen, "END") }

func TestRunSSE(t *testing.T) {
	tests := []struct {
		name, in string
		done     bool
		want     string
	}{
		{"eof ends", "data: a\n\ndata: b\n\n", false, "a b END"},
		{"[DONE] ends when asked", "data: a\n\ndata: [DONE]\n\ndata: b\n\n", true, "a END"},
		{"[DONE] is a frame otherwise", "data: a\n\ndata: [DONE]\n\n", false, "a [DONE] END"},
		{"a finished frame stops", "data: stop\n\ndata: b\n\n", false, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []bridge.Event
			e := NewEmitter(func(ev bridge.Event, err error) bool { got = append(got, ev); return true })
			f := &frames{e: &e}
			e.RunSSE(NewSSEReader(strings.NewReader(tt.in)), tt.done, f)
			if s := strings.Join(f.seen, " "); s != tt.want {
				t.Errorf("frames %q, want %q", s, tt.want)
			}
			for _, ev := range got {
				if ev.Source != bridge.SourceModel {
					t.Errorf("event %+v: source %q, want model", ev, ev.Source)
				}
			}
		})
	}
}

// TestEmitterStops: nothing is yielded after an error or after the
// consumer stopped.
func TestEmitterStops(t *testing.T) {
	var n int
	e := NewEmitter(func(bridge.Event, error) bool { n++; return true })
	e.Emit(bridge.Event{Source: bridge.SourceAgent})
	e.Fail(errors.New("x"))
	e.Emit(bridge.Event{})
	e.Fail(errors.New("y"))
	if n != 2 || !e.Stopped() {
		t.Errorf("yielded %d, stopped %v; want 2, true", n, e.Stopped())
	}
	n = 0
	e = NewEmitter(func(bridge.Event, error) bool { n++; return false })
	e.Emit(bridge.Event{})
	e.Emit(bridge.Event{})
	e.Fail(errors.New("x"))
	if n != 1 || !e.Stopped() {
		t.Errorf("after the consumer stopped: yielded %d, stopped %v; want 1, true", n, e.Stopped())
	}
}

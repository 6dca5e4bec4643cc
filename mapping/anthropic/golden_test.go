package anthropic

import (
	"bytes"
	"slices"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// goldenOptions are the fixed options the golden streams are encoded with.
var goldenOptions = StreamOptions{ID: "msg_test", Model: "claude-test"}

// goldenRun is the run id the golden events get, with seq 1, 2, ...
const goldenRun = "run_test"

// encodeEvents numbers events as the engine does and writes them with a
// StreamEncoder, checking that each Encode makes at most one Write.
func encodeEvents(t testing.TB, events []bridge.Event, opt StreamOptions) (sse []byte, dropped []string) {
	t.Helper()
	w := &countingWriter{}
	enc := NewStreamEncoder(w, opt)
	for i := range events {
		ev := events[i]
		ev.RunID, ev.Seq = goldenRun, int64(i+1)
		before := w.writes
		if err := enc.Encode(&ev); err != nil {
			t.Fatal(err)
		}
		if w.writes-before > 1 {
			t.Errorf("event %d (%s) made %d writes, want at most 1", i+1, ev.Kind, w.writes-before)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return w.b.Bytes(), enc.Dropped()
}

type countingWriter struct {
	b      bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.b.Write(p)
}

// validate runs the Messages stream validator on an encoded stream.
func validate(t testing.TB, sse []byte, c anthropictest.Check) *anthropictest.Summary {
	t.Helper()
	frames, err := anthropictest.ParseFrames(sse)
	if err != nil {
		t.Errorf("frames: %v", err)
	}
	sum, problems := anthropictest.CheckStream(frames, c)
	for _, p := range problems {
		t.Errorf("Messages stream: %s", p)
	}
	if len(problems) > 0 {
		t.Logf("the stream:\n%s", sse)
	}
	return sum
}

// TestGoldenStreams runs testdata/stream_*.txtar. With an upstream.sse
// section, it is decoded (DecodeStream) and compared with events.jsonl;
// without one, events.jsonl is the input (events from another dialect's
// upstream). The events, numbered 1, 2, ... in run "run_test", are encoded
// (NewStreamEncoder with goldenOptions) and compared with want.sse, which
// must pass the Messages stream validator, and folded by an Accumulator
// into message.json. A comment line "crlf: yes" turns the upstream's line
// ends into CRLF first; "continued: yes" allows one message per turn.
func TestGoldenStreams(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		events := a.Events(t, DecodeStream)
		sse, dropped := encodeEvents(t, events, goldenOptions)
		a.Check(t, "want.sse", sse)
		validate(t, sse, anthropictest.Check{RunID: goldenRun, IDs: true, Complete: true, Messages: a.Flag("continued")})
		a.Check(t, "message.json", golden.Accumulated(t, NewAccumulator(goldenOptions), events, EncodeError))
		a.CheckDropped(t, dropped)
	}, "stream_*.txtar")
}

// TestGoldenRequests runs testdata/request_*.txtar (golden.Requests) with
// DecodeRequest and EncodeRequest.
func TestGoldenRequests(t *testing.T) {
	golden.Requests(t, DecodeRequest, func(req *bridge.Request) ([]byte, []string, error) {
		return EncodeRequest(req, EncodeOptions{})
	}, withoutStream)
}

// withoutStream clears what EncodeRequest always sets.
func withoutStream(r *bridge.Request) *bridge.Request {
	c := *r
	c.Stream = false
	c.Messages = slices.Clone(r.Messages)
	return &c
}

package openai

import (
	"bytes"
	"slices"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// goldenOptions are the fixed options the golden streams are encoded with.
var goldenOptions = StreamOptions{ID: "chatcmpl-test", Model: "gpt-test", Created: 1700000000, IncludeUsage: true}

// goldenRun is the run id the golden events get, with seq 1, 2, ...
const goldenRun = "run_test"

// encodeEvents numbers events as the engine does and writes them with a
// StreamEncoder.
func encodeEvents(t testing.TB, events []bridge.Event, opt StreamOptions) (sse []byte, dropped []string) {
	t.Helper()
	var b bytes.Buffer
	enc := NewStreamEncoder(&b, opt)
	for i := range events {
		ev := events[i]
		ev.RunID, ev.Seq = goldenRun, int64(i+1)
		if err := enc.Encode(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), enc.Dropped()
}

// TestGoldenStreams runs testdata/stream_*.txtar: upstream.sse is decoded
// (DecodeStream) and compared with events.jsonl (golden.Archive.Events);
// those events, numbered 1, 2, ... in run "run_test", are encoded
// (NewStreamEncoder with goldenOptions) and compared with want.sse, and
// folded by an Accumulator into completion.json.
func TestGoldenStreams(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		events := a.Events(t, DecodeStream)
		sse, dropped := encodeEvents(t, events, goldenOptions)
		a.Check(t, "want.sse", sse)
		a.Check(t, "completion.json", golden.Accumulated(t, NewAccumulator(goldenOptions), events, EncodeError))
		a.CheckDropped(t, dropped)
	}, "stream_*.txtar")
}

// TestGoldenRequests runs testdata/request_*.txtar (golden.Requests) with
// DecodeRequest and EncodeRequest.
func TestGoldenRequests(t *testing.T) {
	golden.Requests(t, DecodeRequest, EncodeRequest, withoutStream)
}

// withoutStream clears what EncodeRequest always sets.
func withoutStream(r *bridge.Request) *bridge.Request {
	c := *r
	c.Stream, c.IncludeUsage = false, false
	c.Messages = slices.Clone(r.Messages)
	return &c
}

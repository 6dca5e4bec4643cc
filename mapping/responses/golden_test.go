package responses

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// goldenOptions are the fixed options the golden streams are encoded with.
var goldenOptions = StreamOptions{ID: "resp_test", Model: "gpt-test", Created: 1700000000}

// goldenRun is the run id the golden events get, with seq 1, 2, ...
const goldenRun = "run_test"

// goldenTime is the time of every golden event (completed_at).
var goldenTime = time.Unix(1700000042, 0).UTC()

// engineEvents is what the engine makes of a decoded stream: the events
// numbered 1, 2, ... in run "run_test", and the error a stream ended with
// turned into a failed final, as the engine ends it.
func engineEvents(events []bridge.Event) []bridge.Event {
	out := make([]bridge.Event, 0, len(events)+1)
	for i, ev := range events {
		ev.RunID, ev.Seq, ev.Time = goldenRun, int64(i+1), goldenTime
		if i == len(events)-1 && ev.Kind == bridge.KindError && ev.Source == bridge.SourceBridge {
			// The engine ends a stream that failed with a failed final.
			ev.Kind, ev.Final, ev.Error = bridge.KindFinal, &bridge.Final{Status: bridge.StatusFailed, Reason: ev.Error.Message, Error: ev.Error}, nil
		}
		out = append(out, ev)
	}
	return out
}

func encodeEvents(t testing.TB, events []bridge.Event, opt StreamOptions) (sse []byte, dropped []string) {
	t.Helper()
	var b bytes.Buffer
	enc := NewStreamEncoder(&b, opt)
	for i := range events {
		if err := enc.Encode(&events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), enc.Dropped()
}

// response is what an Accumulator makes of events, indented, with the
// error status first for a run that did not succeed.
func response(t testing.TB, events []bridge.Event, opt StreamOptions) []byte {
	acc := NewAccumulator(opt)
	for i := range events {
		acc.Add(&events[i])
	}
	var head []byte
	if err := acc.Err(); err != nil {
		status, body := EncodeError(err)
		head = fmt.Appendf(nil, "status %d\n%s", status, golden.Indent(t, body))
	}
	return append(head, golden.Indent(t, acc.Response("in_progress"))...)
}

func goldenOpts(a *golden.Archive) StreamOptions {
	opt := goldenOptions
	opt.Background = a.Flag("background")
	if s := a.Directive("skip"); s != "" {
		opt.Skip, _ = strconv.ParseInt(s, 10, 64)
	}
	return opt
}

// TestGoldenStreams runs testdata/stream_*.txtar and encode_*.txtar. A
// stream's upstream.sse is decoded (DecodeStream) and compared with
// events.jsonl; an encode_ file's events.jsonl is the input (events of
// other dialects' upstreams). The events, numbered as the engine numbers
// them, are encoded (NewStreamEncoder with goldenOptions) and compared
// with want.sse, and folded by an Accumulator into response.json. Comment
// lines: "crlf: yes" turns the upstream's line ends into CRLF first;
// "background: yes" and "skip: N" set those options.
func TestGoldenStreams(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		events := engineEvents(a.Events(t, DecodeStream))
		opt := goldenOpts(a)
		sse, dropped := encodeEvents(t, events, opt)
		a.Check(t, "want.sse", sse)
		opt.Skip = 0
		a.Check(t, "response.json", response(t, events, opt))
		a.CheckDropped(t, dropped)
	}, "stream_*.txtar", "encode_*.txtar")
}

// TestGoldenRequests runs testdata/request_*.txtar. With a request.json
// section, it is decoded (DecodeRequest) and compared with decoded.json;
// without one, hub.json is the input (a request from another dialect).
// Either way EncodeRequest's body (indented) is compared with
// upstream.json and what it dropped with dropped.txt. Comment lines
// "previous: ID" and "from: N" set EncodeOptions, "store: yes" Store.
func TestGoldenRequests(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		var req *bridge.Request
		if body, ok := a.File("request.json"); ok {
			r, err := DecodeRequest(body)
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			a.Check(t, "decoded.json", golden.Marshal(t, r, true))
			req = r.Hub
		} else {
			req, _ = a.Request(t, nil)
		}
		opt := EncodeOptions{PreviousResponseID: a.Directive("previous"), Store: a.Flag("store")}
		opt.From, _ = strconv.Atoi(a.Directive("from"))
		// The engine puts the instructions in front of the transcript.
		up := *req
		up.Messages = append(slices.Clone(req.Instructions), req.Messages...)
		body, dropped, err := EncodeRequest(&up, opt)
		if err != nil {
			t.Fatalf("EncodeRequest: %v", err)
		}
		a.CheckJSON(t, "upstream.json", body)
		a.CheckLines(t, "dropped.txt", dropped)
	}, "request_*.txtar")
}

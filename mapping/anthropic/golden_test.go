package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
)

// goldenOptions are the fixed options the golden streams are encoded with.
var goldenOptions = StreamOptions{ID: "msg_test", Model: "claude-test"}

// goldenRun is the run id the golden events get, with seq 1, 2, ...
const goldenRun = "run_test"

// archive is a txtar golden file.
type archive = golden.Archive

func hasFile(a *archive, name string) bool { _, ok := a.File(name); return ok }

func indentJSON(t testing.TB, body []byte) []byte {
	t.Helper()
	var ind bytes.Buffer
	if err := json.Indent(&ind, body, "", "  "); err != nil {
		t.Fatalf("invalid JSON %s: %v", body, err)
	}
	ind.WriteByte('\n')
	return ind.Bytes()
}

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

func parseEvents(t testing.TB, jl []byte) []bridge.Event {
	t.Helper()
	var out []bridge.Event
	for _, l := range bytes.Split(bytes.TrimSpace(jl), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var ev bridge.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("events.jsonl: %v: %s", err, l)
		}
		out = append(out, ev)
	}
	return out
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

// message is what an Accumulator makes of events, indented: the message,
// or "status N" and the error body.
func message(t testing.TB, events []bridge.Event) []byte {
	acc := NewAccumulator(goldenOptions)
	for i := range events {
		acc.Add(&events[i])
	}
	body, err := acc.Response()
	var head []byte
	if err != nil {
		var status int
		status, body = EncodeError(bridge.AsError(err))
		head = fmt.Appendf(nil, "status %d\n", status)
	}
	return append(head, indentJSON(t, body)...)
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
	files, _ := filepath.Glob("testdata/stream_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden streams")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := golden.Read(t, path)
			defer a.Write(t)
			var events []bridge.Event
			if up, ok := a.File("upstream.sse"); ok {
				if a.Flag("crlf") {
					up = bytes.ReplaceAll(up, []byte("\n"), []byte("\r\n"))
				}
				events, _ = golden.Collect(t, DecodeStream(bytes.NewReader(up)))
				var jl []byte
				for _, ev := range events {
					jl = append(jl, golden.Marshal(t, ev, false)...)
				}
				a.Check(t, "events.jsonl", jl)
			}
			// The encoder runs on the recorded events, so a change in the
			// decoder shows in events.jsonl alone.
			if want, ok := a.File("events.jsonl"); ok && (!*golden.Update || !hasFile(a, "upstream.sse")) {
				events = parseEvents(t, want)
			}
			sse, dropped := encodeEvents(t, events, goldenOptions)
			a.Check(t, "want.sse", sse)
			validate(t, sse, anthropictest.Check{RunID: goldenRun, IDs: true, Complete: true, Messages: a.Flag("continued")})
			a.Check(t, "message.json", message(t, events))
			if len(dropped) > 0 || hasFile(a, "dropped.txt") {
				a.Check(t, "dropped.txt", []byte(strings.Join(dropped, "\n")+"\n"))
			}
		})
	}
}

// TestGoldenRequests runs testdata/request_*.txtar. With a request.json
// section, it is decoded (DecodeRequest) and compared with hub.json, and
// decoding what EncodeRequest made must give the same request back (unless
// the comment says "lossy: yes"); without one, hub.json is the input (a
// request from another dialect). Either way EncodeRequest's body (indented)
// is compared with upstream.json and what was dropped (by the decoder, then
// the encoder) with dropped.txt.
func TestGoldenRequests(t *testing.T) {
	files, _ := filepath.Glob("testdata/request_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden requests")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := golden.Read(t, path)
			defer a.Write(t)
			var req *bridge.Request
			body, fromWire := a.File("request.json")
			if fromWire {
				var err error
				if req, err = DecodeRequest(body); err != nil {
					t.Fatalf("DecodeRequest: %v", err)
				}
				a.Check(t, "hub.json", golden.Marshal(t, req, true))
			} else {
				hub, ok := a.File("hub.json")
				if !ok {
					t.Fatal("neither request.json nor hub.json")
				}
				req = new(bridge.Request)
				if err := json.Unmarshal(hub, req); err != nil {
					t.Fatal(err)
				}
			}
			out, dropped, err := EncodeRequest(req, EncodeOptions{})
			if err != nil {
				t.Fatalf("EncodeRequest: %v", err)
			}
			a.Check(t, "upstream.json", indentJSON(t, out))
			all := append(slices.Clone(req.Dropped), dropped...)
			a.Check(t, "dropped.txt", []byte(strings.Join(all, "\n")+"\n"))

			if fromWire && !a.Flag("lossy") {
				again, err := DecodeRequest(out)
				if err != nil {
					t.Fatalf("DecodeRequest(EncodeRequest(req)): %v", err)
				}
				if diff := cmp.Diff(withoutStream(req), withoutStream(again)); diff != "" {
					t.Errorf("round trip mismatch (-first +second):\n%s", diff)
				}
			}
		})
	}
}

// withoutStream clears what EncodeRequest always sets.
func withoutStream(r *bridge.Request) *bridge.Request {
	c := *r
	c.Stream = false
	c.Messages = slices.Clone(r.Messages)
	return &c
}

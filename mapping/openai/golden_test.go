package openai

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
)

// goldenOptions are the fixed options the golden streams are encoded with.
var goldenOptions = StreamOptions{ID: "chatcmpl-test", Model: "gpt-test", Created: 1700000000, IncludeUsage: true}

// goldenRun is the run id the golden events get, with seq 1, 2, ...
const goldenRun = "run_test"

// archive is a txtar golden file.
type archive = golden.Archive

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
// (DecodeStream) and compared with events.jsonl; those events, numbered
// 1, 2, ... in run "run_test", are encoded (NewStreamEncoder with
// goldenOptions) and compared with want.sse, and folded by an Accumulator
// into completion.json. A comment line "crlf: yes"
// turns the upstream's line ends into CRLF first.
func TestGoldenStreams(t *testing.T) {
	files, _ := filepath.Glob("testdata/stream_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden streams")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := golden.Read(t, path)
			defer a.Write(t)
			up, ok := a.File("upstream.sse")
			if !ok {
				t.Fatal("no upstream.sse")
			}
			if a.Flag("crlf") {
				up = bytes.ReplaceAll(up, []byte("\n"), []byte("\r\n"))
			}
			events, _ := golden.Collect(t, DecodeStream(bytes.NewReader(up)))
			var jl []byte
			for _, ev := range events {
				jl = append(jl, golden.Marshal(t, ev, false)...)
			}
			a.Check(t, "events.jsonl", jl)

			// The encoder runs on the recorded events, so a change in the
			// decoder shows in events.jsonl alone.
			if want, ok := a.File("events.jsonl"); ok && !*golden.Update {
				events = parseEvents(t, want)
			}
			sse, dropped := encodeEvents(t, events, goldenOptions)
			a.Check(t, "want.sse", sse)
			a.Check(t, "completion.json", completion(t, events))
			if len(dropped) > 0 || hasFile(a, "dropped.txt") {
				a.Check(t, "dropped.txt", []byte(strings.Join(dropped, "\n")+"\n"))
			}
		})
	}
}

// completion is what an Accumulator makes of events, indented: the
// chat.completion, or "status N" and the error body.
func completion(t testing.TB, events []bridge.Event) []byte {
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
	var ind bytes.Buffer
	if err := json.Indent(&ind, body, "", "  "); err != nil {
		t.Fatalf("invalid JSON %s: %v", body, err)
	}
	ind.WriteByte('\n')
	return append(head, ind.Bytes()...)
}

func hasFile(a *archive, name string) bool { _, ok := a.File(name); return ok }

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

// TestGoldenRequests runs testdata/request_*.txtar. With a request.json
// section, it is decoded (DecodeRequest) and compared with hub.json, and
// decoding what EncodeRequest made must give the same request back; without
// one, hub.json is the input (a request from another dialect). Either way
// EncodeRequest's body (indented) is compared with upstream.json and what
// it dropped with dropped.txt.
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
			if body, ok := a.File("request.json"); ok {
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
			body, dropped, err := EncodeRequest(req)
			if err != nil {
				t.Fatalf("EncodeRequest: %v", err)
			}
			var ind bytes.Buffer
			if err := json.Indent(&ind, body, "", "  "); err != nil {
				t.Fatalf("EncodeRequest made invalid JSON: %v\n%s", err, body)
			}
			ind.WriteByte('\n')
			a.Check(t, "upstream.json", ind.Bytes())
			a.Check(t, "dropped.txt", []byte(strings.Join(dropped, "\n")+"\n"))

			if _, ok := a.File("request.json"); ok && !a.Flag("lossy") {
				again, err := DecodeRequest(body)
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
	c.Stream, c.IncludeUsage = false, false
	c.Messages = slices.Clone(r.Messages)
	return &c
}

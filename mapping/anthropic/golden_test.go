package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenOptions are the fixed options the golden streams are encoded with.
var goldenOptions = StreamOptions{ID: "msg_test", Model: "claude-test"}

// goldenRun is the run id the golden events get, with seq 1, 2, ...
const goldenRun = "run_test"

// archive is a txtar golden file.
type archive struct {
	path    string
	a       *txtar.Archive
	changed bool
}

func readArchive(t testing.TB, path string) *archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &archive{path: path, a: a}
}

// directive reports whether the archive comment has the line "name: yes".
func (a *archive) directive(name string) bool {
	for _, l := range strings.Split(string(a.a.Comment), "\n") {
		if strings.TrimSpace(l) == name+": yes" {
			return true
		}
	}
	return false
}

func (a *archive) file(name string) ([]byte, bool) {
	for _, f := range a.a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// check compares got with section name; with -update it rewrites it.
func (a *archive) check(t testing.TB, name string, got []byte) {
	t.Helper()
	want, ok := a.file(name)
	if *update {
		if !ok || !bytes.Equal(want, got) {
			a.set(name, got)
		}
		return
	}
	if !ok {
		t.Errorf("%s: no section %q (run go test -update)", a.path, name)
		return
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s: %s mismatch (-want +got):\n%s", a.path, name, diff)
	}
}

func (a *archive) set(name string, data []byte) {
	a.changed = true
	for i := range a.a.Files {
		if a.a.Files[i].Name == name {
			a.a.Files[i].Data = data
			return
		}
	}
	a.a.Files = append(a.a.Files, txtar.File{Name: name, Data: data})
}

func (a *archive) write(t testing.TB) {
	t.Helper()
	if *update && a.changed {
		if err := os.WriteFile(a.path, txtar.Format(a.a), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func hasFile(a *archive, name string) bool { _, ok := a.file(name); return ok }

// marshal renders v as JSON without HTML escaping, followed by a newline.
func marshal(t testing.TB, v any, indent bool) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func indentJSON(t testing.TB, body []byte) []byte {
	t.Helper()
	var ind bytes.Buffer
	if err := json.Indent(&ind, body, "", "  "); err != nil {
		t.Fatalf("invalid JSON %s: %v", body, err)
	}
	ind.WriteByte('\n')
	return ind.Bytes()
}

// collect ranges over a stream. An error the stream ends with is recorded
// as a last event of kind error (source bridge), as the engine reports it.
func collect(t testing.TB, s bridge.Stream) (events []bridge.Event, err error) {
	t.Helper()
	for ev, e := range s {
		if err != nil {
			t.Fatalf("event after error %v: %+v", err, ev)
		}
		if e != nil {
			var be *bridge.Error
			if !errors.As(e, &be) {
				t.Fatalf("stream error %T %v is not a *bridge.Error", e, e)
			}
			err = e
			events = append(events, bridge.Event{Kind: bridge.KindError, Source: bridge.SourceBridge, Error: be})
			continue
		}
		events = append(events, ev)
	}
	return events, err
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
			a := readArchive(t, path)
			defer a.write(t)
			var events []bridge.Event
			if up, ok := a.file("upstream.sse"); ok {
				if a.directive("crlf") {
					up = bytes.ReplaceAll(up, []byte("\n"), []byte("\r\n"))
				}
				events, _ = collect(t, DecodeStream(bytes.NewReader(up)))
				var jl []byte
				for _, ev := range events {
					jl = append(jl, marshal(t, ev, false)...)
				}
				a.check(t, "events.jsonl", jl)
			}
			// The encoder runs on the recorded events, so a change in the
			// decoder shows in events.jsonl alone.
			if want, ok := a.file("events.jsonl"); ok && (!*update || !hasFile(a, "upstream.sse")) {
				events = parseEvents(t, want)
			}
			sse, dropped := encodeEvents(t, events, goldenOptions)
			a.check(t, "want.sse", sse)
			validate(t, sse, anthropictest.Check{RunID: goldenRun, IDs: true, Complete: true, Messages: a.directive("continued")})
			a.check(t, "message.json", message(t, events))
			if len(dropped) > 0 || hasFile(a, "dropped.txt") {
				a.check(t, "dropped.txt", []byte(strings.Join(dropped, "\n")+"\n"))
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
			a := readArchive(t, path)
			defer a.write(t)
			var req *bridge.Request
			body, fromWire := a.file("request.json")
			if fromWire {
				var err error
				if req, err = DecodeRequest(body); err != nil {
					t.Fatalf("DecodeRequest: %v", err)
				}
				a.check(t, "hub.json", marshal(t, req, true))
			} else {
				hub, ok := a.file("hub.json")
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
			a.check(t, "upstream.json", indentJSON(t, out))
			all := append(slices.Clone(req.Dropped), dropped...)
			a.check(t, "dropped.txt", []byte(strings.Join(all, "\n")+"\n"))

			if fromWire && !a.directive("lossy") {
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

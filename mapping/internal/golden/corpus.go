package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Corpus returns the captured files matching pattern under the repo's
// testdata/corpus (real wire captures with their provenance), by their path
// there. None is a failure: a pattern that matches nothing tests nothing.
func Corpus(tb testing.TB, pattern string) map[string][]byte {
	tb.Helper()
	root := filepath.Join("..", "..", "testdata", "corpus")
	files, _ := filepath.Glob(filepath.Join(root, pattern))
	if len(files) == 0 {
		tb.Fatalf("no captures match testdata/corpus/%s", pattern)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		out[filepath.ToSlash(name)] = b
	}
	return out
}

// CorpusBodies returns the bodies of the captured HTTP messages matching
// pattern, by their path under testdata/corpus.
func CorpusBodies(tb testing.TB, pattern string) map[string][]byte {
	tb.Helper()
	out := Corpus(tb, pattern)
	for name, b := range out {
		out[name] = HTTPBody(b)
	}
	return out
}

// InOrder returns m's values in the order of their names, so seeds and
// cases come in a stable order.
func InOrder(m map[string][]byte) [][]byte {
	out := make([][]byte, 0, len(m))
	for _, k := range wire.SortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// HTTPBody is the body of a captured HTTP message: what follows the first
// blank line (CRLF, or LF in a capture written by hand).
func HTTPBody(b []byte) []byte {
	if _, body, ok := bytes.Cut(b, []byte("\r\n\r\n")); ok {
		return body
	}
	_, body, _ := bytes.Cut(b, []byte("\n\n"))
	return body
}

// Seeds adds to f the section name of every golden file in testdata
// matching pattern, and with crlf its CRLF form too.
func Seeds(f *testing.F, pattern, name string, crlf bool) {
	files, _ := filepath.Glob(filepath.Join("testdata", pattern))
	for _, path := range files {
		if b, ok := Read(f, path).File(name); ok {
			f.Add(b)
			if crlf {
				f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")))
			}
		}
	}
}

// Refused reports whether a codec refused its input (err is set), failing
// t when the error is not a *bridge.Error: bad input is answered in the
// caller's dialect, never with Go's own error text.
func Refused(t testing.TB, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var be *bridge.Error
	if !errors.As(err, &be) {
		t.Fatalf("error %T %v is not a *bridge.Error", err, err)
	}
	return true
}

// Drain ranges over a stream: its events, and the *bridge.Error it ended
// with, if any. An error that is not a *bridge.Error, or an event after an
// error, fails t.
func Drain(t testing.TB, s bridge.Stream) (events []bridge.Event, failed *bridge.Error) {
	t.Helper()
	for ev, err := range s {
		if failed != nil {
			t.Fatalf("event after error %v: %+v", failed, ev)
		}
		if Refused(t, err) {
			failed = bridge.AsError(err)
			continue
		}
		events = append(events, ev)
	}
	return events, failed
}

// WantError holds that err is a *bridge.Error of code whose message holds
// msg.
func WantError(t testing.TB, err error, code bridge.Code, msg string) {
	t.Helper()
	var be *bridge.Error
	if !errors.As(err, &be) {
		t.Fatalf("error %T %v, want a *bridge.Error", err, err)
	}
	if be.Code != code || !strings.Contains(be.Message, msg) {
		t.Errorf("error %s %q, want %s containing %q", be.Code, be.Message, code, msg)
	}
}

// SDKRoundTrip holds what a request an official SDK sent must pass: it
// decodes and encodes with nothing dropped, and what the encoder made
// decodes back to the same request (norm clears what the encoder always
// sets). It returns the encoded body, for the caller to compare its keys
// with the SDK's.
func SDKRoundTrip(t testing.TB, body []byte, decode func([]byte) (*bridge.Request, error), encode func(*bridge.Request) ([]byte, []string, error), norm func(*bridge.Request) *bridge.Request) []byte {
	t.Helper()
	req, err := decode(body)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(req.Dropped) > 0 {
		t.Errorf("dropped %v", req.Dropped)
	}
	out, dropped, err := encode(req)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if len(dropped) > 0 {
		t.Errorf("encode dropped %v", dropped)
	}
	RoundTrip(t, req, out, decode, norm)
	return out
}

// JSONObjects unmarshals JSON objects, failing t on one that is not.
func JSONObjects(t testing.TB, bodies ...[]byte) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// ToolSplits checks that a decoder reassembles a tool call's arguments
// however the upstream splits them: for every split of args in two at a
// rune boundary (a JSON string cannot carry half a character), stream
// renders an upstream stream of one call id(name) sending the two
// fragments, and its events must hold args whole in the tool_call_done and
// exactly, in non-empty pieces, across the deltas. check gets each split's
// events for the dialect's own checks (re-encoding them).
func ToolSplits(t *testing.T, args, id, name string, decode func(io.Reader) bridge.Stream, stream func(a, b string) string, check func(split int, events []bridge.Event)) {
	t.Helper()
	for i := 0; i <= len(args); i++ {
		if i < len(args) && !utf8.RuneStart(args[i]) {
			continue
		}
		events, err := Collect(t, decode(strings.NewReader(stream(args[:i], args[i:]))))
		if err != nil {
			t.Fatalf("split %d: %v", i, err)
		}
		var done *bridge.ToolCall
		var deltas strings.Builder
		for _, e := range events {
			switch e.Kind {
			case bridge.KindToolCallDone:
				done = e.ToolCall
			case bridge.KindToolCallDelta:
				if e.ToolCall.Arguments == "" {
					t.Errorf("split %d: empty argument delta", i)
				}
				deltas.WriteString(e.ToolCall.Arguments)
			}
		}
		if done == nil || done.Arguments != args || done.ID != id || done.Name != name {
			t.Fatalf("split %d: done = %+v, want arguments %q", i, done, args)
		}
		if deltas.String() != args {
			t.Errorf("split %d: deltas %q", i, deltas.String())
		}
		check(i, events)
	}
}

// BenchDecode measures decoding the upstream stream sse.
func BenchDecode(b *testing.B, decode func(io.Reader) bridge.Stream, sse string) {
	b.SetBytes(int64(len(sse)))
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range decode(strings.NewReader(sse)) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchEncodeText measures the hot path of a streamed answer: one text
// delta of run in, one frame out, after the message started. It should not
// allocate.
func BenchEncodeText(b *testing.B, enc interface{ Encode(*bridge.Event) error }, run, text string) {
	ev := bridge.Event{RunID: run, Seq: 1, Kind: bridge.KindMessageStarted, Source: bridge.SourceModel}
	if err := enc.Encode(&ev); err != nil {
		b.Fatal(err)
	}
	ev.Kind, ev.Text = bridge.KindTextDelta, text
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev.Seq = int64(i + 2)
		if err := enc.Encode(&ev); err != nil {
			b.Fatal(err)
		}
	}
}

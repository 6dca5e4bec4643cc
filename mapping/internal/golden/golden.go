// Package golden is the codec tests' shared support. It reads and rewrites
// their txtar golden files: each archive holds named sections (an upstream
// stream, the events it decodes to, the frames they encode to); a test
// compares what it produced with a section, and `go test -update` rewrites
// the sections. It reads the captured wire corpus, and holds what every
// fuzz target asks of a decoder (its errors are *bridge.Errors, nothing
// follows an error). It is for tests only.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/bridge-dev/bridge/bridge"
)

// Update is the -update flag of every test binary that imports golden.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Archive is one txtar golden file.
type Archive struct {
	Path    string
	A       *txtar.Archive
	changed bool
}

// Run runs f on every golden file in testdata whose name matches one of
// the patterns ("stream_*.txtar"), each in a subtest named after the file,
// and writes the file back when -update changed it. No file at all fails
// the test: a glob that matches nothing tests nothing.
func Run(t *testing.T, f func(t *testing.T, a *Archive), patterns ...string) {
	t.Helper()
	var files []string
	for _, p := range patterns {
		m, _ := filepath.Glob(filepath.Join("testdata", p))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no golden files testdata/%s", strings.Join(patterns, ", testdata/"))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := Read(t, path)
			defer a.Write(t)
			f(t, a)
		})
	}
}

// Read parses the golden file at path.
func Read(t testing.TB, path string) *Archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &Archive{Path: path, A: a}
}

// Directive returns the value of the comment line "name: value", "" when
// there is none.
func (a *Archive) Directive(name string) string {
	for _, l := range strings.Split(string(a.A.Comment), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Flag reports whether the comment has the line "name: yes".
func (a *Archive) Flag(name string) bool { return a.Directive(name) == "yes" }

// File returns the section called name.
func (a *Archive) File(name string) ([]byte, bool) {
	for _, f := range a.A.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// Check compares got with the section name; with -update it rewrites it.
func (a *Archive) Check(t testing.TB, name string, got []byte) {
	t.Helper()
	want, ok := a.File(name)
	if *Update {
		if !ok || !bytes.Equal(want, got) {
			a.Set(name, got)
		}
		return
	}
	if !ok {
		t.Errorf("%s: no section %q (run go test -update)", a.Path, name)
		return
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s: %s mismatch (-want +got):\n%s", a.Path, name, diff)
	}
}

// Has reports whether the archive has the section name.
func (a *Archive) Has(name string) bool { _, ok := a.File(name); return ok }

// CheckJSON compares the JSON body, indented, with the section name.
func (a *Archive) CheckJSON(t testing.TB, name string, body []byte) {
	t.Helper()
	a.Check(t, name, Indent(t, body))
}

// CheckLines compares lines, one a line, with the section name.
func (a *Archive) CheckLines(t testing.TB, name string, lines []string) {
	t.Helper()
	a.Check(t, name, []byte(strings.Join(lines, "\n")+"\n"))
}

// CheckDropped compares what a codec dropped with dropped.txt, where it
// dropped anything or the archive says it drops nothing.
func (a *Archive) CheckDropped(t testing.TB, dropped []string) {
	t.Helper()
	if len(dropped) > 0 || a.Has("dropped.txt") {
		a.CheckLines(t, "dropped.txt", dropped)
	}
}

// Events returns the events of a stream case and checks its decoder: the
// section upstream.sse (its line ends made CRLF with the comment line
// "crlf: yes") decoded by decode is compared with events.jsonl. The events
// returned are those events.jsonl records (the decoded ones while -update
// rewrites it), so an encoder runs on the recorded events and a change in
// the decoder shows in events.jsonl alone. Without upstream.sse,
// events.jsonl is the input (events of another dialect's upstream).
func (a *Archive) Events(t testing.TB, decode func(io.Reader) bridge.Stream) []bridge.Event {
	t.Helper()
	var events []bridge.Event
	up, fromWire := a.File("upstream.sse")
	if fromWire {
		if a.Flag("crlf") {
			up = bytes.ReplaceAll(up, []byte("\n"), []byte("\r\n"))
		}
		events, _ = Collect(t, decode(bytes.NewReader(up)))
		a.Check(t, "events.jsonl", JSONL(t, events))
	}
	if want, ok := a.File("events.jsonl"); ok && (!*Update || !fromWire) {
		events = ParseEvents(t, want)
	}
	return events
}

// Request returns the hub request of a request case: the section
// request.json decoded by decode and compared with hub.json, or, without
// request.json, hub.json itself (a request from another dialect).
// fromWire says which.
func (a *Archive) Request(t testing.TB, decode func([]byte) (*bridge.Request, error)) (req *bridge.Request, fromWire bool) {
	t.Helper()
	if body, ok := a.File("request.json"); ok {
		req, err := decode(body)
		if err != nil {
			t.Fatalf("DecodeRequest: %v", err)
		}
		a.Check(t, "hub.json", Marshal(t, req, true))
		return req, true
	}
	hub, ok := a.File("hub.json")
	if !ok {
		t.Fatal("neither request.json nor hub.json")
	}
	req = new(bridge.Request)
	if err := json.Unmarshal(hub, req); err != nil {
		t.Fatal(err)
	}
	return req, false
}

// Set replaces (or adds) the section name.
func (a *Archive) Set(name string, data []byte) {
	a.changed = true
	for i := range a.A.Files {
		if a.A.Files[i].Name == name {
			a.A.Files[i].Data = data
			return
		}
	}
	a.A.Files = append(a.A.Files, txtar.File{Name: name, Data: data})
}

// Write saves the archive when -update changed it.
func (a *Archive) Write(t testing.TB) {
	t.Helper()
	if *Update && a.changed {
		if err := os.WriteFile(a.Path, txtar.Format(a.A), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Marshal renders v as JSON without HTML escaping, followed by a newline.
func Marshal(t testing.TB, v any, indent bool) []byte {
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

// Indent renders a JSON body indented, followed by a newline.
func Indent(t testing.TB, body []byte) []byte {
	t.Helper()
	var ind bytes.Buffer
	if err := json.Indent(&ind, body, "", "  "); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, body)
	}
	ind.WriteByte('\n')
	return ind.Bytes()
}

// JSONL renders events as JSON lines, as events.jsonl holds them.
func JSONL(t testing.TB, events []bridge.Event) []byte {
	t.Helper()
	var jl []byte
	for _, ev := range events {
		jl = append(jl, Marshal(t, ev, false)...)
	}
	return jl
}

// ParseEvents reads JSON lines of events.
func ParseEvents(t testing.TB, jl []byte) []bridge.Event {
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

// Collect ranges over a stream. An error the stream ends with is recorded as
// a last event of kind error (source bridge), as the engine reports it; an
// error that is not a *bridge.Error, or an event after an error, fails t.
func Collect(t testing.TB, s bridge.Stream) (events []bridge.Event, err error) {
	t.Helper()
	events, failed := Drain(t, s)
	if failed == nil {
		return events, nil
	}
	return append(events, bridge.Event{Kind: bridge.KindError, Source: bridge.SourceBridge, Error: failed}), failed
}

// StopsWhenAsked ranges over a stream and stops after n events: a decoder
// that yields again after its consumer stopped panics (the range-over-func
// rule), and one that ends before n events fails t.
func StopsWhenAsked(t testing.TB, s bridge.Stream, n int) {
	t.Helper()
	got := 0
	for range s {
		got++
		if got == n {
			break
		}
	}
	if got != n {
		t.Errorf("got %d events, want %d", got, n)
	}
}

// SameAsJSON is the oracle of a fast decoding path: when fast takes data
// (reports true), data must be JSON that json.Unmarshal takes too, into
// exactly the same value.
func SameAsJSON[T any](t *testing.T, data []byte, fast func([]byte, *T) bool) {
	t.Helper()
	var got T
	if !fast(data, &got) {
		return
	}
	var want T
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("the fast path took %q, json.Unmarshal refuses it: %v", data, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the fast path's %q differs from json.Unmarshal's (-json +fast):\n%s", data, diff)
	}
}

// RoundTrip checks that decoding body, what an encoder made of req, gives
// req back; norm clears what the encoder always sets, on both sides.
func RoundTrip(t testing.TB, req *bridge.Request, body []byte, decode func([]byte) (*bridge.Request, error), norm func(*bridge.Request) *bridge.Request) {
	t.Helper()
	again, err := decode(body)
	if err != nil {
		t.Fatalf("DecodeRequest(EncodeRequest(req)): %v", err)
	}
	if diff := cmp.Diff(norm(req), norm(again)); diff != "" {
		t.Errorf("round trip mismatch (-first +second):\n%s", diff)
	}
}

// Accumulator folds a run's events into one non-streaming response (the
// openai and anthropic Accumulators).
type Accumulator interface {
	Add(ev *bridge.Event)
	Response() ([]byte, error)
}

// Accumulate folds events into acc and returns its response.
func Accumulate(acc Accumulator, events []bridge.Event) ([]byte, error) {
	for i := range events {
		acc.Add(&events[i])
	}
	return acc.Response()
}

// Accumulated is what acc makes of events, indented: the response, or
// "status N" and the error body encodeError renders for a run that failed.
func Accumulated(t testing.TB, acc Accumulator, events []bridge.Event, encodeError func(*bridge.Error) (int, []byte)) []byte {
	t.Helper()
	body, err := Accumulate(acc, events)
	var head []byte
	if err != nil {
		var status int
		status, body = encodeError(bridge.AsError(err))
		head = fmt.Appendf(nil, "status %d\n", status)
	}
	return append(head, Indent(t, body)...)
}

// Requests runs testdata/request_*.txtar through a dialect's request
// codec. With a request.json section, it is decoded (decode) and compared
// with hub.json, and decoding what encode made must give the same request
// back, apart from what norm clears on both sides (unless the comment says
// "lossy: yes"); without one, hub.json is the input (a request from
// another dialect). Either way encode's body (indented) is compared with
// upstream.json, and what was dropped (by the decoder, then the encoder)
// with dropped.txt.
func Requests(t *testing.T, decode func([]byte) (*bridge.Request, error), encode func(*bridge.Request) ([]byte, []string, error), norm func(*bridge.Request) *bridge.Request) {
	Run(t, func(t *testing.T, a *Archive) {
		req, fromWire := a.Request(t, decode)
		body, dropped, err := encode(req)
		if err != nil {
			t.Fatalf("EncodeRequest: %v", err)
		}
		a.CheckJSON(t, "upstream.json", body)
		a.CheckLines(t, "dropped.txt", append(slices.Clone(req.Dropped), dropped...))
		if fromWire && !a.Flag("lossy") {
			RoundTrip(t, req, body, decode, norm)
		}
	}, "request_*.txtar")
}

package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/bridge-dev/bridge/bridge"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenOptions are the fixed options the golden streams are encoded with.
var goldenOptions = StreamOptions{ID: "resp_test", Model: "gpt-test", Created: 1700000000}

// goldenRun is the run id the golden events get, with seq 1, 2, ...
const goldenRun = "run_test"

// goldenTime is the time of every golden event (completed_at).
var goldenTime = time.Unix(1700000042, 0).UTC()

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

// directive returns the value of the comment line "name: value".
func (a *archive) directive(name string) string {
	for _, l := range strings.Split(string(a.a.Comment), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
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

func indent(t testing.TB, body []byte) []byte {
	t.Helper()
	var ind bytes.Buffer
	if err := json.Indent(&ind, body, "", "  "); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, body)
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
		head = fmt.Appendf(nil, "status %d\n%s", status, indent(t, body))
	}
	return append(head, indent(t, acc.Response("in_progress"))...)
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

func goldenOpts(a *archive) StreamOptions {
	opt := goldenOptions
	opt.Background = a.directive("background") == "yes"
	if s := a.directive("skip"); s != "" {
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
	files, _ := filepath.Glob("testdata/stream_*.txtar")
	enc, _ := filepath.Glob("testdata/encode_*.txtar")
	files = append(files, enc...)
	if len(files) == 0 {
		t.Fatal("no golden streams")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := readArchive(t, path)
			defer a.write(t)
			var events []bridge.Event
			if up, ok := a.file("upstream.sse"); ok {
				if a.directive("crlf") == "yes" {
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
			if want, ok := a.file("events.jsonl"); ok && !*update || events == nil {
				events = parseEvents(t, want)
			}
			events = engineEvents(events)
			opt := goldenOpts(a)
			sse, dropped := encodeEvents(t, events, opt)
			a.check(t, "want.sse", sse)
			opt.Skip = 0
			a.check(t, "response.json", response(t, events, opt))
			if _, ok := a.file("dropped.txt"); len(dropped) > 0 || ok {
				a.check(t, "dropped.txt", []byte(strings.Join(dropped, "\n")+"\n"))
			}
		})
	}
}

// TestGoldenRequests runs testdata/request_*.txtar. With a request.json
// section, it is decoded (DecodeRequest) and compared with decoded.json;
// without one, hub.json is the input (a request from another dialect).
// Either way EncodeRequest's body (indented) is compared with
// upstream.json and what it dropped with dropped.txt. Comment lines
// "previous: ID" and "from: N" set EncodeOptions, "store: yes" Store.
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
			if body, ok := a.file("request.json"); ok {
				r, err := DecodeRequest(body)
				if err != nil {
					t.Fatalf("DecodeRequest: %v", err)
				}
				a.check(t, "decoded.json", marshal(t, r, true))
				req = r.Hub
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
			opt := EncodeOptions{PreviousResponseID: a.directive("previous"), Store: a.directive("store") == "yes"}
			opt.From, _ = strconv.Atoi(a.directive("from"))
			// The engine puts the instructions in front of the transcript.
			up := *req
			up.Messages = append(slices.Clone(req.Instructions), req.Messages...)
			body, dropped, err := EncodeRequest(&up, opt)
			if err != nil {
				t.Fatalf("EncodeRequest: %v", err)
			}
			a.check(t, "upstream.json", indent(t, body))
			a.check(t, "dropped.txt", []byte(strings.Join(dropped, "\n")+"\n"))
		})
	}
}

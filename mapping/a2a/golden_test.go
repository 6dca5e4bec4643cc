package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

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

// directive returns the value of a comment line "name: value".
func (a *archive) directive(name string) string {
	for _, l := range strings.Split(string(a.a.Comment), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+": "); ok {
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

func (a *archive) check(t testing.TB, name string, got []byte) {
	t.Helper()
	want, ok := a.file(name)
	if *update {
		if !ok || !bytes.Equal(want, got) {
			a.changed = true
			for i := range a.a.Files {
				if a.a.Files[i].Name == name {
					a.a.Files[i].Data = got
					return
				}
			}
			a.a.Files = append(a.a.Files, txtar.File{Name: name, Data: got})
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

func (a *archive) write(t testing.TB) {
	t.Helper()
	if *update && a.changed {
		if err := writeFile(a.path, txtar.Format(a.a)); err != nil {
			t.Fatal(err)
		}
	}
}

func marshalLine(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func parseEvents(t testing.TB, jl []byte) []bridge.Event {
	t.Helper()
	var out []bridge.Event
	for _, line := range bytes.Split(bytes.TrimSpace(jl), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev bridge.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("events.jsonl: %v: %s", err, line)
		}
		out = append(out, ev)
	}
	return out
}

// goldenRun is the run the encoder goldens are a part of.
var goldenRun = &bridge.Run{ID: "run_test", SessionID: "sess_test", ClientRunID: "client-msg-1", Status: bridge.StatusRunning,
	Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

// TestGoldenEncode runs testdata/encode_*.txtar: events.jsonl (numbered
// 1, 2, ... in run "run_test", each a millisecond after the last) after an
// input message input.txt is encoded as 0.3 (want.v03.sse) and 1.0
// (want.v10.sse) frames, and folded into the task (task.json). Every 0.3
// frame must decode with a2a-go's own types.
func TestGoldenEncode(t *testing.T) {
	files, _ := filepath.Glob("testdata/encode_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden encodings")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := readArchive(t, path)
			defer a.write(t)
			jl, ok := a.file("events.jsonl")
			if !ok {
				t.Fatal("no events.jsonl")
			}
			input, _ := a.file("input.txt")
			events := parseEvents(t, jl)
			for i := range events {
				events[i].RunID, events[i].Seq = goldenRun.ID, int64(i+1)
				events[i].Time = goldenRun.Created.Add(time.Duration(i) * time.Millisecond)
			}
			msgs := []bridge.Message{{ID: "m1", RunID: goldenRun.ID, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(strings.TrimSpace(string(input)))}}}
			var tb *TaskBuilder
			for _, v := range []Version{V03, V10} {
				var b bytes.Buffer
				tb = NewTaskBuilder(goldenRun, msgs)
				enc := NewStreamEncoder(&b, tb, StreamOptions{Version: v, RequestID: json.RawMessage(`"req-1"`)})
				for i := range events {
					if err := enc.Encode(&events[i]); err != nil {
						t.Fatal(err)
					}
				}
				name := "want.v03.sse"
				if v == V10 {
					name = "want.v10.sse"
				}
				a.check(t, name, b.Bytes())
				if v == V03 {
					checkSDKFrames(t, b.Bytes())
				}
			}
			task := AppendTask(nil, tb.Task(), V03, nil)
			var sdk a2asdk.Task
			if err := json.Unmarshal(task, &sdk); err != nil {
				t.Errorf("a2a-go cannot read the task: %v", err)
			}
			var pretty bytes.Buffer
			_ = json.Indent(&pretty, task, "", "  ")
			pretty.WriteByte('\n')
			a.check(t, "task.json", pretty.Bytes())
			if d := tb.Dropped(); len(d) > 0 {
				a.check(t, "dropped.txt", []byte(strings.Join(d, "\n")+"\n"))
			}
		})
	}
}

// checkSDKFrames decodes every frame with a2a-go's types.
func checkSDKFrames(t *testing.T, sse []byte) {
	t.Helper()
	for _, f := range bytes.Split(bytes.TrimSuffix(sse, []byte("\n\n")), []byte("\n\n")) {
		lines := bytes.Split(f, []byte("\n"))
		if len(lines) != 2 || !bytes.HasPrefix(lines[0], []byte("id: ")) || !bytes.HasPrefix(lines[1], []byte("data: ")) {
			t.Fatalf("frame is not an id: line and one data: line:\n%s", f)
		}
		var r struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(lines[1][6:], &r); err != nil {
			t.Fatalf("frame data: %v", err)
		}
		if _, err := a2asdk.UnmarshalEventJSON(r.Result); err != nil {
			t.Errorf("a2a-go cannot read %s: %v", r.Result, err)
		}
	}
}

// TestGoldenDecode runs testdata/decode_*.txtar: an upstream's SSE stream
// (upstream.sse, or the corpus file a "corpus:" comment names), or a
// send's JSON-RPC response (response.json), decoded in the profile a
// "profile:" comment names (default a2a) into events.jsonl. A stream that
// ends in an error has it as a last event of kind error.
func TestGoldenDecode(t *testing.T) {
	files, _ := filepath.Glob("testdata/decode_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden decodings")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := readArchive(t, path)
			defer a.write(t)
			p := Profile(a.directive("profile"))
			in, ok := a.file("upstream.sse")
			if c := a.directive("corpus"); c != "" {
				files := corpusFiles(t, c)
				if len(files) != 1 {
					t.Fatalf("corpus: %s names %d files, want one", c, len(files))
				}
				for _, b := range files {
					in, ok = b, true
					if strings.HasSuffix(c, ".http") {
						in = httpBody(b)
					}
					if !bytes.HasPrefix(in, []byte("data:")) { // a JSON-RPC response: as one frame
						in = append(append([]byte("data: "), bytes.TrimSpace(in)...), "\n\n"...)
					}
				}
			}
			if !ok {
				t.Fatal("no upstream.sse and no corpus: file")
			}
			var jl []byte
			for ev, err := range DecodeStream(bytes.NewReader(in), p) {
				if err != nil {
					var be *bridge.Error
					if !errors.As(err, &be) {
						t.Fatalf("error %T %v", err, err)
					}
					ev = bridge.Event{Kind: bridge.KindError, Error: be}
				}
				jl = append(jl, marshalLine(t, ev)...)
			}
			a.check(t, "events.jsonl", jl)
		})
	}
}

// TestTextDeltaAllocs: encoding an answer's text chunk allocates nothing
// once the frame buffer has grown.
func TestTextDeltaAllocs(t *testing.T) {
	tb := NewTaskBuilder(goldenRun, nil)
	var w bytes.Buffer
	enc := NewStreamEncoder(&w, tb, StreamOptions{RequestID: json.RawMessage(`1`)})
	seq := int64(0)
	next := func(k bridge.Kind, text string) *bridge.Event {
		seq++
		return &bridge.Event{RunID: goldenRun.ID, Seq: seq, Kind: k, Text: text, Time: goldenRun.Created}
	}
	_ = enc.Encode(next(bridge.KindRunStarted, ""))
	_ = enc.Encode(next(bridge.KindMessageStarted, ""))
	_ = enc.Encode(next(bridge.KindTextDelta, "warm up the buffers"))
	ev := next(bridge.KindTextDelta, "a word ")
	for _, v := range []Version{V03, V10} {
		enc.opt.Version = v
		allocs := testing.AllocsPerRun(200, func() {
			w.Reset()
			ev.Seq++
			if err := enc.Encode(ev); err != nil {
				t.Fatal(err)
			}
		})
		// The answer's text builder grows now and then; the frame itself is
		// written into the reused buffer.
		if allocs > 0.1 {
			t.Errorf("v%s: %.2f allocations per text delta, want none", v, allocs)
		}
	}
}

package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// goldenRun is the run the encoder goldens are a part of.
var goldenRun = &bridge.Run{ID: "run_test", SessionID: "sess_test", ClientRunID: "client-msg-1", Status: bridge.StatusRunning,
	Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

// TestGoldenEncode runs testdata/encode_*.txtar: events.jsonl (numbered
// 1, 2, ... in run "run_test", each a millisecond after the last) after an
// input message input.txt is encoded as 0.3 (want.v03.sse) and 1.0
// (want.v10.sse) frames, and folded into the task (task.json). Every 0.3
// frame must decode with a2a-go's own types.
func TestGoldenEncode(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		jl, ok := a.File("events.jsonl")
		if !ok {
			t.Fatal("no events.jsonl")
		}
		input, _ := a.File("input.txt")
		events := golden.ParseEvents(t, jl)
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
			a.Check(t, name, b.Bytes())
			if v == V03 {
				checkSDKFrames(t, b.Bytes())
			}
		}
		task := AppendTask(nil, tb.Task(), V03, nil)
		var sdk a2asdk.Task
		if err := json.Unmarshal(task, &sdk); err != nil {
			t.Errorf("a2a-go cannot read the task: %v", err)
		}
		a.CheckJSON(t, "task.json", task)
		if d := tb.Dropped(); len(d) > 0 {
			a.CheckLines(t, "dropped.txt", d)
		}
	}, "encode_*.txtar")
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
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		p := Profile(a.Directive("profile"))
		in, ok := a.File("upstream.sse")
		if c := a.Directive("corpus"); c != "" {
			files := golden.Corpus(t, c)
			if len(files) != 1 {
				t.Fatalf("corpus: %s names %d files, want one", c, len(files))
			}
			for _, b := range files {
				in, ok = b, true
				if strings.HasSuffix(c, ".http") {
					in = golden.HTTPBody(b)
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
			jl = append(jl, golden.Marshal(t, ev, false)...)
		}
		a.Check(t, "events.jsonl", jl)
	}, "decode_*.txtar")
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

package adk

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// splitHTTP splits a captured response into its status and body.
func splitHTTP(t *testing.T, raw []byte) (int, []byte) {
	t.Helper()
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatal("no header end in the capture")
	}
	f := strings.Fields(string(bytes.SplitN(head, []byte("\r\n"), 2)[0]))
	st, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return st, body
}

// encodeRun numbers decoded events as the engine would and encodes them
// back into ADK events, streaming.
func encodeRun(evs []bridge.Event) []byte {
	enc := NewStreamEncoder(StreamOptions{Author: "scripted", Streaming: true})
	var b []byte
	t0 := time.UnixMilli(1796202265000).UTC()
	for i, ev := range evs {
		ev.RunID, ev.Seq, ev.Time = "run_test", int64(i+2), t0.Add(time.Duration(i)*time.Millisecond)
		for _, o := range enc.Encode(&ev) {
			b, _ = AppendSSE(b, &o)
		}
	}
	return append(b, Done...)
}

// TestGolden decodes every captured answer of the real ADK-JS api_server
// (testdata/decode_*.txtar, copied from the corpus) into events, and
// encodes those events back into the frames the bridge's inbound side
// writes for them.
func TestGolden(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		var evs []bridge.Event
		var err error
		switch {
		case a.Has("upstream.sse"):
			raw, _ := a.File("upstream.sse")
			evs = decodeAll(t, raw)
		case a.Has("upstream.json"):
			raw, _ := a.File("upstream.json")
			if evs, err = DecodeEvents(bytes.TrimSpace(raw)); err != nil {
				t.Fatal(err)
			}
		case a.Has("upstream.http"):
			raw, _ := a.File("upstream.http")
			st, body := splitHTTP(t, raw)
			if st/100 == 2 {
				// A 200 SSE answer (a problem with newMessage).
				evs = decodeAll(t, body)
				break
			}
			a.Check(t, "error.json", append(mustJSON(t, DecodeError(st, body)), '\n'))
		}
		if len(evs) > 0 {
			if last := evs[len(evs)-1]; last.Kind != bridge.KindFinal {
				t.Errorf("the events do not end with a final: %+v", last)
			}
			a.Check(t, "events.jsonl", golden.JSONL(t, evs))
			a.Check(t, "want.sse", encodeRun(evs))
		}
	}, "decode_*.txtar")
}

// decodeAll decodes a run_sse stream that must not fail.
func decodeAll(t *testing.T, sse []byte) []bridge.Event {
	t.Helper()
	var evs []bridge.Event
	for ev, err := range DecodeStream(bytes.NewReader(sse)) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shape is the JSON type of every key of an object.
func shape(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for k, v := range o {
		switch v[0] {
		case '{':
			m[k] = "object"
		case '[':
			m[k] = "array"
		case '"':
			m[k] = "string"
		case 't', 'f':
			m[k] = "bool"
		default:
			m[k] = "number"
		}
	}
	return m
}

// TestShapes checks that the events the encoder writes for a captured
// flow have the field names and JSON types of the real server's events
// (partial and complete alike).
func TestShapes(t *testing.T) {
	for _, name := range []string{"run-sse-streaming-true", "run-sse-thought", "run-sse-function-tool", "run-sse-model-error"} {
		t.Run(name, func(t *testing.T) {
			a := golden.Read(t, "testdata/decode_"+name+".txtar")
			real, _ := a.File("upstream.sse")
			ours, _ := a.File("want.sse")
			kinds := func(sse []byte) map[string]map[string]string {
				out := map[string]map[string]string{}
				for _, l := range bytes.Split(sse, []byte("\n")) {
					d, ok := bytes.CutPrefix(l, []byte("data: "))
					if !ok || string(d) == "[DONE]" {
						continue
					}
					s := shape(t, d)
					kind := "complete"
					switch {
					case s["partial"] != "":
						kind = "partial"
					case s["errorCode"] != "":
						kind = "error"
					case bytes.Contains(d, []byte(`"functionResponse"`)):
						kind = "response"
					}
					if out[kind] == nil {
						out[kind] = s
					}
				}
				return out
			}
			rk, ok := kinds(real), kinds(ours)
			for kind, want := range rk {
				got := ok[kind]
				if got == nil {
					t.Errorf("no %s event in the bridge's frames", kind)
					continue
				}
				for k, typ := range want {
					if got[k] != typ {
						t.Errorf("%s event: key %q is %q in the bridge's frames, %q in the real server's", kind, k, got[k], typ)
					}
				}
				var extra []string
				for k := range got {
					if want[k] == "" {
						extra = append(extra, k)
					}
				}
				slices.Sort(extra)
				if len(extra) > 0 && kind != "complete" {
					t.Logf("%s event: the bridge adds %v", kind, extra)
				}
			}
		})
	}
}

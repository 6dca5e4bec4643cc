package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// FuzzDecodeRequest: no input panics; every error is a *bridge.Error; the
// echo is a JSON object; what decodes encodes to valid JSON, which decodes
// again.
func FuzzDecodeRequest(f *testing.F) {
	for _, b := range golden.InOrder(golden.CorpusBodies(f, "openai-responses/client/*.http")) {
		f.Add(b)
	}
	golden.Seeds(f, "request_*.txtar", "request.json", false)
	f.Add([]byte(`{"model":"m","input":[{"type":"reasoning","summary":[{"text":"a"},{"text":"b"}]},{"type":"function_call","call_id":"c","name":"f","arguments":{"a":1}}]}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"web_search_call","id":"ws"},{"role":"user","content":[{"type":"input_audio"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRequest(body)
		if golden.Refused(t, err) {
			return
		}
		if !json.Valid(r.Echo) || r.Echo[0] != '{' {
			t.Fatalf("echo is not a JSON object: %s", r.Echo)
		}
		for _, it := range r.Input {
			if !json.Valid(it) {
				t.Fatalf("input item is not JSON: %s", it)
			}
		}
		out, _, err := EncodeRequest(r.Hub, EncodeOptions{})
		if err != nil {
			t.Fatalf("EncodeRequest of a decoded request: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("EncodeRequest made invalid JSON: %s", out)
		}
		if len(r.Hub.Messages) == 0 {
			return
		}
		if _, err := DecodeRequest(out); err != nil {
			t.Fatalf("DecodeRequest(EncodeRequest(req)): %v\nin:  %s\nout: %s", err, body, out)
		}
	})
}

// FuzzDecodeStream: no upstream stream panics; errors are *bridge.Errors
// and end the stream; the events encode, and the encoder's frames are
// each a JSON object with a sequence_number.
func FuzzDecodeStream(f *testing.F) {
	golden.Seeds(f, "stream_*.txtar", "upstream.sse", false)
	f.Add([]byte("data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\"}}\n\n"))
	f.Fuzz(func(t *testing.T, sse []byte) {
		events, failed := golden.Drain(t, DecodeStream(bytes.NewReader(sse)))
		if failed != nil {
			events = append(events, bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Reason: "x"}})
		}
		var b bytes.Buffer
		enc := NewStreamEncoder(&b, goldenOptions)
		acc := NewAccumulator(goldenOptions)
		for i := range events {
			ev := events[i]
			ev.RunID, ev.Seq = goldenRun, int64(i+1)
			if err := enc.Encode(&ev); err != nil {
				t.Fatal(err)
			}
			acc.Add(&ev)
		}
		if !json.Valid(acc.Response("in_progress")) {
			t.Fatalf("invalid response: %s", acc.Response("in_progress"))
		}
		n := int64(0)
		for _, frame := range bytes.Split(b.Bytes(), []byte("\n\n")) {
			for _, line := range bytes.Split(frame, []byte("\n")) {
				data, ok := bytes.CutPrefix(line, []byte("data: "))
				if !ok {
					continue
				}
				var ev struct {
					Seq *int64 `json:"sequence_number"`
				}
				if err := json.Unmarshal(data, &ev); err != nil || ev.Seq == nil || *ev.Seq != n {
					t.Fatalf("frame %d: %v: %s", n, err, data)
				}
				n++
			}
		}
	})
}

// FuzzFastEvent holds fastEvent to encoding/json: whenever it takes an
// event, the event is valid JSON and decodes to exactly what json.Unmarshal
// makes of it.
func FuzzFastEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello","logprobs":[],"obfuscation":"x1","sequence_number":5}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"city\":","sequence_number":9}`,
		`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":1,"delta":"think","sequence_number":3}`,
		`{"type":"response.refusal.delta","item_id":"msg_1","delta":"no","sequence_number":null}`,
		`{"type":"response.created","response":{"id":"resp_1","status":"in_progress"},"sequence_number":0}`,
		`{"type":"response.output_text.delta","Delta":"x"}`,
		`{"type":"response.output_text.delta","delta":"a","delta":"b"}`,
		`{"type":"response.output_text.delta","output_index":1.0}`,
		`{"type":"response.output_text.delta","sequence_number":-0,"delta":"\u00e9"}`,
		`{"type":"response.output_text.delta","sequence_number":99999999999999999999}`,
		`{"type":"response.output_text.delta","delta":7}`,
		`{"type":"response.output_text.delta","output_index":null,"item_id":null}`,
		`{"type":"response.output_text.delta"} x`,
		"{\"type\":\"response.output_text.delta\",\"delta\":\"a\tb\"}",
		"{\"type\":\"response.output_text.delta\",\"delta\":\"\xff\"}",
		`{"type":"response.output_text.delta","arguments":"{}"}`,
		`[{"type":"response.output_text.delta"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p fastjson.Parser
		golden.SameAsJSON(t, data, func(data []byte, v *wireEvent) bool { return fastEvent(&p, data, v) })
	})
}

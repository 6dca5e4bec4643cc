package openai

import (
	"bytes"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// FuzzDecodeRequest: no input panics; every error is a *bridge.Error; what
// decodes encodes, and what EncodeRequest makes decodes again.
func FuzzDecodeRequest(f *testing.F) {
	for _, b := range golden.InOrder(corpusBodies(f)) {
		f.Add(b)
	}
	golden.Seeds(f, "request_*.txtar", "request.json", false)
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"n":1}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if golden.Refused(t, err) {
			return
		}
		out, _, err := EncodeRequest(req)
		if err != nil {
			t.Fatalf("EncodeRequest of a decoded request: %v", err)
		}
		again, err := DecodeRequest(out)
		if err != nil {
			t.Fatalf("DecodeRequest(EncodeRequest(req)): %v\nin:  %s\nout: %s", err, body, out)
		}
		if lossy(req) {
			return
		}
		if diff := cmp.Diff(withoutStream(req), withoutStream(again)); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s\nin:  %s\nout: %s", diff, body, out)
		}
	})
}

// lossy reports whether a decoded request holds what EncodeRequest does not
// send back by design: reasoning parts, and fields the decoder dropped.
func lossy(r *bridge.Request) bool {
	if len(r.Dropped) > 0 {
		return true
	}
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Type == bridge.PartReasoning {
				return true
			}
		}
	}
	return false
}

// FuzzDecodeStream: no input panics; errors are *bridge.Error; nothing is
// yielded after an error; the events encode for a client without error.
func FuzzDecodeStream(f *testing.F) {
	golden.Seeds(f, "stream_*.txtar", "upstream.sse", true)
	f.Fuzz(func(t *testing.T, sse []byte) {
		events, _ := golden.Drain(t, DecodeStream(bytes.NewReader(sse)))
		enc := NewStreamEncoder(io.Discard, StreamOptions{IncludeUsage: true})
		acc := NewAccumulator(StreamOptions{})
		for i := range events {
			if err := enc.Encode(&events[i]); err != nil {
				t.Fatal(err)
			}
			acc.Add(&events[i])
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := acc.Response()
		golden.Refused(t, err)
	})
}

// FuzzFastChunk holds fastChunk to encoding/json: whenever it takes a chunk,
// the chunk is valid JSON and decodes to exactly what json.Unmarshal makes
// of it.
func FuzzFastChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1760000000,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"tok "},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
		`{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"think \"hard\"\n"}}]}`,
		`{"id":"c","choices":[null,{"index":1,"delta":null}],"model":null}`,
		`{"ID":"c","choices":[{"Index":1}]}`,
		`{"id":"a","id":"b"}`,
		`{"id":"c","choices":[{"index":1.0}]}`,
		`{"id":"c","choices":[{"index":-0,"delta":{"content":"\u00e9\ud800"}}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{"content":7}}]}`,
		`{"id":"c","choices":{}}`,
		`{"id":"c"} x`,
		`[{"id":"c"}]`,
		"{\"id\":\"\xff\"}",
		"{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\tb\x00\"}}]}",
		"{\"id\":\"c\",\t\"model\":\"m\"}",
		`{"id":"c","choices":[{"index":99999999999999999999}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p fastjson.Parser
		golden.SameAsJSON(t, data, func(data []byte, v *wireChunk) bool { return fastChunk(&p, data, v) })
	})
}

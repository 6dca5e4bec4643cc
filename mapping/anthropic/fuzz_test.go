package anthropic

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// FuzzDecodeRequest: no input panics; every error is a *bridge.Error; what
// decodes encodes, what EncodeRequest makes decodes again, and (when
// nothing was dropped) to the same request.
func FuzzDecodeRequest(f *testing.F) {
	for _, b := range golden.InOrder(corpusFiles(f)) {
		f.Add(b)
	}
	golden.Seeds(f, "request_*.txtar", "request.json", false)
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"image","source":{"type":"url","url":"u"}}]},{"type":"text","text":"x"}]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"system":"","messages":[{"role":"assistant","content":""}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if golden.Refused(t, err) {
			return
		}
		out, dropped, err := EncodeRequest(req, EncodeOptions{})
		_, _, countErr := EncodeCountTokens(req)
		if err != nil || countErr != nil {
			// The one refusal: every message was dropped or became system.
			if !nothingLeft(err) || !nothingLeft(countErr) {
				t.Fatalf("EncodeRequest of a decoded request: %v; EncodeCountTokens: %v\nin: %s", err, countErr, body)
			}
			return
		}
		again, err := DecodeRequest(out)
		if err != nil {
			t.Fatalf("DecodeRequest(EncodeRequest(req)): %v\nin:  %s\nout: %s", err, body, out)
		}
		if len(req.Dropped) > 0 || len(dropped) > 0 || lossy(req) {
			return
		}
		if diff := cmp.Diff(withoutStream(req), withoutStream(again)); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s\nin:  %s\nout: %s", diff, body, out)
		}
	})
}

// nothingLeft reports whether err is EncodeRequest's refusal of a request
// with no message left to send.
func nothingLeft(err error) bool {
	var be *bridge.Error
	return errors.As(err, &be) && be.Code == bridge.CodeUnsupported && strings.Contains(be.Message, "no message is left to send")
}

// lossy reports whether a decoded request holds what EncodeRequest changes
// by design: the order of tool results and other user content, empty text,
// tool_use blocks before other assistant blocks, system prompts among the
// messages, consecutive system messages, server tools, empty messages.
func lossy(r *bridge.Request) bool {
	_, server := r.Extra[keyServerTools]
	if server {
		return true
	}
	for i, m := range r.Messages {
		if m.Role == bridge.RoleSystem && i > 0 {
			return true
		}
		if m.Role == bridge.RoleUser && i > 0 && r.Messages[i-1].Role == bridge.RoleTool {
			return true
		}
		if m.Role == bridge.RoleTool && i > 0 && r.Messages[i-1].Role == bridge.RoleUser {
			return true
		}
		if len(m.Parts) == 0 && len(m.ToolCalls) == 0 {
			return true
		}
		for _, p := range m.Parts {
			if (p.Type == bridge.PartText && p.Text == "") || p.Type == bridge.PartReasoning && p.Signature == "" && p.Encrypted == "" {
				return true
			}
		}
		if len(m.ToolCalls) > 0 && len(m.Parts) > 0 {
			return true
		}
	}
	return false
}

// FuzzDecodeStream: no input panics; errors are *bridge.Error; nothing is
// yielded after an error; the events encode into a stream that passes the
// Messages stream validator, and the Accumulator answers.
func FuzzDecodeStream(f *testing.F) {
	golden.Seeds(f, "stream_*.txtar", "upstream.sse", true)
	f.Fuzz(func(t *testing.T, sse []byte) {
		events, failed := golden.Drain(t, DecodeStream(bytes.NewReader(sse)))
		if failed != nil {
			events = append(events, bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Error: failed}})
		}
		var out bytes.Buffer
		enc := NewStreamEncoder(&out, StreamOptions{ID: "msg_f", Model: "m"})
		acc := NewAccumulator(StreamOptions{})
		for i := range events {
			ev := events[i]
			ev.RunID, ev.Seq = "run_f", int64(i+1)
			if err := enc.Encode(&ev); err != nil {
				t.Fatal(err)
			}
			acc.Add(&events[i])
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		frames, err := anthropictest.ParseFrames(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if _, problems := anthropictest.CheckStream(frames, anthropictest.Check{RunID: "run_f", IDs: true}); len(problems) > 0 {
			t.Fatalf("invalid stream %v:\n%s\nfrom:\n%s", problems, out.Bytes(), sse)
		}
		_, err = acc.Response()
		golden.Refused(t, err)
		_, _ = io.Copy(io.Discard, &out)
	})
}

// FuzzFastEvent holds fastEvent to encoding/json: whenever it takes an
// event, the event is valid JSON and decodes to exactly what json.Unmarshal
// makes of it.
func FuzzFastEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAh"}}`,
		`{"type":"content_block_delta","index":null,"delta":null}`,
		`{"delta":{"type":"text_delta","text":"x"},"index":2,"type":"content_block_delta"}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
		`{"type":"content_block_delta","Index":0,"delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"content_block_delta","index":0,"index":1}`,
		`{"type":"content_block_delta","index":1.0}`,
		`{"type":"content_block_delta","index":-0,"delta":{"text":"\u00e9"}}`,
		`{"type":"content_block_delta","index":99999999999999999999}`,
		`{"type":"content_block_delta","delta":{"text":7}}`,
		`{"type":"content_block_delta","delta":[]}`,
		`{"type":"content_block_delta"} x`,
		"{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"a\tb\"}}",
		"{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"\xff\"}}",
		`{"type":null,"index":0}`,
		`[{"type":"content_block_delta"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p fastjson.Parser
		golden.SameAsJSON(t, data, func(data []byte, v *wireEvent) bool { return fastEvent(&p, data, v) })
	})
}

package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

func isOurError(err error) bool {
	var be *bridge.Error
	var re *Error
	return errors.As(err, &be) || errors.As(err, &re)
}

// FuzzDecode feeds the JSON-RPC decoder and the params decoders: no input
// panics; every error is a *bridge.Error or a JSON-RPC *Error with a code
// in range; a message that decodes renders, in either version, to JSON
// that decodes to the same message.
func FuzzDecode(f *testing.F) {
	for _, b := range golden.Corpus(f, "a2a-*/client/*.http") {
		f.Add(golden.HTTPBody(b))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi","metadata":{"a":[1,2.5e10]}},{"kind":"file","file":{"bytes":"AAE=","mimeType":"image/png","name":"a.png"}},{"kind":"data","data":{"k":{"n":null}}}],"contextId":"c","taskId":"t","referenceTaskIds":["r"]},"configuration":{"blocking":false,"historyLength":3,"acceptedOutputModes":["text/plain"]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"},{"url":"https://e/x.pdf","mediaType":"application/pdf","filename":"x.pdf"},{"raw":"AA==","mediaType":"audio/wav"}]},"configuration":{"returnImmediately":true}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","historyLength":0}},{"jsonrpc":"2.0","method":"tasks/cancel","params":{"id":"t"}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"c","status":"TASK_STATE_WORKING","pageSize":5,"pageToken":"7","statusTimestampAfter":"2026-01-02T03:04:05Z"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tasks/resubscribe","params":{"id":"t"}}`,
		`[]`, `{"jsonrpc":"2.0","id":[1],"method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reqs, _, err := DecodeRequest(body)
		if err != nil {
			if err.Code > -32000 || err.Code < -32768 || err.Message == "" {
				t.Fatalf("body error %+v", err)
			}
			return
		}
		for _, r := range reqs {
			if r.Err != nil {
				if r.Err.Code != CodeInvalidRequest {
					t.Fatalf("request error %+v", r.Err)
				}
				continue
			}
			if r.ID != nil && !json.Valid(r.ID) {
				t.Fatalf("id %q is not JSON", r.ID)
			}
			if out := AppendResult(nil, r.ID, []byte("null")); !json.Valid(out) {
				t.Fatalf("response %s is not JSON", out)
			}
			switch r.Op {
			case OpSend, OpStream:
				p, err := DecodeSendParams(r.Params)
				if err != nil {
					if !isOurError(err) {
						t.Fatalf("params error %T %v", err, err)
					}
					continue
				}
				HubMessage(p.Message)
				for _, v := range []Version{V03, V10} {
					b := AppendMessage(nil, p.Message, v)
					again, err := decodeMessage(b, "m")
					if err != nil {
						t.Fatalf("v%s: a decoded message renders as %s, which does not decode: %v", v, b, err)
					}
					if diff := cmp.Diff(renderable(p.Message), renderable(again)); diff != "" {
						t.Fatalf("v%s round trip (-first +second):\n%s\n%s", v, diff, b)
					}
				}
			case OpGet, OpCancel, OpSubscribe:
				if _, err := DecodeTaskParams(r.Params); err != nil && !isOurError(err) {
					t.Fatalf("params error %T %v", err, err)
				}
			case OpList:
				if _, err := DecodeListParams(r.Params); err != nil && !isOurError(err) {
					t.Fatalf("params error %T %v", err, err)
				}
			}
		}
	})
}

// renderable is a message as JSON compares it (numbers as JSON text).
func renderable(m *a2asdk.Message) any {
	b, _ := json.Marshal(m)
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	_ = d.Decode(&v)
	return v
}

// FuzzStreamDecoder feeds an upstream's frames to the stream decoder: no
// input panics, every error is a *bridge.Error, nothing follows a final.
func FuzzStreamDecoder(f *testing.F) {
	for _, b := range golden.Corpus(f, "a2a-*/server/*.sse") {
		f.Add(b)
	}
	for _, b := range golden.Corpus(f, "a2a-*/server/*.json") {
		f.Add(append(append([]byte("data: "), bytes.TrimSpace(b)...), "\n\n"...))
	}
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_FAILED\",\"message\":{\"parts\":[{\"text\":\"x\"}]}}}}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range []Profile{ProfileA2A, ProfileADK} {
			final := false
			for ev, err := range DecodeStream(bytes.NewReader(body), p) {
				if err != nil {
					var be *bridge.Error
					if !errors.As(err, &be) {
						t.Fatalf("error %T %v", err, err)
					}
					break
				}
				if final {
					t.Fatalf("an event after the final: %+v", ev)
				}
				final = ev.Kind == bridge.KindFinal
			}
		}
	})
}

package hermes

import (
	"bytes"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// FuzzDecodeRequest: any body decodes to a request or a *bridge.Error, never a
// panic; a decoded request has input.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"message":"hi"}`, `{"input":"hi","session_id":"s","instructions":"be brief","model":"m"}`,
		`{"input":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"}]}]}`,
		`{"input":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"message":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}`,
		`{"message":[{"type":"file"}]}`, `[]`, `{"message":""}`, `{"message":null}`, `{`, ``, `{"message":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := DecodeRequest(body)
		if err != nil {
			if _, ok := err.(*bridge.Error); !ok {
				t.Fatalf("error %T %v is not a *bridge.Error", err, err)
			}
			return
		}
		if len(tr.Request.Messages) == 0 {
			t.Fatal("no input and no error")
		}
		_, _ = DecodeSteer(body)
	})
}

// FuzzDecodeStream: any stream decodes to events, at most one final, and
// nothing after an error.
func FuzzDecodeStream(f *testing.F) {
	f.Add([]byte("event: assistant.delta\ndata: {\"delta\":\"x\",\"run_id\":\"r\",\"seq\":1}\n\nevent: done\ndata: {}\n\n"))
	f.Add([]byte("event: tool.started\ndata: {\"tool_name\":\"t\",\"args\":[1]}\n\nevent: tool.failed\ndata: {}\n\nevent: error\ndata: {\"message\":{\"message\":\"x\"}}\n\nevent: done\ndata: {}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		finals, errs := 0, 0
		for ev, err := range DecodeStream(bytes.NewReader(b)) {
			if errs > 0 {
				t.Fatal("event after an error")
			}
			if err != nil {
				errs++
				continue
			}
			if ev.Kind == bridge.KindFinal {
				finals++
			}
		}
		if finals > 1 {
			t.Fatalf("%d finals", finals)
		}
	})
}

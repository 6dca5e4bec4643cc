package adk

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *RunRequest
		code bridge.Code
	}{
		{"camel", `{"appName":"a","userId":"u","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"hi"}]},"streaming":true,"stateDelta":{"k":1}}`,
			&RunRequest{AppName: "a", UserID: "u", SessionID: "s", NewMessage: &Content{Role: "user", Parts: []Part{{Text: "hi"}}}, Streaming: true, StateDelta: json.RawMessage(`{"k":1}`)}, ""},
		{"snake", `{"app_name":"a","user_id":"u","session_id":"s","new_message":{"role":"user","parts":[{"function_response":{"id":"c1","name":"f","response":{"ok":true}}}]},"state_delta":{}}`,
			&RunRequest{AppName: "a", UserID: "u", SessionID: "s", NewMessage: &Content{Role: "user", Parts: []Part{{FunctionResponse: &FunctionResponse{ID: "c1", Name: "f", Response: json.RawMessage(`{"ok":true}`)}}}}, StateDelta: json.RawMessage(`{}`)}, ""},
		{"resume", `{"sessionId":"s","streaming":true,"lastEventId":"run_1:4"}`,
			&RunRequest{SessionID: "s", Streaming: true, LastEventID: "run_1:4"}, ""},
		{"empty", ``, nil, bridge.CodeInvalid},
		{"not an object", `[1]`, nil, bridge.CodeInvalid},
		{"bad json", `{"appName":`, nil, bridge.CodeInvalid},
		{"parts not an array", `{"newMessage":{"parts":{}}}`, nil, bridge.CodeInvalid},
		{"no parts", `{"newMessage":{"role":"user"}}`, nil, bridge.CodeInvalid},
		{"streaming string", `{"streaming":"yes"}`, nil, bridge.CodeInvalid},
		{"state not object", `{"stateDelta":[]}`, nil, bridge.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.body))
			if tt.code != "" {
				if bridge.ErrorCode(err) != tt.code {
					t.Fatalf("err = %v, want code %s", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTime(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Time
	}{
		{"1796202265882", time.UnixMilli(1796202265882).UTC()},
		{"1760000001.2", time.UnixMilli(1760000001200).UTC()},
		{"1760000001", time.Unix(1760000001, 0).UTC()},
	} {
		var got Time
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
			t.Fatal(err)
		}
		if !time.Time(got).Equal(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.in, time.Time(got), tt.want)
		}
	}
	b, _ := json.Marshal(Time(time.UnixMilli(1760000001200)))
	if string(b) != "1760000001.2" {
		t.Errorf("marshal: %s", b)
	}
}

// TestEncoderFrameIDs: every ADK event the encoder writes has an id of its
// own, that of the hub event that made it: a partial and the complete
// event a later hub event flushes (a steer, a failure) never share one.
func TestEncoderFrameIDs(t *testing.T) {
	evs := []bridge.Event{
		{Kind: bridge.KindRunStarted},
		{Kind: bridge.KindMessageStarted},
		{Kind: bridge.KindTextDelta, Text: "a"},
		{Kind: bridge.KindTextDelta, Text: "b"},
		{Kind: bridge.KindUserMessage, Message: &bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("steer")}}},
		{Kind: bridge.KindTextDelta, Text: "c"},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Reason: "boom"}},
	}
	for i := range evs {
		evs[i].RunID, evs[i].Seq = "r", int64(i+1)
	}
	for _, streaming := range []bool{true, false} {
		enc := NewStreamEncoder(StreamOptions{Author: "x", Streaming: streaming})
		var ids []string
		for i := range evs {
			for _, o := range enc.Encode(&evs[i]) {
				ids = append(ids, o.ID)
			}
		}
		want := []string{"r:5.1", "r:5", "r:7.1", "r:7"} // aggregate and steer; aggregate and error
		if streaming {
			want = []string{"r:3", "r:4", "r:5.1", "r:5", "r:6", "r:7.1", "r:7"}
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("streaming %v: ids (-want +got):\n%s", streaming, diff)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"appName":"a","userId":"u","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"hi"}]},"streaming":true}`,
		`{"app_name":"a","new_message":{"parts":[{"inline_data":{"mime_type":"image/png","data":"AA=="}},{"file_data":{"file_uri":"gs://x"}}]}}`,
		`{"sessionId":"s","lastEventId":"r:1"}`, `{}`, `[]`, `null`, `{"newMessage":{"parts":[{"functionCall":{"name":"f","args":{"a":[1]}}}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			if bridge.AsError(err).Code != bridge.CodeInvalid {
				t.Fatalf("error code %s: %v", bridge.AsError(err).Code, err)
			}
			return
		}
		if r.NewMessage != nil {
			msgs, _ := HubMessages(r.NewMessage)
			_, _ = EncodeContent(msgs)
		}
	})
}

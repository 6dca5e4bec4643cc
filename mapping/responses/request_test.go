package responses

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// TestDecodeRequestErrors: bad input is a *bridge.Error with the right
// code, naming the field; never a panic or a Go error string.
func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name, body string
		code       bridge.Code
		msg        string // a substring of the message
	}{
		{"empty", ``, bridge.CodeInvalid, "empty"},
		{"not json", `{"model":`, bridge.CodeInvalid, "invalid JSON"},
		{"array", `[1]`, bridge.CodeInvalid, "expected object"},
		{"no model", `{"input":"x"}`, bridge.CodeInvalid, "model: required"},
		{"model number", `{"model":1,"input":"x"}`, bridge.CodeInvalid, "model: expected string"},
		{"no input", `{"model":"m"}`, bridge.CodeInvalid, "input: required"},
		{"input number", `{"model":"m","input":3}`, bridge.CodeInvalid, "input: expected string or array"},
		{"input empty", `{"model":"m","input":[]}`, bridge.CodeInvalid, "must not be empty"},
		{"bad role", `{"model":"m","input":[{"role":"robot","content":"x"}]}`, bridge.CodeInvalid, `input[0].role: unknown role "robot"`},
		{"no content", `{"model":"m","input":[{"role":"user"}]}`, bridge.CodeInvalid, "input[0].content: required"},
		{"part without type", `{"model":"m","input":[{"role":"user","content":[{"text":"x"}]}]}`, bridge.CodeInvalid, "input[0].content[0].type: required"},
		{"image without source", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`, bridge.CodeInvalid, "image_url or file_id"},
		{"call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f"}]}`, bridge.CodeInvalid, "input[0].call_id: required"},
		{"output without output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, bridge.CodeInvalid, "input[0].output: required"},
		{"item reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, bridge.CodeUnsupported, "item_reference"},
		{"conversation", `{"model":"m","input":"x","conversation":"conv_1"}`, bridge.CodeUnsupported, "conversation"},
		{"prompt", `{"model":"m","input":"x","prompt":{"id":"p"}}`, bridge.CodeUnsupported, "prompt"},
		{"store string", `{"model":"m","input":"x","store":"yes"}`, bridge.CodeInvalid, "store: expected boolean"},
		{"tool without name", `{"model":"m","input":"x","tools":[{"type":"function"}]}`, bridge.CodeInvalid, "tools[0].name: required"},
		{"tool params string", `{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":"x"}]}`, bridge.CodeInvalid, "tools[0].parameters: expected object"},
		{"tool_choice value", `{"model":"m","input":"x","tool_choice":"sometimes"}`, bridge.CodeInvalid, "tool_choice: unknown value"},
		{"max tokens zero", `{"model":"m","input":"x","max_output_tokens":0}`, bridge.CodeInvalid, "max_output_tokens"},
		{"temperature string", `{"model":"m","input":"x","temperature":"hot"}`, bridge.CodeInvalid, "temperature: expected number"},
		{"metadata value", `{"model":"m","input":"x","metadata":{"k":1}}`, bridge.CodeInvalid, "metadata.k: expected string"},
		{"format type", `{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, bridge.CodeInvalid, "text.format.type"},
		{"schema missing", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, bridge.CodeInvalid, "text.format.schema: required"},
		{"too deep", `{"model":"m","input":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, bridge.CodeInvalid, "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			golden.WantError(t, err, tt.code, tt.msg)
		})
	}
}

// TestDecodeRequestDefaults: store defaults to true, as in the API; the
// easy message form needs no type; item ids the client sends are not kept.
func TestDecodeRequestDefaults(t *testing.T) {
	r, err := DecodeRequest([]byte(`{"model":"m","input":[{"id":"msg_1","role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Store || r.Background || r.Hub.Stream {
		t.Errorf("store=%v background=%v stream=%v, want true false false", r.Store, r.Background, r.Hub.Stream)
	}
	if len(r.Hub.Messages) != 1 || r.Hub.Messages[0].Text() != "hi" {
		t.Errorf("messages %+v", r.Hub.Messages)
	}
	if strings.Contains(string(r.Input[0]), "msg_1") {
		t.Errorf("the client's item id is kept: %s", r.Input[0])
	}
	r, err = DecodeRequest([]byte(`{"model":"m","input":"x","store":false,"background":true,"stream":true,"previous_response_id":"resp_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Store || !r.Background || !r.Hub.Stream || r.PreviousResponseID != "resp_1" {
		t.Errorf("store=%v background=%v stream=%v prev=%q", r.Store, r.Background, r.Hub.Stream, r.PreviousResponseID)
	}
}

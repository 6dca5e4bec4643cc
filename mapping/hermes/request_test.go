package hermes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

func TestDecodeRequest(t *testing.T) {
	tr, err := DecodeRequest([]byte(`{"input":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"session_id":"s","instructions":"sys","model_options":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if tr.SessionID != "s" || len(tr.History) != 2 || len(tr.Request.Messages) != 1 || tr.Request.Messages[0].Role != bridge.RoleTool {
		t.Fatalf("%+v", tr)
	}
	if diff := cmp.Diff([]string{"request.model_options"}, tr.Request.Dropped); diff != "" {
		t.Error(diff)
	}
	if len(tr.Request.Instructions) != 1 || tr.Request.Instructions[0].Text() != "sys" {
		t.Errorf("instructions %+v", tr.Request.Instructions)
	}
	// Each bad body is a *bridge.Error with its code, naming the member.
	for _, tc := range []struct {
		name, body string
		code       bridge.Code
		msg        string
	}{
		{"empty", ``, bridge.CodeInvalid, "request body: empty"},
		{"array", `[]`, bridge.CodeInvalid, "request body: expected object"},
		{"missing", `{"model":"m"}`, bridge.CodeInvalid, "request.message: missing"},
		{"blank", `{"message":"  "}`, bridge.CodeInvalid, "request.message: empty"},
		{"number", `{"message":1}`, bridge.CodeInvalid, "request.message: expected string or array"},
		{"role", `{"input":[{"role":"wizard","content":"x"}]}`, bridge.CodeInvalid, "request.input[0].role: unknown role"},
		{"tool", `{"input":[{"role":"tool","content":"x"}]}`, bridge.CodeInvalid, "request.input[0].tool_call_id: missing"},
		{"file", `{"message":[{"type":"file"}]}`, bridge.CodeUnsupported, "request.message[0].type:"},
		{"syntax", `{"message":`, bridge.CodeInvalid, "request body: invalid JSON"},
	} {
		_, err := DecodeRequest([]byte(tc.body))
		be, ok := err.(*bridge.Error)
		if !ok || be.Code != tc.code || !strings.HasPrefix(be.Message, tc.msg) {
			t.Errorf("%s: %#v, want %s %q...", tc.name, err, tc.code, tc.msg)
		}
	}
	if m, err := DecodeSteer([]byte(`{"text":"go on"}`)); err != nil || m.Text() != "go on" {
		t.Errorf("steer %v %v", m, err)
	}
	if _, err := DecodeSteer([]byte(`{}`)); bridge.ErrorCode(err) != bridge.CodeInvalid || !strings.Contains(err.Error(), "request.input: missing") {
		t.Errorf("empty steer: %v", err)
	}
}

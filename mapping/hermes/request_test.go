package hermes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

func TestDecodeTurn(t *testing.T) {
	tr, err := DecodeTurn([]byte(`{"input":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"session_id":"s","instructions":"sys","model_options":{}}`))
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
	for name, body := range map[string]string{
		"empty":   ``,
		"array":   `[]`,
		"missing": `{"model":"m"}`,
		"blank":   `{"message":"  "}`,
		"number":  `{"message":1}`,
		"role":    `{"input":[{"role":"wizard","content":"x"}]}`,
		"tool":    `{"input":[{"role":"tool","content":"x"}]}`,
		"file":    `{"message":[{"type":"file"}]}`,
		"syntax":  `{"message":`,
	} {
		if _, err := DecodeTurn([]byte(body)); err == nil {
			t.Errorf("%s: no error", name)
		} else if _, ok := err.(*bridge.Error); !ok {
			t.Errorf("%s: %T", name, err)
		}
	}
	if m, err := DecodeSteer([]byte(`{"text":"go on"}`)); err != nil || m.Text() != "go on" {
		t.Errorf("steer %v %v", m, err)
	}
	if _, err := DecodeSteer([]byte(`{}`)); err == nil {
		t.Error("empty steer accepted")
	}
}

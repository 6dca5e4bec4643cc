package hermes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// TestErrorTable: every code encodes to its status and decodes back.
func TestErrorTable(t *testing.T) {
	for _, row := range errorTable {
		t.Run(string(row.code), func(t *testing.T) {
			status, body := EncodeError(&bridge.Error{Code: row.code, Message: "m"})
			if status != row.status {
				t.Errorf("status %d, want %d", status, row.status)
			}
			var env struct {
				Error struct{ Message, Type, Code string } `json:"error"`
			}
			if err := json.Unmarshal(body, &env); err != nil || env.Error.Code != row.wire || env.Error.Message != "m" {
				t.Fatalf("body %s", body)
			}
			back := DecodeError(status, body)
			want := row.code
			if want == bridge.CodeInternal {
				want = bridge.CodeUpstream // an upstream's own failure is an upstream fault here
			}
			if back.Code != want {
				t.Errorf("decoded code %s, want %s", back.Code, want)
			}
		})
	}
}

func TestErrorSpecific(t *testing.T) {
	for hc, code := range specific {
		e := Errorf(code, hc, "x")
		status, body := EncodeError(e)
		back := DecodeError(status, body)
		if back.Code != code || back.UpstreamCode != hc {
			t.Errorf("%s: got %s %s from %s", hc, back.Code, back.UpstreamCode, body)
		}
	}
	// Another dialect's upstream code is not passed to a Hermes client.
	_, body := EncodeError(&bridge.Error{Code: bridge.CodeInvalid, Dialect: "anthropic", UpstreamCode: "x", Message: "m"})
	if string(body) != `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"invalid_request"}}` {
		t.Errorf("body %s", body)
	}
	if e := DecodeError(502, []byte("<html>")); e.Code != bridge.CodeUpstream || e.Message != "<html>" {
		t.Errorf("%+v", e)
	}
}

// TestDecodeBadFrames: a frame that is not JSON, and one that is an object
// with a field of the wrong type, each end the stream with an upstream
// error that says which, in the bridge's words (no Go error text).
func TestDecodeBadFrames(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"delta":`, `frame "assistant.delta" is not a JSON object`},
		{`{"run_id":7,"delta":"hi"}`, `frame "assistant.delta" does not have the Hermes frame's shape`},
	} {
		in := "event: assistant.delta\ndata: " + tc.data + "\n\n"
		var got *bridge.Error
		for _, err := range DecodeStream(strings.NewReader(in)) {
			if err != nil {
				got = bridge.AsError(err)
				break
			}
		}
		if got == nil || got.Code != bridge.CodeUpstream || !strings.Contains(got.Message, tc.want) ||
			strings.Contains(got.Message, "json:") || strings.Contains(got.Message, "cannot unmarshal") {
			t.Errorf("%s: got %#v, want an upstream error saying %q", tc.data, got, tc.want)
		}
	}
}

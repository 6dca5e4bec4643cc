package hermes

import (
	"encoding/json"
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

package runs

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// FuzzDecodeSteer: a steer body is a user message with text, or an
// invalid-request error; never a panic.
func FuzzDecodeSteer(f *testing.F) {
	for _, s := range []string{`{"input":"go on"}`, `{"message":"m"}`, `{"text":"t"}`, `{"input":""}`, `{"input":1,"text":"t"}`,
		`{}`, `[]`, `null`, ``, `{"input":"\u0000"}`, `{"input":"a","input":"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeSteer(body)
		if err != nil {
			if be := bridge.AsError(err); be.Code != bridge.CodeInvalid {
				t.Fatalf("decodeSteer(%q): %v, want an invalid-request error", body, err)
			}
			return
		}
		if m.Role != bridge.RoleUser || len(m.Parts) != 1 || m.Parts[0].Text == "" {
			t.Fatalf("decodeSteer(%q) = %+v: want one user text part", body, m)
		}
	})
}

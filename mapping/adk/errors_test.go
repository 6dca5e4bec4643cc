package adk

import (
	"encoding/json"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// TestErrorTable: every code has a status, and reading that status back
// (as an upstream's answer) gives the code again, except where ADK-JS's
// statuses merge codes (an existing session is a 400, as a bad request).
func TestErrorTable(t *testing.T) {
	merged := map[bridge.Code]bridge.Code{bridge.CodeConflict: bridge.CodeInvalid, bridge.CodeInternal: bridge.CodeUpstream}
	for _, c := range bridge.Codes() {
		st, body := EncodeError(bridge.Errorf(c, "msg %s", c))
		if st < 400 {
			t.Errorf("%s: status %d", c, st)
		}
		var e struct{ Error string }
		if err := json.Unmarshal(body, &e); err != nil || e.Error != "msg "+string(c) {
			t.Errorf("%s: body %s", c, body)
		}
		want := c
		if m, ok := merged[c]; ok {
			want = m
		}
		if got := DecodeError(st, body); got.Code != want || got.Message != "msg "+string(c) || got.Status != st {
			t.Errorf("%s: read back as %+v, want %s", c, got, want)
		}
	}
	if st, body := EncodeError(bridge.AsError(errPlain{})); st != 500 || string(body) != `{"error":"internal error"}` {
		t.Errorf("a plain error: %d %s", st, body)
	}
	if e := DecodeError(404, []byte(`{"detail":"Session not found"}`)); e.Code != bridge.CodeNotFound || e.Message != "Session not found" {
		t.Errorf("Python's detail: %+v", e)
	}
}

type errPlain struct{}

func (errPlain) Error() string { return "a Go error text that must not be shown" }

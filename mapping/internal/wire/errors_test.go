package wire

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

func TestStatusMessage(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{0, "upstream error"},
		{503, "upstream returned status 503 (Service Unavailable)"},
		{529, "upstream returned status 529"},
	}
	for _, tt := range tests {
		if got := StatusMessage(tt.status); got != tt.want {
			t.Errorf("StatusMessage(%d) = %q, want %q", tt.status, got, tt.want)
		}
	}
}

// TestFinalError pins what a final that did not succeed answers with: its
// own error first, then the stream's, then one of its reason or a default;
// a cancel with the caller's code.
func TestFinalError(t *testing.T) {
	own := &bridge.Error{Code: bridge.CodeRateLimited, Message: "slow down"}
	ev := &bridge.Error{Code: bridge.CodeUpstream, Message: "from the stream"}
	tests := []struct {
		name     string
		f        bridge.Final
		failed   *bridge.Error
		wantCode bridge.Code
		wantMsg  string
	}{
		{"failed own", bridge.Final{Status: bridge.StatusFailed, Error: own}, ev, bridge.CodeRateLimited, "slow down"},
		{"failed stream", bridge.Final{Status: bridge.StatusFailed}, ev, bridge.CodeUpstream, "from the stream"},
		{"failed reason", bridge.Final{Status: bridge.StatusFailed, Reason: "boom"}, nil, bridge.CodeInternal, "boom"},
		{"failed bare", bridge.Final{Status: bridge.StatusFailed}, nil, bridge.CodeInternal, "run failed"},
		{"cancelled", bridge.Final{Status: bridge.StatusCancelled}, nil, bridge.CodeTimeout, "run cancelled"},
		{"cancelled reason", bridge.Final{Status: bridge.StatusCancelled, Reason: "user"}, nil, bridge.CodeTimeout, "user"},
		{"interrupted", bridge.Final{Status: bridge.StatusInterrupted}, nil, bridge.CodeUnavailable, "run interrupted"},
	}
	for _, tt := range tests {
		err := FinalError(&tt.f, tt.failed, bridge.CodeTimeout)
		if err == nil || err.Code != tt.wantCode || err.Message != tt.wantMsg {
			t.Errorf("%s: FinalError = %+v, want code %s message %q", tt.name, err, tt.wantCode, tt.wantMsg)
		}
	}
	for _, s := range []bridge.Status{bridge.StatusCompleted, bridge.StatusInputRequired} {
		if err := FinalError(&bridge.Final{Status: s}, ev, bridge.CodeTimeout); err != nil {
			t.Errorf("%s: FinalError = %+v, want nil", s, err)
		}
	}
}

package wire

import "testing"

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

package wire

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

func TestOpaqueDialect(t *testing.T) {
	tests := []struct {
		name string
		in   *bridge.Opaque
		want string
	}{
		{"nil", nil, "unknown"},
		{"no dialect", &bridge.Opaque{}, "unknown"},
		{"dialect", &bridge.Opaque{Dialect: "openai"}, "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OpaqueDialect(tt.in); got != tt.want {
				t.Errorf("OpaqueDialect(%+v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

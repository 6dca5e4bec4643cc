package scrub_test

import (
	"testing"

	"github.com/bridge-dev/bridge/internal/scrub"
)

func TestScrub(t *testing.T) {
	keys := scrub.New("sk-upstream-1234", "sk-upstream-1234-longer", "abc", " ")
	tests := []struct {
		name string
		keys *scrub.Keys
		in   string
		want string
	}{
		{"a configured key anywhere", keys, `{"echo":"sk-upstream-1234"}`, `{"echo":"[redacted]"}`},
		{"the longer key whole", keys, "k=sk-upstream-1234-longer!", "k=[redacted]!"},
		{"a key too short to replace", keys, "abc def", "abc def"},
		{"an Authorization header", nil, "Authorization: Bearer tok-999", "Authorization: Bearer [redacted]"},
		{"a quoted x-api-key", nil, `{"x-api-key":"secret-value"}`, `{"x-api-key":"[redacted]"}`},
		{"an api_key parameter", nil, "GET /v1?api_key=zzz&x=1", "GET /v1?api_key=[redacted]&x=1"},
		{"a bare bearer token", nil, "sent bearer abcdef123", "sent bearer [redacted]"},
		{"nothing to scrub", keys, "hello world", "hello world"},
		{"empty", keys, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.keys.Scrub(tt.in); got != tt.want {
				t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

package server

import (
	"strings"
	"testing"
)

// TestDialectTable holds the table's rows to what the server relies on.
func TestDialectTable(t *testing.T) {
	seen := map[string]bool{}
	for i, d := range Dialects {
		switch {
		case d.Name == "" || seen[d.Name]:
			t.Errorf("row %d: name %q is empty or repeated", i, d.Name)
		case d.Inbound == nil && d.Outbound == nil:
			t.Errorf("%s: neither served nor called", d.Name)
		case d.Outbound != nil && d.GenAI.Provider == "":
			t.Errorf("%s: an upstream dialect with no telemetry name", d.Name)
		}
		seen[d.Name] = true
	}
	if Dialects[0].Inbound == nil {
		t.Errorf("the first row (%s) answers the run API's errors: it must be served", Dialects[0].Name)
	}
}

// TestUpstreamURLs: each upstream dialect takes the URL its row says, and a
// URL that is not absolute http(s) with a host is refused before anything
// starts.
func TestUpstreamURLs(t *testing.T) {
	for _, tt := range []struct {
		spec, err string
	}{
		{"openai=http://127.0.0.1:9/v1", ""},
		{"anthropic=https://api.example.com", ""},
		{"a2a=http://127.0.0.1:9", ""},
		{"echo", ""},
		{"openai=/v1", "want an http:// or https:// URL"},
		{"hermes=127.0.0.1:8642", "not a URL"},
		{"adk=ftp://host", "want an http:// or https:// URL"},
		{"responses=http://", "no host"},
		{"openai", "want openai=URL"},
		{"echo=http://127.0.0.1:9", "takes no url"},
		{"gopher=http://x", "unknown dialect"},
	} {
		cfg := DefaultConfig()
		u, err := ParseUpstream(tt.spec)
		if err == nil {
			cfg.Upstreams = []Upstream{u}
			err = cfg.Validate()
		}
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", tt.spec, err, tt.err)
		}
	}
}

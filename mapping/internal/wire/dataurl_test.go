package wire

import "testing"

func TestParseDataURL(t *testing.T) {
	tests := []struct {
		name, in string
		mt, data string
		ok       bool
	}{
		{"png", "data:image/png;base64,AAAA", "image/png", "AAAA", true},
		{"empty payload", "data:text/plain;base64,", "text/plain", "", true},
		{"no media type", "data:;base64,AAAA", "", "", false},
		{"parameters", "data:text/plain;charset=utf-8;base64,AAAA", "", "", false},
		{"not base64", "data:text/plain,hi", "", "", false},
		{"not data", "https://example.com/a.png", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mt, data, ok := ParseDataURL(tt.in)
			if mt != tt.mt || data != tt.data || ok != tt.ok {
				t.Fatalf("ParseDataURL(%q) = %q, %q, %v; want %q, %q, %v", tt.in, mt, data, ok, tt.mt, tt.data, tt.ok)
			}
			if ok && DataURL(mt, data) != tt.in {
				t.Errorf("DataURL(%q, %q) = %q, want %q", mt, data, DataURL(mt, data), tt.in)
			}
		})
	}
}

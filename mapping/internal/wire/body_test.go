package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

func TestDecodeBody(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Object
		wantErr string
	}{
		{"object", `{"a":1, "b":"x"}`, Object{"a": []byte("1"), "b": []byte(`"x"`)}, ""},
		{"empty object", `{}`, Object{}, ""},
		{"empty", " \n\t", nil, "request body: empty"},
		{"array", `[1]`, nil, "request body: expected object, got array"},
		{"invalid", `{"a":`, nil, "request body: invalid JSON at offset"},
		{"not json", `nope`, nil, "request body: invalid JSON at offset"},
		{"deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), nil, "nested deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeBody([]byte(tt.in))
			if wantError(t, "DecodeBody("+tt.in+")", err, tt.wantErr) {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeBody(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}]}`, `[`, ``, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeBody(b)
		if err == nil && o == nil {
			t.Fatalf("DecodeBody(%q): nil object without an error", b)
		}
	})
}

func TestAddExtra(t *testing.T) {
	req := &bridge.Request{}
	AddExtra(req, "openai", "a", json.RawMessage(`1`))
	AddExtra(req, "other", "b", json.RawMessage(`2`))
	want := map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`2`)}
	if diff := cmp.Diff(want, req.Extra); diff != "" {
		t.Errorf("Extra (-want +got):\n%s", diff)
	}
	if req.ExtraDialect != "openai" {
		t.Errorf("ExtraDialect = %q, want %q: the first field decides", req.ExtraDialect, "openai")
	}
}

// wantError checks err against want, a part of the error text wanted ("":
// no error), and reports whether the case ends there (an error was
// wanted).
func wantError(t *testing.T, call string, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s error = %v, want %q", call, err, want)
		}
		return true
	}
	if err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	return false
}

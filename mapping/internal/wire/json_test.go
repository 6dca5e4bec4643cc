package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOptStringMap(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{"absent", `{}`, nil, ""},
		{"null", `{"m":null}`, nil, ""},
		{"empty", `{"m":{}}`, nil, ""},
		{"strings", `{"m":{"a":"1","b":"2"}}`, map[string]string{"a": "1", "b": "2"}, ""},
		{"not object", `{"m":[]}`, nil, "x.m: expected object, got array"},
		{"not string", `{"m":{"a":"1","b":2}}`, nil, "x.m.b: expected string, got number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := AsObject([]byte(tt.in), "")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]string
			err = OptStringMap(o, "x", "m", &got)
			if wantError(t, "OptStringMap("+tt.in+")", err, tt.wantErr) {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OptStringMap(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestRest(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		known []string
		want  json.RawMessage
	}{
		{"all known", `{"a":1,"b":2}`, []string{"a", "b"}, nil},
		{"empty", `{}`, nil, nil},
		{"sorted and compact", `{"z": [1, 2], "a":1, "m" : {"k": true}}`, []string{"a"}, json.RawMessage(`{"m":{"k":true},"z":[1,2]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := AsObject([]byte(tt.in), "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, Rest(o, tt.known...)); diff != "" {
				t.Errorf("Rest(%s, %q) (-want +got):\n%s", tt.in, tt.known, diff)
			}
		})
	}
}

// TestCompactText: JSON kept as text is compacted, and each byte of it that
// is not UTF-8 becomes U+FFFD, one per byte, as Str writes it: the text is
// what a JSON string holding it reads back as.
func TestCompactText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{ "a" : [1, 2] }`, `{"a":[1,2]}`},
		{`{"é":"ü"}`, `{"é":"ü"}`},
		{"{\"\xb3\":0}", "{\"\uFFFD\":0}"},
		{"{\"a\":\"\xff\xfe\"}", "{\"a\":\"\uFFFD\uFFFD\"}"},
		{"[\"\xe2\x82\"]", "[\"\uFFFD\uFFFD\"]"}, // a cut rune: two bytes, two replacements
	} {
		got := CompactText([]byte(c.in))
		if got != c.want {
			t.Errorf("CompactText(%q) = %q, want %q", c.in, got, c.want)
		}
		var back string
		if err := json.Unmarshal(AppendString(nil, got), &back); err != nil || back != got {
			t.Errorf("%q written and read back: %q, %v", got, back, err)
		}
	}
}

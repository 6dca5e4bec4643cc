package wire

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// TestArrays: Strings, Array and JoinArray write what encoding/json would.
func TestArrays(t *testing.T) {
	for _, list := range [][]string{nil, {"a"}, {"a", "b\"c", "é"}} {
		w := NewObj()
		w.Strings("s", list)
		w.Array("n", len(list), func(i int) []byte { return []byte{'1' + byte(i)} })
		var nums []json.RawMessage
		for i := range list {
			nums = append(nums, []byte{'1' + byte(i)})
		}
		w.Raw("j", JoinArray(nums))
		want, _ := json.Marshal(struct {
			S []string          `json:"s"`
			N []json.RawMessage `json:"n"`
			J []json.RawMessage `json:"j"`
		}{append([]string{}, list...), append([]json.RawMessage{}, nums...), append([]json.RawMessage{}, nums...)})
		if got := w.End(); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", list, got, want)
		}
	}
}

func TestPartType(t *testing.T) {
	for mt, want := range map[string]bridge.PartType{
		"image/png": bridge.PartImage, "audio/wav": bridge.PartAudio,
		"application/pdf": bridge.PartFile, "": bridge.PartFile, "image": bridge.PartFile,
	} {
		if got := PartType(mt); got != want {
			t.Errorf("%q: %s, want %s", mt, got, want)
		}
	}
}

func TestAddDropped(t *testing.T) {
	var l []string
	for _, s := range []string{"a", "b", "a", "c", "b"} {
		l = AddDropped(l, s)
	}
	if !slices.Equal(l, []string{"a", "b", "c"}) {
		t.Errorf("%q", l)
	}
}

// TestResponseFormat: each OpenAI shape of response_format in the shape
// asked for; text and json_object as they are; anything else nil.
func TestResponseFormat(t *testing.T) {
	flat := `{"type":"json_schema","name":"n","schema":{"type":"object"},"strict":true}`
	nested := `{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},"strict":true}}`
	for _, tt := range []struct {
		in     string
		nested bool
		want   string
	}{
		{flat, true, nested},
		{nested, true, nested},
		{nested, false, flat},
		{flat, false, flat},
		{`{"type": "json_object"}`, true, `{"type":"json_object"}`},
		{`{"type":"text"}`, false, `{"type":"text"}`},
		{`{"type":"xml"}`, true, ""},
		{`[1]`, false, ""},
		{`{"type":"json_schema","json_schema":1}`, false, ""},
	} {
		if got := string(ResponseFormat(json.RawMessage(tt.in), tt.nested)); got != tt.want {
			t.Errorf("%s nested %v: %s, want %s", tt.in, tt.nested, got, tt.want)
		}
	}
}

// TestOptObjectArray: absent and null are nil without an error; an empty
// object or array is not nil; another type is an error naming the path.
func TestOptObjectArray(t *testing.T) {
	o := Object{"n": json.RawMessage(`null`), "eo": json.RawMessage(`{}`), "ea": json.RawMessage(`[]`), "s": json.RawMessage(`"x"`)}
	for _, k := range []string{"absent", "n"} {
		if v, err := OptObject(o, "p", k); v != nil || err != nil {
			t.Errorf("OptObject %s: %v %v", k, v, err)
		}
		if v, err := OptArray(o, "p", k); v != nil || err != nil {
			t.Errorf("OptArray %s: %v %v", k, v, err)
		}
	}
	if v, err := OptObject(o, "p", "eo"); v == nil || err != nil {
		t.Errorf("OptObject {}: %v %v", v, err)
	}
	if v, err := OptArray(o, "p", "ea"); v == nil || err != nil {
		t.Errorf("OptArray []: %v %v", v, err)
	}
	if _, err := OptObject(o, "p", "s"); bridge.AsError(err) == nil || bridge.AsError(err).Message != "p.s: expected object, got string" {
		t.Errorf("OptObject string: %v", err)
	}
	if _, err := OptArray(o, "", "s"); bridge.AsError(err) == nil || bridge.AsError(err).Message != "s: expected array, got string" {
		t.Errorf("OptArray string: %v", err)
	}
}

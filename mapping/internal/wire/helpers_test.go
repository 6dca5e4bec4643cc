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

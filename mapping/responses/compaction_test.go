package responses

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestCompactionItemRoundTrip: a compaction item an upstream made, back in
// a request's input, reaches a Responses upstream whole and in its place.
func TestCompactionItemRoundTrip(t *testing.T) {
	item := `{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAA-opaque"}`
	r, err := DecodeRequest([]byte(`{"model":"m","input":[{"role":"user","content":"before"},` + item + `,{"role":"user","content":"after"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(r.Hub.Dropped, func(d string) bool { return strings.Contains(d, "compaction") }) {
		t.Errorf("the compaction item was dropped: %v", r.Hub.Dropped)
	}
	body, dropped, err := EncodeRequest(r.Hub, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Input) != 3 || string(v.Input[1]) != item || !strings.Contains(string(v.Input[2]), "after") {
		t.Errorf("input upstream (dropped %v): %s", dropped, body)
	}
}

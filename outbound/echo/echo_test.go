package echo

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"hi", []string{"hi"}},
		{"hello brave  new\nworld", []string{"hello", " brave", "  new", "\nworld"}},
		{"  lead", []string{"  lead"}},
		{"trail  ", []string{"trail", "  "}},
	}
	for _, tt := range tests {
		got := Split(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Split(%q) (-want +got):\n%s", tt.in, diff)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("Split(%q) does not concatenate back", tt.in)
		}
	}
}

func TestOpen(t *testing.T) {
	u := &Upstream{}
	call, err := u.Open(t.Context(), &bridge.Request{Messages: []bridge.Message{
		{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("say it back")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var kinds []bridge.Kind
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
		text.WriteString(ev.Text)
	}
	if text.String() != "say it back" {
		t.Errorf("text = %q", text.String())
	}
	want := []bridge.Kind{bridge.KindMessageStarted, bridge.KindTextDelta, bridge.KindTextDelta, bridge.KindTextDelta,
		bridge.KindMessageDone, bridge.KindUsage, bridge.KindFinal}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}

package bridge

import (
	"testing"
	"time"
)

// TestAssemblerKeepsEachSignedBlock: two thinking blocks, each with its
// signature, stay two parts; a provider rejects one with both signatures.
func TestAssemblerKeepsEachSignedBlock(t *testing.T) {
	var a assembler
	for _, ev := range []Event{
		{Kind: KindReasoningDelta, Text: "first"},
		{Kind: KindReasoningDelta, Signature: "sig1"},
		{Kind: KindReasoningDelta, Text: "second"},
		{Kind: KindReasoningDelta, Signature: "sig2"},
		{Kind: KindReasoningDelta, Encrypted: "redacted"},
		{Kind: KindTextDelta, Text: "answer"},
	} {
		a.add(&ev)
	}
	m := a.message("run_1", time.Time{})
	want := []Part{
		{Type: PartReasoning, Text: "first", Signature: "sig1"},
		{Type: PartReasoning, Text: "second", Signature: "sig2"},
		{Type: PartReasoning, Encrypted: "redacted"},
		{Type: PartText, Text: "answer"},
	}
	if len(m.Parts) != len(want) {
		t.Fatalf("parts = %+v", m.Parts)
	}
	for i := range want {
		if m.Parts[i].Type != want[i].Type || m.Parts[i].Text != want[i].Text ||
			m.Parts[i].Signature != want[i].Signature || m.Parts[i].Encrypted != want[i].Encrypted {
			t.Errorf("part %d = %+v, want %+v", i, m.Parts[i], want[i])
		}
	}
}

// TestRemapToolCallIDs: ids are mapped once each, calls and results
// alike; the input is never written; nothing to change is no copy.
func TestRemapToolCallIDs(t *testing.T) {
	in := []Message{
		{Role: RoleUser, Parts: []Part{{Type: PartText, Text: "hi"}}},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "f"}, {ID: "b", Name: "g"}}},
		{Role: RoleTool, ToolCallID: "a"},
		{Role: RoleTool, ToolCallID: "b"},
	}
	asked := map[string]int{}
	out := RemapToolCallIDs(in, func(id string) string {
		asked[id]++
		if id == "a" {
			return "remote-a"
		}
		return id
	})
	if out[1].ToolCalls[0].ID != "remote-a" || out[1].ToolCalls[1].ID != "b" || out[2].ToolCallID != "remote-a" || out[3].ToolCallID != "b" {
		t.Errorf("mapped %+v", out)
	}
	if in[1].ToolCalls[0].ID != "a" || in[2].ToolCallID != "a" {
		t.Errorf("the input was written: %+v", in)
	}
	if asked["a"] != 1 || asked["b"] != 1 || len(asked) != 2 {
		t.Errorf("remote asked %v, want each id once", asked)
	}
	same := RemapToolCallIDs(in, func(id string) string { return id })
	if &same[0] != &in[0] {
		t.Error("nothing changed, but the transcript was copied")
	}
}

// TestNameToolResults: a tool result without a name gets its call's;
// a named one and the input slice stay as they are.
func TestNameToolResults(t *testing.T) {
	prefix := []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "weather"}, {ID: "c2", Name: "time"}}}}
	input := []Message{{Role: RoleTool, ToolCallID: "c1"}, {Role: RoleTool, ToolCallID: "c2", Name: "own"}, {Role: RoleTool, ToolCallID: "c9"}}
	got := NameToolResults(prefix, input)
	if got[0].Name != "weather" || got[1].Name != "own" || got[2].Name != "" {
		t.Errorf("names %q %q %q", got[0].Name, got[1].Name, got[2].Name)
	}
	if input[0].Name != "" {
		t.Errorf("the input was written")
	}
	if same := NameToolResults(nil, input); &same[0] != &input[0] {
		t.Errorf("nothing to name: want the input itself")
	}
}

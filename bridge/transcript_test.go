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

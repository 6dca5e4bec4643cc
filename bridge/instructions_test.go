package bridge_test

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// TestInstructionsGoUpstreamButAreNotStored: a request's Instructions are
// sent in front of the transcript on its model call, and the next turn of
// the same session sends its own instructions only: the first turn's are
// not in the stored transcript.
func TestInstructionsGoUpstreamButAreNotStored(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("ok")}
	e, store := newEngine(t, up)
	sys := func(s string) []bridge.Message {
		return []bridge.Message{{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart(s)}}}
	}
	turn := func(text, instr, session string) *bridge.Run {
		t.Helper()
		req := userRequest(text)
		req.Full, req.SessionID, req.Instructions = false, session, sys(instr)
		run, err := e.Start(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
		collect(t, events)
		return run
	}
	first := turn("one", "be terse", "")
	turn("two", "be kind", first.SessionID)

	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2", len(reqs))
	}
	var got []string
	for _, m := range reqs[1].Messages {
		got = append(got, string(m.Role)+":"+m.Text())
	}
	want := []string{"system:be kind", "user:one", "assistant:ok", "user:two"}
	if len(got) != len(want) {
		t.Fatalf("second upstream transcript %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("second upstream transcript %q, want %q", got, want)
		}
	}
	if r := reqs[0].Messages[0]; r.Role != bridge.RoleSystem || r.Text() != "be terse" {
		t.Errorf("first upstream message %s %q, want the first turn's instructions", r.Role, r.Text())
	}
	msgs, _, err := store.Messages(t.Context(), "", first.SessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Role == bridge.RoleSystem {
			t.Errorf("the session stores instructions: %q", m.Text())
		}
	}
	if len(msgs) != 4 {
		t.Errorf("the session stores %d messages, want 4", len(msgs))
	}
}

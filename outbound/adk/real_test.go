package adk

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/internal/adkreal"
	"github.com/bridge-dev/bridge/storage/memory"
)

// TestRealADK: the client against the real api_server (adkreal): the
// streamed answer arrives as several deltas and completes; the second
// turn of a stateless client reaches the same ADK session (the agent
// counts two user turns); an edited history opens a new one.
func TestRealADK(t *testing.T) {
	c := New(Config{URL: adkreal.Start(t), IDs: memory.New(nil)})
	ctx := bridge.WithPrincipal(t.Context(), "outbound-adk-real")
	turn := func(msgs ...bridge.Message) result {
		t.Helper()
		call, err := c.Open(ctx, &bridge.Request{Model: adkreal.App, Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return collect(t, call)
	}
	r1 := turn(user("hello there"))
	deltas := 0
	for _, ev := range r1.evs {
		if ev.Kind == bridge.KindTextDelta {
			deltas++
		}
	}
	if r1.text != "turn 1: hello there" || r1.final.Status != bridge.StatusCompleted || deltas < 2 {
		t.Fatalf("turn 1: %q in %d deltas, %+v", r1.text, deltas, r1.final)
	}
	if r2 := turn(user("hello there"), assistant(r1.text), user("again")); r2.text != "turn 2: again" {
		t.Fatalf("turn 2: %q (a new session?)", r2.text)
	}
	if r3 := turn(user("hi"), assistant("edited"), user("more")); !strings.HasPrefix(r3.text, "turn 1: ") {
		t.Errorf("edited history: %q, want a new session's first turn", r3.text)
	}
}

package bridge_test

import (
	"context"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// steerable is an agent upstream that takes steers into its own run.
type steerable struct {
	*bridgetest.Upstream
	mu     sync.Mutex
	got    []string
	refuse bool
}

func (s *steerable) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	c, err := s.Upstream.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	c.Steer = func(_ context.Context, m bridge.Message) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.refuse {
			return bridge.Errorf(bridge.CodeConflict, "run_not_accepting_steer")
		}
		s.got = append(s.got, m.Text())
		return nil
	}
	return c, nil
}

// TestSteerPassedToAgent: over an upstream whose call takes steers, a
// steer goes to it (no model call of the bridge's), is logged as a
// user_message event and joins the transcript after the answer; an
// upstream that refuses answers CodeConflict.
func TestSteerPassedToAgent(t *testing.T) {
	gate := make(chan struct{})
	up := &steerable{Upstream: &bridgetest.Upstream{Gate: gate, Events: bridgetest.TextEvents("working ", "on it")}}
	e, _ := newEngine(t, up)
	req := userRequest("hello")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{}
	gate <- struct{}{}
	steer := bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("also this")}}
	if err := e.Steer(t.Context(), run.ID, steer); err != nil {
		t.Fatal(err)
	}
	up.mu.Lock()
	up.refuse = true
	up.mu.Unlock()
	if err := e.Steer(t.Context(), run.ID, steer); bridge.ErrorCode(err) != bridge.CodeConflict {
		t.Errorf("refused steer: %v", err)
	}
	for range 8 {
		select {
		case gate <- struct{}{}:
		case <-t.Context().Done():
		default:
		}
	}
	close(gate)
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	evs := collect(t, events)
	steers := 0
	for _, ev := range evs {
		if ev.Kind == bridge.KindUserMessage {
			steers++
		}
	}
	if f := evs[len(evs)-1].Final; f == nil || f.Status != bridge.StatusCompleted || steers != 1 {
		t.Fatalf("final %+v, %d user_message events", f, steers)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("%d upstream calls; a passed steer makes none", n)
	}
	if len(up.got) != 1 || up.got[0] != "also this" {
		t.Errorf("the upstream got %v", up.got)
	}
	msgs, err := e.RunMessages(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1]; last.Role != bridge.RoleUser || last.Text() != "also this" || msgs[len(msgs)-2].Role != bridge.RoleAssistant {
		t.Errorf("transcript %+v", msgs)
	}
}

package bridge_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// cancelUpstream is an agent upstream with a cancel of its own: its call
// blocks after the first event until its context is done, and records
// which run it belonged to and whether its Cancel ran before that.
type cancelUpstream struct {
	runID          atomic.Value // string
	cancelled      atomic.Bool  // Call.Cancel ran
	cancelledFirst atomic.Bool  // ... before the call's context was done
}

func (u *cancelUpstream) Name() string    { return "agent" }
func (u *cancelUpstream) Dialect() string { return "test" }

func (u *cancelUpstream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	u.runID.Store(bridge.RunIDFromContext(ctx))
	return &bridge.Call{
		Events: func(yield func(bridge.Event, error) bool) {
			if !yield(bridge.Event{Kind: bridge.KindMessageStarted, ResponseID: "task-1"}, nil) {
				return
			}
			<-ctx.Done()
			yield(bridge.Event{}, context.Cause(ctx))
		},
		Cancel: func(cctx context.Context) error {
			u.cancelled.Store(true)
			u.cancelledFirst.Store(ctx.Err() == nil)
			return nil
		},
	}, nil
}

// TestAbortCallsUpstreamCancel: Abort runs the call's own cancel before it
// cancels the call's context, and the upstream's Open sees the run's id.
func TestAbortCallsUpstreamCancel(t *testing.T) {
	up := &cancelUpstream{}
	e, _ := newEngine(t, up)
	req := userRequest("hi")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, events, err := e.Subscribe(t.Context(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == bridge.KindMessageStarted {
			break
		}
	}
	got, err := e.Abort(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != bridge.StatusCancelled {
		t.Errorf("status %s, want cancelled", got.Status)
	}
	if !up.cancelled.Load() || !up.cancelledFirst.Load() {
		t.Errorf("upstream cancel ran: %v, before the context was done: %v; want both", up.cancelled.Load(), up.cancelledFirst.Load())
	}
	if id, _ := up.runID.Load().(string); id != run.ID {
		t.Errorf("RunIDFromContext in Open = %q, want %q", id, run.ID)
	}
	if got := bridge.RunIDFromContext(t.Context()); got != "" {
		t.Errorf("RunIDFromContext outside a run = %q", got)
	}
}

// TestRunMessages: a run's transcript messages, its input first, the
// answer once it has ended; another principal's run is not found.
func TestRunMessages(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("an", "swer")}
	e, _ := newEngine(t, up)
	req := userRequest("question")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	collect(t, events)
	msgs, err := e.RunMessages(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != bridge.RoleUser || msgs[0].Text() != "question" ||
		msgs[1].Role != bridge.RoleAssistant || msgs[1].Text() != "answer" || msgs[0].RunID != run.ID {
		t.Errorf("RunMessages = %+v", msgs)
	}
	if _, err := e.RunMessages(bridge.WithPrincipal(t.Context(), "mallory"), run.ID); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("another principal: err %v, want not found", err)
	}
}

// TestClientGoneCallsUpstreamCancel: a stateless client that goes away
// stops the upstream's own work too, not only the connection.
func TestClientGoneCallsUpstreamCancel(t *testing.T) {
	up := &cancelUpstream{}
	e, _ := newEngine(t, up)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	run, err := e.Start(ctx, userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, events, err := e.Subscribe(t.Context(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var last bridge.Event
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == bridge.KindMessageStarted {
			cancel() // the call is open: the client leaves
		}
		last = ev
	}
	if last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusCancelled {
		t.Errorf("last event %+v, want final cancelled", last)
	}
	if !up.cancelled.Load() {
		t.Errorf("the upstream's cancel did not run when the client left")
	}
}

package otel_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/outbound"
)

// resumable is an upstream whose Resume answers with errs, in turn, then
// with a stream of one text delta.
type resumable struct {
	bridgetest.Upstream
	errs  []error
	calls atomic.Int32
}

func (u *resumable) Resume(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
	n := int(u.calls.Add(1)) - 1
	if n < len(u.errs) {
		return nil, u.errs[n]
	}
	call := &bridge.Call{}
	call.Events = func(yield func(bridge.Event, error) bool) {
		call.Dropped = append(call.Dropped, "text_lost") // learnt while streaming, as a resumed A2A task does
		if yield(bridge.Event{Kind: bridge.KindTextDelta, Text: "again"}, nil) {
			yield(bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted}}, nil)
		}
	}
	return call, nil
}

// TestResumedCallTakesTheChain: a call resumed after a restart goes
// through the chain every call of its upstream takes, as server.New
// builds it: a client span, the retries (a 503 is tried again), the
// breaker (failed resumes open it, and an open breaker refuses the next
// resume without calling the upstream) and the credentials scrub; what
// the call learns it dropped while it streams reaches the engine through
// every layer (none hands the engine a copy of the call).
func TestResumedCallTakesTheChain(t *testing.T) {
	const key = "sk-resume-secret-0123456789"
	tel, exp := newTelemetry(t, otel.Config{})
	chain := func(up *resumable) (bridge.Resumer, *outbound.Breaker) {
		b := outbound.NewBreaker(up.Name(), outbound.BreakerConfig{Failures: 2, OpenFor: time.Minute}, nil, nil)
		w := outbound.WrapAdmit(up, b.Admit, tel.Upstream(up, otel.GenAI{}),
			outbound.Retry(outbound.RetryConfig{Base: time.Millisecond}, true), b.Middleware(),
			outbound.NewCredentials(key).Middleware(up.Name()))
		r, ok := bridge.ResumerOf(w)
		if !ok {
			t.Fatal("the wrapped upstream has no Resumer")
		}
		return r, b
	}
	req := &bridge.Request{Model: "m-resume", Inbound: "openai"}
	run := &bridge.Run{ID: "run_1", Model: "m-resume", Status: bridge.StatusRunning}

	// A 503 first: retried, then the stream, under one client span.
	up := &resumable{Upstream: bridgetest.Upstream{UpName: "agent", UpDialect: "a2a"},
		errs: []error{&bridge.Error{Code: bridge.CodeUpstream, Status: 503, Message: "busy"}}}
	r, _ := chain(up)
	call, err := r.Resume(t.Context(), req, run, nil)
	if err != nil {
		t.Fatalf("resume with one 503: %v", err)
	}
	var text string
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		text += ev.Text
	}
	if up.calls.Load() != 2 || text != "again" {
		t.Errorf("%d resume attempts, text %q; want 2 (the 503 retried) and %q", up.calls.Load(), text, "again")
	}
	if len(call.Dropped) != 1 {
		t.Errorf("the call the chain returned says it dropped %v; the upstream's call learnt [text_lost] while it streamed", call.Dropped)
	}
	if s := spanNamed(waitSpans(t, exp, "chat m-resume"), "chat m-resume"); s == nil || attrs(s)["bridge.upstream.name"] != "agent" {
		t.Errorf("no client span for the resumed call, or not the upstream's: %+v", s)
	}

	// Failures count in the breaker, their text is scrubbed, and once it
	// is open the upstream is not called.
	boom := func() error {
		return &bridge.Error{Code: bridge.CodeUpstream, Status: 500, Message: "task lost; Authorization: Bearer " + key}
	}
	up = &resumable{Upstream: bridgetest.Upstream{UpName: "agent2", UpDialect: "a2a"}, errs: []error{boom(), boom(), boom()}}
	r, b := chain(up)
	for i := range 2 {
		_, err := r.Resume(t.Context(), req, run, nil)
		if err == nil || strings.Contains(err.Error(), key) {
			t.Fatalf("failed resume %d: error %v, want one with the key scrubbed", i, err)
		}
	}
	if _, err := r.Resume(t.Context(), req, run, nil); !errors.Is(err, outbound.ErrBreakerOpen) {
		t.Errorf("third resume after two failures (breaker %s): %v, want the open breaker's refusal", b.State(), err)
	}
	if n := up.calls.Load(); n != 2 {
		t.Errorf("the upstream was asked to resume %d times, want 2 (the open breaker refuses the third)", n)
	}
}

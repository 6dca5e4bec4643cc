package outbound_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/sony/gobreaker"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
)

// drain ranges over a call's events and returns the error that ended them.
func drain(call *bridge.Call) error {
	for _, err := range call.Events {
		if err != nil {
			return err
		}
	}
	return nil
}

// streamOf returns a call whose events end as end says: "ok" with a
// completed final, "cut" with a read error after some text, "garbage" with
// a bridge upstream error, "error_event" with a failed final carrying an
// upstream overloaded error, "no_final" without a final, "client_fault"
// with a failed final that is the client's fault.
func streamOf(end string) []bridge.Event {
	evs := []bridge.Event{{Kind: bridge.KindMessageStarted}, {Kind: bridge.KindTextDelta, Text: "par"}}
	switch end {
	case "ok":
		return bridgetest.TextEvents("fine")
	case "error_event":
		return append(evs, bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Reason: "overloaded",
			Error: &bridge.Error{Code: bridge.CodeUnavailable, Message: "overloaded"}}})
	case "client_fault":
		return append(evs, bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Reason: "bad",
			Error: &bridge.Error{Code: bridge.CodeInvalid, Message: "bad tool schema"}}})
	}
	return evs // "no_final"; "cut" and "garbage" add their error in streamUpstream
}

// streamUpstream answers every Open; the events of the n-th call end as
// ends[n] says (see streamOf), or "ok" past the end of ends.
type streamUpstream struct {
	bridgetest.Upstream
	ends []string
}

func (s *streamUpstream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	n := len(s.Requests())
	end := "ok"
	if n < len(s.ends) {
		end = s.ends[n]
	}
	if _, err := s.Upstream.Open(ctx, req); err != nil {
		return nil, err
	}
	evs := streamOf(end)
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) {
		for _, ev := range evs {
			if ctx.Err() != nil {
				yield(bridge.Event{}, context.Cause(ctx))
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
		switch end {
		case "cut":
			yield(bridge.Event{}, io.ErrUnexpectedEOF)
		case "garbage":
			yield(bridge.Event{}, bridge.Errorf(bridge.CodeUpstream, "upstream stream: invalid chunk"))
		}
	}}, nil
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestBreakerCountsStreamOutcomes: the breaker counts how a stream ended,
// not only that it opened.
func TestBreakerCountsStreamOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		ends     []string
		wantOpen bool
	}{
		{"5 cut mid-stream", repeat("cut", 5), true},
		{"5 garbage", repeat("garbage", 5), true},
		{"5 upstream error events", repeat("error_event", 5), true},
		{"5 without a final", repeat("no_final", 5), true},
		{"mixed faults", []string{"cut", "garbage", "error_event", "no_final", "cut"}, true},
		{"4 then a success", append(repeat("cut", 4), "ok"), false},
		{"4, a success, 4", append(append(repeat("cut", 4), "ok"), repeat("cut", 4)...), false},
		{"client faults", repeat("client_fault", 8), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &streamUpstream{ends: tt.ends}
			b := outbound.NewBreaker("u", outbound.BreakerConfig{}, nil, nil)
			u := outbound.Wrap(up, b.Middleware())
			for i := range tt.ends {
				call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				drain(call)
			}
			if got := b.State() == gobreaker.StateOpen; got != tt.wantOpen {
				t.Fatalf("breaker open = %v, want %v (state %s)", got, tt.wantOpen, b.State())
			}
			if !tt.wantOpen {
				return
			}
			start := time.Now()
			_, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
			var be *bridge.Error
			if !errors.As(err, &be) || be.Code != bridge.CodeUnavailable || be.RetryAfter <= 0 {
				t.Fatalf("with the breaker open: %v, want unavailable with Retry-After", err)
			}
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("the open breaker took %s to answer", d)
			}
			if got := len(up.Requests()); got != len(tt.ends) {
				t.Errorf("the open breaker let a call through: %d upstream calls", got)
			}
		})
	}
}

// TestBreakerHalfOpenTrialIsTheWholeStream: half-open admits one call, and
// keeps refusing others until that call's stream has ended; a good trial
// closes the breaker, a trial that fails mid-stream opens it again.
func TestBreakerHalfOpenTrialIsTheWholeStream(t *testing.T) {
	for _, trial := range []string{"ok", "cut"} {
		t.Run(trial, func(t *testing.T) {
			up := &streamUpstream{ends: append(repeat("cut", 5), trial)}
			b := outbound.NewBreaker("u", outbound.BreakerConfig{OpenFor: 50 * time.Millisecond}, nil, nil)
			u := outbound.Wrap(up, b.Middleware())
			for range 5 {
				call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
				if err != nil {
					t.Fatal(err)
				}
				drain(call)
			}
			if b.State() != gobreaker.StateOpen {
				t.Fatalf("state = %s after 5 mid-stream faults", b.State())
			}
			time.Sleep(80 * time.Millisecond)
			call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
			if err != nil {
				t.Fatalf("trial: %v", err)
			}
			// The trial is open and its stream not read yet: no second call.
			if _, err := u.Open(t.Context(), &bridge.Request{Model: "m"}); bridge.ErrorCode(err) != bridge.CodeUnavailable {
				t.Fatalf("a second call during the trial: %v, want unavailable", err)
			}
			drain(call)
			want := gobreaker.StateClosed
			if trial == "cut" {
				want = gobreaker.StateOpen
			}
			if b.State() != want {
				t.Errorf("state after the trial's stream = %s, want %s", b.State(), want)
			}
			if got := len(up.Requests()); got != 6 {
				t.Errorf("%d upstream calls, want 6", got)
			}
		})
	}
}

// TestBreakerClientCancelIsNotAFault: streams the client cancels mid-way,
// or stops reading, never open the breaker.
func TestBreakerClientCancelIsNotAFault(t *testing.T) {
	up := &streamUpstream{ends: repeat("ok", 20)}
	b := outbound.NewBreaker("u", outbound.BreakerConfig{Failures: 2}, nil, nil)
	u := outbound.Wrap(up, b.Middleware())
	for range 5 {
		ctx, cancel := context.WithCancel(t.Context())
		call, err := u.Open(ctx, &bridge.Request{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, err := range call.Events {
			if n++; n == 2 {
				cancel()
			}
			if err != nil {
				break
			}
		}
		cancel()
	}
	for range 5 { // the consumer stops reading
		call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		for range call.Events {
			break
		}
	}
	if b.State() != gobreaker.StateClosed {
		t.Errorf("state = %s after cancelled streams", b.State())
	}
}

// TestBreakerNoGoroutineLeak: calls ranged to their end, stopped early, or
// never ranged at all (released when their context ends) leave no
// goroutine behind.
func TestBreakerNoGoroutineLeak(t *testing.T) {
	up := &streamUpstream{}
	b := outbound.NewBreaker("u", outbound.BreakerConfig{}, nil, nil)
	u := outbound.Wrap(up, b.Middleware())
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(t.Context())
	for i := range 300 {
		call, err := u.Open(ctx, &bridge.Request{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 0:
			drain(call)
		case 1:
			for range call.Events {
				break
			}
		case 2: // never ranged: held until ctx ends
		}
	}
	if n := runtime.NumGoroutine(); n < before+100 {
		t.Logf("%d goroutines with 100 calls unread (before: %d)", n, before)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b.State() != gobreaker.StateClosed {
		t.Errorf("state = %s", b.State())
	}
}

type panicky struct{ bridgetest.Upstream }

func (p *panicky) Open(context.Context, *bridge.Request) (*bridge.Call, error) { panic("boom") }

// TestBreakerOpenPanics: a panic in Open reaches the caller, as it would
// without the breaker, and the breaker counts it (a half-open trial is not
// held forever).
func TestBreakerOpenPanics(t *testing.T) {
	b := outbound.NewBreaker("u", outbound.BreakerConfig{}, nil, nil)
	u := outbound.Wrap(&panicky{}, b.Middleware())
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want the upstream's panic", p)
		}
	}()
	defer func() {
		if c := b.Counts(); c.Requests != 1 || c.TotalFailures != 1 {
			t.Errorf("counts after the panic: %+v, want one request, one failure", c)
		}
	}()
	_, _ = u.Open(t.Context(), &bridge.Request{Model: "m"})
	t.Error("Open returned")
}

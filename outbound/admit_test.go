package outbound_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
)

// TestAdmit: an upstream wrapped with its breaker's Admit tells the engine,
// before any call, that the breaker is open, with the error the call would
// get; a fallback admits while any of its upstreams would.
func TestAdmit(t *testing.T) {
	boom := &bridge.Error{Code: bridge.CodeUpstream, Status: 500, Message: "boom"}
	breaking := func(name string) (*flaky, *outbound.Breaker, bridge.Upstream) {
		up := &flaky{Upstream: bridgetest.Upstream{UpName: name}, n: 1000, err: boom}
		b := outbound.NewBreaker(name, outbound.BreakerConfig{Failures: 2, OpenFor: time.Minute}, nil, nil)
		return up, b, outbound.WrapAdmit(up, b.Admit, b.Middleware())
	}
	admit := func(u bridge.Upstream) error { return u.(bridge.Admitter).Admit() }

	_, b, u := breaking("primary")
	if err := admit(u); err != nil {
		t.Fatalf("a closed breaker refuses: %v", err)
	}
	for range 2 {
		_ = open(t, u)
	}
	err := admit(u)
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeUnavailable || be.RetryAfter <= 0 || !errors.Is(err, outbound.ErrBreakerOpen) {
		t.Fatalf("Admit with the breaker open (%s) = %v, want the open breaker's error", b.State(), err)
	}
	if got := open(t, u); got.Error() != err.Error() {
		t.Errorf("the call itself got %v, Admit said %v", got, err)
	}
	if err := admit(outbound.Wrap(&bridgetest.Upstream{}, outbound.Retry(outbound.RetryConfig{Disabled: true}, true))); err != nil {
		t.Errorf("Wrap without an admission check refuses: %v", err)
	}

	// A fallback admits while one of its upstreams would take the call.
	_, _, fb := breaking("fallback")
	f := outbound.NewFallback(u, []bridge.Upstream{fb}, outbound.FallbackConfig{})
	if err := admit(f); err != nil {
		t.Errorf("the fallback's breaker is closed, yet Admit = %v", err)
	}
	for range 2 {
		_ = open(t, fb)
	}
	if err := admit(f); !errors.Is(err, outbound.ErrBreakerOpen) || !errors.As(err, &be) || be.Message != "upstream primary is failing; its circuit breaker is open" {
		t.Errorf("every breaker open: Admit = %v, want the primary's refusal", err)
	}
}

package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestUnreachable: a store cut off from its database (a silent blackhole,
// then a refused connection) fails a call with CodeUnavailable and a
// Retry-After within its call timeout, every later call at once, and
// serves again soon after the network heals.
func TestUnreachable(t *testing.T) {
	proxy := pgtest.NewProxy(t, pgtest.Schema(t))
	const opTimeout = 500 * time.Millisecond
	s, err := postgres.Open(t.Context(), proxy.URL(), postgres.Options{OpTimeout: opTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	if err := s.CreateSession(ctx, &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// unavailable calls the store and checks that it fails as the client
	// should see it, within limit.
	unavailable := func(what string, limit time.Duration) {
		t.Helper()
		start := time.Now()
		_, err := s.Session(ctx, "", "s")
		took := time.Since(start)
		var be *bridge.Error
		if !errors.As(err, &be) || be.Code != bridge.CodeUnavailable || be.RetryAfter <= 0 {
			t.Fatalf("%s: %v, want CodeUnavailable with a Retry-After", what, err)
		}
		if took > limit {
			t.Fatalf("%s: answered in %s, want within %s", what, took, limit)
		}
	}
	// healed waits for the store to serve again.
	healed := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := s.Session(ctx, "", "s")
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the store still fails 5s after the network healed: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	proxy.Blackhole()
	unavailable("the first call into the blackhole", opTimeout+time.Second)
	unavailable("a later call into the blackhole", 50*time.Millisecond)
	proxy.Heal()
	healed("after the blackhole")

	proxy.Refuse()
	unavailable("the first call refused", opTimeout+time.Second)
	unavailable("a later call refused", 50*time.Millisecond)
	proxy.Heal()
	healed("after the refusal")

	// A call its caller gave up on says nothing of the database: the next
	// call goes through.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Session(gone, "", "s"); err == nil || bridge.ErrorCode(err) == bridge.CodeUnavailable {
		t.Fatalf("a cancelled call: %v, want the cancellation, not CodeUnavailable", err)
	}
	if _, err := s.Session(ctx, "", "s"); err != nil {
		t.Fatalf("after a cancelled call: %v", err)
	}
}

// TestCloseTwice: a store closed twice (a deferred Close after an
// explicit one) does not panic.
func TestCloseTwice(t *testing.T) {
	s, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
}

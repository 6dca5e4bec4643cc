package postgres_test

import (
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestStore runs the store conformance suite storage/sqlite passes, against
// a real PostgreSQL server, each subtest in an empty schema of its own.
func TestStore(t *testing.T) {
	bridgetest.TestStore(t, func(t *testing.T) bridge.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestResponseStore runs the stored-responses suite storage/sqlite passes.
func TestResponseStore(t *testing.T) {
	bridgetest.TestResponseStore(t, func(t *testing.T) bridge.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestWatchRun: a process watching a run is woken by another process's
// commit of its events, and not by another run's.
func TestWatchRun(t *testing.T) {
	url := pgtest.Schema(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(t.Context(), url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	ctx := t.Context()
	if err := a.CreateSession(ctx, &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if err := a.CreateRun(ctx, &bridge.Run{ID: id, SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
			t.Fatal(err)
		}
	}
	wake, stop := b.WatchRun("r1")
	defer stop()
	if err := a.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("r2", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Fatal("woken by another run's commit")
	case <-time.After(200 * time.Millisecond):
	}
	if err := a.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("r1", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken by the run's commit in another process")
	}
}

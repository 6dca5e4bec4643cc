package bridgetest

import (
	"context"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// NewEngine returns an engine over store (storage/memory's for a test that
// has no use for a file, storage/sqlite's for one that does), routing
// every model to up; both are closed when t ends (an error closing the
// engine fails t).
func NewEngine(t testing.TB, store bridge.Store, up bridge.Upstream) *bridge.Engine {
	t.Helper()
	e, err := bridge.New(bridge.Config{Store: store, Route: func(string) (bridge.Upstream, error) { return up, nil }})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Error(err)
		}
		store.Close()
	})
	return e
}

// Run starts req on e and reads the run's events to the end (Drain); an
// error starting it fails t.
func Run(t testing.TB, e *bridge.Engine, req *bridge.Request) []bridge.Event {
	t.Helper()
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return Drain(t, e, run)
}

// Drain reads run's events after its last seq when it was started, to the
// end; an error in the stream fails t.
func Drain(t testing.TB, e *bridge.Engine, run *bridge.Run) []bridge.Event {
	t.Helper()
	_, events, err := e.Subscribe(t.Context(), run.ID, run.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	var out []bridge.Event
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// Collect reads events to their end or their first error: the events
// before it and the error.
func Collect(events bridge.Stream) ([]bridge.Event, error) {
	var out []bridge.Event
	for ev, err := range events {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

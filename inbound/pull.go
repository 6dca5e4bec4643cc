package inbound

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"net/http"

	"github.com/bridge-dev/bridge/bridge"
)

// Pulled is a run's subscription read in steps: a streaming handler holds
// its first events back until one its client sees (so a run that fails
// first is an ordinary error answer), then writes the rest. A read error
// ends it (Err). Stop releases it; only one goroutine may use it.
type Pulled struct {
	next func() (bridge.Event, error, bool)
	stop func()
	err  error
}

// Pull starts reading events in steps.
func Pull(events bridge.Stream) *Pulled {
	next, stop := iter.Pull2(events)
	return &Pulled{next: next, stop: stop}
}

// Next returns the next event; false at the end of the stream or at a
// read error (Err).
func (p *Pulled) Next() (bridge.Event, bool) {
	if p.err != nil {
		return bridge.Event{}, false
	}
	ev, err, ok := p.next()
	if ok && err != nil {
		p.err = err
	}
	return ev, ok && err == nil
}

// Events yields the events still to come (Next). A loop may break out of
// it and range over it again.
func (p *Pulled) Events(yield func(bridge.Event) bool) {
	for {
		ev, ok := p.Next()
		if !ok || !yield(ev) {
			return
		}
	}
}

// Head pulls what a streaming handler holds back before it writes
// anything: the events its client is not shown on their own (quiet
// reports which), up to and with the first one it is. A run that failed
// before that returns its failed final instead, for an ordinary error
// answer. A read error ends it early (Failed).
func (p *Pulled) Head(quiet func(bridge.Kind) bool) (held []bridge.Event, failed *bridge.Final) {
	for ev := range p.Events {
		if quiet(ev.Kind) {
			held = append(held, ev)
			continue
		}
		if ev.Kind == bridge.KindFinal && ev.Final != nil && ev.Final.Status == bridge.StatusFailed {
			return held, ev.Final
		}
		return append(held, ev), nil
	}
	return held, nil
}

// Err is the read error that ended the stream, or nil.
func (p *Pulled) Err() error { return p.err }

// Stop releases the subscription.
func (p *Pulled) Stop() { p.stop() }

// Failed reports whether a read error ended the stream, and logs it
// (EndedEarly).
func (p *Pulled) Failed(log *slog.Logger, r *http.Request, run *bridge.Run) bool {
	if p.err == nil {
		return false
	}
	EndedEarly(log, r, run, p.err)
	return true
}

// EndedEarly logs why a run's subscription ended before the run did: the
// store failed (its client then sees the stream cut, and can resume). A
// client that went away is no news.
func EndedEarly(log *slog.Logger, r *http.Request, run *bridge.Run, err error) {
	if errors.Is(err, context.Canceled) || r.Context().Err() != nil {
		return
	}
	log.Warn("run stream ended early", "run", run.ID, "err", err)
}

package responses

import (
	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/oaierror"
)

// Accumulator folds a response's events into one Response object, for a
// client that did not ask for a stream, for GET /v1/responses/{id}, and
// for the stored copy. It renders exactly the items and usage a
// StreamEncoder with the same options streams. It is not safe for
// concurrent use.
type Accumulator struct {
	e StreamEncoder
}

// NewAccumulator folds events into a Response object.
func NewAccumulator(opt StreamOptions) *Accumulator {
	a := &Accumulator{}
	a.e.quiet = true
	a.e.init(opt)
	return a
}

// Add folds one event in. Events after a final are ignored.
func (a *Accumulator) Add(ev *bridge.Event) { _ = a.e.Encode(ev) }

// Finished reports whether a final was added.
func (a *Accumulator) Finished() bool { return a.e.final != nil }

// Dropped lists what the events held that a Response cannot express (the
// same entries as StreamEncoder.Dropped).
func (a *Accumulator) Dropped() []string { return a.e.dropped }

// Err is the error of a run that did not succeed (a final failed,
// cancelled or interrupted), for an answer with an error status; nil
// while the run goes on and for a success.
func (a *Accumulator) Err() *bridge.Error {
	if a.e.final == nil {
		return nil
	}
	return oaierror.FinalError(a.e.final, a.e.errEv)
}

// Response renders the Response object: the terminal one once a final was
// added, else a snapshot with status (queued or in_progress) and the output
// so far.
func (a *Accumulator) Response(status string) []byte {
	if a.e.final != nil {
		_, st := a.e.outcome()
		return a.e.appendResponse(nil, st, a.e.final)
	}
	return a.e.appendResponse(nil, status, nil)
}

// Status is the response's status: the terminal one once a final was
// added, else "in_progress".
func (a *Accumulator) Status() string {
	if a.e.final == nil {
		return "in_progress"
	}
	_, st := a.e.outcome()
	return st
}

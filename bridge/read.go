package bridge

// Reading runs: subscribe, snapshots, abort.

import (
	"context"
	"time"
)

// Subscribe returns the committed events of run with seq > after, then
// follows the live ones until the run ends: no gap, no duplicate at the
// seam. The stream ends after the final event, or with ctx's error.
//
// A subscription under an acceptance-only request (WithAccepted: a resume
// with Prefer: respond-async) is that request's run: Started is called
// with it, and the request answers with the acceptance (its output goes
// to the session's channel).
func (e *Engine) Subscribe(ctx context.Context, runID string, after int64) (*Run, Stream, error) {
	run, events, err := e.subscribe(ctx, runID, after)
	if err == nil {
		if acc := acceptedFromContext(ctx); acc != nil && acc.Started != nil {
			acc.Started(run)
		}
	}
	return run, events, err
}

func (e *Engine) subscribe(ctx context.Context, runID string, after int64) (*Run, Stream, error) {
	principal := PrincipalFromContext(ctx)
	if lr := e.liveRun(runID); lr != nil {
		if lr.run.Principal != principal {
			return nil, nil, Errorf(CodeNotFound, "run %q not found", runID)
		}
		return lr.snapshot(), lr.follow(ctx, e.store, after), nil
	}
	run, err := e.store.Run(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	if run.Principal != principal {
		return nil, nil, Errorf(CodeNotFound, "run %q not found", runID)
	}
	if lr := e.liveRun(runID); lr != nil { // continued since the lookup
		return lr.snapshot(), lr.follow(ctx, e.store, after), nil
	}
	if w, ok := e.store.(Watcher); ok && run.Status == StatusRunning {
		return run, e.followStored(ctx, w, runID, after), nil // another replica drives it
	}
	return run, e.replay(ctx, runID, after), nil
}

// replay reads a finished run's events from the store, a page at a time.
func (e *Engine) replay(ctx context.Context, runID string, after int64) Stream {
	const page = 512
	return func(yield func(Event, error) bool) {
		for {
			evs, err := e.store.Events(ctx, runID, after, page)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
				after = ev.Seq
			}
			if len(evs) < page {
				return
			}
		}
	}
}

// StepStart returns the seq of the last final event of run before seq
// before (0 when there is none): where the stream of a client's request
// that saw event before began, since each request of a run continued with
// the client's tool results was answered with a stream of its own. It
// reads the committed events up to before a page at a time and keeps none.
func (e *Engine) StepStart(ctx context.Context, runID string, before int64) (int64, error) {
	if _, err := e.Run(ctx, runID); err != nil {
		return 0, err
	}
	var start int64
	for after := int64(0); after < before-1; {
		evs, err := e.store.Events(ctx, runID, after, int(min(before-1-after, storePage)))
		if err != nil {
			return 0, err
		}
		for _, ev := range evs {
			if ev.Kind == KindFinal && ev.Seq < before {
				start = ev.Seq
			}
		}
		if len(evs) == 0 {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	return start, nil
}

// Run returns a snapshot of a run, live or stored.
func (e *Engine) Run(ctx context.Context, id string) (*Run, error) {
	principal := PrincipalFromContext(ctx)
	if lr := e.liveRun(id); lr != nil && lr.run.Principal == principal {
		return lr.snapshot(), nil
	}
	r, err := e.store.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Principal != principal {
		return nil, Errorf(CodeNotFound, "run %q not found", id)
	}
	return r, nil
}

// upstreamCancelTimeout bounds the upstream's own cancel in Abort.
const upstreamCancelTimeout = 5 * time.Second

// cancelUpstream runs the current upstream call's own cancel, if it has
// one, bounded by upstreamCancelTimeout.
func (e *Engine) cancelUpstream(ctx context.Context, lr *liveRun) {
	call := lr.currentCall()
	if call == nil || call.Cancel == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, upstreamCancelTimeout)
	defer cancel()
	if err := call.Cancel(cctx); err != nil {
		e.log.Warn("upstream cancel", "run", lr.run.ID, "err", err)
	}
}

// RunMessages returns the transcript messages of a run committed so far,
// oldest first: its input from the start, the assistant's messages and the
// steers once the run has ended.
func (e *Engine) RunMessages(ctx context.Context, runID string) ([]Message, error) {
	if _, err := e.Run(ctx, runID); err != nil {
		return nil, err
	}
	return e.store.RunMessages(ctx, runID)
}

// Abort cancels a running run; its final event says cancelled. It returns
// once the final event is committed (or ctx is done). Aborting a run that
// has ended is a no-op.
func (e *Engine) Abort(ctx context.Context, runID string) (*Run, error) {
	r, err := e.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	lr := e.liveRun(runID)
	if lr == nil {
		if r.Status == StatusInputRequired {
			return e.abortWaiting(ctx, r)
		}
		if r.Status == StatusRunning { // another process drives it
			if run, ok, err := e.relay(ctx, Command{Kind: CommandAbort, Run: runID}); ok {
				return run, err
			}
		}
		return r, nil
	}
	e.cancelUpstream(ctx, lr)
	lr.cancel(errAborted)
	select {
	case <-lr.closed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.Run(ctx, runID)
}

// RunCanceller is implemented by upstreams that can stop a run of theirs
// no call is open for: a run that waits for the client's tool results
// keeps its upstream's run, task or invocation waiting too.
type RunCanceller interface {
	CancelRun(ctx context.Context, run *Run) error
}

// RunCancellerFor returns the RunCanceller of the upstream named name over
// the route up, looking through wrappers and groups of upstreams (a
// primary and its fallbacks, with a Member method).
func RunCancellerFor(up Upstream, name string) (RunCanceller, bool) {
	if g, ok := up.(interface {
		Member(name string) (Upstream, bool)
	}); ok {
		m, ok := g.Member(name)
		if !ok {
			return nil, false
		}
		up = m
	} else if up.Name() != name {
		return nil, false
	}
	for up != nil {
		if c, ok := up.(RunCanceller); ok {
			return c, true
		}
		u, ok := up.(interface{ Unwrap() Upstream })
		if !ok {
			return nil, false
		}
		up = u.Unwrap()
	}
	return nil, false
}

// abortWaiting stops a run that waits for the client's tool results: the
// upstream is told to stop its side (when it can be: RunCanceller), and
// the run ends cancelled, its final event after its last. A continuation
// that raced it and won leaves the abort a conflict.
func (e *Engine) abortWaiting(ctx context.Context, r *Run) (*Run, error) {
	if up, err := e.route(r.Model); err == nil {
		if c, ok := RunCancellerFor(up, r.Upstream); ok {
			cctx, cancel := context.WithTimeout(ctx, upstreamCancelTimeout)
			if err := c.CancelRun(cctx, r); err != nil {
				e.log.Warn("upstream cancel of a waiting run", "run", r.ID, "upstream", r.Upstream, "err", err)
			}
			cancel()
		}
	}
	now := e.now().UTC()
	run := *r
	run.Status, run.Reason, run.Finished, run.LastSeq = StatusCancelled, errAborted.Error(), now, r.LastSeq+1
	ev := Event{RunID: r.ID, Seq: run.LastSeq, Time: now, Kind: KindFinal, Source: SourceBridge,
		Final: &Final{Status: StatusCancelled, Reason: errAborted.Error()}}
	if lr := e.liveRun(r.ID); lr != nil {
		return nil, Errorf(CodeConflict, "run %s went on with the client's tool results; stop it again", r.ID)
	}
	if err := e.store.Commit(ctx, &Batch{Events: []Event{ev}, Runs: []*Run{&run}}); err != nil {
		if ErrorCode(err) == CodeConflict {
			return nil, Errorf(CodeConflict, "run %s went on with the client's tool results; stop it again", r.ID)
		}
		return nil, err
	}
	e.wakeSession(upstreamSession(r.Principal, r.SessionID))
	return &run, nil
}

// RecordDropped adds to a run's list of what its translations dropped (the
// inbound encoder learns it while rendering).
func (e *Engine) RecordDropped(ctx context.Context, runID string, dropped []string) error {
	if len(dropped) == 0 {
		return nil
	}
	r, err := e.store.Run(ctx, runID)
	if err != nil {
		return err
	}
	n := len(r.Dropped)
	r.Dropped = appendUnique(r.Dropped, dropped...)
	if len(r.Dropped) == n {
		return nil
	}
	return e.store.Commit(ctx, &Batch{Runs: []*Run{r}})
}

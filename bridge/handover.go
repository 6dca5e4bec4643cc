package bridge

// Handover: a process that stops gracefully on a store other processes
// share hands its runs that can be resumed to them, instead of
// interrupting them.

import (
	"context"
	"errors"
	"time"
)

// stopLive stops the runs still going when Close's grace has ended. On a
// store other processes share (a Leaser), a run whose upstream can resume
// it (resumable: the test a takeover of a dead process's run makes) is
// handed over: its context ends with errHandover, which stops the pump
// with no final event and no upstream cancel (the upstream's work goes on,
// for the process that takes the run over to resume). Any other run is
// interrupted (errShutdown), as on a store of this process alone.
func (e *Engine) stopLive() {
	e.mu.Lock()
	lrs := make([]*liveRun, 0, len(e.live))
	for _, lr := range e.live {
		lrs = append(lrs, lr)
	}
	e.mu.Unlock()
	_, shared := e.store.(Leaser)
	for _, lr := range lrs {
		cause := errShutdown
		if shared && e.resumable(lr.snapshot()) {
			cause = errHandover
		}
		lr.cancel(cause)
	}
}

// Drain tells the engine that its server is about to cut its clients'
// connections, its stop's grace having ended. On a store other processes
// share (a Leaser), a run whose client is cut then is not a run whose
// client left: it is not cancelled (nor its upstream's work), and Close
// hands it over or interrupts it as any run still going, while its client
// resumes it on another replica, as after a replica's crash. On any other
// store it changes nothing: a cut client's run without a session is
// cancelled, as before.
func (e *Engine) Drain() {
	if _, shared := e.store.(Leaser); shared {
		e.draining.Store(true)
	}
}

// resumable reports whether run's upstream, over the route its model takes
// now, can resume it (a Resumer): what server's takeover of a dead
// process's runs asks before it resumes one.
func (e *Engine) resumable(run *Run) bool {
	up, err := e.route(run.Model)
	if err != nil {
		return false
	}
	_, ok := ResumerFor(up, run.Upstream)
	return ok
}

// handedOver reports whether final is the one follow gives a step that
// Close handed over (its context ended with errHandover before the
// upstream's own final came).
func handedOver(ctx context.Context, final *Final) bool {
	return final != nil && final.Status == StatusInterrupted && final.Reason == errHandover.Error() &&
		errors.Is(context.Cause(ctx), errHandover)
}

// handOver ends the pump of a run Close handed over, in place of finish:
// nothing final is committed, the run leaves the live runs (its lease is
// no longer renewed), and Close closes it once the writer has committed
// its events, then ends its lease. A steer either went into the log before
// this (the process that takes the run over sends it on, as after a
// crash) or is refused.
func (e *Engine) handOver(lr *liveRun) {
	lr.emitMu.Lock() // a steer being logged is queued before the writer stops
	lr.nextSteers(false)
	lr.takePassed()
	lr.emitMu.Unlock()
	e.unregister(lr)
	e.mu.Lock()
	e.handed = append(e.handed, lr)
	e.mu.Unlock()
	e.log.Info("run handed over to another replica", "run", lr.run.ID, "last_seq", lr.snapshot().LastSeq)
}

// takeHanded returns the runs handed over, once their pumps have ended.
func (e *Engine) takeHanded() []*liveRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.handed
	e.handed = nil
	return h
}

// releaseTimeout bounds Close's release of the leases of the runs it
// handed over.
const releaseTimeout = 5 * time.Second

// releaseLeases ends this process's leases on the runs it handed over, so
// another process takes them over at once rather than once the lease has
// run out; if the store cannot, they are taken over when it has.
func (e *Engine) releaseLeases(handed []*liveRun) {
	l, ok := e.store.(Leaser)
	if !ok || len(handed) == 0 {
		return
	}
	ids := make([]string, len(handed))
	for i, lr := range handed {
		ids[i] = lr.run.ID
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	released, err := l.ReleaseLeases(ctx, ids)
	if err != nil {
		e.log.Warn("release the leases of runs handed over; another replica takes them over once the leases end", "runs", len(ids), "err", err)
		return
	}
	e.log.Info("released the leases of runs handed over to another replica", "runs", len(released))
}

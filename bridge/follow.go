package bridge

import (
	"context"
	"time"
)

// Watcher is implemented by a store that several bridge processes share
// (storage/postgres): it tells this process when any process commits
// events of a run, so a client of one replica follows a run that another
// replica drives.
type Watcher interface {
	// WatchRun returns a channel that receives (coalesced) after each
	// commit of events of run by any process, until stop is called. A
	// commit that returned before WatchRun returned may not be signalled:
	// read the store after calling it.
	WatchRun(run string) (wake <-chan struct{}, stop func())
}

// followPoll bounds how long a follower of another process's run waits
// for a signal before it reads the store again, so a signal lost (to a
// reconnect, say) delays it and never hangs it.
const followPoll = time.Second

// followStored yields the committed events of a run another process drives
// after after, then each batch as it is committed, until the run has ended
// and its last event has been read (or ctx is done).
func (e *Engine) followStored(ctx context.Context, w Watcher, runID string, after int64) Stream {
	const page = 512
	return func(yield func(Event, error) bool) {
		wake, stop := w.WatchRun(runID) // before the first read: no commit falls between
		defer stop()
		idle := idleFromContext(ctx)
		poll := time.NewTimer(followPoll)
		defer poll.Stop()
		check := false // read the run's status at the next caught-up point
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
				check = check || ev.Kind == KindFinal
			}
			if len(evs) == page {
				continue // more is committed already
			}
			if check {
				check = false
				r, err := e.store.Run(ctx, runID)
				if err != nil {
					yield(Event{}, err)
					return
				}
				if r.Status != StatusRunning && r.LastSeq <= after {
					return // ended, and every event of it read
				}
			}
			if idle != nil {
				idle()
			}
			select {
			case <-wake:
			case <-poll.C:
				poll.Reset(followPoll)
				check = true
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}

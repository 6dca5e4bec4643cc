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

// EventWatcher is a Watcher whose signals can carry the events committed
// (storage/postgres: in the NOTIFY, when they fit), so a follower yields
// them as they come instead of reading them back: the cross-replica
// delay loses a round trip to the database.
type EventWatcher interface {
	Watcher
	// WatchRunEvents is WatchRun with take, which returns the events of
	// run signalled since its last call, in commit order, and read = true
	// when a commit since then was signalled without its events (or more
	// came than are kept): the store holds what the signals lacked.
	WatchRunEvents(run string) (wake <-chan struct{}, take func() (evs []Event, read bool), stop func())
}

// SessionWatcher is a Watcher that also names the session of each commit
// it signals (storage/postgres: the notification carries the run's
// principal and session), so a session's channel on one replica wakes for
// the runs another replica drives, their starts included, as it does for
// this process's own.
type SessionWatcher interface {
	Watcher
	// WatchSessions calls commit with the run, principal and session of
	// each commit of events of a run of a session, by any process, with
	// the run's events of the commit when the signal carried them (else
	// nil: read the store), and lost when signals may have been lost
	// meanwhile (the listener reconnected): every session may have
	// commits unsignalled. Until stop is called. The calls come from the
	// store's one listener, in commit order, and must not block. A commit
	// of a process that does not name sessions in its signals (an older
	// replica, during a rolling upgrade) calls nothing: its session
	// channels learn of it by polling.
	WatchSessions(commit func(run, principal, session string, evs []Event), lost func()) (stop func())
}

// followPoll bounds how long a follower of another process's run waits
// for a signal before it reads the store again, so a signal lost (to a
// reconnect, say) delays it and never hangs it.
const followPoll = time.Second

// followStored yields the committed events of a run another process drives
// after after, then each batch as it is committed, until the run has ended
// and its last event has been read (or ctx is done). With an EventWatcher
// it yields the events the signals carry, and reads the store only when a
// signal lacked them, or they do not follow on from what it yielded.
func (e *Engine) followStored(ctx context.Context, w Watcher, runID string, after int64) Stream {
	const page = 512
	return func(yield func(Event, error) bool) {
		var (
			wake <-chan struct{}
			take func() ([]Event, bool)
			stop func()
		)
		if ew, ok := w.(EventWatcher); ok {
			wake, take, stop = ew.WatchRunEvents(runID)
		} else {
			wake, stop = w.WatchRun(runID) // before the first read: no commit falls between
		}
		defer stop()
		idle := idleFromContext(ctx)
		poll := time.NewTimer(followPoll)
		defer poll.Stop()
		check := false // read the run's status at the next caught-up point
		read := true   // read the store next
		for {
			if read {
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
				read = true
				if take != nil {
					evs, lacked := take()
					read = lacked
					for _, ev := range evs {
						if ev.Seq <= after {
							continue // read from the store already
						}
						if ev.Seq != after+1 {
							read = true // a gap: the store has what came between
							break
						}
						if !yield(ev, nil) {
							return
						}
						after = ev.Seq
						check = check || ev.Kind == KindFinal
					}
				}
			case <-poll.C:
				poll.Reset(followPoll)
				check, read = true, true
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}

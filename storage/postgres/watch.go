package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
)

var _ bridge.Watcher = (*Store)(nil)

// channel is the NOTIFY channel of committed events; a notification's
// payload is the run's id. Commit notifies in its transaction, so the
// notification is delivered once the events are visible.
const channel = "bridge_events"

// watch is the process's listener: one connection LISTENing on channel,
// started by the first WatchRun, fanning notifications out to the
// watchers of each run.
type watch struct {
	mu      sync.Mutex
	byRun   map[string]map[chan struct{}]struct{}
	started bool
	ready   chan struct{} // closed once the first LISTEN is active
	stop    context.CancelFunc
	done    chan struct{}
}

// WatchRun implements bridge.Watcher: the channel receives after each
// commit of events of run by any process sharing the database (and, after
// the listener lost its connection, once for every run: what was committed
// meanwhile went unsignalled).
func (s *Store) WatchRun(run string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w := &s.watch
	w.mu.Lock()
	if w.byRun == nil {
		w.byRun = map[string]map[chan struct{}]struct{}{}
	}
	if w.byRun[run] == nil {
		w.byRun[run] = map[chan struct{}]struct{}{}
	}
	w.byRun[run][ch] = struct{}{}
	if !w.started {
		w.started = true
		w.ready, w.done = make(chan struct{}), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		w.stop = cancel
		go s.listen(ctx)
	}
	ready := w.ready
	w.mu.Unlock()
	// Wait (briefly) for the listener, so that a commit after this returns
	// is signalled; the follower reads the store again now and then anyway.
	t := time.NewTimer(5 * time.Second)
	select {
	case <-ready:
	case <-t.C:
	}
	t.Stop()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.byRun[run], ch)
		if len(w.byRun[run]) == 0 {
			delete(w.byRun, run)
		}
	}
}

// wake signals the watchers of run, or of every run when run is "" (the
// listener reconnected: notifications may have been lost).
func (w *watch) wake(run string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	signal := func(set map[chan struct{}]struct{}) {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default: // one pending signal is as good as many
			}
		}
	}
	if run != "" {
		signal(w.byRun[run])
		return
	}
	for _, set := range w.byRun {
		signal(set)
	}
}

// listen holds a LISTEN connection until ctx ends, reconnecting after an
// error with a growing pause.
func (s *Store) listen(ctx context.Context) {
	w := &s.watch
	defer close(w.done)
	var once sync.Once
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			first := false
			once.Do(func() { first = true; close(w.ready) })
			if !first {
				w.wake("") // what was committed while it was reconnecting
			}
		})
		if ctx.Err() != nil {
			return
		}
		_ = err // reconnect: the pool's next connection may reach it
		w.wake("")
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
		pause = min(2*pause, 2*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, ready func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.watch.wake(n.Payload)
	}
}

// closeWatch stops the listener.
func (s *Store) closeWatch() {
	w := &s.watch
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		w.stop()
		<-w.done
	}
}

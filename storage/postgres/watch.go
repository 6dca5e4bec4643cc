package postgres

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
)

var (
	_ bridge.Watcher        = (*Store)(nil)
	_ bridge.EventWatcher   = (*Store)(nil)
	_ bridge.SessionWatcher = (*Store)(nil)
)

// channel is the NOTIFY channel of committed events. Commit notifies in
// its transaction, so the notification is delivered once the events are
// visible: one notification per run of a commit, whose payload is either
// the run's id alone (a bare signal: read the store), or the events
// themselves, when they fit (notifyLimit), so a follower on another
// replica yields them without reading them back:
//
//	<session seq> <run id>\n
//	<seq> <time in unix ns>\n<the event's payload column>\n  (once per event)
//	["<principal>","<session id>"]  (a run of a session: its last line)
//
// The payload column (JSON) holds no newline, nor does the last line (a
// JSON array: session watchers, WatchSessions, learn from it which
// session's channels to wake). A run of a session whose events and names
// do not fit together in 8000 bytes has its notification carry its names
// alone (its session seq, its id, a newline, the names). A replica of
// before the last line, during a rolling upgrade, takes such a
// notification for a bare signal (its events do not parse): its followers
// read the store, one round trip later than they would have; and a
// notification of such a replica (no last line) wakes no session here:
// those channels poll (inbound/runs' channel poll).
const channel = "bridge_events"

// notifyLimit bounds a notification that carries its events, below
// PostgreSQL's 8000 bytes.
const notifyLimit = 7800

// watch is the process's listener: one connection LISTENing on channel,
// started by the first WatchRun, fanning notifications out to the
// watchers of each run.
type watch struct {
	mu       sync.Mutex
	byRun    map[string]map[*bridge.Feed]struct{}
	sessions map[*sessionWatch]struct{}
	started  bool
	ready    chan struct{} // closed once the first LISTEN is active
	stop     context.CancelFunc
	done     chan struct{}
}

// WatchRun implements bridge.Watcher: the channel receives after each
// commit of events of run by any process sharing the database (and, after
// the listener lost its connection, once for every run: what was committed
// meanwhile went unsignalled).
func (s *Store) WatchRun(run string) (<-chan struct{}, func()) {
	f, stop := s.watchRun(run, false) // never taken: nothing kept
	return f.Wake(), stop
}

// WatchRunEvents implements bridge.EventWatcher.
func (s *Store) WatchRunEvents(run string) (<-chan struct{}, func() ([]bridge.Event, bool), func()) {
	f, stop := s.watchRun(run, true)
	return f.Wake(), f.Take, stop
}

// sessionWatch is one WatchSessions caller's.
type sessionWatch struct {
	commit func(run, principal, session string, evs []bridge.Event)
	lost   func()
}

// WatchSessions implements bridge.SessionWatcher.
func (s *Store) WatchSessions(commit func(run, principal, session string, evs []bridge.Event), lost func()) func() {
	sw := &sessionWatch{commit: commit, lost: lost}
	w := &s.watch
	w.mu.Lock()
	if w.sessions == nil {
		w.sessions = map[*sessionWatch]struct{}{}
	}
	w.sessions[sw] = struct{}{}
	s.startListening()
	ready := w.ready
	w.mu.Unlock()
	waitListening(ready)
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.sessions, sw)
	}
}

// startListening starts the listener, once; s.watch.mu is held.
func (s *Store) startListening() {
	w := &s.watch
	if !w.started {
		w.started = true
		w.ready, w.done = make(chan struct{}), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		w.stop = cancel
		go s.listen(ctx)
	}
}

// waitListening waits (briefly) for the listener, so that a commit after
// a watch is made is signalled; its watchers read the store again now and
// then anyway.
func waitListening(ready <-chan struct{}) {
	t := time.NewTimer(5 * time.Second)
	select {
	case <-ready:
	case <-t.C:
	}
	t.Stop()
}

func (s *Store) watchRun(run string, keep bool) (*bridge.Feed, func()) {
	wr := bridge.NewFeed(keep)
	w := &s.watch
	w.mu.Lock()
	if w.byRun == nil {
		w.byRun = map[string]map[*bridge.Feed]struct{}{}
	}
	if w.byRun[run] == nil {
		w.byRun[run] = map[*bridge.Feed]struct{}{}
	}
	w.byRun[run][wr] = struct{}{}
	s.startListening()
	ready := w.ready
	w.mu.Unlock()
	waitListening(ready)
	return wr, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.byRun[run], wr)
		if len(w.byRun[run]) == 0 {
			delete(w.byRun, run)
		}
	}
}

// notified hands a notification's payload to the watchers of its run,
// and names its session to the session watchers.
func (w *watch) notified(payload string) {
	head, body, carries := strings.Cut(payload, "\n")
	run := head
	var named string // the last line, naming the run's session
	if carries {
		_, run, _ = strings.Cut(head, " ")
		k := strings.LastIndexByte(body, '\n')
		if last := body[k+1:]; strings.HasPrefix(last, "[") {
			named, body = last, body[:max(k, 0)]
		}
	}
	w.mu.Lock()
	set := w.byRun[run]
	watchers := make([]*bridge.Feed, 0, len(set))
	for wr := range set {
		watchers = append(watchers, wr)
	}
	var sessions []*sessionWatch
	if named != "" {
		for sw := range w.sessions {
			sessions = append(sessions, sw)
		}
	}
	w.mu.Unlock()
	if len(sessions) == 0 && len(watchers) == 0 {
		return
	}
	var evs []bridge.Event
	if carries {
		evs = decodeNotified(head, body) // nil when malformed: a bare signal
	}
	if len(sessions) > 0 {
		var names []string
		if json.Unmarshal([]byte(named), &names) == nil && len(names) == 2 && names[1] != "" {
			for _, sw := range sessions {
				sw.commit(run, names[0], names[1], evs)
			}
		}
	}
	for _, wr := range watchers {
		wr.Signal(evs)
	}
}

// decodeNotified reads the events of a notification (see channel); nil if
// it is not of that form.
func decodeNotified(head, body string) []bridge.Event {
	sseqText, run, _ := strings.Cut(head, " ")
	sseq, err := strconv.ParseInt(sseqText, 10, 64)
	if err != nil {
		return nil
	}
	var evs []bridge.Event
	for body != "" {
		var line, payload string
		line, body, _ = strings.Cut(body, "\n")
		payload, body, _ = strings.Cut(body, "\n")
		seqText, timeText, _ := strings.Cut(line, " ")
		seq, err1 := strconv.ParseInt(seqText, 10, 64)
		t, err2 := strconv.ParseInt(timeText, 10, 64)
		var e bridge.Event
		if err1 != nil || err2 != nil || json.Unmarshal([]byte(payload), &e) != nil {
			return nil
		}
		e.RunID, e.Seq, e.SessionSeq, e.Time = run, seq, sseq, fromUnixNano(t)
		evs = append(evs, e)
	}
	return evs
}

// wakeAll signals every watcher: the listener reconnected, and
// notifications may have been lost.
func (w *watch) wakeAll() {
	w.mu.Lock()
	var watchers []*bridge.Feed
	for _, set := range w.byRun {
		for wr := range set {
			watchers = append(watchers, wr)
		}
	}
	sessions := make([]*sessionWatch, 0, len(w.sessions))
	for sw := range w.sessions {
		sessions = append(sessions, sw)
	}
	w.mu.Unlock()
	for _, wr := range watchers {
		wr.Signal(nil)
	}
	for _, sw := range sessions {
		sw.lost()
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
				w.wakeAll() // what was committed while it was reconnecting
			}
		})
		if ctx.Err() != nil {
			return
		}
		_ = err // reconnect: the pool's next connection may reach it
		w.wakeAll()
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
		s.watch.notified(n.Payload)
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

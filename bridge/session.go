package bridge

// Session channels: a session's subscribers learn of its runs as they
// start, and read them with Subscribe.

import (
	"context"
	"slices"
)

// WatchSession returns a channel that is closed the next time events of
// the context's principal's session are committed, or a run of it starts
// (its creation committed, so SessionRuns lists it) or is continued. Take a
// fresh one before each read of the session's events (SessionEvents), so
// a commit meanwhile is not missed. The channel holds no events: a
// subscriber that falls behind reads them from the store, so a slow
// channel costs no memory here. Over a store other processes share, their
// commits go to the session's feeds instead (FollowSession), and the
// channel is closed when signals of them may have been lost (all
// sessions').
func (e *Engine) WatchSession(ctx context.Context, session string) <-chan struct{} {
	k := upstreamSession(PrincipalFromContext(ctx), session)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watches == nil {
		e.watches = make(map[string]chan struct{})
	}
	ch, ok := e.watches[k]
	if !ok {
		ch = make(chan struct{})
		e.watches[k] = ch
	}
	return ch
}

// wakeSession wakes the subscribers of the session key names
// (upstreamSession).
func (e *Engine) wakeSession(key string) {
	e.mu.Lock()
	ch, ok := e.watches[key]
	delete(e.watches, key)
	e.mu.Unlock()
	if ok {
		close(ch)
	}
}

// FollowSession returns a feed of the commits other processes make in the
// context's principal's session, over a store they share (a
// SessionWatcher: nil otherwise, which never wakes), until stop is
// called. Take it before the first read of the session's events
// (SessionEvents), so no commit falls between. A signal of an older
// replica (no session named), or one lost, wakes no feed: the subscriber
// reads the store now and then too (WatchSession wakes it for a known
// loss).
func (e *Engine) FollowSession(ctx context.Context, session string) (*Feed, func()) {
	if _, ok := e.store.(SessionWatcher); !ok {
		return nil, func() {}
	}
	e.sessionSignals.Do(e.watchSessions)
	k := upstreamSession(PrincipalFromContext(ctx), session)
	f := NewFeed(true)
	e.mu.Lock()
	if e.feeds == nil {
		e.feeds = make(map[string]map[*Feed]struct{})
	}
	if e.feeds[k] == nil {
		e.feeds[k] = make(map[*Feed]struct{})
	}
	e.feeds[k][f] = struct{}{}
	e.mu.Unlock()
	return f, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.feeds[k], f)
		if len(e.feeds[k]) == 0 {
			delete(e.feeds, k)
		}
	}
}

// watchSessions has a SessionWatcher store signal the commits any process
// makes in a session to that session's feeds, for the store's life. A run
// live here has its session woken after each of its commits by the writer
// (WatchSession): the store's signal of that commit is not passed on.
func (e *Engine) watchSessions() {
	sw := e.store.(SessionWatcher)
	sw.WatchSessions(func(run, principal, session string, evs []Event) {
		k := upstreamSession(principal, session)
		e.mu.Lock()
		if e.live[run] != nil || len(e.feeds[k]) == 0 {
			e.mu.Unlock()
			return
		}
		feeds := make([]*Feed, 0, len(e.feeds[k]))
		for f := range e.feeds[k] {
			feeds = append(feeds, f)
		}
		e.mu.Unlock()
		for _, f := range feeds {
			f.Signal(evs)
		}
	}, e.wakeSessions)
}

// wakeSessions wakes the subscribers of every session.
func (e *Engine) wakeSessions() {
	e.mu.Lock()
	watches := e.watches
	e.watches = nil
	e.mu.Unlock()
	for _, ch := range watches {
		close(ch)
	}
}

// SessionEvents returns up to limit committed events of the context's
// principal's session after the position after, in commit order
// (Store.SessionEvents). A session of another principal has none.
func (e *Engine) SessionEvents(ctx context.Context, session string, after SessionPos, limit int) ([]Event, error) {
	return e.store.SessionEvents(ctx, PrincipalFromContext(ctx), session, after, limit)
}

// SessionSeq is the SessionSeq of the last events committed of the
// context's principal's session (0 before any).
func (e *Engine) SessionSeq(ctx context.Context, session string) (int64, error) {
	return e.store.SessionSeq(ctx, PrincipalFromContext(ctx), session)
}

// RunEvents returns up to limit committed events of a run of the
// context's principal with seq > after (limit <= 0: all).
func (e *Engine) RunEvents(ctx context.Context, runID string, after int64, limit int) ([]Event, error) {
	if _, err := e.Run(ctx, runID); err != nil {
		return nil, err
	}
	return e.store.Events(ctx, runID, after, limit)
}

// Shared reports whether other processes commit to the engine's store (a
// store that signals their commits, Watcher): a signal of theirs may be
// lost (or, from an older replica, name no session), so a session's
// subscriber reads the store now and then too.
func (e *Engine) Shared() bool {
	_, ok := e.store.(Watcher)
	return ok
}

// SessionRuns returns the runs of a session of the context's principal,
// oldest first. One that does not exist yet (another principal's of that
// id is none) has no runs: a client may subscribe to the session its first
// run will make.
func (e *Engine) SessionRuns(ctx context.Context, session string) ([]*Run, error) {
	principal := PrincipalFromContext(ctx)
	_, err := e.store.Session(ctx, principal, session)
	if ErrorCode(err) == CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	runs, err := e.store.ListRuns(ctx, RunFilter{SessionID: session, Principal: principal})
	if err != nil {
		return nil, err
	}
	slices.Reverse(runs) // ListRuns is newest first
	return runs, nil
}

// upstreamSession is the one string that names principal's session apart
// from every other principal's session of the same id: the id itself for
// the anonymous principal "" (a bridge without keys: names unchanged from
// before sessions were per principal), else the principal and the id
// joined by a unit separator (U+001F), which no client-given id can hold
// (inbound.CheckIDs refuses control characters). Upstreams get it as
// Request.SessionID, so each keeps its own conversation, and its id-map
// entries, per principal; it never goes to a client.
func upstreamSession(principal, session string) string {
	if principal == "" || session == "" {
		return session
	}
	return principal + "\x1f" + session
}

type acceptKey struct{}

// Accepted is how a request that only wants its run accepted (Prefer:
// respond-async) starts it: detached from the request (its output goes to
// the session's channel, not the response), with the client's local run
// id when the dialect's request did not carry one, and Started called
// once the run is recorded.
type Accepted struct {
	ClientRunID string
	Started     func(*Run)
}

// WithAccepted returns a context whose Start runs as a.
func WithAccepted(ctx context.Context, a *Accepted) context.Context {
	return context.WithValue(ctx, acceptKey{}, a)
}

func acceptedFromContext(ctx context.Context) *Accepted {
	a, _ := ctx.Value(acceptKey{}).(*Accepted)
	return a
}

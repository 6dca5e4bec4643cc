package bridge

// Session channels: a session's subscribers learn of its runs as they
// start, and read them with Subscribe.

import (
	"context"
	"slices"
)

// WatchSession returns a channel that is closed the next time a run of
// session (the context's principal's) starts (its creation committed, so SessionRuns lists it) or a
// run of it is continued. Take a fresh one after each wake, before listing
// the session's runs, so a run that starts meanwhile is not missed. The channel
// holds no events: a subscriber that falls behind reads them from the
// store (Subscribe), so a slow channel costs no memory here.
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

// sessionStarted wakes the subscribers of principal's session.
func (e *Engine) sessionStarted(principal, session string) {
	k := upstreamSession(principal, session)
	e.mu.Lock()
	ch, ok := e.watches[k]
	delete(e.watches, k)
	e.mu.Unlock()
	if ok {
		close(ch)
	}
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

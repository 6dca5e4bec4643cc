package bridge

// Session channels: a session's subscribers learn of its runs as they
// start, and read them with Subscribe.

import (
	"context"
	"slices"
)

// WatchSession returns a channel that is closed the next time a run of
// session starts (its creation committed, so SessionRuns lists it) or a
// run of it is continued. Take a fresh one after each wake, before listing
// the session's runs, so a run that starts meanwhile is not missed. The channel
// holds no events: a subscriber that falls behind reads them from the
// store (Subscribe), so a slow channel costs no memory here.
func (e *Engine) WatchSession(session string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watches == nil {
		e.watches = make(map[string]chan struct{})
	}
	ch, ok := e.watches[session]
	if !ok {
		ch = make(chan struct{})
		e.watches[session] = ch
	}
	return ch
}

// sessionStarted wakes the subscribers of session.
func (e *Engine) sessionStarted(session string) {
	e.mu.Lock()
	ch, ok := e.watches[session]
	delete(e.watches, session)
	e.mu.Unlock()
	if ok {
		close(ch)
	}
}

// SessionRuns returns the runs of a session of the context's principal,
// oldest first. Another principal's session is not found; one that does
// not exist yet has no runs (a client may subscribe to the session its
// first run will make).
func (e *Engine) SessionRuns(ctx context.Context, session string) ([]*Run, error) {
	principal := PrincipalFromContext(ctx)
	s, err := e.store.Session(ctx, session)
	if ErrorCode(err) == CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.Principal != principal {
		return nil, Errorf(CodeNotFound, "session %q not found", session)
	}
	runs, err := e.store.ListRuns(ctx, RunFilter{SessionID: session, Principal: principal})
	if err != nil {
		return nil, err
	}
	slices.Reverse(runs) // ListRuns is newest first
	return runs, nil
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

package bridge

import "context"

type principalKey struct{}

// WithPrincipal returns a context carrying the authenticated principal. The
// engine scopes sessions and runs to it: another principal gets not found.
func WithPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the principal, "" when none was set.
func PrincipalFromContext(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

type runIDKey struct{}

// withRunID returns a context naming the run an upstream call belongs to.
func withRunID(ctx context.Context, run string) context.Context {
	return context.WithValue(ctx, runIDKey{}, run)
}

// RunIDFromContext returns the id of the run whose upstream call ctx
// belongs to (the engine sets it on the context an Upstream's Open gets),
// "" outside one. Upstreams key their id maps by it.
func RunIDFromContext(ctx context.Context) string {
	r, _ := ctx.Value(runIDKey{}).(string)
	return r
}

type idleKey struct{}

// WithIdle returns a context whose live subscriptions (Engine.Subscribe)
// call f each time they have yielded every event committed so far and are
// about to wait for more (or to look for more). f runs on the goroutine that iterates
// the stream. An SSE writer flushes there: the events a commit made
// available at once leave in one write, and none waits for one that has
// not been committed.
func WithIdle(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, idleKey{}, f)
}

func idleFromContext(ctx context.Context) func() {
	f, _ := ctx.Value(idleKey{}).(func())
	return f
}

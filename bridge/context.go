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

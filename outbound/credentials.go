package outbound

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-kit/kit/endpoint"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/internal/scrub"
)

// Credentials are the upstream keys the bridge holds. An upstream's error
// text may quote the request that carried one (a 401 that echoes the
// Authorization header, a proxy's debug page); whatever the bridge relays
// of it to a client, a run's failure reason, the store or a log passes
// through Scrub first. The zero value (and nil) scrubs only what is shaped
// like a credential header's value.
type Credentials struct {
	keys *scrub.Keys
}

// NewCredentials returns the set of keys to keep in: every configured
// upstream's, not only the one a call went to (a misrouted or proxied
// upstream may quote another's).
func NewCredentials(secrets ...string) *Credentials {
	return &Credentials{keys: scrub.New(secrets...)}
}

// Keys is the set of keys c keeps in, for whatever else scrubs text with
// them (the inspector's recorder).
func (c *Credentials) Keys() *scrub.Keys {
	if c == nil {
		return nil
	}
	return c.keys
}

// Redacted replaces a credential in scrubbed text.
const Redacted = scrub.Redacted

// Scrub returns s with every configured key, and every value shaped like
// an Authorization, X-Api-Key or api-key value, replaced by Redacted
// (scrub.Keys.Scrub).
func (c *Credentials) Scrub(s string) string { return c.Keys().Scrub(s) }

// Refused is the message a client gets when an upstream refused the
// bridge's own credentials.
const Refused = "the upstream refused the bridge's credentials"

// ScrubError scrubs e in place. An upstream's 401 or 403 (or an error it
// classed as such) becomes the bad-gateway error Refused, with none of the
// upstream's text: the client's own key was fine, so it must not read as
// a 401 or 403 of its own; and a refusal is where upstreams quote the
// credential they refused.
func (c *Credentials) ScrubError(name string, e *bridge.Error) {
	if e == nil {
		return
	}
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden ||
		e.Code == bridge.CodeUnauthenticated || e.Code == bridge.CodePermissionDenied {
		*e = bridge.Error{Code: bridge.CodeUpstream, Message: Refused + " (upstream " + name + ")"}
		return
	}
	e.Message = c.Scrub(e.Message)
	e.Type = c.Scrub(e.Type)
	e.Param = c.Scrub(e.Param)
	e.UpstreamCode = c.Scrub(e.UpstreamCode)
}

// Middleware is go-kit middleware, innermost in an upstream's chain (so
// logs, spans, the breaker and the engine see only scrubbed text), that
// scrubs the error of Open and every error and failed final of the call's
// stream. Errors keep their wrapping (ConnectError still marks a connect
// failure).
func (c *Credentials) Middleware(name string) endpoint.Middleware {
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		return func(ctx context.Context, req any) (any, error) {
			resp, err := next(ctx, req)
			if err != nil {
				c.scrubErr(name, err)
				return resp, err
			}
			if call, ok := resp.(*bridge.Call); ok {
				c.scrubCall(name, call)
			}
			return resp, nil
		}
	}
}

// scrubCall makes call's stream scrub each error and event it yields.
func (c *Credentials) scrubCall(name string, call *bridge.Call) {
	if call == nil || call.Events == nil {
		return
	}
	events := call.Events
	call.Events = func(yield func(bridge.Event, error) bool) {
		for ev, err := range events {
			if err != nil {
				c.scrubErr(name, err)
			}
			c.scrubEvent(name, &ev)
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (c *Credentials) scrubErr(name string, err error) {
	var be *bridge.Error
	if errors.As(err, &be) {
		c.ScrubError(name, be)
	}
}

func (c *Credentials) scrubEvent(name string, ev *bridge.Event) {
	if ev.Error != nil {
		c.ScrubError(name, ev.Error)
	}
	if f := ev.Final; f != nil {
		if f.Error != nil {
			c.ScrubError(name, f.Error)
			if strings.HasPrefix(f.Error.Message, Refused) {
				f.Reason = f.Error.Message // the reason quoted the refusal's text
			}
		}
		f.Reason = c.Scrub(f.Reason)
	}
}

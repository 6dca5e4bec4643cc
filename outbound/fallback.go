package outbound

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"slices"

	"github.com/bridge-dev/bridge/bridge"
)

// IDStore is the part of the store a client keeps its id maps in: what
// it recorded of a run or a session, the upstream's id of a local one
// (bridge.Store has it).
type IDStore interface {
	PutID(ctx context.Context, m bridge.IDMapping) error
	RemoteID(ctx context.Context, kind bridge.IDKind, scope, local string) (string, error)
}

// IDMap is the part of the store a Fallback uses to carry tool-call ids
// from the primary's id space into a fallback's (bridge.Store has it).
type IDMap interface {
	IDStore
	LocalID(ctx context.Context, kind bridge.IDKind, scope, remote string) (string, error)
}

// FallbackConfig configures a Fallback. The zero value of each field means
// none: no id map (ids go to a fallback as the primary knows them), no log,
// no hook.
type FallbackConfig struct {
	IDs    IDMap
	Logger *slog.Logger
	// Idempotent, when set, says whether a call to up may be made again
	// elsewhere after up answered with an error (as Retry's idempotent):
	// when false (an agent, which may have started the work), only a call
	// that never reached up (its breaker open, a connect error) or that up
	// refused with a 429 goes on to a fallback. Nil: every upstream is.
	Idempotent func(up bridge.Upstream) bool
	// OnFallback, when set, is told of each fallback taken: from failed
	// before answering with err, and to is tried next (for metrics and the
	// run's span; ctx is the call's).
	OnFallback func(ctx context.Context, from, to bridge.Upstream, err error)
}

// Fallback is an upstream with fallbacks: Open calls the primary, and when
// it fails before answering by the upstream's fault (its breaker is open, a
// connect error, a timeout before the first byte, a 5xx or a 429, after its
// own retries: bridge.Error.Retryable; for an upstream that is not
// idempotent, only the breaker, a connect error or a 429, see
// FallbackConfig.Idempotent), calls the next fallback in order,
// each the wrapped upstream of its own configuration (its own breaker and
// retries). An upstream that answers, then fails before its first event
// that serves the call (anything but message_started and usage), by its
// fault, counts as failing before answering: Anthropic's 200 whose first
// event is an overloaded error. A failure that is the client's (a 4xx for
// its request) or the client's cancel stops the chain, and so does a call
// that has begun: a stream that fails after its first text, tool call or
// other content is never replayed elsewhere. The last upstream's stream is
// passed on as it comes.
//
// When every upstream failed by its fault, Open returns the primary's error
// (the route's upstream, with its Retry-After); when a fallback refused the
// request as the client's fault, that refusal.
//
// The Call a Fallback returns names the upstream that serves it in
// Call.Upstream and Call.Dialect, so the run records it, and carries that
// upstream's own Cancel and Steer. Name, Dialect and the optional
// interfaces are the primary's: the engine maps tool-call ids under the
// primary's name, and Fallback carries them into a fallback's id space
// (through FallbackConfig.IDs and the fallback's ToolCallMinter). Unwrap
// gives the primary; ResumerFor gives the Resumer of the member that served
// a run, so a run a fallback served is resumed over that fallback after a
// crash, when it can resume runs.
//
// Safe for concurrent use.
type Fallback struct {
	primary bridge.Upstream
	next    []bridge.Upstream
	cfg     FallbackConfig
	log     *slog.Logger
}

// NewFallback returns primary with fallbacks, tried in order. Each is
// usually outbound.Wrap'd with its own breaker and retries. Without
// fallbacks it returns primary.
func NewFallback(primary bridge.Upstream, fallbacks []bridge.Upstream, cfg FallbackConfig) bridge.Upstream {
	if len(fallbacks) == 0 {
		return primary
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Fallback{primary: primary, next: slices.Clone(fallbacks), cfg: cfg, log: log}
	if m, ok := primary.(bridge.ToolCallMinter); ok {
		return &fallbackMinter{Fallback: f, m: m}
	}
	return f
}

// Name is the primary's.
func (f *Fallback) Name() string { return f.primary.Name() }

// Dialect is the primary's.
func (f *Fallback) Dialect() string { return f.primary.Dialect() }

// Unwrap returns the primary.
func (f *Fallback) Unwrap() bridge.Upstream { return f.primary }

// Admit implements bridge.Admitter: a call is admitted when the primary or
// any fallback would take it; when none would, the primary's refusal.
func (f *Fallback) Admit() error {
	first := admit(f.primary)
	if first == nil {
		return nil
	}
	for _, up := range f.next {
		if admit(up) == nil {
			return nil
		}
	}
	return first
}

// admit is up's bridge.Admitter answer; nil for an upstream without one.
func admit(up bridge.Upstream) error {
	if a, ok := up.(bridge.Admitter); ok {
		return a.Admit()
	}
	return nil
}

// Member returns the member upstream named name, the primary or a
// fallback (bridge.RunCancellerFor looks through it).
func (f *Fallback) Member(name string) (bridge.Upstream, bool) {
	up := f.member(name)
	return up, up != nil
}

// ResumerFor is the Resumer of a run that went to the upstream named name
// (bridge.ResumerFor): the primary's or a fallback's, when that upstream
// can resume runs. The request goes to it as Open sends one (tool-call ids
// in its own space), and the call names it as the one serving the run.
func (f *Fallback) ResumerFor(name string) (bridge.Resumer, bool) {
	up := f.member(name)
	if up == nil {
		return nil, false
	}
	res, ok := bridge.ResumerOf(up)
	if !ok {
		return nil, false
	}
	return bridge.ResumeFunc(func(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
		if up == f.primary {
			req = f.primaryRequest(req)
		} else {
			req = f.fallbackRequest(ctx, req, up)
		}
		call, err := res.Resume(ctx, req, run, events)
		if err != nil {
			return nil, err
		}
		return served(call, up), nil
	}), true
}

// member is the primary or the fallback named name; nil for neither.
func (f *Fallback) member(name string) bridge.Upstream {
	if f.primary.Name() == name {
		return f.primary
	}
	for _, up := range f.next {
		if up.Name() == name {
			return up
		}
	}
	return nil
}

// Fallbacks returns the fallbacks, in order.
func (f *Fallback) Fallbacks() []bridge.Upstream { return slices.Clone(f.next) }

// Open implements bridge.Upstream.
func (f *Fallback) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	call, err := f.primary.Open(ctx, f.primaryRequest(req))
	if err == nil {
		err = f.firstEvents(ctx, f.primary, call)
	}
	if err == nil {
		return served(call, f.primary), nil
	}
	first, from := err, f.primary
	for i, up := range f.next {
		if ctx.Err() != nil || !f.fallible(from, err) {
			return nil, err
		}
		be := bridge.AsError(err)
		f.log.Warn("upstream failed before answering; trying a fallback", "upstream", from.Name(), "fallback", up.Name(),
			"code", string(be.Code), "status", be.Status, "err", be.Message)
		if f.cfg.OnFallback != nil {
			f.cfg.OnFallback(ctx, from, up, err)
		}
		call, err = up.Open(ctx, f.fallbackRequest(ctx, req, up))
		if err == nil && i < len(f.next)-1 {
			err = f.firstEvents(ctx, up, call)
		}
		if err == nil {
			f.log.Info("fallback upstream serves the call", "upstream", f.primary.Name(), "fallback", up.Name())
			return served(call, up), nil
		}
		from = up
	}
	if ctx.Err() == nil && f.fallible(from, err) {
		return nil, first
	}
	return nil, err
}

// firstEvents reads call's stream up to its first event that shows up
// serving the call: anything but message_started and usage. When the
// stream fails before that, by up's fault and as fallible allows (an
// upstream that answered 200, then an overloaded error as its first
// event), it stops the stream and returns the failure, for the next
// upstream to be tried. Otherwise call.Events becomes the events read,
// then the rest, as the upstream sent them. A failure is a stream error
// or a failed final with its error.
func (f *Fallback) firstEvents(ctx context.Context, up bridge.Upstream, call *bridge.Call) error {
	type item struct {
		ev  bridge.Event
		err error
	}
	next, stop := iter.Pull2(call.Events)
	var read []item
	for {
		ev, err, ok := next()
		if !ok {
			break
		}
		failure := err
		if err == nil && ev.Kind == bridge.KindFinal && ev.Final != nil && ev.Final.Status == bridge.StatusFailed && ev.Final.Error != nil {
			failure = ev.Final.Error
		}
		if failure != nil && ctx.Err() == nil && f.fallible(up, failure) {
			stop()
			return failure
		}
		read = append(read, item{ev, err})
		if err != nil || (ev.Kind != bridge.KindMessageStarted && ev.Kind != bridge.KindUsage) {
			break
		}
	}
	call.Events = func(yield func(bridge.Event, error) bool) {
		defer stop()
		for _, it := range read {
			if !yield(it.ev, it.err) || it.err != nil {
				return
			}
		}
		for {
			ev, err, ok := next()
			if !ok || !yield(ev, err) || err != nil {
				return
			}
		}
	}
	return nil
}

// fallible reports whether up's failure err lets the call go on to a
// fallback.
func (f *Fallback) fallible(up bridge.Upstream, err error) bool {
	if !upstreamFault(err) {
		return false
	}
	if f.cfg.Idempotent == nil || f.cfg.Idempotent(up) {
		return true
	}
	return errors.Is(err, ErrBreakerOpen) || errors.Is(err, ErrConnect) || bridge.AsError(err).Status == 429
}

// served names up in call as the upstream that serves it.
func served(call *bridge.Call, up bridge.Upstream) *bridge.Call {
	call.Upstream, call.Dialect = up.Name(), up.Dialect()
	return call
}

// upstreamFault reports whether err is the upstream's fault, one a
// fallback may do better on: the breaker's and retries' classification.
func upstreamFault(err error) bool {
	if errors.Is(err, ErrConnect) {
		return true
	}
	var be *bridge.Error
	return errors.As(err, &be) && be.Retryable()
}

// primaryRequest is req for the primary. The engine mapped its tool-call
// ids under the primary's name; an id a fallback minted was recorded there
// as it is, so a primary that mints its own (Anthropic) is asked again for
// each id. This needs a minter that keeps an id it takes (Anthropic's
// does), so its own ids go back unchanged.
func (f *Fallback) primaryRequest(req *bridge.Request) *bridge.Request {
	m, ok := f.primary.(bridge.ToolCallMinter)
	if !ok {
		return req
	}
	return remapToolCallIDs(req, m.MintToolCallID)
}

// fallbackRequest is req for the fallback up: its tool-call ids, which the
// engine mapped into the primary's space, go back to the local ids and
// then into up's (the id up knows, or one it mints, recorded).
func (f *Fallback) fallbackRequest(ctx context.Context, req *bridge.Request, up bridge.Upstream) *bridge.Request {
	ids := f.cfg.IDs
	minter, _ := up.(bridge.ToolCallMinter)
	if ids == nil && minter == nil {
		return req
	}
	return remapToolCallIDs(req, func(id string) string {
		local := id
		if ids != nil {
			if l, err := ids.LocalID(ctx, bridge.IDToolCall, f.primary.Name(), id); err == nil {
				local = l
			}
			if r, err := ids.RemoteID(ctx, bridge.IDToolCall, up.Name(), local); err == nil {
				return r
			}
		}
		if minter == nil {
			return local
		}
		r := minter.MintToolCallID(local)
		if ids != nil {
			_ = ids.PutID(ctx, bridge.IDMapping{Kind: bridge.IDToolCall, Scope: up.Name(), Local: local, Remote: r})
		}
		return r
	})
}

// remapToolCallIDs is req with its transcript's tool-call ids mapped by
// remote (bridge.RemapToolCallIDs); req itself when none changes.
func remapToolCallIDs(req *bridge.Request, remote func(string) string) *bridge.Request {
	msgs := bridge.RemapToolCallIDs(req.Messages, remote)
	if len(msgs) == 0 || &msgs[0] == &req.Messages[0] {
		return req
	}
	r := *req
	r.Messages = msgs
	return &r
}

type fallbackMinter struct {
	*Fallback
	m bridge.ToolCallMinter
}

// MintToolCallID is the primary's.
func (f *fallbackMinter) MintToolCallID(local string) string { return f.m.MintToolCallID(local) }

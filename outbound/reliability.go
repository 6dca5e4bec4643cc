package outbound

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/sony/gobreaker"

	"github.com/bridge-dev/bridge/bridge"
)

// BreakerConfig configures one upstream's circuit breaker. The zero value
// means the defaults: open after 5 consecutive upstream failures (while
// no more than ten times as many calls are still running: see trips), stay
// open 30 s, then let one trial request through (half-open).
type BreakerConfig struct {
	Failures    uint32        `yaml:"failures"`
	OpenFor     time.Duration `yaml:"open_for"`
	HalfOpenMax uint32        `yaml:"half_open_max"`
}

// Breaker is one upstream's circuit breaker, as go-kit middleware around the
// upstream's endpoint. Only upstream faults count (connect errors, 5xx, 429,
// timeouts: bridge.Error.Retryable); a client's bad request or a cancelled
// call never trips it. An open breaker answers at once with CodeUnavailable
// and the time left open as RetryAfter.
type Breaker struct {
	cb      *gobreaker.TwoStepCircuitBreaker
	openFor time.Duration
	now     func() time.Time

	mu       sync.Mutex
	openedAt time.Time
}

// trips reports whether counts c open the breaker: n consecutive failures,
// with no more than ten times as many calls still running. A call is
// counted when its stream ends, and streams end out of order: while
// hundreds of healthy streams run, a few short failed ones can end back
// to back (a soak of 500 streams with 5% failing opened it so) without the
// upstream being down. An upstream that is down fails every call, the
// running ones too, and trips it soon after n.
func trips(c gobreaker.Counts, n uint32) bool {
	if c.ConsecutiveFailures < n {
		return false
	}
	running := c.Requests - c.TotalSuccesses - c.TotalFailures
	return running <= 10*c.ConsecutiveFailures
}

// NewBreaker returns the breaker of the upstream named name. onChange, when
// set, is told of every state change (for logs and metrics).
func NewBreaker(name string, cfg BreakerConfig, log *slog.Logger, onChange func(name string, from, to gobreaker.State)) *Breaker {
	if cfg.Failures == 0 {
		cfg.Failures = 5
	}
	if cfg.OpenFor <= 0 {
		cfg.OpenFor = 30 * time.Second
	}
	if cfg.HalfOpenMax == 0 {
		cfg.HalfOpenMax = 1
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Breaker{openFor: cfg.OpenFor, now: time.Now}
	b.cb = gobreaker.NewTwoStepCircuitBreaker(gobreaker.Settings{
		Name:        name,
		MaxRequests: cfg.HalfOpenMax,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return trips(c, cfg.Failures) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.mu.Lock()
				b.openedAt = b.now()
				b.mu.Unlock()
			}
			log.Warn("circuit breaker state change", "upstream", name, "from", from.String(), "to", to.String())
			if onChange != nil {
				onChange(name, from, to)
			}
		},
	})
	return b
}

// succeeded is the breaker's judgement of an outcome: only an upstream
// fault (a Retryable bridge error) is a failure.
func succeeded(err error) bool {
	var be *bridge.Error
	return err == nil || !errors.As(err, &be) || !be.Retryable()
}

// State is the breaker's current state.
func (b *Breaker) State() gobreaker.State { return b.cb.State() }

// Counts are the breaker's counts in its current state and generation.
func (b *Breaker) Counts() gobreaker.Counts { return b.cb.Counts() }

// Admit is the breaker's answer before a call (for WrapAdmit): while it is
// open, the error the call would get at once; else nil (half-open, the
// call may still be refused if its trials are taken).
func (b *Breaker) Admit() error {
	if b.cb.State() == gobreaker.StateOpen {
		return b.openError()
	}
	return nil
}

// Middleware is the breaker as go-kit endpoint middleware, with one breaker
// request spanning the whole call, its stream included: gobreaker's
// two-step breaker admits the call (Allow) in the caller's goroutine, the
// call is handed back as soon as the upstream answers, and the outcome is
// counted when the call's events end. It counts as a failure when the
// stream ended by an upstream fault (an error mid-stream: cut, garbage,
// idle timeout; an upstream error event, that is a failed final whose
// error is Retryable; no final at all), and as a success when it ended
// with a final (even a failed one that is the client's fault), when the
// consumer stopped ranging, or when the call's context ended first (the
// client went away, the run was aborted or timed out). So consecutive
// mid-stream faults open the breaker, and half-open admits one trial until
// its stream has ended. A call whose events are never ranged is counted
// when its context is done, so the context passed to Open must end (the
// engine's run context does when the run ends).
func (b *Breaker) Middleware() endpoint.Middleware {
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		return func(ctx context.Context, req any) (resp any, err error) {
			done, err := b.cb.Allow()
			if err != nil {
				if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
					return nil, b.openError()
				}
				return nil, err
			}
			x := &execution{done: done}
			defer func() {
				if p := recover(); p != nil {
					x.count(false) // as gobreaker's Execute counts a panic
					panic(p)
				}
			}()
			resp, err = next(ctx, req)
			if err != nil {
				x.count(succeeded(err))
				return nil, err
			}
			call, ok := resp.(*bridge.Call)
			if !ok || call == nil || call.Events == nil {
				x.count(true)
				return resp, nil
			}
			// Never ranged, or ranged after the context ended: the
			// client's doing, a success.
			x.stop = context.AfterFunc(ctx, func() { x.count(true) })
			// In place, not a copy: a call may add to its Dropped while it streams.
			call.Events = x.watch(ctx, call.Events)
			return call, nil
		}
	}
}

// ErrBreakerOpen marks the error of a call an open breaker refused: it
// never reached the upstream.
var ErrBreakerOpen = errors.New("circuit breaker open")

func (b *Breaker) openError() error {
	return breakerErr{&bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: b.retryAfter(),
		Message: "upstream " + b.cb.Name() + " is failing; its circuit breaker is open"}}
}

type breakerErr struct{ err *bridge.Error }

func (e breakerErr) Error() string   { return e.err.Error() }
func (e breakerErr) Unwrap() []error { return []error{e.err, ErrBreakerOpen} }

// execution is one call the breaker admitted: its outcome is counted once,
// by whichever comes first of the stream's end and the context's.
type execution struct {
	done    func(success bool)
	counted atomic.Bool
	stop    func() bool // stops the context's count
}

func (x *execution) count(success bool) {
	if x.counted.CompareAndSwap(false, true) {
		x.done(success)
	}
}

// errNoFinal is the outcome of a stream that ended without a final event.
var errNoFinal = bridge.Errorf(bridge.CodeUpstream, "upstream stream ended without a final event")

// watch passes events through and counts their outcome once the range
// ends, however it ends; the next call sees the breaker's new state.
func (x *execution) watch(ctx context.Context, events bridge.Stream) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		var outcome error = errNoFinal
		defer func() {
			x.stop()
			x.count(ctx.Err() != nil || succeeded(outcome))
		}()
		for ev, err := range events {
			if err != nil {
				outcome = streamFault(err)
				yield(ev, err)
				return
			}
			if ev.Kind == bridge.KindFinal {
				// The outcome, even when the consumer stops at it (a
				// fallback that goes on when a stream fails at once).
				outcome = finalFault(ev.Final)
				yield(ev, nil)
				return
			}
			if !yield(ev, nil) {
				outcome = nil // the consumer stopped
				return
			}
		}
	}
}

// streamFault is the breaker's view of an error that ended a stream: a
// bridge error as it is (succeeded judges it), anything else (a read
// error of a cut connection) an upstream fault.
func streamFault(err error) error {
	if errors.As(err, new(*bridge.Error)) {
		return err
	}
	return bridge.Errorf(bridge.CodeUpstream, "upstream stream failed")
}

// finalFault is the breaker's view of a final event: an upstream fault when
// it failed with a Retryable error (an upstream error event: overloaded,
// server error), else none.
func finalFault(f *bridge.Final) error {
	if f != nil && f.Status == bridge.StatusFailed && f.Error != nil && f.Error.Retryable() {
		return f.Error
	}
	return nil
}

func (b *Breaker) retryAfter() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := b.openFor - b.now().Sub(b.openedAt)
	if left < time.Second {
		left = time.Second
	}
	return left
}

// RetryConfig configures retries before the first byte. The zero value
// means 2 retries, backoff from 200 ms doubling up to 5 s, with jitter.
type RetryConfig struct {
	Max      int           `yaml:"max"`
	Base     time.Duration `yaml:"base"`
	MaxDelay time.Duration `yaml:"max_delay"`
	// Disabled turns retries off.
	Disabled bool `yaml:"disabled"`
}

// Retry is go-kit middleware that retries an upstream call that failed
// before answering: connect errors always (nothing reached the upstream),
// and 429, 502, 503 and 504 when idempotent (the upstream may have acted on
// the request; a model call has no effect worth protecting, an agent's
// message may). It waits with capped exponential backoff and full jitter,
// or the upstream's Retry-After when longer (and not over MaxDelay*4). A
// stream that has begun is never retried: Open has returned by then.
func Retry(cfg RetryConfig, idempotent bool) endpoint.Middleware {
	if cfg.Disabled {
		return func(next endpoint.Endpoint) endpoint.Endpoint { return next }
	}
	if cfg.Max == 0 {
		cfg.Max = 2
	}
	if cfg.Base <= 0 {
		cfg.Base = 200 * time.Millisecond
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 5 * time.Second
	}
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		return func(ctx context.Context, req any) (any, error) {
			var err error
			for attempt := 0; ; attempt++ {
				var resp any
				resp, err = next(ctx, req)
				if err == nil || attempt >= cfg.Max || !retryable(err, idempotent) || ctx.Err() != nil {
					return resp, err
				}
				delay := min(cfg.Base<<attempt, cfg.MaxDelay)
				delay = time.Duration(rand.Int64N(int64(delay)) + 1)
				var be *bridge.Error
				if errors.As(err, &be) && be.RetryAfter > delay {
					if be.RetryAfter > 4*cfg.MaxDelay {
						return resp, err // the upstream asks for longer than a client waits
					}
					delay = be.RetryAfter
				}
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return nil, err
				}
			}
		}
	}
}

// ErrConnect marks an error of a call that never reached the upstream.
// Clients wrap their connect errors with it (see ConnectError).
var ErrConnect = errors.New("upstream connect failed")

type connectErr struct{ err *bridge.Error }

func (c connectErr) Error() string   { return c.err.Error() }
func (c connectErr) Unwrap() []error { return []error{c.err, ErrConnect} }

// ConnectError is the error a client returns when it could not reach the
// upstream: a bridge error (CodeUpstream, or CodeTimeout for a connect
// timeout) that Retry knows is always safe to retry.
func ConnectError(name string, timeout bool) error {
	e := bridge.Errorf(bridge.CodeUpstream, "upstream %s is unreachable", name)
	if timeout {
		e = bridge.Errorf(bridge.CodeTimeout, "upstream %s did not answer in time", name)
	}
	return connectErr{e}
}

func retryable(err error, idempotent bool) bool {
	if errors.Is(err, ErrConnect) {
		return true
	}
	if !idempotent {
		return false
	}
	var be *bridge.Error
	if !errors.As(err, &be) {
		return false
	}
	switch be.Status {
	case 429, 502, 503, 504:
		return true
	}
	return false
}

package outbound

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-kit/kit/circuitbreaker"
	"github.com/go-kit/kit/endpoint"
	"github.com/sony/gobreaker"

	"github.com/bridge-dev/bridge/bridge"
)

// BreakerConfig configures one upstream's circuit breaker. The zero value
// means the defaults: open after 5 consecutive upstream failures, stay open
// 30 s, then let one trial request through (half-open).
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
	cb      *gobreaker.CircuitBreaker
	openFor time.Duration
	now     func() time.Time

	mu       sync.Mutex
	openedAt time.Time
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
	b.cb = gobreaker.NewCircuitBreaker(gobreaker.Settings{
		Name:        name,
		MaxRequests: cfg.HalfOpenMax,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= cfg.Failures },
		IsSuccessful: func(err error) bool {
			var be *bridge.Error
			return err == nil || !errors.As(err, &be) || !be.Retryable()
		},
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

// State is the breaker's current state.
func (b *Breaker) State() gobreaker.State { return b.cb.State() }

// Middleware is the breaker as go-kit endpoint middleware.
func (b *Breaker) Middleware() endpoint.Middleware {
	inner := circuitbreaker.Gobreaker(b.cb)
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		ep := inner(next)
		return func(ctx context.Context, req any) (any, error) {
			resp, err := ep(ctx, req)
			if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
				return nil, &bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: b.retryAfter(),
					Message: "upstream " + b.cb.Name() + " is failing; its circuit breaker is open"}
			}
			return resp, err
		}
	}
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

package outbound_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sony/gobreaker"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
)

// flaky fails its first n Opens with err, then answers.
type flaky struct {
	bridgetest.Upstream
	n   int
	err error
}

func (f *flaky) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	call, _ := f.Upstream.Open(ctx, req)
	if len(f.Requests()) <= f.n {
		return nil, f.err
	}
	return call, nil
}

func open(t *testing.T, u bridge.Upstream) error {
	t.Helper()
	_, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
	return err
}

func TestBreakerOpensOnUpstreamFaultsOnly(t *testing.T) {
	up := &flaky{n: 1000, err: &bridge.Error{Code: bridge.CodeUpstream, Status: 500, Message: "boom"}}
	b := outbound.NewBreaker("u", outbound.BreakerConfig{OpenFor: 100 * time.Millisecond}, nil, nil)
	u := outbound.Wrap(up, b.Middleware())

	for i := range 5 {
		if err := open(t, u); bridge.ErrorCode(err) != bridge.CodeUpstream {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	err := open(t, u)
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeUnavailable || be.RetryAfter <= 0 {
		t.Fatalf("with the breaker open: %v, want unavailable with Retry-After", err)
	}
	if got := len(up.Requests()); got != 5 {
		t.Errorf("the open breaker let a call through: %d upstream calls", got)
	}

	// Half-open after OpenFor: one trial; a success closes the breaker.
	time.Sleep(150 * time.Millisecond)
	up.n, up.Events = 0, bridgetest.TextEvents("back")
	call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
	if err != nil {
		t.Fatalf("trial call: %v", err)
	}
	drain(call) // the trial ends with its stream
	if b.State() != gobreaker.StateClosed {
		t.Errorf("state after a good trial = %s", b.State())
	}

	// A client's bad request never trips it.
	up2 := &flaky{n: 1000, err: &bridge.Error{Code: bridge.CodeInvalid, Status: 400, Message: "bad"}}
	b2 := outbound.NewBreaker("u2", outbound.BreakerConfig{Failures: 2}, nil, nil)
	u2 := outbound.Wrap(up2, b2.Middleware())
	for range 10 {
		if err := open(t, u2); bridge.ErrorCode(err) != bridge.CodeInvalid {
			t.Fatalf("bad request: %v", err)
		}
	}
	if b2.State() != gobreaker.StateClosed {
		t.Errorf("client errors opened the breaker")
	}
}

func TestRetry(t *testing.T) {
	fast := outbound.RetryConfig{Max: 3, Base: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	tests := []struct {
		name       string
		err        error
		fails      int
		idempotent bool
		wantCalls  int
		wantErr    bool
	}{
		{"503 then ok", &bridge.Error{Code: bridge.CodeUnavailable, Status: 503}, 2, true, 3, false},
		{"429 with retry-after", &bridge.Error{Code: bridge.CodeRateLimited, Status: 429, RetryAfter: 10 * time.Millisecond}, 1, true, 2, false},
		{"429 asking too long", &bridge.Error{Code: bridge.CodeRateLimited, Status: 429, RetryAfter: time.Hour}, 1, true, 1, true},
		{"500 is not retried", &bridge.Error{Code: bridge.CodeUpstream, Status: 500}, 1, true, 1, true},
		{"400 is not retried", &bridge.Error{Code: bridge.CodeInvalid, Status: 400}, 1, true, 1, true},
		{"503 not idempotent", &bridge.Error{Code: bridge.CodeUnavailable, Status: 503}, 1, false, 1, true},
		{"connect error not idempotent", outbound.ConnectError("u", false), 1, false, 2, false},
		{"gives up after max", &bridge.Error{Code: bridge.CodeUnavailable, Status: 503}, 10, true, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &flaky{n: tt.fails, err: tt.err}
			err := open(t, outbound.Wrap(up, outbound.Retry(fast, tt.idempotent)))
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
			if got := len(up.Requests()); got != tt.wantCalls {
				t.Errorf("%d calls, want %d", got, tt.wantCalls)
			}
		})
	}
}

// blockingBody never returns from Read until closed.
type blockingBody struct{ done chan struct{} }

func (b *blockingBody) Read([]byte) (int, error) { <-b.done; return 0, io.EOF }
func (b *blockingBody) Close() error {
	select {
	case <-b.done:
	default:
		close(b.done)
	}
	return nil
}

func TestIdleBody(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	body := &blockingBody{done: make(chan struct{})}
	rc := outbound.IdleBody(body, 20*time.Millisecond, func(err error) { cancel(err); body.Close() })
	_, _ = rc.Read(make([]byte, 1))
	if !errors.Is(context.Cause(ctx), outbound.ErrIdle) {
		t.Fatalf("cause = %v, want the idle timeout", context.Cause(ctx))
	}
	err := outbound.StreamError(ctx, "u", 20*time.Millisecond, io.ErrUnexpectedEOF)
	if bridge.ErrorCode(err) != bridge.CodeTimeout {
		t.Errorf("StreamError = %v, want a timeout", err)
	}
	rc.Close()
}

func TestDoErrorConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := outbound.NewHTTPClient(outbound.Timeouts{Connect: time.Second}, nil)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr, nil)
	_, err = c.Do(req)
	if err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	got := outbound.DoError(t.Context(), "u", err)
	if !errors.Is(got, outbound.ErrConnect) || bridge.ErrorCode(got) != bridge.CodeUpstream {
		t.Errorf("DoError = %v, want a connect error", got)
	}
	if be := bridge.AsError(got); be.Message != "upstream u is unreachable" {
		t.Errorf("message %q leaks details or is unclear", be.Message)
	}
}

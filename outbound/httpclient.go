package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// Timeouts bound an upstream call. Zero fields mean the defaults: connect
// 10 s, first byte (response headers) 60 s, idle gap between stream chunks
// 120 s. The whole run's bound is the engine's.
type Timeouts struct {
	Connect   time.Duration `yaml:"connect"`
	FirstByte time.Duration `yaml:"first_byte"`
	Idle      time.Duration `yaml:"idle"`
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = 10 * time.Second
	}
	if t.FirstByte <= 0 {
		t.FirstByte = 60 * time.Second
	}
	if t.Idle <= 0 {
		t.Idle = 120 * time.Second
	}
	return t
}

// NewHTTPClient returns a client for streaming upstream calls: connect and
// first-byte timeouts on the transport, no overall timeout (streams are
// long; the idle timeout is IdleBody's), and the redirect rule
// CheckRedirect, which keeps credentials off other origins. rt, when set,
// wraps the transport (tracing).
func NewHTTPClient(t Timeouts, rt func(http.RoundTripper) http.RoundTripper) *http.Client {
	t = t.withDefaults()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = t.Connect
	tr.ResponseHeaderTimeout = t.FirstByte
	tr.MaxIdleConnsPerHost = 256
	var r http.RoundTripper = tr
	if rt != nil {
		r = rt(r)
	}
	return &http.Client{Transport: r, CheckRedirect: CheckRedirect}
}

// DoError turns the error of http.Client.Do into a bridge error without
// the Go error text, which can name internal addresses: a dial failure is a
// ConnectError (safe to retry), a timeout before the response headers is
// CodeTimeout naming the first byte, anything else CodeUpstream.
func DoError(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return ConnectError(name, op.Timeout())
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return bridge.Errorf(bridge.CodeTimeout, "upstream %s sent no response in time (first byte timeout)", name)
	}
	return bridge.Errorf(bridge.CodeUpstream, "upstream %s failed before answering", name)
}

// ErrIdle is the cause a call's context is cancelled with when its stream
// went quiet for longer than the idle timeout.
var ErrIdle = errors.New("idle timeout")

// IdleBody wraps a streaming response body: when no Read returns within
// idle, it calls cancel (the call's context cancel, with ErrIdle as the
// cause), which unblocks the read. Closing the body stops the watchdog.
func IdleBody(body io.ReadCloser, idle time.Duration, cancel context.CancelCauseFunc) io.ReadCloser {
	if idle <= 0 {
		return body
	}
	b := &idleBody{ReadCloser: body}
	b.t = time.AfterFunc(idle, func() { cancel(ErrIdle) })
	b.idle = idle
	return b
}

type idleBody struct {
	io.ReadCloser
	idle time.Duration
	t    *time.Timer
	once sync.Once
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.t.Reset(b.idle)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.once.Do(func() { b.t.Stop() })
	return b.ReadCloser.Close()
}

// StreamError maps an error met while reading an upstream stream: the
// idle timeout and the run's own cancellation keep their meaning; the rest
// is returned as is.
func StreamError(ctx context.Context, name string, idle time.Duration, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if errors.Is(context.Cause(ctx), ErrIdle) {
		return bridge.Errorf(bridge.CodeTimeout, "upstream %s sent nothing for %s (idle timeout)", name, idle)
	}
	return context.Cause(ctx)
}

// String names the timeouts, for logs.
func (t Timeouts) String() string {
	t = t.withDefaults()
	return fmt.Sprintf("connect=%s first_byte=%s idle=%s", t.Connect, t.FirstByte, t.Idle)
}

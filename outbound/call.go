package outbound

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// DefaultIdle is the idle gap between a stream's events that a client
// allows when its Timeouts name none.
const DefaultIdle = 120 * time.Second

// Defaults returns what a client's zero HTTPClient and Timeouts mean: the
// client NewHTTPClient makes for t, and t with its idle gap DefaultIdle.
func Defaults(hc *http.Client, t Timeouts) (*http.Client, Timeouts) {
	if hc == nil {
		hc = NewHTTPClient(t, nil)
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdle
	}
	return hc, t
}

// DefaultMaxErrorBody bounds how much of an upstream's error body a
// Sender reads when it names no bound.
const DefaultMaxErrorBody = 1 << 20

// Sender sends an upstream client's HTTP requests and turns a failure into
// the bridge error its dialect's mapping makes of it.
type Sender struct {
	// Name is the upstream's configured name, for the errors.
	Name   string
	Client *http.Client
	// DecodeError is the dialect's error decoder (mapping's DecodeError).
	DecodeError func(status int, body []byte) *bridge.Error
	// Note, when set, sees every answer, an error too (DiscardSignal.Note).
	Note func(*http.Response)
	// MaxErrorBody bounds the error body read (default DefaultMaxErrorBody).
	MaxErrorBody int64
}

// Do sends req. An upstream that cannot be reached is DoError's error; a
// non-2xx answer is DecodeError's of its status and body, with the
// Retry-After it gave, and its body is closed.
func (s *Sender) Do(req *http.Request) (*http.Response, error) {
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, DoError(req.Context(), s.Name, err)
	}
	if s.Note != nil {
		s.Note(resp)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	limit := s.MaxErrorBody
	if limit <= 0 {
		limit = DefaultMaxErrorBody
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	resp.Body.Close()
	e := s.DecodeError(resp.StatusCode, b)
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		e.RetryAfter = ParseRetryAfter(ra, time.Now())
	}
	return nil, e
}

// Events is a call's stream: decode's events of body, whose reads wait at
// most idle (IdleBody, which cancels the call's context with the cause);
// a read error is StreamError's. Ranging over it once closes body and
// cancels the call.
func Events(ctx context.Context, name string, idle time.Duration, body io.ReadCloser, cancel context.CancelCauseFunc, decode func(io.Reader) bridge.Stream) bridge.Stream {
	rc := IdleBody(body, idle, cancel)
	return func(yield func(bridge.Event, error) bool) {
		defer cancel(nil)
		defer rc.Close()
		for ev, err := range decode(rc) {
			if err != nil {
				err = StreamError(ctx, name, idle, err)
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

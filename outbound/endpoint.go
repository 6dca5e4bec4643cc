package outbound

import (
	"context"
	"fmt"

	"github.com/go-kit/kit/endpoint"

	"github.com/bridge-dev/bridge/bridge"
)

// Endpoint adapts an upstream to a go-kit endpoint: the request is a
// *bridge.Request, the response a *bridge.Call. An error means the upstream
// did not answer, and is what a circuit breaker counts.
func Endpoint(u bridge.Upstream) endpoint.Endpoint {
	return func(ctx context.Context, req any) (any, error) {
		r, ok := req.(*bridge.Request)
		if !ok {
			return nil, fmt.Errorf("outbound: request is %T, not *bridge.Request", req)
		}
		return u.Open(ctx, r)
	}
}

// Wrap returns u with its Open going through the middlewares, outermost
// first: Wrap(u, tracing, logging, breaker).
func Wrap(u bridge.Upstream, mw ...endpoint.Middleware) bridge.Upstream {
	if len(mw) == 0 {
		return u
	}
	return WrapAdmit(u, nil, mw...)
}

// WrapAdmit is Wrap whose upstream is a bridge.Admitter that asks admit
// (nil admits every call): WrapAdmit(u, breaker.Admit, ..., breaker.Middleware()),
// so the engine learns that the breaker is open before it records a run.
func WrapAdmit(u bridge.Upstream, admit func() error, mw ...endpoint.Middleware) bridge.Upstream {
	return WrapResume(u, admit, nil, mw...)
}

// WrapResume is WrapAdmit whose wrapper also wraps u's bridge.Resumer
// (found by bridge.ResumerOf) in resume: a call resumed after a restart
// takes no endpoint, yet must pass through what every call passes
// through, the credentials scrub (Credentials.Resumer).
func WrapResume(u bridge.Upstream, admit func() error, resume func(bridge.Resumer) bridge.Resumer, mw ...endpoint.Middleware) bridge.Upstream {
	ep := Endpoint(u)
	if len(mw) > 0 {
		ep = endpoint.Chain(mw[0], mw[1:]...)(ep)
	}
	w := &wrapped{Upstream: u, ep: ep, admit: admit, resume: resume}
	if m, ok := u.(bridge.ToolCallMinter); ok {
		return &wrappedMinter{wrapped: w, m: m}
	}
	return w
}

type wrapped struct {
	bridge.Upstream
	ep     endpoint.Endpoint
	admit  func() error
	resume func(bridge.Resumer) bridge.Resumer
}

// WrapResumer implements bridge.ResumeWrapper.
func (w *wrapped) WrapResumer(r bridge.Resumer) bridge.Resumer {
	if w.resume == nil {
		return r
	}
	return w.resume(r)
}

// Admit implements bridge.Admitter.
func (w *wrapped) Admit() error {
	if w.admit == nil {
		return nil
	}
	return w.admit()
}

// Unwrap returns the upstream under the middleware, for optional methods
// an upstream may have beyond bridge.Upstream (count_tokens, say).
func (w *wrapped) Unwrap() bridge.Upstream { return w.Upstream }

func (w *wrapped) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	resp, err := w.ep(ctx, req)
	if err != nil {
		return nil, err
	}
	call, ok := resp.(*bridge.Call)
	if !ok {
		return nil, fmt.Errorf("outbound: response is %T, not *bridge.Call", resp)
	}
	return call, nil
}

type wrappedMinter struct {
	*wrapped
	m bridge.ToolCallMinter
}

func (w *wrappedMinter) MintToolCallID(local string) string { return w.m.MintToolCallID(local) }

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
//
// The wrapper is a bridge.ResumeWrapper too: a call resumed after a
// restart (u's bridge.Resumer, found by bridge.ResumerOf) goes through the
// same middlewares as an Open, its request the run's Request: the client
// span, the retries, the breaker and the credentials scrub.
func WrapAdmit(u bridge.Upstream, admit func() error, mw ...endpoint.Middleware) bridge.Upstream {
	chain := func(ep endpoint.Endpoint) endpoint.Endpoint {
		if len(mw) == 0 {
			return ep
		}
		return endpoint.Chain(mw[0], mw[1:]...)(ep)
	}
	w := &wrapped{Upstream: u, ep: chain(Endpoint(u)), resumeEP: chain(resumeEndpoint), admit: admit}
	if m, ok := u.(bridge.ToolCallMinter); ok {
		return &wrappedMinter{wrapped: w, m: m}
	}
	return w
}

type wrapped struct {
	bridge.Upstream
	ep       endpoint.Endpoint
	resumeEP endpoint.Endpoint // the middlewares around resumeEndpoint
	admit    func() error
}

// resumeArgs are what a resumed call takes beside its Request, carried
// to resumeEndpoint in the context (the middlewares see the Request, as
// for an Open).
type resumeArgs struct {
	r      bridge.Resumer
	run    *bridge.Run
	events []bridge.Event
}

type resumeKey struct{}

// resumeEndpoint resumes the call the context's resumeArgs name.
func resumeEndpoint(ctx context.Context, req any) (any, error) {
	a, _ := ctx.Value(resumeKey{}).(*resumeArgs)
	r, ok := req.(*bridge.Request)
	if a == nil || !ok {
		return nil, fmt.Errorf("outbound: a resume endpoint called with %T and no resume", req)
	}
	return a.r.Resume(ctx, r, a.run, a.events)
}

// WrapResumer implements bridge.ResumeWrapper: r's Resume goes through the
// middlewares, as Open does.
func (w *wrapped) WrapResumer(r bridge.Resumer) bridge.Resumer {
	return bridge.ResumeFunc(func(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
		return callEndpoint(context.WithValue(ctx, resumeKey{}, &resumeArgs{r: r, run: run, events: events}), w.resumeEP, req)
	})
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
	return callEndpoint(ctx, w.ep, req)
}

// callEndpoint sends req through ep, an endpoint made by Endpoint (and
// wrapped), and returns its call.
func callEndpoint(ctx context.Context, ep endpoint.Endpoint, req *bridge.Request) (*bridge.Call, error) {
	resp, err := ep(ctx, req)
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

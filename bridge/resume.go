package bridge

import (
	"time"

	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// Resumer is implemented by upstreams that can pick up a run whose call a
// crashed process lost (an A2A agent's task, resubscribed after the last
// upstream event id the bridge recorded). After a restart the engine
// resumes such runs instead of closing them as interrupted.
type Resumer interface {
	// Resume reattaches to the upstream work of run. events are the run's
	// committed events, oldest first: each carries the upstream's own
	// event id in UpstreamID, and run.UpstreamRunID names the upstream's
	// run (task) when it is known. req holds the transcript the run was
	// sent (the session's stored messages). The call's events continue the
	// run right after events: nothing of them again, nothing missing. An
	// error means the upstream cannot resume the run.
	Resume(ctx context.Context, req *Request, run *Run, events []Event) (*Call, error)
}

// ResumeWrapper is implemented by a wrapper whose middleware must see a
// resumed call as it sees Open's (the client span, the retries, the
// breaker, the credentials scrub: a resume's errors quote keys as an
// Open's do).
type ResumeWrapper interface {
	WrapResumer(Resumer) Resumer
}

// ResumerOf returns up's Resumer, looking through wrappers (an upstream
// with an Unwrap() Upstream method, such as outbound.Wrap's); each
// wrapper passed on the way that is a ResumeWrapper wraps the Resumer
// found beneath it.
func ResumerOf(up Upstream) (Resumer, bool) {
	var wraps []ResumeWrapper
	for up != nil {
		if r, ok := up.(Resumer); ok {
			for i := len(wraps) - 1; i >= 0; i-- {
				r = wraps[i].WrapResumer(r)
			}
			return r, true
		}
		if w, ok := up.(ResumeWrapper); ok {
			wraps = append(wraps, w)
		}
		u, ok := up.(interface{ Unwrap() Upstream })
		if !ok {
			return nil, false
		}
		up = u.Unwrap()
	}
	return nil, false
}

// ResumerFor returns the Resumer for a run that went to the upstream named
// name, over the route up its model takes now: up's own (ResumerOf) when
// it is that upstream; when up is a group of upstreams (a primary and its
// fallbacks, with a ResumerFor method of its own), the group's for the
// member that served the run.
func ResumerFor(up Upstream, name string) (Resumer, bool) {
	if g, ok := up.(interface {
		ResumerFor(name string) (Resumer, bool)
	}); ok {
		return g.ResumerFor(name)
	}
	if up.Name() != name {
		return nil, false
	}
	return ResumerOf(up)
}

// ResumeFunc is a function as a Resumer.
type ResumeFunc func(ctx context.Context, req *Request, run *Run, events []Event) (*Call, error)

// Resume implements Resumer.
func (f ResumeFunc) Resume(ctx context.Context, req *Request, run *Run, events []Event) (*Call, error) {
	return f(ctx, req, run, events)
}

// reasonResumeFailed prefixes the reason of a run whose resume failed.
const reasonResumeFailed = "bridge restarted; the upstream could not resume the run"

// Resume goes on with a run that a crashed process left running, over its
// upstream's Resumer: the run's committed events stay its past, and the
// resumed call's events follow them, committed and fanned out as any run's
// (the run is live again: Subscribe follows it, Abort cancels it). It
// returns once the run is live. The run's model must still route to the
// upstream it went to (or to a group of upstreams it is one of: a primary
// and its fallbacks), one that implements Resumer; otherwise, or when
// the run cannot be made live, Resume returns an error and leaves the run
// as it is stored. A resume the upstream refuses ends the run interrupted,
// with a reason that says so.
func (e *Engine) Resume(ctx context.Context, run *Run) error {
	if run.Status != StatusRunning {
		return Errorf(CodeConflict, "run %s is %s, not running", run.ID, run.Status)
	}
	up, err := e.route(run.Model)
	if err != nil {
		return err
	}
	res, ok := ResumerFor(up, run.Upstream)
	if !ok {
		return Errorf(CodeConflict, "run %s went to upstream %s, which cannot resume it over the route its model %q takes now (%s)",
			run.ID, run.Upstream, run.Model, up.Name())
	}
	prev, err := e.store.Events(ctx, run.ID, 0, 0)
	if err != nil {
		return fmt.Errorf("load events run=%s: %w", run.ID, err)
	}
	transcript, err := e.transcript(ctx, run.Principal, run.SessionID)
	if err != nil {
		return err
	}
	r := *run
	r.Dropped = append([]string(nil), run.Dropped...)
	// The step being resumed began after the run's last final (a run
	// continued with tool results has one per earlier step).
	cur := 0
	for i, ev := range prev {
		if ev.Kind == KindFinal {
			cur = i + 1
		}
	}
	asm := &assembler{}
	var steers []Message
	for i := cur; i < len(prev); i++ {
		ev := &prev[i]
		asm.add(ev)
		switch ev.Kind {
		case KindUsage:
			r.Usage.Merge(ev.Usage)
		case KindMessageStarted:
			if ev.ResponseID != "" && r.UpstreamRunID == "" {
				r.UpstreamRunID = ev.ResponseID
			}
		case KindUserMessage:
			if ev.Message != nil {
				steers = append(steers, *ev.Message) // committed, not yet in the transcript
			}
		}
	}

	runCtx, cancel, span := e.runContext(ctx, &r)
	span.AddEvent(eventResume, trace.WithAttributes(attrResumeReason.String("restart"), attrAfterSeq.Int64(lastSeq(prev, r.LastSeq))))

	lr := newLiveRun(&r, prev, e.liveEvents, cancel)
	lr.timing = e.timing(ctx, r.ID)
	for _, ev := range prev[cur:] {
		if carriesContent(ev.Kind) {
			lr.contentSeen = true
			break
		}
	}
	for _, m := range steers {
		lr.addSteer(m) // the steps after the resumed one take them, as they would have
	}
	if err := e.register(lr, 0); err != nil {
		cancel(err)
		span.End()
		return err
	}
	req := &Request{Model: r.Model, SessionID: upstreamSession(r.Principal, r.SessionID), Messages: transcript, Inbound: r.Inbound, Render: r.Render, Detached: true}
	snapshot := r
	rt := &runTrace{span: span, start: e.now().UTC()}
	first := func() (*Final, *Message) {
		call, err := e.resumeCall(runCtx, res, req, &snapshot, prev)
		prev = nil // the window has the newest; the rest is the store's
		if err != nil {
			if runCtx.Err() == nil {
				be := AsError(err)
				e.log.Warn("resume run upstream", "run", r.ID, "upstream", up.Name(), "err", err)
				return &Final{Status: StatusInterrupted, Reason: reasonResumeFailed + ": " + be.Message}, asm.message(r.ID, e.now().UTC())
			}
			call = nil
		}
		return e.follow(runCtx, lr, up, rt, asm, func() (*Call, error) {
			if call == nil {
				return nil, err
			}
			return call, nil
		})
	}
	e.log.Info("resuming run upstream", "run", r.ID, "upstream", up.Name(), "after_seq", lastSeq(prev, r.LastSeq))
	e.launch(runCtx, span, lr, up, req, rt, first)
	return nil
}

// A resume the upstream could not answer for now (unreachable, a 5xx, a
// 429, its circuit breaker open: bridge.Error.Retryable) is tried again,
// after its RetryAfter or a backoff from resumeBackoff doubling to
// resumeBackoffMax, until Config.ResumeRetry has passed since the first
// try. A bridge and the agent behind it often restart together: the
// agent's first seconds refuse, and a burst of resumes opens its breaker,
// which then refuses the rest at once; ending those runs interrupted at
// the first refusal lost runs the agent still had. A refusal that says
// the upstream cannot resume the run (a task not found: not retryable)
// ends it at once, as does a stop of the run meanwhile.
var (
	resumeBackoff    = 250 * time.Millisecond
	resumeBackoffMax = 10 * time.Second
	resumeRetry      = DefaultResumeRetry // tests shorten it
)

// DefaultResumeRetry is Config.ResumeRetry's default.
const DefaultResumeRetry = 30 * time.Second

// resumeCall is res.Resume, tried again while it fails retryably (above).
func (e *Engine) resumeCall(ctx context.Context, res Resumer, req *Request, run *Run, prev []Event) (*Call, error) {
	give := time.Now().Add(e.resumeRetry)
	backoff := resumeBackoff
	for try := 1; ; try++ {
		call, err := res.Resume(ctx, req, run, prev)
		if err == nil || ctx.Err() != nil {
			return call, err
		}
		be := AsError(err)
		wait := max(be.RetryAfter, backoff)
		if !be.Retryable() || time.Now().Add(wait).After(give) {
			return nil, err
		}
		e.log.Warn("resume run upstream: retrying", "run", run.ID, "try", try, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		backoff = min(2*backoff, resumeBackoffMax)
	}
}

// lastSeq is the seq of the last of evs, or def when there are none.
func lastSeq(evs []Event, def int64) int64 {
	if n := len(evs); n > 0 {
		return evs[n-1].Seq
	}
	return def
}

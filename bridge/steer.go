package bridge

// Steering: user input added to a running run.

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Steer adds user input to a running run. The message joins the transcript
// at the run's next model call: if the model is answering, the run goes on
// with one more call once it has finished; if the run stops for the
// client's tool results, after those results. A run that is not running,
// or has already decided its outcome, answers CodeConflict: the steer is
// reported back, never silently lost.
func (e *Engine) Steer(ctx context.Context, runID string, msg Message) error {
	lr := e.liveRun(runID)
	if lr == nil || lr.run.Principal != PrincipalFromContext(ctx) {
		r, err := e.Run(ctx, runID)
		if err != nil {
			return err
		}
		if r.Status == StatusRunning { // another process drives it
			if _, ok, err := e.relay(ctx, Command{Kind: CommandSteer, Run: runID, Message: &msg}); ok {
				return err
			}
		}
		return Errorf(CodeConflict, "run %s is not running", runID)
	}
	if msg.Role == "" {
		msg.Role = RoleUser
	}
	msg.RunID = runID
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		for _, l := range originLinks(ctx, lr.run.TraceID) {
			sp.AddLink(l)
		}
		sp.AddEvent(eventSteer, trace.WithAttributes(attrRunID.String(runID)))
	}
	if msg.Created.IsZero() {
		msg.Created = e.now().UTC()
	}
	if call := lr.currentCall(); call != nil && call.Steer != nil && !lr.finishing() {
		err := e.passSteer(ctx, lr, call, msg)
		if ErrorCode(err) != CodeUnsupported {
			return err
		}
		// The upstream's run takes no input while it works (an ADK
		// invocation): the steer waits for the run's next upstream call,
		// and the run says it did not join the upstream's turn.
		lr.update(func(r *Run) { r.Dropped = appendUnique(r.Dropped, DroppedSteerNextCall) })
	}
	lr.emitMu.Lock()
	if !lr.addSteer(msg) {
		lr.emitMu.Unlock()
		return Errorf(CodeConflict, "run %s is finishing and takes no more input", runID)
	}
	// The steer is in the log before it is acknowledged.
	p := &pending{lr: lr, ev: Event{Kind: KindUserMessage, Source: SourceBridge, Message: &msg}, done: make(chan error, 1)}
	e.enqueue(lr, p)
	lr.emitMu.Unlock()
	select {
	case err := <-p.done:
		if err != nil {
			return Errorf(CodeInternal, "the steer could not be stored")
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// DroppedSteerNextCall is recorded on a run whose upstream took a steer
// not into the turn it was working on but as the input of one more call
// after it (an agent upstream that takes no input while it works).
const DroppedSteerNextCall = "steer:next_upstream_call"

// passSteer hands a steer to the upstream's own run; once the upstream
// took it, it is logged (a user_message event) and joins the transcript
// when the run ends, with no model call of the bridge's.
func (e *Engine) passSteer(ctx context.Context, lr *liveRun, call *Call, msg Message) error {
	if err := call.Steer(ctx, msg); err != nil {
		if ErrorCode(err) == CodeConflict {
			return Errorf(CodeConflict, "run %s takes no more input upstream", lr.run.ID)
		}
		return err
	}
	lr.emitMu.Lock()
	if !lr.addPassed(msg) {
		lr.emitMu.Unlock()
		return Errorf(CodeConflict, "run %s ended as the upstream took the steer; it may not have been heard", lr.run.ID)
	}
	p := &pending{lr: lr, ev: Event{Kind: KindUserMessage, Source: SourceBridge, Message: &msg}, done: make(chan error, 1)}
	e.enqueue(lr, p)
	lr.emitMu.Unlock()
	select {
	case err := <-p.done:
		if err != nil {
			return Errorf(CodeInternal, "the steer could not be stored")
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// park keeps steers of a run waiting for the client's tool results.
func (e *Engine) park(runID string, msgs []Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.parked == nil {
		e.parked = make(map[string][]Message)
	}
	e.parked[runID] = append(e.parked[runID], msgs...)
}

func (e *Engine) takeParked(runID string) []Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.parked[runID]
	delete(e.parked, runID)
	return m
}

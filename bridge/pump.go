package bridge

// The pump: a run's upstream calls, its events queued for the writer, its end.

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"slices"

	"go.opentelemetry.io/otel/trace"
)

// maxSteps bounds the model calls one pump makes for a run (steering can
// add calls; a run never loops forever).
const maxSteps = 16

// pump drives a run's upstream calls and commits their events: one call,
// and one more each time a steer arrived while the model was answering.
// first, when set, makes the first step instead of a new call (a resumed
// run's call).
func (e *Engine) pump(ctx context.Context, lr *liveRun, up Upstream, req *Request, rt *runTrace, first func() (*Final, *Message)) {
	defer func() {
		if lr.stopAfter != nil {
			lr.stopAfter()
		}
		lr.cancel(nil)
	}()
	// Steers that waited while the run was input_required follow the
	// client's tool results.
	if queued := e.takeParked(lr.run.ID); len(queued) > 0 {
		req.Messages = append(slices.Clip(req.Messages), queued...)
		rt.steer(len(queued))
	}
	var msgs []Message // transcript messages the run adds, committed with its final
	for n := 1; ; n++ {
		var (
			final *Final
			msg   *Message
		)
		if n == 1 && first != nil {
			final, msg = first()
		} else {
			final, msg = e.step(ctx, lr, up, req, rt)
			req.DiscardUpstream = "" // the upstream has discarded them
		}
		if handedOver(ctx, final) && !lr.abandoned() {
			e.handOver(lr)
			return
		}
		if msg != nil {
			msgs = append(msgs, *msg)
		}
		cont := final.Status == StatusCompleted && n < maxSteps
		steers := lr.nextSteers(cont)
		if !cont || len(steers) == 0 {
			if len(steers) > 0 && final.Status == StatusInputRequired {
				e.park(lr.run.ID, steers) // they join after the client's tool results
			} else {
				msgs = append(msgs, steers...)
			}
			e.finish(lr, final, msgs, rt)
			return
		}
		// The model finished while the user said more: one more call, same run.
		if msg != nil {
			req.Messages = append(slices.Clip(req.Messages), *msg)
		}
		req.Messages = append(slices.Clip(req.Messages), steers...)
		msgs = append(msgs, steers...)
		rt.steer(len(steers))
	}
}

// step makes one upstream call and emits its events. It returns the step's
// outcome and the assistant message it produced.
func (e *Engine) step(ctx context.Context, lr *liveRun, up Upstream, req *Request, rt *runTrace) (*Final, *Message) {
	e.mapToolCallIDs(ctx, up, req)
	return e.follow(ctx, lr, up, rt, &assembler{}, func() (*Call, error) { return up.Open(ctx, req) })
}

// follow opens an upstream call (a new one, or a resumed one) and emits its
// events; asm holds what the step said before (a resumed step's committed
// events).
func (e *Engine) follow(ctx context.Context, lr *liveRun, up Upstream, rt *runTrace, asm *assembler, open func() (*Call, error)) (*Final, *Message) {
	runID := lr.run.ID
	var final *Final
	call, err := open()
	if err == nil {
		lr.setCall(call)
		defer lr.setCall(nil)
		lr.update(func(r *Run) {
			r.Dropped = appendUnique(r.Dropped, call.Dropped...)
			if call.Upstream != "" && call.Upstream != r.Upstream {
				r.Upstream, r.Outbound = call.Upstream, cmp.Or(call.Dialect, r.Outbound)
				// Stored with the call's first event: a restart resumes
				// the run over the upstream that serves it (a fallback).
				lr.storeRun = true
			}
		})
		for ev, serr := range call.Events {
			if serr != nil {
				err = serr
				break
			}
			if lr.failed() {
				err = Errorf(CodeInternal, "store failure")
				break
			}
			switch ev.Kind {
			case KindFinal:
				if ev.Final != nil {
					f := *ev.Final
					final = &f
					lr.update(func(r *Run) { r.Usage.Merge(f.Usage) })
				}
				continue
			case KindUsage:
				lr.update(func(r *Run) { r.Usage.Merge(ev.Usage) })
			case KindMessageStarted:
				if ev.ResponseID != "" {
					lr.update(func(r *Run) {
						if r.UpstreamRunID == "" {
							r.UpstreamRunID = ev.ResponseID
						}
					})
				}
			case KindToolCallDone:
				if ev.ToolCall != nil && ev.ToolCall.ID != "" {
					e.recordToolCallID(ctx, up, ev.ToolCall.ID)
				}
			}
			rt.token(e, ev.Kind)
			asm.add(&ev)
			if ev.Source == "" {
				ev.Source = SourceModel
			}
			if !e.emit(lr, ev) {
				err = Errorf(CodeInternal, "store failure")
				break
			}
		}
		// A call may learn while it streams what it could not carry (a
		// resumed A2A task that lost text).
		lr.update(func(r *Run) { r.Dropped = appendUnique(r.Dropped, call.Dropped...) })
	}
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errHandover) && (err != nil || final == nil):
		// Close hands the run over (handover.go): the pump ends here,
		// with no final event.
		rt.span.AddEvent(eventHandover)
		final = &Final{Status: StatusInterrupted, Reason: errHandover.Error()}
	case err != nil && ctx.Err() != nil:
		cause := context.Cause(ctx)
		rt.span.AddEvent(eventCancel, trace.WithAttributes(attrCause.String(cause.Error())))
		switch {
		case errors.Is(cause, errRunTimeout):
			final = &Final{Status: StatusFailed, Reason: "run timeout",
				Error: Errorf(CodeTimeout, "the run took longer than %s (run timeout)", e.runTimeout)}
		case errors.Is(cause, errShutdown):
			final = &Final{Status: StatusInterrupted, Reason: cause.Error()}
		default:
			final = &Final{Status: StatusCancelled, Reason: cause.Error()}
		}
	case err != nil:
		be := AsError(err)
		if be.Code == CodeInternal && !errors.As(err, new(*Error)) {
			e.log.Error("upstream call failed", "run", runID, "upstream", up.Name(), "err", err)
		}
		final = &Final{Status: StatusFailed, Reason: be.Message, Error: be}
	case final == nil:
		final = &Final{Status: StatusFailed, Reason: "upstream stream ended without a final event",
			Error: Errorf(CodeUpstream, "upstream stream ended without a final event")}
	}
	return final, asm.message(runID, e.now().UTC())
}

// finish commits the run's final event, its row and the assistant's
// transcript message in one batch, then retires the live run.
func (e *Engine) finish(lr *liveRun, f *Final, msgs []Message, rt *runTrace) {
	if lr.abandoned() {
		// The run was never recorded (Start failed): nothing to commit.
		e.unregister(lr)
		lr.close()
		return
	}
	msgs = append(msgs, lr.takePassed()...) // steers an agent upstream took
	p := &pending{lr: lr, ev: Event{Kind: KindFinal, Source: SourceBridge, Final: f}, done: make(chan error, 1), msgs: msgs}
	now := e.now().UTC()
	p.ev.Time = now
	lr.emitMu.Lock()
	var run Run
	lr.update(func(r *Run) {
		if !r.Usage.IsZero() {
			u := r.Usage
			f.Usage = &u
		}
		r.Status, r.StopReason, r.Reason = f.Status, f.StopReason, f.Reason
		f.Dropped = append([]string(nil), r.Dropped...)
		r.Finished = now
		r.LastSeq = lr.seq + 1
		run = *r
	})
	p.run = &run
	e.enqueue(lr, p)
	lr.emitMu.Unlock()
	if err := <-p.done; err != nil {
		e.log.Error("commit final event", "run", run.ID, "err", err)
	}
	e.unregister(lr)
	lr.close()
	rt.end(&run)
	e.log.Info("run ended", "run", run.ID, "session", run.SessionID, "status", run.Status,
		"stop_reason", run.StopReason, "inbound", run.Inbound, "outbound", run.Outbound, "trace_id", run.TraceID,
		"ttft_ms", rt.ttftMillis(), "duration_ms", millis(run.Finished.Sub(rt.start)))
}

// emit assigns ev its seq and queues it for the writer. It reports false
// once the run's commits have failed.
func (e *Engine) emit(lr *liveRun, ev Event) bool {
	if lr.failed() {
		return false
	}
	p := pendings.Get().(*pending) // the writer puts it back: not ours after enqueue
	p.lr, p.ev, p.pooled = lr, ev, true
	if lr.storeRun {
		lr.storeRun = false
		p.run = lr.snapshot() // the run's row, with what it learnt, in the event's commit
	}
	urgent := false
	if !lr.contentSeen && carriesContent(ev.Kind) {
		// The first thing a client sees of the run: commit it without
		// waiting for a batch of the deltas queued behind it.
		lr.contentSeen, p.urgent, urgent = true, true, true
	} else if !lr.contentSeen && ev.Kind == KindMessageStarted {
		p.hold = true
	}
	lr.emitMu.Lock()
	e.enqueue(lr, p)
	lr.emitMu.Unlock()
	if urgent {
		// Let the writer commit it now rather than once this pump has
		// decoded whatever else the upstream sent.
		runtime.Gosched()
	}
	return true
}

// carriesContent reports whether an event of kind k is one a client shows.
func carriesContent(k Kind) bool {
	switch k {
	case KindTextDelta, KindReasoningDelta, KindToolCallStarted, KindArtifact, KindToolResult, KindError:
		return true
	}
	return false
}

// enqueue gives p's event the run's next seq and queues it. The caller
// holds lr.emitMu.
func (e *Engine) enqueue(lr *liveRun, p *pending) {
	lr.seq++
	p.ev.RunID, p.ev.Seq = lr.run.ID, lr.seq
	if p.ev.Time.IsZero() {
		p.ev.Time = e.now().UTC()
	}
	e.queue <- p
}

// mapToolCallIDs rewrites the tool-call ids of req's transcript into the ids
// this upstream knows them by.
func (e *Engine) mapToolCallIDs(ctx context.Context, up Upstream, req *Request) {
	minter, _ := up.(ToolCallMinter)
	req.Messages = RemapToolCallIDs(req.Messages, func(local string) string {
		r, err := e.store.RemoteID(ctx, IDToolCall, up.Name(), local)
		if err != nil {
			r = local
			if minter != nil {
				r = minter.MintToolCallID(local)
				_ = e.store.PutID(ctx, IDMapping{Kind: IDToolCall, Scope: up.Name(), Local: local, Remote: r})
			}
		}
		return r
	})
}

// recordToolCallID keeps the id an upstream minted, so later turns send it
// back the id it knows. The client sees the same id.
func (e *Engine) recordToolCallID(ctx context.Context, up Upstream, id string) {
	if err := e.store.PutID(ctx, IDMapping{Kind: IDToolCall, Scope: up.Name(), Local: id, Remote: id}); err != nil {
		e.log.Warn("record tool call id", "upstream", up.Name(), "id", id, "err", err)
	}
}

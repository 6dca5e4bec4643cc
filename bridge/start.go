package bridge

// Starting a run: its session, what of the request is new, the run it continues.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Start records a new run for req (or continues the run waiting for the
// tool results req carries) and starts calling the upstream. The returned
// Run is a snapshot; follow its events with Subscribe, or start with
// StartFollowing.
//
// Unless req.Detached, the run is cancelled when ctx is done before the run
// ends (a plain stateless request whose client went away).
func (e *Engine) Start(ctx context.Context, req *Request) (*Run, error) {
	run, _, err := e.start(ctx, req)
	return run, err
}

// StartFollowing starts a run as Start does, and follows its events after
// the returned snapshot's as Subscribe(sctx, run.ID, run.LastSeq) would,
// but from the live run Start made rather than by the run's id: a run that
// ends before the caller looks for it (a fast upstream's whole answer) is
// still read from memory, not from the store.
func (e *Engine) StartFollowing(ctx, sctx context.Context, req *Request) (*Run, Stream, error) {
	run, lr, err := e.start(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if acc := acceptedFromContext(sctx); acc != nil && acc.Started != nil {
		acc.Started(lr.snapshot()) // as Subscribe does
	}
	return run, lr.follow(sctx, e.store, run.LastSeq), nil
}

func (e *Engine) start(ctx context.Context, req *Request) (*Run, *liveRun, error) {
	if len(req.Messages) == 0 {
		return nil, nil, Errorf(CodeInvalid, "no input messages")
	}
	if len(req.Messages) > e.maxMsgs {
		return nil, nil, Errorf(CodeTooLarge, "%d messages is more than the %d allowed", len(req.Messages), e.maxMsgs)
	}
	if len(req.Tools) > e.maxTools {
		return nil, nil, Errorf(CodeTooLarge, "%d tools is more than the %d allowed", len(req.Tools), e.maxTools)
	}
	acc := acceptedFromContext(ctx)
	if acc != nil { // accepted only: the run's output goes to the session's channel
		r := *req
		req = &r
		req.Detached = true
		if req.ClientRunID == "" {
			req.ClientRunID = acc.ClientRunID
		}
	}
	up, err := e.route(req.Model)
	if err != nil {
		return nil, nil, err
	}
	if a, ok := up.(Admitter); ok {
		if err := a.Admit(); err != nil {
			return nil, nil, err
		}
	}
	principal := PrincipalFromContext(ctx)
	now := e.now().UTC()

	sessionID := req.SessionID
	if req.ReplaceFrom != "" {
		target, err := e.replaceTarget(ctx, req.ReplaceFrom, sessionID)
		if err != nil {
			return nil, nil, err
		}
		sessionID = target.SessionID
	}
	sess, fresh, err := e.session(ctx, sessionID, principal, now)
	if err != nil {
		return nil, nil, err
	}
	var stored []Message // a fresh session has no transcript to read
	if !fresh {
		if stored, err = e.transcript(ctx, principal, sess.ID); err != nil {
			return nil, nil, err
		}
	}
	input, transcript, discard, err := e.splitInput(ctx, sess.ID, stored, req)
	if err != nil {
		return nil, nil, err
	}
	if len(input) == 0 {
		return nil, nil, Errorf(CodeInvalid, "the request adds nothing to session %s", sess.ID)
	}
	var discardUpstream string
	if discard != nil {
		if discardUpstream, err = e.supersede(ctx, sess.ID, discard, up, now); err != nil {
			return nil, nil, err
		}
		stored = nil // no continuation: the input runs as a new run
	}

	var prev []Event // a continued run's newest events, for its window
	run := e.continuation(ctx, stored, input, sess.ID)
	continued := run != nil
	if continued {
		prev, err = e.store.Events(ctx, run.ID, max(0, run.LastSeq-int64(e.liveEvents)), 0)
		if err != nil {
			return nil, nil, fmt.Errorf("load events run=%s: %w", run.ID, err)
		}
		run.Status, run.StopReason, run.Reason, run.Finished = StatusRunning, "", "", time.Time{}
	} else {
		run = &Run{
			ID:          NewID("run_"),
			SessionID:   sess.ID,
			ClientRunID: req.ClientRunID,
			Principal:   principal,
			Inbound:     req.Inbound,
			Model:       req.Model,
			Status:      StatusRunning,
			Render:      req.Render,
			Created:     now,
		}
	}
	run.Outbound, run.Upstream = up.Dialect(), up.Name()
	run.Dropped = appendUnique(run.Dropped, req.Dropped...)
	for i := range input {
		input[i].RunID = run.ID
		if input[i].Created.IsZero() {
			input[i].Created = now
		}
	}

	runCtx, cancel, span := e.runContext(ctx, run)
	if continued {
		span.AddEvent(eventResume, trace.WithAttributes(attrResumeReason.String("tool_results"), attrAfterSeq.Int64(run.LastSeq)))
	}

	elsewhere := 0
	if !continued { // a continued run was admitted when it began
		elsewhere = e.runningElsewhere(ctx, principal)
	}
	lr := newLiveRun(run, prev, e.liveEvents, cancel)
	lr.timing = e.timing(ctx, run.ID)
	if err := e.register(lr, elsewhere); err != nil {
		cancel(err)
		span.End()
		return nil, nil, err
	}
	// A new run (and a fresh session) is created by the writer, in the same
	// transaction as its run_started event and its input, at once: it is
	// committed while the pump's request is on its way and the upstream
	// works, so the run's first content is committed alone (one page, not
	// a new run's dozen). Start returns once the creation is committed.
	// (Holding it until the upstream answered, to commit it with the
	// first content, put it on the first byte's path: measured paired,
	// the bridge added 7-12% more to the first byte.)
	var created *pending
	if !continued {
		created = &pending{lr: lr, ev: Event{Kind: KindRunStarted, Source: SourceBridge},
			msgs: input, done: make(chan error, 1)}
		newRun := *run
		created.newRun = &newRun
		if fresh {
			created.newSession = sess
		}
		lr.emitMu.Lock()
		e.enqueue(lr, created)
		lr.emitMu.Unlock()
	} else {
		err = e.store.Commit(ctx, &Batch{Runs: []*Run{run}, Messages: input})
	}
	snapshot := *run
	if !req.Detached {
		stop := context.AfterFunc(ctx, func() {
			if e.draining.Load() {
				return // the server cut the client (Drain): Close hands the run over or interrupts it
			}
			e.cancelUpstream(context.WithoutCancel(ctx), lr) // the upstream's own work stops too: it saves tokens
			cancel(errClientGone)
		})
		lr.stopAfter = stop
	}
	upReq := *req
	upReq.ReplaceFrom, upReq.DiscardUpstream = "", discardUpstream
	upReq.Messages = transcript
	if len(req.Instructions) > 0 {
		upReq.Messages = append(slices.Clone(req.Instructions), transcript...)
	}
	upReq.SessionID = upstreamSession(principal, sess.ID)
	e.launch(runCtx, span, lr, up, &upReq, &runTrace{span: span, start: now}, nil)
	if created != nil {
		err = <-created.done
	}
	if err != nil {
		lr.abandon()
		cancel(err)
		e.log.Error("create run", "run", run.ID, "err", err)
		if ErrorCode(err) == CodeConflict {
			return nil, nil, err
		}
		// A full disk or a locked database: the run cannot be recorded, so
		// it does not start.
		return nil, nil, &Error{Code: CodeUnavailable, RetryAfter: 5 * time.Second,
			Message: "the bridge cannot record new runs right now (storage unavailable)"}
	}
	e.wakeSession(upstreamSession(snapshot.Principal, snapshot.SessionID))
	if acc != nil && acc.Started != nil {
		acc.Started(&snapshot)
	}
	return &snapshot, lr, nil
}

// session finds the request's session of principal, or makes one: a
// session the client named is created now (another request may race to
// create it); one the bridge names is fresh, and the writer creates it
// with the run. Another principal's session of the id is not this one:
// the id names a session of principal's own.
func (e *Engine) session(ctx context.Context, id, principal string, now time.Time) (s *Session, fresh bool, err error) {
	if id == "" {
		return &Session{ID: NewID("sess_"), Principal: principal, Created: now, Updated: now}, true, nil
	}
	s, err = e.store.Session(ctx, principal, id)
	switch {
	case err == nil:
		return s, false, nil
	case ErrorCode(err) != CodeNotFound:
		return nil, false, err
	}
	s = &Session{ID: id, Principal: principal, Created: now, Updated: now}
	if err := e.store.CreateSession(ctx, s); err != nil {
		if ErrorCode(err) == CodeConflict { // created concurrently
			return e.session(ctx, id, principal, now)
		}
		return nil, false, err
	}
	return s, false, nil
}

// transcript loads the whole stored transcript of principal's session.
func (e *Engine) transcript(ctx context.Context, principal, session string) ([]Message, error) {
	msgs, _, err := e.store.Messages(ctx, principal, session, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("load transcript session=%s: %w", session, err)
	}
	return msgs, nil
}

// continuation returns the run that input continues: the session's last run,
// waiting in input_required for tool results, when input is exactly one
// result for each call it made. Otherwise nil: a new run.
func (e *Engine) continuation(ctx context.Context, stored, input []Message, session string) *Run {
	if len(stored) == 0 || len(input) == 0 {
		return nil
	}
	last := stored[len(stored)-1]
	if last.Role != RoleAssistant || len(last.ToolCalls) == 0 || last.RunID == "" {
		return nil
	}
	want := make(map[string]bool, len(last.ToolCalls))
	for _, c := range last.ToolCalls {
		want[c.ID] = true
	}
	if len(input) != len(want) {
		return nil
	}
	for _, m := range input {
		if m.Role != RoleTool || !want[m.ToolCallID] {
			return nil
		}
		delete(want, m.ToolCallID)
	}
	r, err := e.store.Run(ctx, last.RunID)
	if err != nil || r.Status != StatusInputRequired || r.SessionID != session {
		return nil
	}
	return r
}

// runContext is the context a run's pump works under: apart from the
// request's (a run outlives the request that started it, and is cancelled
// through cancel, with a cause), bounded by the run timeout, carrying the
// run's id and its "run" span, linked to the trace of ctx. A run without a
// trace id takes the span's.
func (e *Engine) runContext(ctx context.Context, run *Run) (context.Context, context.CancelCauseFunc, trace.Span) {
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	if e.runTimeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, e.runTimeout, errRunTimeout)
		parent := cancel
		cancel = func(err error) { parent(err); stop() }
	}
	runCtx = withRunID(runCtx, run.ID)
	runCtx, span := e.tracer.Start(runCtx, "run", trace.WithAttributes(runSpanAttributes(run)...),
		trace.WithLinks(originLinks(ctx, run.TraceID)...))
	if sc := span.SpanContext(); sc.HasTraceID() && run.TraceID == "" {
		run.TraceID = sc.TraceID().String()
	}
	return runCtx, cancel, span
}

// launch starts a registered run's pump; its span ends with it, and Close
// waits for it.
func (e *Engine) launch(ctx context.Context, span trace.Span, lr *liveRun, up Upstream, req *Request, rt *runTrace, first func() (*Final, *Message)) {
	e.runs.Add(1)
	go func() {
		defer e.runs.Done()
		defer span.End()
		e.pump(ctx, lr, up, req, rt, first)
	}()
}

package bridge

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Upstream is a client for one configured upstream. Open sends req and
// returns the upstream's events; it returns an error only when the upstream
// did not answer (connect failure, non-2xx status), so the engine can report
// it before the first byte. Ranging over the call's Events once, to its end
// or not, releases the connection. Implementations are safe for concurrent
// use.
type Upstream interface {
	// Name is the upstream's configured name (the scope of its id maps).
	Name() string
	// Dialect is the wire protocol it speaks.
	Dialect() string
	Open(ctx context.Context, req *Request) (*Call, error)
}

// Call is an opened upstream call.
type Call struct {
	Events Stream
	// Dropped lists what the outbound encoder could not express. A call
	// may add to it while its events stream (the engine reads it again
	// once they end), never from another goroutine.
	Dropped []string
	// Cancel, when set, is the upstream's own cancel of this call (A2A
	// tasks/cancel): Abort calls it before it cancels the call's context,
	// so the upstream stops its work too, not only the connection.
	Cancel func(ctx context.Context) error
	// Steer, when set, passes user input to the upstream's own run (a
	// Hermes agent's steer): Engine.Steer hands the message to it instead
	// of queueing it for one more model call. CodeConflict from it means
	// the upstream run takes no more input.
	Steer func(ctx context.Context, msg Message) error
	// Upstream and Dialect, when set, name the upstream that serves the
	// call when it is not the one the route gave (a fallback): the run
	// records them as its Upstream and Outbound.
	Upstream, Dialect string
}

// ToolCallMinter is implemented by upstreams that reject tool-call ids
// minted elsewhere: the engine asks it for an id of its own for each local
// id it has not mapped yet, and keeps the mapping.
type ToolCallMinter interface {
	MintToolCallID(local string) string
}

// Admitter is implemented by upstreams that can tell, before a call, that
// they would refuse it at once (a circuit breaker that is open): Start asks
// before it records anything, and returns the error, so a request refused
// without reaching an upstream leaves no run behind (and costs no commit).
// A nil error admits the call, which may still fail.
type Admitter interface {
	Admit() error
}

// Config configures an Engine. The zero value of each field means its
// default; Store and Route are required.
type Config struct {
	Store Store
	// Route picks the upstream for a model name.
	Route func(model string) (Upstream, error)

	Tracer trace.Tracer
	Logger *slog.Logger
	Now    func() time.Time

	// MaxBatch bounds the events committed in one transaction (default 512).
	MaxBatch int
	// QueueSize bounds the events waiting for the writer (default 8192); a
	// full queue slows the runs that produce events, never drops any.
	QueueSize int

	// RunTimeout bounds a whole run; one that takes longer fails with
	// CodeTimeout. 0 means no bound.
	RunTimeout time.Duration

	// MaxRunsPerPrincipal bounds the runs one principal has going at once
	// (default 64); one more is refused with CodeRateLimited.
	MaxRunsPerPrincipal int
	// MaxMessages and MaxTools bound a request (defaults 10,000 and 512).
	MaxMessages int
	MaxTools    int
}

// Engine runs turns: it resolves sessions, calls upstreams, commits every
// event to the Store and fans committed events out to subscribers. All
// methods are safe for concurrent use. Close stops it.
type Engine struct {
	store  Store
	route  func(string) (Upstream, error)
	tracer trace.Tracer
	log    *slog.Logger
	now    func() time.Time

	maxBatch   int
	queue      chan *pending
	runTimeout time.Duration
	maxRuns    int
	maxMsgs    int
	maxTools   int

	mu      sync.Mutex
	live    map[string]*liveRun
	parked  map[string][]Message // steers waiting for a run's tool results
	closing bool
	runs    sync.WaitGroup // pump goroutines

	writerDone chan struct{}
}

// New starts an engine and its writer goroutine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Route == nil {
		return nil, errors.New("bridge: Config.Store and Config.Route are required")
	}
	e := &Engine{
		store:      cfg.Store,
		route:      cfg.Route,
		tracer:     cfg.Tracer,
		log:        cfg.Logger,
		now:        cfg.Now,
		maxBatch:   cfg.MaxBatch,
		runTimeout: cfg.RunTimeout,
		maxRuns:    cmp.Or(cfg.MaxRunsPerPrincipal, 64),
		maxMsgs:    cmp.Or(cfg.MaxMessages, 10_000),
		maxTools:   cmp.Or(cfg.MaxTools, 512),
		live:       make(map[string]*liveRun),
		writerDone: make(chan struct{}),
	}
	if e.tracer == nil {
		e.tracer = noop.NewTracerProvider().Tracer("bridge")
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.maxBatch <= 0 {
		e.maxBatch = 512
	}
	q := cfg.QueueSize
	if q <= 0 {
		q = 8192
	}
	e.queue = make(chan *pending, q)
	go e.writer()
	return e, nil
}

// NewID returns a fresh opaque id with the given prefix: 48 bits of the
// time in milliseconds, then 72 random bits, in a base32 alphabet that sorts
// like the bytes. Ids made later sort later, so new rows of the store's
// indexes land together at the end instead of all over the tree.
func NewID(prefix string) string {
	var b [15]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return prefix + idEncoding.EncodeToString(b[:])
}

var idEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// errAborted and errClientGone are the causes a run's context is cancelled with.
var (
	errAborted    = errors.New("cancelled by the client")
	errClientGone = errors.New("client disconnected")
	errShutdown   = errors.New("bridge shutting down")
	errRunTimeout = errors.New("run timeout")
)

// Start records a new run for req (or continues the run waiting for the
// tool results req carries) and starts calling the upstream. The returned
// Run is a snapshot; follow its events with Subscribe.
//
// Unless req.Detached, the run is cancelled when ctx is done before the run
// ends (a plain stateless request whose client went away).
func (e *Engine) Start(ctx context.Context, req *Request) (*Run, error) {
	if len(req.Messages) == 0 {
		return nil, Errorf(CodeInvalid, "no input messages")
	}
	if len(req.Messages) > e.maxMsgs {
		return nil, Errorf(CodeTooLarge, "%d messages is more than the %d allowed", len(req.Messages), e.maxMsgs)
	}
	if len(req.Tools) > e.maxTools {
		return nil, Errorf(CodeTooLarge, "%d tools is more than the %d allowed", len(req.Tools), e.maxTools)
	}
	up, err := e.route(req.Model)
	if err != nil {
		return nil, err
	}
	if a, ok := up.(Admitter); ok {
		if err := a.Admit(); err != nil {
			return nil, err
		}
	}
	principal := PrincipalFromContext(ctx)
	now := e.now().UTC()

	sessionID := req.SessionID
	if req.ReplaceFrom != "" {
		target, err := e.replaceTarget(ctx, req.ReplaceFrom, sessionID)
		if err != nil {
			return nil, err
		}
		sessionID = target.SessionID
	}
	sess, fresh, err := e.session(ctx, sessionID, principal, now)
	if err != nil {
		return nil, err
	}
	var stored []Message // a fresh session has no transcript to read
	if !fresh {
		if stored, err = e.transcript(ctx, sess.ID); err != nil {
			return nil, err
		}
	}
	input, transcript, discard, err := e.splitInput(ctx, sess.ID, stored, req)
	if err != nil {
		return nil, err
	}
	if len(input) == 0 {
		return nil, Errorf(CodeInvalid, "the request adds nothing to session %s", sess.ID)
	}
	if discard != nil {
		if err := e.supersede(ctx, sess.ID, discard, up, now); err != nil {
			return nil, err
		}
		stored = nil // no continuation: the input runs as a new run
	}

	var prev []Event
	run := e.continuation(ctx, stored, input, sess.ID)
	if run != nil {
		prev, err = e.store.Events(ctx, run.ID, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("load events run=%s: %w", run.ID, err)
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
	if prev != nil {
		span.AddEvent(eventResume, trace.WithAttributes(attrResumeReason.String("tool_results"), attrAfterSeq.Int64(run.LastSeq)))
	}
	if sc := span.SpanContext(); sc.HasTraceID() && run.TraceID == "" {
		run.TraceID = sc.TraceID().String()
	}

	lr := newLiveRun(run, prev, cancel)
	if err := e.register(lr); err != nil {
		cancel(err)
		span.End()
		return nil, err
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
	if prev == nil {
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
			e.cancelUpstream(context.WithoutCancel(ctx), lr) // the upstream's own work stops too: it saves tokens
			cancel(errClientGone)
		})
		lr.stopAfter = stop
	}
	upReq := *req
	upReq.Messages = transcript
	if len(req.Instructions) > 0 {
		upReq.Messages = append(slices.Clone(req.Instructions), transcript...)
	}
	upReq.SessionID = sess.ID
	e.runs.Add(1)
	go func() {
		defer e.runs.Done()
		defer span.End()
		e.pump(runCtx, lr, up, &upReq, &runTrace{span: span, start: now}, nil)
	}()
	if created != nil {
		err = <-created.done
	}
	if err != nil {
		lr.abandon()
		cancel(err)
		e.log.Error("create run", "run", run.ID, "err", err)
		if ErrorCode(err) == CodeConflict {
			return nil, err
		}
		// A full disk or a locked database: the run cannot be recorded, so
		// it does not start.
		return nil, &Error{Code: CodeUnavailable, RetryAfter: 5 * time.Second,
			Message: "the bridge cannot record new runs right now (storage unavailable)"}
	}
	return &snapshot, nil
}

// session finds the request's session, or makes one: a session the client
// named is created now (another request may race to create it); one the
// bridge names is fresh, and the writer creates it with the run.
func (e *Engine) session(ctx context.Context, id, principal string, now time.Time) (s *Session, fresh bool, err error) {
	if id == "" {
		return &Session{ID: NewID("sess_"), Principal: principal, Created: now, Updated: now}, true, nil
	}
	s, err = e.store.Session(ctx, id)
	switch {
	case err == nil:
		if s.Principal != principal {
			return nil, false, Errorf(CodeNotFound, "session %q not found", id)
		}
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

// transcript loads a session's whole stored transcript.
func (e *Engine) transcript(ctx context.Context, session string) ([]Message, error) {
	msgs, _, err := e.store.Messages(ctx, session, 0, 0)
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

func (e *Engine) register(lr *liveRun) error {
	e.mu.Lock()
	if old, ok := e.live[lr.run.ID]; ok && old.finishing() {
		// The run's outcome is decided and its final on its way: a client
		// continuing it at once (tool results right after the final event)
		// waits the moment it takes to retire, rather than get a conflict.
		e.mu.Unlock()
		select {
		case <-old.closed:
		case <-time.After(2 * time.Second):
		}
		e.mu.Lock()
	}
	defer e.mu.Unlock()
	if e.closing {
		return Errorf(CodeUnavailable, "the bridge is shutting down")
	}
	if _, ok := e.live[lr.run.ID]; ok {
		return Errorf(CodeConflict, "run %s is already running", lr.run.ID)
	}
	n := 0
	for _, o := range e.live {
		if o.run.Principal == lr.run.Principal {
			n++
		}
	}
	if n >= e.maxRuns {
		return &Error{Code: CodeRateLimited, RetryAfter: time.Second,
			Message: fmt.Sprintf("%d runs are already going; wait for one to end", n)}
	}
	e.live[lr.run.ID] = lr
	return nil
}

func (e *Engine) unregister(lr *liveRun) {
	e.mu.Lock()
	if e.live[lr.run.ID] == lr {
		delete(e.live, lr.run.ID)
	}
	e.mu.Unlock()
}

func (e *Engine) liveRun(id string) *liveRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live[id]
}

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

// Steer adds user input to a running run. The message joins the transcript
// at the run's next model call: if the model is answering, the run goes on
// with one more call once it has finished; if the run stops for the
// client's tool results, after those results. A run that is not running,
// or has already decided its outcome, answers CodeConflict: the steer is
// reported back, never silently lost.
func (e *Engine) Steer(ctx context.Context, runID string, msg Message) error {
	lr := e.liveRun(runID)
	if lr == nil || lr.run.Principal != PrincipalFromContext(ctx) {
		if _, err := e.Run(ctx, runID); err != nil {
			return err
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

// Subscribe returns the committed events of run with seq > after, then
// follows the live ones until the run ends: no gap, no duplicate at the
// seam. The stream ends after the final event, or with ctx's error.
func (e *Engine) Subscribe(ctx context.Context, runID string, after int64) (*Run, Stream, error) {
	principal := PrincipalFromContext(ctx)
	if lr := e.liveRun(runID); lr != nil {
		if lr.run.Principal != principal {
			return nil, nil, Errorf(CodeNotFound, "run %q not found", runID)
		}
		return lr.snapshot(), lr.follow(ctx, after), nil
	}
	run, err := e.store.Run(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	if run.Principal != principal {
		return nil, nil, Errorf(CodeNotFound, "run %q not found", runID)
	}
	if lr := e.liveRun(runID); lr != nil { // continued since the lookup
		return lr.snapshot(), lr.follow(ctx, after), nil
	}
	if w, ok := e.store.(Watcher); ok && run.Status == StatusRunning {
		return run, e.followStored(ctx, w, runID, after), nil // another replica drives it
	}
	return run, e.replay(ctx, runID, after), nil
}

// replay reads a finished run's events from the store, a page at a time.
func (e *Engine) replay(ctx context.Context, runID string, after int64) Stream {
	const page = 512
	return func(yield func(Event, error) bool) {
		for {
			evs, err := e.store.Events(ctx, runID, after, page)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
				after = ev.Seq
			}
			if len(evs) < page {
				return
			}
		}
	}
}

// Run returns a snapshot of a run, live or stored.
func (e *Engine) Run(ctx context.Context, id string) (*Run, error) {
	principal := PrincipalFromContext(ctx)
	if lr := e.liveRun(id); lr != nil && lr.run.Principal == principal {
		return lr.snapshot(), nil
	}
	r, err := e.store.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Principal != principal {
		return nil, Errorf(CodeNotFound, "run %q not found", id)
	}
	return r, nil
}

// upstreamCancelTimeout bounds the upstream's own cancel in Abort.
const upstreamCancelTimeout = 5 * time.Second

// cancelUpstream runs the current upstream call's own cancel, if it has
// one, bounded by upstreamCancelTimeout.
func (e *Engine) cancelUpstream(ctx context.Context, lr *liveRun) {
	call := lr.currentCall()
	if call == nil || call.Cancel == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, upstreamCancelTimeout)
	defer cancel()
	if err := call.Cancel(cctx); err != nil {
		e.log.Warn("upstream cancel", "run", lr.run.ID, "err", err)
	}
}

// RunMessages returns the transcript messages of a run committed so far,
// oldest first: its input from the start, the assistant's messages and the
// steers once the run has ended.
func (e *Engine) RunMessages(ctx context.Context, runID string) ([]Message, error) {
	if _, err := e.Run(ctx, runID); err != nil {
		return nil, err
	}
	return e.store.RunMessages(ctx, runID)
}

// Abort cancels a running run; its final event says cancelled. It returns
// once the final event is committed (or ctx is done). Aborting a run that
// has ended is a no-op.
func (e *Engine) Abort(ctx context.Context, runID string) (*Run, error) {
	r, err := e.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	lr := e.liveRun(runID)
	if lr == nil {
		return r, nil
	}
	e.cancelUpstream(ctx, lr)
	lr.cancel(errAborted)
	select {
	case <-lr.closed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.Run(ctx, runID)
}

// RecordDropped adds to a run's list of what its translations dropped (the
// inbound encoder learns it while rendering).
func (e *Engine) RecordDropped(ctx context.Context, runID string, dropped []string) error {
	if len(dropped) == 0 {
		return nil
	}
	r, err := e.store.Run(ctx, runID)
	if err != nil {
		return err
	}
	n := len(r.Dropped)
	r.Dropped = appendUnique(r.Dropped, dropped...)
	if len(r.Dropped) == n {
		return nil
	}
	return e.store.Commit(ctx, &Batch{Runs: []*Run{r}})
}

// History returns a page of a session's transcript with its runs, the
// runs a regenerate or an edit discarded left out. before is a cursor from
// an earlier page ("" for the newest page); limit <= 0 means 100 messages.
// A page ends where a run begins, so it may hold more messages than limit:
// the rest of its oldest run.
func (e *Engine) History(ctx context.Context, sessionID, before string, limit int) (*HistoryPage, error) {
	return e.QueryHistory(ctx, sessionID, HistoryQuery{Before: before, Limit: limit})
}

// HistoryRuns is History counting runs rather than messages: the page
// holds the newest runs runs (<= 0: 20) before the cursor, whole.
func (e *Engine) HistoryRuns(ctx context.Context, sessionID, before string, runs int) (*HistoryPage, error) {
	return e.QueryHistory(ctx, sessionID, HistoryQuery{Before: before, Limit: runs, ByRun: true})
}

// HistoryQuery selects a page of history.
type HistoryQuery struct {
	Before string // a cursor from an earlier page ("" for the newest page)
	// Limit is the page's messages (<= 0: 100), or its runs when ByRun
	// (<= 0: 20).
	Limit int
	ByRun bool
	// Superseded includes the runs a regenerate or an edit discarded, and
	// their messages, where they were (the runs marked Superseded).
	Superseded bool
}

// QueryHistory is History with the options of q.
func (e *Engine) QueryHistory(ctx context.Context, sessionID string, q HistoryQuery) (*HistoryPage, error) {
	if q.Limit <= 0 {
		q.Limit = 100
		if q.ByRun {
			q.Limit = 20
		}
	}
	return e.history(ctx, sessionID, q)
}

// maxHistoryReads bounds the reads History makes when runs end while it
// reads (each run that ends commits its messages: the read is redone).
const maxHistoryReads = 4

func (e *Engine) history(ctx context.Context, sessionID string, q HistoryQuery) (*HistoryPage, error) {
	before := q.Before
	s, err := e.store.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if s.Principal != PrincipalFromContext(ctx) {
		return nil, Errorf(CodeNotFound, "session %q not found", sessionID)
	}
	var pos int64
	if before != "" {
		pos, err = strconv.ParseInt(before, 10, 64)
		if err != nil || pos <= 0 {
			return nil, Errorf(CodeInvalid, "cursor %q is not one this server gave", before)
		}
	}
	// A run's messages are committed with its status (its input when it
	// starts or continues, its answer when it ends): runs read before and
	// after the messages with the same statuses say the messages are those
	// of these runs, and a running run's stored messages end where its
	// current turn begins.
	var (
		msgs []Message
		more bool
		runs []*Run
	)
	for i := 0; ; i++ {
		runs0, err := e.store.ListRuns(ctx, RunFilter{SessionID: sessionID})
		if err != nil {
			return nil, err
		}
		msgs, more, err = e.pageMessages(ctx, sessionID, pos, q.Limit, q.ByRun, q.Superseded)
		if err != nil {
			return nil, err
		}
		runs, err = e.store.ListRuns(ctx, RunFilter{SessionID: sessionID})
		if err != nil {
			return nil, err
		}
		if sameOutcomes(runs0, runs) || i == maxHistoryReads-1 {
			break
		}
	}
	inPage := make(map[string]bool)
	for _, m := range msgs {
		inPage[m.RunID] = true
	}
	page := &HistoryPage{Session: s, HasMore: more}
	if more && len(msgs) > 0 {
		page.Cursor = positionOf(msgs[0].ID)
	}
	for i := len(runs) - 1; i >= 0; i-- { // oldest first
		r := runs[i]
		if !inPage[r.ID] || r.Superseded && !q.Superseded {
			continue
		}
		if r.Status == StatusRunning {
			t, err := e.partialTurn(ctx, r.ID, r.LastSeq)
			if err != nil {
				return nil, err
			}
			if lr := e.liveRun(r.ID); lr != nil {
				if snap := lr.snapshot(); snap.Status == StatusRunning {
					r = snap // its usage and upstream so far
				}
			}
			r.LastSeq = t.cursor()
			if page.Partial == nil {
				page.Partial = make(map[string]*PartialTurn)
			}
			page.Partial[r.ID] = t
			msgs = insertAfterRun(msgs, r.ID, t.Messages)
		}
		page.Runs = append(page.Runs, r)
	}
	page.Messages = msgs
	return page, nil
}

// sameOutcomes reports whether two reads of a session's runs list the same
// runs with the same statuses, and the same last event for those not
// running.
func sameOutcomes(a, b []*Run) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Status != b[i].Status || a[i].Superseded != b[i].Superseded ||
			a[i].Status != StatusRunning && a[i].LastSeq != b[i].LastSeq {
			return false
		}
	}
	return true
}

// insertAfterRun inserts add after the last message of run in msgs.
func insertAfterRun(msgs []Message, run string, add []Message) []Message {
	if len(add) == 0 {
		return msgs
	}
	i := len(msgs)
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].RunID == run {
			i = j + 1
			break
		}
	}
	return slices.Insert(msgs, i, add...)
}

// pageMessages reads the messages of a history page: the newest limit
// messages (or the messages of the newest limit runs, byRun) before
// position pos (0: the newest), oldest first, extended back to the start
// of the oldest run they hold; more says older messages exist. The
// superseded messages are among them when all.
func (e *Engine) pageMessages(ctx context.Context, session string, pos int64, limit int, byRun, all bool) ([]Message, bool, error) {
	messages := e.store.Messages
	if all {
		messages = e.store.AllMessages
	}
	if !byRun {
		msgs, more, err := messages(ctx, session, pos, limit)
		if err != nil || !more || len(msgs) == 0 {
			return msgs, more, err
		}
		return e.wholeRun(ctx, session, msgs)
	}
	var msgs []Message
	more := true
	for cur := pos; more; {
		chunk, m, err := messages(ctx, session, cur, 4*limit+16)
		if err != nil {
			return nil, false, err
		}
		msgs, more = append(chunk, msgs...), m
		if len(chunk) == 0 || countRuns(msgs) > limit {
			break
		}
		cur = position(chunk[0].ID)
	}
	// Keep the newest limit runs: cut after the newest message of any other.
	kept := make(map[string]bool, limit)
	cut := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		id := msgs[i].RunID
		if !kept[id] && len(kept) == limit {
			cut = i + 1
			break
		}
		kept[id] = true
	}
	if cut > 0 {
		return msgs[cut:], true, nil
	}
	if !more || len(msgs) == 0 {
		return msgs, more, nil
	}
	return e.wholeRun(ctx, session, msgs)
}

// countRuns counts the runs msgs belong to.
func countRuns(msgs []Message) int {
	seen := map[string]bool{}
	for i := range msgs {
		seen[msgs[i].RunID] = true
	}
	return len(seen)
}

// wholeRun extends msgs (a page with older messages before it) back to
// the first message of its oldest run, and reports whether older
// messages exist before that.
func (e *Engine) wholeRun(ctx context.Context, session string, msgs []Message) ([]Message, bool, error) {
	first := position(msgs[0].ID)
	if run := msgs[0].RunID; run != "" {
		all, err := e.store.RunMessages(ctx, run)
		if err != nil {
			return nil, false, err
		}
		var earlier []Message
		for _, m := range all {
			if p := position(m.ID); p > 0 && p < first {
				earlier = append(earlier, m)
			}
		}
		if len(earlier) > 0 {
			msgs = append(earlier, msgs...)
			first = position(earlier[0].ID)
		}
	}
	older, _, err := e.store.Messages(ctx, session, first, 1)
	if err != nil {
		return nil, false, err
	}
	return msgs, len(older) > 0, nil
}

// Close stops accepting runs, waits for running ones until ctx is done,
// interrupts the rest, and stops the writer once every event is committed.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		<-e.writerDone
		return nil
	}
	e.closing = true
	e.mu.Unlock()

	idle := make(chan struct{})
	go func() { e.runs.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-ctx.Done():
		e.mu.Lock()
		for _, lr := range e.live {
			lr.cancel(errShutdown)
		}
		e.mu.Unlock()
		<-idle
	}
	close(e.queue)
	<-e.writerDone
	return nil
}

// appendUnique appends the items of add not yet in s.
func appendUnique(s []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(s, a) {
			s = append(s, a)
		}
	}
	return s
}

// Tracing. The engine sees only the OpenTelemetry API: the run span's
// attributes and events are set here, the providers are made elsewhere.

// Run span attribute keys and event names.
const (
	attrRunID        = attribute.Key("bridge.run.id")
	attrSessionID    = attribute.Key("bridge.session.id")
	attrInbound      = attribute.Key("bridge.dialect.inbound")
	attrOutbound     = attribute.Key("bridge.dialect.outbound")
	attrUpstream     = attribute.Key("bridge.upstream.name")
	attrModel        = attribute.Key("gen_ai.request.model")
	attrOutcome      = attribute.Key("bridge.run.outcome")
	attrStopReason   = attribute.Key("bridge.stop_reason")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrResumeReason = attribute.Key("bridge.resume.reason")
	attrAfterSeq     = attribute.Key("bridge.resume.after_seq")
	attrCause        = attribute.Key("bridge.cancel.cause")
	attrSteers       = attribute.Key("bridge.steer.messages")
	attrLink         = attribute.Key("bridge.link")

	eventFirstToken = "first_token"
	eventResume     = "resume"
	eventCancel     = "cancel"
	eventSteer      = "steer"
)

// runTrace is what a run's span and its end log line need. The pump
// goroutine owns it.
type runTrace struct {
	span       trace.Span
	start      time.Time // when Start began
	firstToken time.Time
}

// token notes the run's first token (text, reasoning or a tool call).
func (rt *runTrace) token(e *Engine, k Kind) {
	if !rt.firstToken.IsZero() || (k != KindTextDelta && k != KindReasoningDelta && k != KindToolCallStarted) {
		return
	}
	rt.firstToken = e.now().UTC()
	rt.span.AddEvent(eventFirstToken, trace.WithTimestamp(rt.firstToken))
}

// steer notes steering messages joining the run's next model call.
func (rt *runTrace) steer(n int) {
	rt.span.AddEvent(eventSteer, trace.WithAttributes(attrSteers.Int(n)))
}

// end sets the run's outcome on its span (ended by Start's goroutine).
func (rt *runTrace) end(run *Run) {
	if !rt.span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attrOutcome.String(string(run.Status))}
	if run.StopReason != "" {
		attrs = append(attrs, attrStopReason.String(string(run.StopReason)))
	}
	if run.Usage.InputTokens != nil {
		attrs = append(attrs, attrInputTokens.Int64(*run.Usage.InputTokens))
	}
	if run.Usage.OutputTokens != nil {
		attrs = append(attrs, attrOutputTokens.Int64(*run.Usage.OutputTokens))
	}
	rt.span.SetAttributes(attrs...)
	if run.Status == StatusFailed || run.Status == StatusInterrupted {
		rt.span.SetStatus(codes.Error, run.Reason)
	}
}

// ttftMillis is the time to first token in milliseconds, -1 for none.
func (rt *runTrace) ttftMillis() float64 {
	if rt.firstToken.IsZero() {
		return -1
	}
	return millis(rt.firstToken.Sub(rt.start))
}

// millis renders d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runSpanAttributes are the run span's attributes known at its start.
func runSpanAttributes(run *Run) []attribute.KeyValue {
	return []attribute.KeyValue{
		attrRunID.String(run.ID), attrSessionID.String(run.SessionID),
		attrInbound.String(run.Inbound), attrOutbound.String(run.Outbound),
		attrUpstream.String(run.Upstream), attrModel.String(run.Model),
	}
}

// originLinks links to the trace a run started in (a continued or steered
// run's first request) when ctx is in another trace. Only the trace id is
// stored, so the link names the trace, not a span.
func originLinks(ctx context.Context, traceID string) []trace.Link {
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil || tid == trace.SpanContextFromContext(ctx).TraceID() {
		return nil
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid})
	return []trace.Link{{SpanContext: sc, Attributes: []attribute.KeyValue{attrLink.String("run origin")}}}
}

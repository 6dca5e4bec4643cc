package bridge

// A run's timings that no event records: when its first content was
// committed, and when the response to the request that started it wrote
// its first byte. They ride the run's final row (Store.Commit writes them
// with it); what is learnt after that row was committed (a non-streaming
// answer is written after the run's end) goes in a later batch
// (Batch.Timings), in the writer's next commit or alone when it is idle.

import (
	"context"
	"sync"
	"time"
)

// RunTiming is what Batch.Timings sets of a run: the fields that are not
// zero, where the run's row has none yet.
type RunTiming struct {
	RunID           string
	FirstCommit     time.Time
	FirstClientByte time.Time
}

// FirstByte notes when a response first wrote a byte of its body. The
// inbound side makes one per request, puts it in the request's context
// (WithFirstByte) and marks it at the response's first Write; Start binds
// it to the run the request starts (the first one: a connection carrying
// several runs times only that), whose row keeps the time as
// Run.FirstClientByte. It is safe for concurrent use.
type FirstByte struct {
	mu  sync.Mutex
	at  time.Time
	run *timing
}

type firstByteKey struct{}

// WithFirstByte returns ctx carrying fb, for the run a request starts.
func WithFirstByte(ctx context.Context, fb *FirstByte) context.Context {
	return context.WithValue(ctx, firstByteKey{}, fb)
}

// Mark notes now as the first byte's time; later calls do nothing.
func (fb *FirstByte) Mark(now time.Time) {
	fb.mu.Lock()
	if !fb.at.IsZero() {
		fb.mu.Unlock()
		return
	}
	fb.at = now.UTC()
	t := fb.run
	fb.mu.Unlock()
	t.byteAt(now)
}

// bind makes t the run whose first byte fb times, unless fb times one
// already, or a byte went out before any run began.
func (fb *FirstByte) bind(t *timing) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.run == nil && fb.at.IsZero() {
		fb.run = t
	}
}

// timing is a live run's timings. The writer marks the first commit, the
// request's FirstByte the first byte, and the writer seals them into the
// row that ends the run; a mark after that goes by late. A nil *timing
// does nothing.
type timing struct {
	mu          sync.Mutex
	run         string
	firstCommit time.Time
	firstByte   time.Time
	sealed      bool
	late        func(RunTiming)
}

// timing returns a live run's timing, bound to the FirstByte of ctx (the
// request that starts or continues it), if any.
func (e *Engine) timing(ctx context.Context, run string) *timing {
	t := &timing{run: run, late: e.lateTiming}
	if fb, ok := ctx.Value(firstByteKey{}).(*FirstByte); ok && fb != nil {
		fb.bind(t)
	}
	return t
}

func (t *timing) commitAt(now time.Time) {
	if t != nil && t.mark(&t.firstCommit, now) {
		t.late(RunTiming{RunID: t.run, FirstCommit: now.UTC()})
	}
}

func (t *timing) byteAt(now time.Time) {
	if t != nil && t.mark(&t.firstByte, now) {
		t.late(RunTiming{RunID: t.run, FirstClientByte: now.UTC()})
	}
}

// mark sets the timing at points to now unless it is set already, and
// reports whether it set it after the run's row was sealed (then it goes
// by late).
func (t *timing) mark(at *time.Time, now time.Time) (late bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !at.IsZero() {
		return false
	}
	*at = now.UTC()
	return t.sealed
}

// seal fills in r (the row that ends the run) the timings it lacks; later
// marks go by late. The writer calls it as it builds the row's batch.
func (t *timing) seal(r *Run) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.FirstCommit.IsZero() {
		r.FirstCommit = t.firstCommit
	}
	if r.FirstClientByte.IsZero() {
		r.FirstClientByte = t.firstByte
	}
	t.sealed = true
}

// lateTiming keeps a timing learnt after its run's row was committed, for
// the writer's next commit, and wakes the writer should it be idle. It
// never blocks.
func (e *Engine) lateTiming(rt RunTiming) {
	e.lateMu.Lock()
	e.late = append(e.late, rt)
	e.lateMu.Unlock()
	select {
	case e.lateWake <- struct{}{}:
	default: // a wake is pending
	}
}

// takeLate appends the late timings to dst and forgets them.
func (e *Engine) takeLate(dst []RunTiming) []RunTiming {
	e.lateMu.Lock()
	defer e.lateMu.Unlock()
	dst = append(dst, e.late...)
	clear(e.late)
	e.late = e.late[:0]
	return dst
}

// commitLate commits the late timings alone: the writer had nothing else
// to commit them with. Writer only.
func (e *Engine) commitLate(b *Batch) {
	b.Sessions, b.NewRuns, b.Events, b.Runs, b.Messages = b.Sessions[:0], b.NewRuns[:0], b.Events[:0], b.Runs[:0], b.Messages[:0]
	b.Timings = e.takeLate(b.Timings[:0])
	if len(b.Timings) == 0 {
		return
	}
	if err := e.store.Commit(context.Background(), b); err != nil {
		e.log.Warn("commit run timings", "runs", len(b.Timings), "err", err)
	}
}

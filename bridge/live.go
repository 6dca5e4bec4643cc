package bridge

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// liveRun is a run this process is driving. The pump goroutine assigns seqs
// and sends events to the writer; the writer appends committed events to
// the run's window and wakes followers.
//
// The window holds the run's most recent committed events only: the
// engine's LiveEvents (a block more at most), and up to LiveLag times as
// many while a follower still has to read them, so a burst that followers
// trail reads memory, not the store; a run of millions of events holds a
// few thousand. A follower behind the window reads the rest from the
// store, which holds every event the window ever had (the writer commits
// before it appends). The window is a list of blocks, each only ever
// appended to and dropped whole, so a follower reads a block without a
// copy and without the lock, and holds at most the one block it reads.
type liveRun struct {
	cancel    context.CancelCauseFunc
	stopAfter func() bool
	closed    chan struct{} // closed after the final event is committed

	// emitMu orders seq assignment with the queueing of the event, so the
	// writer receives a run's events in seq order whoever emits them (the
	// pump, or a Steer).
	emitMu sync.Mutex
	seq    int64 // last seq assigned; guarded by emitMu

	contentSeen bool // the run has emitted an event a client shows; pump only
	storeRun    bool // the run's row changed (its serving upstream): commit it with the next event; pump only

	mu        sync.Mutex
	run       *Run      // guarded by mu once the pump started
	blocks    [][]Event // the window: committed events, oldest first, blocks[0][0].Seq == base+1
	held      int       // events in blocks
	base      int64     // seq of the event before the window
	window    int       // events the window keeps at least
	most      int       // events it keeps at most, while followers read them
	block     int       // events a block holds (at most window)
	followers map[*follower]struct{}
	notify    chan struct{}
	done      bool
	commitErr error

	steers      []Message // user input queued for the next model call
	steerClosed bool      // the run decided its outcome: no more steers
	passed      []Message // steers the upstream's own run took, for the transcript

	call *Call // the upstream call in progress, for Abort; guarded by mu

	dropped bool // the run could not be created: nothing of it is stored

	timing *timing // its first commit and first client byte (timing.go)

	// watchKey names the run's session for its channels (wakeSession);
	// set at creation, never changed.
	watchKey string
}

// finishing reports whether the run has decided its outcome (its final
// event is queued or about to be).
func (lr *liveRun) finishing() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.steerClosed || lr.done
}

// abandon marks a run whose creation failed; its pump stops without
// committing a final event.
func (lr *liveRun) abandon() {
	lr.mu.Lock()
	lr.dropped = true
	if lr.commitErr == nil {
		lr.commitErr = errAbandoned
	}
	lr.mu.Unlock()
}

func (lr *liveRun) abandoned() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.dropped
}

func (lr *liveRun) setCall(c *Call) {
	lr.mu.Lock()
	lr.call = c
	lr.mu.Unlock()
}

func (lr *liveRun) currentCall() *Call {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.call
}

// addSteer queues a steer; false once the run takes no more. The caller
// holds emitMu.
func (lr *liveRun) addSteer(m Message) bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.steerClosed || lr.done {
		return false
	}
	lr.steers = append(lr.steers, m)
	return true
}

// addPassed keeps a steer the upstream took; false once the run takes no
// more. The caller holds emitMu.
func (lr *liveRun) addPassed(m Message) bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.steerClosed || lr.done {
		return false
	}
	lr.passed = append(lr.passed, m)
	return true
}

// takePassed closes the steer queue and returns the steers the upstream
// took.
func (lr *liveRun) takePassed() []Message {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.steerClosed = true
	p := lr.passed
	lr.passed = nil
	return p
}

// nextSteers takes the queued steers. Unless cont (the run may make another
// model call), or when none are queued, it closes the queue at the same
// moment, so a steer either joins the run or is refused, never lost.
func (lr *liveRun) nextSteers(cont bool) []Message {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	q := lr.steers
	lr.steers = nil
	if !cont || len(q) == 0 {
		lr.steerClosed = true
	}
	return q
}

// newLiveRun makes the live run of run, keeping up to window of its
// events in memory. prev are the last committed events of a run that goes
// on (its tool results, a restart), oldest first: the window starts with
// the newest of them.
func newLiveRun(run *Run, prev []Event, window int, cancel context.CancelCauseFunc) *liveRun {
	window = max(window, 1)
	lr := &liveRun{
		cancel: cancel,
		closed: make(chan struct{}),
		run:    run,
		notify: make(chan struct{}),
		window: window,
		most:   window * LiveLag,
		block:  min(window, liveBlock),
		seq:    run.LastSeq,
		base:   run.LastSeq,

		watchKey: upstreamSession(run.Principal, run.SessionID),
	}
	if n := len(prev); n > 0 {
		tail := prev[max(0, n-window):]
		lr.seq, lr.base = prev[n-1].Seq, tail[0].Seq-1
		for i := range tail {
			lr.add(&tail[i])
		}
	}
	return lr
}

// liveBlock is the most events a block of a live run's window holds: the
// window is trimmed a block at a time, and a follower reading from it
// holds at most one.
const liveBlock = 256

// LiveLag is how many times its LiveEvents a live run keeps while a
// follower still has to read them.
const LiveLag = 16

// follower is one reader of a live run's window: the seq it yielded last.
type follower struct{ at atomic.Int64 }

// add appends a committed event to the window and drops the oldest block
// once the window holds enough without it and no follower still has to
// read it, or the window holds its most. The caller holds mu (or owns lr
// alone).
func (lr *liveRun) add(ev *Event) {
	n := len(lr.blocks)
	started := n == 0 || len(lr.blocks[n-1]) == cap(lr.blocks[n-1])
	if started {
		// A block never grows: a full one is followed by a new one as
		// large as the window's events so far (64 at first, at most
		// lr.block), so a short run holds little, a long one has few
		// blocks, and no event is copied. A stream of 100 deltas
		// (bridgeload's) takes two blocks of 64, room for 128 events;
		// a first block that grew by append to its size took room for
		// 192 and copied 64, the second array a large object of 36 KiB.
		c := min(lr.block, max(64, lr.held))
		lr.blocks = append(lr.blocks, make([]Event, 0, c))
		n++
	}
	lr.blocks[n-1] = append(lr.blocks[n-1], *ev)
	lr.held++
	for len(lr.blocks) > 1 && lr.held-len(lr.blocks[0]) >= lr.window {
		d := len(lr.blocks[0])
		// With followers, a block's fate is decided as the next one
		// starts: not every event asks each of them.
		if lr.held < lr.most && len(lr.followers) > 0 && (!started || lr.reading(lr.base+int64(d))) {
			break
		}
		lr.base += int64(d)
		lr.held -= d
		copy(lr.blocks, lr.blocks[1:])
		lr.blocks[len(lr.blocks)-1] = nil
		lr.blocks = lr.blocks[:len(lr.blocks)-1]
	}
}

// reading reports whether a follower in the window has yet to read the
// event end (the last of the oldest block). The caller holds mu.
func (lr *liveRun) reading(end int64) bool {
	for f := range lr.followers {
		if at := f.at.Load(); at >= lr.base && at < end {
			return true
		}
	}
	return false
}

// from returns the committed events of the window after seq next, up to
// the end of the block that holds next+1: nil when next is outside the
// window or the last committed event. The caller holds mu; the result is
// read without it (a block's events never change).
func (lr *liveRun) from(next int64) []Event {
	if next < lr.base {
		return nil
	}
	i := next - lr.base // index of next+1 in the window
	for _, b := range lr.blocks {
		if i < int64(len(b)) {
			return b[i:len(b):len(b)]
		}
		i -= int64(len(b))
	}
	return nil
}

// windowLen is the number of events the window holds: for tests, through
// Engine.LiveEvents.
func (lr *liveRun) windowLen() int {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.held
}

// update changes the run under the lock, so snapshots stay consistent.
func (lr *liveRun) update(f func(*Run)) {
	lr.mu.Lock()
	f(lr.run)
	lr.mu.Unlock()
}

// snapshot copies the run, with LastSeq the last committed event.
func (lr *liveRun) snapshot() *Run {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	r := *lr.run
	r.Dropped = append([]string(nil), r.Dropped...)
	r.LastSeq = lr.base + int64(lr.held)
	return &r
}

func (lr *liveRun) failed() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.commitErr != nil
}

// committed appends a committed event; publish then wakes the followers.
// Writer only.
func (lr *liveRun) committed(ev *Event) {
	lr.mu.Lock()
	if lr.commitErr == nil { // after a failed commit the seqs have a gap; followers stop at it
		lr.add(ev)
	}
	lr.mu.Unlock()
}

// publish wakes followers after the writer appended what it committed, or
// records the error that failed the run's commit. Writer only.
func (lr *liveRun) publish(err error) {
	lr.mu.Lock()
	if err != nil {
		lr.commitErr = err
	}
	close(lr.notify)
	lr.notify = make(chan struct{})
	lr.mu.Unlock()
}

// close marks the run ended; followers drain what is committed and stop.
func (lr *liveRun) close() {
	lr.mu.Lock()
	lr.done = true
	close(lr.notify)
	lr.notify = make(chan struct{})
	lr.mu.Unlock()
	close(lr.closed)
}

// follow yields committed events with seq > after, then live ones, until the
// run ends or ctx is done. Events the window no longer holds are read from
// store, a page at a time: a follower that falls behind costs the engine
// nothing, and the seam is the seq last yielded, so there is no gap and no
// duplicate whichever side an event comes from.
func (lr *liveRun) follow(ctx context.Context, store Store, after int64) Stream {
	idle := idleFromContext(ctx)
	runID := lr.run.ID
	return func(yield func(Event, error) bool) {
		next := after // last seq yielded
		f := &follower{}
		f.at.Store(next)
		lr.mu.Lock()
		if lr.followers == nil {
			lr.followers = make(map[*follower]struct{})
		}
		lr.followers[f] = struct{}{}
		lr.mu.Unlock()
		defer func() {
			lr.mu.Lock()
			delete(lr.followers, f)
			lr.mu.Unlock()
		}()
		for {
			lr.mu.Lock()
			evs, base := lr.from(next), lr.base
			done, wake, cerr := lr.done, lr.notify, lr.commitErr
			lr.mu.Unlock()
			if next < base {
				// Behind the window: every event up to base is committed.
				evs, err := store.Events(ctx, runID, next, int(min(base-next, storePage)))
				if err == nil && len(evs) == 0 {
					err = Errorf(CodeInternal, "the run's events after %d are missing from the store", next)
				}
				if err != nil {
					yield(Event{}, err)
					return
				}
				for _, ev := range evs {
					if !yield(ev, nil) {
						return
					}
					next = ev.Seq
				}
				f.at.Store(next)
				continue
			}
			if len(evs) > 0 {
				for _, ev := range evs {
					if !yield(ev, nil) {
						return
					}
					next = ev.Seq
					f.at.Store(next)
				}
				continue
			}
			if cerr != nil {
				yield(Event{}, Errorf(CodeInternal, "the run's events could not be stored"))
				return
			}
			if done {
				return
			}
			if idle != nil {
				idle()
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}

// storePage is how many events a reader takes from the store at a time.
const storePage = 512

var errAbandoned = errors.New("the run was not recorded")

// pending is one unit the writer commits: an event; with a run's first
// event the new run (and its fresh session) and its input; with its final
// event the run's row and its transcript messages.
type pending struct {
	lr         *liveRun
	ev         Event
	newSession *Session
	newRun     *Run
	run        *Run
	msgs       []Message
	done       chan error
	// urgent ends the batch: a run's first visible event is committed at
	// once rather than with the deltas queued behind it.
	urgent bool
	// hold marks an event no client shows that comes before the run's first
	// one that it does (message_started): no one waits for it, so the
	// writer may keep it up to holdLinger and commit it with that event.
	hold bool
	// pooled: from pendings, and back to it once published (an event
	// alone: no one else holds it).
	pooled bool
}

// pendings recycles the pendings of plain events, one per delta.
var pendings = sync.Pool{New: func() any { return new(pending) }}

// writer commits queued events in batches: it takes whatever is queued, up
// to maxBatch events or a run's first visible event, in one transaction,
// so an idle bridge adds no delay and a busy one pays one transaction per
// batch rather than per event. A batch of nothing but events that may wait
// (hold) waits up to holdLinger for more. Only after the commit are the
// events published to followers.
func (e *Engine) writer() {
	defer close(e.writerDone)
	batch := make([]*pending, 0, e.maxBatch)
	b := &Batch{Events: make([]Event, 0, e.maxBatch)}
	touched := make(map[*liveRun]struct{})
	var linger *time.Timer
	for {
		var first *pending
		select {
		case p, ok := <-e.queue:
			if !ok {
				e.commitLate(b) // what the last runs' clients learnt
				return
			}
			first = p
		case <-e.lateWake:
			e.commitLate(b) // nothing else to go with (a busy writer takes them in its batches)
			continue
		}
		batch = append(batch[:0], first)
		var since time.Time // when the batch began to wait
	drain:
		for len(batch) < e.maxBatch && !batch[len(batch)-1].urgent {
			select {
			case p, ok := <-e.queue:
				if !ok {
					break drain
				}
				batch = append(batch, p)
				continue
			default:
			}
			if !allHold(batch) {
				break
			}
			// Nothing in the batch is needed yet: wait for what will be (a
			// run's first visible event), so both go in one commit.
			if since.IsZero() {
				since = time.Now()
			}
			wait := holdLinger - time.Since(since)
			if wait <= 0 {
				break
			}
			if linger == nil {
				linger = time.NewTimer(wait)
			} else {
				linger.Reset(wait)
			}
			select {
			case p, ok := <-e.queue:
				linger.Stop()
				if !ok {
					break drain
				}
				batch = append(batch, p)
			case <-linger.C:
				break drain
			}
		}
		err := e.commit(b, batch)
		var errs map[*liveRun]error
		if err != nil {
			e.log.Error("commit events", "events", len(b.Events), "err", err)
			errs = e.isolate(batch)
		}
		at := time.Now() // not e.now: a test's clock counts its calls
		for _, p := range batch {
			touched[p.lr] = struct{}{}
			if errs[p.lr] == nil {
				p.lr.committed(&p.ev)
				if p.urgent { // the run's first content
					p.lr.timing.commitAt(at)
				}
			}
		}
		for lr := range touched {
			lr.publish(errs[lr])
			if errs[lr] == nil {
				e.wakeSession(lr.watchKey)
			}
			delete(touched, lr)
		}
		for _, p := range batch {
			if p.done != nil {
				p.done <- errs[p.lr]
			} else if p.pooled {
				*p = pending{}
				pendings.Put(p)
			}
		}
		// The followers just woken run before the next commit: a client's
		// first event is not held behind the deltas committed after it.
		runtime.Gosched()
	}
}

// holdLinger bounds how long the writer keeps events that may wait.
const holdLinger = 2 * time.Millisecond

// allHold reports whether every pending of batch may wait.
func allHold(batch []*pending) bool {
	for _, p := range batch {
		if !p.hold {
			return false
		}
	}
	return true
}

// commit writes the pendings as one batch, reusing b.
func (e *Engine) commit(b *Batch, batch []*pending) error {
	b.Sessions, b.NewRuns = b.Sessions[:0], b.NewRuns[:0]
	b.Events, b.Runs, b.Messages = b.Events[:0], b.Runs[:0], b.Messages[:0]
	for _, p := range batch {
		if p.newSession != nil {
			b.Sessions = append(b.Sessions, p.newSession)
		}
		if p.newRun != nil {
			b.NewRuns = append(b.NewRuns, p.newRun)
		}
		b.Events = append(b.Events, p.ev)
		if p.run != nil {
			if p.run.Status != StatusRunning {
				p.lr.timing.seal(p.run) // the row that ends the run carries its timings
			}
			b.Runs = append(b.Runs, p.run)
		}
		b.Messages = append(b.Messages, p.msgs...)
	}
	b.Timings = e.takeLate(b.Timings[:0])
	if err := e.store.Commit(context.Background(), b); err != nil {
		return err
	}
	for i, p := range batch { // the store numbered them in their sessions' commit order
		p.ev.SessionSeq = b.Events[i].SessionSeq
	}
	return nil
}

// isolate commits a failed batch again one run at a time, so a fault of one
// run (a conflict, a bad row) does not fail the others. It returns the
// error of each run that still fails.
func (e *Engine) isolate(batch []*pending) map[*liveRun]error {
	var order []*liveRun
	groups := make(map[*liveRun][]*pending)
	for _, p := range batch {
		if _, ok := groups[p.lr]; !ok {
			order = append(order, p.lr)
		}
		groups[p.lr] = append(groups[p.lr], p)
	}
	errs := make(map[*liveRun]error)
	b := &Batch{}
	for _, lr := range order {
		if err := e.commit(b, groups[lr]); err != nil {
			errs[lr] = err
		}
	}
	return errs
}

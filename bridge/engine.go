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
	"slices"
	"sync"
	"sync/atomic"
	"time"

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

	// LiveEvents is how many of a live run's most recent events the engine
	// keeps in memory for its followers (default 1024; DefaultLiveEvents),
	// and LiveLag times as many at most while a follower has yet to read
	// them; a follower further behind reads the store. It bounds the
	// memory of a run however long it streams.
	LiveEvents int

	// ResumeRetry bounds how long a run a restart (or a dead replica) left
	// running is tried again upstream while the upstream cannot answer for
	// now (unreachable, a 5xx or 429, its breaker open), before the run
	// ends interrupted: 0 is DefaultResumeRetry, a negative value tries
	// once.
	ResumeRetry time.Duration

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

	maxBatch    int
	liveEvents  int
	queue       chan *pending
	runTimeout  time.Duration
	resumeRetry time.Duration // Config.ResumeRetry, the default made explicit
	maxRuns     int
	maxMsgs     int
	maxTools    int

	// counts: the runs each principal has going on the other processes
	// sharing the store (runningElsewhere).
	countMu sync.Mutex
	counts  map[string]*runCount

	// sessionSignals has a store that other processes share signal their
	// commits to the session feeds, once (session.go); feeds holds those
	// (FollowSession), by session, under mu.
	sessionSignals sync.Once
	feeds          map[string]map[*Feed]struct{}

	mu     sync.Mutex
	live   map[string]*liveRun
	parked map[string][]Message // steers waiting for a run's tool results
	// watches wake a session's channels when a run of it starts
	// (WatchSession): one channel per watched session, closed and
	// dropped at the next start.
	watches map[string]chan struct{}
	closing bool
	runs    sync.WaitGroup // pump goroutines
	// handed are the runs Close handed over (handover.go): their pumps
	// ended without a final event.
	handed []*liveRun
	// draining: the server is cutting its clients for a stop (Drain).
	draining atomic.Bool

	writerDone chan struct{}
	// late holds run timings learnt after their run's row was committed,
	// for the writer's next commit; lateWake wakes an idle writer.
	lateMu   sync.Mutex
	late     []RunTiming
	lateWake chan struct{}
	// background stops the lease renewal and the relay's server (a store
	// several processes share); bgDone is closed once they returned.
	background context.CancelFunc
	bgDone     sync.WaitGroup
}

// New starts an engine and its writer goroutine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Route == nil {
		return nil, errors.New("bridge: Config.Store and Config.Route are required")
	}
	e := &Engine{
		store:       cfg.Store,
		route:       cfg.Route,
		tracer:      cfg.Tracer,
		log:         cfg.Logger,
		now:         cfg.Now,
		maxBatch:    cfg.MaxBatch,
		liveEvents:  cmp.Or(cfg.LiveEvents, DefaultLiveEvents),
		runTimeout:  cfg.RunTimeout,
		resumeRetry: cmp.Or(cfg.ResumeRetry, resumeRetry),
		maxRuns:     cmp.Or(cfg.MaxRunsPerPrincipal, 64),
		maxMsgs:     cmp.Or(cfg.MaxMessages, 10_000),
		maxTools:    cmp.Or(cfg.MaxTools, 512),
		live:        make(map[string]*liveRun),
		counts:      make(map[string]*runCount),
		writerDone:  make(chan struct{}),
		lateWake:    make(chan struct{}, 1),
	}
	if e.tracer == nil {
		e.tracer = noop.NewTracerProvider().Tracer("bridge")
	}
	if e.resumeRetry < 0 {
		e.resumeRetry = 0
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
	bg, stop := context.WithCancel(context.Background())
	e.background = stop
	if l, ok := cfg.Store.(Leaser); ok {
		e.bgDone.Go(func() { e.renewLeases(bg, l) })
	}
	if rl, ok := cfg.Store.(Relay); ok {
		e.bgDone.Go(func() { e.serveRelay(bg, rl) })
	}
	return e, nil
}

// DefaultLiveEvents is how many of a live run's events an engine keeps in
// memory unless Config.LiveEvents says otherwise: a few commits' worth
// (MaxBatch is 512), so a follower that keeps up reads memory, while a run
// of millions of events holds a few hundred KB.
const DefaultLiveEvents = 1024

// LiveEvents reports how many events the live run id holds in memory (0
// when it is not live here): for tests of the window's bound.
func (e *Engine) LiveEvents(id string) int {
	if lr := e.liveRun(id); lr != nil {
		return lr.windowLen()
	}
	return 0
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
	errLeaseLost  = errors.New("another replica took the run over")
	errHandover   = errors.New("the bridge replica stopped; another replica takes the run over")
)

// register makes lr live here, unless its principal has its limit of runs
// going already: those live here and others elsewhere (a new run's:
// runningElsewhere; 0 for a run resumed or taken over).
func (e *Engine) register(lr *liveRun, elsewhere int) error {
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
	n := elsewhere
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

// Close stops accepting runs, waits for running ones until ctx is done,
// interrupts the rest, and stops the writer once every event is committed.
// On a store other processes share (a Leaser), a run still going whose
// upstream can resume it is handed over instead of interrupted: this
// process stops driving it, commits nothing final for it and ends its
// lease, and another process takes it over as it takes a dead one's
// (handover.go).
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
		e.stopLive()
		<-idle
	}
	close(e.queue)
	<-e.writerDone
	handed := e.takeHanded()
	for _, lr := range handed {
		lr.close() // its followers drain what is committed and stop, with no final event
	}
	e.background()
	e.bgDone.Wait() // no lease renewal from now on: the release below is the last word
	e.releaseLeases(handed)
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

package bridge

// Several processes on one store: run leases, and stop and steer relayed
// to the process that drives a run.

import (
	"context"
	"time"
)

// Leaser is implemented by a store that several bridge processes share
// (storage/postgres): the process that drives a run holds a lease on it,
// renewed while the run is live here, so that another process can tell
// when the owner died and take the run over. The store stamps each run it
// creates with this process's lease. Lease times are the store's own
// clock's (the database's), so the processes' clocks need not agree.
type Leaser interface {
	// LeaseTTL is how long a lease lasts unless renewed.
	LeaseTTL() time.Duration
	// RenewLeases extends this process's leases on runs by LeaseTTL from
	// now, and returns those of runs it no longer holds (another process
	// took them over: this one stalled past its lease).
	RenewLeases(ctx context.Context, runs []string) (lost []string, err error)
	// TakeExpired takes over the running runs whose lease has ended
	// (their process died), and returns them: each is taken by one
	// process only.
	TakeExpired(ctx context.Context) ([]*Run, error)
	// InterruptRuns closes the runs named as interrupted with reason, as
	// InterruptRunning does, and returns the ids it closed (those still
	// running).
	InterruptRuns(ctx context.Context, reason string, now time.Time, runs ...string) ([]string, error)
	// ReleaseLeases ends this process's leases on the runs named that are
	// still running, at once (a process that stops gracefully hands them
	// over: Engine.Close), so that another process takes them over as it
	// takes a dead one's, and tells the other processes to look now
	// (WatchReleases). It returns the ids it released.
	ReleaseLeases(ctx context.Context, runs []string) ([]string, error)
	// WatchReleases returns a channel that receives (coalesced) when any
	// process released leases, until stop is called.
	WatchReleases() (wake <-chan struct{}, stop func())
}

// Relay is implemented by a store that several bridge processes share: it
// carries a stop or a steer of a run that another process drives to that
// process, and its answer back.
type Relay interface {
	// Relay sends cmd to the process that holds the lease of cmd.Run and
	// waits for its answer until ctx is done. An error means no answer
	// came (CodeUnavailable when the owner did not answer in time).
	Relay(ctx context.Context, cmd Command) (*Answer, error)
	// ServeRelay hands each command sent to this process to handle, each
	// in a goroutine of its own, and sends its answer back, until ctx is
	// done.
	ServeRelay(ctx context.Context, handle func(context.Context, Command) Answer)
}

// Command is a stop or a steer relayed to the process that drives a run.
type Command struct {
	Kind      CommandKind `json:"kind"`
	Run       string      `json:"run"`
	Principal string      `json:"principal,omitempty"`
	Message   *Message    `json:"message,omitempty"` // a steer's input
}

// CommandKind names what a Command asks.
type CommandKind string

const (
	CommandAbort CommandKind = "abort"
	CommandSteer CommandKind = "steer"
)

// Answer is the owner's answer to a Command: the run after it, or the
// error it answered.
type Answer struct {
	Run   *Run   `json:"run,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// relayWait bounds how long a relayed command waits for the owner's
// answer: an abort waits for the run's final event, which an upstream's
// own cancel may take upstreamCancelTimeout to reach.
const relayWait = upstreamCancelTimeout + 5*time.Second

type localOnlyKey struct{}

// relayed reports whether ctx is that of a command another process
// relayed here: it is answered with what this process knows, never
// relayed again.
func relayed(ctx context.Context) bool {
	v, _ := ctx.Value(localOnlyKey{}).(bool)
	return v
}

// relay sends a stop or a steer of a run this process does not drive, but
// the store says is running, to the process that does (when the store is
// a Relay); ok is false when there is none to send it to.
func (e *Engine) relay(ctx context.Context, cmd Command) (*Run, bool, error) {
	rl, isRelay := e.store.(Relay)
	if !isRelay || relayed(ctx) {
		return nil, false, nil
	}
	cmd.Principal = PrincipalFromContext(ctx)
	rctx, cancel := context.WithTimeout(ctx, relayWait)
	defer cancel()
	a, err := rl.Relay(rctx, cmd)
	if err != nil {
		if ctx.Err() != nil {
			return nil, true, ctx.Err()
		}
		return nil, true, err
	}
	if a.Error != nil {
		return a.Run, true, a.Error
	}
	return a.Run, true, nil
}

// serveRelay answers the commands other processes relay here, as this
// process answers its own clients.
func (e *Engine) serveRelay(ctx context.Context, rl Relay) {
	rl.ServeRelay(ctx, func(ctx context.Context, cmd Command) Answer {
		ctx = context.WithValue(WithPrincipal(ctx, cmd.Principal), localOnlyKey{}, true)
		var (
			run *Run
			err error
		)
		switch cmd.Kind {
		case CommandAbort:
			run, err = e.Abort(ctx, cmd.Run)
		case CommandSteer:
			if cmd.Message == nil {
				err = Errorf(CodeInvalid, "a steer with no message")
				break
			}
			if err = e.Steer(ctx, cmd.Run, *cmd.Message); err == nil {
				run, err = e.Run(ctx, cmd.Run)
			}
		default:
			err = Errorf(CodeUnsupported, "unknown command %q", cmd.Kind)
		}
		if err != nil {
			return Answer{Run: run, Error: AsError(err)}
		}
		return Answer{Run: run}
	})
}

// renewLeases keeps this process's leases on its live runs until ctx is
// done; a run whose lease another process took over (this one stalled
// past it) is cancelled here: its events could no longer be committed.
func (e *Engine) renewLeases(ctx context.Context, l Leaser) {
	ttl := l.LeaseTTL()
	t := time.NewTicker(max(ttl/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		e.mu.Lock()
		ids := make([]string, 0, len(e.live))
		for id := range e.live {
			ids = append(ids, id)
		}
		e.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, ttl/2)
		lost, err := l.RenewLeases(rctx, ids)
		cancel()
		if err != nil {
			e.log.Warn("renew run leases", "runs", len(ids), "err", err)
			continue
		}
		for _, id := range lost {
			if lr := e.liveRun(id); lr != nil {
				e.log.Warn("lost the lease of a run to another replica; stopping it here", "run", id)
				lr.cancel(errLeaseLost)
			}
		}
	}
}

// RunCounter is implemented by a store that several bridge processes
// share: it counts a principal's runs going on every process, so the
// per-principal run limit (Config.MaxRunsPerPrincipal) holds across
// replicas, approximately (runningElsewhere).
type RunCounter interface {
	// RunningRuns counts principal's running runs whose lease is live
	// (a dead process's count until they are taken over).
	RunningRuns(ctx context.Context, principal string) (int, error)
}

// countFresh is how old a count of a principal's runs on the other
// processes may be before the next admission has it counted again (in the
// background: the admission uses the count it has).
const countFresh = 250 * time.Millisecond

// runCount is a principal's runs on the other processes, as counted at.
type runCount struct {
	others     int
	at         time.Time
	refreshing bool
}

// runningElsewhere returns how many runs principal has going on the other
// processes sharing the store (0 for a store of this process alone): the
// store's count less this process's runs at that moment. A principal's
// first run here waits for the count; later ones use the last count and
// have it made again in the background once it is older than countFresh.
// So the limit is approximate: runs admitted on several processes within
// one count's age (and its round trip) may together go over it.
func (e *Engine) runningElsewhere(ctx context.Context, principal string) int {
	rc, ok := e.store.(RunCounter)
	if !ok {
		return 0
	}
	e.countMu.Lock()
	c := e.counts[principal]
	if c == nil {
		e.countMu.Unlock()
		n := e.countElsewhere(ctx, rc, principal)
		e.countMu.Lock()
		if e.counts[principal] == nil {
			e.counts[principal] = &runCount{others: n, at: time.Now()}
		}
		e.countMu.Unlock()
		return n
	}
	others := c.others
	if time.Since(c.at) > countFresh && !c.refreshing {
		c.refreshing = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			n := e.countElsewhere(ctx, rc, principal)
			e.countMu.Lock()
			c.others, c.at, c.refreshing = n, time.Now(), false
			e.countMu.Unlock()
		}()
	}
	e.countMu.Unlock()
	return others
}

// countElsewhere counts principal's runs on the other processes now; a
// count the store cannot make is none (this process's limit still holds).
func (e *Engine) countElsewhere(ctx context.Context, rc RunCounter, principal string) int {
	here := e.runningHere(principal)
	n, err := rc.RunningRuns(ctx, principal)
	if err != nil {
		e.log.Warn("count runs", "err", err)
		return 0
	}
	return max(0, n-here)
}

// runningHere counts principal's live runs in this process.
func (e *Engine) runningHere(principal string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, o := range e.live {
		if o.run.Principal == principal {
			n++
		}
	}
	return n
}

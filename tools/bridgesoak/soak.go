package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// result is what a soak measured and which checks failed.
type result struct {
	opt  options
	dir  string
	kept bool

	loadTime   time.Duration // from the first stream to the last one's end
	warmup     int
	started    int            // load streams sent
	byOutcome  map[string]int // load streams by client outcome
	byDialect  map[string]int // load streams by the client's dialect and outcome
	injected   int            // load streams whose script has a fault
	faultKinds map[fault]int
	maxActive  int64 // streams open at once, as the clients counted
	errCodes   map[string]int

	upstreamRequests int64
	unrecorded       int  // crash: upstream calls whose run is not in the store
	ttfc, duration   dist // load streams that ended: to the first content, to the end

	goroutinesBefore, goroutinesPeak, goroutinesAfter int
	goroutineNote                                     string
	peakRSS, rssAfter                                 int64
	cpuLoad                                           time.Duration // the bridge's CPU time during the load

	breakerChanges  float64
	breakerLogLines int
	runsEnded       map[string]float64 // bridge_runs_ended_total by outcome
	upstreamErrors  map[string]float64 // bridge_upstream_errors_total by error type
	streamsActive   float64            // bridge_streams_active after the load
	logCounts       map[string]int     // the bridge's log lines by level and message
	exit            string             // how the (last) bridge process ended

	// crash
	killedAt           time.Duration
	cutByCrash         int
	integrityAfterKill string
	runningAfterStart  int
	runningAtKill      int
	interruptedAtStart int
	resumed            int
	resumedOK          int

	// store
	integrity    string
	storedRuns   int
	storedEvents int64
	walPeak      int64 // the largest the WAL file was seen during the load
	byStatus     map[string]int
	badRuns      int

	failures []string
}

func (r *result) fail(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// soak runs the whole thing: build, start, load, (crash, restart), check.
func soak(ctx context.Context, opt options, logw io.Writer) (res *result, err error) {
	res = &result{opt: opt, byOutcome: map[string]int{}, byDialect: map[string]int{}, faultKinds: map[fault]int{}, errCodes: map[string]int{}}
	s := &soakRun{opt: opt, res: res, logw: logw}
	defer func() { s.close(err) }()
	if err := s.start(ctx); err != nil {
		return res, err
	}
	records, err := s.warmup(ctx)
	if err != nil {
		return res, err
	}
	load, killTime, err := s.load(ctx)
	if err != nil {
		return res, err
	}
	return res, s.check(ctx, records, load, killTime)
}

// soakRun is one soak: its directory, the fake upstream, the bridge under
// load and its client, and what to undo at the end (last first).
type soakRun struct {
	opt  options
	res  *result
	logw io.Writer

	dir, bin, addr   string
	cfgPath, dbPath  string
	logPath          string
	args             []string // the bridge's, to restart it the same way
	up               *fakeUpstream
	p                *bridgeProc   // the first (with --crash, the killed) bridge
	procs            []*bridgeProc // every replica, p first
	cl               *soakClient
	dropSchema       func() // the --db schema, dropped with a clean directory
	undo             []func()
	removeDirIfClean bool

	loadMark  int64         // the log's size when the load began
	cpuBefore time.Duration // the bridge's CPU time then
}

func (s *soakRun) logf(format string, args ...any) {
	fmt.Fprintf(s.logw, "bridgesoak: "+format+"\n", args...)
}

// close undoes what start did; the directory goes too unless it was given,
// asked to be kept, or something failed.
func (s *soakRun) close(err error) {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	if !s.removeDirIfClean {
		return
	}
	if s.opt.keep || err != nil || len(s.res.failures) > 0 {
		s.res.kept = true
		return
	}
	if s.dropSchema != nil {
		s.dropSchema()
	}
	_ = os.RemoveAll(s.dir)
}

// start makes the directory, builds the bridge, starts the fake upstream
// (and, for a crash over A2A, an agent bridge in front of it) and the
// bridge under load.
func (s *soakRun) start(ctx context.Context) error {
	opt, res := s.opt, s.res
	var err error
	s.dir = opt.dir
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "bridgesoak-"); err != nil {
			return err
		}
		s.removeDirIfClean = true
	} else {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return err
		}
		res.kept = true
	}
	res.dir = s.dir

	s.bin = opt.bridge
	if s.bin == "" {
		s.logf("building the bridge")
		if s.bin, err = buildBridge(ctx, s.dir, opt.race); err != nil {
			return err
		}
	}
	if s.up, err = startUpstream(); err != nil {
		return err
	}
	s.undo = append(s.undo, s.up.Close)

	s.cfgPath = filepath.Join(s.dir, "soak.yaml")
	grace := "30s"
	if opt.graceful {
		grace = "100ms" // the runs still going are handed over, not left to end
	}
	cfg := fmt.Sprintf("max_runs_per_principal: %d\nshutdown_grace: %s\n", opt.concurrency+64, grace)
	if err := os.WriteFile(s.cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	s.dbPath = filepath.Join(s.dir, "soak.db")
	if opt.db != "" {
		if s.dbPath, s.dropSchema, err = freshSchema(ctx, opt.db); err != nil {
			return err
		}
		res.dir += " (schema " + s.dbPath[strings.LastIndex(s.dbPath, "=")+1:] + ")"
	}
	upstream, err := s.upstreamFlag(ctx)
	if err != nil {
		return err
	}
	s.args = []string{"--db", s.dbPath, "--config", s.cfgPath, "--upstream", upstream}
	if opt.db != "" {
		s.args = append(s.args, "--lease", opt.lease.String())
	}
	s.logPath = filepath.Join(s.dir, "bridge.log")
	var bases []string
	for i := range opt.replicas {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		logPath := s.logPath
		if i > 0 {
			logPath = filepath.Join(s.dir, fmt.Sprintf("bridge-%d.log", i))
		}
		p, err := startBridge(ctx, s.bin, addr, logPath, opt.gtrace, s.args...)
		if err != nil {
			return err
		}
		s.undo = append(s.undo, func() {
			select {
			case <-p.exited:
			default:
				p.kill()
			}
		})
		s.procs = append(s.procs, p)
		bases = append(bases, "http://"+addr)
	}
	s.p, s.addr = s.procs[0], s.procs[0].addr
	s.cl = newSoakClient(bases, opt.concurrency+16, opt.dialects)
	s.undo = append(s.undo, s.cl.closeIdle)
	return nil
}

// upstreamFlag is the bridge's --upstream for the soak's upstream dialect.
func (s *soakRun) upstreamFlag(ctx context.Context) (string, error) {
	switch s.opt.upstreamDialect {
	case dialectAnthropic:
		return "anthropic=" + s.up.URL(), nil // the root, as the Anthropic SDK takes it
	case dialectA2A:
		if !s.opt.crash {
			return "a2a=" + s.up.URL(), nil // the agent's base: its card is at the well-known path
		}
		// The agent is another bridge serving A2A over the fake OpenAI
		// upstream: after the SIGKILL the restarted bridge resubscribes to
		// its tasks with Last-Event-ID, and it replays what they streamed
		// meanwhile (a2a-go's server would not).
		agentAddr, err := freeAddr()
		if err != nil {
			return "", err
		}
		agent, err := startBridge(ctx, s.bin, agentAddr, filepath.Join(s.dir, "agent.log"), 0,
			"--db", filepath.Join(s.dir, "agent.db"), "--config", s.cfgPath, "--upstream", "openai="+s.up.BaseURL())
		if err != nil {
			return "", fmt.Errorf("agent bridge: %w", err)
		}
		s.undo = append(s.undo, func() { _ = agent.stop(40 * time.Second) })
		return "a2a=http://" + agentAddr, nil
	}
	return "openai=" + s.up.BaseURL(), nil
}

// warmup sends the unmeasured first streams (they start pools and the
// GC's workers), then takes the goroutine baseline with every idle
// connection closed.
func (s *soakRun) warmup(ctx context.Context) ([]*streamRecord, error) {
	opt := s.opt
	var records []*streamRecord
	for i := range opt.warmup {
		sc := script{id: 1_000_000_000 + int64(i), chunks: 10, pace: time.Millisecond, fault: faultNone}
		sctx, cancel := context.WithTimeout(ctx, opt.streamTimeout)
		records = append(records, s.cl.stream(sctx, sc))
		cancel()
	}
	s.res.warmup = opt.warmup
	if opt.gtrace > 0 {
		s.cl.closeIdle()
		s.up.closeIdle()
		time.Sleep(200 * time.Millisecond)
		n, err := s.p.goroutinesAfter(ctx, s.p.logSize(), 3*opt.gtrace+5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("goroutines before the load: %w", err)
		}
		s.res.goroutinesBefore = n
	}
	return records, nil
}

// load runs opt.concurrency clients until the duration is over (or the
// SIGKILL), and returns their streams, in script order, and when the kill
// came.
func (s *soakRun) load(ctx context.Context) (load []*streamRecord, killTime time.Time, err error) {
	opt, res, p := s.opt, s.res, s.p
	s.loadMark = p.logSize()
	s.cpuBefore, _ = p.cpu()
	s.logf("%d clients for %s against %s%s", opt.concurrency, opt.duration, s.addr, map[bool]string{true: ", " + opt.signal() + " at " + opt.crashAfter.String()}[opt.crash])
	var (
		mu        sync.Mutex
		next      atomic.Int64
		active    atomic.Int64
		maxActive atomic.Int64
		stopping  atomic.Bool
		wg        sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(opt.duration)
	walDone := make(chan struct{})
	walPeak := make(chan int64, 1)
	go func() { walPeak <- peakSize(s.dbPath+"-wal", 100*time.Millisecond, walDone) }()
	if opt.crash {
		wg.Go(func() {
			t := time.NewTimer(opt.crashAfter)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
			if peak, _, err := p.memory(); err == nil {
				res.peakRSS = peak
			}
			if c, err := p.cpu(); err == nil {
				res.cpuLoad = c - s.cpuBefore
			}
			stopping.Store(true)
			mu.Lock()
			killTime = time.Now()
			mu.Unlock()
			if opt.graceful {
				res.killedAt = time.Since(start)
				if err := p.stop(40 * time.Second); err != nil {
					res.fail("the replica stopped with SIGTERM did not exit cleanly: %v", err)
				}
			} else {
				p.kill()
				res.killedAt = time.Since(start)
			}
			s.logf("%s at %s", opt.signal(), res.killedAt.Round(time.Millisecond))
		})
	}
	for range opt.concurrency {
		wg.Go(func() {
			for !stopping.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
				sc := opt.script(next.Add(1))
				n := active.Add(1)
				for m := maxActive.Load(); n > m && !maxActive.CompareAndSwap(m, n); m = maxActive.Load() {
				}
				sctx, cancel := context.WithTimeout(ctx, opt.streamTimeout)
				rec := s.cl.stream(sctx, sc)
				cancel()
				active.Add(-1)
				mu.Lock()
				load = append(load, rec)
				mu.Unlock()
				if rec.outcome == clientRefused {
					// Refusals come back at once (an open breaker's 503s,
					// a bridge that is down): pace them, or they flood
					// the log and the store.
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	res.loadTime = time.Since(start)
	close(walDone)
	res.walPeak = <-walPeak
	res.maxActive = maxActive.Load()
	res.upstreamRequests = s.up.requests.Load()
	if err := ctx.Err(); err != nil {
		return nil, killTime, fmt.Errorf("the load: %w", err)
	}
	s.logf("%d streams in %s", len(load), res.loadTime.Round(time.Millisecond))
	slices.SortFunc(load, func(a, b *streamRecord) int { return int(a.script.id - b.script.id) })
	return load, killTime, nil
}

// check stops the bridge (or, after a crash, restarts it and checks what it
// finds), then judges the clients' streams, the log and the store.
func (s *soakRun) check(ctx context.Context, records, load []*streamRecord, killTime time.Time) error {
	opt, res, p := s.opt, s.res, s.p
	if !opt.crash {
		if c, err := p.cpu(); err == nil {
			res.cpuLoad = c - s.cpuBefore
		}
		res.afterLoad(ctx, p, s.cl, s.up, s.loadMark)
		res.exit = "exit 0 on SIGTERM"
		if len(s.procs) > 1 {
			res.exit = fmt.Sprintf("each of %d replicas: exit 0 on SIGTERM", len(s.procs))
		}
		for _, p := range s.procs {
			if err := p.stop(40 * time.Second); err != nil {
				res.exit = err.Error()
				res.fail("bridge serve (%s) did not exit cleanly on SIGTERM: %v", p.addr, err)
			}
		}
	} else if s.opt.db != "" {
		res.crashedReplica(ctx, opt, s.procs[1:], s.dbPath, load, killTime)
	} else {
		res.crashed(ctx, opt, s.bin, s.addr, s.args, s.dbPath, load, killTime)
		// The restarted bridge has exited by now (crashed stops it).
	}
	if counts, err := logLines(s.logPath); err == nil {
		res.logCounts = counts
		res.breakerLogLines = counts["WARN circuit breaker state change"]
	}
	if res.breakerLogLines > 0 {
		res.fail("the circuit breaker changed state %d times (log)", res.breakerLogLines)
	}

	res.judgeClients(load, killTime, s.up.outcomesOf())
	st, err := res.checkStore(ctx, s.dbPath, append(records, load...))
	if err != nil {
		return err
	}
	if opt.crash && st != nil {
		models := map[string]bool{}
		for _, sr := range st.runs {
			models[sr.model] = true
		}
		for id, o := range s.up.outcomesOf() {
			if id < 1_000_000_000 && !models[opt.script(id).model()] {
				res.unrecorded += len(o)
			}
		}
	}
	return nil
}

// script is the load's k-th stream: its length and pace vary with k, and
// every failEvery-th one has a fault, cut and error in turn.
func (o options) script(k int64) script {
	s := script{id: k, fault: faultNone}
	s.chunks = o.chunksMin + int((k*7919)%int64(o.chunksMax-o.chunksMin+1))
	if span := o.paceMax - o.paceMin; span > 0 {
		steps := int64(span/time.Millisecond) + 1
		s.pace = o.paceMin + time.Duration((k*104729)%steps)*time.Millisecond
		s.pace = min(s.pace, o.paceMax)
	} else {
		s.pace = o.paceMin
	}
	if f := int64(o.failEvery); f > 0 && k%f == f/2 {
		if (k/f)%2 == 0 {
			s.fault = faultCut
		} else {
			s.fault = faultError
		}
	}
	return s
}

// afterLoad measures the bridge once the load is over: memory, metrics,
// and the goroutines once idle connections are gone.
func (r *result) afterLoad(ctx context.Context, p *bridgeProc, cl *soakClient, up *fakeUpstream, loadMark int64) {
	if peak, now, err := p.memory(); err == nil {
		r.peakRSS, r.rssAfter = peak, now
	} else {
		r.fail("memory: %v", err)
	}
	if m, err := scrapeMetrics(ctx, p.addr); err == nil {
		r.breakerChanges = m["bridge_breaker_state_changes_total"]
		r.runsEnded = byLabel(m, "bridge_runs_ended_total", "bridge_run_outcome")
		r.upstreamErrors = byLabel(m, "bridge_upstream_errors_total", "error_type")
		r.streamsActive = m["bridge_streams_active"]
	} else {
		r.fail("metrics: %v", err)
	}
	if r.breakerChanges > 0 {
		r.fail("the circuit breaker changed state %v times (bridge_breaker_state_changes_total)", r.breakerChanges)
	}
	if r.streamsActive != 0 {
		r.fail("bridge_streams_active is %v after the load", r.streamsActive)
	}
	if r.opt.gtrace == 0 {
		r.goroutineNote = "not measured (--gtrace 0)"
		return
	}
	// Close the idle connections on both sides, then wait for the count to
	// settle back (a finished run's goroutines end a moment after its
	// stream).
	limit := r.goroutinesBefore + r.opt.slack
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl.closeIdle()
		up.closeIdle()
		n, err := p.goroutinesAfter(ctx, p.logSize(), 3*r.opt.gtrace+5*time.Second)
		if err != nil {
			r.fail("goroutines after the load: %v", err)
			return
		}
		r.goroutinesAfter = n
		if n <= limit || time.Now().After(deadline) {
			break
		}
	}
	if ds, err := gdumps(p.log, loadMark); err == nil {
		for _, d := range ds {
			r.goroutinesPeak = max(r.goroutinesPeak, d.count)
		}
	}
	if r.goroutinesAfter > limit {
		r.fail("goroutine leak: %d goroutines after the load, %d before (slack %d); stacks in %s (SIGQUIT)",
			r.goroutinesAfter, r.goroutinesBefore, r.opt.slack, p.log)
		p.quit()
	}
}

// crashed restarts the bridge after the SIGKILL and checks what it finds.
func (r *result) crashed(ctx context.Context, opt options, bin, addr string, args []string, dbPath string, load []*streamRecord, killTime time.Time) {
	if s, err := integrity(ctx, dbPath); err != nil {
		r.integrityAfterKill = "error: " + err.Error()
		r.fail("integrity_check after the SIGKILL: %v", err)
	} else {
		r.integrityAfterKill = s
		if s != "ok" {
			r.fail("integrity_check after the SIGKILL: %s", s)
		}
	}
	running, err := runningRuns(ctx, dbPath)
	r.runningAtKill = running
	if err != nil {
		r.fail("count running runs after the SIGKILL: %v", err)
	}
	logPath := filepath.Join(filepath.Dir(dbPath), "bridge-restart.log")
	p, err := startBridge(ctx, bin, addr, logPath, 0, args...)
	if err != nil {
		r.fail("restart: %v", err)
		return
	}
	defer func() {
		if err := p.stop(40 * time.Second); err != nil {
			r.exit = "restarted bridge: " + err.Error()
			r.fail("the restarted bridge did not exit cleanly on SIGTERM: %v", err)
		} else {
			r.exit = "SIGKILL; restarted bridge: exit 0 on SIGTERM"
		}
	}()
	left, err := runningRuns(ctx, dbPath)
	if err != nil {
		r.fail("count running runs after the restart: %v", err)
	}
	r.runningAfterStart, r.interruptedAtStart = left, running-left
	if opt.upstreamDialect == dialectA2A {
		// Resumed runs may end before this look: count the interrupted.
		interrupted, err := interruptedRuns(ctx, dbPath)
		if err != nil {
			r.fail("count interrupted runs after the restart: %v", err)
		}
		r.interruptedAtStart = interrupted
	}
	// Over an A2A agent the restart resumes the runs upstream, so they are
	// running again (the final look at the store sees each end); over the
	// others it closes them as interrupted.
	if left != 0 && opt.upstreamDialect != dialectA2A {
		r.fail("%d runs still running after the restart", left)
	}

	r.resumeCut(ctx, opt, []string{"http://" + addr}, load, killTime)
}

// resumeCut resumes every stream the kill cut, from the last id its
// client saw, on the bridges at bases, 64 at a time.
func (r *result) resumeCut(ctx context.Context, opt options, bases []string, load []*streamRecord, killTime time.Time) {
	cl := newSoakClient(bases, 64, opt.dialects)
	defer cl.closeIdle()
	var (
		wg  sync.WaitGroup
		sem = make(chan struct{}, 64)
	)
	for _, rec := range load {
		if rec.outcome != clientCut || rec.runID == "" || rec.end.Before(killTime) {
			continue
		}
		r.resumed++
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sctx, cancel := context.WithTimeout(ctx, opt.streamTimeout)
			defer cancel()
			rec.outcome = ""
			cl.resume(sctx, rec)
			rec.resumed = true
		}()
	}
	wg.Wait()
}

// crashedReplica checks, after one replica's SIGKILL, what the others do:
// they take its runs over once its lease ends (resumed upstream or closed
// as interrupted), and each stream the kill cut resumes on one of them,
// from the last id its client saw, to its end. Then the survivors stop.
func (r *result) crashedReplica(ctx context.Context, opt options, survivors []*bridgeProc, db string, load []*streamRecord, killTime time.Time) {
	r.integrityAfterKill = integrityNA
	running, err := runningRuns(ctx, db)
	r.runningAtKill = running
	if err != nil {
		r.fail("count running runs after the SIGKILL: %v", err)
	}
	var bases []string
	for _, p := range survivors {
		bases = append(bases, "http://"+p.addr)
	}
	r.resumeCut(ctx, opt, bases, load, killTime)
	// Every run ends: the resumed ones have; the others the survivors
	// took over within the lease (or resumed upstream, and they end there).
	deadline := time.Now().Add(5*opt.lease + 30*time.Second)
	for {
		left, err := runningRuns(ctx, db)
		if err != nil {
			r.fail("count running runs after the takeover: %v", err)
			break
		}
		r.runningAfterStart = left
		if left == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.runningAfterStart != 0 {
		r.fail("%d runs still running %s after the SIGKILL", r.runningAfterStart, time.Since(killTime).Round(time.Second))
	}
	if n, err := interruptedRuns(ctx, db); err == nil {
		r.interruptedAtStart = n
	} else {
		r.fail("count interrupted runs: %v", err)
	}
	r.exit = fmt.Sprintf("one SIGKILLed; the other %d: exit 0 on SIGTERM", len(survivors))
	if opt.graceful {
		r.exit = fmt.Sprintf("one stopped with SIGTERM mid-load, exit 0; the other %d: exit 0 on SIGTERM", len(survivors))
	}
	for _, p := range survivors {
		if err := p.stop(40 * time.Second); err != nil {
			r.exit = "a surviving replica: " + err.Error()
			r.fail("a surviving replica (%s) did not exit cleanly on SIGTERM: %v", p.addr, err)
		}
	}
}

// judgeClients checks what each client saw against its script and against
// what the upstream did.
func (r *result) judgeClients(load []*streamRecord, killTime time.Time, ups map[int64][]string) {
	crash := r.opt.crash
	r.started = len(load)
	var bugs []string
	bug := func(rec *streamRecord, format string, args ...any) {
		bugs = append(bugs, fmt.Sprintf("stream %d (run %s, %s): ", rec.script.id, rec.runID, rec.script.fault)+fmt.Sprintf(format, args...))
	}
	for _, rec := range load {
		s := rec.script
		if s.fault != faultNone {
			r.injected++
			r.faultKinds[s.fault]++
		}
		outcome := rec.outcome
		if rec.resumed {
			outcome = "resumed " + outcome
		}
		r.byOutcome[outcome]++
		r.byDialect[rec.dialect+" "+outcome]++
		if rec.errCode != "" {
			r.errCodes[rec.errCode]++
		}
		// A stream the kill cut, or refused since: the crash's, not a bug.
		byCrash := crash && !killTime.IsZero() && !rec.end.Before(killTime)
		switch {
		case rec.resumed:
			r.cutByCrash++
			switch rec.outcome {
			case clientCompleted, clientFailed:
				r.resumedOK++
			default:
				bug(rec, "resumed after the restart, it ended %s: %s", rec.outcome, rec.detail)
			}
		case rec.outcome == clientCompleted:
			if s.fault != faultNone {
				bug(rec, "completed although its upstream stream failed half-way")
			} else if rec.text != s.want() {
				bug(rec, "completed with %d bytes of text, want %d", len(rec.text), len(s.want()))
			}
		case rec.outcome == clientFailed:
			if s.fault == faultNone {
				bug(rec, "an error frame (%s) although its upstream stream had no fault", rec.errCode)
			} else if rec.text != s.want() {
				bug(rec, "failed with %d bytes of text, want the %d before the fault", len(rec.text), len(s.want()))
			}
		case byCrash:
			r.cutByCrash++
		default:
			bug(rec, "%s: %s", rec.outcome, rec.detail)
		}
		if !crash {
			o := ups[s.id]
			want := upDone
			if s.fault != faultNone {
				want = upFault
			}
			if len(o) != 1 || o[0] != want {
				bug(rec, "the upstream saw %v, want [%s]", o, want)
			}
		}
	}
	var ttfc, dur []time.Duration
	for _, rec := range load {
		if rec.resumed || rec.outcome != clientCompleted && rec.outcome != clientFailed {
			continue
		}
		if rec.first > 0 {
			ttfc = append(ttfc, rec.first)
		}
		dur = append(dur, rec.end.Sub(rec.start))
	}
	r.ttfc, r.duration = distOf(ttfc), distOf(dur)
	if len(bugs) > 0 {
		r.fail("%d streams ended wrong; the first: %s", len(bugs), strings.Join(bugs[:min(len(bugs), 10)], "; "))
	}
	if r.started == 0 {
		r.fail("no stream was started")
	}
}

// checkStore reads the SQLite file and checks every run and its events,
// and that every event id a client received is in it.
func (r *result) checkStore(ctx context.Context, dbPath string, recs []*streamRecord) (*dbReport, error) {
	crash := r.opt.crash
	st, err := readStore(ctx, dbPath, crash)
	if err != nil {
		r.fail("read the store: %v", err)
		return nil, nil
	}
	r.integrity, r.storedRuns, r.storedEvents, r.byStatus = st.integrity, len(st.runs), st.events, st.byStatus
	if st.integrity != "ok" && st.integrity != integrityNA {
		r.fail("integrity_check: %s", st.integrity)
	}
	var probs []string
	for _, id := range slices.Sorted(maps.Keys(st.runs)) {
		if p := st.runs[id].problems(crash); len(p) > 0 {
			r.badRuns++
			probs = append(probs, id+" ("+st.runs[id].model+"): "+strings.Join(p, ", "))
		}
	}
	seen := map[string]bool{}
	for _, rec := range recs {
		if rec.runID == "" {
			continue
		}
		seen[rec.runID] = true
		sr := st.runs[rec.runID]
		if sr == nil {
			probs = append(probs, fmt.Sprintf("stream %d: its run %s is not in the store", rec.script.id, rec.runID))
			continue
		}
		if sr.model != rec.script.model() {
			probs = append(probs, fmt.Sprintf("stream %d: run %s is of model %s", rec.script.id, rec.runID, sr.model))
		}
		for _, seq := range rec.seqs {
			if crash && !sr.seqs[seq] || !crash && seq > sr.maxSeq {
				probs = append(probs, fmt.Sprintf("stream %d: the client received %s:%d, which is not in the store", rec.script.id, rec.runID, seq))
				break
			}
		}
		text := sr.text.String()
		switch rec.outcome {
		case clientCompleted, clientFailed:
			if rec.text != text {
				probs = append(probs, fmt.Sprintf("stream %d: the client received %d bytes of text, the store holds %d", rec.script.id, len(rec.text), len(text)))
			}
			if want := map[string]string{clientCompleted: "completed", clientFailed: sr.status}[rec.outcome]; sr.status != want ||
				rec.outcome == clientFailed && sr.status == "completed" {
				probs = append(probs, fmt.Sprintf("stream %d: the client saw %s, the run is %s", rec.script.id, rec.outcome, sr.status))
			}
		default:
			if !strings.HasPrefix(text, rec.text) {
				probs = append(probs, fmt.Sprintf("stream %d: what the client received is not a prefix of the stored text", rec.script.id))
			}
		}
	}
	// A run no client heard of: one the kill caught before its headers,
	// closed by the restart (or, over an A2A agent, resumed upstream and
	// ended there).
	resumes := r.opt.upstreamDialect == dialectA2A
	for id, sr := range st.runs {
		if !seen[id] && !(crash && (sr.status == "interrupted" || resumes)) {
			probs = append(probs, fmt.Sprintf("run %s (%s, %s) was answered to no client", id, sr.model, sr.status))
		}
	}
	if len(probs) > 0 {
		r.fail("%d problems in the store; the first: %s", len(probs), strings.Join(probs[:min(len(probs), 10)], "; "))
	}
	return st, nil
}

// print writes the results as a table.
func (r *result) print(w io.Writer) {
	o := r.opt
	mode := "load"
	if o.crash {
		mode = fmt.Sprintf("load with %s at %s", o.signal(), r.killedAt.Round(time.Millisecond))
	}
	row := func(k, format string, args ...any) { fmt.Fprintf(w, "  %-34s %s\n", k, fmt.Sprintf(format, args...)) }
	if o.db != "" {
		mode += fmt.Sprintf(" over %d replicas on one PostgreSQL", o.replicas)
		if o.crash {
			mode += map[bool]string{false: " (one killed, not restarted)", true: " (one stopped, not restarted)"}[o.graceful]
		}
	}
	fmt.Fprintf(w, "bridgesoak: %s, %d clients, %s, %d-%d chunks %s-%s apart, 1 in %d streams failing upstream half-way; clients %s, upstream %s\n",
		mode, o.concurrency, o.duration, o.chunksMin, o.chunksMax, o.paceMin, o.paceMax, o.failEvery, strings.Join(o.dialects, "+"), o.upstreamDialect)
	row("streams", "%d started in %s (%.0f/s), %d at once at most; %d warm-up", r.started, r.loadTime.Round(time.Millisecond),
		float64(r.started)/max(r.loadTime.Seconds(), 1e-9), r.maxActive, r.warmup)
	row("client outcomes", "%s", fmtCounts(r.byOutcome))
	row("by inbound dialect", "%s", fmtCounts(r.byDialect))
	row("injected upstream faults", "%d (%s)", r.injected, fmtCounts(r.faultKinds))
	if len(r.errCodes) > 0 {
		row("error frames by code", "%s", fmtCounts(r.errCodes))
	}
	row("bridge CPU during the load", "%.1f s (%.0f%% of one core)", r.cpuLoad.Seconds(), 100*r.cpuLoad.Seconds()/max(r.loadTime.Seconds(), 1e-9))
	row("time to first content", "%s", r.ttfc)
	row("stream duration", "%s", r.duration)
	row("upstream requests", "%d", r.upstreamRequests)
	if o.crash {
		where := "after the restart"
		if o.db != "" {
			where = "on another replica"
		}
		row("cut or refused by the "+o.signal(), "%d; resumed %s %d, to their end %d", r.cutByCrash, where, r.resumed, r.resumedOK)
		row("upstream calls with no stored run", "%d (the kill came before the writer created their run; no client saw any of it)", r.unrecorded)
		row("integrity_check after SIGKILL", "%s", r.integrityAfterKill)
		if o.db != "" && o.graceful {
			row("runs running after the stop", "%d (those handed over, and the others' own); at the end: %d interrupted in all, %d left running",
				r.runningAtKill, r.interruptedAtStart, r.runningAfterStart)
		} else if o.db != "" {
			row("runs running after the load", "%d (the killed replica's); the survivors took them over: %d interrupted, %d left running",
				r.runningAtKill, r.interruptedAtStart, r.runningAfterStart)
		} else if r.opt.upstreamDialect == dialectA2A {
			row("runs the restart interrupted", "%d; resumed upstream the other %d (the agent's tasks, resubscribed; %d still running at the first look)",
				r.interruptedAtStart, r.runningAtKill-r.interruptedAtStart, r.runningAfterStart)
		} else {
			row("runs the restart interrupted", "%d; still running after it %d", r.interruptedAtStart, r.runningAfterStart)
		}
		row("peak RSS before the kill", "%.1f MiB", float64(r.peakRSS)/(1<<20))
	} else {
		if r.goroutineNote != "" {
			row("goroutines", "%s", r.goroutineNote)
		} else {
			row("goroutines (scheduler trace)", "%d before, %d at the peak, %d after", r.goroutinesBefore, r.goroutinesPeak, r.goroutinesAfter)
		}
		row("peak RSS (VmHWM)", "%.1f MiB (%.1f MiB after the load)", float64(r.peakRSS)/(1<<20), float64(r.rssAfter)/(1<<20))
		row("runs ended (metric)", "%s", fmtCounts(r.runsEnded))
		row("upstream errors (metric)", "%s", fmtCounts(r.upstreamErrors))
		row("breaker state changes", "%v (metric), %d (log)", r.breakerChanges, r.breakerLogLines)
	}
	row("bridge process", "%s", r.exit)
	row("store", "%d runs (%s), %d events; %d runs with problems", r.storedRuns, fmtCounts(r.byStatus), r.storedEvents, r.badRuns)
	if o.db == "" {
		row("WAL file during the load", "at most %.1f MiB (sampled every 100 ms)", float64(r.walPeak)/(1<<20))
	}
	row("integrity_check", "%s", r.integrity)
	var warns []string
	for k, n := range r.logCounts {
		if strings.HasPrefix(k, "WARN") || strings.HasPrefix(k, "ERROR") {
			warns = append(warns, fmt.Sprintf("%s x%d", k, n))
		}
	}
	slices.Sort(warns)
	if len(warns) > 0 {
		row("bridge log warnings", "%s", strings.Join(warns, "; "))
	}
	if r.kept {
		row("work directory", "%s", r.dir)
	}
	if len(r.failures) == 0 {
		fmt.Fprintln(w, "PASS")
		return
	}
	fmt.Fprintln(w, "FAIL")
	for _, f := range r.failures {
		fmt.Fprintln(w, "  - "+f)
	}
}

func fmtCounts[K ~string, V int | float64](m map[K]V) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := string(k)
		if name == "" {
			name = "(none)"
		}
		parts[i] = fmt.Sprintf("%s %v", name, m[k])
	}
	return strings.Join(parts, ", ")
}

// dist summarizes durations.
type dist struct {
	n             int
	p50, p99, max time.Duration
}

func distOf(ds []time.Duration) dist {
	if len(ds) == 0 {
		return dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration { // nearest rank
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return dist{n: len(s), p50: rank(0.50), p99: rank(0.99), max: s[len(s)-1]}
}

func (d dist) String() string {
	if d.n == 0 {
		return "none"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("p50 %s, p99 %s, max %s (%d streams)", ms(d.p50), ms(d.p99), ms(d.max), d.n)
}

// peakSize samples the size of the file at path every interval until done
// closes, and returns the largest it saw (0 if it never saw the file).
func peakSize(path string, every time.Duration, done <-chan struct{}) int64 {
	t := time.NewTicker(every)
	defer t.Stop()
	var peak int64
	for {
		if fi, err := os.Stat(path); err == nil {
			peak = max(peak, fi.Size())
		}
		select {
		case <-t.C:
		case <-done:
			return peak
		}
	}
}

// signal names how the crash stops the bridge.
func (o options) signal() string {
	if o.graceful {
		return "SIGTERM"
	}
	return "SIGKILL"
}

package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// The short soak: the real bridge serve, 50 streams at once for 3 s with
// one in 20 failing upstream half-way, and the same with a SIGKILL half-way
// and a restart. Every check of the full soak applies.

// keepDir, when set (go test ./tools/bridgesoak -args -keep DIR), keeps
// each soak's work directory as DIR/<test name>, its database and the
// bridges' logs, to read after a failure (t.TempDir's is removed).
var keepDir = flag.String("keep", "", "keep each soak's work directory (database, bridge logs) as `DIR`/<test name>")

var (
	buildOnce sync.Once
	bridgeBin string
	buildErr  error
)

// builtBridge builds cmd/bridge once per test binary, with the race
// detector when the test has it.
func builtBridge(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bridgesoak-bin-")
		if err != nil {
			buildErr = err
			return
		}
		bridgeBin, buildErr = buildBridge(t.Context(), dir, raceEnabled)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bridgeBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bridgeBin != "" {
		_ = os.RemoveAll(filepath.Dir(bridgeBin))
	}
	os.Exit(code)
}

func shortSoak(t *testing.T) options {
	if runtime.GOOS != "linux" {
		t.Skip("the soak reads /proc/<pid>/status: linux only")
	}
	opt := defaultOptions()
	opt.concurrency = 50
	opt.duration = 3 * time.Second
	opt.warmup = 5
	opt.timeout = 2 * time.Minute
	opt.streamTimeout = time.Minute
	opt.gtrace = 500 * time.Millisecond
	opt.bridge = builtBridge(t)
	opt.dir = t.TempDir()
	if *keepDir != "" {
		opt.dir = filepath.Join(*keepDir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.RemoveAll(opt.dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(opt.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("the soak's work directory is kept: %s", opt.dir)
	}
	return opt
}

func runSoak(t *testing.T, opt options) *result {
	t.Helper()
	if err := opt.validate(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := soak(t.Context(), opt, &log)
	var table bytes.Buffer
	if res != nil {
		res.print(&table)
	}
	t.Logf("\n%s%s", log.String(), table.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.failures {
		t.Error(f)
	}
	if t.Failed() {
		t.Logf("bridge log:\n%s", tail(opt.dir+"/bridge.log", 40))
	}
	return res
}

func TestSoak(t *testing.T) {
	res := runSoak(t, shortSoak(t))
	if res.injected == 0 || res.byOutcome[clientFailed] != res.injected {
		t.Errorf("%d injected faults, %d failed streams: want as many, and some", res.injected, res.byOutcome[clientFailed])
	}
	for _, d := range []string{dialectOpenAI, dialectAnthropic, dialectA2A} {
		if res.byDialect[d+" "+clientCompleted] == 0 || res.byDialect[d+" "+clientFailed] == 0 {
			t.Errorf("%s: %d completed, %d failed streams: want some of each", d,
				res.byDialect[d+" "+clientCompleted], res.byDialect[d+" "+clientFailed])
		}
	}
	if res.goroutinesBefore == 0 || res.goroutinesAfter == 0 || res.peakRSS == 0 {
		t.Errorf("goroutines %d before, %d after, peak RSS %d: want all measured", res.goroutinesBefore, res.goroutinesAfter, res.peakRSS)
	}
	if res.storedRuns != res.started+res.warmup {
		t.Errorf("%d runs stored, want %d", res.storedRuns, res.started+res.warmup)
	}
}

// TestSoakAnthropicUpstream: the same soak with the bridge calling a fake
// Anthropic Messages upstream, whose faults are a cut connection and an
// in-stream error event.
func TestSoakAnthropicUpstream(t *testing.T) { soakOver(t, dialectAnthropic) }

// TestSoakA2AUpstream: the same soak with the bridge calling an A2A agent
// (a2a-go's server), whose faults are a connection cut under its stream
// (the bridge resubscribes and learns the failed outcome) and a failed task.
func TestSoakA2AUpstream(t *testing.T) { soakOver(t, dialectA2A) }

// soakOver runs the short soak over an upstream of dialect: the failed
// streams are exactly the injected faults, some complete, and every
// stream has its run.
func soakOver(t *testing.T, dialect string) {
	opt := shortSoak(t)
	opt.upstreamDialect = dialect
	res := runSoak(t, opt)
	if res.injected == 0 || res.byOutcome[clientFailed] != res.injected || res.byOutcome[clientCompleted] == 0 {
		t.Errorf("%d injected faults, %d failed and %d completed streams: want as many failed, and some of each",
			res.injected, res.byOutcome[clientFailed], res.byOutcome[clientCompleted])
	}
	if res.storedRuns != res.started+res.warmup {
		t.Errorf("%d runs stored, want %d", res.storedRuns, res.started+res.warmup)
	}
}

func TestSoakCrash(t *testing.T) {
	opt := shortSoak(t)
	opt.crash = true
	opt.crashAfter = 1500 * time.Millisecond
	res := runSoak(t, opt)
	if res.killedAt == 0 || res.integrityAfterKill != "ok" {
		t.Errorf("killed at %s, integrity after the kill %q: want a kill and ok", res.killedAt, res.integrityAfterKill)
	}
	if res.cutByCrash == 0 || res.resumed == 0 {
		t.Errorf("%d streams cut by the kill, %d resumed: want some", res.cutByCrash, res.resumed)
	}
}

// TestSoakReplicasCrash: the short soak over three replicas on one
// PostgreSQL (pgtest's server, a fresh schema), the streams spread over
// them by turns; one is SIGKILLed and not restarted. The others take its
// runs over, every stream it cut resumes on one of them to its end, every
// event id a client received is in the database, and no run is left
// running.
func TestSoakReplicasCrash(t *testing.T) {
	opt := shortSoak(t)
	opt.replicas = 3
	opt.db = pgtest.Start(t)
	opt.lease = time.Second
	opt.crash = true
	opt.crashAfter = 1500 * time.Millisecond
	res := runSoak(t, opt)
	if res.killedAt == 0 || res.cutByCrash == 0 || res.resumed == 0 || res.resumedOK != res.resumed {
		t.Errorf("killed at %s, %d streams cut by the kill, %d resumed, %d to their end: want a kill, and every cut stream resumed to its end",
			res.killedAt, res.cutByCrash, res.resumed, res.resumedOK)
	}
	if res.byOutcome[clientCompleted] == 0 {
		t.Errorf("no stream completed on the surviving replicas: %v", res.byOutcome)
	}
}

// TestSoakReplicasGracefulA2A: the short soak over three replicas on one
// PostgreSQL calling an A2A agent, with streams of 1-4 s; one replica is
// stopped with SIGTERM (grace 100 ms) half-way. It hands the runs it has
// going to the others instead of interrupting them: they are still
// running after it exited, the others resume them upstream, every stream
// the stop cut resumes on another replica to its end, every event id a
// client received is in the database, and no run is left running.
func TestSoakReplicasGracefulA2A(t *testing.T) {
	opt := shortSoak(t)
	opt.replicas = 3
	opt.db = pgtest.Start(t)
	opt.crash, opt.graceful = true, true
	opt.crashAfter = 1500 * time.Millisecond
	opt.upstreamDialect = dialectA2A
	opt.chunksMin, opt.chunksMax = 100, 200
	opt.paceMin, opt.paceMax = 10*time.Millisecond, 20*time.Millisecond
	res := runSoak(t, opt)
	if res.killedAt == 0 || res.cutByCrash == 0 || res.resumed == 0 || res.resumedOK != res.resumed {
		t.Errorf("stopped at %s, %d streams cut by the stop, %d resumed, %d to their end: want a stop, and every cut stream resumed to its end",
			res.killedAt, res.cutByCrash, res.resumed, res.resumedOK)
	}
	// The stop cut streams whose runs went on elsewhere: none cancelled
	// (a run without a session is not cancelled by its client's cut on a
	// shared store: bridge.Engine.Drain), and interrupted at most the few
	// whose agent had not named its task yet.
	if n := res.byStatus[string(bridge.StatusCancelled)]; n != 0 {
		t.Errorf("%d runs cancelled in the store (%v), want none", n, res.byStatus)
	}
	if n := res.byStatus[string(bridge.StatusInterrupted)]; n*2 >= res.cutByCrash {
		t.Errorf("%d runs interrupted of %d streams the stop cut: want most of them handed over and completed (%v)", n, res.cutByCrash, res.byStatus)
	}
}

// TestSoakCrashA2AUpstream: the SIGKILL with the bridge calling an A2A agent
// (another bridge, which replays after Last-Event-ID): the restart resumes
// the runs upstream instead of closing them, and every cut stream resumes
// to its end; the store holds every run's whole text.
func TestSoakCrashA2AUpstream(t *testing.T) {
	opt := shortSoak(t)
	opt.crash = true
	opt.crashAfter = 1500 * time.Millisecond
	opt.upstreamDialect = dialectA2A
	res := runSoak(t, opt)
	if res.killedAt == 0 || res.cutByCrash == 0 || res.resumed == 0 {
		t.Errorf("killed at %s, %d streams cut by the kill, %d resumed: want a kill and some of each", res.killedAt, res.cutByCrash, res.resumed)
	}
	if res.runningAtKill == 0 || res.interruptedAtStart == res.runningAtKill {
		t.Errorf("%d runs running at the kill, %d interrupted by the restart: want some resumed upstream", res.runningAtKill, res.interruptedAtStart)
	}
}

// TestDialectOf: the clients' dialects take turns so that each gets both
// kinds of fault.
func TestDialectOf(t *testing.T) {
	opt := defaultOptions()
	c := newSoakClient([]string{"http://127.0.0.1:1"}, 1, opt.dialects)
	seen := map[string]int{}
	for k := int64(1); k <= 2000; k++ {
		seen[c.dialectOf(k)+" "+string(opt.script(k).fault)]++
	}
	for _, d := range opt.dialects {
		for _, f := range []fault{faultNone, faultCut, faultError} {
			if seen[d+" "+string(f)] < 10 {
				t.Errorf("%s %s: %d scripts of 2000, want 10 or more (%v)", d, f, seen[d+" "+string(f)], seen)
			}
		}
	}
}

func TestScript(t *testing.T) {
	opt := defaultOptions()
	faults := map[fault]int{}
	for k := int64(1); k <= 2000; k++ {
		s := opt.script(k)
		faults[s.fault]++
		if s.chunks < opt.chunksMin || s.chunks > opt.chunksMax || s.pace < opt.paceMin || s.pace > opt.paceMax {
			t.Fatalf("script %d: %+v out of the options' bounds", k, s)
		}
		back, err := parseScript(s.model())
		if err != nil || back != s {
			t.Fatalf("parseScript(%q) = %+v, %v; want %+v", s.model(), back, err, s)
		}
	}
	if faults[faultCut] != 50 || faults[faultError] != 50 {
		t.Errorf("faults in 2000 streams: %v, want 50 cut and 50 err (5%%)", faults)
	}
}

func TestGoroutineCount(t *testing.T) {
	log := "noise\nSCHED 0ms: gomaxprocs=2\n  P0: status=0\n  M1: p=nil\n  G1: status=4(select) m=nil lockedm=nil\n" +
		"  G2: status=6() m=nil lockedm=nil\n  G3: status=11() m=1 lockedm=1\n  G4: status=4100(select) m=nil lockedm=nil\n" +
		"  G5: status=2() m=0 lockedm=nil\ntime=x level=INFO msg=\"run ended\"\nSCHED 1000ms: gomaxprocs=2\n  G1: status=4(select) m=nil lockedm=nil\n"
	path := t.TempDir() + "/log"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := gdumps(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].count != 3 {
		t.Errorf("gdumps = %+v, want one complete trace of 3 goroutines (G1, G4 scanning, G5)", ds)
	}
}

// TestSoakBreakerOpens is the control of the breaker check: when every
// upstream stream fails half-way, the breaker opens (after 5 in a row) and
// the soak says so.
func TestSoakBreakerOpens(t *testing.T) {
	opt := shortSoak(t)
	opt.concurrency, opt.duration, opt.failEvery, opt.warmup, opt.gtrace = 1, time.Second, 1, 0, 0
	var log bytes.Buffer
	res, err := soak(t.Context(), opt, &log)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	res.print(&table)
	if res.breakerChanges == 0 || res.breakerLogLines == 0 || len(res.failures) == 0 {
		t.Errorf("every stream failed, yet the breaker changed state %v times (metric), %d (log); failures %q",
			res.breakerChanges, res.breakerLogLines, res.failures)
	}
	if res.byOutcome[clientRefused] == 0 {
		t.Errorf("no stream was refused by the open breaker")
	}
	if t.Failed() {
		t.Logf("\n%s%s", log.String(), table.String())
	}
}

// TestBadFlags: options that cannot make a soak are refused with a reason.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--upstream-dialect", "grpc"},
		{"--dialects", "openai,soap"},
		{"--concurrency", "0"},
		{"--replicas", "3"},
		{"--db", "./x.db"},
		{"--replicas", "2", "--db", "postgres://localhost/x", "--crash", "--replicas", "1"},
	} {
		var stderr strings.Builder
		if code := run(args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "bridgesoak:") {
			t.Errorf("%q: exit %d, %q; want 2 and a reason", args, code, stderr.String())
		}
	}
}

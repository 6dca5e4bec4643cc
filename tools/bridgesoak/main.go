// Command bridgesoak is the reliability soak of `bridge serve`: many
// concurrent streaming runs against a local upstream some of whose streams
// fail half-way, then a look at the process and at its SQLite file.
//
// It builds cmd/bridge (or takes --bridge), starts it as a child process on
// 127.0.0.1 with a fresh --db, in front of a fake OpenAI upstream served
// from this process (or, with --upstream-dialect anthropic, a fake
// Anthropic Messages one; with a2a, an A2A agent on a2a-go's server), and
// runs --concurrency clients for --duration. The clients speak the
// --dialects by turns (OpenAI Chat Completions, Anthropic Messages and A2A
// by default, all over the same upstream). Each
// stream asks for 20-50 chunks a few ms apart; every --fail-every-th one's
// upstream stream fails after half its chunks (alternately: the connection
// is cut, or an in-stream error object). It then checks:
//
//   - every client saw the end of its stream ([DONE], message_stop) after
//     the whole text, or an error frame after the text that came before
//     its upstream's fault, and the failed streams are exactly the injected
//     faults;
//   - goroutines of the bridge before and after the load, counted by the Go
//     runtime's scheduler trace (GODEBUG schedtrace, scheddetail) in its
//     log, once its idle connections are closed; its peak RSS (VmHWM);
//   - the circuit breaker never changed state (its metric and its log line);
//   - in the SQLite file: every run is in a final state, its events are
//     seqs 1..last_seq with exactly one final, last, whose status is the
//     run's, and its text is what the upstream sent; PRAGMA integrity_check.
//
// With --crash the bridge is SIGKILLed --crash-after into the load, checked
// (integrity_check), restarted on the same file, and then: no run is left
// running (over an A2A upstream the restart resumes them upstream instead,
// and they end there), every event id a client had received is in the
// file, and each stream the kill cut resumes (GET /v1/runs/{run}/events
// with Last-Event-ID) to its end, whose text is the stored one. With
// --crash the A2A agent is another bridge (A2A over the fake OpenAI
// upstream), which replays a task's events after Last-Event-ID: a2a-go's
// server follows only what a task does after the resubscribe.
//
// With --graceful the replica is stopped with SIGTERM and a grace of
// 100 ms instead: the runs it has going then that can be resumed (over an
// A2A agent) are handed over to the others, which resume them upstream;
// the checks are the crash's.
//
// With --replicas N --db postgres://… the soak runs N bridges on one
// PostgreSQL database (in a fresh schema of its own), the clients' streams
// spread over them by turns as a round-robin load balancer would. With
// --crash one replica is SIGKILLed and not restarted: the others take its
// runs over once its lease ends (--lease), every stream it cut resumes on
// another replica from the last id its client saw, to its end, and the
// store check (through storage/postgres) finds every event id a client
// received and no run left running.
//
// All traffic stays on 127.0.0.1; --timeout bounds the whole run; the exit
// status is 1 when a check fails.
//
//	go run ./tools/bridgesoak                      # 500 streams for 60 s
//	go run ./tools/bridgesoak --crash              # with a SIGKILL half-way
//	go run ./tools/bridgesoak --replicas 3 --db postgres://localhost/bridge --crash
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/storage/postgres"
)

// options are the flags.
type options struct {
	concurrency int
	dialects    []string
	// upstreamDialect is the dialect the bridge calls its upstream in.
	upstreamDialect string
	duration        time.Duration
	chunksMin       int
	chunksMax       int
	paceMin         time.Duration
	paceMax         time.Duration
	failEvery       int
	warmup          int
	crash           bool
	graceful        bool // with crash over replicas: SIGTERM with a short grace, not SIGKILL
	crashAfter      time.Duration
	bridge          string
	race            bool
	timeout         time.Duration
	streamTimeout   time.Duration
	gtrace          time.Duration
	slack           int
	dir             string
	keep            bool
	// replicas bridges share db, a postgres:// URL ("" : a SQLite file
	// in dir, one bridge); lease is their --lease.
	replicas int
	db       string
	lease    time.Duration
}

func defaultOptions() options {
	return options{
		concurrency:     500,
		dialects:        []string{dialectOpenAI, dialectAnthropic, dialectA2A},
		upstreamDialect: dialectOpenAI,
		duration:        60 * time.Second,
		chunksMin:       20,
		chunksMax:       50,
		paceMin:         2 * time.Millisecond,
		paceMax:         8 * time.Millisecond,
		failEvery:       20,
		warmup:          20,
		timeout:         10 * time.Minute,
		streamTimeout:   2 * time.Minute,
		gtrace:          2 * time.Second,
		slack:           10,
		replicas:        1,
		lease:           2 * time.Second,
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	opt := defaultOptions()
	fs := flag.NewFlagSet("bridgesoak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&opt.concurrency, "concurrency", opt.concurrency, "concurrent streaming clients")
	fs.StringVar(&opt.upstreamDialect, "upstream-dialect", opt.upstreamDialect, "the dialect the bridge calls the fake upstream in: openai, anthropic or a2a")
	fs.Func("dialects", "inbound dialects the clients speak by turns, comma-separated: openai, anthropic, a2a (default openai,anthropic,a2a)", func(v string) error {
		opt.dialects = nil
		for d := range strings.SplitSeq(v, ",") {
			d = strings.TrimSpace(d)
			if d != dialectOpenAI && d != dialectAnthropic && d != dialectA2A {
				return fmt.Errorf("unknown dialect %q (want openai, anthropic or a2a)", d)
			}
			if !slices.Contains(opt.dialects, d) {
				opt.dialects = append(opt.dialects, d)
			}
		}
		return nil
	})
	fs.DurationVar(&opt.duration, "duration", opt.duration, "how long the clients start new streams")
	fs.IntVar(&opt.chunksMin, "chunks-min", opt.chunksMin, "fewest content chunks of a stream")
	fs.IntVar(&opt.chunksMax, "chunks-max", opt.chunksMax, "most content chunks of a stream")
	fs.DurationVar(&opt.paceMin, "pace-min", opt.paceMin, "shortest pause of the upstream before a content chunk")
	fs.DurationVar(&opt.paceMax, "pace-max", opt.paceMax, "longest pause of the upstream before a content chunk")
	fs.IntVar(&opt.failEvery, "fail-every", opt.failEvery, "one stream in this many fails upstream half-way (20: 5%; 1: all, which opens the breaker; 0: none)")
	fs.IntVar(&opt.warmup, "warmup", opt.warmup, "streams before the goroutine baseline")
	fs.BoolVar(&opt.crash, "crash", false, "SIGKILL the bridge during the load, restart it on the same file, and check the file")
	fs.BoolVar(&opt.graceful, "graceful", false, "with --crash over --replicas: stop the replica with SIGTERM (shutdown_grace 100ms) instead of SIGKILL; the runs it has going that can be resumed (--upstream-dialect a2a) are handed to the others")
	fs.DurationVar(&opt.crashAfter, "crash-after", 0, "when the SIGKILL comes, from the start of the load (0: half --duration)")
	fs.StringVar(&opt.bridge, "bridge", "", "the bridge binary (default: go build ./cmd/bridge into the work directory)")
	fs.BoolVar(&opt.race, "race", false, "build the bridge with the race detector")
	fs.DurationVar(&opt.timeout, "timeout", opt.timeout, "bound on the whole run")
	fs.DurationVar(&opt.streamTimeout, "stream-timeout", opt.streamTimeout, "bound on one stream")
	fs.DurationVar(&opt.gtrace, "gtrace", opt.gtrace, "interval of the bridge's scheduler trace, which counts its goroutines (0: off)")
	fs.IntVar(&opt.slack, "goroutine-slack", opt.slack, "goroutines the bridge may have after the load beyond those before it")
	fs.StringVar(&opt.dir, "dir", "", "work directory: the binary, the database, the logs (default: a temporary one, removed unless --keep or a check fails)")
	fs.BoolVar(&opt.keep, "keep", false, "keep the work directory")
	fs.IntVar(&opt.replicas, "replicas", opt.replicas, "bridges on one database (more than 1 needs --db postgres://…); with --crash, one is SIGKILLed")
	fs.StringVar(&opt.db, "db", "", "a postgres:// URL: the bridges' log, in a fresh schema the soak creates (default: a SQLite file in the work directory)")
	fs.DurationVar(&opt.lease, "lease", opt.lease, "with --db postgres://…, the replicas' run lease (how soon a killed one's runs are taken over)")
	if err := fs.Parse(args); err != nil {
		return opt, err
	}
	if fs.NArg() > 0 {
		return opt, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if opt.crashAfter == 0 {
		opt.crashAfter = opt.duration / 2
	}
	return opt, opt.validate()
}

func (o options) validate() error {
	switch {
	case o.concurrency < 1 || o.concurrency > 5000:
		return errors.New("--concurrency: want 1 to 5000")
	case o.duration <= 0 || o.duration > time.Hour:
		return errors.New("--duration: want more than 0, at most 1h")
	case o.chunksMin < 2 || o.chunksMax < o.chunksMin || o.chunksMax > 10_000:
		return errors.New("--chunks-min, --chunks-max: want 2 <= min <= max <= 10000")
	case o.paceMin < 0 || o.paceMax < o.paceMin || o.paceMax > 10*time.Second:
		return errors.New("--pace-min, --pace-max: want 0 <= min <= max <= 10s")
	case o.failEvery < 0:
		return errors.New("--fail-every: want 0 or more")
	case o.warmup < 0 || o.warmup > 10_000:
		return errors.New("--warmup: want 0 to 10000")
	case o.crash && (o.crashAfter <= 0 || o.crashAfter >= o.duration):
		return errors.New("--crash-after: want more than 0 and less than --duration")
	case o.timeout <= 0 || o.streamTimeout <= 0:
		return errors.New("--timeout, --stream-timeout: want a positive duration")
	case o.gtrace < 0 || o.gtrace > time.Minute:
		return errors.New("--gtrace: want 0 to 1m")
	case o.upstreamDialect != dialectOpenAI && o.upstreamDialect != dialectAnthropic && o.upstreamDialect != dialectA2A:
		return fmt.Errorf("--upstream-dialect: %q, want openai, anthropic or a2a", o.upstreamDialect)
	case len(o.dialects) == 0:
		return errors.New("--dialects: none given")
	case o.slack < 0:
		return errors.New("--goroutine-slack: want 0 or more")
	case o.replicas < 1 || o.replicas > 16:
		return errors.New("--replicas: want 1 to 16")
	case o.db != "" && !postgres.IsURL(o.db):
		return errors.New("--db: want a postgres:// URL (the default is a SQLite file)")
	case o.replicas > 1 && o.db == "":
		return errors.New("--replicas: more than one needs --db postgres://…")
	case o.graceful && (!o.crash || o.db == "" || o.replicas < 2):
		return errors.New("--graceful: with --crash over --replicas 2 or more on --db postgres://…")
	case o.crash && o.db != "" && o.replicas < 2:
		return errors.New("--crash with --db postgres://… needs --replicas 2 or more: the others take the killed one's runs over")
	case o.lease <= 0:
		return errors.New("--lease: want a positive duration")
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	opt, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "bridgesoak:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), opt.timeout)
	defer cancel()
	res, err := soak(ctx, opt, stderr)
	if res != nil {
		res.print(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bridgesoak:", err)
		return 1
	}
	if len(res.failures) > 0 {
		return 1
	}
	return 0
}

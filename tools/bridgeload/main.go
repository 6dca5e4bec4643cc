// Command bridgeload measures what the bridge adds to a streaming chat
// completion, in one run, against four targets: a fake OpenAI upstream
// alone (direct), a bare reverse proxy in front of it (proxy: the floor any
// bridge pays), the bridge itself (bridge: wired in-process as `bridge
// serve` wires it, persisting every event to a SQLite file), and the same
// bridge with Anthropic Messages clients (anthropic).
//
// For each target it measures, in a child process of its own (so peak RSS
// is that target's):
//
//   - memory: --paced-streams streams open at once, each chunk --pace
//     apart: the process's peak RSS (VmHWM) and peak Go heap in use;
//   - latency: --latency-requests streams one after another: median and p99
//     time to the first content chunk (TTFB) and to [DONE] (TTLB). By
//     default (--paired) this phase runs apart: every target served at
//     once, each in a process of its own, the fake upstream in another, and
//     one client process sending each stream to every target in turn, so a
//     drift of the machine's speed touches them alike;
//   - throughput: --streams streams, --concurrency at a time, unpaced:
//     streams per second and the streams cut short (no [DONE], an error, or
//     text that differs from what the upstream sent).
//
// and prints them beside the goals of the foundation issue. All traffic
// stays on 127.0.0.1; --timeout bounds the whole run.
//
//	go run ./tools/bridgeload --rounds 3
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are the flags; a child process gets them back as flags.
type options struct {
	streams         int
	concurrency     int
	chunks          int
	pace            time.Duration
	latencyPace     time.Duration
	pacedStreams    int
	latencyRequests int
	warmup          int
	rounds          int
	targets         []string
	proxyIdleConns  int
	maxRuns         int
	timeout         time.Duration
	json            bool
	fork            bool
	split           bool
	url             string // the client role's target
	dialect         string // the client role's dialect
	paired          bool
	pairs           string // the paired-client role's targets, JSON
	upstreamURL     string // the serve role's upstream
	check           bool
	cpuprofile      string
	echoBytes       int  // --echo-bytes: measure one echo request's memory instead
	maxRSS          int  // --max-rss, MiB
	echoChannel     bool // --echo-channel: a lagging session channel beside the echo request
}

// roleEnv marks a child process: it measures the one target it is given
// and prints its Result as JSON.
const roleEnv = "BRIDGELOAD_ROLE"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func parseFlags(args []string, stderr io.Writer) (options, string, error) {
	var (
		opt     options
		targets string
		child   string
	)
	fs := flag.NewFlagSet("bridgeload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&opt.streams, "streams", 10_000, "streams of the throughput phase (each target)")
	fs.IntVar(&opt.concurrency, "concurrency", 50, "concurrent streams of the throughput phase")
	fs.IntVar(&opt.chunks, "chunks", 100, "content chunks per stream")
	fs.DurationVar(&opt.pace, "pace", 10*time.Millisecond, "pause before each content chunk of the memory phase's paced streams")
	fs.DurationVar(&opt.latencyPace, "latency-pace", 0, "pause before each content chunk of the latency phase")
	fs.IntVar(&opt.pacedStreams, "paced-streams", 100, "paced streams open at once in the memory phase (0: skip)")
	fs.IntVar(&opt.latencyRequests, "latency-requests", 500, "sequential streams of the latency phase (0: skip)")
	fs.IntVar(&opt.warmup, "warmup", 20, "unmeasured streams before the phases")
	fs.IntVar(&opt.rounds, "rounds", 1, "measure the targets this many times, interleaved, and report each figure's median (for a noisy machine)")
	fs.StringVar(&targets, "targets", strings.Join(allTargets, ","), "targets to measure, comma-separated: direct, proxy, bridge, anthropic (the bridge with Anthropic Messages clients)")
	fs.IntVar(&opt.proxyIdleConns, "proxy-idle-conns", 256, "idle upstream connections per host the proxy keeps (0: Go's default, 2; the bridge's client keeps 256)")
	fs.IntVar(&opt.maxRuns, "max-runs", 0, "runs per principal the bridge admits at once (0: enough for --concurrency and --paced-streams; bridge serve's default is 64)")
	fs.DurationVar(&opt.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	fs.BoolVar(&opt.json, "json", false, "print the results as JSON on stdout (the table goes to stderr)")
	fs.BoolVar(&opt.fork, "fork", true, "measure each target in a child process of its own (else all in this one; RSS is then shared)")
	fs.BoolVar(&opt.split, "split", false, "run the fake upstream, and the latency phase's client, each in a process of its own (as deployed: they no longer share the target's Go scheduler)")
	fs.BoolVar(&opt.check, "check", false, "exit 1 when a goal is missed")
	fs.StringVar(&opt.cpuprofile, "cpuprofile", "", "write CPU profiles of the latency and throughput phases to `PREFIX`.<target>.<phase>.pprof")
	fs.IntVar(&opt.echoBytes, "echo-bytes", 0, "measure instead the peak RSS of a bridge (a process of its own, wired as `bridge serve` with its echo upstream and a SQLite file) answering one streamed request of this many bytes of text, which echo streams back a word at a time (8000000: two million events)")
	fs.IntVar(&opt.maxRSS, "max-rss", 0, "with --echo-bytes: exit 1 when the bridge's peak RSS is above this many MiB (0: no limit)")
	fs.BoolVar(&opt.echoChannel, "echo-channel", false, "with --echo-bytes: open the request's session channel (GET /v1/sessions/{s}/events) first and read nothing of it until the request's stream has ended, then read it whole and check it carries the same text (a lagging channel's memory)")
	fs.StringVar(&child, "target", "", "internal: the target a child process measures")
	fs.StringVar(&opt.url, "url", "", "internal: the target URL a client process measures")
	fs.StringVar(&opt.dialect, "dialect", dialectOpenAI, "internal: the dialect a client process speaks")
	fs.BoolVar(&opt.paired, "paired", true, "measure the latency phase paired: every target served at once in a process of its own, one client process sending each stream to the targets in turn (a drift of the machine's speed then touches them alike); implies --split. --paired=false measures each target alone, in one process with its client and upstream unless --split")
	fs.StringVar(&opt.pairs, "pairs", "", "internal: the targets of a paired client process")
	fs.StringVar(&opt.upstreamURL, "upstream-url", "", "internal: the upstream a serve process's target calls")
	if err := fs.Parse(args); err != nil {
		return opt, "", err
	}
	if fs.NArg() > 0 {
		return opt, "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for t := range strings.SplitSeq(targets, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !slices.Contains(allTargets, t) {
			return opt, "", fmt.Errorf("--targets: unknown target %q (want %s)", t, strings.Join(allTargets, ", "))
		}
		if !slices.Contains(opt.targets, t) {
			opt.targets = append(opt.targets, t)
		}
	}
	switch {
	case len(opt.targets) == 0:
		return opt, "", errors.New("--targets: none given")
	case opt.streams < 0 || opt.streams > 1_000_000:
		return opt, "", errors.New("--streams: want 0 to 1000000")
	case opt.concurrency < 1 || opt.concurrency > 1000:
		return opt, "", errors.New("--concurrency: want 1 to 1000")
	case opt.pacedStreams < 0 || opt.pacedStreams > 1000:
		return opt, "", errors.New("--paced-streams: want 0 to 1000")
	case opt.chunks < 1 || opt.chunks > 100_000:
		return opt, "", errors.New("--chunks: want 1 to 100000")
	case opt.latencyRequests < 0 || opt.latencyRequests > 1_000_000:
		return opt, "", errors.New("--latency-requests: want 0 to 1000000")
	case opt.warmup < 0 || opt.warmup > 10_000:
		return opt, "", errors.New("--warmup: want 0 to 10000")
	case opt.pace < 0 || opt.latencyPace < 0 || opt.pace > time.Minute || opt.latencyPace > time.Minute:
		return opt, "", errors.New("--pace, --latency-pace: want 0 to 1m")
	case opt.rounds < 1 || opt.rounds > 100:
		return opt, "", errors.New("--rounds: want 1 to 100")
	case opt.proxyIdleConns < 0 || opt.maxRuns < 0:
		return opt, "", errors.New("--proxy-idle-conns, --max-runs: want 0 or more")
	case opt.timeout <= 0:
		return opt, "", errors.New("--timeout: want a positive duration")
	case opt.echoBytes < 0 || opt.echoBytes > maxEchoBytes || opt.maxRSS < 0:
		return opt, "", fmt.Errorf("--echo-bytes: want 0 to %d; --max-rss: want 0 or more", maxEchoBytes)
	case opt.echoChannel && opt.echoBytes == 0:
		return opt, "", errors.New("--echo-channel: only with --echo-bytes")
	}
	if opt.paired {
		opt.split = true
	}
	if opt.maxRuns == 0 {
		opt.maxRuns = max(opt.concurrency, opt.pacedStreams) + 8
	}
	return opt, child, nil
}

// childArgs are the flags a child gets for one target.
func (o options) childArgs(target string, timeout time.Duration) []string {
	return []string{
		"-target", target,
		"-streams", strconv.Itoa(o.streams),
		"-concurrency", strconv.Itoa(o.concurrency),
		"-chunks", strconv.Itoa(o.chunks),
		"-pace", o.pace.String(),
		"-latency-pace", o.latencyPace.String(),
		"-paced-streams", strconv.Itoa(o.pacedStreams),
		"-latency-requests", strconv.Itoa(o.latencyRequests),
		"-warmup", strconv.Itoa(o.warmup),
		"-targets", target,
		"-proxy-idle-conns", strconv.Itoa(o.proxyIdleConns),
		"-max-runs", strconv.Itoa(o.maxRuns),
		"-timeout", timeout.String(),
		"-cpuprofile", o.cpuprofile,
		"-split=" + strconv.FormatBool(o.split),
		"-paired=false", // a child measures its target alone; the parent pairs the latency phase
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	opt, child, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "bridgeload:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), opt.timeout)
	defer cancel()

	// The processes --split and --paired start: this program again, in a role.
	roles := map[string]func() error{
		roleUpstream:     func() error { return serveUpstreamRole(ctx, os.Stdin, stdout) },
		roleClient:       func() error { return runClientRole(ctx, opt, stdout) },
		roleServe:        func() error { return serveTargetRole(ctx, child, opt, os.Stdin, stdout) },
		rolePairedClient: func() error { return runPairedClientRole(ctx, opt, stdout) },
		roleEcho:         func() error { return serveEchoRole(ctx, os.Stdin, stdout) },
	}
	role := os.Getenv(roleEnv)
	if f, ok := roles[role]; ok {
		if err := f(); err != nil {
			fmt.Fprintf(stderr, "bridgeload: %s: %v\n", role, err)
			return 1
		}
		return 0
	}
	switch role {
	case roleChild:
		if child == "" {
			fmt.Fprintln(stderr, "bridgeload: child without -target")
			return 2
		}
		res, err := measure(ctx, child, opt)
		if err != nil {
			fmt.Fprintln(stderr, "bridgeload:", err)
			return 1
		}
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return 1
		}
		return 0
	}

	if opt.echoBytes > 0 {
		return echoMode(ctx, opt, stdout, stderr)
	}
	rep, err := runAll(ctx, opt, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bridgeload:", err)
		return 1
	}
	table := stdout
	if opt.json {
		table = stderr
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "bridgeload:", err)
			return 1
		}
	}
	printReport(table, rep)
	if opt.check && !rep.allMet() {
		return 1
	}
	return 0
}

// Report is a whole run: its settings, each target's results, the goals.
type Report struct {
	Settings map[string]any `json:"settings"`
	Results  []*Result      `json:"results"`
	Goals    []Goal         `json:"goals"`
}

func (r *Report) allMet() bool {
	for _, g := range r.Goals {
		if !g.Met {
			return false
		}
	}
	return true
}

func (r *Report) result(target string) *Result {
	for _, res := range r.Results {
		if res.Target == target {
			return res
		}
	}
	return nil
}

// runAll measures each target in turn, never two at once.
func runAll(ctx context.Context, opt options, stderr io.Writer) (*Report, error) {
	rep := &Report{Settings: map[string]any{
		"streams": opt.streams, "concurrency": opt.concurrency, "chunks": opt.chunks,
		"pace": opt.pace.String(), "latency_pace": opt.latencyPace.String(),
		"paced_streams": opt.pacedStreams, "latency_requests": opt.latencyRequests,
		"proxy_idle_conns": opt.proxyIdleConns, "max_runs": opt.maxRuns, "fork": opt.fork, "rounds": opt.rounds,
		"split": opt.split, "paired": opt.paired,
	}}
	byTarget := map[string][]*Result{}
	for round := range opt.rounds {
		var paired map[string]LatencyResult
		topt := opt
		if opt.paired && opt.latencyRequests > 0 {
			fmt.Fprintf(stderr, "bridgeload: round %d/%d: latency, paired: %s...\n", round+1, opt.rounds, strings.Join(opt.targets, ", "))
			var err error
			if paired, err = pairedLatency(ctx, opt, stderr); err != nil {
				return nil, err
			}
			topt.latencyRequests = 0 // measured
		}
		for _, t := range opt.targets {
			if opt.paired && topt.streams == 0 && topt.pacedStreams == 0 {
				byTarget[t] = append(byTarget[t], &Result{Target: t, Latency: paired[t]})
				continue
			}
			fmt.Fprintf(stderr, "bridgeload: round %d/%d: measuring %s...\n", round+1, opt.rounds, t)
			var (
				res *Result
				err error
			)
			if opt.fork {
				res, err = measureInChild(ctx, t, topt, stderr)
			} else {
				res, err = measure(ctx, t, topt)
			}
			if err != nil {
				return nil, err
			}
			if paired != nil {
				res.Latency = paired[t]
			}
			byTarget[t] = append(byTarget[t], res)
		}
	}
	for _, t := range opt.targets {
		rep.Results = append(rep.Results, medianResult(byTarget[t]))
	}
	rep.Goals = goals(rep)
	return rep, nil
}

// measureInChild re-executes this program to measure target alone.
func measureInChild(ctx context.Context, target string, opt options, stderr io.Writer) (*Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dl, _ := ctx.Deadline()
	cmd := exec.CommandContext(ctx, exe, opt.childArgs(target, time.Until(dl))...)
	cmd.Env = append(os.Environ(), roleEnv+"="+roleChild)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("measure %s: %w", target, err)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("measure %s: child output: %w", target, err)
	}
	return &res, nil
}

// Goal is one target of the foundation issue, checked.
type Goal struct {
	Name  string  `json:"name"`
	Want  string  `json:"want"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
}

// goals checks the bridge against the floor (the proxy) and the direct
// baseline, where both were measured.
func goals(rep *Report) []Goal {
	d, p, b := rep.result(targetDirect), rep.result(targetProxy), rep.result(targetBridge)
	var gs []Goal
	// ttfb checks what t adds to the upstream's median time to first
	// content against factor times what the floor adds.
	ttfb := func(t *Result, name, want string, factor float64) {
		if t == nil || d == nil || p == nil || t.Latency.TTFB.N == 0 || p.Latency.TTFB.N == 0 || d.Latency.TTFB.N == 0 {
			return
		}
		floor := p.Latency.TTFB.P50 - d.Latency.TTFB.P50
		added := t.Latency.TTFB.P50 - d.Latency.TTFB.P50
		gs = append(gs, Goal{Name: name, Want: want, Value: added, Limit: factor * floor, Met: added <= factor*floor})
	}
	ttfb(b, "added median TTFB (ms)", "<= 1.5 x the floor's", 1.5)
	// The Anthropic issue's goal: anthropic->openai adds at most 2x the floor.
	a := rep.result(targetAnthropic)
	ttfb(a, "anthropic: added median TTFB (ms)", "<= 2 x the floor's", 2)
	if a != nil && a.Throughput.Streams > 0 {
		gs = append(gs, Goal{Name: fmt.Sprintf("anthropic: streams cut short in %d", a.Throughput.Streams), Want: "0",
			Value: float64(a.Throughput.Cut), Limit: 0, Met: a.Throughput.Cut == 0})
	}
	if b == nil {
		return gs
	}
	if p != nil && b.Throughput.Streams > 0 && p.Throughput.Streams > 0 {
		limit := 0.5 * p.Throughput.StreamsPerSec
		gs = append(gs, Goal{Name: fmt.Sprintf("streams/s at %d concurrent", b.Throughput.Concurrency), Want: ">= 0.5 x the floor's",
			Value: b.Throughput.StreamsPerSec, Limit: limit, Met: b.Throughput.StreamsPerSec >= limit})
	}
	if p != nil && b.Memory.Streams > 0 && p.Memory.PeakRSSKiB > 0 {
		limit := 2 * float64(p.Memory.PeakRSSKiB) / 1024
		v := float64(b.Memory.PeakRSSKiB) / 1024
		gs = append(gs, Goal{Name: fmt.Sprintf("peak RSS with %d paced streams (MiB)", b.Memory.Streams), Want: "< 2 x the floor's",
			Value: v, Limit: limit, Met: v < limit})
	}
	if b.Throughput.Streams > 0 {
		gs = append(gs, Goal{Name: fmt.Sprintf("streams cut short in %d", b.Throughput.Streams), Want: "0",
			Value: float64(b.Throughput.Cut), Limit: 0, Met: b.Throughput.Cut == 0})
	}
	return gs
}

func printReport(w io.Writer, rep *Report) {
	s := rep.Settings
	fmt.Fprintf(w, "bridgeload: %v content chunks a stream; latency: %v sequential streams; throughput: %v streams, %v at a time; memory: %v streams open, chunks %v apart\n\n",
		s["chunks"], s["latency_requests"], s["streams"], s["concurrency"], s["paced_streams"], s["pace"])
	switch {
	case s["paired"] == true:
		fmt.Fprintf(w, "latency paired: the targets served at once, each in a process of its own, the fake upstream and the client in two more; the client sends each stream to every target in turn\n\n")
	case s["split"] == true:
		fmt.Fprintf(w, "split: the fake upstream, and the latency phase's client, each in a process of its own\n\n")
	}
	if n, _ := s["rounds"].(int); n > 1 {
		fmt.Fprintf(w, "each figure the median of %d rounds (targets interleaved); stream counts summed over them\n\n", n)
	}
	d := rep.result(targetDirect)
	cols := make([]*Result, 0, 3)
	for _, t := range allTargets {
		if r := rep.result(t); r != nil {
			cols = append(cols, r)
		}
	}
	fmt.Fprintf(w, "%-36s", "")
	for _, c := range cols {
		fmt.Fprintf(w, "%12s", c.Target)
	}
	fmt.Fprintln(w)
	row := func(name string, f func(*Result) string) {
		fmt.Fprintf(w, "%-36s", name)
		for _, c := range cols {
			fmt.Fprintf(w, "%12s", f(c))
		}
		fmt.Fprintln(w)
	}
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	added := func(f func(*Result) float64) func(*Result) string {
		return func(r *Result) string {
			if d == nil || r.Target == targetDirect {
				return "-"
			}
			return ms(f(r) - f(d))
		}
	}
	lat := func(f func(*Result) float64) func(*Result) string {
		return func(r *Result) string { return ms(f(r)) }
	}
	row("TTFB p50, sequential (ms)", lat(func(r *Result) float64 { return r.Latency.TTFB.P50 }))
	row("TTFB p99, sequential (ms)", lat(func(r *Result) float64 { return r.Latency.TTFB.P99 }))
	row("TTLB p50, sequential (ms)", lat(func(r *Result) float64 { return r.Latency.TTLB.P50 }))
	row("TTLB p99, sequential (ms)", lat(func(r *Result) float64 { return r.Latency.TTLB.P99 }))
	row("added TTFB p50 (ms)", added(func(r *Result) float64 { return r.Latency.TTFB.P50 }))
	row("added TTFB p99 (ms)", added(func(r *Result) float64 { return r.Latency.TTFB.P99 }))
	row("added TTLB p50 (ms)", added(func(r *Result) float64 { return r.Latency.TTLB.P50 }))
	row("added TTLB p99 (ms)", added(func(r *Result) float64 { return r.Latency.TTLB.P99 }))
	row("streams/s, concurrent", func(r *Result) string { return strconv.FormatFloat(r.Throughput.StreamsPerSec, 'f', 1, 64) })
	row("CPU per stream, concurrent (ms)", func(r *Result) string { return ms(r.Throughput.CPUPerStream) })
	row("added CPU per stream (ms)", added(func(r *Result) float64 { return r.Throughput.CPUPerStream }))
	row("TTFB p50, concurrent (ms)", lat(func(r *Result) float64 { return r.Throughput.TTFB.P50 }))
	row("TTLB p50, concurrent (ms)", lat(func(r *Result) float64 { return r.Throughput.TTLB.P50 }))
	row("TTLB p99, concurrent (ms)", lat(func(r *Result) float64 { return r.Throughput.TTLB.P99 }))
	row("upstream conns opened, concurrent", func(r *Result) string { return strconv.FormatInt(r.Throughput.UpstreamConns, 10) })
	mib := func(kib int64) string { return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64) }
	row("RSS before paced streams (MiB)", func(r *Result) string { return mib(r.Memory.BaselineRSSKiB) })
	row("peak RSS, paced streams (MiB)", func(r *Result) string { return mib(r.Memory.PeakRSSKiB) })
	row("heap in use before (MiB)", func(r *Result) string { return mib(int64(r.Memory.BaselineHeapBytes / 1024)) })
	row("peak heap in use, paced (MiB)", func(r *Result) string { return mib(int64(r.Memory.PeakHeapBytes / 1024)) })
	row("cut short, concurrent", func(r *Result) string { return fmt.Sprintf("%d/%d", r.Throughput.Cut, r.Throughput.Streams) })
	row("cut short, sequential + paced", func(r *Result) string {
		return fmt.Sprintf("%d/%d", r.Latency.Cut+r.Memory.Cut, r.Latency.Requests+r.Memory.Total)
	})
	for _, r := range cols {
		for _, reason := range slices.Concat(r.Latency.Reasons, r.Throughput.Reasons, r.Memory.Reasons) {
			fmt.Fprintf(w, "  %s cut short: %s\n", r.Target, reason)
		}
	}
	if b := rep.result(targetBridge); b != nil && len(b.Store) > 0 {
		fmt.Fprintf(w, "\nbridge store calls %12s %12s\n", "sequential", "concurrent")
		st := func(name string, f func(*StoreStats) float64) {
			fmt.Fprintf(w, "  %-30s", name)
			for _, ph := range []string{"latency", "throughput"} {
				if s := b.Store[ph]; s != nil {
					fmt.Fprintf(w, "%12.1f", f(s))
				} else {
					fmt.Fprintf(w, "%12s", "-")
				}
			}
			fmt.Fprintln(w)
		}
		st("commits per stream", func(s *StoreStats) float64 { return s.CommitsPer })
		st("events per commit", func(s *StoreStats) float64 { return s.EventsPerTx })
		st("commit mean (us)", func(s *StoreStats) float64 { return s.CommitUS })
		st("commit p50 (us)", func(s *StoreStats) float64 { return s.Commit.P50 * 1e3 })
		st("commit p99 (us)", func(s *StoreStats) float64 { return s.Commit.P99 * 1e3 })
		st("commit max (us)", func(s *StoreStats) float64 { return s.Commit.Max * 1e3 })
		st("CreateSession mean (us)", func(s *StoreStats) float64 { return s.CreateSession })
		st("Messages (transcript) mean (us)", func(s *StoreStats) float64 { return s.Messages })
		st("CreateRun mean (us)", func(s *StoreStats) float64 { return s.CreateRun })
		st("Run reads per stream", func(s *StoreStats) float64 { return s.RunReads })
		st("Run read mean (us)", func(s *StoreStats) float64 { return s.RunReadUS })
	}
	if len(rep.Goals) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-40s %-22s %12s %12s  %s\n", "goal (bridge)", "want", "bridge", "limit", "met")
	for _, g := range rep.Goals {
		met := "yes"
		if !g.Met {
			met = "NO"
		}
		fmt.Fprintf(w, "%-40s %-22s %12.3f %12.3f  %s\n", g.Name, g.Want, g.Value, g.Limit, met)
	}
}

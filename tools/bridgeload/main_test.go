package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as bridgeload's child process: the
// parent re-executes os.Executable() with roleEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestShortRun is a whole bridgeload run, children and all, scaled down: no
// stream of any target may be cut short, and every target must have
// produced every measurement.
func TestShortRun(t *testing.T) {
	rep, table := runReport(t, "--streams=50", "--concurrency=5", "--chunks=20", "--latency-requests=20",
		"--paced-streams=10", "--pace=2ms", "--warmup=2", "--timeout=60s")
	if len(rep.Results) != len(allTargets) {
		t.Fatalf("%d results, want one for each of %v", len(rep.Results), allTargets)
	}
	for i, r := range rep.Results {
		if r.Target != allTargets[i] {
			t.Errorf("result %d is for %q, want %q", i, r.Target, allTargets[i])
		}
		if n := r.Latency.Cut + r.Throughput.Cut + r.Memory.Cut; n > 0 {
			t.Errorf("%s: %d streams cut short: %v", r.Target,
				n, append(append(r.Latency.Reasons, r.Throughput.Reasons...), r.Memory.Reasons...))
		}
		if r.Latency.TTFB.N != 20 || r.Latency.TTLB.N != 20 || r.Latency.TTFB.P50 <= 0 || r.Latency.TTLB.P99 < r.Latency.TTFB.P50 {
			t.Errorf("%s: latency = %+v, want 20 streams measured", r.Target, r.Latency)
		}
		if r.Throughput.Streams != 50 || r.Throughput.TTLB.N != 50 || r.Throughput.StreamsPerSec <= 0 {
			t.Errorf("%s: throughput = %+v, want 50 streams measured", r.Target, r.Throughput)
		}
		if r.Memory.Streams != 10 || r.Memory.PeakRSSKiB <= 0 || r.Memory.PeakHeapBytes == 0 {
			t.Errorf("%s: memory = %+v, want RSS and heap of 10 paced streams", r.Target, r.Memory)
		}
	}
	if b := rep.result(targetBridge); b == nil || b.Store["throughput"] == nil || b.Store["throughput"].Commits == 0 {
		t.Errorf("bridge: no store calls recorded")
	}
	if len(rep.Goals) != 6 {
		t.Errorf("goals = %+v, want 6 checked", rep.Goals)
	}
	// The table went to stderr, with the goals beside the numbers.
	for _, want := range []string{"added TTFB p50", "streams/s", "peak RSS", "cut short", "goal (bridge)", "anthropic: added median TTFB"} {
		if !strings.Contains(table, want) {
			t.Errorf("table has no %q:\n%s", want, table)
		}
	}
}

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	opt, _, err := parseFlags([]string{"--targets=bridge,proxy", "--chunks=7"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(opt.targets, ",") != "bridge,proxy" || opt.chunks != 7 || opt.streams != 10_000 || opt.concurrency != 50 {
		t.Errorf("options = %+v", opt)
	}
	for _, bad := range [][]string{{"--targets=nginx"}, {"--concurrency=0"}, {"--streams=-1"}, {"extra"}} {
		if _, _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("parseFlags(%q) = nil error", bad)
		}
	}
	// A child gets back the options it was started with.
	back, child, err := parseFlags(opt.childArgs("proxy", opt.timeout), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if child != "proxy" || back.chunks != 7 || back.pace != opt.pace || strings.Join(back.targets, ",") != "proxy" {
		t.Errorf("child options = %+v, %q", back, child)
	}
}

func TestUpstreamScript(t *testing.T) {
	n, pace, err := parseModel(modelName(12, 0))
	if err != nil || n != 12 || pace != 0 {
		t.Fatalf("parseModel = %d, %v, %v", n, pace, err)
	}
	for _, bad := range []string{"gpt-4o", "load/x/0s", "load/1/fast", "load/-1/0s"} {
		if _, _, err := parseModel(bad); err == nil {
			t.Errorf("parseModel(%q) = nil error", bad)
		}
	}
	d := distOf(nil)
	if d.N != 0 {
		t.Errorf("distOf(nil) = %+v", d)
	}
}

// TestShortRunSplit is a run with --split: the fake upstream and the latency
// phase's client each in a process of their own.
func TestShortRunSplit(t *testing.T) {
	rep, _ := runReport(t, "--split", "--targets=direct,anthropic", "--streams=20", "--concurrency=4", "--chunks=10",
		"--latency-requests=10", "--paced-streams=0", "--warmup=2", "--timeout=60s")
	if len(rep.Results) != 2 || rep.Settings["split"] != true {
		t.Fatalf("report = %+v, want two split results", rep)
	}
	for _, r := range rep.Results {
		if r.Latency.TTFB.N != 10 || r.Latency.Cut != 0 || r.Latency.TTFB.P50 <= 0 {
			t.Errorf("%s: latency = %+v, want 10 streams measured by the client process", r.Target, r.Latency)
		}
		if r.Throughput.TTLB.N != 20 || r.Throughput.Cut != 0 {
			t.Errorf("%s: throughput = %+v", r.Target, r.Throughput)
		}
		// The upstream process counts its connections: at least the one
		// the throughput phase's client or the bridge opened.
		if r.Throughput.UpstreamConns < 1 {
			t.Errorf("%s: upstream conns = %d, want the upstream process's count", r.Target, r.Throughput.UpstreamConns)
		}
	}
}

// TestShortRunPaired is a run with --paired: the latency phase measures the
// targets at once, each in a process of its own, one client for them all;
// the throughput phase still measures each alone.
func TestShortRunPaired(t *testing.T) {
	rep, table := runReport(t, "--paired", "--targets=direct,proxy,anthropic", "--streams=10", "--concurrency=2", "--chunks=5",
		"--latency-requests=6", "--paced-streams=0", "--warmup=1", "--timeout=60s")
	if len(rep.Results) != 3 || rep.Settings["paired"] != true || rep.Settings["split"] != true {
		t.Fatalf("settings %v, %d results; want three paired results", rep.Settings, len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Latency.TTFB.N != 6 || r.Latency.Cut != 0 || r.Latency.TTFB.P50 <= 0 {
			t.Errorf("%s: latency = %+v, want 6 paired streams", r.Target, r.Latency)
		}
		if r.Throughput.TTLB.N != 10 || r.Throughput.Cut != 0 {
			t.Errorf("%s: throughput = %+v, want 10 streams measured alone", r.Target, r.Throughput)
		}
	}
	if len(rep.Goals) == 0 || !strings.Contains(table, "latency paired") {
		t.Errorf("goals %+v; table:\n%s", rep.Goals, table)
	}
}

// runReport runs bridgeload with args and --json, and returns its report and
// its table.
func runReport(t *testing.T, args ...string) (Report, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("bridgeload exited %d\n%s", code, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, stdout.String())
	}
	return rep, stderr.String()
}

// TestEchoMemory is --echo-bytes scaled down: the echo bridge streams the
// request's text back exactly and its peak RSS is read; a --max-rss below
// it fails the run.
func TestEchoMemory(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--echo-bytes=100000", "--json", "--timeout=60s"}, &stdout, &stderr); code != 0 {
		t.Fatalf("bridgeload --echo-bytes exited %d\n%s", code, stderr.String())
	}
	var res EchoResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout.String())
	}
	if res.Bytes != 100000 || res.Chunks < 10000 || res.PeakRSSKiB <= 0 {
		t.Errorf("result %+v, want 100000 bytes in some 20000 chunks and a peak RSS", res)
	}
	if !strings.Contains(stderr.String(), "bridge peak RSS") {
		t.Errorf("no figure printed:\n%s", stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"--echo-bytes=100000", "--max-rss=1", "--timeout=60s"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "above --max-rss 1 MiB") {
		t.Errorf("--max-rss=1: exit %d, stderr:\n%s", code, stderr.String())
	}
	for _, bad := range [][]string{{"--echo-bytes=-1"}, {"--echo-bytes=9000000"}, {"--max-rss=-2"}, {"--echo-channel"}} {
		if _, _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("parseFlags(%q) = nil error", bad)
		}
	}
}

// TestEchoChannel is --echo-bytes --echo-channel scaled down: the
// request's session channel, open from before it and read only after its
// stream ended, carries the same text in as many chunks.
func TestEchoChannel(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--echo-bytes=100000", "--echo-channel", "--json", "--timeout=60s"}, &stdout, &stderr); code != 0 {
		t.Fatalf("bridgeload --echo-bytes --echo-channel exited %d\n%s", code, stderr.String())
	}
	var res EchoResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout.String())
	}
	if res.Bytes != 100000 || res.Chunks < 10000 || res.ChannelChunks != res.Chunks || res.PeakRSSKiB <= 0 {
		t.Errorf("result %+v, want 100000 bytes in some 20000 chunks, as many on the channel, and a peak RSS", res)
	}
	if !strings.Contains(stderr.String(), "by the session channel, read after") {
		t.Errorf("no channel figure printed:\n%s", stderr.String())
	}
}

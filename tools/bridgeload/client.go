package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The dialects a load client speaks.
const (
	dialectOpenAI    = "openai"    // Chat Completions: POST /v1/chat/completions
	dialectAnthropic = "anthropic" // Messages: POST /v1/messages
)

// loadClient sends streaming chat completions (or Anthropic messages) to one
// target and checks each stream against what the fake upstream sent.
type loadClient struct {
	hc      *http.Client
	url     string
	dialect string
}

func newLoadClient(base, dialect string, conns int) *loadClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conns
	t.MaxIdleConnsPerHost = conns
	t.DisableCompression = true
	path := "/v1/chat/completions"
	if dialect == dialectAnthropic {
		path = "/v1/messages"
	}
	return &loadClient{hc: &http.Client{Transport: t}, url: base + path, dialect: dialect}
}

func (c *loadClient) close() { c.hc.CloseIdleConnections() }

// script is what one stream asks for and must get back.
type script struct {
	body []byte
	want string
}

func newScript(dialect string, chunks int, pace time.Duration) script {
	req := map[string]any{
		"model":    modelName(chunks, pace),
		"stream":   true,
		"messages": []map[string]string{{"role": "user", "content": "Say the load test words."}},
	}
	if dialect == dialectAnthropic {
		req["max_tokens"] = 4096 // required by Messages
	}
	body, _ := json.Marshal(req)
	return script{body: body, want: expectedText(chunks)}
}

// streamResult is one stream's outcome: the time to its first content chunk
// and to its [DONE], or why it was cut short.
type streamResult struct {
	ttfb, ttlb time.Duration
	cut        string // "" for a whole stream
}

// stream sends one request and reads its SSE answer to the end.
func (c *loadClient) stream(ctx context.Context, s script) streamResult {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(s.body))
	if err != nil {
		return streamResult{cut: "request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if c.dialect == dialectAnthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return streamResult{cut: "request failed: " + shortErr(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return streamResult{cut: fmt.Sprintf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))}
	}
	var (
		r    streamResult
		text strings.Builder
		done bool
	)
	text.Grow(len(s.want))
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	for !done {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return streamResult{cut: "SSE line longer than 16 KiB"}
		}
		if err != nil {
			if ctx.Err() != nil {
				return streamResult{cut: "timed out"}
			}
			if err == io.EOF {
				return streamResult{cut: "stream ended without [DONE]"}
			}
			return streamResult{cut: "read: " + shortErr(err)}
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue // id:, event:, comments and blank lines
		}
		data = bytes.TrimSpace(data)
		if c.dialect == dialectAnthropic {
			piece, end, err := anthropicEvent(data)
			if err != "" {
				return streamResult{cut: err}
			}
			if piece != "" && r.ttfb == 0 {
				r.ttfb = time.Since(start)
			}
			text.WriteString(piece)
			if end {
				r.ttlb = time.Since(start)
				done = true
			}
			continue
		}
		if string(data) == "[DONE]" {
			r.ttlb = time.Since(start)
			done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return streamResult{cut: "bad chunk: " + err.Error()}
		}
		if chunk.Error != nil {
			return streamResult{cut: "error chunk: " + string(chunk.Error)}
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content == "" {
				continue
			}
			if r.ttfb == 0 {
				r.ttfb = time.Since(start)
			}
			text.WriteString(ch.Delta.Content)
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // to EOF, so the connection is reused
	if text.String() != s.want {
		return streamResult{cut: fmt.Sprintf("text differs (%d bytes, want %d)", text.Len(), len(s.want))}
	}
	return r
}

// anthropicEvent reads one Messages stream event: the text it carries, and
// whether it ends the stream (message_stop); err says why the stream is cut
// short ("" when it is not).
func anthropicEvent(data []byte) (text string, end bool, err string) {
	var ev struct {
		Type  string `json:"type"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
		Error json.RawMessage `json:"error"`
	}
	if e := json.Unmarshal(data, &ev); e != nil {
		return "", false, "bad event: " + e.Error()
	}
	switch ev.Type {
	case "content_block_delta":
		if ev.Delta.Type == "text_delta" {
			return ev.Delta.Text, false, ""
		}
	case "message_stop":
		return "", true, ""
	case "error":
		return "", false, "error event: " + string(ev.Error)
	}
	return "", false, ""
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s, "127.0.0.1") {
		return s[i+2:] // drop the address
	}
	return s
}

// Dist summarizes durations, in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Mean float64 `json:"mean_ms"`
	Max  float64 `json:"max_ms"`
}

func distOf(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rank := func(p float64) time.Duration { // nearest rank
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Dist{N: len(s), P50: ms(rank(0.50)), P99: ms(rank(0.99)), Mean: ms(sum / time.Duration(len(s))), Max: ms(s[len(s)-1])}
}

// cuts counts streams cut short, by reason.
type cuts struct {
	mu      sync.Mutex
	n       int
	reasons map[string]int
}

func (c *cuts) add(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.reasons == nil {
		c.reasons = map[string]int{}
	}
	if len(c.reasons) < 10 {
		c.reasons[reason]++
	} else if _, ok := c.reasons[reason]; ok {
		c.reasons[reason]++
	}
}

func (c *cuts) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for r, n := range c.reasons {
		out = append(out, fmt.Sprintf("%d x %s", n, r))
	}
	slices.Sort(out)
	return out
}

// LatencyResult is the sequential phase: one stream at a time.
type LatencyResult struct {
	Requests int      `json:"requests"`
	TTFB     Dist     `json:"ttfb"`
	TTLB     Dist     `json:"ttlb"`
	Cut      int      `json:"cut_short"`
	Reasons  []string `json:"cut_reasons,omitempty"`
}

// ThroughputResult is the concurrent phase: streams as fast as they go.
type ThroughputResult struct {
	Streams       int      `json:"streams"`
	Concurrency   int      `json:"concurrency"`
	Seconds       float64  `json:"seconds"`
	StreamsPerSec float64  `json:"streams_per_sec"`
	TTFB          Dist     `json:"ttfb"`
	TTLB          Dist     `json:"ttlb"`
	Cut           int      `json:"cut_short"`
	Reasons       []string `json:"cut_reasons,omitempty"`
	UpstreamConns int64    `json:"upstream_conns"`
	// CPUPerStream is the process's CPU time (user+system) per stream, in
	// ms: load client and fake upstream included, the same for every
	// target, so the difference to direct is the target's own cost. It is
	// far less sensitive to other load on the machine than streams/s.
	CPUPerStream float64 `json:"cpu_ms_per_stream"`
}

// MemoryResult is the paced phase: many slow streams open at once. RSS
// figures are the whole process's (fake upstream and load client included,
// the same for every target), in KiB; heap figures are Go's HeapInuse.
type MemoryResult struct {
	Streams           int      `json:"streams"`       // open at once
	Total             int      `json:"total_streams"` // over every round
	Pace              string   `json:"pace"`
	BaselineRSSKiB    int64    `json:"baseline_rss_kib"`
	PeakRSSKiB        int64    `json:"peak_rss_kib"` // VmHWM
	BaselineHeapBytes uint64   `json:"baseline_heap_inuse_bytes"`
	PeakHeapBytes     uint64   `json:"peak_heap_inuse_bytes"`
	Cut               int      `json:"cut_short"`
	Reasons           []string `json:"cut_reasons,omitempty"`
}

// Result is everything measured for one target.
type Result struct {
	Target     string           `json:"target"`
	Latency    LatencyResult    `json:"latency"`
	Throughput ThroughputResult `json:"throughput"`
	Memory     MemoryResult     `json:"memory"`
	// Store is the bridge's store calls by phase (bridge only).
	Store map[string]*StoreStats `json:"store,omitempty"`
	// Rounds is how many runs' medians the figures are (0 or 1: one run).
	Rounds int `json:"rounds,omitempty"`
}

// measure runs every phase against one target, in this process: the paced
// memory phase first (so the process's high-water mark is its), then the
// sequential latency phase, then the concurrent throughput phase. With
// opt.split the fake upstream runs in a process of its own, and so does the
// latency phase's client.
func measure(ctx context.Context, name string, opt options) (*Result, error) {
	var up upstream
	if opt.split {
		ru, err := startRemoteUpstream(ctx, os.Stderr)
		if err != nil {
			return nil, err
		}
		up = ru
	} else {
		fu, err := startUpstream()
		if err != nil {
			return nil, err
		}
		up = fu
	}
	defer up.Close()
	t, err := startTarget(ctx, name, up, opt)
	if err != nil {
		return nil, err
	}
	defer t.stop()
	dialect := dialectOf(name)
	c := newLoadClient(t.url, dialect, max(opt.concurrency, opt.pacedStreams)+8)
	defer c.close()

	res := &Result{Target: name}
	fast := newScript(dialect, opt.chunks, opt.latencyPace)
	for range opt.warmup {
		if r := c.stream(ctx, fast); r.cut != "" {
			return nil, fmt.Errorf("%s: warm-up stream cut short: %s", name, r.cut)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	if opt.pacedStreams > 0 {
		res.Memory = memoryPhase(ctx, c, opt)
	}
	phase := func(name string, streams int, f func()) {
		var before storeSnap
		if t.store != nil {
			before = t.store.snap()
		}
		stop := startProfile(opt, t.name, name)
		f()
		stop()
		if t.store != nil {
			if res.Store == nil {
				res.Store = map[string]*StoreStats{}
			}
			res.Store[name] = t.store.statsSince(before, streams)
		}
	}
	if opt.latencyRequests > 0 {
		var err error
		phase("latency", opt.latencyRequests, func() {
			if opt.split {
				res.Latency, err = latencyInProcess(ctx, t.url, dialect, opt)
			} else {
				res.Latency = latencyPhase(ctx, c, fast, opt.latencyRequests)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: latency: %w", name, err)
		}
	}
	if opt.streams > 0 {
		phase("throughput", opt.streams, func() {
			conns0, cpu0 := up.Conns(), cpuTime()
			res.Throughput = throughputPhase(ctx, c, newScript(dialect, opt.chunks, 0), opt.streams, opt.concurrency)
			res.Throughput.UpstreamConns = up.Conns() - conns0
			res.Throughput.CPUPerStream = float64(cpuTime()-cpu0) / float64(time.Millisecond) / float64(opt.streams)
		})
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

func startProfile(opt options, target, phase string) func() {
	if opt.cpuprofile == "" {
		return func() {}
	}
	path := fmt.Sprintf("%s.%s.%s.pprof", opt.cpuprofile, target, phase)
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridgeload:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintln(os.Stderr, "bridgeload:", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func latencyPhase(ctx context.Context, c *loadClient, s script, n int) LatencyResult {
	var (
		ttfb, ttlb []time.Duration
		cut        cuts
	)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		r := c.stream(ctx, s)
		if r.cut != "" {
			cut.add(r.cut)
			continue
		}
		ttfb, ttlb = append(ttfb, r.ttfb), append(ttlb, r.ttlb)
	}
	return LatencyResult{Requests: n, TTFB: distOf(ttfb), TTLB: distOf(ttlb), Cut: cut.n, Reasons: cut.list()}
}

// run runs n streams of s, conc at a time, and returns their results and
// the wall time.
func runStreams(ctx context.Context, c *loadClient, s script, n, conc int) ([]streamResult, time.Duration) {
	results := make([]streamResult, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if ctx.Err() != nil {
					results[i] = streamResult{cut: "timed out before it started"}
					continue
				}
				results[i] = c.stream(ctx, s)
			}
		})
	}
	wg.Wait()
	return results, time.Since(start)
}

func throughputPhase(ctx context.Context, c *loadClient, s script, n, conc int) ThroughputResult {
	results, wall := runStreams(ctx, c, s, n, conc)
	var (
		ttfb, ttlb []time.Duration
		cut        cuts
	)
	for _, r := range results {
		if r.cut != "" {
			cut.add(r.cut)
			continue
		}
		ttfb, ttlb = append(ttfb, r.ttfb), append(ttlb, r.ttlb)
	}
	return ThroughputResult{Streams: n, Concurrency: conc, Seconds: wall.Seconds(),
		StreamsPerSec: float64(len(ttlb)) / wall.Seconds(),
		TTFB:          distOf(ttfb), TTLB: distOf(ttlb), Cut: cut.n, Reasons: cut.list()}
}

// memoryPhase holds opt.pacedStreams paced streams open at once and samples
// the Go heap while they run; the RSS high-water mark is read after.
func memoryPhase(ctx context.Context, c *loadClient, opt options) MemoryResult {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res := MemoryResult{Streams: opt.pacedStreams, Total: opt.pacedStreams, Pace: opt.pace.String(),
		BaselineRSSKiB: procStatus("VmRSS"), BaselineHeapBytes: ms.HeapInuse, PeakHeapBytes: ms.HeapInuse}
	stop := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		peak := ms.HeapInuse
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-t.C:
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			case <-stop:
				sampled <- peak
				return
			}
		}
	}()
	results, _ := runStreams(ctx, c, newScript(c.dialect, opt.chunks, opt.pace), opt.pacedStreams, opt.pacedStreams)
	close(stop)
	res.PeakHeapBytes = <-sampled
	res.PeakRSSKiB = procStatus("VmHWM")
	var cut cuts
	for _, r := range results {
		if r.cut != "" {
			cut.add(r.cut)
		}
	}
	res.Cut, res.Reasons = cut.n, cut.list()
	return res
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus reads a "Vm...: N kB" field of /proc/self/status (0 where
// there is none).
func procStatus(field string) int64 { return statusField("/proc/self/status", field) }

// statusField reads a kB field of a /proc status file (0 when it cannot).
func statusField(path, field string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// With --split the latency phase runs as a deployment does: the client, the
// target and the fake upstream each in a process of its own. In one process
// they share one Go scheduler, and a goroutine the network wakes waits
// until a P runs out of other work (the runtime polls the network only
// then, or every 10 ms from sysmon): a client reads its first frame only
// once the target has handled most of the upstream's burst, so the
// figure is the target's CPU per stream rather than the time its first
// byte takes. Split, the kernel runs the client when its frame arrives.
//
// The roles below are this program run again with roleEnv set.
const (
	roleChild    = "child"    // measures one target (main.go)
	roleUpstream = "upstream" // serves the fake upstream until stdin closes
	roleClient   = "client"   // runs the latency phase against -url
)

// upstream is the fake upstream a target calls: in this process, or in a
// process of its own (--split).
type upstream interface {
	URL() string
	// Conns is the TCP connections the upstream has accepted so far.
	Conns() int64
	Close()
}

// Conns implements upstream.
func (u *fakeUpstream) Conns() int64 { return u.conns.Load() }

// serveUpstreamRole is the upstream role: it prints the server's URL on
// stdout, then serves until stdin reaches EOF (its parent closed it, or
// died) or ctx ends.
func serveUpstreamRole(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.Close()
	return serveUntilEOF(ctx, up.URL(), stdin, stdout)
}

// serveUntilEOF is the end of a serving role: it prints url on stdout, then
// returns once stdin reaches EOF (its parent closed it, or died) or ctx
// ends.
func serveUntilEOF(ctx context.Context, url string, stdin io.Reader, stdout io.Writer) error {
	if _, err := fmt.Fprintln(stdout, url); err != nil {
		return err
	}
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stdin); close(eof) }()
	select {
	case <-eof:
	case <-ctx.Done():
	}
	return nil
}

// served is a process serving something until its stdin closes.
type served struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
}

// startServed starts this program in role with args and reads the URL it
// prints first.
func startServed(ctx context.Context, role string, args []string, stderr io.Writer) (*served, error) {
	cmd, err := roleCommand(ctx, role, args)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s process: %w", role, err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url := strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s process: no URL (read %q: %v)", role, line, err)
	}
	return &served{cmd: cmd, stdin: stdin, url: url}, nil
}

// stop closes its stdin and waits for it to exit (cmd's WaitDelay bounds
// the wait).
func (s *served) stop() {
	s.stdin.Close()
	_ = s.cmd.Wait()
}

// remoteUpstream is a fake upstream in a child process.
type remoteUpstream struct {
	*served
	hc *http.Client
}

// startRemoteUpstream starts the upstream role and waits for its URL.
func startRemoteUpstream(ctx context.Context, stderr io.Writer) (*remoteUpstream, error) {
	s, err := startServed(ctx, roleUpstream, nil, stderr)
	if err != nil {
		return nil, err
	}
	return &remoteUpstream{served: s, hc: &http.Client{Timeout: 5 * time.Second}}, nil
}

func (u *remoteUpstream) URL() string { return u.url }

// Conns asks the upstream process (GET /conns); -1 when it cannot tell.
func (u *remoteUpstream) Conns() int64 {
	resp, err := u.hc.Get(u.url + "/conns")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if resp.StatusCode != http.StatusOK || err != nil {
		return -1
	}
	return n
}

// Close ends the upstream process: its stdin closes, it shuts its server
// down and exits.
func (u *remoteUpstream) Close() {
	u.hc.CloseIdleConnections()
	u.stop()
}

// roleCommand is this program run again in role, with args.
func roleCommand(ctx context.Context, role string, args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// clientArgs are the flags of a client process measuring url.
func (o options) clientArgs(url, dialect string, timeout time.Duration) []string {
	return []string{
		"-url", url,
		"-dialect", dialect,
		"-chunks", strconv.Itoa(o.chunks),
		"-latency-pace", o.latencyPace.String(),
		"-latency-requests", strconv.Itoa(o.latencyRequests),
		"-warmup", strconv.Itoa(o.warmup),
		"-timeout", timeout.String(),
	}
}

// runClientRole is the client role: a warm-up, then the latency phase
// against opt's url, its result as JSON on stdout.
func runClientRole(ctx context.Context, opt options, stdout io.Writer) error {
	if opt.url == "" {
		return errors.New("client without -url")
	}
	c := newLoadClient(opt.url, opt.dialect, 2)
	defer c.close()
	s := newScript(opt.dialect, opt.chunks, opt.latencyPace)
	for range opt.warmup {
		if r := c.stream(ctx, s); r.cut != "" {
			return fmt.Errorf("warm-up stream cut short: %s", r.cut)
		}
	}
	res := latencyPhase(ctx, c, s, opt.latencyRequests)
	return json.NewEncoder(stdout).Encode(res)
}

// latencyInProcess runs the latency phase in a client process of its own.
func latencyInProcess(ctx context.Context, url, dialect string, opt options) (LatencyResult, error) {
	dl, _ := ctx.Deadline()
	cmd, err := roleCommand(ctx, roleClient, opt.clientArgs(url, dialect, time.Until(dl)))
	if err != nil {
		return LatencyResult{}, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return LatencyResult{}, fmt.Errorf("client process: %w", err)
	}
	var res LatencyResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return LatencyResult{}, fmt.Errorf("client process output: %w", err)
	}
	return res, nil
}

// With --paired the latency phase measures every target at once: each
// target serves in a process of its own (the fake upstream in another), and
// one client process sends its streams to the targets in turn, the order
// rotating each time. This machine's speed drifts by tens of percent over
// seconds (other guests of its host); measured one after another, the
// targets would each see another machine, paired they see the same one.
const (
	roleServe        = "serve"         // serves one target against -upstream-url until stdin closes
	rolePairedClient = "paired-client" // the paired latency phase against -pairs
)

// urlUpstream is an upstream some other process serves.
type urlUpstream string

func (u urlUpstream) URL() string  { return string(u) }
func (u urlUpstream) Conns() int64 { return -1 }
func (u urlUpstream) Close()       {}

// serveTargetRole is the serve role: it starts opt's target against the
// upstream at opt.upstreamURL, prints the target's URL, and serves until
// stdin reaches EOF or ctx ends.
func serveTargetRole(ctx context.Context, name string, opt options, stdin io.Reader, stdout io.Writer) error {
	if opt.upstreamURL == "" {
		return errors.New("serve without -upstream-url")
	}
	t, err := startTarget(ctx, name, urlUpstream(opt.upstreamURL), opt)
	if err != nil {
		return err
	}
	defer t.stop()
	return serveUntilEOF(ctx, t.url, stdin, stdout)
}

// pair is one target of the paired phase.
type pair struct {
	Target string `json:"target"`
	URL    string `json:"url"`
}

// pairedLatency runs the paired latency phase: the upstream and each
// target in a process of its own, then one client process for them all.
func pairedLatency(ctx context.Context, opt options, stderr io.Writer) (map[string]LatencyResult, error) {
	if _, ok := stderr.(*os.File); !ok {
		// The processes' stderr is copied into it by a goroutine each.
		stderr = &lockedWriter{w: stderr}
	}
	up, err := startServed(ctx, roleUpstream, nil, stderr)
	if err != nil {
		return nil, err
	}
	defer up.stop()
	var pairs []pair
	for _, t := range opt.targets {
		if t == targetDirect {
			pairs = append(pairs, pair{t, up.url})
			continue
		}
		s, err := startServed(ctx, roleServe, opt.serveArgs(t, up.url), stderr)
		if err != nil {
			return nil, err
		}
		defer s.stop()
		pairs = append(pairs, pair{t, s.url})
	}
	spec, _ := json.Marshal(pairs)
	dl, _ := ctx.Deadline()
	cmd, err := roleCommand(ctx, rolePairedClient, append(opt.clientArgs("", "", time.Until(dl)), "-pairs", string(spec)))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("paired client process: %w", err)
	}
	res := map[string]LatencyResult{}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("paired client output: %w", err)
	}
	return res, nil
}

// lockedWriter is a writer several goroutines may share.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serveArgs are the flags of a process serving target against upstream.
func (o options) serveArgs(target, upstream string) []string {
	return []string{"-target", target, "-targets", target, "-upstream-url", upstream,
		"-max-runs", strconv.Itoa(o.maxRuns), "-proxy-idle-conns", strconv.Itoa(o.proxyIdleConns)}
}

// runPairedClientRole is the paired-client role: a warm-up of each target,
// then opt.latencyRequests streams to each, the targets in turn, the order
// rotating by one each time; the results by target as JSON on stdout.
func runPairedClientRole(ctx context.Context, opt options, stdout io.Writer) error {
	var pairs []pair
	if err := json.Unmarshal([]byte(opt.pairs), &pairs); err != nil || len(pairs) == 0 {
		return fmt.Errorf("-pairs: %v", err)
	}
	type side struct {
		c          *loadClient
		s          script
		ttfb, ttlb []time.Duration
		cut        cuts
	}
	sides := make([]*side, len(pairs))
	for i, p := range pairs {
		d := dialectOf(p.Target)
		sides[i] = &side{c: newLoadClient(p.URL, d, 2), s: newScript(d, opt.chunks, opt.latencyPace)}
		defer sides[i].c.close()
		for range opt.warmup {
			if r := sides[i].c.stream(ctx, sides[i].s); r.cut != "" {
				return fmt.Errorf("%s: warm-up stream cut short: %s", p.Target, r.cut)
			}
		}
	}
	for n := 0; n < opt.latencyRequests && ctx.Err() == nil; n++ {
		for k := range sides {
			sd := sides[(n+k)%len(sides)]
			r := sd.c.stream(ctx, sd.s)
			if r.cut != "" {
				sd.cut.add(r.cut)
				continue
			}
			sd.ttfb, sd.ttlb = append(sd.ttfb, r.ttfb), append(sd.ttlb, r.ttlb)
		}
	}
	res := map[string]LatencyResult{}
	for i, p := range pairs {
		sd := sides[i]
		res[p.Target] = LatencyResult{Requests: opt.latencyRequests, TTFB: distOf(sd.ttfb), TTLB: distOf(sd.ttlb),
			Cut: sd.cut.n, Reasons: sd.cut.list()}
	}
	return json.NewEncoder(stdout).Encode(res)
}

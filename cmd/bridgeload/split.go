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
	if _, err := fmt.Fprintln(stdout, up.URL()); err != nil {
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

// remoteUpstream is a fake upstream in a child process.
type remoteUpstream struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
	hc    *http.Client
}

// startRemoteUpstream starts the upstream role and waits for its URL.
func startRemoteUpstream(ctx context.Context, stderr io.Writer) (*remoteUpstream, error) {
	cmd, err := roleCommand(ctx, roleUpstream, nil)
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
		return nil, fmt.Errorf("start upstream process: %w", err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url := strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("upstream process: no URL (read %q: %v)", line, err)
	}
	return &remoteUpstream{cmd: cmd, stdin: stdin, url: url, hc: &http.Client{Timeout: 5 * time.Second}}, nil
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
// down and exits (cmd's WaitDelay bounds the wait).
func (u *remoteUpstream) Close() {
	u.hc.CloseIdleConnections()
	u.stdin.Close()
	_ = u.cmd.Wait()
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

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// buildBridge builds cmd/bridge into dir (the soak runs from inside the
// module, as `go run ./tools/bridgesoak` or its test do).
func buildBridge(ctx context.Context, dir string, race bool) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build the bridge: %w (or give --bridge)", err)
	}
	bin := filepath.Join(dir, "bridge")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "github.com/bridge-dev/bridge/cmd/bridge")
	cmd := exec.CommandContext(ctx, goTool, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	return bin, nil
}

// freeAddr picks a loopback port that is free now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// bridgeProc is a running `bridge serve`, its stdout and stderr in a log
// file. The Go runtime prints a scheduler trace with every goroutine into
// that log (GODEBUG schedtrace, scheddetail): the bridge serves no
// goroutine count of its own, and this needs no change to it.
type bridgeProc struct {
	cmd    *exec.Cmd
	addr   string
	log    string
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// startBridge starts bin serve with args, and waits until /healthz answers.
func startBridge(ctx context.Context, bin, addr, logPath string, gtrace time.Duration, args ...string) (*bridgeProc, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = childEnv(gtrace)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bridge: %w", err)
	}
	p := &bridgeProc{cmd: cmd, addr: addr, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	for {
		resp, err := hc.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("bridge exited at start (%v); see %s:\n%s", p.err, logPath, tail(logPath, 20))
		case <-ctx.Done():
			p.kill()
			return nil, fmt.Errorf("bridge start: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("bridge did not answer /healthz within 60s; see %s", logPath)
		}
	}
}

// childEnv is this process's environment without the bridge's and
// OpenTelemetry's variables, plus Prometheus metrics and the scheduler
// trace.
func childEnv(gtrace time.Duration) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || strings.HasPrefix(k, "BRIDGE_") || k == "GODEBUG" ||
			strings.EqualFold(k, "http_proxy") || strings.EqualFold(k, "https_proxy") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "OTEL_METRICS_EXPORTER=prometheus", "BRIDGE_UPSTREAM_API_KEY=soak-not-a-key")
	if gtrace > 0 {
		env = append(env, fmt.Sprintf("GODEBUG=schedtrace=%d,scheddetail=1", gtrace.Milliseconds()))
	}
	return env
}

func (p *bridgeProc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit; it returns the exit error.
func (p *bridgeProc) stop(wait time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(wait):
		p.kill()
		return fmt.Errorf("bridge did not exit %s after SIGTERM (killed)", wait)
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *bridgeProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// quit sends SIGQUIT, for the goroutine dump the runtime then writes
// into the log, and waits for the exit.
func (p *bridgeProc) quit() {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// memory reads the process's peak and current resident set (VmHWM, VmRSS)
// in bytes.
func (p *bridgeProc) memory() (peak, now int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmHWM":
			peak = n << 10
		case "VmRSS":
			now = n << 10
		}
	}
	if peak == 0 {
		return 0, 0, errors.New("no VmHWM in /proc/<pid>/status")
	}
	return peak, now, nil
}

// cpu reads the CPU time the process has used (user and system).
func (p *bridgeProc) cpu() (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command, which is in parentheses: state is the
	// first, utime and stime the 12th and 13th (clock ticks, 100 a second
	// on Linux).
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, errors.New("short /proc/<pid>/stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// logSize is the log's current length: a mark for goroutinesAfter.
func (p *bridgeProc) logSize() int64 {
	fi, err := os.Stat(p.log)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// gdump is one scheduler trace: the goroutines that were not dead.
type gdump struct {
	at    int64 // log offset of its SCHED line
	count int
}

// gdumps parses the complete scheduler traces in the log after offset.
// A trace is complete once the next one has begun. Lines other output
// broke into are not counted, so a trace taken while the bridge logs may
// count a few goroutines short; one of an idle bridge is exact.
func gdumps(path string, offset int64) ([]gdump, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var (
		out []gdump
		cur *gdump
		pos = offset
	)
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break // a partial last line: the trace it is in is not complete
		}
		start := pos
		pos += int64(len(line))
		if strings.HasPrefix(line, "SCHED ") {
			if cur != nil {
				out = append(out, *cur)
			}
			cur = &gdump{at: start}
			continue
		}
		if cur == nil {
			continue
		}
		// "  G12: status=4(select) m=nil lockedm=nil"
		rest, ok := strings.CutPrefix(line, "  G")
		if !ok {
			continue
		}
		_, st, ok := strings.Cut(rest, ": status=")
		if !ok {
			continue
		}
		n, _, ok := strings.Cut(st, "(")
		if !ok {
			continue
		}
		if s, err := strconv.Atoi(n); err == nil && live(s) {
			cur.count++
		}
	}
	return out, nil
}

// live says whether a goroutine status of the runtime's (runtime2.go) is a
// goroutine's: not idle (0), dead (6) or the dead g of a cgo extra M (11),
// with or without the scan bit (0x1000).
func live(status int) bool {
	switch status &^ 0x1000 {
	case 0, 6, 11:
		return false
	}
	return true
}

// goroutinesAfter waits for the first complete scheduler trace begun after
// the log offset mark and returns its count.
func (p *bridgeProc) goroutinesAfter(ctx context.Context, mark int64, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		ds, err := gdumps(p.log, mark)
		if err != nil {
			return 0, err
		}
		if len(ds) > 0 {
			return ds[0].count, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no scheduler trace in %s within %s", p.log, wait)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-p.exited:
			return 0, errors.New("bridge exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// metrics scrapes /metrics: the sum of each series by name and, for
// labelled ones, by name{labels}.
func scrapeMetrics(ctx context.Context, addr string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		series := line[:i]
		name := series
		if j := strings.IndexByte(series, '{'); j >= 0 {
			name = series[:j]
		}
		out[name] += v
		if name != series {
			out[series] += v
		}
	}
	return out, sc.Err()
}

// label returns the sum of the series of name whose labels include
// key="value", by value.
func byLabel(m map[string]float64, name, key string) map[string]float64 {
	out := map[string]float64{}
	for series, v := range m {
		rest, ok := strings.CutPrefix(series, name+"{")
		if !ok {
			continue
		}
		_, after, ok := strings.Cut(rest, key+`="`)
		if !ok {
			continue
		}
		val, _, _ := strings.Cut(after, `"`)
		out[val] += v
	}
	return out
}

// logLines counts the log's lines that are not the runtime's scheduler
// trace, by level and message, for the report.
func logLines(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if lvl, msg, ok := slogLine(line); ok {
				out[lvl+" "+msg]++
			}
		}
		if err != nil {
			break
		}
	}
	return out, nil
}

// slogLine reads level and msg from a slog text line.
func slogLine(line string) (level, msg string, ok bool) {
	_, rest, ok := strings.Cut(line, "level=")
	if !ok {
		return "", "", false
	}
	level, rest, _ = strings.Cut(rest, " ")
	_, rest, ok = strings.Cut(rest, "msg=")
	if !ok {
		return level, "", true
	}
	if strings.HasPrefix(rest, `"`) {
		if s, err := strconv.QuotedPrefix(rest); err == nil {
			msg, _ = strconv.Unquote(s)
			return level, msg, true
		}
	}
	msg, _, _ = strings.Cut(rest, " ")
	return level, strings.TrimSpace(msg), true
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if strings.HasPrefix(lines[i], "SCHED ") || strings.HasPrefix(lines[i], "  ") {
			continue
		}
		keep = append(keep, lines[i])
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return strings.Join(keep, "\n")
}

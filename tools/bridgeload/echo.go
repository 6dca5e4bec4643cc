package main

// --echo-bytes: the memory of one large run. A bridge in a process of its
// own, wired as `bridge serve` wires it with its default upstream (echo)
// and a SQLite file, answers one streamed Chat Completions request of N
// bytes of text, which the echo model streams back a word at a time (an
// 8 MB request is two million events). The figure is that process's peak
// RSS (VmHWM): before a live run kept a bounded window of its events it
// was 1.9 GB for 8 MB. With --echo-channel the request's session channel
// is open from before the request and read only once its stream has
// ended: a channel that falls behind reads the store and holds no events,
// so the figure stays what it is without it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/server"
)

// roleEcho serves a bridge whose upstream is echo until stdin closes.
const roleEcho = "echo"

// maxEchoBytes bounds --echo-bytes: the request's JSON must stay within
// the bridge's 8 MiB body limit.
const maxEchoBytes = 8<<20 - 4096

// serveEchoRole is the echo role: a bridge as `bridge serve` starts it
// with no upstream configured (echo), over a SQLite file in a temporary
// directory; it prints its URL and serves until stdin reaches EOF.
func serveEchoRole(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "bridgeload-echo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = filepath.Join(dir, "bridge.db")
	if err := cfg.Validate(); err != nil {
		return err
	}
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	go func() { _ = srv.Run() }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(sctx)
	}()
	return serveUntilEOF(ctx, "http://"+srv.Addr(), stdin, stdout)
}

// EchoResult is what --echo-bytes measured.
type EchoResult struct {
	Bytes      int     `json:"bytes"`        // text sent, and streamed back
	Chunks     int     `json:"chunks"`       // content chunks streamed back
	Seconds    float64 `json:"seconds"`      // the request, to [DONE]
	PeakRSSKiB int64   `json:"peak_rss_kib"` // the bridge process's VmHWM
	// With --echo-channel: the content chunks the lagging channel carried
	// (the same text), and the seconds it took to read it once the
	// request's stream had ended.
	ChannelChunks  int     `json:"channel_chunks,omitempty"`
	ChannelSeconds float64 `json:"channel_seconds,omitempty"`
}

// echoMode is run with --echo-bytes: it measures, prints the figure (and
// JSON with --json), and fails above --max-rss.
func echoMode(ctx context.Context, opt options, stdout, stderr io.Writer) int {
	res, err := runEcho(ctx, opt.echoBytes, opt.echoChannel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bridgeload:", err)
		return 1
	}
	table := stdout
	if opt.json {
		table = stderr
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return 1
		}
	}
	fmt.Fprintf(table, "echo request of %d bytes: %d chunks streamed back in %.1f s", res.Bytes, res.Chunks, res.Seconds)
	if opt.echoChannel {
		fmt.Fprintf(table, ", and by the session channel, read after, in %.1f s", res.ChannelSeconds)
	}
	fmt.Fprintf(table, "; bridge peak RSS %.1f MiB", float64(res.PeakRSSKiB)/1024)
	if opt.maxRSS > 0 {
		fmt.Fprintf(table, " (limit %d MiB)", opt.maxRSS)
	}
	fmt.Fprintln(table)
	if opt.maxRSS > 0 && res.PeakRSSKiB > int64(opt.maxRSS)*1024 {
		fmt.Fprintf(stderr, "bridgeload: the bridge's peak RSS %.1f MiB is above --max-rss %d MiB\n", float64(res.PeakRSSKiB)/1024, opt.maxRSS)
		return 1
	}
	return 0
}

// echoText is n bytes of words ("w0 w1 w2 ..."), cut to n.
func echoText(n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("w" + strconv.Itoa(i%1000))
	}
	return b.String()[:n]
}

// runEcho starts the echo role, sends it one streamed request of n bytes
// of text, checks the answer is that text exactly, and reads the bridge
// process's peak RSS once the stream has ended. With channel, the
// request's session channel is opened first and read (and checked) only
// after the request's stream has ended; the peak RSS is read after both.
func runEcho(ctx context.Context, n int, channel bool, stderr io.Writer) (*EchoResult, error) {
	s, err := startServed(ctx, roleEcho, nil, stderr)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	text := echoText(n)
	body, err := json.Marshal(map[string]any{"model": "echo", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": text}}})
	if err != nil {
		return nil, err
	}
	const session = "bridgeload-echo"
	var ch *http.Response
	if channel {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/sessions/"+session+"/events?format=openai", nil)
		if err != nil {
			return nil, err
		}
		if ch, err = http.DefaultClient.Do(req); err != nil {
			return nil, err
		}
		defer ch.Body.Close()
		if ch.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(ch.Body, 4096))
			return nil, fmt.Errorf("session channel: %s: %s", ch.Status, b)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("echo request: %s: %s", resp.Status, b)
	}
	res := &EchoResult{}
	chunks, err := readEchoStream(resp.Body, text, "")
	if err != nil {
		return nil, fmt.Errorf("echo stream: %w", err)
	}
	res.Chunks, res.Bytes = chunks, n
	res.Seconds = time.Since(start).Seconds()
	if ch != nil {
		start = time.Now()
		if res.ChannelChunks, err = readEchoStream(ch.Body, text, "event: bridge.run.ended"); err != nil {
			return nil, fmt.Errorf("session channel: %w", err)
		}
		res.ChannelSeconds = time.Since(start).Seconds()
	}
	res.PeakRSSKiB = pidStatus(s.cmd.Process.Pid, "VmHWM")
	if res.PeakRSSKiB <= 0 {
		return nil, fmt.Errorf("no VmHWM in /proc/%d/status", s.cmd.Process.Pid)
	}
	return res, nil
}

// readEchoStream reads Chat Completions chunks off r up to [DONE] (and
// then up to the line end, when given), checks their text is text
// exactly, and returns how many content chunks carried it.
func readEchoStream(r io.Reader, text, end string) (int, error) {
	got, chunks, done := 0, 0, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if done {
			if sc.Text() == end {
				return chunks, nil
			}
			continue
		}
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			if got != len(text) {
				return chunks, fmt.Errorf("[DONE] after %d of %d bytes", got, len(text))
			}
			if done = true; end == "" {
				return chunks, nil
			}
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &c); err != nil { // the channel's start frame is JSON too
			return chunks, fmt.Errorf("%v in %.80q", err, data)
		}
		if len(c.Choices) == 0 || c.Choices[0].Delta.Content == "" {
			continue
		}
		piece := c.Choices[0].Delta.Content
		if !strings.HasPrefix(text[got:], piece) {
			return chunks, fmt.Errorf("at byte %d the answer says %.40q, not the request's text", got, piece)
		}
		got += len(piece)
		chunks++
	}
	if err := sc.Err(); err != nil {
		return chunks, err
	}
	return chunks, fmt.Errorf("cut short: %d of %d bytes, [DONE] %t", got, len(text), done)
}

// pidStatus reads a kB field of /proc/<pid>/status (0 when it cannot).
func pidStatus(pid int, field string) int64 {
	return statusField("/proc/"+strconv.Itoa(pid)+"/status", field)
}

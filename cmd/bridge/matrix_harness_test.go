package main

// The translation matrix harness: the bridge under test, the neutral shapes
// scenarios speak in (turns, scripts, observations), an SSE frame reader,
// and a recording HTTP client that lets every stream an SDK reads go
// through the dialect's stream validator too.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// matrixModel is the model name every scenario asks for.
const matrixModel = "matrix-model"

// Bounds on every wait of the harness.
const (
	scenarioTimeout = 20 * time.Second // one scenario, all its requests
	pollEvery       = 5 * time.Millisecond
	waitTimeout     = 5 * time.Second // one condition (a run status, an upstream cancel)
)

// ---- neutral shapes ---------------------------------------------------------

// turn is one client request, in no dialect; a client driver renders it.
type turn struct {
	session      string // X-Session-Id; "" for a plain stateless request
	messages     []msg  // the whole transcript (stateless dialects) or the new input
	tools        []toolDef
	stream       bool
	includeUsage bool
}

// msg is one transcript message.
type msg struct {
	role       bridge.Role
	text       string
	toolCalls  []toolCall // assistant
	toolCallID string     // tool
}

func userMsg(text string) msg { return msg{role: bridge.RoleUser, text: text} }

// toolDef is a tool the client declares.
type toolDef struct {
	name, description string
	params            map[string]any
}

// toolCall is one call as a client or an upstream sees it.
type toolCall struct {
	index          int
	id, name, args string
}

func (c toolCall) String() string {
	return fmt.Sprintf("#%d %s %s(%s)", c.index, c.id, c.name, c.args)
}

// usage is a token count as a client sees it.
type usage struct{ in, out, total int64 }

// wireError is an error as a client sees it: an error response or an
// in-stream error frame.
type wireError struct {
	status              int // 0 for an in-stream error frame
	typ, code, message  string
	param               string
	paramNull, codeNull bool
}

func (e *wireError) String() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("status=%d type=%q code=%q message=%q", e.status, e.typ, e.code, e.message)
}

// observation is what a client driver saw of one request, normalized.
type observation struct {
	status    int
	header    http.Header
	runID     string // X-Run-Id (or the run a replay was asked for)
	sessionID string // X-Session-Id

	text, reasoning, refusal string
	toolCalls                []toolCall
	finish                   bridge.StopReason // the dialect's finish reason, as a hub stop reason
	usage                    *usage
	err                      *wireError // an error response, or the stream's error frame
	errFrame                 bool       // err came inside a stream

	frames []frame // a stream's frames, [DONE] included
}

// ids lists the event ids of the frames that carry one.
func (o *observation) ids() []string {
	var out []string
	for _, f := range o.frames {
		if f.hasID {
			out = append(out, f.id)
		}
	}
	return out
}

// script is what the upstream model does in a scenario, in no dialect: an
// outbound's factory plays it in its wire format (or says why it cannot).
type script struct {
	// input is the last user message of the scenario's requests, for
	// upstreams that can only answer from it (echo).
	input string
	// calls[n] answers the n-th upstream request; requests past the end get
	// the last one. pick, when set, chooses the call from the request's
	// last user message instead (one upstream for many cases).
	calls []modelCall
	pick  func(n int, lastUser string) int
}

func (s *script) call(n int, lastUser string) *modelCall {
	i := n
	if s.pick != nil {
		i = s.pick(n, lastUser)
	}
	i = max(0, min(i, len(s.calls)-1))
	return &s.calls[i]
}

// modelCall is one upstream model call.
type modelCall struct {
	// fail answers before the first byte with an error status and body.
	fail *wireError
	// Streamed content, in this order: reasoning, text, tool calls.
	reasoning []string
	text      []string
	tools     []scriptTool
	// interleave sends the tool calls' headers first, then their argument
	// fragments round robin (as parallel calls can arrive).
	interleave bool
	// midError, when set, replaces the finish with an in-stream error.
	midError *wireError
	stop     bridge.StopReason
	usage    *usage
	// delay paces the stream: slept before each piece.
	delay time.Duration
}

// scriptTool is one tool call of a model call, its arguments in fragments.
type scriptTool struct {
	id, name  string
	fragments []string
}

func (t scriptTool) args() string { return strings.Join(t.fragments, "") }

// upstreamRequest is what an upstream received, normalized.
type upstreamRequest struct {
	model    string
	messages []msg
}

// fakeUpstream is an outbound factory's product: how to configure the
// bridge for it, and what can be observed of it.
type fakeUpstream struct {
	configure func(*Config)
	// requests lists what the upstream received; nil when it cannot be seen
	// (an in-process upstream).
	requests func() []upstreamRequest
	// cancelled counts upstream requests whose context was done before
	// the reply was complete; nil when it cannot be seen.
	cancelled func() int
}

// ---- the bridge under test --------------------------------------------------

// bridgeUT is a bridge started by NewMain on 127.0.0.1:0 over a temp SQLite
// file.
type bridgeUT struct {
	url  string
	http *http.Client
}

// startBridge starts a bridge configured for up; it is closed when t ends.
func startBridge(t *testing.T, up *fakeUpstream) *bridgeUT {
	t.Helper()
	cfg := defaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = filepath.Join(t.TempDir(), "bridge.db")
	up.configure(&cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	m, err := NewMain(ctx, cfg, log)
	if err != nil {
		t.Fatalf("NewMain: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- m.Run() }()
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("Main.Close: %v", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Main.Run: %v", err)
			}
		case <-ctx.Done():
			t.Errorf("Main.Run did not return after Close")
		}
		if t.Failed() {
			t.Logf("bridge log:\n%s", logs.String())
		}
	})
	return &bridgeUT{url: "http://" + m.Addr(), http: &http.Client{Transport: tr}}
}

// runState is the run API's view of a run.
type runState struct {
	ID          string            `json:"id"`
	SessionID   string            `json:"session_id"`
	Status      bridge.Status     `json:"status"`
	StopReason  bridge.StopReason `json:"stop_reason"`
	Reason      string            `json:"reason"`
	LastSeq     int64             `json:"last_seq"`
	LastEventID string            `json:"last_event_id"`
	Inbound     string            `json:"inbound"`
	Outbound    string            `json:"outbound"`
}

// run reads GET /v1/runs/{run}.
func (b *bridgeUT) run(ctx context.Context, t *testing.T, id string) *runState {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/runs/"+id, nil)
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatalf("GET run %s: %v", id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET run %s: status %d: %s", id, resp.StatusCode, body)
	}
	var r runState
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("GET run %s: %v: %s", id, err, body)
	}
	return &r
}

// waitRun polls the run until it leaves running, then checks its status.
func (b *bridgeUT) waitRun(ctx context.Context, t *testing.T, id string, want bridge.Status) *runState {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for {
		r := b.run(ctx, t, id)
		if r.Status != bridge.StatusRunning {
			if r.Status != want {
				t.Errorf("run %s: status %s (reason %q), want %s", id, r.Status, r.Reason, want)
			}
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s still running after %v (want %s)", id, waitTimeout, want)
		case <-time.After(pollEvery):
		}
	}
}

// waitFor polls cond until it holds.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		case <-time.After(pollEvery):
		}
	}
}

// ---- SSE frames -------------------------------------------------------------

// frame is one SSE event as it came off the wire.
type frame struct {
	id    string
	hasID bool
	idN   int      // id lines seen
	data  []string // data lines
	other []string // any other line (event:, retry:, comments)
}

func (f frame) String() string {
	var b strings.Builder
	if f.hasID {
		fmt.Fprintf(&b, "id: %s | ", f.id)
	}
	for _, d := range f.data {
		fmt.Fprintf(&b, "data: %s", d)
	}
	return b.String()
}

// errMidFrame reports a stream that ended inside a frame.
var errMidFrame = errors.New("the stream ends inside an SSE frame")

// readFrame reads one frame. It returns io.EOF at a clean end, errMidFrame
// when the stream ends inside a frame. A blank line with no fields before
// it is returned as an empty frame (the validator rejects it).
func readFrame(r *bufio.Reader) (frame, error) {
	var f frame
	lines := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && lines == 0 {
				return f, io.EOF
			}
			if err == io.EOF {
				return f, errMidFrame
			}
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return f, nil
		}
		lines++
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			f.id, f.hasID = value, true
			f.idN++
		case "data":
			f.data = append(f.data, value)
		default:
			f.other = append(f.other, line)
		}
	}
}

// readFrames reads frames to the end of r. n > 0 stops after n frames.
func readFrames(r *bufio.Reader, n int) ([]frame, error) {
	var out []frame
	for n <= 0 || len(out) < n {
		f, err := readFrame(r)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

// ---- a recording HTTP client ------------------------------------------------

// capture is what the recording client saw of one response. An SDK reads
// the response; the capture keeps its bytes, so the stream validator sees
// exactly what the SDK saw.
type capture struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   bytes.Buffer
	closed bool
}

type captureKey struct{}

func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// recordingClient is an option.HTTPClient: a response to a request whose
// context holds a capture is recorded, and when the reader closes it early
// (an SDK stops at data: [DONE]) the rest is drained, so "nothing after
// [DONE]" can be checked.
type recordingClient struct{ c *http.Client }

func (rc recordingClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := rc.c.Do(req)
	c, _ := req.Context().Value(captureKey{}).(*capture)
	if err != nil || c == nil {
		return resp, err
	}
	c.mu.Lock()
	c.status, c.header = resp.StatusCode, resp.Header.Clone()
	c.mu.Unlock()
	resp.Body = &teeBody{rc: resp.Body, c: c}
	return resp, nil
}

type teeBody struct {
	rc io.ReadCloser
	c  *capture
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.c.mu.Lock()
	b.c.body.Write(p[:n])
	b.c.mu.Unlock()
	return n, err
}

func (b *teeBody) Close() error {
	// Drain what the reader left (bounded by the request's context).
	buf := make([]byte, 4096)
	for i := 0; i < 1<<16; i++ {
		if _, err := b.Read(buf); err != nil {
			break
		}
	}
	b.c.mu.Lock()
	b.c.closed = true
	b.c.mu.Unlock()
	return b.rc.Close()
}

func (c *capture) snapshot() (status int, header http.Header, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.header, bytes.Clone(c.body.Bytes())
}

// syncBuffer is a log sink safe for the bridge's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

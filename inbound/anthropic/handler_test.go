package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	inanthropic "github.com/bridge-dev/bridge/inbound/anthropic"
	"github.com/bridge-dev/bridge/inbound/inboundtest"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/storage/memory"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

type server struct {
	url    string
	engine *bridge.Engine
}

// newServer serves the dialect and the run API over an engine on an
// in-memory store and up.
func newServer(t *testing.T, up bridge.Upstream, cfg inanthropic.Config) *server {
	t.Helper()
	e := bridgetest.NewEngine(t, memory.New(nil), up)
	cfg.Engine = e
	h := inanthropic.New(cfg)
	return &server{url: inboundtest.Serve(t, h, inboundtest.RunAPI(e, h, runs.Config{})), engine: e}
}

// do sends a request and reads the whole answer.
func (s *server) do(t *testing.T, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return inboundtest.Do(t, method, s.url+path, body, header...)
}

// check validates a streamed answer of run.
func check(t *testing.T, body []byte, c anthropictest.Check) *anthropictest.Summary {
	t.Helper()
	frames, err := anthropictest.ParseFrames(body)
	if err != nil {
		t.Errorf("frames: %v", err)
	}
	sum, problems := anthropictest.CheckStream(frames, c)
	for _, p := range problems {
		t.Errorf("Messages stream: %s", p)
	}
	if len(problems) > 0 {
		t.Logf("the stream:\n%s", body)
	}
	return sum
}

type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseError(t *testing.T, resp *http.Response, body []byte) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type == "" {
		t.Fatalf("not an Anthropic error (%v): %s", err, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
	return e
}

const textBody = `{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestStreamText(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("Hello", ", ", "world")}
	s := newServer(t, up, inanthropic.Config{})
	resp, body := s.do(t, "POST", "/v1/messages", textBody, "x-api-key", "k", "anthropic-version", "2099-01-01")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	run := resp.Header.Get("X-Run-Id")
	sum := check(t, body, anthropictest.Check{RunID: run, IDs: true, Complete: true})
	if sum.Text != "Hello, world" || sum.StopReason != "end_turn" || sum.ID != "msg_"+run || sum.Model != "claude-x" {
		t.Errorf("summary %+v", sum)
	}
	if resp.Header.Get("X-Session-Id") == "" {
		t.Error("no X-Session-Id")
	}
	// The upstream got the hub request the decoder made.
	reqs := up.Requests()
	if len(reqs) != 1 || reqs[0].MaxTokens == nil || *reqs[0].MaxTokens != 100 || reqs[0].Inbound != "anthropic" {
		t.Errorf("upstream requests %+v", reqs)
	}
}

func TestComplete(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("Hello")}
	s := newServer(t, up, inanthropic.Config{})
	resp, body := s.do(t, "POST", "/v1/messages", `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var m struct {
		ID, Type, Role, Model string
		StopReason            string `json:"stop_reason"`
		Content               []struct{ Type, Text string }
		Usage                 map[string]int64
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "message" || m.Role != "assistant" || m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Text != "Hello" {
		t.Errorf("message %s", body)
	}
	if _, ok := m.Usage["input_tokens"]; !ok {
		t.Errorf("usage without input_tokens: %s", body)
	}
}

// TestBadRequests: bad input is a 4xx in Anthropic's shape, never a 500 or
// a Go error string.
func TestBadRequests(t *testing.T) {
	s := newServer(t, &bridgetest.Upstream{Events: bridgetest.TextEvents("x")}, inanthropic.Config{MaxBody: 4096})
	tests := []struct {
		name, path, body string
		status           int
		typ, msg         string
	}{
		{"no max_tokens", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "max_tokens: Field required"},
		{"not JSON", "/v1/messages", `{"model":`, 400, "invalid_request_error", "invalid JSON"},
		{"empty", "/v1/messages", ``, 400, "invalid_request_error", "empty"},
		{"bad role", "/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"bot","content":"x"}]}`, 400, "invalid_request_error", "unexpected role"},
		{"too large", "/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "request_too_large", "larger than"},
		{"count without messages", "/v1/messages/count_tokens", `{"model":"m"}`, 400, "invalid_request_error", "messages: Field required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := s.do(t, "POST", tt.path, tt.body)
			e := parseError(t, resp, body)
			if resp.StatusCode != tt.status || e.Error.Type != tt.typ || !strings.Contains(e.Error.Message, tt.msg) {
				t.Errorf("%d %s, want %d %s containing %q", resp.StatusCode, body, tt.status, tt.typ, tt.msg)
			}
		})
	}
}

// TestErrorBeforeFirstByte: an upstream that does not answer gives an
// ordinary error response (stream or not) with Anthropic's status and type
// for the code, and Retry-After.
func TestErrorBeforeFirstByte(t *testing.T) {
	up := &bridgetest.Upstream{OpenErr: &bridge.Error{Code: bridge.CodeUnavailable, Message: "busy", RetryAfter: 3 * time.Second, Dialect: "openai", Status: 503}}
	s := newServer(t, up, inanthropic.Config{})
	for _, stream := range []bool{true, false} {
		body := fmt.Sprintf(`{"model":"m","max_tokens":1,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
		resp, b := s.do(t, "POST", "/v1/messages", body)
		e := parseError(t, resp, b)
		if resp.StatusCode != 529 || e.Error.Type != "overloaded_error" || e.Error.Message != "busy" || resp.Header.Get("Retry-After") != "3" {
			t.Errorf("stream=%v: %d %s Retry-After %q", stream, resp.StatusCode, b, resp.Header.Get("Retry-After"))
		}
		if resp.Header.Get("X-Run-Id") == "" {
			t.Errorf("stream=%v: no X-Run-Id", stream)
		}
	}
}

// funcUpstream is an upstream whose stream a test writes.
type funcUpstream struct {
	stream func(ctx context.Context, yield func(bridge.Event, error) bool)
}

func (u *funcUpstream) Name() string    { return "func" }
func (u *funcUpstream) Dialect() string { return "test" }
func (u *funcUpstream) Open(ctx context.Context, _ *bridge.Request) (*bridge.Call, error) {
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) { u.stream(ctx, yield) }}, nil
}

// TestMidStreamError: a failure after the first byte is an error event; a
// non-streaming client gets the error response.
func TestMidStreamError(t *testing.T) {
	up := &funcUpstream{stream: func(_ context.Context, yield func(bridge.Event, error) bool) {
		_ = yield(bridge.Event{Kind: bridge.KindMessageStarted}, nil) &&
			yield(bridge.Event{Kind: bridge.KindTextDelta, Text: "Once"}, nil) &&
			yield(bridge.Event{}, &bridge.Error{Code: bridge.CodeUnavailable, Message: "Overloaded"})
	}}
	s := newServer(t, up, inanthropic.Config{})
	resp, body := s.do(t, "POST", "/v1/messages", textBody)
	sum := check(t, body, anthropictest.Check{RunID: resp.Header.Get("X-Run-Id"), IDs: true, Complete: true})
	if resp.StatusCode != 200 || sum.Text != "Once" || sum.ErrType != "overloaded_error" || sum.ErrMessage != "Overloaded" {
		t.Errorf("%d %+v", resp.StatusCode, sum)
	}
	resp, body = s.do(t, "POST", "/v1/messages", strings.Replace(textBody, `"stream":true`, `"stream":false`, 1))
	if e := parseError(t, resp, body); resp.StatusCode != 529 || e.Error.Type != "overloaded_error" {
		t.Errorf("non-stream: %d %s", resp.StatusCode, body)
	}
}

// TestPing: while the upstream is quiet the stream gets pings (no id), and
// the stream is still valid.
func TestPing(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b"), Gate: gate}
	s := newServer(t, up, inanthropic.Config{PingInterval: 20 * time.Millisecond})
	go func() {
		for i := range 5 {
			select {
			case gate <- struct{}{}:
			case <-t.Context().Done():
				return
			}
			if i == 1 {
				time.Sleep(150 * time.Millisecond) // quiet after the first text
			}
		}
	}()
	resp, body := s.do(t, "POST", "/v1/messages", textBody)
	sum := check(t, body, anthropictest.Check{RunID: resp.Header.Get("X-Run-Id"), IDs: true, Complete: true})
	if sum.Pings < 2 || sum.Text != "ab" {
		t.Errorf("%d pings, text %q:\n%s", sum.Pings, sum.Text, body)
	}
}

// TestToolRoundTrip: a tool_use turn leaves the run waiting; the next
// request of the session that carries exactly its result continues the
// same run, answered with the new model call only. An id another dialect
// minted, which Anthropic would refuse, is shown escaped and comes back to
// the upstream as it minted it.
func TestToolRoundTrip(t *testing.T) {
	for _, c := range []struct{ name, id, shown string }{
		{"anthropic id", "toolu_1", "toolu_1"},
		{"id minted elsewhere", "call.1:x", "toolu_x_Y2FsbC4xOng"},
	} {
		t.Run(c.name, func(t *testing.T) { testToolRoundTrip(t, c.id, c.shown) })
	}
}

func testToolRoundTrip(t *testing.T, id, shown string) {
	up := &bridgetest.Upstream{Script: func(n int, _ *bridge.Request) []bridge.Event {
		if n == 0 {
			return []bridge.Event{
				{Kind: bridge.KindMessageStarted},
				{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: id, Name: "get_weather"}},
				{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: `{"city":`}},
				{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: `"Paris"}`}},
				{Kind: bridge.KindToolCallDone, ToolCall: &bridge.ToolCall{ID: id, Name: "get_weather", Arguments: `{"city":"Paris"}`}},
				{Kind: bridge.KindMessageDone},
				{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}},
			}
		}
		return bridgetest.TextEvents("21C")
	}}
	s := newServer(t, up, inanthropic.Config{})
	tools := `"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`
	first := `{"model":"m","max_tokens":100,"stream":true,` + tools + `,"messages":[{"role":"user","content":"Weather?"}]}`
	resp, body := s.do(t, "POST", "/v1/messages", first, "X-Session-Id", "sess-tools")
	run := resp.Header.Get("X-Run-Id")
	sum := check(t, body, anthropictest.Check{RunID: run, IDs: true, Complete: true})
	if sum.StopReason != "tool_use" || len(sum.ToolCalls) != 1 || sum.ToolCalls[0].Input != `{"city":"Paris"}` || sum.Blocks[0] != "tool_use" {
		t.Fatalf("first turn %+v", sum)
	}
	if got := sum.ToolCalls[0].ID; got != shown {
		t.Errorf("the client was shown tool id %q, want %q", got, shown)
	}
	second := `{"model":"m","max_tokens":100,"stream":true,` + tools + `,"messages":[{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"` + shown + `","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + shown + `","content":"21C"}]}]}`
	// The engine publishes a run's final event a moment before it lets go
	// of the live run: a continuation that races it gets 409 (an engine
	// issue, reported); retry as a client would.
	for i := 0; ; i++ {
		resp, body = s.do(t, "POST", "/v1/messages", second, "X-Session-Id", "sess-tools")
		if resp.StatusCode != http.StatusConflict || i == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := resp.Header.Get("X-Run-Id"); got != run {
		t.Errorf("the tool result started run %s, want %s continued", got, run)
	}
	sum = check(t, body, anthropictest.Check{RunID: run, IDs: true, Complete: true})
	if sum.Text != "21C" || sum.StopReason != "end_turn" || sum.Messages != 1 {
		t.Errorf("second turn %+v", sum)
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	msgs := reqs[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != bridge.RoleTool || last.ToolCallID != id || last.Text() != "21C" {
		t.Errorf("the upstream got %+v last", last)
	}
	if call := msgs[len(msgs)-2]; len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != id {
		t.Errorf("the upstream got the call as %+v", call)
	}
}

// TestResume: a client that drops a stream resumes through the run API
// with the last event id it read; the rest continues the same message (no
// second message_start, block indices go on), and what was read plus what
// was resumed is exactly the whole stream.
func TestResume(t *testing.T) {
	gate := make(chan struct{})
	words := []string{"w0 ", "w1 ", "w2 ", "w3 ", "w4 ", "w5"}
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents(words...), Gate: gate}
	s := newServer(t, up, inanthropic.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/messages", strings.NewReader(textBody))
	req.Header.Set("X-Session-Id", "sess-resume")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // let three events through before the drop, the rest after
		defer wg.Done()
		for i := range 3 {
			select {
			case gate <- struct{}{}:
			case <-ctx.Done():
				return
			}
			_ = i
		}
	}()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	run := resp.Header.Get("X-Run-Id")
	var head bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(head.String(), `"text":"w1 "`) {
		n, err := resp.Body.Read(buf)
		head.Write(buf[:n])
		if err != nil {
			t.Fatalf("read: %v after %q", err, head.String())
		}
	}
	resp.Body.Close()
	wg.Wait()
	frames, _ := anthropictest.ParseFrames(head.Bytes())
	last := frames[len(frames)-1].ID
	go func() {
		for {
			select {
			case gate <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	_, rest := s.do(t, "GET", "/v1/runs/"+run+"/events", "", "Last-Event-ID", last)
	check(t, rest, anthropictest.Check{RunID: run, IDs: true, Complete: true, Resumed: true})
	_, full := s.do(t, "GET", "/v1/runs/"+run+"/events", "")
	sum := check(t, full, anthropictest.Check{RunID: run, IDs: true, Complete: true})
	if got := head.String() + string(rest); got != string(full) {
		t.Errorf("read + resumed differs from the whole replay:\n%s\n---\n%s", got, full)
	}
	if sum.Text != strings.Join(words, "") {
		t.Errorf("text %q", sum.Text)
	}
}

// TestCountTokens: an estimate (and says so) without an upstream count;
// the upstream's count when it has one.
func TestCountTokens(t *testing.T) {
	body := `{"model":"m","system":"You are terse.","messages":[{"role":"user","content":"Weather in Paris?"}]}`
	s := newServer(t, &bridgetest.Upstream{}, inanthropic.Config{})
	resp, b := s.do(t, "POST", "/v1/messages/count_tokens", body)
	if resp.StatusCode != 200 || string(b) != `{"input_tokens":17}` || resp.Header.Get("X-Bridge-Token-Count") != "estimate" {
		t.Errorf("estimate: %d %s %v", resp.StatusCode, b, resp.Header)
	}
	var got *bridge.Request
	s = newServer(t, &bridgetest.Upstream{}, inanthropic.Config{CountTokens: func(_ context.Context, req *bridge.Request) (int64, bool, error) {
		got = req
		return 1234, true, nil
	}})
	resp, b = s.do(t, "POST", "/v1/messages/count_tokens", body)
	if resp.StatusCode != 200 || string(b) != `{"input_tokens":1234}` || resp.Header.Get("X-Bridge-Token-Count") != "" || got == nil || got.Model != "m" {
		t.Errorf("forwarded: %d %s", resp.StatusCode, b)
	}
	s = newServer(t, &bridgetest.Upstream{}, inanthropic.Config{CountTokens: func(context.Context, *bridge.Request) (int64, bool, error) {
		return 0, false, bridge.Errorf(bridge.CodeNotFound, "The model 'm' does not exist")
	}})
	resp, b = s.do(t, "POST", "/v1/messages/count_tokens", body)
	if e := parseError(t, resp, b); resp.StatusCode != 404 || e.Error.Type != "not_found_error" {
		t.Errorf("error: %d %s", resp.StatusCode, b)
	}
}

// corpusDir holds the requests the official SDK was captured sending (the
// repo's testdata/corpus, with their provenance).
const corpusDir = "../../testdata/corpus/anthropic/client"

// TestCorpusServed: every captured SDK request, with its headers (Bearer
// auth, anthropic-version 2026-10-21), is served: a valid stream, a
// message, or a token count.
func TestCorpusServed(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.http"))
	if len(files) == 0 {
		t.Fatalf("no captures in %s", corpusDir)
	}
	s := newServer(t, &bridgetest.Upstream{Events: bridgetest.TextEvents("hi")}, inanthropic.Config{})
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
			if !ok {
				t.Fatal("no body")
			}
			lines := strings.Split(string(head), "\r\n")
			method, path, _ := strings.Cut(lines[0], " ")
			path, _, _ = strings.Cut(path, " ")
			var hdr []string
			for _, l := range lines[1:] {
				k, v, _ := strings.Cut(l, ": ")
				switch strings.ToLower(k) {
				case "host", "content-length", "connection", "accept-encoding":
					continue
				}
				hdr = append(hdr, k, v)
			}
			resp, b := s.do(t, method, path, string(body), hdr...)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			switch {
			case strings.HasSuffix(path, "/count_tokens"):
				var c struct {
					InputTokens int64 `json:"input_tokens"`
				}
				if err := json.Unmarshal(b, &c); err != nil || c.InputTokens <= 0 {
					t.Errorf("count %s", b)
				}
			case bytes.Contains(body, []byte(`"stream":true`)):
				sum := check(t, b, anthropictest.Check{RunID: resp.Header.Get("X-Run-Id"), IDs: true, Complete: true})
				if sum.Text != "hi" {
					t.Errorf("text %q", sum.Text)
				}
			default:
				if !bytes.Contains(b, []byte(`"text":"hi"`)) {
					t.Errorf("message %s", b)
				}
			}
			if d := resp.Header.Get("X-Bridge-Dropped"); d != "" {
				t.Errorf("dropped %q", d)
			}
		})
	}
}

// flushRecorder is a ResponseWriter that keeps what each flush sent.
type flushRecorder struct {
	*httptest.ResponseRecorder
	mu      sync.Mutex
	flushes []string
	pending strings.Builder
}

func (f *flushRecorder) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending.Write(p)
	return f.ResponseRecorder.Write(p)
}

func (f *flushRecorder) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes = append(f.flushes, f.pending.String())
	f.pending.Reset()
}

// TestEveryChunkItsOwnFlush: an upstream that answers with a burst of
// deltas (all committed in one batch) still gets each one to the client as
// its own content_block_delta event in a flush of its own: translating
// neither merges nor holds back chunks.
func TestEveryChunkItsOwnFlush(t *testing.T) {
	words := make([]string, 64)
	for i := range words {
		words[i] = fmt.Sprintf("w%d ", i)
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := bridgetest.NewEngine(t, st, &bridgetest.Upstream{Events: bridgetest.TextEvents(words...)})
	h := inanthropic.New(inanthropic.Config{Engine: e})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/messages", strings.NewReader(textBody))
	req.Header.Set("Content-Type", "application/json")
	w := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	check(t, w.Body.Bytes(), anthropictest.Check{IDs: true, Complete: true})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending.Len() != 0 {
		t.Errorf("written but never flushed: %q", w.pending.String())
	}
	// A flush is the frames of one event of the run (the first delta comes
	// with its content_block_start, the final's message_delta with
	// message_stop), each frame with an id of its own: one event id
	// (bridge.EventID, the frames before the last bridge.FrameID of it),
	// and no two flushes share one.
	var deltas []string
	seen, frameIDs := map[string]bool{}, map[string]bool{}
	for i, f := range w.flushes {
		if !strings.HasSuffix(f, "\n\n") {
			t.Errorf("flush %d ends inside a frame: %q", i, f)
		}
		ids := map[string]bool{}
		for line := range strings.Lines(f) {
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				id = strings.TrimSpace(id)
				run, seq, _, ok := bridge.ParseFrameID(id)
				if !ok || frameIDs[id] {
					t.Errorf("flush %d: frame id %q is not a frame id, or repeats", i, id)
				}
				frameIDs[id] = true
				ids[bridge.EventID(run, seq)] = true
			}
		}
		for id := range ids {
			if len(ids) > 1 || seen[id] {
				t.Errorf("flush %d holds frames of %d events (or of one flushed before): %q", i, len(ids), f)
			}
			seen[id] = true
		}
		if n := strings.Count(f, `"type":"text_delta"`); n > 1 {
			t.Errorf("flush %d holds %d text deltas: %q", i, n, f)
		} else if n == 1 {
			deltas = append(deltas, f)
		}
	}
	if len(deltas) != len(words) {
		t.Fatalf("%d text deltas flushed, want %d (one per upstream chunk)", len(deltas), len(words))
	}
	for i, d := range deltas {
		if !strings.Contains(d, fmt.Sprintf(`"text":"w%d "`, i)) {
			t.Errorf("delta %d: %q, want the upstream's chunk %d alone", i, d, i)
		}
	}
}

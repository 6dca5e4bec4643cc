package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// startMain runs a bridge with cfg on 127.0.0.1:0 and a temp database.
func startMain(t *testing.T, cfg Config) *Main {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	if cfg.DB == "" || cfg.DB == defaultConfig().DB {
		cfg.DB = filepath.Join(t.TempDir(), "bridge.db")
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := NewMain(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Run() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return m
}

// serveUpstream starts a bridge with the defaults and one upstream, spec as
// --upstream takes it (dialect=URL), and returns its base URL.
func serveUpstream(t *testing.T, spec string) string {
	t.Helper()
	u, err := parseUpstream(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{u}
	return "http://" + startMain(t, cfg).Addr()
}

func TestDefaultsServeEcho(t *testing.T) {
	cfg, err := parseServeFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:8080" || cfg.DB != "./bridge.db" || cfg.Retention != 24*time.Hour {
		t.Errorf("defaults = %+v", cfg)
	}
	if len(cfg.Upstreams) != 1 || cfg.Upstreams[0].Dialect != "echo" {
		t.Errorf("default upstreams = %+v, want echo", cfg.Upstreams)
	}
}

// rawTap keeps a copy of every response body the SDK reads.
type rawTap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *rawTap) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, (*lockedWriter)(r)), resp.Body}
	}
	return resp, err
}

type lockedWriter rawTap

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestSDKStreamsFromEcho: with no flags the bridge serves echo; the official
// openai-go SDK streams a completion; every SSE event has an id; the run and
// its events are in the SQLite file; the history endpoint shows them.
func TestSDKStreamsFromEcho(t *testing.T) {
	cfg, err := parseServeFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DB = filepath.Join(t.TempDir(), "bridge.db")
	m := startMain(t, cfg)
	base := "http://" + m.Addr()

	tap := &rawTap{}
	var resp *http.Response
	client := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("unused"),
		option.WithMaxRetries(0), option.WithMiddleware(tap.middleware), option.WithResponseInto(&resp))
	const prompt = "the quick brown fox jumps over the lazy dog"
	stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:         "echo",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	var finish string
	var usage openai.CompletionUsage
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
			if c.Choices[0].FinishReason != "" {
				finish = c.Choices[0].FinishReason
			}
		}
		if c.Usage.TotalTokens > 0 {
			usage = c.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != prompt || finish != "stop" {
		t.Errorf("text %q finish %q", text.String(), finish)
	}
	if usage.CompletionTokens != 9 || usage.PromptTokens != 9 {
		t.Errorf("usage = %+v, want 9 prompt and 9 completion words", usage)
	}
	runID := resp.Header.Get("X-Run-Id")
	session := resp.Header.Get("X-Session-Id")
	if runID == "" || session == "" {
		t.Fatalf("X-Run-Id %q X-Session-Id %q", runID, session)
	}

	// Every SSE event carries an id of this run, in increasing order.
	tap.mu.Lock()
	raw := tap.buf.String()
	tap.mu.Unlock()
	var lastPos framePos
	events := strings.Split(strings.TrimSuffix(raw, "\n\n"), "\n\n")
	for i, ev := range events {
		if ev == "data: [DONE]" {
			if i != len(events)-1 {
				t.Errorf("[DONE] is not last")
			}
			continue
		}
		id, ok := strings.CutPrefix(strings.SplitN(ev, "\n", 2)[0], "id: ")
		run, pos, okID := parseFramePos(id)
		if !ok || !okID || run != runID || !lastPos.before(pos) {
			t.Fatalf("event %d has id %q (run %s, after %v):\n%s", i, id, runID, lastPos, ev)
		}
		lastPos = pos
	}

	// The run and its events are in the file.
	if err := m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(t.Context(), cfg.DB, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	stored, err := store.Run(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != bridge.StatusCompleted || stored.SessionID != session || stored.LastSeq != lastPos[0] {
		t.Errorf("stored run = %+v", stored)
	}
	evs, err := store.Events(t.Context(), runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var storedText strings.Builder
	for _, ev := range evs {
		storedText.WriteString(ev.Text)
	}
	if int64(len(evs)) != lastPos[0] || storedText.String() != prompt {
		t.Errorf("stored %d events with text %q; want %d with %q", len(evs), storedText.String(), lastPos[0], prompt)
	}
}

// TestHistoryShape reads the chatkit OpenAI history of a two-turn session.
func TestHistoryShape(t *testing.T) {
	m := startMain(t, defaultConfig())
	base := "http://" + m.Addr()
	client := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHeader("X-Session-Id", "chat-1"))
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello there")}
	first, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "echo", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, first.Choices[0].Message.ToParam(), openai.UserMessage("and again"))
	if _, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "echo", Messages: msgs}); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(base + "/v1/sessions/chat-1/history?format=openai")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("history status %d", resp.StatusCode)
	}
	var h struct {
		Messages []struct {
			ID, Role, Content string
			RunID             string `json:"run_id"`
			CreatedAt         int64  `json:"created_at"`
		} `json:"messages"`
		Runs []struct {
			ID, Status, Model string
			CreatedAt         int64  `json:"created_at"`
			FinishedAt        int64  `json:"finished_at"`
			LastEventID       string `json:"last_event_id"`
			Usage             struct {
				TotalTokens int64 `json:"total_tokens"`
			}
		} `json:"runs"`
		HasMore *bool `json:"has_more"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, msg := range h.Messages {
		roles = append(roles, msg.Role+":"+msg.Content)
		if msg.ID == "" || msg.CreatedAt == 0 || (msg.Role != "system" && msg.RunID == "") {
			t.Errorf("message without id, time or run: %+v", msg)
		}
	}
	want := "system:be brief|user:hello there|assistant:hello there|user:and again|assistant:and again"
	if got := strings.Join(roles, "|"); got != want {
		t.Errorf("history\n got %s\nwant %s", got, want)
	}
	if len(h.Runs) != 2 || h.HasMore == nil || *h.HasMore {
		t.Fatalf("runs %+v has_more %v", h.Runs, h.HasMore)
	}
	for _, r := range h.Runs {
		if r.Status != "completed" || r.FinishedAt < r.CreatedAt || r.LastEventID == "" || r.Usage.TotalTokens == 0 {
			t.Errorf("run %+v", r)
		}
	}
	if h.Messages[1].RunID != h.Runs[0].ID || h.Messages[3].RunID != h.Runs[1].ID {
		t.Errorf("messages do not point at their runs")
	}
}

func TestHealthzAndErrors(t *testing.T) {
	m := startMain(t, defaultConfig())
	base := "http://" + m.Addr()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz %d", resp.StatusCode)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		errType                  string
	}{
		{"bad json", "POST", "/v1/chat/completions", `{"model":`, 400, "invalid_request_error"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"echo","messages":[]}`, 400, "invalid_request_error"},
		{"bad role", "POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"wizard","content":"x"}]}`, 400, "invalid_request_error"},
		{"unknown run", "GET", "/v1/runs/run_nope/events", "", 404, "not_found_error"},
		{"unknown session", "GET", "/v1/sessions/nope/history", "", 404, "not_found_error"},
		{"bad format", "GET", "/v1/sessions/nope/history?format=klingon", "", 400, "invalid_request_error"},
		{"huge body", "POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"` + strings.Repeat("a", 9<<20) + `"}]}`, 413, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, base+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct {
					Message, Type string
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("body is not an OpenAI error object: %v", err)
			}
			if resp.StatusCode != tt.status || e.Error.Type != tt.errType || e.Error.Message == "" {
				t.Errorf("got %d %+v, want %d %s", resp.StatusCode, e.Error, tt.status, tt.errType)
			}
		})
	}
}

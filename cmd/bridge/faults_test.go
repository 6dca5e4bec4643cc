package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// chatBody is a Chat Completions request for "hi", streamed or not.
func chatBody(stream bool) string {
	if stream {
		return `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}
	return `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
}

// chat posts a Chat Completions request and returns the status, the
// Retry-After header and the body.
func chat(t *testing.T, base string, stream bool) (int, string, string) {
	t.Helper()
	return postRaw(t, base, chatBody(stream))
}

func errorType(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error object: %s", body)
	}
	return e.Error.Type
}

// flakyBridge starts a bridge over an OpenAI upstream that answers 500
// while fail is set (it starts set), and the text "back" once it is
// cleared. Nothing is retried; the breaker opens after 3 failures, for
// openFor.
func flakyBridge(t *testing.T, openFor time.Duration) (base string, up *openaitest.Server, fail *atomic.Bool) {
	t.Helper()
	fail = new(atomic.Bool)
	fail.Store(true)
	up = openaitest.New(func(int, []byte) openaitest.Reply {
		if fail.Load() {
			return openaitest.Reply{Status: 500, Body: openaitest.ErrorBody("server_error", "boom", "")}
		}
		c := &openaitest.Chunks{ID: "c", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text("back").Finish("stop").List()}
	})
	t.Cleanup(up.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.BaseURL(),
		Breaker: outbound.BreakerConfig{Failures: 3, OpenFor: openFor},
		Retry:   outbound.RetryConfig{Disabled: true}}}
	return "http://" + startMain(t, cfg).Addr(), up, fail
}

// faultConfig is the config of a fault table over the upstream at url:
// short timeouts, quick retries, and a breaker that stays closed (the
// faults come one after the other and it counts mid-stream ones too; the
// breaker has its own tests).
func faultConfig(dialect, url string) Config {
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: dialect, URL: url,
		Timeouts: outbound.Timeouts{FirstByte: 200 * time.Millisecond, Idle: 200 * time.Millisecond},
		Retry:    outbound.RetryConfig{Base: time.Millisecond, MaxDelay: 50 * time.Millisecond},
		Breaker:  outbound.BreakerConfig{Failures: 100}}}
	return cfg
}

// expectInvalidRequest checks the answer to a malformed request: the
// status wanted, an OpenAI invalid_request_error object, and no Go error
// string.
func expectInvalidRequest(t *testing.T, status int, body string, want int) {
	t.Helper()
	if status != want {
		t.Errorf("status %d, want %d: %.300s", status, want, body)
	}
	if typ := errorType(t, body); typ != "invalid_request_error" {
		t.Errorf("type %q", typ)
	}
	if strings.Contains(body, "json:") || strings.Contains(body, "runtime") {
		t.Errorf("a Go error string reached the client: %s", body)
	}
}

// TestBreakerOverOpenAI: 500s until the breaker opens, then immediate 503s
// with Retry-After without touching the upstream, then half-open recovery.
func TestBreakerOverOpenAI(t *testing.T) {
	base, up, fail := flakyBridge(t, 300*time.Millisecond)

	for i := range 3 {
		if status, _, body := chat(t, base, false); status != 500 || errorType(t, body) != "server_error" {
			t.Fatalf("call %d: %d %s", i, status, body)
		}
	}
	status, retryAfter, body := chat(t, base, true)
	if status != 503 || retryAfter == "" || errorType(t, body) != "service_unavailable_error" {
		t.Fatalf("open breaker: %d Retry-After %q %s", status, retryAfter, body)
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("the open breaker let requests through: %d upstream requests", n)
	}
	// Refused before any upstream call, the request records no run.
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(chatBody(false)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("X-Run-Id") != "" || resp.Header.Get("X-Session-Id") != "" {
		t.Errorf("refused by the open breaker: %d, X-Run-Id %q, X-Session-Id %q; want a 503 and no run",
			resp.StatusCode, resp.Header.Get("X-Run-Id"), resp.Header.Get("X-Session-Id"))
	}
	time.Sleep(350 * time.Millisecond)
	fail.Store(false)
	if status, _, body := chat(t, base, false); status != 200 || !strings.Contains(body, "back") {
		t.Fatalf("half-open trial: %d %s", status, body)
	}
	if status, _, _ := chat(t, base, false); status != 200 {
		t.Errorf("after recovery: %d", status)
	}
}

// TestFaultsOverOpenAI: each upstream fault ends as documented, in the
// OpenAI dialect, and the bridge goes on serving.
func TestFaultsOverOpenAI(t *testing.T) {
	var script atomic.Value // func(n int) openaitest.Reply
	up := openaitest.New(func(n int, _ []byte) openaitest.Reply { return script.Load().(func(int) openaitest.Reply)(n) })
	t.Cleanup(up.Close)
	base := "http://" + startMain(t, faultConfig("openai", up.BaseURL())).Addr()
	text := func(c *openaitest.Chunks) *openaitest.Chunks { return c.Role().Text("par", "tial") }

	tests := []struct {
		name   string
		reply  func(n int) openaitest.Reply
		stream bool
		status int
		want   string // in the body
	}{
		{"stall before first byte", func(int) openaitest.Reply {
			return openaitest.Reply{HeaderDelay: time.Second}
		}, false, 504, "first byte timeout"},
		{"stall mid-stream", func(int) openaitest.Reply {
			c := text(&openaitest.Chunks{ID: "c", Model: "m"})
			return openaitest.Reply{Chunks: c.Finish("stop").List(), StallAfter: 3}
		}, true, 200, "idle timeout"},
		{"truncated stream", func(int) openaitest.Reply {
			c := text(&openaitest.Chunks{ID: "c", Model: "m"})
			return openaitest.Reply{Chunks: c.List(), NoDone: true}
		}, true, 200, `"error"`},
		{"garbage in the stream", func(int) openaitest.Reply {
			c := text(&openaitest.Chunks{ID: "c", Model: "m"})
			return openaitest.Reply{Chunks: append(c.List(), `\x00\x01 not json`)}
		}, true, 200, `"error"`},
		{"429 retried", func(n int) openaitest.Reply {
			if n%2 == 0 {
				return openaitest.Reply{Status: 429, Body: openaitest.ErrorBody("rate_limit_error", "slow down", ""),
					Header: http.Header{"Retry-After": {"0"}}}
			}
			c := &openaitest.Chunks{ID: "c", Model: "m"}
			return openaitest.Reply{Chunks: c.Role().Text("after retry").Finish("stop").List()}
		}, false, 200, "after retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n0 := len(up.Requests())
			script.Store(func(n int) openaitest.Reply { return tt.reply(n - n0) })
			status, _, body := chat(t, base, tt.stream)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("got %d:\n%s\nwant %d with %q", status, body, tt.status, tt.want)
			}
			if tt.stream && !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Errorf("stream does not end with [DONE]:\n%s", body)
			}
		})
	}
	// Still serving.
	script.Store(func(int) openaitest.Reply {
		c := &openaitest.Chunks{ID: "c", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text("fine").Finish("stop").List()}
	})
	if status, _, body := chat(t, base, false); status != 200 || !strings.Contains(body, "fine") {
		t.Errorf("after the faults: %d %s", status, body)
	}
}

// TestBadInputOverOpenAI: malformed requests get the right 4xx as OpenAI
// error objects, never a 500 or a Go error string.
func TestBadInputOverOpenAI(t *testing.T) {
	base := "http://" + startMain(t, defaultConfig()).Addr()
	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)
	tests := []struct {
		name, body string
		status     int
	}{
		{"malformed json", `{"model":"echo","messages":[{"role":"user","content":"x"}`, 400},
		{"wrong type", `{"model":"echo","messages":"hello"}`, 400},
		{"wrong content type", `{"model":"echo","messages":[{"role":"user","content":42}]}`, 400},
		{"missing messages", `{"model":"echo"}`, 400},
		{"missing model", `{"messages":[{"role":"user","content":"x"}]}`, 400},
		{"deep nesting", `{"model":"echo","messages":[{"role":"user","content":"x"}],"metadata":` + deep + `}`, 400},
		{"20 MiB body", `{"model":"echo","messages":[{"role":"user","content":"` + strings.Repeat("a", 20<<20) + `"}]}`, 413},
		{"not json at all", "\x00\x01\x02", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := postRaw(t, base, tt.body)
			expectInvalidRequest(t, status, body, tt.status)
		})
	}
}

// postRaw posts body to /v1/chat/completions and returns the status, the
// Retry-After header and the body.
func postRaw(t *testing.T, base, body string) (int, string, string) {
	t.Helper()
	resp, b := call(t, "POST", base+"/v1/chat/completions", "", body, "Content-Type", "application/json")
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

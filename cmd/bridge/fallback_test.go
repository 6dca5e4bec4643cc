package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

func TestFallbackConfig(t *testing.T) {
	ups := func(fallbacks ...[]string) []Upstream {
		var out []Upstream
		for i, f := range fallbacks {
			out = append(out, Upstream{Name: string(rune('a' + i)), Dialect: "echo", Fallbacks: f})
		}
		return out
	}
	tests := []struct {
		name    string
		ups     []Upstream
		wantErr string
	}{
		{"ok", ups([]string{"b", "c"}, nil, nil), ""},
		{"mutual is a cycle", ups([]string{"b"}, []string{"a"}), "upstream a: fallbacks form a cycle: a -> b -> a"},
		{"longer cycle", ups([]string{"b"}, []string{"c"}, []string{"a"}), "upstream a: fallbacks form a cycle: a -> b -> c -> a"},
		{"unknown", ups([]string{"zz"}), `upstream a: fallbacks: "zz" is not a configured upstream`},
		{"self", ups([]string{"a"}), "upstream a: fallbacks: it cannot be its own fallback"},
		{"twice", ups([]string{"b", "b"}, nil), `upstream a: fallbacks: "b" is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.Upstreams = tt.ups
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}

	// A fallback's own fallbacks follow it; each upstream is tried once.
	cfg := defaultConfig()
	cfg.Upstreams = ups([]string{"b", "c"}, []string{"d", "c"}, []string{"e"}, nil, nil)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "d", "c", "e"}, cfg.FallbackChain("a")); diff != "" {
		t.Errorf("chain of a (-want +got):\n%s", diff)
	}
	if got := cfg.FallbackChain("d"); len(got) != 0 {
		t.Errorf("chain of d = %v", got)
	}

	// From the YAML file.
	path := filepath.Join(t.TempDir(), "bridge.yaml")
	yaml := `upstreams:
  - name: gpt
    dialect: openai
    url: http://127.0.0.1:1/v1
    models: ["*"]
    fallbacks: [claude]
  - name: claude
    dialect: anthropic
    url: http://127.0.0.1:2
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = defaultConfig()
	if err := loadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"claude"}, cfg.Upstreams[0].Fallbacks); diff != "" {
		t.Errorf("fallbacks from YAML (-want +got):\n%s", diff)
	}
}

// closedURL is a URL nothing listens at: connections are refused.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// claude is an Anthropic fake that says "from claude".
func claude(t *testing.T) *anthropictest.Server {
	t.Helper()
	up := anthropictest.New(func(int, []byte) anthropictest.Reply {
		e := &anthropictest.Events{ID: "msg_1", Model: "claude-test"}
		return anthropictest.Reply{Events: e.Start(3, 0, 0).Text("from ", "claude").Delta("end_turn", 2).Stop().List()}
	})
	t.Cleanup(up.Close)
	return up
}

// fallbackBridge starts a bridge whose route goes to an OpenAI upstream at
// primaryURL with an Anthropic fallback at fallbackURL.
func fallbackBridge(t *testing.T, primaryURL, fallbackURL string, breaker outbound.BreakerConfig) string {
	t.Helper()
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{
		{Name: "gpt", Dialect: "openai", URL: primaryURL, Models: []string{"*"}, Fallbacks: []string{"claude"},
			Breaker: breaker, Retry: outbound.RetryConfig{Disabled: true}, Timeouts: outbound.Timeouts{Connect: time.Second}},
		{Name: "claude", Dialect: "anthropic", URL: fallbackURL, Retry: outbound.RetryConfig{Disabled: true}},
	}
	return "http://" + startMain(t, cfg).Addr()
}

// chatRun posts a Chat Completions request and returns the status, body and
// the run it made.
func chatRun(t *testing.T, base string, stream bool) (int, string, *bridge.Run) {
	t.Helper()
	resp, b := call(t, "POST", base+"/v1/chat/completions", "", chatBody(stream), "Content-Type", "application/json")
	id := resp.Header.Get("X-Run-Id")
	if id == "" {
		return resp.StatusCode, b, nil
	}
	return resp.StatusCode, b, runOf(t, base, id)
}

// TestFallbackServe: through bridge serve's wiring, an OpenAI client over
// an OpenAI route whose upstream is down is served by its Anthropic
// fallback, and the run records the fallback.
func TestFallbackServe(t *testing.T) {
	fb := claude(t)
	base := fallbackBridge(t, closedURL(t), fb.URL, outbound.BreakerConfig{})
	for _, stream := range []bool{false, true} {
		status, body, run := chatRun(t, base, stream)
		if status != 200 || !strings.Contains(body, "claude") {
			t.Fatalf("stream=%v: %d %s", stream, status, body)
		}
		if run == nil || run.Status != bridge.StatusCompleted || run.Upstream != "claude" || run.Outbound != "anthropic" {
			t.Errorf("stream=%v: run %+v, want completed over claude (anthropic)", stream, run)
		}
	}
}

// TestFallbackBreakerOpen: once the primary's breaker is open the fallback
// serves without the primary being called.
func TestFallbackBreakerOpen(t *testing.T) {
	primary := openaitest.New(func(int, []byte) openaitest.Reply {
		return openaitest.Reply{Status: 500, Body: openaitest.ErrorBody("server_error", "boom", "")}
	})
	t.Cleanup(primary.Close)
	fb := claude(t)
	base := fallbackBridge(t, primary.BaseURL(), fb.URL, outbound.BreakerConfig{Failures: 2, OpenFor: time.Minute})
	for i := range 5 {
		status, body, run := chatRun(t, base, false)
		if status != 200 || !strings.Contains(body, "claude") || run.Upstream != "claude" {
			t.Fatalf("request %d: %d %s (run upstream %q)", i, status, body, run.Upstream)
		}
	}
	if n := len(primary.Requests()); n != 2 {
		t.Errorf("the primary got %d requests; its breaker opens after 2", n)
	}
	if n := len(fb.Requests()); n != 5 {
		t.Errorf("the fallback got %d requests, want 5", n)
	}
}

// TestFallbackNotTaken: a 400 for the client's request, and a stream that
// fails after it began, are answered as today; the fallback is not called.
func TestFallbackNotTaken(t *testing.T) {
	var script atomic.Value // func() openaitest.Reply
	primary := openaitest.New(func(int, []byte) openaitest.Reply { return script.Load().(func() openaitest.Reply)() })
	t.Cleanup(primary.Close)
	fb := claude(t)
	base := fallbackBridge(t, primary.BaseURL(), fb.URL, outbound.BreakerConfig{})

	script.Store(func() openaitest.Reply {
		return openaitest.Reply{Status: 400, Body: openaitest.ErrorBody("invalid_request_error", "messages: too long", "")}
	})
	status, body, run := chatRun(t, base, false)
	if status != 400 || errorType(t, body) != "invalid_request_error" || !strings.Contains(body, "too long") {
		t.Errorf("400: %d %s", status, body)
	}
	if run == nil || run.Status != bridge.StatusFailed || run.Upstream != "gpt" {
		t.Errorf("400: run %+v, want failed over gpt", run)
	}

	script.Store(func() openaitest.Reply {
		c := &openaitest.Chunks{ID: "c", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text("par", "tial").Finish("stop").List(), CutAfter: 2}
	})
	status, body, run = chatRun(t, base, true)
	if status != 200 || !strings.Contains(body, "par") || !strings.Contains(body, `"error"`) || strings.Contains(body, "claude") {
		t.Errorf("cut mid-stream: %d %s", status, body)
	}
	if run == nil || run.Status != bridge.StatusFailed || run.Upstream != "gpt" {
		t.Errorf("cut mid-stream: run %+v, want failed over gpt", run)
	}
	if n := len(fb.Requests()); n != 0 {
		t.Errorf("the fallback got %d requests", n)
	}
}

// TestFallbackAllFail: when the fallback fails too, the client gets the
// primary's error in its own dialect.
func TestFallbackAllFail(t *testing.T) {
	fb := anthropictest.New(func(int, []byte) anthropictest.Reply {
		return anthropictest.Reply{Status: 529, Body: anthropictest.ErrorBody("overloaded_error", "Overloaded")}
	})
	t.Cleanup(fb.Close)
	base := fallbackBridge(t, closedURL(t), fb.URL, outbound.BreakerConfig{})
	status, body, run := chatRun(t, base, false)
	if status != 502 || errorType(t, body) != "server_error" || !strings.Contains(body, "upstream gpt is unreachable") {
		t.Errorf("%d %s, want the primary's 502", status, body)
	}
	if run == nil || run.Status != bridge.StatusFailed || run.Upstream != "gpt" {
		t.Errorf("run %+v, want failed over gpt", run)
	}
	if n := len(fb.Requests()); n != 1 {
		t.Errorf("the fallback got %d requests, want 1", n)
	}
}

// TestFallbackToolCalls: a tool call the Anthropic fallback made comes
// back to it, on the client's next turn, with the id it minted.
func TestFallbackToolCalls(t *testing.T) {
	fb := anthropictest.New(func(n int, _ []byte) anthropictest.Reply {
		e := &anthropictest.Events{ID: "msg_1", Model: "claude-test"}
		if n == 0 {
			return anthropictest.Reply{Events: e.Start(3, 0, 0).ToolUse("toolu_01abc", "get_weather", `{"city":`, `"Paris"}`).Delta("tool_use", 2).Stop().List()}
		}
		return anthropictest.Reply{Events: e.Start(3, 0, 0).Text("sunny").Delta("end_turn", 2).Stop().List()}
	})
	t.Cleanup(fb.Close)
	base := fallbackBridge(t, closedURL(t), fb.URL, outbound.BreakerConfig{})
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	post := func(body string) string {
		t.Helper()
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	first := post(`{"model":"m","messages":[{"role":"user","content":"weather in Paris?"}],` + tools + `}`)
	if !strings.Contains(first, `"toolu_01abc"`) {
		t.Fatalf("first turn: %s", first)
	}
	second := post(`{"model":"m","messages":[{"role":"user","content":"weather in Paris?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_01abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"toolu_01abc","content":"sunny, 21C"}],` + tools + `}`)
	if !strings.Contains(second, "sunny") {
		t.Fatalf("second turn: %s", second)
	}
	reqs := fb.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d fallback requests, want 2", len(reqs))
	}
	if body := string(reqs[1].Body); strings.Count(body, "toolu_01abc") != 2 {
		t.Errorf("the fallback's second request does not carry its id in the tool_use and the tool_result:\n%s", body)
	}
}

// TestFallbackAfterAnErrorEvent: an Anthropic primary that answers 200,
// then an overloaded_error as its first event (as the real API does when
// overloaded), is passed over for its OpenAI fallback; one that fails after
// its first text is not.
func TestFallbackAfterAnErrorEvent(t *testing.T) {
	var afterText atomic.Bool
	primary := anthropictest.New(func(int, []byte) anthropictest.Reply {
		e := &anthropictest.Events{ID: "msg_1", Model: "claude-test"}
		if afterText.Load() {
			return anthropictest.Reply{Events: e.Start(3, 0, 0).Text("par").Error("overloaded_error", "Overloaded").List()}
		}
		return anthropictest.Reply{Events: e.Start(3, 0, 0).Ping().Error("overloaded_error", "Overloaded").List()}
	})
	t.Cleanup(primary.Close)
	fb := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "c", Model: "gpt-test"}
		return openaitest.Reply{Chunks: c.Role().Text("from ", "gpt").Finish("stop").List()}
	})
	t.Cleanup(fb.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{
		{Name: "claude", Dialect: "anthropic", URL: primary.URL, Models: []string{"*"}, Fallbacks: []string{"gpt"},
			Retry: outbound.RetryConfig{Disabled: true}},
		{Name: "gpt", Dialect: "openai", URL: fb.BaseURL(), Retry: outbound.RetryConfig{Disabled: true}},
	}
	base := "http://" + startMain(t, cfg).Addr()
	for _, stream := range []bool{false, true} {
		status, body, run := chatRun(t, base, stream)
		if status != 200 || !strings.Contains(body, "from ") || !strings.Contains(body, "gpt") || strings.Contains(body, "Overloaded") {
			t.Fatalf("stream=%v: %d %s", stream, status, body)
		}
		if run == nil || run.Status != bridge.StatusCompleted || run.Upstream != "gpt" || run.Outbound != "openai" {
			t.Errorf("stream=%v: run %+v, want completed over gpt (openai)", stream, run)
		}
	}
	if n := len(primary.Requests()); n != 2 {
		t.Errorf("the primary got %d requests, want 2", n)
	}

	afterText.Store(true)
	status, body, run := chatRun(t, base, true)
	if status != 200 || !strings.Contains(body, "par") || !strings.Contains(body, `"error"`) || strings.Contains(body, "gpt") {
		t.Errorf("error after text: %d %s", status, body)
	}
	if run == nil || run.Status != bridge.StatusFailed || run.Upstream != "claude" {
		t.Errorf("error after text: run %+v, want failed over claude", run)
	}
	if n := len(fb.Requests()); n != 2 {
		t.Errorf("the fallback got %d requests, want the first 2 only", n)
	}
}

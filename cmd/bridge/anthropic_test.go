package main

// End-to-end tests of the Anthropic dialect: the official anthropic-sdk-go
// client against `bridge serve --upstream openai=<openaitest>`, and the
// official openai-go client against `bridge serve --upstream
// anthropic=<anthropictest>`. Every stream the bridge emits goes through
// the Messages stream validator (anthropictest.CheckStream) too.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// anthTimeout bounds each end-to-end test.
const anthTimeout = 20 * time.Second

// anthTap keeps a copy of every response body the Anthropic SDK reads.
type anthTap struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	resp *http.Response
}

func (tp *anthTap) middleware(req *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err == nil {
		tp.mu.Lock()
		tp.buf.Reset()
		tp.resp = resp
		tp.mu.Unlock()
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, (*anthTapWriter)(tp)), resp.Body}
	}
	return resp, err
}

type anthTapWriter anthTap

func (w *anthTapWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// last returns the last response's header and the body read so far.
func (tp *anthTap) last() (http.Header, []byte) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.resp == nil {
		return nil, nil
	}
	return tp.resp.Header, bytes.Clone(tp.buf.Bytes())
}

// validate checks the last stream the SDK read.
func (tp *anthTap) validate(t *testing.T) *anthropictest.Summary {
	t.Helper()
	h, body := tp.last()
	frames, err := anthropictest.ParseFrames(body)
	if err != nil {
		t.Errorf("frames: %v", err)
	}
	sum, problems := anthropictest.CheckStream(frames, anthropictest.Check{RunID: h.Get("X-Run-Id"), IDs: true, Complete: true})
	for _, p := range problems {
		t.Errorf("Messages stream: %s", p)
	}
	if len(problems) > 0 {
		t.Logf("the stream:\n%s", body)
	}
	return sum
}

// anthBridgeOverOpenAI starts a bridge whose upstream is an openaitest
// server answering with reply.
func anthBridgeOverOpenAI(t *testing.T, reply func(n int, body []byte) openaitest.Reply) (string, *openaitest.Server) {
	t.Helper()
	up := openaitest.New(reply)
	t.Cleanup(up.Close)
	return serveUpstream(t, "openai="+up.BaseURL()), up
}

// anthBridgeOverAnthropic starts a bridge whose upstream is an
// anthropictest server answering with reply.
func anthBridgeOverAnthropic(t *testing.T, reply func(n int, body []byte) anthropictest.Reply) (string, *anthropictest.Server) {
	t.Helper()
	up := anthropictest.New(reply)
	t.Cleanup(up.Close)
	return serveUpstream(t, "anthropic="+up.URL), up
}

func anthClient(base string, tap *anthTap, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-test"),
		aoption.WithMaxRetries(0), aoption.WithMiddleware(tap.middleware)}, opts...)...)
}

// continuing retries a request that continues a run (it carries the tool
// results) while it answers 409: the engine publishes a run's final event a
// moment before it lets go of the live run, so a client that answers at
// once can race it (an engine issue, reported with this dialect's work).
func continuing[T any](ctx context.Context, call func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := call()
		var ae *anthropic.Error
		var oe *openai.Error
		conflict := errors.As(err, &ae) && ae.StatusCode == http.StatusConflict || errors.As(err, &oe) && oe.StatusCode == http.StatusConflict
		if !conflict || i == 100 || ctx.Err() != nil {
			return v, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// anthStream streams params and accumulates the message as an SDK user
// does.
func anthStream(ctx context.Context, c anthropic.Client, p anthropic.MessageNewParams, opts ...aoption.RequestOption) (anthropic.Message, error) {
	s := c.Messages.NewStreaming(ctx, p, opts...)
	defer s.Close()
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			return m, err
		}
	}
	return m, s.Err()
}

func textOf(m anthropic.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func oaUsageChunks(model string, build func(c *openaitest.Chunks)) []string {
	c := &openaitest.Chunks{ID: "chatcmpl-up", Model: model}
	c.Role()
	build(c)
	return c.List()
}

// TestAnthropicSDKStreamsOverOpenAI: streamed text; the system prompt and
// max_tokens reach the OpenAI upstream, which is asked for usage, so
// message_delta carries the real output count; the stop reason is end_turn.
func TestAnthropicSDKStreamsOverOpenAI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	const answer = "Hello from an OpenAI model, \"quoted\" ü."
	base, up := anthBridgeOverOpenAI(t, func(int, []byte) openaitest.Reply {
		return openaitest.Reply{Chunks: oaUsageChunks("gpt-up", func(c *openaitest.Chunks) {
			c.Text(openaitest.Words(answer)...).Finish("stop").Usage(23, 9)
		})}
	})
	tap := &anthTap{}
	c := anthClient(base, tap)
	m, err := anthStream(ctx, c, anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		System:   []anthropic.TextBlockParam{{Text: "Be terse."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := tap.validate(t)
	if textOf(m) != answer || m.StopReason != anthropic.StopReasonEndTurn || m.Usage.OutputTokens != 9 || m.Usage.InputTokens != 23 {
		t.Errorf("message: text %q stop %q usage %+v", textOf(m), m.StopReason, m.Usage)
	}
	if sum.Text != answer || m.Model != "claude-sonnet-4-5" || !strings.HasPrefix(m.ID, "msg_run_") {
		t.Errorf("stream text %q, id %q, model %q", sum.Text, m.ID, m.Model)
	}
	// What the OpenAI request could not carry is named in the trailer.
	tap.mu.Lock()
	trailer := tap.resp.Trailer.Get("X-Bridge-Dropped")
	tap.mu.Unlock()
	if trailer != "param:thinking" {
		t.Errorf("X-Bridge-Dropped trailer %q, want param:thinking", trailer)
	}
	var sent struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		MaxCompletionTokens int64 `json:"max_completion_tokens"`
		StreamOptions       struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(up.Requests()[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 2 || sent.Messages[0].Role != "system" || sent.MaxCompletionTokens != 2048 || !sent.StreamOptions.IncludeUsage {
		t.Errorf("upstream request %s", up.Requests()[0].Body)
	}
}

// TestAnthropicSDKToolRoundTripOverOpenAI: a tool_use whose input is
// exactly the JSON the upstream streamed in fragments; the client sends the
// tool_result back with the same X-Session-Id and the bridge continues the
// same run (same X-Run-Id); the upstream gets the call and its result in
// its own shape.
func TestAnthropicSDKToolRoundTripOverOpenAI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	frags := []string{`{"city":`, `"Paris",`, `"note":"a \"q\" ü"}`}
	base, up := anthBridgeOverOpenAI(t, func(n int, _ []byte) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Chunks: oaUsageChunks("gpt-up", func(c *openaitest.Chunks) {
				c.Text("Checking.").ToolCall(0, "call_w1", "get_weather", frags...).Finish("tool_calls").Usage(30, 12)
			})}
		}
		return openaitest.Reply{Chunks: oaUsageChunks("gpt-up", func(c *openaitest.Chunks) {
			c.Text("It is ", "21C.").Finish("stop").Usage(50, 5)
		})}
	})
	tap := &anthTap{}
	c := anthClient(base, tap, aoption.WithHeader("X-Session-Id", "sess-anth-tools"))
	tools := []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}}}, "get_weather")}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}
	first, err := anthStream(ctx, c, anthropic.MessageNewParams{Model: "m", MaxTokens: 100, Tools: tools, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := tap.last()
	run := h.Get("X-Run-Id")
	tap.validate(t)
	if first.StopReason != anthropic.StopReasonToolUse || len(first.Content) != 2 || first.Content[1].Type != "tool_use" {
		t.Fatalf("first message %+v", first)
	}
	call := first.Content[1]
	if string(call.Input) != strings.Join(frags, "") || call.ID != "call_w1" || call.Name != "get_weather" {
		t.Errorf("tool_use %s %s input %s, want %s", call.ID, call.Name, call.Input, strings.Join(frags, ""))
	}

	msgs = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "21C", false)))
	second, err := continuing(ctx, func() (anthropic.Message, error) {
		return anthStream(ctx, c, anthropic.MessageNewParams{Model: "m", MaxTokens: 100, Tools: tools, Messages: msgs})
	})
	if err != nil {
		t.Fatal(err)
	}
	h, _ = tap.last()
	if got := h.Get("X-Run-Id"); got != run {
		t.Errorf("the tool result started run %s, want %s continued", got, run)
	}
	tap.validate(t)
	if textOf(second) != "It is 21C." || second.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("second message %q %s", textOf(second), second.StopReason)
	}
	var sent struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string                     `json:"id"`
				Function struct{ Arguments string } `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(up.Requests()[1].Body, &sent); err != nil {
		t.Fatal(err)
	}
	ms := sent.Messages
	if len(ms) != 3 || ms[1].ToolCalls[0].ID != "call_w1" || ms[1].ToolCalls[0].Function.Arguments != strings.Join(frags, "") ||
		ms[2].Role != "tool" || ms[2].ToolCallID != "call_w1" {
		t.Errorf("second upstream request %s", up.Requests()[1].Body)
	}
}

// TestAnthropicSDKThinkingOverOpenAI: reasoning_content becomes a thinking
// block before the text block.
func TestAnthropicSDKThinkingOverOpenAI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	base, _ := anthBridgeOverOpenAI(t, func(int, []byte) openaitest.Reply {
		return openaitest.Reply{Chunks: oaUsageChunks("deepseek-r", func(c *openaitest.Chunks) {
			c.Reasoning("97 is odd; ", "no divisor up to 9.").Text("Yes, ", "prime.").Finish("stop").Usage(10, 40)
		})}
	})
	tap := &anthTap{}
	m, err := anthStream(ctx, anthClient(base, tap), anthropic.MessageNewParams{Model: "m", MaxTokens: 2048,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Is 97 prime?"))}})
	if err != nil {
		t.Fatal(err)
	}
	tap.validate(t)
	if len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[0].Thinking != "97 is odd; no divisor up to 9." ||
		m.Content[1].Type != "text" || m.Content[1].Text != "Yes, prime." {
		t.Errorf("content %+v", m.Content)
	}
}

// TestAnthropicSDKStopReasons: each finish_reason maps to its stop_reason,
// streamed and not.
func TestAnthropicSDKStopReasons(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	cases := []struct{ finish, want string }{
		{"stop", "end_turn"}, {"length", "max_tokens"}, {"tool_calls", "tool_use"}, {"content_filter", "refusal"},
	}
	base, _ := anthBridgeOverOpenAI(t, func(_ int, body []byte) openaitest.Reply {
		finish := lastUserText(body)
		return openaitest.Reply{Chunks: oaUsageChunks("gpt-up", func(c *openaitest.Chunks) {
			if finish == "tool_calls" {
				c.ToolCall(0, "call_1", "f", "{}")
			} else {
				c.Text("some text")
			}
			c.Finish(finish).Usage(1, 2)
		})}
	})
	tap := &anthTap{}
	c := anthClient(base, tap)
	for _, tc := range cases {
		p := anthropic.MessageNewParams{Model: "m", MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(tc.finish))}}
		m, err := anthStream(ctx, c, p)
		if err != nil {
			t.Fatal(err)
		}
		tap.validate(t)
		if string(m.StopReason) != tc.want {
			t.Errorf("finish %s: streamed stop_reason %q, want %s", tc.finish, m.StopReason, tc.want)
		}
		msg, err := c.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if string(msg.StopReason) != tc.want {
			t.Errorf("finish %s: stop_reason %q, want %s", tc.finish, msg.StopReason, tc.want)
		}
	}
}

// TestAnthropicSDKMidStreamError: an upstream failure after the first byte
// surfaces as an error event, which the SDK returns as an error.
func TestAnthropicSDKMidStreamError(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	base, _ := anthBridgeOverOpenAI(t, func(n int, _ []byte) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Chunks: oaUsageChunks("gpt-up", func(c *openaitest.Chunks) {
				c.Text("Once ", "upon").Error("server_error", "The model crashed.")
			}), NoDone: true}
		}
		return openaitest.Reply{Chunks: oaUsageChunks("gpt-up", func(c *openaitest.Chunks) { c.Text("Once ") }), CutAfter: 2}
	})
	tap := &anthTap{}
	c := anthClient(base, tap)
	p := anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("story"))}}
	m, err := anthStream(ctx, c, p)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.Type() != "api_error" || ae.Message != "The model crashed." {
		t.Fatalf("SDK error %T %v, want an api_error", err, err)
	}
	sum := tap.validate(t)
	if textOf(m) != "Once upon" || sum.ErrType != "api_error" {
		t.Errorf("text %q, error %s", textOf(m), sum.ErrType)
	}
	// A connection cut mid-stream is an error event too.
	_, err = anthStream(ctx, c, p)
	if !errors.As(err, &ae) || ae.Type() != "api_error" {
		t.Errorf("cut: SDK error %T %v", err, err)
	}
	tap.validate(t)
}

// TestAnthropicSDKErrorsBeforeFirstByte: an OpenAI upstream's error status
// reaches the SDK as Anthropic's status and type for it, with the
// upstream's message; an upstream 401 or 403 (it refused the bridge's own
// key) is a bad gateway that says so (issue 15).
func TestAnthropicSDKErrorsBeforeFirstByte(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	cases := []struct {
		status     int
		typ, code  string
		wantStatus int
		wantType   string
	}{
		{400, "invalid_request_error", "invalid_value", 400, "invalid_request_error"},
		{401, "invalid_request_error", "invalid_api_key", 502, "api_error"},
		{403, "permission_error", "", 502, "api_error"},
		{404, "invalid_request_error", "model_not_found", 404, "not_found_error"},
		{429, "rate_limit_error", "rate_limit_exceeded", 429, "rate_limit_error"},
		{500, "server_error", "", 502, "api_error"},
		{503, "server_error", "overloaded", 529, "overloaded_error"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			p := anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}}
			for _, stream := range []bool{true, false} {
				// A bridge of its own each time: retries and the breaker
				// (which a 429 or a 503 trips) are not what is tested here.
				base, _ := anthBridgeOverOpenAI(t, func(int, []byte) openaitest.Reply {
					return openaitest.Reply{Status: tc.status, Body: openaitest.ErrorBody(tc.typ, "upstream says "+tc.typ, tc.code)}
				})
				c := anthClient(base, &anthTap{})
				var err error
				if stream {
					_, err = anthStream(ctx, c, p)
				} else {
					_, err = c.Messages.New(ctx, p)
				}
				var ae *anthropic.Error
				want := "upstream says " + tc.typ
				if tc.status == 401 || tc.status == 403 {
					want = outbound.Refused + " (upstream openai)"
				}
				if !errors.As(err, &ae) || ae.StatusCode != tc.wantStatus || string(ae.Type()) != tc.wantType || ae.Message != want {
					t.Errorf("stream=%v: %T %v; want %d %s", stream, err, err, tc.wantStatus, tc.wantType)
				}
			}
		})
	}
}

// TestAnthropicSDKCountTokens: count_tokens over an OpenAI upstream is an
// estimate (and says so); over an Anthropic upstream it is forwarded.
func TestAnthropicSDKCountTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	p := anthropic.MessageCountTokensParams{Model: "m", System: anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("You are terse.")},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}}

	base, _ := anthBridgeOverOpenAI(t, func(int, []byte) openaitest.Reply { return openaitest.Reply{} })
	var resp *http.Response
	ac := anthClient(base, &anthTap{})
	n, err := ac.Messages.CountTokens(ctx, p, aoption.WithResponseInto(&resp))
	if err != nil || n.InputTokens != 17 || resp.Header.Get("X-Bridge-Token-Count") != "estimate" {
		t.Errorf("over openai: %+v %v", n, err)
	}

	base, up := anthBridgeOverAnthropic(t, func(int, []byte) anthropictest.Reply { return anthropictest.Reply{} })
	up.Count = func([]byte) anthropictest.Reply { return anthropictest.Reply{Body: `{"input_tokens":77}`} }
	ac = anthClient(base, &anthTap{})
	n, err = ac.Messages.CountTokens(ctx, p, aoption.WithResponseInto(&resp))
	if err != nil || n.InputTokens != 77 || resp.Header.Get("X-Bridge-Token-Count") != "" {
		t.Errorf("over anthropic: %+v %v", n, err)
	}
	if reqs := up.CountRequests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"system":"You are terse."`) {
		t.Errorf("the upstream got %v", reqs)
	}
}

// TestAnthropicSDKOverAnthropic: same dialect both ways: thinking with its
// signature reaches the client, and the client's next turn sends the
// thinking block back to the upstream unchanged; cache counts pass.
func TestAnthropicSDKOverAnthropic(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	base, up := anthBridgeOverAnthropic(t, func(n int, _ []byte) anthropictest.Reply {
		ev := &anthropictest.Events{ID: "msg_up", Model: "claude-x"}
		if n == 0 {
			ev.Start(5, 100, 7).Thinking("sig-abc", "hmm ", "ok").ToolUse("toolu_01", "f", `{"a":`, `1}`).Delta("tool_use", 30).Stop()
		} else {
			ev.Start(9, 0, 0).Ping().Text("done").Delta("end_turn", 1).Stop()
		}
		return anthropictest.Reply{Events: ev.List()}
	})
	tap := &anthTap{}
	c := anthClient(base, tap, aoption.WithHeader("X-Session-Id", "sess-anth-anth"))
	tools := []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: map[string]any{}}, "f")}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("go"))}
	first, err := anthStream(ctx, c, anthropic.MessageNewParams{Model: "m", MaxTokens: 2000, Tools: tools, Messages: msgs,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024)})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := tap.last()
	run := h.Get("X-Run-Id")
	tap.validate(t)
	if len(first.Content) != 2 || first.Content[0].Signature != "sig-abc" || first.Content[0].Thinking != "hmm ok" ||
		first.Usage.InputTokens != 5 || first.Usage.CacheReadInputTokens != 100 || first.Usage.CacheCreationInputTokens != 7 {
		t.Fatalf("first %+v", first)
	}
	msgs = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_01", "r", false)))
	second, err := continuing(ctx, func() (anthropic.Message, error) {
		return anthStream(ctx, c, anthropic.MessageNewParams{Model: "m", MaxTokens: 2000, Tools: tools, Messages: msgs,
			Thinking: anthropic.ThinkingConfigParamOfEnabled(1024)})
	})
	if err != nil || textOf(second) != "done" {
		t.Fatalf("second %q %v", textOf(second), err)
	}
	if h, _ := tap.last(); h.Get("X-Run-Id") != run {
		t.Errorf("the tool result started run %s, want %s continued", h.Get("X-Run-Id"), run)
	}
	tap.validate(t)
	body := string(up.Requests()[1].Body)
	for _, want := range []string{`{"type":"thinking","thinking":"hmm ok","signature":"sig-abc"}`, `"thinking":{"budget_tokens":1024,"type":"enabled"}`,
		`{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"r"}]}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the second upstream request lacks %s:\n%s", want, body)
		}
	}
	if h := up.Requests()[0].Header; h.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("upstream headers %v", h)
	}
}

// TestOpenAISDKOverAnthropic: the openai-go client against an Anthropic
// upstream: text; parallel tool calls with their arguments; reasoning from
// thinking; usage; finish reasons; the tool results go back as tool_result
// blocks of one user message and continue the same run.
func TestOpenAISDKOverAnthropic(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), anthTimeout)
	defer cancel()
	base, up := anthBridgeOverAnthropic(t, func(n int, body []byte) anthropictest.Reply {
		ev := &anthropictest.Events{ID: "msg_up", Model: "claude-x"}
		switch n {
		case 0:
			ev.Start(40, 0, 0).Text("Looking.").
				ToolUse("toolu_a", "get_weather", `{"city":`, `"Paris"}`).ToolUse("toolu_b", "get_time", `{"tz":"Europe/Paris"}`).
				Delta("tool_use", 25).Stop()
		case 1:
			ev.Start(60, 0, 0).Text("21C ", "at 14:00.").Delta("end_turn", 6).Stop()
		case 2:
			ev.Start(8, 0, 0).Thinking("sig-r", "Six times ", "seven.").Text("42").Delta("end_turn", 20).Stop()
		default:
			ev.Start(3, 0, 0).Text("cut").Delta("max_tokens", 1).Stop()
		}
		return anthropictest.Reply{Events: ev.List()}
	})
	c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHeader("X-Session-Id", "sess-oa-anth"))
	tools := []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object"}}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time", Parameters: shared.FunctionParameters{"type": "object"}}),
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Weather and time in Paris?")}
	var resp *http.Response
	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "claude-x", Messages: msgs, Tools: tools,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}, option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder // none in this turn
	for s.Next() {
		ch := s.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 {
			var d struct {
				ReasoningContent string `json:"reasoning_content"`
			}
			_ = json.Unmarshal([]byte(ch.Choices[0].Delta.RawJSON()), &d)
			reasoning.WriteString(d.ReasoningContent)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	run := resp.Header.Get("X-Run-Id")
	ch := acc.Choices[0]
	if ch.Message.Content != "Looking." || ch.FinishReason != "tool_calls" || reasoning.String() != "" {
		t.Errorf("content %q finish %q reasoning %q", ch.Message.Content, ch.FinishReason, reasoning.String())
	}
	calls := ch.Message.ToolCalls
	if len(calls) != 2 || calls[0].ID != "toolu_a" || calls[0].Function.Arguments != `{"city":"Paris"}` ||
		calls[1].ID != "toolu_b" || calls[1].Function.Name != "get_time" || calls[1].Function.Arguments != `{"tz":"Europe/Paris"}` {
		t.Errorf("tool calls %+v", calls)
	}
	if acc.Usage.PromptTokens != 40 || acc.Usage.CompletionTokens != 25 || acc.Usage.TotalTokens != 65 {
		t.Errorf("usage %+v", acc.Usage)
	}

	msgs = append(msgs, acc.Choices[0].Message.ToParam(), openai.ToolMessage("21C", "toolu_a"), openai.ToolMessage("14:00", "toolu_b"))
	done, err := continuing(ctx, func() (*openai.ChatCompletion, error) {
		return c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x", Messages: msgs, Tools: tools}, option.WithResponseInto(&resp))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Run-Id"); got != run {
		t.Errorf("the tool results started run %s, want %s continued", got, run)
	}
	if done.Choices[0].Message.Content != "21C at 14:00." || done.Choices[0].FinishReason != "stop" || done.Usage.PromptTokens != 60 {
		t.Errorf("answer %+v", done.Choices[0])
	}
	body := string(up.Requests()[1].Body)
	want := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"21C"},{"type":"tool_result","tool_use_id":"toolu_b","content":"14:00"}]}`
	if !strings.Contains(body, want) || !strings.Contains(body, `"system":"Be brief."`) || !strings.Contains(body, `"max_tokens":4096`) {
		t.Errorf("second upstream request:\n%s\nwant it to hold %s", body, want)
	}

	// Reasoning from thinking: reasoning_content; the signature has no
	// place in Chat Completions and is named as dropped.
	type reasoningMsg struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
	}
	think, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("six times seven?")}}, option.WithHeader("X-Session-Id", ""),
		option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	var rm reasoningMsg
	_ = json.Unmarshal([]byte(think.RawJSON()), &rm)
	if rm.Choices[0].Message.ReasoningContent != "Six times seven." || rm.Choices[0].Message.Content != "42" {
		t.Errorf("reasoning %s", think.RawJSON())
	}
	if d := resp.Header.Get("X-Bridge-Dropped"); !strings.Contains(d, "reasoning.signature") {
		t.Errorf("X-Bridge-Dropped %q, want reasoning.signature", d)
	}

	cut, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-x",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("long")}}, option.WithHeader("X-Session-Id", ""))
	if err != nil || cut.Choices[0].FinishReason != "length" {
		t.Errorf("max_tokens: %+v %v", cut, err)
	}
}

// TestAnthropicCorpusOverOpenAI: every request the official SDK was
// captured sending is served over an OpenAI upstream: the stream is valid
// (or the message or count is there), nothing the SDK sent is refused.
func TestAnthropicCorpusOverOpenAI(t *testing.T) {
	base, up := anthBridgeOverOpenAI(t, func(int, []byte) openaitest.Reply {
		return openaitest.Reply{Chunks: oaUsageChunks("gpt-up", func(c *openaitest.Chunks) { c.Text("hi").Finish("stop").Usage(3, 1) })}
	})
	bodies := corpusBodies(t, "anthropic/client")
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			path := "/v1/messages"
			if strings.Contains(name, "count-tokens") {
				path += "/count_tokens"
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-ant-test")
			req.Header.Set("anthropic-version", "2026-10-21")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			switch {
			case strings.HasSuffix(path, "count_tokens"):
				if !bytes.Contains(b, []byte(`"input_tokens":`)) {
					t.Errorf("count %s", b)
				}
				return
			case resp.Header.Get("Content-Type") == "text/event-stream":
				frames, err := anthropictest.ParseFrames(b)
				if err != nil {
					t.Fatal(err)
				}
				sum, problems := anthropictest.CheckStream(frames, anthropictest.Check{RunID: resp.Header.Get("X-Run-Id"), IDs: true, Complete: true})
				for _, p := range problems {
					t.Error(p)
				}
				if sum.Text != "hi" {
					t.Errorf("text %q", sum.Text)
				}
			default:
				if !bytes.Contains(b, []byte(`{"type":"text","text":"hi"}`)) {
					t.Errorf("message %s", b)
				}
			}
		})
	}
	if len(up.Requests()) != len(bodies)-1 {
		t.Errorf("the upstream got %d requests for %d messages requests", len(up.Requests()), len(bodies)-1)
	}
}

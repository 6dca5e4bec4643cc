package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	wire "github.com/bridge-dev/bridge/mapping/anthropic"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
)

func textReply(words ...string) anthropictest.Reply {
	ev := &anthropictest.Events{ID: "msg_up", Model: "claude-x"}
	return anthropictest.Reply{Events: ev.Start(10, 0, 0).Text(words...).Delta("end_turn", len(words)).Stop().List()}
}

// hi is a transcript of one user message.
var hi = []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}}

// TestOpenSendsMessagesRequest: the request goes to {base}/v1/messages as a
// stream with x-api-key and anthropic-version; the system is lifted out,
// consecutive tool results share one user message, max_tokens is the
// configured default; the stream comes back as events.
func TestOpenSendsMessagesRequest(t *testing.T) {
	srv := anthropictest.New(func(int, []byte) anthropictest.Reply { return textReply("Hi", " there") })
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/", APIKey: "sk-test", MaxTokens: 1234, Model: "claude-forced"})
	req := &bridge.Request{Model: "gpt-x", Messages: []bridge.Message{
		{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart("Be brief.")}, StringContent: true},
		{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("weather?")}, StringContent: true},
		{Role: bridge.RoleAssistant, ToolCalls: []bridge.ToolCall{{ID: "call_1", Name: "w", Arguments: `{"c":"P"}`}, {ID: "call_2", Name: "t", Index: 1}}},
		{Role: bridge.RoleTool, ToolCallID: "call_1", Parts: []bridge.Part{bridge.TextPart("21C")}, StringContent: true},
		{Role: bridge.RoleTool, ToolCallID: "call_2", IsError: true, Parts: []bridge.Part{bridge.TextPart("down")}, StringContent: true},
	}}
	call, err := c.Open(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	events, err := bridgetest.Collect(call.Events)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, ev := range events {
		text.WriteString(ev.Text)
	}
	last := events[len(events)-1]
	if text.String() != "Hi there" || last.Kind != bridge.KindFinal || last.Final.StopReason != bridge.StopEndTurn {
		t.Errorf("events: text %q, last %+v", text.String(), last)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	h := reqs[0].Header
	if h.Get("X-Api-Key") != "sk-test" || h.Get("Anthropic-Version") != DefaultVersion || h.Get("Content-Type") != "application/json" ||
		h.Get("Authorization") != "" {
		t.Errorf("headers %v", h)
	}
	want := `{"model":"claude-forced","max_tokens":1234,"system":"Be brief.","messages":[` +
		`{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"w","input":{"c":"P"}},{"type":"tool_use","id":"call_2","name":"t","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"21C"},{"type":"tool_result","tool_use_id":"call_2","content":"down","is_error":true}]}` +
		`],"stream":true}`
	if diff := cmp.Diff(want, string(reqs[0].Body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// TestOpenErrors: a non-2xx answer is a *bridge.Error with the upstream's
// status, type, message and Retry-After; an unreachable upstream says so
// without the Go error text.
func TestOpenErrors(t *testing.T) {
	srv := anthropictest.New(func(n int, _ []byte) anthropictest.Reply {
		switch n {
		case 0:
			return anthropictest.Reply{Status: 529, Body: anthropictest.ErrorBody("overloaded_error", "Overloaded"), Header: http.Header{"Retry-After": {"7"}}}
		default:
			return anthropictest.Reply{Status: 400, Body: anthropictest.ErrorBody("invalid_request_error", "messages.0: bad")}
		}
	})
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL})
	req := &bridge.Request{Model: "m", Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("x")}}}}
	_, err := c.Open(t.Context(), req)
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeUnavailable || be.Status != 529 || be.Type != "overloaded_error" ||
		be.Message != "Overloaded" || be.RetryAfter != 7*time.Second || be.Dialect != "anthropic" {
		t.Errorf("529: %+v", err)
	}
	_, err = c.Open(t.Context(), req)
	if !errors.As(err, &be) || be.Code != bridge.CodeInvalid || be.Status != 400 || be.Message != "messages.0: bad" {
		t.Errorf("400: %+v", err)
	}

	gone := New(Config{Name: "up1", BaseURL: "http://127.0.0.1:1"})
	_, err = gone.Open(t.Context(), req)
	if !errors.As(err, &be) || be.Code != bridge.CodeUpstream || be.Message != "upstream up1 is unreachable" {
		t.Errorf("unreachable: %+v", err)
	}
}

// TestOpenNothingToSend: a transcript with nothing Anthropic can take as a
// message (only a system prompt, or parts that are all dropped) is refused
// before any call, as unsupported (a 400 in every dialect), not sent for
// the API's own 400.
func TestOpenNothingToSend(t *testing.T) {
	srv := anthropictest.New(func(int, []byte) anthropictest.Reply { return textReply("no") })
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL})
	for name, msgs := range map[string][]bridge.Message{
		"system only": {{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart("be brief")}}},
		"all dropped": {{Role: bridge.RoleAssistant, Parts: []bridge.Part{{Type: bridge.PartReasoning, Text: "unsigned"}}}},
	} {
		_, err := c.Open(t.Context(), &bridge.Request{Model: "m", Messages: msgs})
		var be *bridge.Error
		if !errors.As(err, &be) || be.Code != bridge.CodeUnsupported || !strings.Contains(be.Message, "no message is left to send") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := c.CountTokens(t.Context(), &bridge.Request{Model: "m", Messages: msgs}); bridge.ErrorCode(err) != bridge.CodeUnsupported {
			t.Errorf("%s: count_tokens: %v", name, err)
		}
	}
	if n := len(srv.Requests()) + len(srv.CountRequests()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
}

// TestOpenMidStreamError: an error event after some text ends the events
// with an error of its type.
func TestOpenMidStreamError(t *testing.T) {
	srv := anthropictest.New(func(int, []byte) anthropictest.Reply {
		ev := &anthropictest.Events{ID: "msg_up", Model: "m"}
		return anthropictest.Reply{Events: ev.Start(1, 0, 0).Raw("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`).
			Raw("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"par"}}`).
			Error("overloaded_error", "Overloaded").List()}
	})
	t.Cleanup(srv.Close)
	call, err := New(Config{BaseURL: srv.URL}).Open(t.Context(), &bridge.Request{Model: "m", Messages: hi})
	if err != nil {
		t.Fatal(err)
	}
	events, err := bridgetest.Collect(call.Events)
	if bridge.ErrorCode(err) != bridge.CodeUnavailable || len(events) == 0 || events[len(events)-1].Text != "par" {
		t.Errorf("events %v, err %v", events, err)
	}
}

// TestOpenCancel: cancelling the context mid-stream ends the events with
// the context's cause, and the upstream sees its request go.
func TestOpenCancel(t *testing.T) {
	srv := anthropictest.New(func(int, []byte) anthropictest.Reply {
		r := textReply(anthropictest.Words(strings.Repeat("w ", 200))...)
		r.Delay = 5 * time.Millisecond
		return r
	})
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	call, err := New(Config{BaseURL: srv.URL}).Open(ctx, &bridge.Request{Model: "m", Messages: hi})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("client went away")
	n := 0
	var serr error
	for _, err := range call.Events {
		if err != nil {
			serr = err
			break
		}
		if n++; n == 3 {
			cancel(cause)
		}
	}
	if !errors.Is(serr, cause) {
		t.Errorf("stream ended with %v, want the cause", serr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Cancelled() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if srv.Cancelled() != 1 {
		t.Errorf("the upstream saw %d cancelled replies", srv.Cancelled())
	}
}

func TestMintToolCallID(t *testing.T) {
	c := New(Config{})
	for _, id := range []string{"toolu_01A", "call_abc-DEF9"} {
		if got := c.MintToolCallID(id); got != id {
			t.Errorf("MintToolCallID(%q) = %q, want it kept", id, got)
		}
	}
	for _, id := range []string{"call.1", "fc:abc/def", "", "ü"} {
		got := c.MintToolCallID(id)
		if !wire.ValidToolID(got) || !strings.HasPrefix(got, "toolu_") || got != c.MintToolCallID(id) {
			t.Errorf("MintToolCallID(%q) = %q", id, got)
		}
	}
	if c.MintToolCallID("a.b") == c.MintToolCallID("a:b") {
		t.Error("two ids minted to one")
	}
}

// TestCountTokens forwards count_tokens and reads input_tokens.
func TestCountTokens(t *testing.T) {
	srv := anthropictest.New(nil)
	srv.Count = func(body []byte) anthropictest.Reply {
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil || v["max_tokens"] != nil || v["stream"] != nil {
			return anthropictest.Reply{Status: 400, Body: anthropictest.ErrorBody("invalid_request_error", "bad count body")}
		}
		return anthropictest.Reply{Body: `{"input_tokens":321}`}
	}
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL, APIKey: "k"})
	n, err := c.CountTokens(t.Context(), &bridge.Request{Model: "m", Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}}})
	if err != nil || n != 321 {
		t.Fatalf("CountTokens = %d, %v", n, err)
	}
	if h := srv.CountRequests()[0].Header; h.Get("X-Api-Key") != "k" || h.Get("Anthropic-Version") != DefaultVersion {
		t.Errorf("headers %v", h)
	}
	srv.Count = func([]byte) anthropictest.Reply {
		return anthropictest.Reply{Status: 404, Body: anthropictest.ErrorBody("not_found_error", "no such model")}
	}
	if _, err := c.CountTokens(t.Context(), &bridge.Request{Model: "m", Messages: hi}); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("404: %v", err)
	}
}

// TestOpenIdleTimeout: a stream that goes quiet longer than the idle
// timeout ends with a timeout error.
func TestOpenIdleTimeout(t *testing.T) {
	srv := anthropictest.New(func(int, []byte) anthropictest.Reply {
		r := textReply("a", "b")
		r.Delay = 2 * time.Second
		return r
	})
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL, Timeouts: outbound.Timeouts{Idle: 50 * time.Millisecond}})
	call, err := c.Open(t.Context(), &bridge.Request{Model: "m", Messages: hi})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = bridgetest.Collect(call.Events)
	if bridge.ErrorCode(err) != bridge.CodeTimeout || time.Since(start) > time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}

package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
	outresponses "github.com/bridge-dev/bridge/outbound/responses"
	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
	"github.com/bridge-dev/bridge/storage/memory"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

func userRequest(session string, texts ...string) *bridge.Request {
	req := &bridge.Request{Model: "gpt-test", SessionID: session}
	for _, t := range texts {
		req.Messages = append(req.Messages, bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(t)}})
	}
	return req
}

func body(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("upstream request: %v: %s", err, b)
	}
	return m
}

func TestOpenStreamsEvents(t *testing.T) {
	srv := responsestest.New(func(n int, _ []byte) responsestest.Reply {
		e := &responsestest.Events{ID: "resp_up", Model: "gpt-test"}
		e.Created().Reasoning("enc==", "Think", "ing.").Text("Hel", "lo").FunctionCall("call_1", "f", `{"a"`, `:1}`).Completed(10, 5)
		return responsestest.Reply{Events: e.List()}
	})
	t.Cleanup(srv.Close)
	c := outresponses.New(outresponses.Config{Name: "up", BaseURL: srv.BaseURL(), APIKey: "secret"})
	call, err := c.Open(t.Context(), userRequest("", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := bridgetest.Collect(call.Events)
	if err != nil {
		t.Fatal(err)
	}
	var text, reasoning, enc, args string
	var final *bridge.Final
	for _, ev := range evs {
		switch ev.Kind {
		case bridge.KindTextDelta:
			text += ev.Text
		case bridge.KindReasoningDelta:
			reasoning += ev.Text
			enc += ev.Encrypted
		case bridge.KindToolCallDone:
			args = ev.ToolCall.ID + " " + ev.ToolCall.Name + " " + ev.ToolCall.Arguments
		case bridge.KindFinal:
			final = ev.Final
		}
	}
	if text != "Hello" || reasoning != "Thinking." || enc != "enc==" || args != `call_1 f {"a":1}` {
		t.Errorf("text %q reasoning %q enc %q call %q", text, reasoning, enc, args)
	}
	if final == nil || final.Status != bridge.StatusInputRequired || final.StopReason != bridge.StopToolUse ||
		final.Usage == nil || *final.Usage.InputTokens != 10 {
		t.Errorf("final %+v", final)
	}
	req := srv.Requests()[0]
	if req.Header.Get("Authorization") != "Bearer secret" || req.Header.Get("Accept") != "text/event-stream" {
		t.Errorf("headers %v", req.Header)
	}
	m := body(t, req.Body)
	if m["stream"] != true || m["store"] != false || m["model"] != "gpt-test" {
		t.Errorf("body %s", req.Body)
	}
}

func TestOpenErrors(t *testing.T) {
	srv := responsestest.New(func(n int, _ []byte) responsestest.Reply {
		if n == 0 {
			return responsestest.Reply{Status: 429, Body: responsestest.ErrorBody("rate_limit_error", "slow down", "rate_limit_exceeded"),
				Header: http.Header{"Retry-After": {"7"}}}
		}
		e := &responsestest.Events{ID: "resp_up", Model: "m"}
		e.Created().Text("part").Failed("server_error", "The model crashed.")
		return responsestest.Reply{Events: e.List()}
	})
	t.Cleanup(srv.Close)
	c := outresponses.New(outresponses.Config{BaseURL: srv.BaseURL()})
	_, err := c.Open(t.Context(), userRequest("", "hi"))
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeRateLimited || be.Status != 429 || be.Type != "rate_limit_error" ||
		be.UpstreamCode != "rate_limit_exceeded" || be.RetryAfter != 7*time.Second {
		t.Fatalf("error %#v", err)
	}
	call, err := c.Open(t.Context(), userRequest("", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bridgetest.Collect(call.Events)
	if !errors.As(err, &be) || be.Code != bridge.CodeUpstream || be.Message != "The model crashed." {
		t.Fatalf("stream error %#v", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	srv := responsestest.New(func(int, []byte) responsestest.Reply {
		e := &responsestest.Events{ID: "resp_up", Model: "m"}
		e.Created().Text("a", "b").Completed(1, 1)
		return responsestest.Reply{Events: e.List(), StallAfter: 3}
	})
	t.Cleanup(srv.Close)
	c := outresponses.New(outresponses.Config{BaseURL: srv.BaseURL(), Timeouts: outbound.Timeouts{Idle: 100 * time.Millisecond}})
	call, err := c.Open(t.Context(), userRequest("", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bridgetest.Collect(call.Events)
	if bridge.ErrorCode(err) != bridge.CodeTimeout || !strings.Contains(err.Error(), "idle") {
		t.Fatalf("error %v, want an idle timeout", err)
	}
}

// TestStateful: with Stateful, the second model call of a session sends
// previous_response_id and only the new messages; a chain the upstream
// lost is sent whole again; the run's upstream response id is recorded.
func TestStateful(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ids.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := responsestest.New(func(n int, b []byte) responsestest.Reply {
		if strings.Contains(string(b), `"previous_response_id":"resp_lost"`) {
			return responsestest.Reply{Status: 404, Body: `{"error":{"message":"Previous response with id 'resp_lost' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`}
		}
		e := &responsestest.Events{ID: "resp_up" + string(rune('0'+n)), Model: "m"}
		e.Created().Text("answer").Completed(1, 1)
		return responsestest.Reply{Events: e.List()}
	})
	t.Cleanup(srv.Close)
	c := outresponses.New(outresponses.Config{Name: "up", BaseURL: srv.BaseURL(), Stateful: true, IDs: st})
	turn := func(req *bridge.Request) {
		t.Helper()
		ctx := t.Context()
		call, err := c.Open(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bridgetest.Collect(call.Events); err != nil {
			t.Fatal(err)
		}
	}
	sys := bridge.Message{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart("rules")}}
	first := userRequest("sess_1", "one")
	first.Messages = append([]bridge.Message{sys}, first.Messages...)
	turn(first)
	second := *first
	second.Messages = append(append([]bridge.Message(nil), first.Messages...),
		bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("answer")}},
		bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("two")}})
	turn(&second)
	reqs := srv.Requests()
	m0, m1 := body(t, reqs[0].Body), body(t, reqs[1].Body)
	if m0["store"] != true || m0["previous_response_id"] != nil || len(m0["input"].([]any)) != 2 {
		t.Errorf("first request %s", reqs[0].Body)
	}
	in := m1["input"].([]any)
	if m1["previous_response_id"] != "resp_up0" || m1["instructions"] != "rules" || len(in) != 1 ||
		!strings.Contains(string(reqs[1].Body), `"text":"two"`) {
		t.Errorf("second request %s", reqs[1].Body)
	}
	// An edited transcript is sent whole.
	edited := second
	edited.Messages = append([]bridge.Message{sys}, userRequest("", "other", "a", "b").Messages...)
	turn(&edited)
	if m := body(t, srv.Requests()[2].Body); m["previous_response_id"] != nil || len(m["input"].([]any)) != 4 {
		t.Errorf("edited request %s", srv.Requests()[2].Body)
	}
	// A lost chain is sent whole again.
	_ = st.PutID(t.Context(), bridge.IDMapping{Kind: bridge.IDSession, Scope: "up", Local: "sess_1",
		Remote: `{"resp":"resp_lost","n":2,"fp":"` + first.Messages[1].Fingerprint() + `"}`})
	turn(&second)
	reqs = srv.Requests()
	if len(reqs) != 5 || body(t, reqs[4].Body)["previous_response_id"] != nil || len(body(t, reqs[4].Body)["input"].([]any)) != 4 {
		t.Errorf("after a lost chain: %d requests, last %s", len(reqs), reqs[len(reqs)-1].Body)
	}
}

func TestRecordsUpstreamResponseID(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ids.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := responsestest.New(func(int, []byte) responsestest.Reply {
		e := &responsestest.Events{ID: "resp_upstream_7", Model: "m"}
		e.Created().Text("x").Completed(1, 1)
		return responsestest.Reply{Events: e.List()}
	})
	t.Cleanup(srv.Close)
	up := &runUpstream{c: outresponses.New(outresponses.Config{Name: "up", BaseURL: srv.BaseURL(), IDs: st})}
	e := bridgetest.NewEngine(t, st, up)
	req := userRequest("", "hi")
	req.Full = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	for range events {
	}
	if got, err := st.RemoteID(t.Context(), bridge.IDRun, "up", run.ID); err != nil || got != "resp_upstream_7" {
		t.Errorf("id map: %q %v", got, err)
	}
	if r, _ := e.Run(t.Context(), run.ID); r.UpstreamRunID != "resp_upstream_7" {
		t.Errorf("run's upstream id %q", r.UpstreamRunID)
	}
}

type runUpstream struct{ c *outresponses.Client }

func (u *runUpstream) Name() string    { return u.c.Name() }
func (u *runUpstream) Dialect() string { return u.c.Dialect() }
func (u *runUpstream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	return u.c.Open(ctx, req)
}

// TestMintedToolCallIDs: a transcript whose call id the Responses API would
// refuse (over 64 bytes: an agent's namespaced MCP call id) reaches the
// upstream with a minted one, in the function_call and its output alike;
// an id that fits goes as it is.
func TestMintedToolCallIDs(t *testing.T) {
	srv := responsestest.New(func(int, []byte) responsestest.Reply {
		e := &responsestest.Events{ID: "resp_1", Model: "m"}
		e.Created().Text("ok").Completed(1, 1)
		return responsestest.Reply{Events: e.List()}
	})
	t.Cleanup(srv.Close)
	c := outresponses.New(outresponses.Config{Name: "up", BaseURL: srv.BaseURL()})
	e := bridgetest.NewEngine(t, memory.New(nil), c)
	long := "codex_mcp__hermes-tools__kanban_complete_exec-" + strings.Repeat("0", 36)
	const short = "call_abc"
	req := userRequest("", "q")
	req.Full = true
	req.Messages = append(req.Messages,
		bridge.Message{Role: bridge.RoleAssistant, ToolCalls: []bridge.ToolCall{{ID: long, Name: "f", Arguments: "{}"}, {ID: short, Name: "g", Arguments: "{}", Index: 1}}},
		bridge.Message{Role: bridge.RoleTool, ToolCallID: long, Parts: []bridge.Part{bridge.TextPart("r1")}},
		bridge.Message{Role: bridge.RoleTool, ToolCallID: short, Parts: []bridge.Part{bridge.TextPart("r2")}})
	bridgetest.Run(t, e, req)
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	var ids []string
	for _, it := range body(t, reqs[0].Body)["input"].([]any) {
		if id, ok := it.(map[string]any)["call_id"].(string); ok {
			ids = append(ids, id)
		}
	}
	minted := c.MintToolCallID(long)
	if want := []string{minted, short, minted, short}; strings.Join(ids, " ") != strings.Join(want, " ") || len(minted) > outresponses.MaxCallID {
		t.Errorf("call ids %q, want %q", ids, want)
	}
	if c.MintToolCallID("") == "" || c.MintToolCallID(strings.Repeat("x", 64)) != strings.Repeat("x", 64) {
		t.Error("an empty id is kept, or a 64-byte one is not")
	}
}

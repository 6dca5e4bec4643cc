package anthropic_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	outanthropic "github.com/bridge-dev/bridge/outbound/anthropic"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/storage/memory"
)

// upstreamMessages is the messages array an upstream request carried.
func upstreamMessages(t *testing.T, body []byte) []any {
	t.Helper()
	var v struct {
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Messages
}

// TestSignatureThroughTranscript: a stateful client (it sends only its new
// input, as A2A and Hermes do) over an Anthropic upstream. The first call's
// thinking block (with its signature) and redacted_thinking are kept in the
// session's transcript, so the call that follows the client's tool result
// sends them back unchanged before the tool_use, and the result goes as a
// tool_result with the same id. One run for the whole tool loop.
func TestSignatureThroughTranscript(t *testing.T) {
	srv := anthropictest.New(func(n int, _ []byte) anthropictest.Reply {
		ev := &anthropictest.Events{ID: "msg_up", Model: "claude-x"}
		if n == 0 {
			ev.Start(10, 0, 0).Thinking("sig-1", "I should ", "look it up.").Redacted("REDACTED").
				ToolUse("toolu_01", "get_weather", `{"city":`, `"Paris"}`).Delta("tool_use", 20).Stop()
		} else {
			ev.Start(30, 0, 0).Text("21C").Delta("end_turn", 3).Stop()
		}
		return anthropictest.Reply{Events: ev.List()}
	})
	t.Cleanup(srv.Close)
	e := bridgetest.NewEngine(t, memory.New(nil), outanthropic.New(outanthropic.Config{BaseURL: srv.URL}))

	user := bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("Weather in Paris?")}, StringContent: true}
	run, err := e.Start(t.Context(), &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", Messages: []bridge.Message{user}})
	if err != nil {
		t.Fatal(err)
	}
	evs := bridgetest.Drain(t, e, run)
	if f := evs[len(evs)-1].Final; f == nil || f.Status != bridge.StatusInputRequired {
		t.Fatalf("first final %+v", evs[len(evs)-1])
	}
	result := bridge.Message{Role: bridge.RoleTool, ToolCallID: "toolu_01", Parts: []bridge.Part{bridge.TextPart("21C")}, StringContent: true}
	// The engine publishes a run's final event a moment before it lets go
	// of the live run: a continuation that races it gets CodeConflict (an
	// engine issue, reported); retry as a client would.
	var again *bridge.Run
	for i := 0; ; i++ {
		again, err = e.Start(t.Context(), &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", Messages: []bridge.Message{result}})
		if bridge.ErrorCode(err) != bridge.CodeConflict || i == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != run.ID {
		t.Errorf("the tool result started run %s, want %s continued", again.ID, run.ID)
	}
	bridgetest.Drain(t, e, again)

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	var want []any
	_ = json.Unmarshal([]byte(`[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"I should look it up.","signature":"sig-1"},
			{"type":"redacted_thinking","data":"REDACTED"},
			{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"21C"}]}]`), &want)
	if diff := cmp.Diff(want, upstreamMessages(t, reqs[1].Body)); diff != "" {
		t.Errorf("second upstream request messages (-want +got):\n%s", diff)
	}
}

// TestMintedToolCallIDs: tool-call ids Anthropic refuses (minted by another
// upstream, kept by a client) are replaced by toolu_ ids in the tool_use
// and the tool_result alike.
func TestMintedToolCallIDs(t *testing.T) {
	srv := anthropictest.New(func(int, []byte) anthropictest.Reply {
		ev := &anthropictest.Events{ID: "msg_up", Model: "claude-x"}
		return anthropictest.Reply{Events: ev.Start(1, 0, 0).Text("ok").Delta("end_turn", 1).Stop().List()}
	})
	t.Cleanup(srv.Close)
	c := outanthropic.New(outanthropic.Config{BaseURL: srv.URL})
	e := bridgetest.NewEngine(t, memory.New(nil), c)
	const odd = "fc:call.1/x"
	bridgetest.Run(t, e, &bridge.Request{Inbound: "test", Model: "m", Full: true, Messages: bridgetest.ToolTurn(odd)})
	msgs := upstreamMessages(t, srv.Requests()[0].Body)
	minted := c.MintToolCallID(odd)
	use := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	res := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if use["id"] != minted || res["tool_use_id"] != minted || minted == odd {
		t.Errorf("tool_use id %v, tool_result id %v, want %s", use["id"], res["tool_use_id"], minted)
	}
}

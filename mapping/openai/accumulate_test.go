package openai

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

func accumulate(events []bridge.Event, opt StreamOptions) *Accumulator {
	a := NewAccumulator(opt)
	for i := range events {
		a.Add(&events[i])
	}
	return a
}

func TestAccumulator(t *testing.T) {
	events := []bridge.Event{
		{Kind: bridge.KindMessageStarted, ResponseID: "up-1", Model: "up-model"},
		{Kind: bridge.KindTextDelta, Text: "Hel"},
		{Kind: bridge.KindReasoningDelta, Text: "think", Signature: "s"},
		{Kind: bridge.KindTextDelta, Text: "lo"},
		{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: "c1", Name: "f"}},
		{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: `{"a"`}},
		{Kind: bridge.KindToolCallDone, ToolCall: &bridge.ToolCall{ID: "c1", Name: "f", Arguments: `{"a":1}`}},
		{Kind: bridge.KindUsage, Usage: &bridge.Usage{InputTokens: bridge.Int64(2), OutputTokens: bridge.Int64(3), ReasoningTokens: bridge.Int64(1)}},
		{Kind: bridge.KindArtifact, Artifact: &bridge.Artifact{}},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}},
	}
	a := accumulate(events, StreamOptions{Created: 7})
	body, err := a.Response()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"up-1","object":"chat.completion","created":7,"model":"up-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null,"reasoning_content":"think","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5,"completion_tokens_details":{"reasoning_tokens":1}}}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"reasoning.signature", "artifact"}, a.Dropped()); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
}

func TestAccumulatorFailures(t *testing.T) {
	upErr := &bridge.Error{Code: bridge.CodeRateLimited, Message: "slow", Status: 429}
	tests := []struct {
		name   string
		events []bridge.Event
		code   bridge.Code
		msg    string
	}{
		{"failed with error", []bridge.Event{{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Error: upErr}}}, bridge.CodeRateLimited, "slow"},
		{"error event then failed", []bridge.Event{{Kind: bridge.KindError, Error: upErr}, {Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed}}}, bridge.CodeRateLimited, "slow"},
		{"cancelled", []bridge.Event{{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCancelled, Reason: "stop"}}}, bridge.CodeCanceled, "stop"},
		{"interrupted", []bridge.Event{{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInterrupted}}}, bridge.CodeUnavailable, "interrupted"},
		{"no final", []bridge.Event{{Kind: bridge.KindTextDelta, Text: "x"}}, bridge.CodeInternal, "without a final"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := accumulate(tt.events, StreamOptions{}).Response()
			be := bridge.AsError(err)
			if body != nil || be == nil || be.Code != tt.code || !strings.Contains(be.Message, tt.msg) {
				t.Errorf("Response() = %s, %v; want %s %q", body, err, tt.code, tt.msg)
			}
		})
	}
}

func TestEncodeHistory(t *testing.T) {
	t0 := time.Unix(1760000000, 0)
	page := &bridge.HistoryPage{
		Messages: []bridge.Message{
			{ID: "m0", Created: t0, Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart("You are an assistant")}, StringContent: true},
			{ID: "m1", RunID: "r1", Created: t0.Add(time.Second), Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("Weather in "), bridge.TextPart("Beijing"), {Type: bridge.PartImage, URL: "https://x"}}},
			{ID: "m2", RunID: "r1", Created: t0.Add(2 * time.Second), Role: bridge.RoleAssistant,
				Parts:     []bridge.Part{{Type: bridge.PartReasoning, Text: "need the weather"}},
				ToolCalls: []bridge.ToolCall{{ID: "call-1", Name: "weather", Arguments: `{"city":"Beijing"}`}}},
			{ID: "m3", RunID: "r1", Role: bridge.RoleTool, ToolCallID: "call-1", Parts: []bridge.Part{{Type: bridge.PartData, JSON: json.RawMessage(`{"temp": 20}`)}}},
			{ID: "m4", RunID: "r1", Created: t0.Add(4 * time.Second), Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("Beijing is 20 degrees")}},
		},
		Runs: []*bridge.Run{
			{ID: "r1", Status: bridge.StatusCompleted, Created: t0.Add(time.Second), Finished: t0.Add(5 * time.Second), Model: "model-a",
				Usage: bridge.Usage{InputTokens: bridge.Int64(20), OutputTokens: bridge.Int64(10)}, LastSeq: 12, StopReason: bridge.StopEndTurn, Dropped: []string{"artifact"}},
			nil,
			{ID: "r2", Status: bridge.StatusRunning, Created: t0.Add(10 * time.Second), LastSeq: 42},
		},
		Cursor:  "before-m0",
		HasMore: true,
	}
	got, err := EncodeHistory(page)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[` +
		`{"id":"m0","created_at":1760000000,"role":"system","content":"You are an assistant"},` +
		`{"id":"m1","run_id":"r1","created_at":1760000001,"role":"user","content":"Weather in Beijing"},` +
		`{"id":"m2","run_id":"r1","created_at":1760000002,"role":"assistant","content":null,"reasoning_content":"need the weather","tool_calls":[{"id":"call-1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Beijing\"}"}}]},` +
		`{"id":"m3","run_id":"r1","role":"tool","content":"{\"temp\":20}","tool_call_id":"call-1"},` +
		`{"id":"m4","run_id":"r1","created_at":1760000004,"role":"assistant","content":"Beijing is 20 degrees"}],` +
		`"runs":[{"id":"r1","status":"completed","created_at":1760000001,"finished_at":1760000005,"model":"model-a","usage":{"prompt_tokens":20,"completion_tokens":10,"total_tokens":30},"last_event_id":"r1:12","stop_reason":"end_turn","dropped":["artifact"]},` +
		`{"id":"r2","status":"running","created_at":1760000010,"usage":{"total_tokens":0},"last_event_id":"r2:42"}],` +
		`"cursor":"before-m0","has_more":true}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	got, _ = EncodeHistory(&bridge.HistoryPage{Cursor: "x"})
	if diff := cmp.Diff(`{"messages":[],"runs":[],"has_more":false}`, string(got)); diff != "" {
		t.Errorf("empty page (-want +got):\n%s", diff)
	}
	if _, err := EncodeHistory(nil); err == nil {
		t.Error("nil page: no error")
	}
}

package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// chunkJSON renders one upstream chunk with the given delta and finish.
func chunkJSON(t testing.TB, delta map[string]any, finish any) string {
	t.Helper()
	c := map[string]any{
		"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return "data: " + string(b) + "\n\n"
}

func toolStream(t testing.TB, fragments ...string) string {
	var sb strings.Builder
	sb.WriteString(chunkJSON(t, map[string]any{"role": "assistant", "content": nil,
		"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": "f", "arguments": ""}}}}, nil))
	for _, f := range fragments {
		sb.WriteString(chunkJSON(t, map[string]any{"tool_calls": []any{
			map[string]any{"index": 0, "function": map[string]any{"arguments": f}}}}, nil))
	}
	sb.WriteString(chunkJSON(t, map[string]any{}, "tool_calls"))
	sb.WriteString("data: [DONE]\n\n")
	return sb.String()
}

// TestToolArgumentReassembly splits an argument text at every offset (two
// fragments), decodes the stream and re-encodes the events: the complete
// arguments and the re-encoded fragments must give back the exact text.
// Offsets inside a UTF-8 sequence are skipped: a JSON string cannot carry
// half a character.
func TestToolArgumentReassembly(t *testing.T) {
	const args = `{"city":"Paris","units":"metric","note":"a \"quoted\" ü"}`
	stream := func(a, b string) string { return toolStream(t, a, b) }
	golden.ToolSplits(t, args, "call_1", "f", DecodeStream, stream, func(i int, events []bridge.Event) {
		sse, _ := encodeEvents(t, events, goldenOptions)
		frames := parseFrames(t, sse)
		var got strings.Builder
		for _, f := range frames {
			for _, tc := range f.toolCalls() {
				got.WriteString(tc.Function.Arguments)
			}
		}
		if got.String() != args {
			t.Errorf("split %d: re-encoded fragments give %q", i, got.String())
		}

		body, err := golden.Accumulate(NewAccumulator(goldenOptions), events)
		if err != nil {
			t.Fatal(err)
		}
		if calls := toolCallsOf(body, true); len(calls) != 1 || calls[0].Function.Arguments != args {
			t.Errorf("split %d: accumulated %s", i, body)
		}
	})
}

// frame is one SSE event of an encoded stream.
type frame struct {
	id    string
	hasID bool
	data  string
}

type wireToolCall struct {
	Index    *int    `json:"index"`
	ID       *string `json:"id"`
	Type     *string `json:"type"`
	Function struct {
		Name      *string `json:"name"`
		Arguments string  `json:"arguments"`
		HasArgs   bool    `json:"-"`
	} `json:"function"`
}

func (f frame) chunk() map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(f.data), &m)
	return m
}

func (f frame) toolCalls() []wireToolCall { return toolCallsOf([]byte(f.data), false) }

// toolCallsOf reads the tool calls of a chunk's delta, or with message of
// a chat.completion's message; nil when there are none.
func toolCallsOf(data []byte, message bool) []wireToolCall {
	type calls struct {
		ToolCalls []wireToolCall `json:"tool_calls"`
	}
	var c struct {
		Choices []struct {
			Message calls `json:"message"`
			Delta   calls `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &c); err != nil || len(c.Choices) == 0 {
		return nil
	}
	if message {
		return c.Choices[0].Message.ToolCalls
	}
	return c.Choices[0].Delta.ToolCalls
}

// parseFrames splits an encoded stream into its SSE events; it fails on
// anything but id and data lines.
func parseFrames(t testing.TB, sse []byte) []frame {
	t.Helper()
	var out []frame
	var cur frame
	sc := bufio.NewScanner(bytes.NewReader(sse))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
			out = append(out, cur)
			cur = frame{}
		case strings.HasPrefix(l, "id: "):
			cur.id, cur.hasID = l[4:], true
		case strings.HasPrefix(l, "data: "):
			if cur.data != "" {
				t.Fatalf("two data lines in one event: %q", l)
			}
			cur.data = l[6:]
		default:
			t.Fatalf("unexpected line %q", l)
		}
	}
	if cur != (frame{}) {
		t.Fatalf("stream does not end with a blank line: %+v", cur)
	}
	return out
}

// TestChunkRules encodes a stream with parallel tool calls whose hub
// events repeat the id and name on every delta and include empty
// fragments, and checks the frames a client sees.
func TestChunkRules(t *testing.T) {
	tc := func(kind bridge.Kind, idx int, id, name, args string) bridge.Event {
		return bridge.Event{Kind: kind, Source: bridge.SourceModel, Index: idx,
			ToolCall: &bridge.ToolCall{ID: id, Name: name, Index: idx, Arguments: args}}
	}
	events := []bridge.Event{
		{Kind: bridge.KindRunStarted, Source: bridge.SourceBridge},
		// No message_started: the first content frame names the role.
		{Kind: bridge.KindTextDelta, Text: "Let me check."},
		tc(bridge.KindToolCallStarted, 0, "call_a", "weather", ""),
		tc(bridge.KindToolCallDelta, 0, "call_a", "weather", ""),
		tc(bridge.KindToolCallDelta, 0, "call_a", "weather", `{"city":`),
		tc(bridge.KindToolCallStarted, 0, "call_a", "weather", ""), // repeated
		// Index 1 starts with a delta (no started event).
		tc(bridge.KindToolCallDelta, 1, "call_b", "time", `{"tz"`),
		tc(bridge.KindToolCallDelta, 0, "", "", `"Paris"}`),
		tc(bridge.KindToolCallDelta, 1, "call_b", "time", ""),
		// done carries text the deltas left out: the rest is written.
		tc(bridge.KindToolCallDone, 1, "call_b", "time", `{"tz":"CET"}`),
		tc(bridge.KindToolCallDone, 0, "call_a", "weather", `{"city":"Paris"}`),
		// Index 2 only ever has a done event.
		tc(bridge.KindToolCallDone, 2, "call_c", "noop", `{}`),
		{Kind: bridge.KindMessageDone},
		{Kind: bridge.KindUsage, Usage: &bridge.Usage{InputTokens: bridge.Int64(3)}},
		{Kind: bridge.KindUsage, Usage: &bridge.Usage{OutputTokens: bridge.Int64(4), InputTokens: bridge.Int64(0)}},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}},
		{Kind: bridge.KindTextDelta, Text: "after the final: ignored"},
	}
	sse, _ := encodeEvents(t, events, goldenOptions)
	frames := parseFrames(t, sse)

	if last := frames[len(frames)-1]; last.data != "[DONE]" || last.hasID {
		t.Errorf("last frame = %+v, want data: [DONE]", last)
	}
	if bytes.Count(sse, []byte("[DONE]")) != 1 {
		t.Errorf("[DONE] written more than once")
	}
	first := true
	seen := map[int]bool{}
	args := map[int]string{}
	ids := map[int]string{}
	var usage map[string]any
	var finish []any
	for n, f := range frames[:len(frames)-1] {
		if !f.hasID || !strings.HasPrefix(f.id, goldenRun+":") {
			t.Errorf("frame %d has no id line: %+v", n, f)
		}
		c := f.chunk()
		if c == nil {
			t.Fatalf("frame %d is not JSON: %s", n, f.data)
		}
		if c["object"] != "chat.completion.chunk" || c["id"] != "chatcmpl-test" || c["model"] != "gpt-test" || c["created"] != 1700000000.0 {
			t.Errorf("frame %d header: %s", n, f.data)
		}
		if _, ok := c["usage"]; !ok {
			t.Errorf("frame %d has no usage key (include_usage): %s", n, f.data)
		}
		choices := c["choices"].([]any)
		if len(choices) == 0 {
			usage = c["usage"].(map[string]any)
			continue
		}
		ch := choices[0].(map[string]any)
		delta := ch["delta"].(map[string]any)
		if _, ok := delta["role"]; ok != first {
			t.Errorf("frame %d: role present = %v, want %v", n, ok, first)
		}
		first = false
		if fr := ch["finish_reason"]; fr != nil {
			finish = append(finish, fr)
		}
		for _, tc := range f.toolCalls() {
			i := *tc.Index
			if !seen[i] {
				seen[i] = true
				if tc.ID == nil || tc.Type == nil || *tc.Type != "function" || tc.Function.Name == nil {
					t.Errorf("frame %d: first delta of index %d lacks id/type/name: %s", n, i, f.data)
				}
				ids[i] = *tc.ID
			} else {
				if tc.ID != nil || tc.Type != nil || tc.Function.Name != nil {
					t.Errorf("frame %d: later delta of index %d repeats id/type/name: %s", n, i, f.data)
				}
				if tc.Function.Arguments == "" {
					t.Errorf("frame %d: empty arguments delta: %s", n, f.data)
				}
			}
			args[i] += tc.Function.Arguments
		}
	}
	if diff := cmp.Diff(map[int]string{0: `{"city":"Paris"}`, 1: `{"tz":"CET"}`, 2: `{}`}, args); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int]string{0: "call_a", 1: "call_b", 2: "call_c"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"tool_calls"}, finish); diff != "" {
		t.Errorf("finish reasons (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"prompt_tokens": 3.0, "completion_tokens": 4.0, "total_tokens": 7.0}, usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	// The finish chunk and the usage chunk are the final's frames, each
	// with an id of its own: the usage chunk, the last, the final's id.
	n := len(frames)
	if frames[n-3].id != fmt.Sprintf("%s:%d.1", goldenRun, 16) || frames[n-2].id != fmt.Sprintf("%s:%d", goldenRun, 16) {
		t.Errorf("finish/usage ids %q %q, want the final's frame ids", frames[n-3].id, frames[n-2].id)
	}
}

// TestEncoderOneWrite: every SSE event reaches the writer in one Write.
func TestEncoderOneWrite(t *testing.T) {
	var w writes
	enc := NewStreamEncoder(&w, StreamOptions{ID: "c", Model: "m", IncludeUsage: true})
	events := []bridge.Event{
		{Kind: bridge.KindMessageStarted},
		{Kind: bridge.KindTextDelta, Text: "a"},
		{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: "x", Name: "f"}},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted}},
	}
	for i := range events {
		events[i].RunID, events[i].Seq = "r", int64(i+1)
		if err := enc.Encode(&events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range w {
		if !strings.HasSuffix(p, "\n\n") || strings.Count(p, "\n\n") != 1 {
			t.Errorf("write %d is not exactly one SSE event: %q", i, p)
		}
	}
	if len(w) != 6 { // role, text, tool, finish, usage, [DONE]
		t.Errorf("%d writes, want 6: %q", len(w), w)
	}
	if err := enc.Encode(&events[1]); err == nil {
		t.Errorf("Encode after Close: no error")
	}
}

type writes []string

func (w *writes) Write(p []byte) (int, error) { *w = append(*w, string(p)); return len(p), nil }

// TestEncoderFinals: how each final status is written.
func TestEncoderFinals(t *testing.T) {
	tests := []struct {
		name  string
		final *bridge.Final
		want  []string // the data of each frame after the role frame
	}{
		{"completed", &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn},
			[]string{`{"id":"c","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`, "[DONE]"}},
		{"failed", &bridge.Final{Status: bridge.StatusFailed, Error: &bridge.Error{Code: bridge.CodeRateLimited, Message: "slow down"}},
			[]string{`{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`, "[DONE]"}},
		{"failed without error", &bridge.Final{Status: bridge.StatusFailed, Reason: "boom"},
			[]string{`{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`, "[DONE]"}},
		{"cancelled", &bridge.Final{Status: bridge.StatusCancelled, Reason: "aborted by the user"},
			[]string{`{"error":{"message":"aborted by the user","type":"server_error","param":null,"code":"run_cancelled"}}`, "[DONE]"}},
		{"interrupted", &bridge.Final{Status: bridge.StatusInterrupted},
			[]string{`{"error":{"message":"run interrupted","type":"server_error","param":null,"code":"run_interrupted"}}`, "[DONE]"}},
		{"pause", &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopPause},
			[]string{`{"id":"c","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`, "[DONE]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			enc := NewStreamEncoder(&b, StreamOptions{ID: "c", Model: "m", Created: 5})
			_ = enc.Encode(&bridge.Event{Kind: bridge.KindMessageStarted})
			_ = enc.Encode(&bridge.Event{Kind: bridge.KindFinal, Final: tt.final})
			_ = enc.Close()
			frames := parseFrames(t, b.Bytes())
			var got []string
			for _, f := range frames[1:] {
				got = append(got, f.data)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncoderDropped(t *testing.T) {
	var b bytes.Buffer
	enc := NewStreamEncoder(&b, StreamOptions{})
	for _, ev := range []bridge.Event{
		{Kind: bridge.KindReasoningDelta, Text: "x", Signature: "sig"},
		{Kind: bridge.KindReasoningDelta, Signature: "sig2"},
		{Kind: bridge.KindToolResult, ToolResult: &bridge.ToolResult{CallID: "c"}},
		{Kind: bridge.KindArtifact, Artifact: &bridge.Artifact{}},
		{Kind: bridge.KindStateUpdate, State: json.RawMessage(`{}`)},
		{Kind: bridge.KindToolCallStarted, Source: bridge.SourceAgent, ToolCall: &bridge.ToolCall{ID: "a"}},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopPause}},
	} {
		if err := enc.Encode(&ev); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"reasoning.signature", "tool_result", "artifact", "state_update", "agent_tool_call", "stop_reason:pause"}
	if diff := cmp.Diff(want, enc.Dropped()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.Contains(b.String(), "tool_calls") {
		t.Errorf("agent tool call shown to the client: %s", b.String())
	}
}

// TestFinishReasons covers both directions of the finish_reason table.
func TestFinishReasons(t *testing.T) {
	decode := []struct {
		finish string
		stop   bridge.StopReason
		status bridge.Status
	}{
		{"stop", bridge.StopEndTurn, bridge.StatusCompleted},
		{"length", bridge.StopMaxTokens, bridge.StatusCompleted},
		{"tool_calls", bridge.StopToolUse, bridge.StatusInputRequired},
		{"function_call", bridge.StopToolUse, bridge.StatusInputRequired},
		{"content_filter", bridge.StopContentFilter, bridge.StatusCompleted},
		{"eos", "", ""}, // unknown: an error
	}
	for _, tt := range decode {
		t.Run("decode "+tt.finish, func(t *testing.T) {
			up := chunkJSON(t, map[string]any{"content": "x"}, nil) + chunkJSON(t, map[string]any{}, tt.finish) + "data: [DONE]\n\n"
			events, err := golden.Collect(t, DecodeStream(strings.NewReader(up)))
			if tt.stop == "" {
				if bridge.ErrorCode(err) != bridge.CodeUpstream || !strings.Contains(err.Error(), `unknown finish_reason "eos"`) {
					t.Errorf("err = %v, want an upstream error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f := events[len(events)-1].Final
			if f == nil || f.StopReason != tt.stop || f.Status != tt.status {
				t.Errorf("final = %+v, want %s/%s", f, tt.status, tt.stop)
			}
		})
	}
	encode := []struct {
		stop   bridge.StopReason
		status bridge.Status
		finish string
	}{
		{bridge.StopEndTurn, bridge.StatusCompleted, "stop"},
		{bridge.StopSequence, bridge.StatusCompleted, "stop"},
		{bridge.StopMaxTokens, bridge.StatusCompleted, "length"},
		{bridge.StopToolUse, bridge.StatusInputRequired, "tool_calls"},
		{bridge.StopContentFilter, bridge.StatusCompleted, "content_filter"},
		{bridge.StopRefusal, bridge.StatusCompleted, "content_filter"},
		{bridge.StopPause, bridge.StatusCompleted, "stop"},
		{"", bridge.StatusCompleted, "stop"},
		{"", bridge.StatusInputRequired, "tool_calls"},
	}
	for _, tt := range encode {
		t.Run(fmt.Sprintf("encode %s/%s", tt.status, tt.stop), func(t *testing.T) {
			got, _ := finishReason(&bridge.Final{Status: tt.status, StopReason: tt.stop})
			if got != tt.finish {
				t.Errorf("finishReason = %q, want %q", got, tt.finish)
			}
			// The decoder reads back what the encoder writes (except the
			// many-to-one cases).
			if stop := stopReasons[got]; tt.stop == bridge.StopEndTurn || tt.stop == bridge.StopMaxTokens || tt.stop == bridge.StopToolUse || tt.stop == bridge.StopContentFilter {
				if stop != tt.stop {
					t.Errorf("decoding %q gives %q", got, stop)
				}
			}
		})
	}
}

func TestDecodeStreamErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		code   bridge.Code
		status int
		msg    string
	}{
		{"invalid json", "data: {nope\n\n", bridge.CodeUpstream, 0, "invalid chunk"},
		{"not an object", "data: [1]\n\n", bridge.CodeUpstream, 0, "invalid chunk"},
		{"wrong field type", `data: {"choices":"x"}` + "\n\n", bridge.CodeUpstream, 0, "invalid chunk"},
		{"error object", `data: {"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}` + "\n\n", bridge.CodeInvalid, 0, "bad key"},
		{"error numeric code", `data: {"error":{"message":"busy","type":"ServiceUnavailableError","code":503}}` + "\n\n", bridge.CodeUnavailable, 503, "busy"},
		{"error string", `data: {"error":"plain"}` + "\n\n", bridge.CodeUpstream, 0, "plain"},
		{"event error envelope", "event: error\ndata: {\"error\":{\"message\":\"m\",\"type\":\"server_error\"}}\n\n", bridge.CodeUpstream, 0, "m"},
		{"event error not json", "event: error\ndata: oops\n\n", bridge.CodeUpstream, 0, "oops"},
		{"done before finish", "data: [DONE]\n\n", bridge.CodeUpstream, 0, "before finish_reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := golden.Collect(t, DecodeStream(strings.NewReader(tt.in)))
			be := bridge.AsError(err)
			if be == nil || be.Code != tt.code || be.Status != tt.status || !strings.Contains(be.Message, tt.msg) {
				t.Errorf("err = %#v, want %s status %d containing %q", be, tt.code, tt.status, tt.msg)
			}
		})
	}
	// A falsy error key is not an error.
	ok := `data: {"error":null,"id":"x","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}` + "\n\n"
	if _, err := golden.Collect(t, DecodeStream(strings.NewReader(ok))); err != nil {
		t.Errorf("error: null: %v", err)
	}
}

// TestDecodeStreamStops: a consumer that stops early gets nothing more.
func TestDecodeStreamStops(t *testing.T) {
	up := chunkJSON(t, map[string]any{"content": "a"}, nil) + chunkJSON(t, map[string]any{"content": "b"}, nil)
	golden.StopsWhenAsked(t, DecodeStream(strings.NewReader(up)), 2)
}

// TestToolCallsWithoutIndex: servers that omit index (one complete call per
// chunk) still give distinct calls.
func TestToolCallsWithoutIndex(t *testing.T) {
	var sb strings.Builder
	for _, c := range []struct{ id, name, args string }{{"a", "f", `{"x":1}`}, {"b", "g", `{}`}} {
		sb.WriteString(chunkJSON(t, map[string]any{"tool_calls": []any{map[string]any{"id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": c.args}}}}, nil))
	}
	sb.WriteString(chunkJSON(t, map[string]any{}, "tool_calls"))
	events, err := golden.Collect(t, DecodeStream(strings.NewReader(sb.String())))
	if err != nil {
		t.Fatal(err)
	}
	var done []bridge.ToolCall
	for _, ev := range events {
		if ev.Kind == bridge.KindToolCallDone {
			done = append(done, *ev.ToolCall)
		}
	}
	want := []bridge.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{}`, Index: 1}}
	if diff := cmp.Diff(want, done); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLineLimit: a 1 MiB line is read; a longer one is an error.
func TestLineLimit(t *testing.T) {
	text := strings.Repeat("a", wire.MaxLine-200)
	ok := chunkJSON(t, map[string]any{"content": text}, nil) + chunkJSON(t, map[string]any{}, "stop")
	events, err := golden.Collect(t, DecodeStream(strings.NewReader(ok)))
	if err != nil || events[1].Text != text {
		t.Fatalf("long line: %v", err)
	}
	long := "data: " + strings.Repeat("a", wire.MaxLine) + "\n\n"
	_, err = golden.Collect(t, DecodeStream(strings.NewReader(long)))
	if bridge.ErrorCode(err) != bridge.CodeUpstream || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("err = %v, want line too long", err)
	}
}

// TestFastChunkTakes: the chunks of a text stream take the fast path (else
// FuzzFastChunk would hold nothing), and the rarer ones do not.
func TestFastChunkTakes(t *testing.T) {
	for _, c := range []struct {
		chunk string
		fast  bool
	}{
		{`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1760000000,"model":"gpt-x","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
		{`{"id":"c","choices":[{"index":0,"delta":{"content":"tok \"q\"\n"},"finish_reason":null}]}`, true},
		{`{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}`, true},
		{`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, true},
		{`{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, false},
		{`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`, false},
		{`{"id":"c","choices":[{"index":0,"delta":{"content":"caf\u00e9"}}]}`, false},
		{`{"error":{"message":"boom"}}`, false},
		{`{"Model":"m"}`, false},
	} {
		var p fastjson.Parser
		var got wireChunk
		if ok := fastChunk(&p, []byte(c.chunk), &got); ok != c.fast {
			t.Errorf("fastChunk(%s) = %v, want %v", c.chunk, ok, c.fast)
		}
	}
}

package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// sseOf renders test events as a Messages stream.
func sseOf(evs []anthropictest.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e.Name, e.Data)
	}
	return b.String()
}

// TestToolArgumentReassembly splits a tool input at every byte offset (two
// fragments), decodes the stream and re-encodes the events: the complete
// arguments, the re-encoded fragments and what the SDK accumulates all give
// back the exact text. Offsets inside a UTF-8 sequence are skipped: a JSON
// string cannot carry half a character.
func TestToolArgumentReassembly(t *testing.T) {
	const args = `{"city":"Paris","units":"metric","note":"a \"quoted\" ü"}`
	stream := func(a, b string) string {
		ev := &anthropictest.Events{ID: "msg_1", Model: "m"}
		return sseOf(ev.Start(5, 0, 0).ToolUse("toolu_1", "f", a, b).Delta("tool_use", 9).Stop().List())
	}
	golden.ToolSplits(t, args, "toolu_1", "f", DecodeStream, stream, func(i int, events []bridge.Event) {
		sse, _ := encodeEvents(t, events, goldenOptions)
		sum := validate(t, sse, anthropictest.Check{RunID: goldenRun, IDs: true, Complete: true})
		if len(sum.ToolCalls) != 1 || sum.ToolCalls[0].Input != args {
			t.Errorf("split %d: re-encoded %v", i, sum.ToolCalls)
		}
		msg, err := sdkStream(t, sse)
		if err != nil || len(msg.Content) != 1 || string(msg.Content[0].Input) != args {
			t.Errorf("split %d: the SDK accumulated %+v (%v)", i, msg.Content, err)
		}
	})
}

func TestDecodeStreamEdges(t *testing.T) {
	start := `event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}` + "\n\n"
	tests := []struct {
		name  string
		sse   string
		kinds string // the event kinds, then "error:<code>" when it fails
	}{
		{"unknown events and pings ignored", start +
			"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
			"event: future_thing\ndata: {\"type\":\"future_thing\"}\n\n" +
			": a comment\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			"usage message_started usage message_done final"},
		{"data type wins over the event line", start +
			"event: ping\ndata: {\"type\":\"message_stop\"}\n\n",
			"usage message_started message_done final"},
		{"no event lines", "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
			"message_started message_done final"},
		{"delta for a block never started", start +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
			"usage message_started error:upstream"},
		{"block without index", start +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"usage message_started error:upstream"},
		{"invalid JSON", start + "event: content_block_start\ndata: {nope\n\n", "usage message_started error:upstream"},
		{"EOF after stop reason", start +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":1}}\n\n",
			"usage message_started usage message_done final"},
		{"EOF before anything", "", "error:upstream"},
		{"error event", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow\"}}\n\n", "error:rate_limited"},
		{"text in the start block", start +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"hi\"}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			"usage message_started text_delta message_done final"},
		{"tool input whole at the start, block left open", start +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{\"a\": 1}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			"usage message_started tool_call_started tool_call_delta tool_call_done message_done final"},
		{"tool input that is not a JSON object (a delta lost on the way)", start +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Paris\\\"}\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
			"usage message_started tool_call_started tool_call_delta error:upstream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kinds []string
			for ev, err := range DecodeStream(strings.NewReader(tt.sse)) {
				if err != nil {
					kinds = append(kinds, "error:"+string(bridge.ErrorCode(err)))
					continue
				}
				kinds = append(kinds, string(ev.Kind))
			}
			if got := strings.Join(kinds, " "); got != tt.kinds {
				t.Errorf("kinds\n got %s\nwant %s", got, tt.kinds)
			}
		})
	}
}

// TestDecodeStreamStopsWhenAsked: a consumer that stops early gets nothing
// more.
func TestDecodeStreamStopsWhenAsked(t *testing.T) {
	ev := &anthropictest.Events{ID: "m", Model: "x"}
	ev.Start(1, 0, 0).Text("a", "b", "c").Delta("end_turn", 3).Stop()
	golden.StopsWhenAsked(t, DecodeStream(strings.NewReader(sseOf(ev.List()))), 3)
}

// TestEncoderPingAndClose: a ping is written only inside a message and
// has no id; a stream that ends without a final ends with an error frame.
func TestEncoderPingAndClose(t *testing.T) {
	var b bytes.Buffer
	enc := NewStreamEncoder(&b, goldenOptions)
	if err := enc.Ping(); err != nil || b.Len() != 0 {
		t.Fatalf("ping before message_start wrote %q (%v)", b.String(), err)
	}
	_ = enc.Encode(&bridge.Event{RunID: "r", Seq: 1, Kind: bridge.KindMessageStarted})
	_ = enc.Encode(&bridge.Event{RunID: "r", Seq: 2, Kind: bridge.KindTextDelta, Text: "hi"})
	n := b.Len()
	if err := enc.Ping(); err != nil {
		t.Fatal(err)
	}
	if got := b.String()[n:]; got != "event: ping\ndata: {\"type\":\"ping\"}\n\n" {
		t.Errorf("ping = %q", got)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	sum := validate(t, b.Bytes(), anthropictest.Check{RunID: "r", Complete: true})
	if sum.ErrType != "api_error" || sum.Text != "hi" || sum.Pings != 1 {
		t.Errorf("summary %+v", sum)
	}
	if err := enc.Encode(&bridge.Event{Kind: bridge.KindTextDelta, Text: "x"}); err == nil {
		t.Error("Encode after Close")
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, io.ErrClosedPipe
	}
	w.n--
	return len(p), nil
}

// TestEncoderWriteError: the first write error is returned, and again.
func TestEncoderWriteError(t *testing.T) {
	enc := NewStreamEncoder(&failWriter{n: 1}, goldenOptions)
	if err := enc.Encode(&bridge.Event{Kind: bridge.KindMessageStarted}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(&bridge.Event{Kind: bridge.KindTextDelta, Text: "x"}); err != io.ErrClosedPipe {
		t.Errorf("err = %v", err)
	}
	if err := enc.Encode(&bridge.Event{Kind: bridge.KindTextDelta, Text: "y"}); err != io.ErrClosedPipe {
		t.Errorf("err again = %v", err)
	}
}

// randomEvents makes a plausible, randomly interleaved model step: text,
// reasoning (with and without signatures, encrypted), tool calls whose
// fragments interleave or not, usage, then a final.
func randomEvents(r *rand.Rand) (evs []bridge.Event, text string, args map[string]string) {
	args = map[string]string{}
	evs = append(evs, bridge.Event{Kind: bridge.KindRunStarted}, bridge.Event{Kind: bridge.KindMessageStarted})
	type call struct {
		idx     int
		id      string
		frags   []string
		started bool
		sent    int
	}
	var calls []*call
	for i := range r.IntN(4) {
		whole := fmt.Sprintf(`{"n":%d,"s":"%s"}`, i, strings.Repeat("x", r.IntN(5)))
		c := &call{idx: i, id: fmt.Sprintf("toolu_%d", i)}
		for len(whole) > 0 {
			k := 1 + r.IntN(len(whole))
			c.frags = append(c.frags, whole[:k])
			whole = whole[k:]
		}
		args[c.id] = strings.Join(c.frags, "")
		calls = append(calls, c)
	}
	var sb strings.Builder
	for steps := 0; steps < 40; steps++ {
		switch r.IntN(6) {
		case 0, 1:
			s := []string{"", "a", "b c", "\"q\""}[r.IntN(4)]
			sb.WriteString(s)
			evs = append(evs, bridge.Event{Kind: bridge.KindTextDelta, Text: s})
		case 2:
			ev := bridge.Event{Kind: bridge.KindReasoningDelta, Text: []string{"", "think"}[r.IntN(2)]}
			switch r.IntN(4) {
			case 0:
				ev.Signature = "sig"
			case 1:
				ev.Encrypted = "enc"
			}
			evs = append(evs, ev)
		case 3:
			evs = append(evs, bridge.Event{Kind: bridge.KindUsage, Usage: &bridge.Usage{InputTokens: bridge.Int64(int64(r.IntN(100))), OutputTokens: bridge.Int64(int64(r.IntN(100)))}})
		default:
			if len(calls) == 0 {
				continue
			}
			c := calls[r.IntN(len(calls))]
			tc := &bridge.ToolCall{Index: c.idx}
			switch {
			case !c.started:
				c.started = true
				tc.ID, tc.Name = c.id, "f"
				evs = append(evs, bridge.Event{Kind: bridge.KindToolCallStarted, Index: c.idx, ToolCall: tc})
			case c.sent < len(c.frags):
				tc.Arguments = c.frags[c.sent]
				c.sent++
				evs = append(evs, bridge.Event{Kind: bridge.KindToolCallDelta, Index: c.idx, ToolCall: tc})
			}
		}
	}
	for _, c := range calls {
		if !c.started {
			evs = append(evs, bridge.Event{Kind: bridge.KindToolCallStarted, Index: c.idx, ToolCall: &bridge.ToolCall{Index: c.idx, ID: c.id, Name: "f"}})
		}
	}
	for _, c := range calls {
		evs = append(evs, bridge.Event{Kind: bridge.KindToolCallDone, Index: c.idx, ToolCall: &bridge.ToolCall{Index: c.idx, ID: c.id, Name: "f", Arguments: args[c.id]}})
	}
	evs = append(evs, bridge.Event{Kind: bridge.KindMessageDone})
	f := &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}
	if len(calls) > 0 {
		f = &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}
	}
	return append(evs, bridge.Event{Kind: bridge.KindFinal, Final: f}), sb.String(), args
}

// TestEncoderRandomInterleavings: whatever order text, reasoning and
// parallel tool fragments come in, the emitted stream passes the
// validator, carries all the text in order and every call's arguments
// exactly, the SDK reads it, and the Accumulator agrees.
func TestEncoderRandomInterleavings(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 500 {
		evs, text, args := randomEvents(r)
		sse, _ := encodeEvents(t, evs, goldenOptions)
		sum := validate(t, sse, anthropictest.Check{RunID: goldenRun, IDs: true, Complete: true})
		if sum.Text != text {
			t.Fatalf("case %d: text %q, want %q", n, sum.Text, text)
		}
		if len(sum.ToolCalls) != len(args) {
			t.Fatalf("case %d: %d tool calls, want %d", n, len(sum.ToolCalls), len(args))
		}
		for i, c := range sum.ToolCalls {
			if c.Input != args[c.ID] || c.Index != i {
				t.Fatalf("case %d: call %v, want input %q", n, c, args[c.ID])
			}
		}
		msg, err := sdkStream(t, sse)
		if err != nil {
			t.Fatalf("case %d: SDK: %v", n, err)
		}
		acc := NewAccumulator(goldenOptions)
		for i := range evs {
			acc.Add(&evs[i])
		}
		body, err := acc.Response()
		if err != nil {
			t.Fatal(err)
		}
		var ours struct {
			Content []json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(body, &ours)
		if len(ours.Content) != len(msg.Content) || len(sum.Blocks) != len(msg.Content) {
			t.Fatalf("case %d: %d blocks ours, %d SDK, %d stream", n, len(ours.Content), len(msg.Content), len(sum.Blocks))
		}
	}
}

package anthropictest

import (
	"fmt"
	"strings"
	"testing"
)

// frame renders one frame for the validator's tests.
func frame(seq any, name, data string) string {
	return fmt.Sprintf("id: run_v:%v\nevent: %s\ndata: %s\n\n", seq, name, data)
}

const startData = `{"type":"message_start","message":{"id":"msg_v","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":0}}}`

// validStream is thinking, text and two tool_use blocks, then the end.
func validStream() []string {
	return []string{
		frame(2, "message_start", startData),
		frame("3.1", "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		frame(3, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`),
		frame("4.1", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}`),
		frame(4, "content_block_stop", `{"type":"content_block_stop","index":0}`),
		"event: ping\ndata: {\"type\":\"ping\"}\n\n",
		frame("5.1", "content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
		frame(5, "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}`),
		frame("6.1", "content_block_stop", `{"type":"content_block_stop","index":1}`),
		frame(6, "content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`),
		frame(7, "content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`),
		frame("8.1", "content_block_stop", `{"type":"content_block_stop","index":2}`),
		frame(8, "content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"g","input":{}}}`),
		frame(9, "content_block_stop", `{"type":"content_block_stop","index":3}`),
		frame("10.1", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}`),
		frame(10, "message_stop", `{"type":"message_stop"}`),
	}
}

func run(t *testing.T, frames []string, c Check) (*Summary, []string) {
	t.Helper()
	fs, err := ParseFrames([]byte(strings.Join(frames, "")))
	sum, problems := CheckStream(fs, c)
	if err != nil {
		problems = append(problems, err.Error())
	}
	return sum, problems
}

var strict = Check{RunID: "run_v", IDs: true, Complete: true}

func TestCheckStreamAcceptsValid(t *testing.T) {
	sum, problems := run(t, validStream(), strict)
	if len(problems) > 0 {
		t.Fatalf("a valid stream was rejected: %q", problems)
	}
	if sum.Text != "Hi" || sum.Thinking != "hm" || len(sum.ToolCalls) != 2 || sum.ToolCalls[0].Input != `{"a":1}` ||
		sum.StopReason != "tool_use" || sum.Usage.Output != 7 || sum.Usage.Input != 3 || sum.Pings != 1 || sum.Messages != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// TestCheckStreamRejects: each case breaks one rule in an otherwise valid
// stream, and the validator names it.
func TestCheckStreamRejects(t *testing.T) {
	set := func(i int, f string) func([]string) []string {
		return func(s []string) []string { s[i] = f; return s }
	}
	cut := func(i int) func([]string) []string {
		return func(s []string) []string { return append(s[:i:i], s[i+1:]...) }
	}
	tests := []struct {
		name string
		edit func([]string) []string
		want string
	}{
		{"event name differs from data.type", set(0, frame(2, "message_delta", startData)), "but data.type"},
		{"no event line", set(0, "id: run_v:2\ndata: "+startData+"\n\n"), "no event: line"},
		{"no id", set(1, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"), "no id: line"},
		{"id of another run", set(0, "id: run_x:2\nevent: message_start\ndata: "+startData+"\n\n"), "names run run_x"},
		{"ids go back", set(2, frame(1, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`)), "goes back"},
		{"two message_starts", func(s []string) []string { return append(s[:1:1], s...) }, "message_start inside a message"},
		{"no message_start", cut(0), "before message_start"},
		{"delta to a stopped block", set(7, frame(5, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`)), "not open"},
		{"blocks interleave", func(s []string) []string { return append(s[:2:2], append([]string{s[6]}, s[2:]...)...) }, "while block 0 is open"},
		{"index skips", set(6, frame("5.1", "content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`)), "block index 2, want 1"},
		{"tool-only turn not at 0", func(s []string) []string {
			return []string{s[0], frame("3.1", "content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`),
				frame(4, "content_block_stop", `{"type":"content_block_stop","index":1}`), s[14], s[15]}
		}, "want 0"},
		{"thinking inside text", set(7, frame(5, "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"x"}}`)), "a thinking_delta in a text block"},
		{"thinking after the signature", set(4, frame(4, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"more"}}`)), "thinking after the block's signature"},
		{"empty text block", cut(7), "an empty text block"},
		{"empty text delta", set(7, frame(5, "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":""}}`)), "an empty text_delta"},
		{"text block starts with text", set(6, frame("5.1", "content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"x"}}`)), "starts with text"},
		{"bad tool id", set(9, frame(6, "content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call.1","name":"f","input":{}}}`)), "a tool_use block starts with id"},
		{"tool input not JSON", set(10, frame(7, "content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`)), "not a JSON object"},
		{"block never stopped", cut(13), "message_delta while block 3 is open"},
		{"unknown stop reason", set(14, frame("10.1", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop"},"usage":{"output_tokens":7}}`)), "not a known value"},
		{"no output_tokens", set(14, frame("10.1", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{}}`)), "without output_tokens"},
		{"message_stop without message_delta", cut(14), "message_stop without message_delta"},
		{"no end", func(s []string) []string { return s[:15] }, "does not end with message_stop"},
		{"a frame after the end", func(s []string) []string { return append(s, s[7]) }, "after the stream's end"},
		{"cut inside a frame", func(s []string) []string { return append(s, "id: run_v:11\nevent: ping") }, "ends inside a frame"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := run(t, tt.edit(validStream()), strict)
			if len(problems) == 0 {
				t.Fatal("the broken stream was accepted")
			}
			if tt.want != "" && !strings.Contains(strings.Join(problems, "\n"), tt.want) {
				t.Errorf("problems %q do not say %q", problems, tt.want)
			}
		})
	}
}

// TestCheckStreamModes: an error ends a stream (and excuses a cut tool
// input); a resumed stream may continue a block it did not see start; a
// replay of a continued run may hold one message per turn.
func TestCheckStreamModes(t *testing.T) {
	s := validStream()
	withError := append(s[:11:11], frame("8.1", "content_block_stop", `{"type":"content_block_stop","index":2}`),
		frame(8, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	withError[10] = frame(7, "content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`)
	sum, problems := run(t, withError, strict)
	if len(problems) > 0 || sum.ErrType != "overloaded_error" || !sum.Complete {
		t.Errorf("error stream: %q %+v", problems, sum)
	}
	resumed := validStream()[7:]
	if _, problems := run(t, resumed, Check{RunID: "run_v", IDs: true, Complete: true, Resumed: true}); len(problems) > 0 {
		t.Errorf("resumed: %q", problems)
	}
	if _, problems := run(t, resumed, strict); len(problems) == 0 {
		t.Error("a resumed stream passed as a whole one")
	}
	twice := append(validStream(), frame(11, "message_start", startData), frame("12.1", "message_delta",
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`), frame(12, "message_stop", `{"type":"message_stop"}`))
	if _, problems := run(t, twice, Check{RunID: "run_v", IDs: true, Complete: true, Messages: true}); len(problems) > 0 {
		t.Errorf("two turns: %q", problems)
	}
	if _, problems := run(t, twice, strict); len(problems) == 0 {
		t.Error("two messages passed in a live stream")
	}
}

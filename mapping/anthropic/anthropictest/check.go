package anthropictest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/bridge-dev/bridge/mapping/internal/sseframe"
)

// Frame is one SSE event as it came off the wire.
type Frame = sseframe.Frame

// ParseFrames splits an SSE body into frames (LF line ends, as the bridge
// writes). A body that ends inside a frame returns the frames before it and
// an error.
func ParseFrames(sse []byte) ([]Frame, error) { return sseframe.Parse(sse) }

// ToolCall is one tool_use block as a client accumulates it.
type ToolCall struct {
	Index int // its position among the message's tool_use blocks
	ID    string
	Name  string
	Input string // the concatenated partial_json ("" for none)
}

func (c ToolCall) String() string {
	return fmt.Sprintf("#%d %s %s(%s)", c.Index, c.ID, c.Name, c.Input)
}

// Usage is a message's token counts as a client accumulates them (the last
// value of each count wins, as the SDKs do).
type Usage struct {
	Input, Output, CacheRead, CacheCreation int64
	HasInput                                bool
}

// Summary is what a stream said, as a client accumulates it.
type Summary struct {
	Messages   int // message_start frames
	ID, Model  string
	Text       string // all text blocks
	Thinking   string
	Signatures []string // per thinking block
	Redacted   []string
	Blocks     []string // block types, in order
	ToolCalls  []ToolCall
	StopReason string
	Usage      Usage
	// ErrType and ErrMessage are those of the stream's error event.
	ErrType, ErrMessage string
	Complete            bool // it ended with message_stop or an error
	Pings               int
	IDs                 []string // event ids of the frames that carry one
}

// Check says what a stream must be.
type Check struct {
	// RunID, when set, is the run every frame's id must name; ids must not
	// go back.
	RunID string
	// IDs requires an id line on every frame but pings.
	IDs bool
	// Complete requires the stream to end with message_stop or an error.
	Complete bool
	// Resumed is a stream resumed after an event id: it continues a message
	// whose start and open blocks came before it.
	Resumed bool
	// Messages allows a run continued after tool_use to carry one message
	// per turn (a replay of the whole run); otherwise exactly one.
	Messages bool
}

var toolID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

var stopReasons = map[string]bool{
	"end_turn": true, "max_tokens": true, "stop_sequence": true, "tool_use": true,
	"pause_turn": true, "refusal": true, "model_context_window_exceeded": true,
}

// CheckStream validates frames against the grammar of the Messages stream
// and returns what they say and every problem found:
//
//   - every frame has one event: line and one data: line, a JSON object
//     whose type equals the event name; with Check.IDs an id: line on every
//     frame but ping (an event id of Check.RunID, never going back);
//   - exactly one message_start, first (with Check.Messages, one per turn,
//     each after a turn that ended with tool_use); its message has id, type
//     message, role assistant, model, empty content, null stop_reason and a
//     usage with input_tokens;
//   - content_block_start comes with the next index (0, 1, 2 ... so a
//     tool-only turn starts at 0) while no other block is open; a text block
//     starts with "", a thinking block with "" and signature "", a tool_use
//     block with an id matching ^[a-zA-Z0-9_-]+$, a name and input {};
//   - every content_block_delta refers to the open block, with a delta of
//     its kind (text_delta to text, thinking_delta and signature_delta to
//     thinking, nothing after the signature; input_json_delta to tool_use):
//     thinking is never inside a text block; text deltas are not empty;
//   - content_block_stop stops the open block; a text block is never empty;
//     a tool_use input is empty or a JSON object (unless an error event
//     cut the stream off);
//   - every started block is stopped before message_delta or an error;
//   - message_delta (a known stop_reason, usage.output_tokens) once, then
//     message_stop last; an error event ({type:error, error:{type,message}})
//     ends the stream; nothing but pings between them;
//   - with Check.Complete the stream ends with message_stop or an error.
func CheckStream(frames []Frame, c Check) (*Summary, []string) {
	s := &Summary{}
	var problems []string
	var (
		lastPos     = [2]int64{-1, 0}
		open        = -1 // the open block's index
		openType    string
		openText    strings.Builder
		sealed      bool
		blocks      int // blocks started in this message
		tools       int
		inMessage   = c.Resumed
		sawDelta    bool // message_delta of this message
		ended       bool // message_stop or error
		lastStop    string
		currentTool *ToolCall
		badInputs   []string // tool inputs that are not JSON: fine only in a stream an error cut off
	)
	for i, f := range frames {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("frame %d (%s): %s", i+1, f, fmt.Sprintf(format, args...)))
		}
		other := f.Other
		if f.Datas > 1 {
			other = append(other, "a second data line")
		}
		if len(other) > 0 {
			bad("unexpected lines %q", other)
		}
		if f.Event == "" {
			bad("no event: line (SDK clients skip such frames)")
			continue
		}
		var data map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f.Data), &data); err != nil {
			bad("data is not a JSON object: %v", err)
			continue
		}
		var typ string
		_ = json.Unmarshal(data["type"], &typ)
		if typ != f.Event {
			bad("event %q but data.type %q", f.Event, typ)
		}
		if f.Event == "ping" {
			s.Pings++
			continue
		}
		if ended {
			bad("a frame after the stream's end")
			continue
		}
		if f.HasID {
			s.IDs = append(s.IDs, f.ID)
			run, pos, ok := sseframe.ParseID(f.ID)
			switch {
			case !ok:
				bad("id %q is not an event id", f.ID)
			case c.RunID != "" && run != c.RunID:
				bad("id %q names run %s, want %s", f.ID, run, c.RunID)
			case !sseframe.Before(lastPos, pos):
				bad("id %q goes back or repeats (every frame has an id of its own)", f.ID)
			default:
				lastPos = pos
			}
		} else if c.IDs {
			bad("no id: line")
		}
		get := func(k string, v any) bool {
			raw, ok := data[k]
			if !ok {
				bad("no %q", k)
				return false
			}
			if err := json.Unmarshal(raw, v); err != nil {
				bad("%q: %v", k, err)
				return false
			}
			return true
		}
		switch f.Event {
		case "message_start":
			if inMessage {
				bad("message_start inside a message")
			} else if s.Messages > 0 && !(c.Messages && lastStop == "tool_use") {
				bad("a second message_start")
			}
			s.Messages++
			inMessage, sawDelta, blocks, tools, open = true, false, 0, 0, -1
			var m struct {
				ID           string            `json:"id"`
				Type         string            `json:"type"`
				Role         string            `json:"role"`
				Model        *string           `json:"model"`
				Content      []json.RawMessage `json:"content"`
				StopReason   *string           `json:"stop_reason"`
				StopSequence *string           `json:"stop_sequence"`
				Usage        *struct {
					Input  *int64 `json:"input_tokens"`
					Output *int64 `json:"output_tokens"`
				} `json:"usage"`
			}
			if !get("message", &m) {
				continue
			}
			if m.ID == "" || m.Type != "message" || m.Role != "assistant" || m.Model == nil || m.Content == nil || len(m.Content) != 0 || m.StopReason != nil {
				bad("message_start message lacks id, type message, role assistant, model, empty content or null stop_reason")
			}
			if m.Usage == nil || m.Usage.Input == nil {
				bad("message_start usage lacks input_tokens")
			}
			s.ID = m.ID
			if m.Model != nil {
				s.Model = *m.Model
			}
			var u struct {
				Usage json.RawMessage `json:"usage"`
			}
			_ = json.Unmarshal(data["message"], &u)
			s.Usage.add(u.Usage)
		case "content_block_start":
			if !inMessage {
				bad("content_block_start before message_start")
			}
			if sawDelta {
				bad("content_block_start after message_delta")
			}
			var idx int
			var cb map[string]json.RawMessage
			if !get("index", &idx) || !get("content_block", &cb) {
				continue
			}
			if open >= 0 {
				bad("block %d starts while block %d is open", idx, open)
			}
			if !c.Resumed && idx != blocks || c.Resumed && blocks > 0 && idx != blocks {
				bad("block index %d, want %d (indices go 0, 1, 2 ... in order)", idx, blocks)
			}
			blocks = idx + 1
			open, sealed = idx, false
			openText.Reset()
			var bt string
			_ = json.Unmarshal(cb["type"], &bt)
			openType = bt
			s.Blocks = append(s.Blocks, bt)
			str := func(k string) (string, bool) {
				var v *string
				if json.Unmarshal(cb[k], &v) != nil || v == nil {
					return "", false
				}
				return *v, true
			}
			switch bt {
			case "text":
				if t, ok := str("text"); !ok || t != "" {
					bad("a text block starts with text %q, want \"\"", t)
				}
			case "thinking":
				t, ok1 := str("thinking")
				sig, ok2 := str("signature")
				if !ok1 || !ok2 || t != "" || sig != "" {
					bad("a thinking block starts with thinking %q signature %q, want both \"\"", t, sig)
				}
			case "redacted_thinking":
				d, ok := str("data")
				if !ok || d == "" {
					bad("a redacted_thinking block without data")
				}
				s.Redacted = append(s.Redacted, d)
			case "tool_use":
				id, _ := str("id")
				name, _ := str("name")
				if !toolID.MatchString(id) || name == "" || string(cb["input"]) != "{}" {
					bad("a tool_use block starts with id %q name %q input %s", id, name, cb["input"])
				}
				s.ToolCalls = append(s.ToolCalls, ToolCall{Index: tools, ID: id, Name: name})
				currentTool = &s.ToolCalls[len(s.ToolCalls)-1]
				tools++
			}
		case "content_block_delta":
			var idx int
			var d map[string]json.RawMessage
			if !get("index", &idx) || !get("delta", &d) {
				continue
			}
			if idx != open {
				if !(c.Resumed && s.Messages == 0 && blocks == 0) {
					bad("a delta for block %d, which is not open (open: %d)", idx, open)
					continue
				}
			}
			var dt string
			_ = json.Unmarshal(d["type"], &dt)
			field := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature", "input_json_delta": "partial_json"}[dt]
			var v *string
			if field == "" || json.Unmarshal(d[field], &v) != nil || v == nil {
				bad("delta type %q without its string field", dt)
				continue
			}
			want := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "thinking", "input_json_delta": "tool_use"}[dt]
			if openType != "" && want != openType {
				bad("a %s in a %s block", dt, openType)
				continue
			}
			switch dt {
			case "text_delta":
				if *v == "" {
					bad("an empty text_delta")
				}
				s.Text += *v
				openText.WriteString(*v)
			case "thinking_delta":
				if sealed {
					bad("thinking after the block's signature")
				}
				s.Thinking += *v
			case "signature_delta":
				sealed = true
				s.Signatures = append(s.Signatures, *v)
			case "input_json_delta":
				openText.WriteString(*v)
				if currentTool != nil {
					currentTool.Input += *v
				}
			}
		case "content_block_stop":
			var idx int
			if !get("index", &idx) {
				continue
			}
			if idx != open && !(c.Resumed && s.Messages == 0 && open < 0 && blocks == 0) {
				bad("stop of block %d, which is not open (open: %d)", idx, open)
			}
			switch openType {
			case "text":
				if openText.Len() == 0 && !c.Resumed {
					bad("an empty text block")
				}
			case "tool_use":
				if in := openText.String(); in != "" && (!json.Valid([]byte(in)) || strings.TrimSpace(in)[0] != '{') {
					badInputs = append(badInputs, fmt.Sprintf("frame %d (%s): tool_use input %q is not a JSON object", i+1, f, in))
				}
			}
			if c.Resumed && s.Messages == 0 && blocks == 0 {
				blocks = idx + 1
			}
			open, openType, currentTool = -1, "", nil
		case "message_delta":
			if !inMessage {
				bad("message_delta outside a message")
			}
			if sawDelta {
				bad("a second message_delta")
			}
			if open >= 0 {
				bad("message_delta while block %d is open", open)
			}
			sawDelta = true
			var d struct {
				StopReason *string `json:"stop_reason"`
			}
			var u map[string]json.RawMessage
			if !get("delta", &d) || !get("usage", &u) {
				continue
			}
			if d.StopReason == nil || !stopReasons[*d.StopReason] {
				bad("stop_reason %v is not a known value", d.StopReason)
			} else {
				s.StopReason, lastStop = *d.StopReason, *d.StopReason
			}
			if _, ok := u["output_tokens"]; !ok {
				bad("message_delta usage without output_tokens")
			}
			s.Usage.add(data["usage"])
		case "message_stop":
			if !sawDelta {
				bad("message_stop without message_delta")
			}
			inMessage = false
			if !c.Messages || lastStop != "tool_use" {
				ended = true
			}
			s.Complete = true
		case "error":
			var e struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			}
			if !get("error", &e) || e.Type == "" {
				bad("an error event without error.type")
			}
			if open >= 0 {
				bad("an error while block %d is open", open)
			}
			s.ErrType, s.ErrMessage = e.Type, e.Message
			ended, s.Complete = true, true
		default:
			bad("unknown event %q", f.Event)
		}
	}
	if s.ErrType == "" {
		problems = append(problems, badInputs...)
	}
	if c.Complete && !s.Complete {
		problems = append(problems, "the stream does not end with message_stop or an error")
	}
	if c.Complete && s.Messages == 0 && !c.Resumed && s.ErrType == "" {
		problems = append(problems, "no message_start")
	}
	return s, problems
}

func (u *Usage) add(raw json.RawMessage) {
	var v struct {
		Input         *int64 `json:"input_tokens"`
		Output        *int64 `json:"output_tokens"`
		CacheRead     *int64 `json:"cache_read_input_tokens"`
		CacheCreation *int64 `json:"cache_creation_input_tokens"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	if v.Input != nil {
		u.Input, u.HasInput = *v.Input, true
	}
	if v.Output != nil {
		u.Output = *v.Output
	}
	if v.CacheRead != nil {
		u.CacheRead = *v.CacheRead
	}
	if v.CacheCreation != nil {
		u.CacheCreation = *v.CacheCreation
	}
}

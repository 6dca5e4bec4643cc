package hermes

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// framePayload is the union of the session stream's payload members.
type framePayload struct {
	SessionID string          `json:"session_id"`
	RunID     string          `json:"run_id"`
	Seq       int64           `json:"seq"`
	MessageID string          `json:"message_id"`
	Delta     string          `json:"delta"`
	ToolName  string          `json:"tool_name"`
	ToolID    string          `json:"tool_call_id"`
	Preview   string          `json:"preview"`
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
	Content   string          `json:"content"`
	Message   json.RawMessage `json:"message"`
	Error     json.RawMessage `json:"error"`
	Reason    string          `json:"reason"`
	Interrupt bool            `json:"interrupted"`
	Usage     *struct {
		InputTokens     *int64 `json:"input_tokens"`
		OutputTokens    *int64 `json:"output_tokens"`
		TotalTokens     *int64 `json:"total_tokens"`
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"usage"`
	PendingSteer json.RawMessage `json:"pending_steer"`
}

// StreamDecoder reads a Hermes session stream (wire -> hub). RunID and
// Seq are safe to call from another goroutine while the stream is read
// (to stop the run upstream).
type StreamDecoder struct {
	r io.Reader

	mu    sync.Mutex
	runID string
	seq   int64
}

// NewStreamDecoder returns a decoder of the frames r carries.
func NewStreamDecoder(r io.Reader) *StreamDecoder { return &StreamDecoder{r: r} }

// RunID is the upstream's run_id, once a frame named it.
func (d *StreamDecoder) RunID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runID
}

// Seq is the seq of the last frame read.
func (d *StreamDecoder) Seq() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq
}

// DecodeStream reads a Hermes session stream into events.
func DecodeStream(r io.Reader) bridge.Stream { return NewStreamDecoder(r).Events() }

// Events yields the stream's events: assistant text, _thinking progress
// as reasoning, tool.* as the agent's own tool calls and results (Source
// agent), usage, and the final (run.completed, error as failed). The
// stream ends at done. Each event's UpstreamID is the frame's seq.
func (d *StreamDecoder) Events() bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		sr := wire.NewSSEReader(d.r)
		var (
			final    *bridge.Final
			sawText  bool
			index    int
			pending  = map[string][]string{} // tool name -> started call ids, oldest first
			lastCall string
			usage    bridge.Usage
		)
		emit := func(ev bridge.Event, p *framePayload) bool {
			ev.UpstreamID = strconv.FormatInt(p.Seq, 10)
			return yield(ev, nil)
		}
		for {
			sse, err := sr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				yield(bridge.Event{}, err)
				return
			}
			var p framePayload
			if len(sse.Data) > 0 {
				if wire.CheckDepth(sse.Data, wire.MaxDepth) != nil || json.Unmarshal(sse.Data, &p) != nil {
					yield(bridge.Event{}, bridge.Errorf(bridge.CodeUpstream, "hermes stream: frame %q is not a JSON object", sse.Name))
					return
				}
			}
			d.mu.Lock()
			if p.RunID != "" {
				d.runID = p.RunID
			}
			if p.Seq > 0 {
				d.seq = p.Seq
			}
			d.mu.Unlock()
			switch sse.Name {
			case EventMessageStarted:
				if !emit(bridge.Event{Kind: bridge.KindMessageStarted, ResponseID: p.RunID}, &p) {
					return
				}
			case EventAssistantDelta:
				if p.Delta == "" {
					continue
				}
				sawText = true
				if !emit(bridge.Event{Kind: bridge.KindTextDelta, Text: p.Delta}, &p) {
					return
				}
			case EventToolProgress:
				if p.ToolName != ThinkingTool || p.Delta == "" {
					continue // a tool's progress note: the tool events carry the activity
				}
				if !emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: p.Delta}, &p) {
					return
				}
			case EventToolStarted:
				id := p.ToolID
				if id == "" {
					id = "hermes_" + p.RunID + "_" + strconv.FormatInt(p.Seq, 10)
				}
				args := argsText(p.Args)
				tc := bridge.ToolCall{ID: id, Name: p.ToolName, Index: index}
				index++
				pending[p.ToolName] = append(pending[p.ToolName], id)
				lastCall = id
				if !emit(bridge.Event{Kind: bridge.KindToolCallStarted, Source: bridge.SourceAgent, Index: tc.Index, ToolCall: &bridge.ToolCall{ID: id, Name: tc.Name, Index: tc.Index}}, &p) {
					return
				}
				tc.Arguments = args
				if !emit(bridge.Event{Kind: bridge.KindToolCallDone, Source: bridge.SourceAgent, Index: tc.Index, ToolCall: &tc}, &p) {
					return
				}
			case EventToolCompleted, EventToolFailed:
				id := p.ToolID
				if id == "" {
					if q := pending[p.ToolName]; len(q) > 0 {
						id, pending[p.ToolName] = q[0], q[1:]
					} else {
						id = lastCall
					}
				}
				text := argsText(p.Result)
				if text == "" {
					text = p.Preview
				}
				failed := sse.Name == EventToolFailed || string(p.Error) == "true"
				tr := &bridge.ToolResult{CallID: id, Name: p.ToolName, IsError: failed}
				if text != "" {
					tr.Content = []bridge.Part{bridge.TextPart(text)}
				}
				if !emit(bridge.Event{Kind: bridge.KindToolResult, Source: bridge.SourceAgent, ToolResult: tr}, &p) {
					return
				}
			case EventAssistantCompleted:
				if !sawText && p.Content != "" {
					sawText = true
					if !emit(bridge.Event{Kind: bridge.KindTextDelta, Text: p.Content}, &p) {
						return
					}
				}
				if !emit(bridge.Event{Kind: bridge.KindMessageDone}, &p) {
					return
				}
				if p.Interrupt {
					final = &bridge.Final{Status: bridge.StatusCancelled, Reason: "interrupted upstream"}
				}
			case EventRunCompleted:
				if p.Usage != nil {
					u := bridge.Usage{InputTokens: p.Usage.InputTokens, OutputTokens: p.Usage.OutputTokens,
						TotalTokens: p.Usage.TotalTokens, ReasoningTokens: p.Usage.ReasoningTokens}
					if !u.IsZero() {
						usage.Merge(&u)
						if !emit(bridge.Event{Kind: bridge.KindUsage, Usage: &u}, &p) {
							return
						}
					}
				}
				if final == nil || final.Status != bridge.StatusCancelled {
					final = &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}
				}
			case EventError, EventRunFailed:
				msg := errorText(p.Error)
				if msg == "" {
					msg = errorText(p.Message)
				}
				if msg == "" {
					msg = "the hermes run failed"
				}
				final = &bridge.Final{Status: bridge.StatusFailed, Reason: msg,
					Error: &bridge.Error{Code: bridge.CodeUpstream, Message: msg, Dialect: Dialect}}
			case EventRunCancelled:
				final = &bridge.Final{Status: bridge.StatusCancelled, Reason: nonEmpty(p.Reason, "cancelled upstream")}
			case EventRunInterrupted:
				final = &bridge.Final{Status: bridge.StatusInterrupted, Reason: nonEmpty(p.Reason, "interrupted upstream")}
			case EventDone:
				if final != nil {
					f := *final
					if !usage.IsZero() {
						u := usage
						f.Usage = &u
					}
					emit(bridge.Event{Kind: bridge.KindFinal, Final: &f}, &p)
				}
				return
			}
		}
		if final != nil { // a server that closed without done
			yield(bridge.Event{Kind: bridge.KindFinal, Final: final}, nil)
		}
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// argsText is a JSON string's value, or other JSON as its text.
func argsText(raw json.RawMessage) string {
	if len(raw) == 0 || wire.IsNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return wire.CompactText(raw)
}

// errorText reads an error member: a string, or an object with message.
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || wire.IsNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return nonEmpty(o.Message, o.Content)
	}
	return ""
}

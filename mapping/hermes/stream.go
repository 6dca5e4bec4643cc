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
	SessionID    string          `json:"session_id"`
	RunID        string          `json:"run_id"`
	Seq          int64           `json:"seq"`
	MessageID    string          `json:"message_id"`
	Delta        string          `json:"delta"`
	ToolName     string          `json:"tool_name"`
	ToolID       string          `json:"tool_call_id"`
	ClientTool   bool            `json:"client_tool"`
	Preview      string          `json:"preview"`
	Args         json.RawMessage `json:"args"`
	Result       json.RawMessage `json:"result"`
	Content      string          `json:"content"`
	Message      json.RawMessage `json:"message"`
	Error        json.RawMessage `json:"error"`
	Reason       string          `json:"reason"`
	Status       string          `json:"status"`
	FinishReason string          `json:"finish_reason"`
	Interrupt    bool            `json:"interrupted"`
	Usage        *struct {
		InputTokens     *int64 `json:"input_tokens"`
		OutputTokens    *int64 `json:"output_tokens"`
		TotalTokens     *int64 `json:"total_tokens"`
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"usage"`
	PendingSteer json.RawMessage `json:"pending_steer"`
}

// StatusInputRequired is the status member of the frame that ends a
// stream whose run waits for the client's tool results (a bridge's
// extension; Hermes' own agent runs its tools itself).
const StatusInputRequired = "input_required"

// StreamDecoder reads a Hermes session stream (wire -> hub). It keeps what
// it learnt of the run across bodies, so a stream that broke can go on
// with the body of a resume (Read) with no event twice. RunID, Seq and
// Cursor are safe to call from another goroutine while the stream is read
// (to stop the run upstream); the rest is not safe for concurrent use.
type StreamDecoder struct {
	r io.Reader

	mu    sync.Mutex
	runID string
	seq   int64

	final    *bridge.Final
	done     bool // the stream's end (done, or a final before EOF) was read
	sawText  bool
	index    int
	pending  map[string][]string // tool name -> the agent's started call ids, oldest first
	lastCall string
	lastID   string // the SSE id of the last frame read
	usage    bridge.Usage
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

// Cursor is the resume cursor after the last frame read: its SSE id, as
// an EventSource resumes (a bridge's frame id, "<run_id>:<event>" or
// "<run_id>:<event>.<k>"), else "<run_id>:<seq>" (hermes-webui's
// after_event_id); "" before a frame named the run.
func (d *StreamDecoder) Cursor() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lastID != "" {
		return d.lastID
	}
	if d.runID == "" {
		return ""
	}
	return bridge.EventID(d.runID, d.seq)
}

// Done reports whether the stream's end was read: the done frame, or a
// final frame before the body ended. A stream that ends before it broke.
func (d *StreamDecoder) Done() bool { return d.done }

// Prime makes the decoder go on with a run whose events (as this decoder
// yielded them, committed) are events, from the upstream run runID: a
// resume after a restart reads the frames after Cursor.
func (d *StreamDecoder) Prime(runID string, events []bridge.Event) {
	d.mu.Lock()
	d.runID = runID
	for _, ev := range events {
		if n, err := strconv.ParseInt(ev.UpstreamID, 10, 64); err == nil {
			d.seq = max(d.seq, n)
		} else if ev.UpstreamID != "" {
			d.lastID = ev.UpstreamID // the frame's SSE id
		}
	}
	d.mu.Unlock()
	cur := 0 // the step being resumed began after the run's last final
	for i, ev := range events {
		if ev.Kind == bridge.KindFinal {
			cur = i + 1
		}
	}
	results := map[string]bool{}
	for _, ev := range events[cur:] {
		if ev.Kind == bridge.KindToolResult && ev.ToolResult != nil {
			results[ev.ToolResult.CallID] = true
		}
	}
	for _, ev := range events[cur:] {
		switch ev.Kind {
		case bridge.KindTextDelta:
			d.sawText = true
		case bridge.KindToolCallDone:
			d.index++
			if tc := ev.ToolCall; tc != nil && ev.Source == bridge.SourceAgent && !results[tc.ID] {
				if d.pending == nil {
					d.pending = map[string][]string{}
				}
				d.pending[tc.Name] = append(d.pending[tc.Name], tc.ID)
				d.lastCall = tc.ID
			}
		case bridge.KindUsage:
			d.usage.Merge(ev.Usage)
		}
	}
}

// DecodeStream reads a Hermes session stream into events.
func DecodeStream(r io.Reader) bridge.Stream { return NewStreamDecoder(r).Events() }

// Events yields the stream's events: assistant text, _thinking progress
// as reasoning, tool.* as the agent's own tool calls and results (Source
// agent; a bridge upstream's client_tool calls as the model's, for the
// client to run), usage, and the final (run.completed, error as failed,
// the input_required status as waiting for tool results). The stream ends
// at done. Each event's UpstreamID is the frame's SSE id, or its seq when
// it has none.
func (d *StreamDecoder) Events() bridge.Stream { return d.Read(d.r) }

// Read yields the events of r's frames, going on from what the decoder has
// read before (Events is Read of the decoder's first body): a frame of the
// same run at or before the last seq read is skipped, so a resumed stream
// that repeats frames yields nothing twice.
func (d *StreamDecoder) Read(r io.Reader) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		sr := wire.NewSSEReader(r)
		if d.pending == nil {
			d.pending = map[string][]string{}
		}
		var id string // the SSE id of the frame being read
		emit := func(ev bridge.Event, p *framePayload) bool {
			ev.UpstreamID = id
			if id == "" {
				ev.UpstreamID = strconv.FormatInt(p.Seq, 10)
			}
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
					what := "is not a JSON object"
					if json.Valid(sse.Data) && wire.Kind(sse.Data) == '{' {
						what = "does not have the Hermes frame's shape (a field of the wrong type)"
					}
					yield(bridge.Event{}, bridge.Errorf(bridge.CodeUpstream, "hermes stream: frame %q %s", sse.Name, what))
					return
				}
			}
			d.mu.Lock()
			if p.RunID != "" && d.runID != "" && p.RunID != d.runID {
				d.mu.Unlock()
				yield(bridge.Event{}, bridge.Errorf(bridge.CodeUpstream, "hermes stream: a frame of run %s in the stream of run %s", p.RunID, d.runID))
				return
			}
			if p.Seq > 0 && p.Seq <= d.seq {
				d.mu.Unlock()
				continue // read before the stream was resumed
			}
			if p.RunID != "" {
				d.runID = p.RunID
			}
			if p.Seq > 0 {
				d.seq = p.Seq
			}
			// The frame's SSE id is the cursor when it names the run (a
			// bridge's frame id, hermes-webui's run_id:seq).
			id = ""
			if r, _, _, ok := bridge.ParseFrameID(sse.ID); ok && r == d.runID {
				id, d.lastID = sse.ID, sse.ID
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
				d.sawText = true
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
				src := bridge.SourceAgent
				if p.ClientTool {
					src = bridge.SourceModel // the client's to run: its result continues the run
				} else {
					d.pending[p.ToolName] = append(d.pending[p.ToolName], id)
					d.lastCall = id
				}
				tc := bridge.ToolCall{ID: id, Name: p.ToolName, Index: d.index}
				d.index++
				if !emit(bridge.Event{Kind: bridge.KindToolCallStarted, Source: src, Index: tc.Index, ToolCall: &bridge.ToolCall{ID: id, Name: tc.Name, Index: tc.Index}}, &p) {
					return
				}
				tc.Arguments = argsText(p.Args)
				if !emit(bridge.Event{Kind: bridge.KindToolCallDone, Source: src, Index: tc.Index, ToolCall: &tc}, &p) {
					return
				}
			case EventToolCompleted, EventToolFailed:
				id := p.ToolID
				if id == "" {
					if q := d.pending[p.ToolName]; len(q) > 0 {
						id, d.pending[p.ToolName] = q[0], q[1:]
					} else {
						id = d.lastCall
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
				if !d.sawText && p.Content != "" {
					d.sawText = true
					if !emit(bridge.Event{Kind: bridge.KindTextDelta, Text: p.Content}, &p) {
						return
					}
				}
				if !emit(bridge.Event{Kind: bridge.KindMessageDone}, &p) {
					return
				}
				if p.Interrupt {
					d.final = &bridge.Final{Status: bridge.StatusCancelled, Reason: "interrupted upstream"}
				}
			case EventRunCompleted, EventRunInterrupted:
				if p.Usage != nil {
					u := bridge.Usage{InputTokens: p.Usage.InputTokens, OutputTokens: p.Usage.OutputTokens,
						TotalTokens: p.Usage.TotalTokens, ReasoningTokens: p.Usage.ReasoningTokens}
					if !u.IsZero() {
						d.usage.Merge(&u)
						if !emit(bridge.Event{Kind: bridge.KindUsage, Usage: &u}, &p) {
							return
						}
					}
				}
				switch {
				case p.Status == StatusInputRequired:
					// A bridge upstream's run waits for the client's tool
					// results: the same upstream run goes on with them.
					d.final = &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}
				case sse.Name == EventRunInterrupted:
					d.final = &bridge.Final{Status: bridge.StatusInterrupted, Reason: nonEmpty(p.Reason, "interrupted upstream")}
				case d.final == nil || d.final.Status != bridge.StatusCancelled:
					d.final = &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}
				}
			case EventError, EventRunFailed:
				msg := errorText(p.Error)
				if msg == "" {
					msg = errorText(p.Message)
				}
				if msg == "" {
					msg = "the hermes run failed"
				}
				d.final = &bridge.Final{Status: bridge.StatusFailed, Reason: msg,
					Error: &bridge.Error{Code: bridge.CodeUpstream, Message: msg, Dialect: Dialect}}
			case EventRunCancelled:
				d.final = &bridge.Final{Status: bridge.StatusCancelled, Reason: nonEmpty(p.Reason, "cancelled upstream")}
			case EventDone:
				d.done = true
				if d.final != nil {
					f := *d.final
					if !d.usage.IsZero() {
						u := d.usage
						f.Usage = &u
					}
					emit(bridge.Event{Kind: bridge.KindFinal, Final: &f}, &p)
				}
				return
			}
		}
		if d.final != nil { // a server that closed without done
			d.done = true
			yield(bridge.Event{Kind: bridge.KindFinal, Final: d.final}, nil)
		}
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// argsText is a JSON string's value, or other JSON as its text; "" for
// none or null.
func argsText(raw json.RawMessage) string {
	if s, ok := stringOrNull(raw); ok {
		return s
	}
	return wire.CompactText(raw)
}

// errorText reads an error member: a string, or an object with message.
func errorText(raw json.RawMessage) string {
	if s, ok := stringOrNull(raw); ok {
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

// stringOrNull is raw's value when it is a JSON string, "" when it is
// null or nothing; ok is false for anything else.
func stringOrNull(raw json.RawMessage) (s string, ok bool) {
	if len(raw) == 0 || wire.IsNull(raw) {
		return "", true
	}
	return s, json.Unmarshal(raw, &s) == nil
}

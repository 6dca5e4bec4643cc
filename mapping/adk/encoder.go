package adk

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// StreamOptions configure a StreamEncoder.
type StreamOptions struct {
	// Author is the agent's name on the events it wrote (the app name).
	Author string
	// Streaming writes a partial event for each text and thought delta.
	Streaming bool
}

// StreamEncoder turns the hub events of one run into ADK events: a complete
// event per model step (its text, thought and function calls), a
// function-response event per tool result, state deltas, and an errorCode
// event for a run that did not complete. It is not safe for concurrent
// use.
type StreamEncoder struct {
	opt      StreamOptions
	parts    []Part
	calls    []string // ids of the pending calls
	usage    *UsageMetadata
	lastTime time.Time
	runID    string
	done     bool
	dropped  []string
}

// NewStreamEncoder returns an encoder.
func NewStreamEncoder(opt StreamOptions) *StreamEncoder { return &StreamEncoder{opt: opt} }

// Done reports whether the run's final event has been encoded.
func (e *StreamEncoder) Done() bool { return e.done }

// Dropped lists what the encoder could not carry.
func (e *StreamEncoder) Dropped() []string { return e.dropped }

func (e *StreamEncoder) drop(what string) { e.dropped = wire.AddDropped(e.dropped, what) }

func (e *StreamEncoder) event(ev *bridge.Event, id string) Event {
	return Event{ID: id, InvocationID: ev.RunID, Author: e.opt.Author, Timestamp: Time(ev.Time), LongRunningToolIDs: []string{}}
}

// Encode returns the ADK events ev adds, oldest first. Each has an id of
// its own, ev's: the last bridge.EventID, the ones before it (the complete
// event of a step that ev closes, before ev's own) bridge.FrameID. So
// every event is a resume cursor, and a partial event and the complete
// one after it never share an id.
func (e *StreamEncoder) Encode(ev *bridge.Event) []Event {
	if e.done {
		return nil
	}
	e.runID = ev.RunID
	out := e.encode(ev)
	if ev.RunID != "" {
		for i := range out {
			if i < len(out)-1 {
				out[i].ID = bridge.FrameID(ev.RunID, ev.Seq, i+1)
			} else {
				out[i].ID = ev.ID()
			}
		}
	}
	return out
}

func (e *StreamEncoder) encode(ev *bridge.Event) []Event {
	var out []Event
	add := func(o Event) { out = append(out, o) }
	constituent := func() { e.lastTime = ev.Time }
	switch ev.Kind {
	case bridge.KindMessageStarted:
		out = e.flush(out, "", nil)
	case bridge.KindTextDelta, bridge.KindReasoningDelta:
		if len(e.calls) > 0 {
			out = e.flush(out, "", nil)
		}
		thought := ev.Kind == bridge.KindReasoningDelta
		if ev.Text == "" && ev.Signature == "" {
			break
		}
		if n := len(e.parts); n > 0 && e.parts[n-1].FunctionCall == nil && e.parts[n-1].Thought == thought {
			e.parts[n-1].Text += ev.Text
			e.parts[n-1].ThoughtSignature += ev.Signature
		} else {
			e.parts = append(e.parts, Part{Text: ev.Text, Thought: thought, ThoughtSignature: ev.Signature})
		}
		constituent()
		if e.opt.Streaming && ev.Text != "" {
			p := e.event(ev, ev.ID())
			p.Partial = true
			p.Content = &Content{Role: "model", Parts: []Part{{Text: ev.Text, Thought: thought}}}
			add(p)
		}
	case bridge.KindMessageDone, bridge.KindToolCallStarted, bridge.KindToolCallDelta:
		if len(e.parts) > 0 {
			constituent()
		}
	case bridge.KindToolCallDone:
		if ev.ToolCall == nil {
			break
		}
		args := json.RawMessage(ev.ToolCall.Arguments)
		if strings.TrimSpace(ev.ToolCall.Arguments) == "" {
			args = json.RawMessage("{}")
		} else if !json.Valid(args) || wire.Kind(args) != '{' {
			e.drop("adk:functionCall.args_not_an_object")
			args = json.RawMessage("{}")
		} else {
			args = wire.Compact(args)
		}
		e.parts = append(e.parts, Part{FunctionCall: &FunctionCall{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, Args: args}})
		e.calls = append(e.calls, ev.ToolCall.ID)
		constituent()
	case bridge.KindUsage:
		if u := adkUsage(ev.Usage); u != nil {
			e.usage = u
			if len(e.parts) > 0 {
				constituent()
			}
		}
	case bridge.KindToolResult:
		out = e.flush(out, "", nil)
		if ev.ToolResult == nil {
			break
		}
		o := e.event(ev, ev.ID())
		tr := ev.ToolResult
		o.Content = &Content{Role: "user", Parts: []Part{{FunctionResponse: &FunctionResponse{ID: tr.CallID, Name: tr.Name, Response: resultObject(tr)}}}}
		add(o)
	case bridge.KindStateUpdate:
		out = e.flush(out, "", nil)
		if wire.Kind(ev.State) != '{' {
			break
		}
		o := e.event(ev, ev.ID())
		o.Actions.StateDelta = ev.State
		add(o)
	case bridge.KindArtifact:
		out = e.flush(out, "", nil)
		if ev.Artifact == nil {
			break
		}
		var parts []Part
		for _, p := range ev.Artifact.Parts {
			switch {
			case p.Type == bridge.PartText:
				parts = append(parts, Part{Text: p.Text})
			case p.Data != "":
				parts = append(parts, Part{InlineData: &Blob{MimeType: p.MediaType, Data: p.Data}})
			case p.URL != "":
				parts = append(parts, Part{FileData: &FileData{MimeType: p.MediaType, FileURI: p.URL}})
			case p.Type == bridge.PartData:
				parts = append(parts, Part{Text: string(p.JSON)})
			default:
				e.drop("adk:artifact_part:" + string(p.Type))
			}
		}
		if len(parts) > 0 {
			o := e.event(ev, ev.ID())
			o.Content = &Content{Role: "model", Parts: parts}
			add(o)
		}
	case bridge.KindUserMessage:
		out = e.flush(out, "", nil)
		if ev.Message == nil {
			break
		}
		o := UserEvent(ev.Message, ev.RunID, ev.ID())
		add(o)
	case bridge.KindError:
		out = e.flush(out, "", nil)
		if ev.Error != nil {
			o := e.event(ev, ev.ID())
			o.ErrorCode, o.ErrorMessage = errorCodeString(ev.Error), ev.Error.Message
			add(o)
		}
	case bridge.KindFinal:
		f := wire.FinalOf(ev.Final)
		var longRunning []string
		if f.Status == bridge.StatusInputRequired {
			longRunning = e.calls
		}
		out = e.flush(out, finishReason(f.StopReason), longRunning)
		e.done = true
		code, msg := "", ""
		switch f.Status {
		case bridge.StatusFailed:
			code, msg = "UNKNOWN_ERROR", f.Reason
			if f.Error != nil {
				code, msg = errorCodeString(f.Error), f.Error.Message
			}
		case bridge.StatusCancelled:
			code, msg = "CANCELLED", f.Reason
		case bridge.StatusInterrupted:
			code, msg = "INTERRUPTED", f.Reason
		}
		if code != "" {
			o := e.event(ev, ev.ID())
			o.ErrorCode, o.ErrorMessage = code, msg
			o.TurnComplete = true
			add(o)
		}
	}
	return out
}

// Pending returns the model step folded so far and not yet written as a
// complete event (its text, thoughts and function calls so far) as a
// partial event with id; false when there is none. The history of a
// running run ends with it: a client resuming from id gets the rest of
// the step, then the step's complete event.
func (e *StreamEncoder) Pending(id string) (Event, bool) {
	if len(e.parts) == 0 || e.done {
		return Event{}, false
	}
	return Event{ID: id, InvocationID: e.runID, Author: e.opt.Author, Timestamp: Time(e.lastTime), Partial: true,
		Content: &Content{Role: "model", Parts: slices.Clone(e.parts)}, LongRunningToolIDs: []string{}}, true
}

// flush returns out with the pending model step as one complete event.
func (e *StreamEncoder) flush(out []Event, finish string, longRunning []string) []Event {
	if len(e.parts) == 0 {
		if e.usage != nil && finish != "" {
			e.usage = nil
		}
		return out
	}
	o := Event{InvocationID: e.runID, Author: e.opt.Author, Timestamp: Time(e.lastTime),
		Content: &Content{Role: "model", Parts: e.parts}, TurnComplete: true, UsageMetadata: e.usage,
		FinishReason: finish, LongRunningToolIDs: []string{}}
	if len(longRunning) > 0 {
		o.LongRunningToolIDs = longRunning
	}
	e.parts, e.calls, e.usage = nil, nil, nil
	return append(out, o)
}

// UserEvent renders a user's transcript message as the ADK event the
// session holds for it.
func UserEvent(m *bridge.Message, runID, id string) Event {
	return InputEvent([]bridge.Message{*m}, runID, id)
}

// InputEvent renders the messages of one client input (a user's text, or
// the results of the client's tools as functionResponse parts) as the
// user event the session holds for it.
func InputEvent(msgs []bridge.Message, runID, id string) Event {
	c, _ := EncodeContent(msgs)
	var t time.Time
	if len(msgs) > 0 {
		t = msgs[0].Created
	}
	return Event{ID: id, InvocationID: runID, Author: "user", Timestamp: Time(t), Content: c, LongRunningToolIDs: []string{}}
}

// resultObject is the functionResponse.response of a tool result.
func resultObject(tr *bridge.ToolResult) json.RawMessage {
	for _, p := range tr.Content {
		if p.Type == bridge.PartData && wire.Kind(p.JSON) == '{' {
			return p.JSON
		}
	}
	var text strings.Builder
	for _, p := range tr.Content {
		switch p.Type {
		case bridge.PartData:
			text.Write(p.JSON)
		default:
			text.WriteString(p.Text)
		}
	}
	key := "result"
	if tr.IsError {
		key = "error"
	}
	o := wire.NewObj()
	o.Str(key, text.String())
	return o.End()
}

func adkUsage(u *bridge.Usage) *UsageMetadata {
	if u.IsZero() {
		return nil
	}
	m := &UsageMetadata{PromptTokenCount: u.InputTokens, CandidatesTokenCount: u.OutputTokens,
		ThoughtsTokenCount: u.ReasoningTokens, CachedContentTokenCount: u.CacheReadTokens, TotalTokenCount: u.TotalTokens}
	if m.TotalTokenCount == nil && u.InputTokens != nil && u.OutputTokens != nil {
		m.TotalTokenCount = bridge.Int64(u.Total()) // genai always reports the total
	}
	return m
}

// errorCodeString is the errorCode of an error event: the upstream's own
// code where it had one, else the HTTP status of the error's code.
func errorCodeString(e *bridge.Error) string {
	if e.UpstreamCode != "" {
		return e.UpstreamCode
	}
	return strconv.Itoa(Status(e.Code))
}

// AppendSSE appends one SSE frame carrying ev, with its id also in the
// SSE id field (for clients that resume with Last-Event-ID).
func AppendSSE(b []byte, ev *Event) ([]byte, error) {
	j, err := json.Marshal(ev)
	if err != nil {
		return b, err
	}
	if ev.ID != "" {
		b = append(b, "id: "...)
		b = append(b, ev.ID...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, j...)
	return append(b, "\n\n"...), nil
}

// Done is the frame that ends a bridge run_sse stream (the chatkit
// convention; ADK itself just closes the connection).
const Done = "data: [DONE]\n\n"

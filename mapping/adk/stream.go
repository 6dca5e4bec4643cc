package adk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// StreamDecoder turns the ADK events of one run into hub events. It is
// not safe for concurrent use.
type StreamDecoder struct {
	// InvocationID and SessionID are what the upstream named (the last
	// seen); LastEventID is the id of the last event read.
	InvocationID string
	LastEventID  string

	started  bool   // message_started emitted for the current step
	streamed string // text and thought text the partials of this step carried
	thought  string
	calls    int // tool calls of the run so far (their indices)
	answer   strings.Builder
	final    bool // the last event read was a final response
	finish   string
	usage    bridge.Usage
	done     bool
	// asked are the long-running function calls of the run (the client's
	// to answer, SourceModel); waiting says the run's last final response
	// is such a call: the run ends input_required, waiting for results.
	asked   []bridge.ToolCall
	waiting bool
}

// Asked returns the long-running calls the run asked the client to
// answer, in order.
func (d *StreamDecoder) Asked() []bridge.ToolCall { return d.asked }

// Done reports whether the decoder has produced its final event.
func (d *StreamDecoder) Done() bool { return d.done }

// Prime sets the decoder's state from the hub events decoded so far for
// this run (a resume after a restart, when the decoder that made them is
// gone), so the stream resumed after them repeats and doubles nothing.
// Events up to the run's last final event are ignored.
func (d *StreamDecoder) Prime(evs []bridge.Event) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == bridge.KindFinal {
			evs = evs[i+1:]
			break
		}
	}
	for _, ev := range evs {
		if ev.UpstreamID != "" {
			d.LastEventID = ev.UpstreamID
		}
		switch ev.Kind {
		case bridge.KindMessageStarted:
			d.started, d.streamed, d.thought = true, "", ""
			if ev.ResponseID != "" {
				d.InvocationID = ev.ResponseID
			}
		case bridge.KindTextDelta:
			d.streamed += ev.Text
			d.final = false
		case bridge.KindReasoningDelta:
			d.thought += ev.Text
			d.final = false
		case bridge.KindMessageDone:
			d.started, d.streamed, d.thought = false, "", ""
			d.final = true
		case bridge.KindToolCallDone:
			d.calls++
			d.final = false
			if ev.Source == bridge.SourceModel && ev.ToolCall != nil {
				d.asked = append(d.asked, *ev.ToolCall)
				d.waiting, d.final = true, true
			}
		case bridge.KindToolResult:
			d.final = false
		case bridge.KindUsage:
			d.usage.Merge(ev.Usage)
		}
	}
}

// Answered reports whether the last event read was a final response: a
// stream that closes now has ended well (ADK-JS closes it so).
func (d *StreamDecoder) Answered() bool { return d.final }

// Answer is the text of the run's last final response.
func (d *StreamDecoder) Answer() string { return d.answer.String() }

// DecodeData reads the data of one SSE frame of a run_sse stream: an
// Event, {"error": "..."} or [DONE].
func (d *StreamDecoder) DecodeData(data []byte) ([]bridge.Event, error) {
	if d.done {
		return nil, nil
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, nil
	}
	if string(data) == "[DONE]" {
		return []bridge.Event{d.End(true)}, nil
	}
	if err := wire.CheckDepth(data, 128); err != nil {
		return nil, bridge.Errorf(bridge.CodeUpstream, "adk stream: event nested too deep")
	}
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, bridge.Errorf(bridge.CodeUpstream, "adk stream: an event is not JSON: %s", wire.Truncate(string(data), 120))
	}
	if len(probe.Error) > 0 && !wire.IsNull(probe.Error) {
		msg := string(probe.Error)
		var s string
		if json.Unmarshal(probe.Error, &s) == nil {
			msg = s
		}
		d.done = true
		e := &bridge.Error{Code: bridge.CodeUpstream, Message: msg, Dialect: Dialect}
		return []bridge.Event{{Kind: bridge.KindFinal, Source: bridge.SourceAgent,
			Final: &bridge.Final{Status: bridge.StatusFailed, Reason: msg, Error: e}}}, nil
	}
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, bridge.Errorf(bridge.CodeUpstream, "adk stream: an event does not have the ADK Event shape: %s", wire.Truncate(string(data), 120))
	}
	return d.Decode(&ev), nil
}

// Decode turns one ADK event into hub events.
func (d *StreamDecoder) Decode(ev *Event) []bridge.Event {
	if d.done {
		return nil
	}
	var out []bridge.Event
	if ev.InvocationID != "" {
		d.InvocationID = ev.InvocationID
	}
	if ev.ID != "" {
		d.LastEventID = ev.ID
	}
	at := time.Time(ev.Timestamp)
	emit := func(e bridge.Event) {
		e.UpstreamID, e.Time = ev.ID, at
		out = append(out, e)
	}
	if u := hubUsage(ev.UsageMetadata); u != nil {
		d.usage.Merge(u)
	}
	if ev.FinishReason != "" {
		d.finish = ev.FinishReason
	}
	var parts []Part
	if ev.Content != nil {
		parts = ev.Content.Parts
	}
	start := func() {
		if !d.started {
			d.started = true
			emit(bridge.Event{Kind: bridge.KindMessageStarted, ResponseID: d.InvocationID})
		}
	}
	hasCall, hasResp := false, false
	if ev.Partial {
		for _, p := range parts {
			if p.Text == "" {
				continue
			}
			start()
			if p.Thought {
				d.thought += p.Text
				emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: p.Text, Signature: p.ThoughtSignature})
			} else {
				d.streamed += p.Text
				emit(bridge.Event{Kind: bridge.KindTextDelta, Text: p.Text})
			}
		}
	} else {
		var text, thought strings.Builder
		user := ev.Content != nil && ev.Content.Role == "user"
		for _, p := range parts {
			switch {
			case p.FunctionCall != nil:
				hasCall = true
			case p.FunctionResponse != nil:
				hasResp = true
			case user:
				// A user's message (a steer a bridge upstream took) is not
				// the agent's answer.
			case p.Thought:
				thought.WriteString(p.Text)
			default:
				text.WriteString(p.Text)
			}
		}
		// The complete event repeats what the partials carried: only the
		// rest is new.
		if rest := unstreamed(thought.String(), d.thought); rest != "" {
			start()
			emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: rest})
		}
		if rest := unstreamed(text.String(), d.streamed); rest != "" {
			start()
			emit(bridge.Event{Kind: bridge.KindTextDelta, Text: rest})
		}
		if d.started {
			emit(bridge.Event{Kind: bridge.KindMessageDone})
		}
		if ev.Content != nil && ev.Content.Role != "user" && ev.ErrorCode == "" {
			if !hasCall && !hasResp {
				d.answer.Reset()
				d.answer.WriteString(text.String())
			}
		}
		asks := false
		for _, p := range parts {
			switch {
			case p.FunctionCall != nil:
				fc := p.FunctionCall
				args := string(fc.Args)
				if args == "" {
					args = "{}"
				}
				// A long-running call is the client's to answer: the run
				// stops for its result (ADK's final response).
				src := bridge.SourceAgent
				if fc.ID != "" && slices.Contains(ev.LongRunningToolIDs, fc.ID) {
					src, asks = bridge.SourceModel, true
				}
				tc := bridge.ToolCall{ID: fc.ID, Name: fc.Name, Index: d.calls}
				emit(bridge.Event{Kind: bridge.KindToolCallStarted, Source: src, Index: d.calls, ToolCall: &tc})
				done := tc
				done.Arguments = args
				emit(bridge.Event{Kind: bridge.KindToolCallDone, Source: src, Index: d.calls, ToolCall: &done})
				if src == bridge.SourceModel {
					d.asked = append(d.asked, done)
				}
				d.calls++
			case p.FunctionResponse != nil:
				fr := p.FunctionResponse
				resp := fr.Response
				if len(resp) == 0 {
					resp = json.RawMessage("{}")
				}
				emit(bridge.Event{Kind: bridge.KindToolResult, Source: bridge.SourceAgent, ToolResult: &bridge.ToolResult{
					CallID: fr.ID, Name: fr.Name, Content: []bridge.Part{{Type: bridge.PartData, JSON: resp}}, IsError: hasErrorKey(resp)}})
			}
		}
		d.started, d.streamed, d.thought = false, "", ""
		switch {
		case asks:
			d.waiting = true
		case !hasCall && !hasResp && ev.Content != nil && ev.Content.Role != "user":
			d.waiting = false // an answer after the calls: the run went on
		}
	}
	if u := hubUsage(ev.UsageMetadata); u != nil {
		emit(bridge.Event{Kind: bridge.KindUsage, Usage: u})
	}
	if sd := ev.Actions.StateDelta; len(sd) > 0 && wire.Kind(sd) == '{' && string(wire.Compact(sd)) != "{}" {
		emit(bridge.Event{Kind: bridge.KindStateUpdate, Source: bridge.SourceAgent, State: wire.Compact(sd)})
	}
	if ev.ErrorCode != "" {
		d.done = true
		msg := ev.ErrorMessage
		if msg == "" {
			msg = "the agent failed with error code " + ev.ErrorCode
		}
		e := &bridge.Error{Code: errorCodeOf(ev.ErrorCode), Message: msg, Dialect: Dialect, UpstreamCode: ev.ErrorCode}
		f := &bridge.Final{Status: bridge.StatusFailed, Reason: msg, Error: e, StopReason: stopReason(ev.ErrorCode)}
		switch ev.ErrorCode {
		case "CANCELLED", "CANCELED": // the run was stopped (a bridge upstream says so)
			f = &bridge.Final{Status: bridge.StatusCancelled, Reason: msg}
		case "INTERRUPTED":
			f = &bridge.Final{Status: bridge.StatusInterrupted, Reason: msg}
		}
		emit(bridge.Event{Kind: bridge.KindFinal, Source: bridge.SourceAgent, Final: f})
		return out
	}
	if !ev.Partial && (ev.Content == nil || ev.Content.Role != "user" || hasResp) {
		d.final = !hasCall && !hasResp || len(ev.LongRunningToolIDs) > 0 || ev.Actions.SkipSummarization
	}
	return out
}

// unstreamed is the part of complete that the partials (streamed) did not
// carry: all of it when nothing streamed, the rest when the partials were
// its beginning, nothing when they diverged (the partials stand).
func unstreamed(complete, streamed string) string {
	if streamed == "" {
		return complete
	}
	if rest, ok := strings.CutPrefix(complete, streamed); ok {
		return rest
	}
	return ""
}

// End returns the run's final event at the end of the stream. done says
// the stream ended with [DONE]; without it, a stream that closed before a
// final response was broken: the run is interrupted, never completed.
func (d *StreamDecoder) End(done bool) bridge.Event {
	d.done = true
	f := &bridge.Final{Status: bridge.StatusCompleted, StopReason: stopReason(d.finish)}
	if f.StopReason == "" {
		f.StopReason = bridge.StopEndTurn
	}
	if !d.usage.IsZero() {
		u := d.usage
		f.Usage = &u
	}
	if !d.final && !done {
		f = &bridge.Final{Status: bridge.StatusInterrupted, Reason: "the ADK stream closed before the run's final response"}
	} else if d.waiting {
		// The run's last word is a long-running call: it waits for the
		// client's result.
		f.Status, f.StopReason = bridge.StatusInputRequired, bridge.StopToolUse
	}
	return bridge.Event{Kind: bridge.KindFinal, Source: bridge.SourceAgent, Final: f}
}

func hubUsage(u *UsageMetadata) *bridge.Usage {
	if u == nil {
		return nil
	}
	h := &bridge.Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount,
		ReasoningTokens: u.ThoughtsTokenCount, CacheReadTokens: u.CachedContentTokenCount, TotalTokens: u.TotalTokenCount}
	if h.IsZero() {
		return nil
	}
	return h
}

// stopReason maps a genai finish reason; none for another.
func stopReason(r string) bridge.StopReason { return stopReasons[r] }

// stopReasons are the genai finish reasons with a stop reason.
var stopReasons = map[string]bridge.StopReason{
	"STOP": bridge.StopEndTurn, "MAX_TOKENS": bridge.StopMaxTokens,
	"SAFETY": bridge.StopContentFilter, "RECITATION": bridge.StopContentFilter, "BLOCKLIST": bridge.StopContentFilter,
	"PROHIBITED_CONTENT": bridge.StopContentFilter, "SPII": bridge.StopContentFilter, "IMAGE_SAFETY": bridge.StopContentFilter,
}

// finishReason maps a stop reason to a genai finish reason.
func finishReason(s bridge.StopReason) string {
	switch s {
	case bridge.StopEndTurn, bridge.StopSequence, bridge.StopToolUse:
		return "STOP"
	case bridge.StopMaxTokens:
		return "MAX_TOKENS"
	case bridge.StopContentFilter, bridge.StopRefusal:
		return "SAFETY"
	}
	return ""
}

// errorCodeOf maps an event's errorCode: an HTTP status as text (ADK
// passes model API errors through so), else an upstream failure.
func errorCodeOf(code string) bridge.Code {
	if n, err := strconv.Atoi(code); err == nil {
		return codeOfStatus(n)
	}
	switch code {
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MAX_TOKENS", "MALFORMED_FUNCTION_CALL":
		return bridge.CodeUpstream
	case "CANCELLED", "CANCELED":
		return bridge.CodeCanceled
	}
	return bridge.CodeUpstream
}

// DecodeStream reads a run_sse stream. It ends with the run's final
// event (interrupted when the stream closed before the final response),
// or an error for a stream it cannot read (CodeUpstream).
func DecodeStream(r io.Reader) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		d := &StreamDecoder{}
		for ev, err := range d.Read(r) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
		if !d.Done() {
			yield(d.End(false), nil)
		}
	}
}

// Read decodes the frames of one run_sse connection. It stops at the
// run's final event or at the end of r, without ending the run there: a
// caller that resumes the run upstream reads the next connection with the
// same decoder, so nothing is repeated. A read error is yielded.
func (d *StreamDecoder) Read(r io.Reader) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		sse := wire.NewSSEReader(r)
		for !d.done {
			f, err := sse.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(bridge.Event{}, err)
				return
			}
			evs, err := d.DecodeData(f.Data)
			if err != nil {
				yield(bridge.Event{}, err)
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
}

// DecodeEvents reads the JSON array POST /run answers with: all the
// events of the run, then its final event.
func DecodeEvents(body []byte) ([]bridge.Event, error) {
	if err := wire.CheckDepth(body, 128); err != nil {
		return nil, bridge.Errorf(bridge.CodeUpstream, "adk /run: answer nested too deep")
	}
	var evs []Event
	if err := json.Unmarshal(body, &evs); err != nil {
		return nil, bridge.Errorf(bridge.CodeUpstream, "adk /run: the answer is not an array of ADK events")
	}
	d := &StreamDecoder{}
	var out []bridge.Event
	for i := range evs {
		out = append(out, d.Decode(&evs[i])...)
	}
	if !d.done {
		out = append(out, d.End(false))
	}
	return out, nil
}

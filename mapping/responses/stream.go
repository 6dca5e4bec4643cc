package responses

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// wireEvent is a stream event, as far as the decoder reads it.
type wireEvent struct {
	Type           string          `json:"type"`
	SequenceNumber *int64          `json:"sequence_number"`
	Response       *wireResponse   `json:"response"`
	OutputIndex    int             `json:"output_index"`
	ItemID         string          `json:"item_id"`
	SummaryIndex   int             `json:"summary_index"`
	ContentIndex   int             `json:"content_index"`
	Item           *wireItem       `json:"item"`
	Delta          string          `json:"delta"`
	Arguments      *string         `json:"arguments"`
	Error          json.RawMessage `json:"error"`
}

type wireResponse struct {
	ID                string          `json:"id"`
	Model             string          `json:"model"`
	Status            string          `json:"status"`
	Usage             *wireUsage      `json:"usage"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []wireItem `json:"output"`
}

type wireItem struct {
	Type             string  `json:"type"`
	ID               string  `json:"id"`
	CallID           string  `json:"call_id"`
	Name             string  `json:"name"`
	Arguments        *string `json:"arguments"`
	EncryptedContent string  `json:"encrypted_content"`
	Content          []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

type wireUsage struct {
	InputTokens         *int64             `json:"input_tokens"`
	OutputTokens        *int64             `json:"output_tokens"`
	TotalTokens         *int64             `json:"total_tokens"`
	InputTokensDetails  *wire.TokenDetails `json:"input_tokens_details"`
	OutputTokensDetails *wire.TokenDetails `json:"output_tokens_details"`
}

func (u *wireUsage) usage() *bridge.Usage {
	if u == nil {
		return nil
	}
	out := &bridge.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if d := u.InputTokensDetails; d != nil {
		out.CacheReadTokens, out.CacheWriteTokens = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	if out.IsZero() {
		return nil
	}
	return out
}

// DecodeStream reads an upstream's typed event stream into events
// (upstream frames -> events). It closes nothing; the caller owns r.
//
// Events, all with Source model and the upstream's sequence_number in
// UpstreamID: message_started at response.created (ResponseID the
// upstream's response id, Model its model); text_delta for
// response.output_text.delta (Refusal for response.refusal.delta);
// reasoning_delta for reasoning summary and reasoning text deltas (a blank
// line between two summary parts), and one more carrying a reasoning
// item's encrypted_content with the item's id in Opaque; tool_call_started
// when a function_call item is added (ID its call_id, Index the call's
// position among the response's calls), tool_call_delta per arguments
// delta, tool_call_done when the item is done; text a message item
// carries without deltas is sent at its done. At the terminal event:
// message_done, usage, then final: completed with stop reason end_turn,
// or input_required with tool_use when the model called functions, or
// stop reason max_tokens or content_filter for response.incomplete. A
// response.failed, an error event, invalid JSON or an end before the
// terminal event is an error (a *bridge.Error), after which nothing is
// yielded. A data: [DONE] ends the stream like its end.
func DecodeStream(r io.Reader) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		d := streamDecoder{Emitter: wire.NewEmitter(yield)}
		d.RunSSE(wire.NewSSEReader(r), true, &d)
	}
}

// DecodeMessages is DecodeStream for WebSocket mode, where each message is
// one event, the data of its SSE frame: next returns the messages in turn
// (io.EOF: the connection ended). It reads no message past the terminal
// event, so the connection can carry the next response.
func DecodeMessages(next func() ([]byte, error)) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		d := streamDecoder{Emitter: wire.NewEmitter(yield)}
		d.Run(func() (wire.SSEEvent, error) {
			b, err := next()
			return wire.SSEEvent{Data: b}, err
		}, false, &d)
	}
}

type callState struct {
	item   string // the upstream's item id
	index  int    // the hub tool-call index
	id     string
	name   string
	args   []byte
	deltas bool // arguments came in deltas
	done   bool
}

type streamDecoder struct {
	wire.Emitter
	fj       fastjson.Parser // the fast path's, reused
	started  bool
	finished bool
	seq      string // the sequence_number of the event being read

	calls    []*callState
	textSeen map[string]bool // message items that streamed text
	summary  map[string]int  // last summary_index with text, per reasoning item
}

// resetEvent empties what a fast path that gave up may have set.
func resetEvent(ev *wireEvent) *wireEvent {
	*ev = wireEvent{}
	return ev
}

// emit yields ev with the sequence number of the event being read.
func (d *streamDecoder) emit(ev bridge.Event) {
	ev.UpstreamID = d.seq
	d.Emit(ev)
}

// Frame implements wire.SSEFrames.
func (d *streamDecoder) Frame(ev wire.SSEEvent) bool {
	d.event(ev.Name, ev.Data)
	return d.finished
}

// End implements wire.SSEFrames.
func (d *streamDecoder) End() {
	if !d.finished {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream ended before its terminal event (response.completed)"))
	}
}

func (d *streamDecoder) event(name string, data []byte) {
	if err := wire.CheckDepth(data, wire.MaxDepth); err != nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: event nested too deep"))
		return
	}
	var ev wireEvent
	if !fastEvent(&d.fj, data, &ev) && (wire.Kind(data) != '{' || json.Unmarshal(data, resetEvent(&ev)) != nil) {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: invalid event: %s", wire.Truncate(string(data), 200)))
		return
	}
	d.seq = ""
	if ev.SequenceNumber != nil {
		d.seq = strconv.FormatInt(*ev.SequenceNumber, 10)
	}
	if ev.Type == "" {
		ev.Type = name
	}
	if ev.Type == "error" || name == "error" {
		d.Fail(streamError(data))
		return
	}
	if !d.started && ev.Type != "response.created" && ev.Type != "response.queued" && ev.Type != "response.in_progress" {
		d.start(nil) // a server that skipped response.created
	}
	switch ev.Type {
	case "response.created", "response.queued", "response.in_progress":
		d.start(ev.Response)
	case "response.output_item.added":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			d.callAdded(ev.Item)
		}
	case "response.output_text.delta":
		if ev.Delta != "" {
			d.seen(ev.ItemID)
			d.emit(bridge.Event{Kind: bridge.KindTextDelta, Text: ev.Delta})
		}
	case "response.refusal.delta":
		if ev.Delta != "" {
			d.seen(ev.ItemID)
			d.emit(bridge.Event{Kind: bridge.KindTextDelta, Text: ev.Delta, Refusal: true})
		}
	case "response.reasoning_summary_text.delta":
		if ev.Delta != "" {
			d.reasoning(ev.ItemID, ev.SummaryIndex, ev.Delta)
		}
	case "response.reasoning_text.delta":
		if ev.Delta != "" {
			d.reasoning(ev.ItemID, ev.ContentIndex, ev.Delta)
		}
	case "response.function_call_arguments.delta":
		if c := d.callByItem(ev.ItemID, ev.OutputIndex); c != nil && ev.Delta != "" {
			c.args = append(c.args, ev.Delta...)
			c.deltas = true
			d.emit(bridge.Event{Kind: bridge.KindToolCallDelta, Index: c.index,
				ToolCall: &bridge.ToolCall{Index: c.index, Arguments: ev.Delta}})
		}
	case "response.function_call_arguments.done":
		if c := d.callByItem(ev.ItemID, ev.OutputIndex); c != nil && ev.Arguments != nil && !c.deltas {
			c.args = append(c.args[:0], *ev.Arguments...)
		}
	case "response.output_item.done":
		if ev.Item != nil {
			d.itemDone(ev.Item)
		}
	case "response.completed", "response.incomplete":
		d.terminal(ev.Type, ev.Response)
	case "response.failed":
		var raw json.RawMessage
		if ev.Response != nil {
			raw = ev.Response.Error
		}
		d.Fail(decodeResponseError(raw))
	}
	// Built-in tool progress, annotations, audio and events added later
	// carry nothing the hub models.
}

func (d *streamDecoder) start(r *wireResponse) {
	if d.started {
		return
	}
	d.started = true
	ev := bridge.Event{Kind: bridge.KindMessageStarted}
	if r != nil {
		ev.ResponseID, ev.Model = r.ID, r.Model
	}
	d.emit(ev)
}

func (d *streamDecoder) seen(item string) {
	if d.textSeen == nil {
		d.textSeen = map[string]bool{}
	}
	d.textSeen[item] = true
}

// reasoning emits a reasoning delta; a new summary part of the same item
// starts after a blank line.
func (d *streamDecoder) reasoning(item string, index int, text string) {
	if d.summary == nil {
		d.summary = map[string]int{}
	}
	last, ok := d.summary[item]
	if ok && index != last {
		text = "\n\n" + text
	}
	d.summary[item] = index
	d.seen(item)
	d.emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: text})
}

func (d *streamDecoder) callAdded(it *wireItem) *callState {
	for _, c := range d.calls {
		if c.item != "" && c.item == it.ID {
			return c
		}
	}
	c := &callState{item: it.ID, index: len(d.calls), id: it.CallID, name: it.Name}
	d.calls = append(d.calls, c)
	d.emit(bridge.Event{Kind: bridge.KindToolCallStarted, Index: c.index,
		ToolCall: &bridge.ToolCall{ID: c.id, Name: c.name, Index: c.index}})
	if it.Arguments != nil && *it.Arguments != "" {
		c.args = append(c.args, *it.Arguments...)
		c.deltas = true
		d.emit(bridge.Event{Kind: bridge.KindToolCallDelta, Index: c.index,
			ToolCall: &bridge.ToolCall{Index: c.index, Arguments: *it.Arguments}})
	}
	return c
}

// callByItem finds a call by its item id; servers that leave item_id out
// name it by output index, which the decoder does not track: the last
// open call is taken.
func (d *streamDecoder) callByItem(id string, _ int) *callState {
	for i := len(d.calls) - 1; i >= 0; i-- {
		if c := d.calls[i]; (id != "" && c.item == id) || (id == "" && !c.done) {
			return c
		}
	}
	return nil
}

func (d *streamDecoder) itemDone(it *wireItem) {
	switch it.Type {
	case "function_call":
		c := d.callByItem(it.ID, 0)
		if c == nil || c.done {
			c = d.callAdded(it)
		}
		if c.done {
			return
		}
		c.done = true
		if c.id == "" {
			c.id = it.CallID
		}
		if c.name == "" {
			c.name = it.Name
		}
		args := string(c.args)
		if it.Arguments != nil {
			args = *it.Arguments // the complete text wins
		}
		d.emit(bridge.Event{Kind: bridge.KindToolCallDone, Index: c.index,
			ToolCall: &bridge.ToolCall{ID: c.id, Name: c.name, Index: c.index, Arguments: args}})
	case "message":
		if d.textSeen[it.ID] {
			return
		}
		for _, p := range it.Content { // text sent whole, without deltas
			switch {
			case p.Type == "output_text" && p.Text != "":
				d.emit(bridge.Event{Kind: bridge.KindTextDelta, Text: p.Text})
			case p.Type == "refusal" && p.Refusal != "":
				d.emit(bridge.Event{Kind: bridge.KindTextDelta, Text: p.Refusal, Refusal: true})
			}
		}
	case "reasoning":
		if !d.textSeen[it.ID] {
			for i, s := range it.Summary {
				if s.Text != "" {
					d.reasoning(it.ID, i, s.Text)
				}
			}
		}
		if it.EncryptedContent != "" {
			op := wire.NewObj()
			op.Str("id", it.ID)
			d.emit(bridge.Event{Kind: bridge.KindReasoningDelta, Encrypted: it.EncryptedContent,
				Opaque: &bridge.Opaque{Dialect: Dialect, Data: op.End()}})
		}
	}
}

func (d *streamDecoder) terminal(typ string, r *wireResponse) {
	// Calls the server never closed are complete now.
	for _, c := range d.calls {
		if !c.done {
			c.done = true
			d.emit(bridge.Event{Kind: bridge.KindToolCallDone, Index: c.index,
				ToolCall: &bridge.ToolCall{ID: c.id, Name: c.name, Index: c.index, Arguments: string(c.args)}})
		}
	}
	d.emit(bridge.Event{Kind: bridge.KindMessageDone})
	f := &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}
	if len(d.calls) > 0 {
		f.Status, f.StopReason = bridge.StatusInputRequired, bridge.StopToolUse
	}
	if typ == "response.incomplete" {
		f.Status, f.StopReason = bridge.StatusCompleted, bridge.StopMaxTokens
		if r != nil && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
			f.StopReason = bridge.StopContentFilter
		}
	}
	if r != nil {
		if u := r.Usage.usage(); u != nil {
			d.emit(bridge.Event{Kind: bridge.KindUsage, Usage: u})
			f.Usage = u
		}
	}
	d.finished = true
	d.emit(bridge.Event{Kind: bridge.KindFinal, Final: f})
}

// streamError is the error of an in-stream error event: the flat
// {code,message,param} the SDKs type, or an {"error":{...}} envelope.
func streamError(data []byte) *bridge.Error { return DecodeError(0, data) }

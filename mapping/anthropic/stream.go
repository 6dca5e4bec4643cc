package anthropic

import (
	"encoding/json"
	"io"

	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// wireEvent is one streaming event, as far as the decoder reads it.
type wireEvent struct {
	Type         string          `json:"type"`
	Message      *wireMessage    `json:"message"`
	Index        *int            `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        *wireDelta      `json:"delta"`
	Usage        *wireUsage      `json:"usage"`
}

type wireMessage struct {
	ID    string     `json:"id"`
	Model string     `json:"model"`
	Usage *wireUsage `json:"usage"`
}

type wireUsage struct {
	InputTokens         *int64 `json:"input_tokens"`
	OutputTokens        *int64 `json:"output_tokens"`
	CacheCreationTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadTokens     *int64 `json:"cache_read_input_tokens"`
}

// wireBlock is a content block as content_block_start carries it.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// wireDelta is the delta of a content_block_delta or of a message_delta.
type wireDelta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text"`
	PartialJSON string  `json:"partial_json"`
	Thinking    string  `json:"thinking"`
	Signature   string  `json:"signature"`
	StopReason  *string `json:"stop_reason"`
}

// stopReasons maps stop_reason values to stop reasons; an unknown value is
// kept as it is.
var stopReasons = map[string]bridge.StopReason{
	"end_turn":                      bridge.StopEndTurn,
	"max_tokens":                    bridge.StopMaxTokens,
	"model_context_window_exceeded": bridge.StopMaxTokens,
	"stop_sequence":                 bridge.StopSequence,
	"tool_use":                      bridge.StopToolUse,
	"pause_turn":                    bridge.StopPause,
	"refusal":                       bridge.StopRefusal,
}

// DecodeStream reads an upstream's Messages SSE stream into events
// (upstream frames -> events). It closes nothing; the caller owns r. The
// event's name is taken from data.type (the event: line is only a copy).
//
// Events, all with Source model: usage (input and cache counts, when
// message_start reports them) then message_started (message id and model)
// at message_start; text_delta per text_delta; reasoning_delta per
// thinking_delta (Text) and signature_delta (Signature), and one with
// Encrypted for a redacted_thinking block; tool_call_started at a tool_use
// block's start (Index counts the message's tool_use blocks from 0),
// tool_call_delta per non-empty input_json_delta, tool_call_done at its
// stop (Arguments the concatenated fragments, "{}" for none); usage at
// message_delta; message_done and the final at message_stop. Blocks of
// server tools (server_tool_use, web_search_tool_result, ...) are passed as
// an artifact of Source agent holding the whole block as an anthropic
// opaque part. Citations are not carried. ping and unknown events are
// ignored. An error event, invalid JSON, or an end before message_stop (and
// before any stop_reason) is an error (a *bridge.Error), after which
// nothing is yielded.
func DecodeStream(r io.Reader) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		d := streamDecoder{Emitter: wire.NewEmitter(yield)}
		d.RunSSE(wire.NewSSEReader(r), false, &d)
	}
}

// blockState is one content block being read.
type blockState struct {
	typ  string
	tool int    // tool-call index, for tool_use
	id   string // tool_use id
	name string
	args []byte
	raw  []byte // server tool blocks: the start block, input filled in at stop
	done bool
}

type streamDecoder struct {
	wire.Emitter
	fj       fastjson.Parser // the fast path's, reused
	started  bool
	finished bool
	stop     bridge.StopReason
	stopSeen bool
	wire     wireUsage // the latest value of each count the upstream sent
	usage    bridge.Usage
	blocks   map[int]*blockState
	order    []int // block indices in start order
	tools    int
}

// addUsage folds the counts u reports into the stream's and returns the
// hub usage they make now, nil when u reports nothing. Anthropic's counts
// are cumulative; the input count is only whole with the cache counts of
// the same or an earlier event, so it is computed from all of them.
func (d *streamDecoder) addUsage(u *wireUsage) *bridge.Usage {
	if u == nil {
		return nil
	}
	set := func(dst **int64, src *int64) bool {
		if src == nil {
			return false
		}
		v := *src
		*dst = &v
		return true
	}
	got := set(&d.wire.InputTokens, u.InputTokens)
	got = set(&d.wire.OutputTokens, u.OutputTokens) || got
	got = set(&d.wire.CacheReadTokens, u.CacheReadTokens) || got
	got = set(&d.wire.CacheCreationTokens, u.CacheCreationTokens) || got
	if !got {
		return nil
	}
	hub := d.wire.usage()
	if hub != nil {
		d.usage = *hub
	}
	return hub
}

func (d *streamDecoder) event(sev wire.SSEEvent) {
	if err := wire.CheckDepth(sev.Data, wire.MaxDepth); err != nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: event nested too deep"))
		return
	}
	var ev wireEvent
	if !fastEvent(&d.fj, sev.Data, &ev) && (wire.Kind(sev.Data) != '{' || json.Unmarshal(sev.Data, resetEvent(&ev)) != nil) {
		if sev.Name == "ping" {
			return
		}
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: invalid event: %s", wire.Truncate(string(sev.Data), 200)))
		return
	}
	typ := ev.Type
	if typ == "" {
		typ = sev.Name
	}
	switch typ {
	case "message_start":
		d.messageStart(&ev)
	case "content_block_start":
		d.blockStart(&ev)
	case "content_block_delta":
		d.blockDelta(&ev)
	case "content_block_stop":
		d.blockStop(&ev)
	case "message_delta":
		d.messageDelta(&ev)
	case "message_stop":
		d.messageStop()
	case "error":
		d.Fail(DecodeError(0, sev.Data))
	}
	// ping and event types added later are ignored.
}

// resetEvent empties what a fast path that gave up may have set.
func resetEvent(ev *wireEvent) *wireEvent {
	*ev = wireEvent{}
	return ev
}

func (d *streamDecoder) start() {
	if !d.started {
		d.started = true
		d.Emit(bridge.Event{Kind: bridge.KindMessageStarted})
	}
}

func (d *streamDecoder) messageStart(ev *wireEvent) {
	if d.started {
		return
	}
	var id, model string
	if m := ev.Message; m != nil {
		id, model = m.ID, m.Model
		if u := d.addUsage(m.Usage); u != nil {
			// Before message_started, so a client's message_start can
			// carry the input count.
			d.Emit(bridge.Event{Kind: bridge.KindUsage, Usage: u})
		}
	}
	d.started = true
	d.Emit(bridge.Event{Kind: bridge.KindMessageStarted, ResponseID: id, Model: model})
}

func (d *streamDecoder) block(ev *wireEvent, what string) *blockState {
	if ev.Index == nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: %s without an index", what))
		return nil
	}
	b := d.blocks[*ev.Index]
	if b == nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: %s for block %d, which was not started", what, *ev.Index))
	}
	return b
}

func (d *streamDecoder) blockStart(ev *wireEvent) {
	d.start()
	if ev.Index == nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: content_block_start without an index"))
		return
	}
	var wb wireBlock
	if wire.Kind(ev.ContentBlock) != '{' || json.Unmarshal(ev.ContentBlock, &wb) != nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: content_block_start without a content block"))
		return
	}
	if d.blocks == nil {
		d.blocks = make(map[int]*blockState, 4)
	}
	if old := d.blocks[*ev.Index]; old != nil && !old.done {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: block %d started twice", *ev.Index))
		return
	}
	b := &blockState{typ: wb.Type}
	d.blocks[*ev.Index] = b
	d.order = append(d.order, *ev.Index)
	switch wb.Type {
	case "text":
		if wb.Text != "" {
			d.Emit(bridge.Event{Kind: bridge.KindTextDelta, Text: wb.Text})
		}
	case "thinking":
		if wb.Thinking != "" || wb.Signature != "" {
			d.Emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: wb.Thinking, Signature: wb.Signature})
		}
	case "redacted_thinking":
		d.Emit(bridge.Event{Kind: bridge.KindReasoningDelta, Encrypted: wb.Data})
	case "tool_use":
		if wb.ID == "" || wb.Name == "" {
			d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: tool_use block %d without an id or a name", *ev.Index))
			return
		}
		b.tool, b.id, b.name = d.tools, wb.ID, wb.Name
		d.tools++
		d.Emit(bridge.Event{Kind: bridge.KindToolCallStarted, Index: b.tool,
			ToolCall: &bridge.ToolCall{ID: b.id, Name: b.name, Index: b.tool}})
		// A server that sends the whole input at the start (not {}).
		if in := wire.Compact(wb.Input); wire.Kind(in) == '{' && string(in) != "{}" {
			b.args = append(b.args, in...)
			d.Emit(bridge.Event{Kind: bridge.KindToolCallDelta, Index: b.tool,
				ToolCall: &bridge.ToolCall{Index: b.tool, Arguments: string(in)}})
		}
	default:
		// A server tool's block, or a block kind added later: passed whole.
		b.raw = wire.Compact(ev.ContentBlock)
	}
}

func (d *streamDecoder) blockDelta(ev *wireEvent) {
	b := d.block(ev, "content_block_delta")
	if b == nil {
		return
	}
	wd := ev.Delta
	if wd == nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: content_block_delta without a delta"))
		return
	}
	switch wd.Type {
	case "text_delta":
		if wd.Text != "" {
			d.Emit(bridge.Event{Kind: bridge.KindTextDelta, Text: wd.Text})
		}
	case "thinking_delta":
		if wd.Thinking != "" {
			d.Emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: wd.Thinking})
		}
	case "signature_delta":
		if wd.Signature != "" {
			d.Emit(bridge.Event{Kind: bridge.KindReasoningDelta, Signature: wd.Signature})
		}
	case "input_json_delta":
		if wd.PartialJSON == "" {
			return
		}
		b.args = append(b.args, wd.PartialJSON...)
		if b.typ == "tool_use" {
			d.Emit(bridge.Event{Kind: bridge.KindToolCallDelta, Index: b.tool,
				ToolCall: &bridge.ToolCall{Index: b.tool, Arguments: wd.PartialJSON}})
		}
	}
	// citations_delta and delta types added later are not carried.
}

func (d *streamDecoder) blockStop(ev *wireEvent) {
	b := d.block(ev, "content_block_stop")
	if b == nil || b.done {
		return
	}
	b.done = true
	switch {
	case b.typ == "tool_use":
		args := string(b.args)
		if args == "" {
			args = "{}"
		}
		// The input_json_deltas make one JSON object; anything else (a
		// delta lost, garbage) is the upstream's fault, not a tool call.
		if len(b.args) > 0 && (wire.Kind(b.args) != '{' || !json.Valid(b.args)) {
			d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: tool_use %s input is not a JSON object: %s", b.id, wire.Truncate(args, 200)))
			return
		}
		d.Emit(bridge.Event{Kind: bridge.KindToolCallDone, Index: b.tool,
			ToolCall: &bridge.ToolCall{ID: b.id, Name: b.name, Index: b.tool, Arguments: args}})
	case b.raw != nil:
		raw := b.raw
		if len(b.args) > 0 {
			if o, err := wire.AsObject(raw, ""); err == nil && json.Valid(b.args) {
				o["input"] = b.args
				keys := wire.SortedKeys(o)
				raw = wire.RawObject(o, keys)
			}
		}
		d.Emit(bridge.Event{Kind: bridge.KindArtifact, Source: bridge.SourceAgent, Artifact: &bridge.Artifact{
			Parts: []bridge.Part{{Type: bridge.PartOpaque, Opaque: &bridge.Opaque{Dialect: Dialect, Data: raw}}}}})
	}
}

func (d *streamDecoder) messageDelta(ev *wireEvent) {
	d.start()
	md := ev.Delta
	if md == nil {
		md = &wireDelta{}
	}
	if md.StopReason != nil && *md.StopReason != "" {
		d.stopSeen = true
		if s, ok := stopReasons[*md.StopReason]; ok {
			d.stop = s
		} else {
			d.stop = bridge.StopReason(*md.StopReason)
		}
	}
	if u := d.addUsage(ev.Usage); u != nil {
		d.Emit(bridge.Event{Kind: bridge.KindUsage, Usage: u})
	}
}

func (d *streamDecoder) messageStop() {
	d.start()
	d.finished = true
	// Tool blocks a server left open end here, complete or not.
	for _, i := range d.order {
		if b := d.blocks[i]; b != nil && !b.done {
			d.blockStop(&wireEvent{Index: &i})
		}
	}
	d.Emit(bridge.Event{Kind: bridge.KindMessageDone})
	f := &bridge.Final{Status: bridge.StatusCompleted, StopReason: d.stop}
	if d.stop == bridge.StopToolUse {
		f.Status = bridge.StatusInputRequired
	}
	if f.StopReason == "" {
		f.StopReason = bridge.StopEndTurn
	}
	if !d.usage.IsZero() {
		u := d.usage
		f.Usage = &u
	}
	d.Emit(bridge.Event{Kind: bridge.KindFinal, Final: f})
}

// end handles EOF: a stream that said why it stopped but lost its
// message_stop still ends; any other early end is an error.
// Frame implements wire.SSEFrames.
func (d *streamDecoder) Frame(ev wire.SSEEvent) bool {
	d.event(ev)
	return d.finished
}

// End implements wire.SSEFrames.
func (d *streamDecoder) End() {
	if d.finished {
		return
	}
	if d.stopSeen {
		d.messageStop()
		return
	}
	d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream ended before message_stop"))
}

// usage converts u into hub usage (see the package comment); nil when
// every value is null.
func (u *wireUsage) usage() *bridge.Usage {
	if u == nil {
		return nil
	}
	out := &bridge.Usage{
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens,
		CacheWriteTokens: u.CacheCreationTokens,
	}
	if u.InputTokens != nil {
		n := *u.InputTokens
		if u.CacheReadTokens != nil {
			n += *u.CacheReadTokens
		}
		if u.CacheCreationTokens != nil {
			n += *u.CacheCreationTokens
		}
		out.InputTokens = &n
	}
	if out.IsZero() {
		return nil
	}
	return out
}

package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"

	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// The wire shape of a chat.completion.chunk, as far as the decoder reads it.
type wireChunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Content          *string            `json:"content"`
	Refusal          *string            `json:"refusal"`
	ReasoningContent *string            `json:"reasoning_content"`
	Reasoning        json.RawMessage    `json:"reasoning"` // OpenRouter and others; a string when it is text
	ToolCalls        []wireToolCallPart `json:"tool_calls"`
	FunctionCall     *wireFunction      `json:"function_call"` // legacy
}

type wireToolCallPart struct {
	Index    *int         `json:"index"`
	ID       string       `json:"id"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type wireUsage struct {
	PromptTokens            *int64             `json:"prompt_tokens"`
	CompletionTokens        *int64             `json:"completion_tokens"`
	TotalTokens             *int64             `json:"total_tokens"`
	PromptCacheHit          *int64             `json:"prompt_cache_hit_tokens"` // DeepSeek
	PromptTokensDetails     *wire.TokenDetails `json:"prompt_tokens_details"`
	CompletionTokensDetails *wire.TokenDetails `json:"completion_tokens_details"`
}

// usage converts u; nil when every value is null.
func (u *wireUsage) usage() *bridge.Usage {
	if u == nil {
		return nil
	}
	out := &bridge.Usage{
		InputTokens:  u.PromptTokens,
		OutputTokens: u.CompletionTokens,
		TotalTokens:  u.TotalTokens,
	}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
		out.CacheWriteTokens = d.CacheWriteTokens
	}
	if out.CacheReadTokens == nil {
		out.CacheReadTokens = u.PromptCacheHit
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	if out.IsZero() {
		return nil
	}
	return out
}

// stopReasons maps finish_reason values to stop reasons.
var stopReasons = map[string]bridge.StopReason{
	"stop":           bridge.StopEndTurn,
	"length":         bridge.StopMaxTokens,
	"tool_calls":     bridge.StopToolUse,
	"function_call":  bridge.StopToolUse,
	"content_filter": bridge.StopContentFilter,
}

// DecodeStream reads an upstream's SSE stream of chat.completion.chunk
// objects into events (upstream frames -> events). It closes nothing; the
// caller owns r.
//
// Events, all with Source model: message_started on the first chunk (with
// the chunk's id and model), text_delta (Refusal for delta.refusal),
// reasoning_delta (delta.reasoning_content or delta.reasoning),
// tool_call_started when a tool-call index first appears, tool_call_delta
// per non-empty argument fragment, tool_call_done per call and
// message_done at the finish_reason, usage whenever a chunk reports one, and
// last final, at data: [DONE] or at EOF after a finish_reason. Only choice 0
// is read. An in-stream error object, an unknown finish_reason, invalid JSON
// or an end before any finish_reason is an error (a *bridge.Error), after
// which nothing is yielded.
func DecodeStream(r io.Reader) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		d := streamDecoder{Emitter: wire.NewEmitter(yield)}
		d.RunSSE(wire.NewSSEReader(r), true, &d)
	}
}

type toolState struct {
	index    int
	id, name string
	args     []byte
}

type streamDecoder struct {
	wire.Emitter
	started  bool
	finished bool
	stop     bridge.StopReason
	usage    bridge.Usage
	calls    []*toolState
	fj       fastjson.Parser // fastChunk's, reused chunk to chunk
}

// Frame implements wire.SSEFrames: an error event fails the stream, any
// other is a chunk. The stream goes on after finish_reason (a usage chunk
// may follow) to [DONE] or the end.
func (d *streamDecoder) Frame(ev wire.SSEEvent) bool {
	if ev.Name == "error" {
		d.Fail(streamError(ev.Data))
		return true
	}
	d.chunk(ev.Data)
	return false
}

// End implements wire.SSEFrames: it yields the final event, or the error
// of a stream that stopped early.
func (d *streamDecoder) End() {
	if !d.finished {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream ended before finish_reason"))
		return
	}
	f := &bridge.Final{Status: bridge.StatusCompleted, StopReason: d.stop}
	if d.stop == bridge.StopToolUse {
		f.Status = bridge.StatusInputRequired
	}
	if !d.usage.IsZero() {
		u := d.usage
		f.Usage = &u
	}
	d.Emit(bridge.Event{Kind: bridge.KindFinal, Final: f})
}

// streamError is the error of an in-stream error: an `event: error` SSE
// event or a chunk with a top-level "error". Its data is an
// {"error":{...}} envelope or the error object itself; with no HTTP status
// the code comes from the error's numeric code or its type.
func streamError(data []byte) *bridge.Error { return DecodeError(0, data) }

func (d *streamDecoder) chunk(data []byte) {
	if err := wire.CheckDepth(data, wire.MaxDepth); err != nil {
		d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: chunk nested too deep"))
		return
	}
	var c wireChunk
	if !fastChunk(&d.fj, data, &c) {
		c = wireChunk{}
		if err := json.Unmarshal(data, &c); err != nil || wire.Kind(data) != '{' {
			d.Fail(bridge.Errorf(bridge.CodeUpstream, "upstream stream: invalid chunk: %s", wire.Truncate(string(data), 200)))
			return
		}
	}
	if truthy(c.Error) {
		d.Fail(streamError(data))
		return
	}
	if !d.started {
		d.started = true
		d.Emit(bridge.Event{Kind: bridge.KindMessageStarted, ResponseID: c.ID, Model: c.Model})
	}
	for i := range c.Choices {
		if c.Choices[i].Index == 0 {
			d.choice(&c.Choices[i])
			break
		}
	}
	if u := c.Usage.usage(); u != nil {
		d.usage.Merge(u)
		d.Emit(bridge.Event{Kind: bridge.KindUsage, Usage: u})
	}
}

// truthy reports whether a JSON value is present and not null, false, 0 or
// "" (the official SDKs treat a truthy top-level "error" as an error).
func truthy(raw json.RawMessage) bool {
	switch s := string(bytes.TrimSpace(raw)); s {
	case "", "null", "false", "0", `""`:
		return false
	}
	return true
}

func (d *streamDecoder) choice(ch *wireChoice) {
	delta := &ch.Delta
	if r := delta.ReasoningContent; r != nil && *r != "" {
		d.Emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: *r})
	} else if wire.Kind(delta.Reasoning) == '"' {
		if r, _ := wire.AsString(delta.Reasoning, ""); r != "" {
			d.Emit(bridge.Event{Kind: bridge.KindReasoningDelta, Text: r})
		}
	}
	if c := delta.Content; c != nil && *c != "" {
		d.Emit(bridge.Event{Kind: bridge.KindTextDelta, Text: *c})
	}
	if r := delta.Refusal; r != nil && *r != "" {
		d.Emit(bridge.Event{Kind: bridge.KindTextDelta, Text: *r, Refusal: true})
	}
	for i := range delta.ToolCalls {
		tc := &delta.ToolCalls[i]
		d.toolFragment(tc.Index, tc.ID, &tc.Function)
	}
	if fc := delta.FunctionCall; fc != nil {
		zero := 0
		d.toolFragment(&zero, "", fc)
	}
	if fr := ch.FinishReason; fr != nil && *fr != "" && !d.finished {
		stop, ok := stopReasons[*fr]
		if !ok {
			d.Fail(bridge.Errorf(bridge.CodeUpstream, "unknown finish_reason %q", *fr))
			return
		}
		d.finish(stop)
	}
}

func (d *streamDecoder) toolFragment(index *int, id string, fn *wireFunction) {
	var st *toolState
	if index != nil {
		for _, c := range d.calls {
			if c.index == *index {
				st = c
				break
			}
		}
	} else if len(d.calls) > 0 && (id == "" || id == d.calls[len(d.calls)-1].id) {
		// No index (some servers omit it): a fragment without a new id
		// continues the last call.
		st = d.calls[len(d.calls)-1]
	}
	if st == nil {
		idx := len(d.calls)
		if index != nil {
			idx = *index
		}
		st = &toolState{index: idx, id: id, name: fn.Name}
		d.calls = append(d.calls, st)
		d.Emit(bridge.Event{Kind: bridge.KindToolCallStarted, Index: idx,
			ToolCall: &bridge.ToolCall{ID: id, Name: fn.Name, Index: idx}})
	} else {
		if st.id == "" {
			st.id = id
		}
		if st.name == "" {
			st.name = fn.Name
		}
	}
	var frag string
	switch wire.Kind(fn.Arguments) {
	case '"':
		frag, _ = wire.AsString(fn.Arguments, "")
	case '{', '[':
		frag = wire.CompactText(fn.Arguments)
	}
	if frag != "" {
		st.args = append(st.args, frag...)
		d.Emit(bridge.Event{Kind: bridge.KindToolCallDelta, Index: st.index,
			ToolCall: &bridge.ToolCall{Index: st.index, Arguments: frag}})
	}
}

func (d *streamDecoder) finish(stop bridge.StopReason) {
	d.finished = true
	d.stop = stop
	calls := slices.Clone(d.calls)
	slices.SortStableFunc(calls, func(a, b *toolState) int { return a.index - b.index })
	for _, c := range calls {
		d.Emit(bridge.Event{Kind: bridge.KindToolCallDone, Index: c.index,
			ToolCall: &bridge.ToolCall{ID: c.id, Name: c.name, Index: c.index, Arguments: string(c.args)}})
	}
	d.Emit(bridge.Event{Kind: bridge.KindMessageDone})
}

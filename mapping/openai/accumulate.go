package openai

import (
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/oaierror"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Accumulator folds a run's events into one non-streaming chat.completion
// object, for a client that did not ask for a stream. It is not safe for
// concurrent use.
type Accumulator struct {
	opt       StreamOptions
	content   strings.Builder
	refusal   strings.Builder
	reasoning strings.Builder
	calls     []*accCall
	out       wire.Outcome
	dropped   []string
}

type accCall struct {
	hub     int
	id      string
	name    string
	args    strings.Builder
	done    bool // args hold the complete text from tool_call_done
	retired bool
}

// NewAccumulator folds events into a non-streaming chat.completion object.
func NewAccumulator(opt StreamOptions) *Accumulator { return &Accumulator{opt: opt} }

// Add folds one event in. Events after a final are ignored.
func (a *Accumulator) Add(ev *bridge.Event) {
	if ev == nil || a.out.Final != nil {
		return
	}
	if ev.Opaque != nil && ev.Opaque.Dialect != Dialect {
		a.dropped = wire.AddDropped(a.dropped, "opaque:"+wire.OpaqueDialect(ev.Opaque))
	}
	switch ev.Kind {
	case bridge.KindMessageStarted:
		if a.opt.ID == "" {
			a.opt.ID = ev.ResponseID
		}
		if a.opt.Model == "" {
			a.opt.Model = ev.Model
		}
	case bridge.KindTextDelta:
		if ev.Refusal {
			a.refusal.WriteString(ev.Text)
		} else {
			a.content.WriteString(ev.Text)
		}
	case bridge.KindReasoningDelta:
		if ev.Signature != "" {
			a.dropped = wire.AddDropped(a.dropped, "reasoning.signature")
		}
		if ev.Encrypted != "" {
			a.dropped = wire.AddDropped(a.dropped, "reasoning.encrypted")
		}
		a.reasoning.WriteString(ev.Text)
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta, bridge.KindToolCallDone:
		if ev.Source == bridge.SourceAgent {
			a.dropped = wire.AddDropped(a.dropped, "agent_tool_call")
			return
		}
		a.toolCall(ev)
	case bridge.KindUsage, bridge.KindError, bridge.KindFinal:
		a.out.Add(ev)
	case bridge.KindToolResult, bridge.KindArtifact, bridge.KindStateUpdate:
		a.dropped = wire.AddDropped(a.dropped, string(ev.Kind))
	}
}

func (a *Accumulator) toolCall(ev *bridge.Event) {
	tc := ev.ToolCall
	if tc == nil {
		return
	}
	var c *accCall
	for i := len(a.calls) - 1; i >= 0; i-- {
		if a.calls[i].hub == tc.Index && !a.calls[i].retired {
			c = a.calls[i]
			break
		}
	}
	if c != nil && ev.Kind == bridge.KindToolCallStarted && tc.ID != "" && c.id != "" && tc.ID != c.id {
		c.retired = true // the same index in a later model step
		c = nil
	}
	if c == nil {
		c = &accCall{hub: tc.Index}
		a.calls = append(a.calls, c)
	}
	if c.id == "" {
		c.id = tc.ID
	}
	if c.name == "" {
		c.name = tc.Name
	}
	switch ev.Kind {
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta:
		if !c.done {
			c.args.WriteString(tc.Arguments)
		}
	case bridge.KindToolCallDone:
		// The complete text wins over the fragments.
		c.args.Reset()
		c.args.WriteString(tc.Arguments)
		c.done = true
	}
}

// Dropped lists what the events held that a chat.completion cannot express
// (the same entries as StreamEncoder.Dropped).
func (a *Accumulator) Dropped() []string { return a.dropped }

// Response renders the chat.completion object. A run that did not succeed
// (a final failed, cancelled or interrupted, or no final at all) returns
// its *bridge.Error instead, for the caller to render with EncodeError.
func (a *Accumulator) Response() ([]byte, error) {
	if err := a.out.AnswerError(oaierror.FinalError); err != nil {
		return nil, err
	}
	reason, drop := finishReason(a.out.Final)
	if drop != "" {
		a.dropped = wire.AddDropped(a.dropped, drop)
	}

	msg := wire.NewObj()
	msg.Str("role", "assistant")
	if a.content.Len() > 0 {
		msg.Str("content", a.content.String())
	} else {
		msg.Raw("content", []byte("null"))
	}
	if a.refusal.Len() > 0 {
		msg.Str("refusal", a.refusal.String())
	} else {
		msg.Raw("refusal", []byte("null"))
	}
	if a.reasoning.Len() > 0 {
		msg.Str("reasoning_content", a.reasoning.String())
	}
	if len(a.calls) > 0 {
		msg.Array("tool_calls", len(a.calls), func(i int) []byte {
			c := a.calls[i]
			return toolCallObject(c.id, c.name, c.args.String()).End()
		})
	}

	choice := wire.NewObj()
	choice.Int("index", 0)
	choice.Raw("message", msg.End())
	choice.Raw("logprobs", []byte("null"))
	choice.Str("finish_reason", reason)

	w := wire.NewObj()
	w.Str("id", a.opt.ID)
	w.Str("object", "chat.completion")
	w.Int("created", a.opt.Created)
	w.Str("model", a.opt.Model)
	w.Key("choices")
	w.B = append(w.B, '[')
	w.B = append(w.B, choice.End()...)
	w.B = append(w.B, ']')
	w.Raw("usage", appendUsage(nil, &a.out.Usage))
	return w.End(), nil
}

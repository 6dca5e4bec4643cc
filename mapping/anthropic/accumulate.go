package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Accumulator folds a run's events into one Messages response object, for
// a client that did not ask for a stream. Its content blocks are the ones
// the stream would have carried, in the same order. It is not safe for
// concurrent use.
type Accumulator struct {
	opt     StreamOptions
	b       builder
	blocks  []*accBlock
	out     wire.Outcome
	dropped []string
}

type accBlock struct {
	typ       string
	text      strings.Builder // text, thinking, or input JSON
	signature strings.Builder
	id, name  string
	data      string // redacted_thinking
	raw       []byte
}

// NewAccumulator folds events into a non-streaming Messages response.
func NewAccumulator(opt StreamOptions) *Accumulator { return &Accumulator{opt: opt, b: newBuilder()} }

// Add folds one event in. Events after a final are ignored, except that a
// run continued after input_required adds its next turn's blocks.
func (a *Accumulator) Add(ev *bridge.Event) {
	if ev == nil {
		return
	}
	if a.out.Final != nil {
		if a.out.Final.Status != bridge.StatusInputRequired || ev.Kind == bridge.KindFinal {
			return
		}
		a.out.Final = nil
	}
	switch ev.Kind {
	case bridge.KindRunStarted, bridge.KindUserMessage:
	case bridge.KindMessageStarted:
		if a.opt.ID == "" {
			a.opt.ID = ev.ResponseID
		}
		if a.opt.Model == "" {
			a.opt.Model = ev.Model
		}
		a.apply(a.b.add(ev))
	case bridge.KindUsage, bridge.KindError:
		a.out.Add(ev)
	case bridge.KindFinal:
		a.out.Add(ev)
		a.apply(a.b.finish())
	default:
		a.apply(a.b.add(ev))
	}
}

func (a *Accumulator) apply(ops []op) {
	for i := range ops {
		o := &ops[i]
		switch o.kind {
		case opStart:
			blk := &accBlock{typ: o.block, id: o.id, name: o.name}
			switch o.block {
			case blockRedacted:
				blk.data = o.text
			case blockRaw:
				blk.raw = o.raw
			}
			a.blocks = append(a.blocks, blk)
		case opDelta:
			if o.index < 0 || o.index >= len(a.blocks) {
				continue
			}
			blk := a.blocks[o.index]
			if o.delta == "signature_delta" {
				blk.signature.WriteString(o.text)
			} else {
				blk.text.WriteString(o.text)
			}
		}
	}
}

// Dropped lists what the events held that a Messages response cannot
// express (the same entries as StreamEncoder.Dropped).
func (a *Accumulator) Dropped() []string {
	out := append([]string(nil), a.dropped...)
	for _, d := range a.b.dropped {
		out = wire.AddDropped(out, d)
	}
	return out
}

// Response renders the message object. A run that did not succeed (a final
// failed, cancelled or interrupted, or no final at all) returns its
// *bridge.Error instead, for the caller to render with EncodeError.
func (a *Accumulator) Response() ([]byte, error) {
	if err := a.out.AnswerError(finalError); err != nil {
		return nil, err
	}
	reason, drop := stopReason(a.out.Final)
	if drop != "" {
		a.dropped = wire.AddDropped(a.dropped, drop)
	}
	w := wire.NewObj()
	w.Str("id", a.opt.ID)
	w.Str("type", "message")
	w.Str("role", "assistant")
	w.Str("model", a.opt.Model)
	w.Array("content", len(a.blocks), func(i int) []byte { return a.block(a.blocks[i]) })
	w.Str("stop_reason", reason)
	w.Raw("stop_sequence", []byte("null"))
	w.Raw("usage", appendUsage(nil, &a.out.Usage, true))
	return w.End(), nil
}

func (a *Accumulator) block(blk *accBlock) []byte {
	o := wire.NewObj()
	switch blk.typ {
	case blockText:
		o.Str("type", "text")
		o.Str("text", blk.text.String())
	case blockThinking:
		o.Str("type", "thinking")
		o.Str("thinking", blk.text.String())
		o.Str("signature", blk.signature.String())
	case blockRedacted:
		o.Str("type", "redacted_thinking")
		o.Str("data", blk.data)
	case blockToolUse:
		o.Str("type", "tool_use")
		o.Str("id", blk.id)
		o.Str("name", blk.name)
		in := []byte(strings.TrimSpace(blk.text.String()))
		switch {
		case len(in) == 0:
			o.Raw("input", []byte("{}"))
		case wire.Kind(in) == '{' && json.Valid(in):
			o.Raw("input", in)
		default:
			a.dropped = wire.AddDropped(a.dropped, "tool_use.input: not a JSON object")
			o.Raw("input", []byte("{}"))
		}
	default:
		return blk.raw
	}
	return o.End()
}

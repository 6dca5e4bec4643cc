package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
)

// Accumulator folds a run's events into one Messages response object, for
// a client that did not ask for a stream. Its content blocks are the ones
// the stream would have carried, in the same order. It is not safe for
// concurrent use.
type Accumulator struct {
	opt     StreamOptions
	b       builder
	blocks  []*accBlock
	usage   bridge.Usage
	final   *bridge.Final
	err     *bridge.Error // from an error event
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
	if a.final != nil {
		if a.final.Status != bridge.StatusInputRequired || ev.Kind == bridge.KindFinal {
			return
		}
		a.final = nil
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
	case bridge.KindUsage:
		a.usage.Merge(ev.Usage)
	case bridge.KindError:
		if a.err == nil {
			a.err = ev.Error
			if a.err == nil {
				a.err = &bridge.Error{Code: bridge.CodeInternal, Message: "internal error"}
			}
		}
	case bridge.KindFinal:
		f := ev.Final
		if f == nil {
			f = &bridge.Final{Status: bridge.StatusCompleted}
		}
		a.final = f
		a.usage.Merge(f.Usage)
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
		out = addDropped(out, d)
	}
	return out
}

// Response renders the message object. A run that did not succeed (a final
// failed, cancelled or interrupted, or no final at all) returns its
// *bridge.Error instead, for the caller to render with EncodeError.
func (a *Accumulator) Response() ([]byte, error) {
	if a.final == nil {
		if a.err != nil {
			return nil, a.err
		}
		return nil, bridge.Errorf(bridge.CodeInternal, "run ended without a final event")
	}
	if err := finalError(a.final); err != nil {
		if a.final.Status == bridge.StatusFailed && a.final.Error == nil && a.err != nil {
			return nil, a.err
		}
		return nil, err
	}
	reason, drop := stopReason(a.final)
	if drop != "" {
		a.dropped = addDropped(a.dropped, drop)
	}
	w := newObj()
	w.str("id", a.opt.ID)
	w.str("type", "message")
	w.str("role", "assistant")
	w.str("model", a.opt.Model)
	w.key("content")
	w.b = append(w.b, '[')
	for i, blk := range a.blocks {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, a.block(blk)...)
	}
	w.b = append(w.b, ']')
	w.str("stop_reason", reason)
	w.raw("stop_sequence", []byte("null"))
	w.raw("usage", appendUsage(nil, &a.usage, true))
	return w.end(), nil
}

func (a *Accumulator) block(blk *accBlock) []byte {
	o := newObj()
	switch blk.typ {
	case blockText:
		o.str("type", "text")
		o.str("text", blk.text.String())
	case blockThinking:
		o.str("type", "thinking")
		o.str("thinking", blk.text.String())
		o.str("signature", blk.signature.String())
	case blockRedacted:
		o.str("type", "redacted_thinking")
		o.str("data", blk.data)
	case blockToolUse:
		o.str("type", "tool_use")
		o.str("id", blk.id)
		o.str("name", blk.name)
		in := []byte(strings.TrimSpace(blk.text.String()))
		switch {
		case len(in) == 0:
			o.raw("input", []byte("{}"))
		case jsonKind(in) == '{' && json.Valid(in):
			o.raw("input", in)
		default:
			a.dropped = addDropped(a.dropped, "tool_use.input: not a JSON object")
			o.raw("input", []byte("{}"))
		}
	default:
		return blk.raw
	}
	return o.end()
}

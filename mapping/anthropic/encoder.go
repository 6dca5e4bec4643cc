package anthropic

import (
	"io"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// StreamOptions are the fixed fields of the message a StreamEncoder or an
// Accumulator renders.
type StreamOptions struct {
	ID    string // the message id ("msg_..."); empty: the upstream's, from message_started
	Model string // empty: the upstream's, from message_started
}

// StreamEncoder writes events as a client-facing Messages SSE stream
// (events -> client frames). Each frame is "id: <id>" (left out when the
// event has no RunID), "event: <type>" and "data: <json>" whose type
// equals the event line. All the frames one hub event makes are written in
// one Write call, so no client sees a frame split across reads. Each frame
// has an id of its own: the last of an event's frames its bridge.EventID,
// the ones before it bridge.FrameID (content_block_start before the first
// delta, message_delta before message_stop), so a resume from any of them
// (Last-Event-ID) starts right after it. A StreamEncoder is not safe for
// concurrent use.
//
// Frames: message_start at the first event that says something (with the
// input count when an upstream's usage came before it), then the content
// blocks the builder makes (see builder: no empty text block, thinking never
// inside text, tool_use blocks serialized, indices from 0), then at a
// successful final content_block_stop for the open block, message_delta
// (stop_reason, the final usage) and message_stop. A final that failed,
// was cancelled or was interrupted, and an error event, write an `error`
// frame instead ({"type":"error","error":{type,message}}, see EncodeError;
// cancelled is api_error, interrupted overloaded_error), after stopping the
// open block. run_started, message_done, usage and user_message write
// nothing themselves.
//
// A run that waited for tool results (final input_required) and was
// continued renders each model turn as its own message: events after such
// a final start a new message_start.
type StreamEncoder struct {
	w   io.Writer
	opt StreamOptions
	buf []byte // the frames of one event; reused
	ids wire.FrameIDs

	b        builder
	usage    bridge.Usage
	started  bool // message_start written
	finished bool // a final was handled
	waiting  bool // the final was input_required: a continuation may follow
	errSent  bool
	closed   bool
	err      error
	dropped  []string
}

// NewStreamEncoder writes events as a client-facing SSE stream
// (events -> client frames).
func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder {
	return &StreamEncoder{w: w, opt: opt, buf: make([]byte, 0, 1024), b: newBuilder()}
}

// Dropped lists what the events held that a Messages stream cannot express
// (each entry once): "tool_result", "state_update", "artifact",
// "agent_tool_call", "stop_reason:<reason>" and "opaque:<dialect>".
func (e *StreamEncoder) Dropped() []string {
	out := append([]string(nil), e.dropped...)
	for _, d := range e.b.dropped {
		out = wire.AddDropped(out, d)
	}
	return out
}

// Started reports whether message_start has been written, so the stream
// has begun and a ping may be sent.
func (e *StreamEncoder) Started() bool { return e.started && !e.finished }

// Encode writes the frames of one event. It returns the first write error,
// and every later call returns it again.
func (e *StreamEncoder) Encode(ev *bridge.Event) error {
	if e.err != nil {
		return e.err
	}
	if e.closed {
		return bridge.Errorf(bridge.CodeInternal, "anthropic: Encode after Close")
	}
	if ev == nil {
		return nil
	}
	if e.finished {
		if !e.waiting || ev.Kind == bridge.KindFinal || ev.Kind == bridge.KindError {
			return nil
		}
		e.next() // the run was continued: a new message
	}
	e.buf = e.buf[:0]
	switch ev.Kind {
	case bridge.KindRunStarted, bridge.KindUserMessage:
		return nil
	case bridge.KindUsage:
		e.usage.Merge(ev.Usage)
		return nil
	case bridge.KindMessageStarted:
		if e.opt.ID == "" {
			e.opt.ID = ev.ResponseID
		}
		if e.opt.Model == "" {
			e.opt.Model = ev.Model
		}
		if !e.started {
			e.messageStart(ev)
			return e.write()
		}
		e.frames(ev, e.b.add(ev))
		return e.write()
	case bridge.KindError:
		if e.errSent {
			return nil
		}
		if e.started {
			e.frames(ev, e.b.finish())
		}
		err := wire.ErrorOf(ev.Error)
		e.errorFrame(ev, err)
		return e.write()
	case bridge.KindFinal:
		return e.final(ev)
	}
	ops := e.b.add(ev)
	if len(ops) == 0 {
		return nil
	}
	e.messageStart(ev)
	e.frames(ev, ops)
	return e.write()
}

// next starts a new message after a final input_required.
func (e *StreamEncoder) next() {
	for _, d := range e.b.dropped {
		e.dropped = wire.AddDropped(e.dropped, d)
	}
	e.b = newBuilder()
	e.usage = bridge.Usage{}
	e.started, e.finished, e.waiting, e.errSent = false, false, false, false
}

// Ping writes a ping frame, when a message has started and not finished.
func (e *StreamEncoder) Ping() error {
	if e.err != nil || e.closed || !e.Started() {
		return e.err
	}
	e.buf = append(e.buf[:0], "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
	return e.write()
}

func (e *StreamEncoder) write() error {
	if len(e.buf) == 0 {
		return nil
	}
	e.buf = e.ids.Number(e.buf)
	if _, err := e.w.Write(e.buf); err != nil {
		e.err = err
		return err
	}
	return nil
}

// frameHead appends the id and event lines and "data: ".
func (e *StreamEncoder) frameHead(ev *bridge.Event, name string) {
	b := wire.AppendID(e.buf, ev.RunID, ev.Seq, 0)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	e.buf = b
}

func (e *StreamEncoder) frameEnd() { e.buf = append(e.buf, "\n\n"...) }

// messageStart appends message_start unless it was written.
func (e *StreamEncoder) messageStart(ev *bridge.Event) {
	if e.started {
		return
	}
	e.started = true
	e.frameHead(ev, "message_start")
	e.buf = append(e.buf, `{"type":"message_start","message":{"id":`...)
	e.buf = wire.AppendString(e.buf, e.opt.ID)
	e.buf = append(e.buf, `,"type":"message","role":"assistant","model":`...)
	e.buf = wire.AppendString(e.buf, e.opt.Model)
	e.buf = append(e.buf, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	e.buf = appendUsage(e.buf, &e.usage, true)
	e.buf = append(e.buf, "}}"...)
	e.frameEnd()
}

// frames appends the frames of ops.
func (e *StreamEncoder) frames(ev *bridge.Event, ops []op) {
	for i := range ops {
		o := &ops[i]
		switch o.kind {
		case opStart:
			e.frameHead(ev, "content_block_start")
			e.buf = append(e.buf, `{"type":"content_block_start","index":`...)
			e.buf = strconv.AppendInt(e.buf, int64(o.index), 10)
			e.buf = append(e.buf, `,"content_block":`...)
			e.buf = appendBlockStart(e.buf, o)
			e.buf = append(e.buf, '}')
		case opDelta:
			e.frameHead(ev, "content_block_delta")
			e.buf = append(e.buf, `{"type":"content_block_delta","index":`...)
			e.buf = strconv.AppendInt(e.buf, int64(o.index), 10)
			e.buf = append(e.buf, `,"delta":{"type":"`...)
			e.buf = append(e.buf, o.delta...)
			e.buf = append(e.buf, `",`...)
			switch o.delta {
			case "text_delta":
				e.buf = append(e.buf, `"text":`...)
			case "thinking_delta":
				e.buf = append(e.buf, `"thinking":`...)
			case "signature_delta":
				e.buf = append(e.buf, `"signature":`...)
			default:
				e.buf = append(e.buf, `"partial_json":`...)
			}
			e.buf = wire.AppendString(e.buf, o.text)
			e.buf = append(e.buf, "}}"...)
		case opStop:
			e.frameHead(ev, "content_block_stop")
			e.buf = append(e.buf, `{"type":"content_block_stop","index":`...)
			e.buf = strconv.AppendInt(e.buf, int64(o.index), 10)
			e.buf = append(e.buf, '}')
		}
		e.frameEnd()
	}
}

// appendBlockStart appends the initial content block of a start op.
func appendBlockStart(b []byte, o *op) []byte {
	switch o.block {
	case blockText:
		return append(b, `{"type":"text","text":""}`...)
	case blockThinking:
		return append(b, `{"type":"thinking","thinking":"","signature":""}`...)
	case blockRedacted:
		b = append(b, `{"type":"redacted_thinking","data":`...)
		b = wire.AppendString(b, o.text)
		return append(b, '}')
	case blockToolUse:
		b = append(b, `{"type":"tool_use","id":`...)
		b = wire.AppendString(b, o.id)
		b = append(b, `,"name":`...)
		b = wire.AppendString(b, o.name)
		return append(b, `,"input":{}}`...)
	}
	return append(b, o.raw...)
}

func (e *StreamEncoder) errorFrame(ev *bridge.Event, err *bridge.Error) {
	e.errSent = true
	_, body := EncodeError(err)
	e.frameHead(ev, "error")
	e.buf = append(e.buf, body...)
	e.frameEnd()
}

func (e *StreamEncoder) final(ev *bridge.Event) error {
	e.finished = true
	f := wire.FinalOf(ev.Final)
	e.usage.Merge(f.Usage)
	if err := finalError(f, nil); err != nil {
		if e.errSent {
			return nil
		}
		if e.started {
			e.frames(ev, e.b.finish())
		}
		e.errorFrame(ev, err)
		return e.write()
	}
	e.waiting = f.Status == bridge.StatusInputRequired
	reason, drop := stopReason(f)
	if drop != "" {
		e.dropped = wire.AddDropped(e.dropped, drop)
	}
	e.messageStart(ev)
	e.frames(ev, e.b.finish())
	e.frameHead(ev, "message_delta")
	e.buf = append(e.buf, `{"type":"message_delta","delta":{"stop_reason":`...)
	e.buf = wire.AppendString(e.buf, reason)
	e.buf = append(e.buf, `,"stop_sequence":null},"usage":`...)
	e.buf = appendUsage(e.buf, &e.usage, false)
	e.buf = append(e.buf, '}')
	e.frameEnd()
	e.frameHead(ev, "message_stop")
	e.buf = append(e.buf, `{"type":"message_stop"}`...)
	e.frameEnd()
	return e.write()
}

// Close ends the stream. A stream that never reached a final (its run was
// cut off) ends with an error frame, so the client does not take it for a
// complete message. Close does not close the writer; it is idempotent.
func (e *StreamEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.err != nil || e.finished || e.errSent || !e.started {
		return e.err
	}
	e.buf = e.buf[:0]
	ev := &bridge.Event{}
	e.frames(ev, e.b.finish())
	e.errorFrame(ev, &bridge.Error{Code: bridge.CodeUpstream, Message: "the stream ended before the message was complete"})
	return e.write()
}

// stopReason maps a final to a stop_reason. The second result names a stop
// reason Messages has no value for.
func stopReason(f *bridge.Final) (reason, dropped string) {
	return wire.StopReason(f, stopReasonValues)
}

// stopReasonValues are Messages' stop_reason values.
var stopReasonValues = map[bridge.StopReason]string{
	bridge.StopEndTurn: "end_turn", bridge.StopMaxTokens: "max_tokens", bridge.StopSequence: "stop_sequence",
	bridge.StopToolUse: "tool_use", bridge.StopPause: "pause_turn",
	bridge.StopRefusal: "refusal", bridge.StopContentFilter: "refusal",
}

// appendUsage appends a Messages usage object: input_tokens (the uncached
// input) and the cache counts when known, and output_tokens. start is the
// usage of message_start, which always has input_tokens.
func appendUsage(b []byte, u *bridge.Usage, start bool) []byte {
	b = append(b, '{')
	first := true
	field := func(k string, v int64) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, v, 10)
	}
	if u.InputTokens != nil || start {
		var in int64
		if u.InputTokens != nil {
			in = *u.InputTokens
		}
		if u.CacheReadTokens != nil {
			in -= *u.CacheReadTokens
		}
		if u.CacheWriteTokens != nil {
			in -= *u.CacheWriteTokens
		}
		field("input_tokens", max(in, 0))
	}
	if u.CacheWriteTokens != nil {
		field("cache_creation_input_tokens", *u.CacheWriteTokens)
	}
	if u.CacheReadTokens != nil {
		field("cache_read_input_tokens", *u.CacheReadTokens)
	}
	var out int64
	if u.OutputTokens != nil {
		out = *u.OutputTokens
	}
	field("output_tokens", out)
	return append(b, '}')
}

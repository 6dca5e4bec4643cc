package openai

import (
	"io"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/oaierror"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// StreamOptions are the fixed fields of the chunks a StreamEncoder writes and
// of the completion an Accumulator builds.
type StreamOptions struct {
	ID      string // the chat completion id ("chatcmpl-..."); empty: the upstream's, from message_started
	Model   string // empty: the upstream's, from message_started
	Created int64  // Unix seconds
	// IncludeUsage is the client's stream_options.include_usage: a usage
	// chunk with empty choices before [DONE], and "usage":null on every
	// other chunk.
	IncludeUsage bool
}

// StreamEncoder writes events as a client-facing Chat Completions SSE stream
// (events -> client frames). Every SSE event is one Write call holding an
// "id:" line (left out when the event has no RunID) and one "data:" line,
// so no client sees an event split across reads. Each frame has an id of
// its own: the event's bridge.EventID, but bridge.FrameID k=1 for a finish
// chunk that a usage chunk follows, so a resume from either starts right
// after it. A StreamEncoder is not safe for concurrent use.
//
// Frames: the first carries delta.role "assistant"; text_delta becomes
// delta.content, a refusal delta.refusal, reasoning_delta
// delta.reasoning_content (the DeepSeek convention); a tool call's first
// delta carries index, id, type and name, later ones only index and
// argument text, and an empty argument fragment writes nothing.
// run_started, message_started (after the first frame), message_done,
// tool_call_done and usage write nothing themselves; usage is held and
// written after the finish chunk when IncludeUsage. A final writes the
// finish chunk (finish_reason), the usage chunk, then data: [DONE].
//
// A final that is not a success (failed, cancelled, interrupted) and an
// error event write an error frame {"error":{message,type,param,code}}
// instead (see EncodeError); cancelled is type "server_error" code
// "run_cancelled", interrupted type "server_error" code "run_interrupted".
type StreamEncoder struct {
	w    io.Writer
	opt  StreamOptions
	buf  []byte // the frame being built; reused
	base []byte // {"id":…,"object":"chat.completion.chunk","created":…,"model":…

	roleSent bool
	tools    []toolOut
	usage    bridge.Usage
	dropped  []string

	errSent  bool // an error frame was written
	finished bool // a final was handled
	done     bool // [DONE] was written
	closed   bool
	err      error // the first write error
}

// toolOut is one tool call as the client sees it.
type toolOut struct {
	hub     int    // the hub's tool-call index
	wire    int    // the index on the wire
	id      string // its id, to tell a later step's call apart
	args    []byte // argument text written so far
	retired bool   // replaced by a later call with the same hub index
}

// NewStreamEncoder writes events as a client-facing SSE stream
// (events -> client frames).
func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder {
	e := &StreamEncoder{w: w, opt: opt, buf: make([]byte, 0, 512)}
	e.setBase()
	return e
}

func (e *StreamEncoder) setBase() {
	b := append(e.base[:0], `{"id":`...)
	b = wire.AppendString(b, e.opt.ID)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, e.opt.Created, 10)
	b = append(b, `,"model":`...)
	b = wire.AppendString(b, e.opt.Model)
	e.base = b
}

// Dropped lists what the events held that Chat Completions cannot express
// (each entry once): "reasoning.signature", "reasoning.encrypted",
// "tool_result", "artifact", "state_update", "agent_tool_call",
// "stop_reason:<reason>" and "opaque:<dialect>".
func (e *StreamEncoder) Dropped() []string { return e.dropped }

// Encode writes the frames of one event. It returns the first write error,
// and every later call returns it again. Events after a final are ignored.
func (e *StreamEncoder) Encode(ev *bridge.Event) error {
	if e.err != nil {
		return e.err
	}
	if e.closed {
		return bridge.Errorf(bridge.CodeInternal, "openai: Encode after Close")
	}
	if ev == nil || e.finished {
		return nil
	}
	if ev.Opaque != nil && ev.Opaque.Dialect != Dialect {
		e.dropped = wire.AddDropped(e.dropped, "opaque:"+wire.OpaqueDialect(ev.Opaque))
	}
	switch ev.Kind {
	case bridge.KindMessageStarted:
		if e.opt.ID == "" && ev.ResponseID != "" || e.opt.Model == "" && ev.Model != "" {
			if e.opt.ID == "" {
				e.opt.ID = ev.ResponseID
			}
			if e.opt.Model == "" {
				e.opt.Model = ev.Model
			}
			e.setBase()
		}
		if e.roleSent {
			return nil
		}
		e.begin(ev)
		e.buf = append(e.buf, `"role":"assistant","content":""`...)
		e.roleSent = true
		return e.end("")
	case bridge.KindTextDelta:
		if ev.Text == "" {
			return nil
		}
		e.begin(ev)
		switch {
		case ev.Refusal:
			e.role(true)
			e.buf = append(e.buf, `"refusal":`...)
		case !e.roleSent:
			e.buf = append(e.buf, `"role":"assistant","content":`...)
			e.roleSent = true
		default:
			e.buf = append(e.buf, `"content":`...)
		}
		e.buf = wire.AppendString(e.buf, ev.Text)
		return e.end("")
	case bridge.KindReasoningDelta:
		if ev.Signature != "" {
			e.dropped = wire.AddDropped(e.dropped, "reasoning.signature")
		}
		if ev.Encrypted != "" {
			e.dropped = wire.AddDropped(e.dropped, "reasoning.encrypted")
		}
		if ev.Text == "" {
			return nil
		}
		e.begin(ev)
		e.role(true)
		e.buf = append(e.buf, `"reasoning_content":`...)
		e.buf = wire.AppendString(e.buf, ev.Text)
		return e.end("")
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta, bridge.KindToolCallDone:
		if ev.Source == bridge.SourceAgent {
			// An agent's own tool activity: not the client's to execute.
			e.dropped = wire.AddDropped(e.dropped, "agent_tool_call")
			return nil
		}
		return e.toolCall(ev)
	case bridge.KindUsage:
		e.usage.Merge(ev.Usage)
		return nil
	case bridge.KindToolResult, bridge.KindArtifact, bridge.KindStateUpdate:
		e.dropped = wire.AddDropped(e.dropped, string(ev.Kind))
		return nil
	case bridge.KindError:
		if e.errSent {
			return nil
		}
		err := wire.ErrorOf(ev.Error)
		return e.errorFrame(ev, err)
	case bridge.KindFinal:
		return e.final(ev)
	}
	// run_started, message_done and kinds added later write nothing.
	return nil
}

// role starts a non-text delta: on the first frame it names the role.
func (e *StreamEncoder) role(comma bool) {
	if e.roleSent {
		return
	}
	e.roleSent = true
	e.buf = append(e.buf, `"role":"assistant","content":""`...)
	if comma {
		e.buf = append(e.buf, ',')
	}
}

// begin starts a frame: the id line, then a chunk up to the open delta.
func (e *StreamEncoder) begin(ev *bridge.Event) { e.beginFrame(ev, 0) }

// beginFrame is begin for frame k of ev's frames (0: its last).
func (e *StreamEncoder) beginFrame(ev *bridge.Event, frame int) {
	e.idLine(ev, frame)
	e.buf = append(e.buf, "data: "...)
	e.buf = append(e.buf, e.base...)
	e.buf = append(e.buf, `,"choices":[{"index":0,"delta":{`...)
}

// idLine starts a frame of ev with its id line: bridge.EventID, or with
// frame > 0 bridge.FrameID (a frame before the event's last).
func (e *StreamEncoder) idLine(ev *bridge.Event, frame int) {
	e.buf = wire.AppendID(e.buf[:0], ev.RunID, ev.Seq, frame)
}

// end closes the delta and the chunk and writes the frame.
func (e *StreamEncoder) end(finish string) error {
	e.buf = append(e.buf, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		e.buf = append(e.buf, "null"...)
	} else {
		e.buf = wire.AppendString(e.buf, finish)
	}
	e.buf = append(e.buf, "}]"...)
	if e.opt.IncludeUsage {
		e.buf = append(e.buf, `,"usage":null`...)
	}
	e.buf = append(e.buf, "}\n\n"...)
	return e.write()
}

func (e *StreamEncoder) write() error {
	if _, err := e.w.Write(e.buf); err != nil {
		e.err = err
		return err
	}
	return nil
}

func (e *StreamEncoder) lookup(hub int) *toolOut {
	for i := len(e.tools) - 1; i >= 0; i-- {
		if t := &e.tools[i]; t.hub == hub && !t.retired {
			return t
		}
	}
	return nil
}

func (e *StreamEncoder) newTool(hub int, id string) *toolOut {
	wire := hub
	for _, t := range e.tools {
		if t.wire == wire {
			wire = -1
			break
		}
	}
	if wire < 0 {
		for _, t := range e.tools {
			wire = max(wire, t.wire)
		}
		wire++
	}
	e.tools = append(e.tools, toolOut{hub: hub, wire: wire, id: id})
	return &e.tools[len(e.tools)-1]
}

func (e *StreamEncoder) toolCall(ev *bridge.Event) error {
	tc := ev.ToolCall
	if tc == nil {
		return nil
	}
	t := e.lookup(tc.Index)
	if t != nil && ev.Kind == bridge.KindToolCallStarted {
		if tc.ID == "" || tc.ID == t.id {
			return nil // a repeated start
		}
		// The same index with a new id: a call of a later model step.
		t.retired = true
		t = nil
	}
	if t == nil {
		// The first delta of this call: index, id, type and name.
		t = e.newTool(tc.Index, tc.ID)
		t.args = append(t.args, tc.Arguments...)
		return e.toolFrame(ev, t, tc, tc.Arguments, true)
	}
	var frag string
	switch ev.Kind {
	case bridge.KindToolCallDelta:
		frag = tc.Arguments
	case bridge.KindToolCallDone:
		// Write what the deltas left out, if the complete text extends them.
		if len(tc.Arguments) > len(t.args) && strings.HasPrefix(tc.Arguments, string(t.args)) {
			frag = tc.Arguments[len(t.args):]
		}
	}
	if frag == "" {
		return nil
	}
	t.args = append(t.args, frag...)
	return e.toolFrame(ev, t, tc, frag, false)
}

func (e *StreamEncoder) toolFrame(ev *bridge.Event, t *toolOut, tc *bridge.ToolCall, args string, first bool) error {
	e.begin(ev)
	e.role(true)
	e.buf = append(e.buf, `"tool_calls":[{"index":`...)
	e.buf = strconv.AppendInt(e.buf, int64(t.wire), 10)
	if first {
		e.buf = append(e.buf, `,"id":`...)
		e.buf = wire.AppendString(e.buf, tc.ID)
		e.buf = append(e.buf, `,"type":"function","function":{"name":`...)
		e.buf = wire.AppendString(e.buf, tc.Name)
		e.buf = append(e.buf, `,"arguments":`...)
	} else {
		e.buf = append(e.buf, `,"function":{"arguments":`...)
	}
	e.buf = wire.AppendString(e.buf, args)
	e.buf = append(e.buf, "}}]"...)
	return e.end("")
}

// errorFrame writes {"error":{...}} as one frame.
func (e *StreamEncoder) errorFrame(ev *bridge.Event, err *bridge.Error) error {
	e.errSent = true
	e.idLine(ev, 0)
	_, body := EncodeError(err)
	e.buf = append(e.buf, "data: "...)
	e.buf = append(e.buf, body...)
	e.buf = append(e.buf, "\n\n"...)
	return e.write()
}

func (e *StreamEncoder) final(ev *bridge.Event) error {
	e.finished = true
	f := wire.FinalOf(ev.Final)
	e.usage.Merge(f.Usage)
	if err := oaierror.FinalError(f, nil); err != nil {
		if !e.errSent {
			if werr := e.errorFrame(ev, err); werr != nil {
				return werr
			}
		}
		return e.writeDone()
	}
	reason, drop := finishReason(f)
	if drop != "" {
		e.dropped = wire.AddDropped(e.dropped, drop)
	}
	if e.opt.IncludeUsage {
		e.beginFrame(ev, 1) // the usage chunk is the event's last frame
	} else {
		e.begin(ev)
	}
	e.role(false)
	if err := e.end(reason); err != nil {
		return err
	}
	if e.opt.IncludeUsage {
		e.idLine(ev, 0)
		e.buf = append(e.buf, "data: "...)
		e.buf = append(e.buf, e.base...)
		e.buf = append(e.buf, `,"choices":[],"usage":`...)
		e.buf = appendUsage(e.buf, &e.usage)
		e.buf = append(e.buf, "}\n\n"...)
		if err := e.write(); err != nil {
			return err
		}
	}
	return e.writeDone()
}

func (e *StreamEncoder) writeDone() error {
	if e.done {
		return nil
	}
	e.done = true
	e.buf = append(e.buf[:0], "data: [DONE]\n\n"...)
	return e.write()
}

// Close ends the stream: it writes data: [DONE] unless a final already did.
// It does not close the writer. Close is idempotent.
func (e *StreamEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.err != nil {
		return e.err
	}
	return e.writeDone()
}

// finishReason maps a final to a finish_reason. The second result names a
// stop reason Chat Completions has no value for.
func finishReason(f *bridge.Final) (reason, dropped string) { return wire.StopReason(f, finishReasons) }

// finishReasons are Chat Completions' finish_reason values.
var finishReasons = map[bridge.StopReason]string{
	bridge.StopEndTurn: "stop", bridge.StopSequence: "stop", bridge.StopMaxTokens: "length",
	bridge.StopToolUse: "tool_calls", bridge.StopContentFilter: "content_filter", bridge.StopRefusal: "content_filter",
}

// appendUsage appends a Chat Completions usage object.
func appendUsage(b []byte, u *bridge.Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = wire.AppendCount(b, u.InputTokens)
	b = append(b, `,"completion_tokens":`...)
	b = wire.AppendCount(b, u.OutputTokens)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.Total(), 10)
	if u.CacheReadTokens != nil || u.CacheWriteTokens != nil {
		b = append(b, `,"prompt_tokens_details":{`...)
		if u.CacheReadTokens != nil {
			b = append(b, `"cached_tokens":`...)
			b = strconv.AppendInt(b, *u.CacheReadTokens, 10)
		}
		if u.CacheWriteTokens != nil {
			if u.CacheReadTokens != nil {
				b = append(b, ',')
			}
			b = append(b, `"cache_write_tokens":`...)
			b = strconv.AppendInt(b, *u.CacheWriteTokens, 10)
		}
		b = append(b, '}')
	}
	if u.ReasoningTokens != nil {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, *u.ReasoningTokens, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

package hermes

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// The session stream's frame names, in the order a turn sends them. The
// terminal run.failed, run.cancelled and run.interrupted are the chatkit
// conventions' names (Hermes itself sends error); Error is what a Hermes
// server sends for a failed turn.
const (
	EventRunStarted         = "run.started"
	EventMessageStarted     = "message.started"
	EventAssistantDelta     = "assistant.delta"
	EventToolProgress       = "tool.progress"
	EventToolStarted        = "tool.started"
	EventToolCompleted      = "tool.completed"
	EventToolFailed         = "tool.failed"
	EventAssistantCompleted = "assistant.completed"
	EventRunSteered         = "run.steered"
	EventRunCompleted       = "run.completed"
	EventRunFailed          = "run.failed"
	EventRunCancelled       = "run.cancelled"
	EventRunInterrupted     = "run.interrupted"
	EventError              = "error"
	EventDone               = "done"
)

// ReasonWaitingForTools is the reason of the frame that ends the stream of
// a run waiting for the client's tool results.
const ReasonWaitingForTools = "waiting for the client's tool results"

// ThinkingTool is the tool_name of tool.progress frames that carry
// reasoning.
const ThinkingTool = "_thinking"

// StreamOptions says what the encoder cannot learn from the events.
type StreamOptions struct {
	SessionID string
	// UserMessage is the turn's user input, for run.started.
	UserMessage string
	// After skips the frames with seq <= After (a resume cursor): they are
	// encoded, so the seq of later ones stays the same, but not written.
	After int64
	// AfterEvent skips the frames of the events with seq <= AfterEvent the
	// same way (the part of a continued run its client has seen).
	AfterEvent int64
}

// StreamEncoder writes a run's events as the session stream's frames
// (hub -> wire). Each frame's seq counts frames from 1 and depends only on
// the events, so a replay of the same events numbers its frames the same.
// Each frame has an SSE id of its own: the last frame of hub event N
// bridge.EventID "<run_id>:N", the ones before it (message.started before
// the first delta, assistant.completed, run.completed and done of a final)
// bridge.FrameID "<run_id>:N.k"; so a resume from any frame's id, or from
// a history's cursor, starts right after it. It is not safe for
// concurrent use.
type StreamEncoder struct {
	w   io.Writer
	opt StreamOptions
	seq int64

	runID    string
	msgID    string
	text     strings.Builder
	reason   strings.Builder
	calls    []json.RawMessage // tool calls of the open assistant message
	names    map[string]string // tool-call id -> name
	msgs     []json.RawMessage // this turn's transcript, for run.completed
	usage    bridge.Usage
	done     bool
	written  int    // frames written (not skipped)
	buf      []byte // the frames of the event being encoded
	seqs     []int64
	ids      wire.FrameIDs
	dropped  []string
	fullText string
	evSeq    int64 // seq of the event being encoded
	waiting  bool  // the last final was input_required: the run may go on
}

// NewStreamEncoder returns an encoder writing to w. Each frame is one Write.
func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder {
	return &StreamEncoder{w: w, opt: opt, names: map[string]string{}}
}

// Seq is the seq of the last frame encoded.
func (e *StreamEncoder) Seq() int64 { return e.seq }

// Written is the number of frames written (after the skipped ones).
func (e *StreamEncoder) Written() int { return e.written }

// Done reports whether the done frame was encoded.
func (e *StreamEncoder) Done() bool { return e.done }

// Dropped lists what the frames could not carry.
func (e *StreamEncoder) Dropped() []string { return e.dropped }

func (e *StreamEncoder) drop(what string) { e.dropped = wire.AddDropped(e.dropped, what) }

// delta opens the message a text or reasoning delta belongs to and keeps
// its text in buf; false, with the error if any, when there is nothing to
// write.
func (e *StreamEncoder) delta(ev *bridge.Event, buf *strings.Builder) (bool, error) {
	if ev.Text == "" {
		return false, nil
	}
	if err := e.startMessage(ev); err != nil {
		return false, err
	}
	buf.WriteString(ev.Text)
	return true, nil
}

// frame adds one frame to the event's: fill adds the frame's own members.
// Encode numbers the ids of the event's frames and writes them.
func (e *StreamEncoder) frame(name string, ts time.Time, fill func(o *wire.ObjWriter)) error {
	e.seq++
	o := wire.NewObj()
	if fill != nil {
		fill(o)
	}
	o.Str("session_id", e.opt.SessionID)
	o.Str("run_id", e.runID)
	o.Int("seq", e.seq)
	o.Float("ts", unixSeconds(ts))
	o.B = append(o.B, '}')
	b := e.buf
	b = append(b, "id: "...)
	b = append(b, bridge.EventID(e.runID, e.evSeq)...)
	b = append(b, "\nevent: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, o.B...)
	b = append(b, "\n\n"...)
	e.buf = b
	e.seqs = append(e.seqs, e.seq)
	return nil
}

// flush numbers the ids of the event's frames and writes them, but those
// a resume skips (seq <= After, or an event <= AfterEvent): numbered with
// the rest, so every frame keeps the id it had.
func (e *StreamEncoder) flush() error {
	if len(e.seqs) == 0 {
		return nil
	}
	b := e.ids.Number(e.buf)
	e.buf = b
	skipEvent := e.evSeq > 0 && e.evSeq <= e.opt.AfterEvent
	for _, seq := range e.seqs {
		end := bytes.Index(b, frameEnd) + len(frameEnd)
		f := b[:end]
		b = b[end:]
		if skipEvent || seq <= e.opt.After {
			continue
		}
		e.written++
		if _, err := e.w.Write(f); err != nil {
			return err
		}
	}
	return nil
}

var frameEnd = []byte("\n\n")

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMicro()) / 1e6
}

func (e *StreamEncoder) startMessage(ev *bridge.Event) error {
	if e.msgID != "" {
		return nil
	}
	e.msgID = "msg_" + strings.TrimPrefix(e.runID, "run_") + "_" + strconv.FormatInt(ev.Seq, 10)
	return e.frame(EventMessageStarted, ev.Time, func(o *wire.ObjWriter) {
		m := wire.NewObj()
		m.Str("id", e.msgID)
		m.Str("role", "assistant")
		m.B = append(m.B, '}')
		o.Raw("message", m.B)
	})
}

// Encode writes the frames of one event (none for kinds Hermes has no
// frame for).
//
// A run that waited for the client's tool results (input_required) and was
// continued goes on after its done frame: the continuation's frames follow,
// from a run.started of the same run (a client reading the stream of the
// turn that sent the results sees a turn's whole shape), with a new
// assistant message, seq counting on.
func (e *StreamEncoder) Encode(ev *bridge.Event) error {
	e.buf, e.seqs = e.buf[:0], e.seqs[:0]
	err := e.encode(ev)
	if werr := e.flush(); err == nil {
		err = werr
	}
	return err
}

func (e *StreamEncoder) encode(ev *bridge.Event) error {
	e.evSeq = ev.Seq
	if e.runID == "" {
		e.runID = ev.RunID
	}
	if e.done {
		if !e.waiting {
			return nil
		}
		e.done, e.waiting, e.msgID, e.fullText, e.msgs = false, false, "", "", nil
		e.usage = bridge.Usage{}
		if err := e.frame(EventRunStarted, ev.Time, nil); err != nil {
			return err
		}
	}
	switch ev.Kind {
	case bridge.KindRunStarted:
		return e.frame(EventRunStarted, ev.Time, func(o *wire.ObjWriter) {
			m := wire.NewObj()
			m.Str("role", "user")
			m.Str("content", e.opt.UserMessage)
			m.B = append(m.B, '}')
			o.Raw("user_message", m.B)
		})
	case bridge.KindUserMessage:
		if ev.Message == nil {
			return nil
		}
		text := ev.Message.Text()
		return e.frame(EventRunSteered, ev.Time, func(o *wire.ObjWriter) {
			o.Bool("accepted", true)
			o.Str("text", text)
		})
	case bridge.KindMessageStarted:
		return e.startMessage(ev)
	case bridge.KindTextDelta:
		if ok, err := e.delta(ev, &e.text); !ok {
			return err
		}
		return e.frame(EventAssistantDelta, ev.Time, func(o *wire.ObjWriter) {
			o.Str("message_id", e.msgID)
			o.Str("delta", ev.Text)
		})
	case bridge.KindReasoningDelta:
		if ev.Signature != "" || ev.Encrypted != "" {
			e.drop("reasoning signature")
		}
		if ok, err := e.delta(ev, &e.reason); !ok {
			return err
		}
		return e.frame(EventToolProgress, ev.Time, func(o *wire.ObjWriter) {
			o.Str("message_id", e.msgID)
			o.Str("tool_name", ThinkingTool)
			o.Str("delta", ev.Text)
		})
	case bridge.KindToolCallDone:
		if ev.ToolCall == nil {
			return nil
		}
		if err := e.startMessage(ev); err != nil {
			return err
		}
		tc := ev.ToolCall
		e.names[tc.ID] = tc.Name
		e.calls = append(e.calls, toolCallJSON(tc))
		return e.frame(EventToolStarted, ev.Time, func(o *wire.ObjWriter) {
			o.Str("message_id", e.msgID)
			o.Str("tool_name", tc.Name)
			o.Str("tool_call_id", tc.ID)
			if ev.Source != bridge.SourceAgent {
				o.Bool("client_tool", true) // the bridge runs no tools: the client runs the model's
			}
			o.Str("preview", wire.Truncate(tc.Arguments, 80))
			o.Raw("args", argsJSON(tc.Arguments))
		})
	case bridge.KindToolResult:
		tr := ev.ToolResult
		if tr == nil {
			return nil
		}
		if err := e.startMessage(ev); err != nil {
			return err
		}
		name := tr.Name
		if name == "" {
			name = e.names[tr.CallID]
		}
		content := partsText(tr.Content)
		e.flushAssistant()
		tm := wire.NewObj()
		tm.Str("role", "tool")
		tm.Str("tool_call_id", tr.CallID)
		tm.Str("tool_name", name)
		tm.Str("content", content)
		tm.B = append(tm.B, '}')
		e.msgs = append(e.msgs, tm.B)
		evName := EventToolCompleted
		if tr.IsError {
			evName = EventToolFailed
		}
		return e.frame(evName, ev.Time, func(o *wire.ObjWriter) {
			o.Str("message_id", e.msgID)
			o.Str("tool_name", name)
			o.Str("tool_call_id", tr.CallID)
			o.Str("preview", wire.Truncate(content, 80))
			o.Str("result", content)
			o.Bool("error", tr.IsError)
		})
	case bridge.KindUsage:
		e.usage.Merge(ev.Usage)
	case bridge.KindArtifact:
		e.drop("artifacts")
	case bridge.KindStateUpdate:
		e.drop("state updates")
	case bridge.KindFinal:
		return e.final(ev)
	}
	return nil
}

// flushAssistant closes the open assistant message into this turn's
// transcript.
func (e *StreamEncoder) flushAssistant() {
	if e.text.Len() == 0 && e.reason.Len() == 0 && len(e.calls) == 0 {
		return
	}
	m := wire.NewObj()
	m.Str("role", "assistant")
	m.Str("content", e.text.String())
	if e.reason.Len() > 0 {
		m.Str("reasoning", e.reason.String())
	}
	if len(e.calls) > 0 {
		m.Raw("tool_calls", wire.JoinArray(e.calls))
	}
	m.B = append(m.B, '}')
	e.msgs = append(e.msgs, m.B)
	e.fullText += e.text.String()
	e.text.Reset()
	e.reason.Reset()
	e.calls = nil
}

func (e *StreamEncoder) final(ev *bridge.Event) error {
	f := ev.Final
	if f == nil {
		f = &bridge.Final{Status: bridge.StatusFailed, Reason: "no outcome"}
	}
	e.usage.Merge(f.Usage)
	e.flushAssistant()
	var err error
	switch f.Status {
	case bridge.StatusCompleted, bridge.StatusInputRequired:
		if e.msgID == "" {
			e.msgID = "msg_" + strings.TrimPrefix(e.runID, "run_") + "_" + strconv.FormatInt(ev.Seq, 10)
		}
		err = e.frame(EventAssistantCompleted, ev.Time, func(o *wire.ObjWriter) {
			o.Str("message_id", e.msgID)
			o.Str("content", e.fullText)
			o.Bool("completed", true)
			o.Bool("partial", false)
			o.Bool("interrupted", false)
		})
		if err == nil {
			// A run waiting for the client's tool results has not
			// completed: it ends its stream as chatkit reads an A2A
			// input-required task, interrupted (not failed), with the
			// status that says why and the calls in messages.
			name := EventRunCompleted
			if f.Status == bridge.StatusInputRequired {
				name = EventRunInterrupted
			}
			err = e.frame(name, ev.Time, func(o *wire.ObjWriter) {
				o.Str("message_id", e.msgID)
				o.Bool("completed", f.Status == bridge.StatusCompleted)
				if f.Status == bridge.StatusInputRequired {
					o.Str("status", StatusInputRequired)
					o.Str("reason", ReasonWaitingForTools)
				}
				if f.StopReason != "" {
					o.Str("finish_reason", string(f.StopReason))
				}
				o.Raw("messages", wire.JoinArray(e.msgs))
				o.Raw("usage", UsageJSON(&e.usage))
			})
		}
	default:
		name := EventRunFailed
		switch f.Status {
		case bridge.StatusCancelled:
			name = EventRunCancelled
		case bridge.StatusInterrupted:
			name = EventRunInterrupted
		}
		err = e.frame(name, ev.Time, func(o *wire.ObjWriter) {
			if e.msgID != "" {
				o.Str("message_id", e.msgID)
			}
			msg := f.Reason
			if f.Error != nil && f.Error.Message != "" {
				msg = f.Error.Message
			}
			if name == EventRunFailed {
				o.Str("error", msg)
			} else if msg != "" {
				o.Str("reason", msg)
			}
			if e.fullText != "" {
				o.Str("partial_content", e.fullText)
			}
		})
	}
	if err != nil {
		return err
	}
	err = e.frame(EventDone, ev.Time, nil)
	e.done, e.waiting = true, f.Status == bridge.StatusInputRequired
	return err
}

// UsageJSON renders usage as Hermes does: input, output and total tokens.
func UsageJSON(u *bridge.Usage) []byte {
	o := wire.NewObj()
	var in, out int64
	if u.InputTokens != nil {
		in = *u.InputTokens
	}
	if u.OutputTokens != nil {
		out = *u.OutputTokens
	}
	o.Int("input_tokens", in)
	o.Int("output_tokens", out)
	o.Int("total_tokens", u.Total())
	if u.ReasoningTokens != nil {
		o.Int("reasoning_tokens", *u.ReasoningTokens)
	}
	o.B = append(o.B, '}')
	return o.B
}

func toolCallJSON(tc *bridge.ToolCall) json.RawMessage {
	f := wire.NewObj()
	f.Str("name", tc.Name)
	f.Str("arguments", tc.Arguments)
	f.B = append(f.B, '}')
	o := wire.NewObj()
	o.Str("id", tc.ID)
	o.Str("type", "function")
	o.Raw("function", f.B)
	o.B = append(o.B, '}')
	return o.B
}

// argsJSON is the arguments as a JSON value when they parse, else as a
// string.
func argsJSON(args string) []byte {
	if args == "" {
		return []byte("{}")
	}
	if json.Valid([]byte(args)) {
		return wire.Compact([]byte(args))
	}
	return wire.AppendString(nil, args)
}

func partsText(parts []bridge.Part) string {
	var sb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case bridge.PartText:
			sb.WriteString(p.Text)
		case bridge.PartData:
			sb.Write(p.JSON)
		}
	}
	return sb.String()
}

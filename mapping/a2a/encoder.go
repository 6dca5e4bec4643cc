package a2a

import (
	"encoding/json"
	"io"
	"strconv"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// StreamOptions configure a StreamEncoder.
type StreamOptions struct {
	Version Version
	// RequestID is the JSON-RPC id of the request the stream answers;
	// every frame carries it.
	RequestID json.RawMessage
}

// StreamEncoder writes a run's events as the SSE stream of message/stream
// and tasks/resubscribe (events -> client frames). Every frame is one
// Write of "id: <event id>\ndata: <JSON-RPC response>\n\n": the JSON on one
// data: line (the @a2a-js/sdk client keeps only the last data line of an
// event), the id the event's cursor, which Last-Event-ID takes back.
//
// The result of each frame, in version 0.3 (1.0 wraps the same objects in
// {"task"}, {"statusUpdate"}, {"artifactUpdate"} and drops kind and final):
// run_started writes the Task (submitted, its input in history); the first
// message_started a status-update working; text_delta an artifact-update
// of the answer artifact (append false on its first chunk, then true);
// message_done closes the artifact with an empty text chunk and lastChunk
// true; reasoning, tool calls, tool results and steers write a status-update
// working whose message holds them (ADK's adk_thought and adk_type
// conventions); artifact events write their parts; final writes the last
// status-update, final true, its state the outcome (completed, failed with
// the error in the status message, canceled, input-required), usage in
// metadata. Other events write nothing.
//
// A StreamEncoder is not safe for concurrent use; one frame buffer is
// reused for every event.
type StreamEncoder struct {
	w    io.Writer
	tb   *TaskBuilder
	opt  StreamOptions
	buf  []byte
	err  error
	done bool
}

// NewStreamEncoder returns an encoder writing tb's run to w.
func NewStreamEncoder(w io.Writer, tb *TaskBuilder, opt StreamOptions) *StreamEncoder {
	return &StreamEncoder{w: w, tb: tb, opt: opt, buf: make([]byte, 0, 1024)}
}

// Skip folds ev into the task without writing it: the events a resume
// cursor has already given the client.
func (e *StreamEncoder) Skip(ev *bridge.Event) { e.tb.Add(ev) }

// Done reports whether the final frame was written.
func (e *StreamEncoder) Done() bool { return e.done }

// Dropped lists what the events held that A2A cannot carry.
func (e *StreamEncoder) Dropped() []string { return e.tb.Dropped() }

// Encode folds ev and writes its frame, if it has one. It returns the
// first write error, and every later call returns it again.
func (e *StreamEncoder) Encode(ev *bridge.Event) error {
	if e.err != nil {
		return e.err
	}
	f := e.tb.Add(ev)
	if f.kind == frameNone {
		return nil
	}
	runID := ev.RunID
	if runID == "" {
		runID = e.tb.id
	}
	b := append(e.buf[:0], "id: "...)
	b = append(b, runID...)
	b = append(b, ':')
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, "\ndata: "...)
	b = e.result(b, &f)
	b = append(b, "\n\n"...)
	e.buf = b
	if f.final {
		e.done = true
	}
	_, e.err = e.w.Write(b)
	return e.err
}

// WriteTask writes the task as it stands, as a frame with event id (or no
// id: line when id is ""): the snapshot a stream that joins a task mid-way
// starts with.
func (e *StreamEncoder) WriteTask(id string, historyLength *int) error {
	if e.err != nil {
		return e.err
	}
	b := e.buf[:0]
	if id != "" {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	b = append(b, "data: "...)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, orNull(e.opt.RequestID)...)
	b = append(b, `,"result":`...)
	b = appendTaskResult(b, e.tb.Task(), e.opt.Version, historyLength)
	b = append(b, "}\n\n"...)
	e.buf = b
	if e.tb.State().Terminal() || e.tb.State() == a2asdk.TaskStateInputRequired {
		e.done = true
	}
	_, e.err = e.w.Write(b)
	return e.err
}

// WriteError writes a JSON-RPC error frame (no id: line).
func (e *StreamEncoder) WriteError(rpcErr *Error) error {
	if e.err != nil {
		return e.err
	}
	b := append(e.buf[:0], "data: "...)
	b = AppendError(b, e.opt.RequestID, rpcErr, e.opt.Version)
	b = append(b, "\n\n"...)
	e.buf = b
	e.done = true
	_, e.err = e.w.Write(b)
	return e.err
}

// result appends the JSON-RPC response of frame f.
func (e *StreamEncoder) result(b []byte, f *frame) []byte {
	v := e.opt.Version
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, orNull(e.opt.RequestID)...)
	b = append(b, `,"result":`...)
	switch f.kind {
	case frameTask:
		b = appendTaskResult(b, e.tb.Task(), v, nil)
	case frameStatus:
		ts := f.ts
		s := a2asdk.TaskStatus{State: f.state, Message: f.msg}
		if !ts.IsZero() {
			s.Timestamp = &ts
		}
		b = appendStatusUpdate(b, e.tb.id, e.tb.contextID, &s, f.final, f.meta, v)
	case frameText:
		b = appendArtifactHead(b, e.tb.id, e.tb.contextID, f.art.id, f.art.name, v)
		b = append(b, '[')
		if v == V03 {
			b = append(b, `{"kind":"text","text":`...)
		} else {
			b = append(b, `{"text":`...)
		}
		b = wire.AppendString(b, f.text)
		b = append(b, "}]"...)
		b = appendArtifactTail(b, !f.first, f.last, v)
	case frameParts:
		b = appendArtifactHead(b, e.tb.id, e.tb.contextID, f.art.id, f.art.name, v)
		b = appendParts(b, f.parts, v)
		b = appendArtifactTail(b, !f.first, f.last, v)
	}
	return append(b, '}')
}

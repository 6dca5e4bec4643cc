package responses

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/oaierror"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// StreamOptions are the fixed members of the Response a StreamEncoder or an
// Accumulator renders.
type StreamOptions struct {
	// ID is the response id ("resp_..."); item ids are derived from it, so
	// the same events always render the same items.
	ID string
	// Model is the model the Response names; empty: the upstream's, from
	// message_started.
	Model string
	// Created is created_at, in Unix seconds.
	Created int64
	// Echo is the object of request members the Response repeats
	// (Request.Echo); nil: the API's defaults.
	Echo json.RawMessage
	// Background makes the response.created snapshot say "queued".
	Background bool
	// Skip is how many leading events (sequence numbers 0 to Skip-1) are
	// rendered but not written: a stream resumed with starting_after=N
	// has Skip N+1.
	Skip int64
}

// StreamEncoder writes events as the typed event stream of the Responses
// API (events -> client frames). Every frame is an SSE event with an
// "event:" line (the type), an "id:" line (left out when the event has no
// RunID) and one "data:" line holding the event with its sequence_number
// (0, 1, 2, ... per response). The frames of one hub event leave in one
// Write. Each frame has an id of its own, as its sequence_number is: the
// last of a hub event's frames the event's bridge.EventID, the ones before
// it bridge.FrameID; so a resume from any frame, by its id (Last-Event-ID)
// or its sequence number (starting_after), starts right after it. A
// StreamEncoder is not safe for concurrent use.
//
// The sequence: response.created and response.in_progress before the
// first frame of any other kind; text_delta opens a message item
// (response.output_item.added, response.content_part.added) and writes
// response.output_text.delta (a refusal: a refusal part and
// response.refusal.delta); reasoning_delta opens a reasoning item and
// writes response.reasoning_summary_text.delta (encrypted reasoning lands
// in the item's encrypted_content); tool_call_started opens a
// function_call item (call_id is the hub id), tool_call_delta writes
// response.function_call_arguments.delta, tool_call_done writes .done and
// response.output_item.done. Opening an item closes an open message or
// reasoning item (its .done events); message_done closes it too. Parallel
// function calls may be open together; each event names its item_id and
// output_index. A final closes what is open and writes the terminal event:
// response.completed (status completed, also when the model stopped for
// tool calls), response.incomplete (max tokens or a content filter, with
// incomplete_details.reason), or response.failed (failed, cancelled or
// interrupted, with response.error). An error event writes an `error`
// event (its fields flat, as the OpenAI SDKs type it, and nested in
// "error", as the Open Responses schema has it). Nothing is written after
// the terminal event; there is no [DONE].
type StreamEncoder struct {
	w     io.Writer
	opt   StreamOptions
	quiet bool // an Accumulator: no frames at all
	core  string
	echo  []byte // the echo members, without braces

	buf   []byte // the frames of the event being encoded; reused
	ids   wire.FrameIDs
	seq   int64 // the next sequence_number
	evRun string
	evSeq int64

	items   []*item
	open    *item // the open message or reasoning item
	usage   bridge.Usage
	final   *bridge.Final
	doneAt  int64 // the final's time, Unix seconds
	errEv   *bridge.Error
	dropped []string

	started bool
	errSent bool
	closed  bool
	err     error // the first write error
}

// item is one output item.
type item struct {
	kind  itemKind
	id    string
	index int // output_index
	done  bool
	json  []byte // the complete item, once done

	parts []*part // message content
	text  []byte  // reasoning summary text
	enc   string  // reasoning encrypted_content

	hub    int // hub tool-call index
	callID string
	name   string
	args   []byte
}

type itemKind byte

const (
	kindMessage itemKind = iota + 1
	kindReasoning
	kindCall
)

type part struct {
	refusal bool
	text    []byte
	done    bool
}

// NewStreamEncoder writes events as the typed event stream a client reads
// (events -> client frames).
func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder {
	e := &StreamEncoder{w: w, buf: make([]byte, 0, 1024)}
	e.init(opt)
	return e
}

func (e *StreamEncoder) init(opt StreamOptions) {
	e.opt = opt
	e.core = strings.TrimPrefix(opt.ID, "resp_")
	echo := opt.Echo
	if len(echo) < 2 {
		echo = defaultEcho
	}
	e.echo = echo[1 : len(echo)-1]
}

// defaultEcho is the echo of a request that set nothing.
var defaultEcho = func() json.RawMessage {
	d := reqDecoder{r: &Request{Hub: &bridge.Request{}, Store: true}}
	return d.echo(wire.Object{})
}()

// Dropped lists what the events held that a Responses stream cannot
// express (each entry once): "reasoning.signature", "tool_result",
// "artifact", "state_update", "agent_tool_call", "stop_reason:<reason>"
// and "opaque:<dialect>".
func (e *StreamEncoder) Dropped() []string { return e.dropped }

// Sequence is the number of events the stream has had so far (the next
// sequence_number), whether written or skipped.
func (e *StreamEncoder) Sequence() int64 { return e.seq }

// Finished reports whether the terminal event was rendered.
func (e *StreamEncoder) Finished() bool { return e.final != nil }

func (e *StreamEncoder) drop(s string) { e.dropped = wire.AddDropped(e.dropped, s) }

// Encode writes the frames of one event. It returns the first write error,
// and every later call returns it again. Events after a final are ignored.
func (e *StreamEncoder) Encode(ev *bridge.Event) error {
	if e.err != nil {
		return e.err
	}
	if e.closed {
		return bridge.Errorf(bridge.CodeInternal, "responses: Encode after Close")
	}
	if ev == nil || e.final != nil {
		return nil
	}
	e.evRun, e.evSeq = ev.RunID, ev.Seq
	e.buf = e.buf[:0]
	first := e.seq
	e.handle(ev)
	if len(e.buf) == 0 || e.w == nil {
		return nil
	}
	e.buf = e.ids.Number(e.buf)
	out := e.buf
	if n := e.opt.Skip - first; n > 0 {
		out = dropFrames(out, n) // numbered first: the ids stay those of the whole stream
		if len(out) == 0 {
			return nil
		}
	}
	if _, err := e.w.Write(out); err != nil {
		e.err = err
		return err
	}
	return nil
}

// Close ends the stream; it writes nothing (the Responses stream has no
// [DONE]) and does not close the writer. Close is idempotent.
func (e *StreamEncoder) Close() error {
	e.closed = true
	return e.err
}

func (e *StreamEncoder) handle(ev *bridge.Event) {
	if ev.Opaque != nil && ev.Opaque.Dialect != Dialect {
		e.drop("opaque:" + wire.OpaqueDialect(ev.Opaque))
	}
	switch ev.Kind {
	case bridge.KindRunStarted:
		e.start()
	case bridge.KindMessageStarted:
		if e.opt.Model == "" && ev.Model != "" {
			e.opt.Model = ev.Model
		}
		e.start()
	case bridge.KindTextDelta:
		e.start()
		if ev.Text != "" {
			e.textDelta(ev.Text, ev.Refusal)
		}
	case bridge.KindReasoningDelta:
		e.start()
		e.reasoningDelta(ev)
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta, bridge.KindToolCallDone:
		if ev.Source == bridge.SourceAgent {
			e.drop("agent_tool_call") // an agent's own tool: not the client's to run
			return
		}
		if ev.ToolCall == nil {
			return
		}
		e.start()
		e.toolCall(ev.Kind, ev.ToolCall)
	case bridge.KindMessageDone:
		e.closeOpen("completed")
	case bridge.KindUsage:
		e.usage.Merge(ev.Usage)
	case bridge.KindToolResult, bridge.KindArtifact, bridge.KindStateUpdate:
		e.drop(string(ev.Kind))
	case bridge.KindError:
		e.start()
		if !e.errSent {
			err := wire.ErrorOf(ev.Error)
			e.errEv = err
			e.errorEvent(err)
		}
	case bridge.KindFinal:
		e.start()
		f := wire.FinalOf(ev.Final)
		e.usage.Merge(f.Usage)
		e.doneAt = e.opt.Created
		if !ev.Time.IsZero() {
			e.doneAt = ev.Time.Unix()
		}
		e.terminal(f)
	}
	// run_started after the first, user_message and kinds added later write
	// nothing.
}

// ---- frames -----------------------------------------------------------------

// begin starts a frame of the given type and reports whether to fill it: a
// frame is numbered whether it is written or not (an Accumulator). The
// frames of a resumed stream's skipped head are made, then dropped by
// Encode, so their SSE ids are numbered as the whole stream's were.
func (e *StreamEncoder) begin(typ string) bool {
	n := e.seq
	e.seq++
	if e.quiet {
		return false
	}
	b := append(e.buf, "event: "...)
	b = append(b, typ...)
	b = append(b, '\n')
	b = wire.AppendID(b, e.evRun, e.evSeq, 0)
	b = append(b, `data: {"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, n, 10)
	e.buf = b
	return true
}

func (e *StreamEncoder) end() { e.buf = append(e.buf, "}\n\n"...) }

// dropFrames returns b without its first n frames.
func dropFrames(b []byte, n int64) []byte {
	for ; n > 0 && len(b) > 0; n-- {
		i := bytes.Index(b, frameEnd)
		if i < 0 {
			return nil
		}
		b = b[i+len(frameEnd):]
	}
	return b
}

var frameEnd = []byte("\n\n")

func (e *StreamEncoder) str(k, v string) {
	e.buf = append(e.buf, ',', '"')
	e.buf = append(e.buf, k...)
	e.buf = append(e.buf, '"', ':')
	e.buf = wire.AppendString(e.buf, v)
}

func (e *StreamEncoder) strBytes(k string, v []byte) {
	e.buf = append(e.buf, ',', '"')
	e.buf = append(e.buf, k...)
	e.buf = append(e.buf, '"', ':')
	e.buf = appendStringBytes(e.buf, v)
}

func (e *StreamEncoder) int(k string, v int) {
	e.buf = append(e.buf, ',', '"')
	e.buf = append(e.buf, k...)
	e.buf = append(e.buf, '"', ':')
	e.buf = strconv.AppendInt(e.buf, int64(v), 10)
}

func (e *StreamEncoder) raw(k string, v []byte) {
	e.buf = append(e.buf, ',', '"')
	e.buf = append(e.buf, k...)
	e.buf = append(e.buf, '"', ':')
	e.buf = append(e.buf, v...)
}

// appendStringBytes is wire.AppendString for text held as bytes.
func appendStringBytes(b, s []byte) []byte {
	return wire.AppendString(b, unsafeString(s))
}

// unsafeString views b as a string without copying it; the string must
// not outlive the next change to b.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// ---- lifecycle --------------------------------------------------------------

func (e *StreamEncoder) start() {
	if e.started {
		return
	}
	e.started = true
	status := "in_progress"
	if e.opt.Background {
		status = "queued"
	}
	if e.begin("response.created") {
		e.buf = append(e.buf, `,"response":`...)
		e.buf = e.appendResponse(e.buf, status, nil)
		e.end()
	}
	if e.begin("response.in_progress") {
		e.buf = append(e.buf, `,"response":`...)
		e.buf = e.appendResponse(e.buf, "in_progress", nil)
		e.end()
	}
}

func (e *StreamEncoder) itemID(prefix string, n int) string {
	b := make([]byte, 0, len(prefix)+len(e.core)+8)
	b = append(b, prefix...)
	b = append(b, '_')
	b = append(b, e.core...)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(n), 10)
	return string(b)
}

func (e *StreamEncoder) addItem(kind itemKind) *item {
	n := len(e.items)
	it := &item{kind: kind, index: n}
	switch kind {
	case kindMessage:
		it.id = e.itemID("msg", n)
	case kindReasoning:
		it.id = e.itemID("rs", n)
	case kindCall:
		it.id = e.itemID("fc", n)
	}
	return e.added(it)
}

// beginSummary begins a reasoning summary event of it (its only summary
// part); false if the event is not written.
func (e *StreamEncoder) beginSummary(typ string, it *item) bool {
	if !e.begin(typ) {
		return false
	}
	e.str("item_id", it.id)
	e.int("output_index", it.index)
	e.int("summary_index", 0)
	return true
}

// added appends it to the output and writes its output_item.added.
func (e *StreamEncoder) added(it *item) *item {
	e.items = append(e.items, it)
	if e.begin("response.output_item.added") {
		e.int("output_index", it.index)
		e.buf = append(e.buf, `,"item":`...)
		e.buf = e.appendItem(e.buf, it, "in_progress", true)
		e.end()
	}
	return it
}

// closeOpen closes the open message or reasoning item.
func (e *StreamEncoder) closeOpen(status string) {
	it := e.open
	if it == nil {
		return
	}
	e.open = nil
	switch it.kind {
	case kindMessage:
		for i, p := range it.parts {
			e.closePart(it, i, p)
		}
	case kindReasoning:
		if len(it.parts) > 0 { // a summary part was opened
			if e.beginSummary("response.reasoning_summary_text.done", it) {
				e.strBytes("text", it.text)
				e.end()
			}
			if e.beginSummary("response.reasoning_summary_part.done", it) {
				e.buf = append(e.buf, `,"part":{"type":"summary_text","text":`...)
				e.buf = appendStringBytes(e.buf, it.text)
				e.buf = append(e.buf, '}')
				e.end()
			}
		}
	}
	e.itemDone(it, status)
}

func (e *StreamEncoder) closePart(it *item, i int, p *part) {
	if p.done {
		return
	}
	p.done = true
	typ, key := "response.output_text.done", "text"
	if p.refusal {
		typ, key = "response.refusal.done", "refusal"
	}
	if e.begin(typ) {
		e.str("item_id", it.id)
		e.int("output_index", it.index)
		e.int("content_index", i)
		e.strBytes(key, p.text)
		if !p.refusal {
			e.buf = append(e.buf, `,"logprobs":[]`...)
		}
		e.end()
	}
	if e.begin("response.content_part.done") {
		e.str("item_id", it.id)
		e.int("output_index", it.index)
		e.int("content_index", i)
		e.buf = append(e.buf, `,"part":`...)
		e.buf = appendPart(e.buf, p)
		e.end()
	}
}

// itemDone renders the complete item and writes response.output_item.done.
func (e *StreamEncoder) itemDone(it *item, status string) {
	it.done = true
	it.json = e.appendItem(it.json[:0], it, status, false)
	if e.begin("response.output_item.done") {
		e.int("output_index", it.index)
		e.raw("item", it.json)
		e.end()
	}
}

// ---- text and reasoning -----------------------------------------------------

func (e *StreamEncoder) textDelta(text string, refusal bool) {
	it := e.open
	if it == nil || it.kind != kindMessage {
		e.closeOpen("completed")
		it = e.addItem(kindMessage)
		e.open = it
	}
	var p *part
	if n := len(it.parts); n > 0 && it.parts[n-1].refusal == refusal {
		p = it.parts[n-1]
	} else {
		if n > 0 {
			e.closePart(it, n-1, it.parts[n-1])
		}
		p = &part{refusal: refusal}
		it.parts = append(it.parts, p)
		if e.begin("response.content_part.added") {
			e.str("item_id", it.id)
			e.int("output_index", it.index)
			e.int("content_index", len(it.parts)-1)
			e.buf = append(e.buf, `,"part":`...)
			e.buf = appendPart(e.buf, p)
			e.end()
		}
	}
	p.text = append(p.text, text...)
	typ := "response.output_text.delta"
	if refusal {
		typ = "response.refusal.delta"
	}
	if e.begin(typ) {
		e.str("item_id", it.id)
		e.int("output_index", it.index)
		e.int("content_index", len(it.parts)-1)
		e.str("delta", text)
		if !refusal {
			e.buf = append(e.buf, `,"logprobs":[]`...)
		}
		e.end()
	}
}

func (e *StreamEncoder) reasoningDelta(ev *bridge.Event) {
	if ev.Signature != "" {
		e.drop("reasoning.signature") // Responses has no place for a signature
	}
	if ev.Text == "" && ev.Encrypted == "" {
		return
	}
	it := e.open
	if it == nil || it.kind != kindReasoning {
		e.closeOpen("completed")
		it = e.addItem(kindReasoning)
		e.open = it
	}
	it.enc += ev.Encrypted
	if ev.Text == "" {
		return
	}
	if len(it.parts) == 0 {
		it.parts = append(it.parts, &part{}) // marks the summary part open
		if e.beginSummary("response.reasoning_summary_part.added", it) {
			e.buf = append(e.buf, `,"part":{"type":"summary_text","text":""}`...)
			e.end()
		}
	}
	it.text = append(it.text, ev.Text...)
	if e.beginSummary("response.reasoning_summary_text.delta", it) {
		e.str("delta", ev.Text)
		e.end()
	}
}

// ---- function calls ---------------------------------------------------------

// call returns the open function call of hub index i, nil when none is.
func (e *StreamEncoder) call(i int) *item {
	for k := len(e.items) - 1; k >= 0; k-- {
		if it := e.items[k]; it.kind == kindCall && it.hub == i && !it.done {
			return it
		}
	}
	return nil
}

func (e *StreamEncoder) newCall(tc *bridge.ToolCall) *item {
	e.closeOpen("completed")
	// The item is complete when output_item.added is written, bar its
	// arguments.
	n := len(e.items)
	return e.added(&item{kind: kindCall, index: n, id: e.itemID("fc", n), hub: tc.Index, callID: tc.ID, name: tc.Name})
}

func (e *StreamEncoder) toolCall(kind bridge.Kind, tc *bridge.ToolCall) {
	it := e.call(tc.Index)
	if it != nil && kind == bridge.KindToolCallStarted {
		if tc.ID == "" || tc.ID == it.callID {
			return // a repeated start
		}
		e.callDone(it, "completed") // the same index, a new call: a later step's
		it = nil
	}
	if it == nil {
		it = e.newCall(tc)
		if kind == bridge.KindToolCallStarted {
			e.argsDelta(it, tc.Arguments)
			return
		}
	}
	if it.callID == "" {
		it.callID = tc.ID
	}
	if it.name == "" {
		it.name = tc.Name
	}
	switch kind {
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta:
		e.argsDelta(it, tc.Arguments)
	case bridge.KindToolCallDone:
		full := tc.Arguments
		if len(full) > len(it.args) && strings.HasPrefix(full, unsafeString(it.args)) {
			e.argsDelta(it, full[len(it.args):])
		} else if full != unsafeString(it.args) && full != "" {
			it.args = append(it.args[:0], full...) // the complete text wins
		}
		e.callDone(it, "completed")
	}
}

func (e *StreamEncoder) argsDelta(it *item, frag string) {
	if frag == "" {
		return
	}
	it.args = append(it.args, frag...)
	if e.begin("response.function_call_arguments.delta") {
		e.str("item_id", it.id)
		e.int("output_index", it.index)
		e.str("delta", frag)
		e.end()
	}
}

func (e *StreamEncoder) callDone(it *item, status string) {
	if e.begin("response.function_call_arguments.done") {
		e.str("item_id", it.id)
		e.int("output_index", it.index)
		e.strBytes("arguments", it.args)
		e.end()
	}
	e.itemDone(it, status)
}

// ---- errors and the end -----------------------------------------------------

func (e *StreamEncoder) errorEvent(err *bridge.Error) {
	e.errSent = true
	if !e.begin("error") {
		return
	}
	_, body := EncodeError(err)
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	o, _ := wire.AsObject(env.Error, "")
	for _, k := range []string{"code", "message", "param"} {
		e.raw(k, orNull(o[k]))
	}
	e.raw("error", env.Error)
	e.end()
}

// terminal closes what is open and writes the terminal event.
func (e *StreamEncoder) terminal(f *bridge.Final) {
	e.final = f
	if (f.Status == bridge.StatusFailed || f.Status == bridge.StatusInterrupted) && !e.errSent {
		// The error's type, code and param, which response.error has no
		// place for.
		err := oaierror.FinalError(f, nil)
		e.errEv = err
		e.errorEvent(err)
	}
	itemStatus := "completed"
	if f.Status != bridge.StatusCompleted && f.Status != bridge.StatusInputRequired {
		itemStatus = "incomplete"
	}
	e.closeOpen(itemStatus)
	for _, it := range e.items {
		if it.kind == kindCall && !it.done {
			e.callDone(it, itemStatus)
		}
	}
	typ, status := e.outcome()
	if e.begin(typ) {
		e.buf = append(e.buf, `,"response":`...)
		e.buf = e.appendResponse(e.buf, status, f)
		e.end()
	}
}

// outcome is the terminal event's type and the response's status.
func (e *StreamEncoder) outcome() (typ, status string) {
	f := e.final
	switch f.Status {
	case bridge.StatusCompleted, bridge.StatusInputRequired:
		switch f.StopReason {
		case bridge.StopMaxTokens, bridge.StopContentFilter:
			return "response.incomplete", "incomplete"
		case bridge.StopPause:
			e.drop("stop_reason:" + string(f.StopReason))
		}
		return "response.completed", "completed"
	case bridge.StatusCancelled:
		return "response.failed", "cancelled"
	}
	return "response.failed", "failed"
}

// ---- rendering --------------------------------------------------------------

// appendResponse renders the Response object with the given status; f is
// the final of a terminal snapshot (nil before the end).
func (e *StreamEncoder) appendResponse(b []byte, status string, f *bridge.Final) []byte {
	b = append(b, `{"id":`...)
	b = wire.AppendString(b, e.opt.ID)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, e.opt.Created, 10)
	b = append(b, `,"status":`...)
	b = wire.AppendString(b, status)
	b = append(b, `,"completed_at":`...)
	if f != nil && (status == "completed" || status == "incomplete") {
		b = strconv.AppendInt(b, e.doneAt, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":`...)
	if err := e.responseError(f); err != nil {
		b = append(b, `{"code":`...)
		if f.Status == bridge.StatusCancelled {
			b = wire.AppendString(b, "cancelled")
		} else {
			b = wire.AppendString(b, responseErrorCode(err))
		}
		b = append(b, `,"message":`...)
		b = wire.AppendString(b, err.Message)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if status == "incomplete" {
		reason := "max_output_tokens"
		if f.StopReason == bridge.StopContentFilter {
			reason = "content_filter"
		}
		b = append(b, `{"reason":`...)
		b = wire.AppendString(b, reason)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = wire.AppendString(b, e.opt.Model)
	b = append(b, `,"output":[`...)
	for i, it := range e.items {
		if i > 0 {
			b = append(b, ',')
		}
		if it.done {
			b = append(b, it.json...)
		} else {
			b = e.appendItem(b, it, "in_progress", false)
		}
	}
	b = append(b, `],"usage":`...)
	if f != nil {
		b = appendUsage(b, &e.usage)
	} else {
		b = append(b, "null"...)
	}
	if len(e.echo) > 0 {
		b = append(b, ',')
		b = append(b, e.echo...)
	}
	return append(b, '}')
}

// responseError is the error a terminal snapshot carries.
func (e *StreamEncoder) responseError(f *bridge.Final) *bridge.Error {
	if f == nil {
		return nil
	}
	return oaierror.FinalError(f, e.errEv)
}

// appendItem renders an output item in its current state.
func (e *StreamEncoder) appendItem(b []byte, it *item, status string, added bool) []byte {
	b = append(b, `{"id":`...)
	b = wire.AppendString(b, it.id)
	switch it.kind {
	case kindMessage:
		b = append(b, `,"type":"message","status":`...)
		b = wire.AppendString(b, status)
		b = append(b, `,"content":[`...)
		if !added {
			for i, p := range it.parts {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendPart(b, p)
			}
		}
		b = append(b, `],"role":"assistant"}`...)
	case kindReasoning:
		b = append(b, `,"type":"reasoning","summary":[`...)
		if len(it.text) > 0 && !added {
			b = append(b, `{"type":"summary_text","text":`...)
			b = appendStringBytes(b, it.text)
			b = append(b, '}')
		}
		b = append(b, ']')
		if it.enc != "" && !added {
			b = append(b, `,"encrypted_content":`...)
			b = wire.AppendString(b, it.enc)
		}
		b = append(b, '}')
	case kindCall:
		b = append(b, `,"type":"function_call","status":`...)
		b = wire.AppendString(b, status)
		b = append(b, `,"arguments":`...)
		if added {
			b = append(b, `""`...)
		} else {
			b = appendStringBytes(b, it.args)
		}
		b = append(b, `,"call_id":`...)
		b = wire.AppendString(b, it.callID)
		b = append(b, `,"name":`...)
		b = wire.AppendString(b, it.name)
		b = append(b, '}')
	}
	return b
}

func appendPart(b []byte, p *part) []byte {
	if p.refusal {
		b = append(b, `{"type":"refusal","refusal":`...)
		b = appendStringBytes(b, p.text)
		return append(b, '}')
	}
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = appendStringBytes(b, p.text)
	return append(b, '}')
}

// appendUsage renders a ResponseUsage: every count present, zero when not
// reported. The hub's input count includes cached tokens, as Responses'.
func appendUsage(b []byte, u *bridge.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = wire.AppendCount(b, u.InputTokens)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = wire.AppendCount(b, u.CacheReadTokens)
	b = append(b, `,"cache_write_tokens":`...)
	b = wire.AppendCount(b, u.CacheWriteTokens)
	b = append(b, `},"output_tokens":`...)
	b = wire.AppendCount(b, u.OutputTokens)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = wire.AppendCount(b, u.ReasoningTokens)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, u.Total(), 10)
	return append(b, '}')
}

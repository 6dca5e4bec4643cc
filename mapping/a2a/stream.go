package a2a

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Profile says how an upstream arranges its events (chatkit's two A2A
// profiles). It is chosen in the config per upstream, never guessed from
// the server's name.
type Profile string

const (
	// ProfileA2A: the answer streams as artifact-update chunks; messages
	// of working status-updates are the agent's process (shown as
	// reasoning).
	ProfileA2A Profile = "a2a"
	// ProfileADK: an ADK executor streams the answer as messages of
	// working status-updates; its final artifact repeats the last message
	// and is skipped.
	ProfileADK Profile = "adk"
)

// StreamDecoder turns an A2A upstream's stream frames, or a message/send
// result, into hub events (upstream frames -> events), in either version's
// shapes. One decoder follows one upstream task across reconnects: a Task
// snapshot (what a resubscribe begins with) adds only the artifact text not
// yet emitted, so a resumed stream has no gap and no duplicate.
//
// Task states map to the final: completed to completed; failed and
// rejected to failed (the status message is the reason); canceled to
// cancelled; input-required and auth-required to input_required (an
// input-required question is answer text). final: true in any other state
// is not an outcome (see Unfinished). A StreamDecoder is not safe for
// concurrent use.
type StreamDecoder struct {
	Profile Profile
	// TaskID and ContextID are the upstream's, once a frame named them;
	// LastEventID is the SSE id of the last frame that had one.
	TaskID, ContextID, LastEventID string

	emitted    map[string]int // answer text bytes emitted per artifact
	started    bool
	answer     strings.Builder
	final      bool
	unfinished bool
	calls      int
	// held are the agent's function calls not answered yet, in order: an
	// agent's own call is emitted (SourceAgent) when its
	// function_response comes; calls still unanswered when the task
	// stops input-required are the client's to answer (SourceModel).
	held    []bridge.ToolCall
	clients map[string]bool   // ids of calls emitted as the client's
	asked   []bridge.ToolCall // the calls emitted as the client's, in order
	id      string            // the SSE id of the frame being decoded
	// skip is answer text a resumed decoder's predecessor emitted, not yet
	// attributed to an artifact: a Task snapshot does not repeat it.
	skip int
}

// NewStreamDecoder returns a decoder for profile (ProfileA2A when empty).
func NewStreamDecoder(p Profile) *StreamDecoder {
	if p == "" {
		p = ProfileA2A
	}
	return &StreamDecoder{Profile: p, emitted: map[string]int{}}
}

// Resume sets d up to follow a task another decoder (another process)
// followed, after the events it emitted (one run step's committed events,
// oldest first): the task's ids, the last SSE id among them, the answer so
// far. A Task snapshot the resumed stream begins with then adds only the
// artifact text not yet emitted, and message_started is not repeated.
func (d *StreamDecoder) Resume(taskID, contextID string, prev []bridge.Event) {
	d.TaskID, d.ContextID = taskID, contextID
	for i := range prev {
		ev := &prev[i]
		if ev.UpstreamID != "" {
			d.LastEventID = ev.UpstreamID
		}
		switch ev.Kind {
		case bridge.KindMessageStarted:
			d.started = true
		case bridge.KindTextDelta:
			d.started = true
			d.answer.WriteString(ev.Text)
		case bridge.KindToolCallStarted:
			d.calls++
		}
	}
	d.skip = d.answer.Len()
}

// attribute gives an artifact seen for the first time after a resume the
// answer text emitted before it, up to n bytes, and returns how much.
func (d *StreamDecoder) attribute(id string, n int) int {
	if d.skip == 0 || d.emitted[id] > 0 {
		return 0
	}
	n = min(n, d.skip)
	d.skip -= n
	d.emitted[id] = n
	return n
}

// Done reports whether a final event was decoded.
func (d *StreamDecoder) Done() bool { return d.final }

// Unfinished reports whether the upstream closed its stream (final: true)
// while the task had no outcome yet: the caller resubscribes.
func (d *StreamDecoder) Unfinished() bool { return d.unfinished && !d.final }

// Asked returns the tool calls the task asked the client to answer
// (emitted with SourceModel), in order.
func (d *StreamDecoder) Asked() []bridge.ToolCall { return d.asked }

// Answer is the answer text emitted so far.
func (d *StreamDecoder) Answer() string { return d.answer.String() }

// wire shapes, both versions, read leniently (this is a server's output).
type (
	wireEvent struct {
		Kind      string          `json:"kind"`
		ID        string          `json:"id"`
		ContextID string          `json:"contextId"`
		TaskID    string          `json:"taskId"`
		Status    *wireStatus     `json:"status"`
		Artifacts []wireArtifact  `json:"artifacts"`
		Artifact  *wireArtifact   `json:"artifact"`
		Append    bool            `json:"append"`
		LastChunk bool            `json:"lastChunk"`
		Final     bool            `json:"final"`
		Metadata  json.RawMessage `json:"metadata"`
		MessageID string          `json:"messageId"`
		Role      string          `json:"role"`
		Parts     []wirePart      `json:"parts"`
		History   []wireMessage   `json:"history"`
	}
	wireStatus struct {
		State   string       `json:"state"`
		Message *wireMessage `json:"message"`
	}
	wireMessage struct {
		MessageID string     `json:"messageId"`
		Role      string     `json:"role"`
		Parts     []wirePart `json:"parts"`
	}
	wireArtifact struct {
		ArtifactID string     `json:"artifactId"`
		Name       string     `json:"name"`
		Parts      []wirePart `json:"parts"`
	}
	wirePart struct {
		Kind     string          `json:"kind"`
		Text     *string         `json:"text"`
		Data     json.RawMessage `json:"data"`
		File     *wireFile       `json:"file"`
		Raw      string          `json:"raw"`
		URL      string          `json:"url"`
		Media    string          `json:"mediaType"`
		Filename string          `json:"filename"`
		Metadata map[string]any  `json:"metadata"`
	}
	wireFile struct {
		Bytes    string `json:"bytes"`
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Name     string `json:"name"`
	}
)

// Frame decodes one SSE event's data, a JSON-RPC response, with SSE id id,
// appending the events to out. A JSON-RPC error is returned as a
// *bridge.Error (see DecodeError).
func (d *StreamDecoder) Frame(data []byte, id string, out []bridge.Event) ([]bridge.Event, error) {
	d.id = id
	if id != "" {
		d.LastEventID = id
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return out, bridge.Errorf(bridge.CodeUpstream, "upstream agent sent a frame that is not JSON")
	}
	if len(env.Error) > 0 && !isNull(env.Error) {
		return out, DecodeError(0, data)
	}
	if len(env.Result) == 0 {
		return out, bridge.Errorf(bridge.CodeUpstream, "upstream agent sent a frame with neither result nor error")
	}
	return d.Result(env.Result, out)
}

// Result decodes a result object: a Task, a Message, a status-update or an
// artifact-update, in 0.3's kind form or 1.0's wrapped form.
func (d *StreamDecoder) Result(result []byte, out []bridge.Event) ([]bridge.Event, error) {
	kind, body, err := unwrapResult(result)
	if err != nil {
		return out, err
	}
	var ev wireEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return out, bridge.Errorf(bridge.CodeUpstream, "upstream agent sent a %s the bridge cannot read", kind)
	}
	switch kind {
	case "task":
		d.ids(ev.ID, ev.ContextID)
		return d.task(&ev, out), nil
	case "message":
		d.ids(ev.TaskID, ev.ContextID)
		out = d.start(out)
		out = d.message(&wireMessage{Parts: ev.Parts, Role: ev.Role}, true, out)
		out = d.release(out)
		return d.finish(out, &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}, ev.Metadata), nil
	case "status-update":
		d.ids(ev.TaskID, ev.ContextID)
		return d.status(&ev, out), nil
	case "artifact-update":
		d.ids(ev.TaskID, ev.ContextID)
		if ev.Artifact == nil {
			return out, nil
		}
		return d.artifact(ev.Artifact, ev.Append, ev.LastChunk, out), nil
	}
	return out, bridge.Errorf(bridge.CodeUpstream, "upstream agent sent a result of unknown kind %q", kind)
}

// unwrapResult finds a result's kind: 0.3's "kind", 1.0's one-key wrapper
// (camelCase or snake_case), or a bare 1.0 Task or Message.
func unwrapResult(result []byte) (string, []byte, error) {
	o, err := wire.AsObject(result, "result")
	if err != nil {
		return "", nil, bridge.Errorf(bridge.CodeUpstream, "upstream agent sent a result that is not an object")
	}
	if k, _ := optString(o, "kind", ""); k != "" {
		return k, result, nil
	}
	wrappers := map[string]string{"task": "task", "message": "message", "statusUpdate": "status-update",
		"artifactUpdate": "artifact-update", "status_update": "status-update", "artifact_update": "artifact-update"}
	if len(o) == 1 {
		for k, raw := range o {
			if kind, ok := wrappers[k]; ok && wire.Kind(raw) == '{' {
				return kind, raw, nil
			}
		}
	}
	_, hasID := o["id"]
	_, hasStatus := o["status"]
	_, hasMsgID := o["messageId"]
	_, hasArtifact := o["artifact"]
	switch {
	case hasID && hasStatus:
		return "task", result, nil
	case hasMsgID:
		return "message", result, nil
	case hasArtifact:
		return "artifact-update", result, nil
	case hasStatus:
		return "status-update", result, nil
	}
	return "", nil, bridge.Errorf(bridge.CodeUpstream, "upstream agent sent a result the bridge cannot read")
}

func (d *StreamDecoder) ids(task, ctx string) {
	if task != "" && d.TaskID == "" {
		d.TaskID = task
	}
	if ctx != "" && d.ContextID == "" {
		d.ContextID = ctx
	}
}

func (d *StreamDecoder) emit(out []bridge.Event, ev bridge.Event) []bridge.Event {
	ev.UpstreamID = d.id
	return append(out, ev)
}

// start emits message_started once, naming the upstream task.
func (d *StreamDecoder) start(out []bridge.Event) []bridge.Event {
	if d.started {
		return out
	}
	d.started = true
	return d.emit(out, bridge.Event{Kind: bridge.KindMessageStarted, ResponseID: d.TaskID})
}

func (d *StreamDecoder) text(out []bridge.Event, s string) []bridge.Event {
	if s == "" {
		return out
	}
	out = d.start(out)
	d.answer.WriteString(s)
	return d.emit(out, bridge.Event{Kind: bridge.KindTextDelta, Text: s})
}

// task decodes a Task: its ids, the artifact text not emitted yet, and its
// outcome when it has one.
func (d *StreamDecoder) task(ev *wireEvent, out []bridge.Event) []bridge.Event {
	out = d.start(out)
	st := ParseState("")
	if ev.Status != nil {
		st = ParseState(ev.Status.State)
	}
	terminal := st.Terminal() || st == "input-required" || st == "auth-required"
	if d.Profile == ProfileA2A || (terminal && d.answer.Len() == 0) {
		for i := range ev.Artifacts {
			a := &ev.Artifacts[i]
			full := partsText(a.Parts)
			d.attribute(a.ArtifactID, len(full))
			done := d.emitted[a.ArtifactID]
			if len(full) > done {
				out = d.text(out, full[done:])
				d.emitted[a.ArtifactID] = len(full)
			}
			out = d.fileParts(out, a)
		}
	}
	if terminal {
		return d.outcome(ev.Status, nil, ev.History, out)
	}
	return out
}

func partsText(parts []wirePart) string {
	var b strings.Builder
	for i := range parts {
		if parts[i].Text != nil && !isThought(parts[i].Metadata) {
			b.WriteString(*parts[i].Text)
		}
	}
	return b.String()
}

// status decodes a status-update.
func (d *StreamDecoder) status(ev *wireEvent, out []bridge.Event) []bridge.Event {
	if ev.Status == nil {
		return out
	}
	out = d.start(out)
	st := ParseState(ev.Status.State)
	switch {
	case st.Terminal() || st == "input-required" || st == "auth-required":
		return d.outcome(ev.Status, ev.Metadata, nil, out)
	case ev.Final:
		d.unfinished = true // final alone is not an outcome
	}
	if m := ev.Status.Message; m != nil && m.Role != "user" && m.Role != "ROLE_USER" {
		out = d.message(m, d.Profile == ProfileADK, out)
	}
	return out
}

// message decodes an agent message's parts: text is the answer (answer)
// or the agent's process shown as reasoning; adk_thought text is
// reasoning; adk function_call and function_response data parts are the
// agent's own tool calls and results; files and other data are artifacts.
func (d *StreamDecoder) message(m *wireMessage, answer bool, out []bridge.Event) []bridge.Event {
	for i := range m.Parts {
		p := &m.Parts[i]
		switch {
		case p.Text != nil && (isThought(p.Metadata) || !answer):
			if *p.Text != "" {
				out = d.emit(out, bridge.Event{Kind: bridge.KindReasoningDelta, Source: bridge.SourceAgent, Text: *p.Text})
			}
		case p.Text != nil:
			out = d.text(out, *p.Text)
		case len(p.Data) > 0:
			out = d.data(p, out)
		default:
			if bp, ok := filePart(p); ok {
				out = d.emit(out, bridge.Event{Kind: bridge.KindArtifact, Source: bridge.SourceAgent,
					Artifact: &bridge.Artifact{Parts: []bridge.Part{bp}, LastChunk: true}})
			}
		}
	}
	return out
}

// data decodes a data part: ADK's function_call and function_response, or
// plain data (an artifact). A function call is held until its response
// comes (the agent ran its own tool) or the task stops for input (the
// call is the client's): see outcome.
func (d *StreamDecoder) data(p *wirePart, out []bridge.Event) []bridge.Event {
	t, _ := p.Metadata[metaADKType].(string)
	switch t {
	case adkFunctionCall:
		if tc, ok := decodeCall(p.Data); ok && !d.isHeld(tc.ID) && !d.clients[tc.ID] {
			d.held = append(d.held, tc)
		}
		return out
	case adkFunctionResp:
		var fr struct {
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Response json.RawMessage `json:"response"`
		}
		_ = json.Unmarshal(p.Data, &fr)
		for i, tc := range d.held {
			if tc.ID == fr.ID {
				d.held = append(d.held[:i:i], d.held[i+1:]...)
				out = d.call(out, tc, bridge.SourceAgent)
				break
			}
		}
		resp := fr.Response
		if len(resp) == 0 {
			resp = json.RawMessage("{}")
		}
		return d.emit(out, bridge.Event{Kind: bridge.KindToolResult, Source: bridge.SourceAgent, ToolResult: &bridge.ToolResult{
			CallID: fr.ID, Name: fr.Name, Content: []bridge.Part{{Type: bridge.PartData, JSON: compact(resp)}}}})
	}
	return d.emit(out, bridge.Event{Kind: bridge.KindArtifact, Source: bridge.SourceAgent,
		Artifact: &bridge.Artifact{Parts: []bridge.Part{{Type: bridge.PartData, JSON: compact(p.Data)}}, LastChunk: true}})
}

// decodeCall reads an ADK function_call data part's call.
func decodeCall(data json.RawMessage) (bridge.ToolCall, bool) {
	var fc struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	if json.Unmarshal(data, &fc) != nil || fc.Name == "" {
		return bridge.ToolCall{}, false
	}
	args := string(compact(fc.Args))
	if len(fc.Args) == 0 || wire.IsNull(fc.Args) {
		args = "{}"
	} else if wire.Kind(fc.Args) == '"' {
		var s string
		_ = json.Unmarshal(fc.Args, &s)
		args = s
	}
	return bridge.ToolCall{ID: fc.ID, Name: fc.Name, Arguments: args}, true
}

func (d *StreamDecoder) isHeld(id string) bool {
	for _, tc := range d.held {
		if tc.ID == id && id != "" {
			return true
		}
	}
	return false
}

// call emits one complete tool call, the agent's own or the client's.
func (d *StreamDecoder) call(out []bridge.Event, tc bridge.ToolCall, src bridge.Source) []bridge.Event {
	tc.Index = d.calls
	d.calls++
	if src == bridge.SourceModel {
		if d.clients == nil {
			d.clients = map[string]bool{}
		}
		d.clients[tc.ID] = true
		d.asked = append(d.asked, tc)
	}
	out = d.emit(out, bridge.Event{Kind: bridge.KindToolCallStarted, Source: src, Index: tc.Index,
		ToolCall: &bridge.ToolCall{ID: tc.ID, Name: tc.Name, Index: tc.Index}})
	return d.emit(out, bridge.Event{Kind: bridge.KindToolCallDone, Source: src, Index: tc.Index, ToolCall: &tc})
}

// release emits the held calls as the agent's own: the task ended
// without asking the client for them.
func (d *StreamDecoder) release(out []bridge.Event) []bridge.Event {
	for _, tc := range d.held {
		out = d.call(out, tc, bridge.SourceAgent)
	}
	d.held = nil
	return out
}

// clientCalls takes the calls a task that stopped for input asks the
// client to answer: the held calls, the function calls of its status
// message (where an agent puts the call it waits on) and, for a Task,
// the calls of its history that no function_response answers.
func (d *StreamDecoder) clientCalls(status *wireMessage, history []wireMessage) []bridge.ToolCall {
	calls := d.held
	d.held = nil
	add := func(m *wireMessage, answered map[string]bool) {
		for i := range m.Parts {
			p := &m.Parts[i]
			if t, _ := p.Metadata[metaADKType].(string); t != adkFunctionCall || len(p.Data) == 0 {
				continue
			}
			tc, ok := decodeCall(p.Data)
			if !ok || answered[tc.ID] || d.clients[tc.ID] {
				continue
			}
			dup := false
			for _, c := range calls {
				dup = dup || (c.ID == tc.ID && tc.ID != "")
			}
			if !dup {
				calls = append(calls, tc)
			}
		}
	}
	answered := map[string]bool{}
	for i := range history {
		for _, p := range history[i].Parts {
			if t, _ := p.Metadata[metaADKType].(string); t == adkFunctionResp {
				var fr struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(p.Data, &fr)
				answered[fr.ID] = true
			}
		}
	}
	for i := range history {
		if history[i].Role != "user" && history[i].Role != "ROLE_USER" {
			add(&history[i], answered)
		}
	}
	if status != nil {
		add(status, nil)
	}
	return calls
}

func filePart(p *wirePart) (bridge.Part, bool) {
	var fp bridge.Part
	switch {
	case p.File != nil:
		fp = bridge.Part{Data: p.File.Bytes, URL: p.File.URI, MediaType: p.File.MimeType, Filename: p.File.Name}
	case p.Raw != "" || p.URL != "":
		fp = bridge.Part{Data: p.Raw, URL: p.URL, MediaType: p.Media, Filename: p.Filename}
	default:
		return fp, false
	}
	fp.Type = wire.PartType(fp.MediaType)
	return fp, true
}

// fileParts emits an artifact's non-text parts as an artifact event.
func (d *StreamDecoder) fileParts(out []bridge.Event, a *wireArtifact) []bridge.Event {
	var parts []bridge.Part
	for i := range a.Parts {
		p := &a.Parts[i]
		if p.Text != nil {
			continue
		}
		if len(p.Data) > 0 {
			parts = append(parts, bridge.Part{Type: bridge.PartData, JSON: compact(p.Data)})
		} else if fp, ok := filePart(p); ok {
			parts = append(parts, fp)
		}
	}
	if len(parts) == 0 || d.emitted["parts:"+a.ArtifactID] >= len(parts) {
		return out
	}
	parts = parts[d.emitted["parts:"+a.ArtifactID]:]
	d.emitted["parts:"+a.ArtifactID] += len(parts)
	return d.emit(out, bridge.Event{Kind: bridge.KindArtifact, Source: bridge.SourceAgent,
		Artifact: &bridge.Artifact{ID: a.ArtifactID, Name: a.Name, Parts: parts, Append: true}})
}

// artifact decodes an artifact-update: its text is the answer (a2a
// profile; the adk profile skips it, a copy of the messages), its other
// parts an artifact.
func (d *StreamDecoder) artifact(a *wireArtifact, appendChunk, last bool, out []bridge.Event) []bridge.Event {
	if d.Profile == ProfileA2A {
		s := partsText(a.Parts)
		if appendChunk {
			// More of an artifact begun before a resume: the text emitted
			// before is its beginning.
			d.attribute(a.ArtifactID, d.skip)
		}
		if !appendChunk && d.emitted[a.ArtifactID] > 0 {
			// A replacement of an artifact already streamed: the client has
			// its text; what goes on is taken as more of it.
			d.emitted[a.ArtifactID] = 0
		}
		out = d.text(out, s)
		d.emitted[a.ArtifactID] += len(s)
	}
	return d.fileParts(out, a)
}

// outcome decodes a state with an outcome into the run's final. A task
// that stops input-required with function calls no response answers asks
// the client for their results: they are the client's tool calls, and the
// run waits for them (input_required, stop reason tool_use). history is a
// Task's, nil for a status-update.
func (d *StreamDecoder) outcome(s *wireStatus, meta json.RawMessage, history []wireMessage, out []bridge.Event) []bridge.Event {
	st := ParseState(s.State)
	var msg string
	if s.Message != nil {
		msg = partsText(s.Message.Parts)
	}
	f := &bridge.Final{}
	if st == "input-required" {
		if calls := d.clientCalls(s.Message, history); len(calls) > 0 {
			out = d.text(out, msg)
			for _, tc := range calls {
				out = d.call(out, tc, bridge.SourceModel)
			}
			f.Status, f.StopReason = bridge.StatusInputRequired, bridge.StopToolUse
			return d.finish(out, f, meta)
		}
	}
	out = d.release(out)
	switch st {
	case "completed":
		f.Status, f.StopReason = bridge.StatusCompleted, bridge.StopEndTurn
	case "failed", "rejected":
		f.Status, f.Reason = bridge.StatusFailed, orDefault(msg, "the upstream agent "+string(st)+" the task")
		f.Error = &bridge.Error{Code: bridge.CodeUpstream, Message: f.Reason, Dialect: Dialect, UpstreamCode: string(st)}
	case "canceled":
		f.Status, f.Reason = bridge.StatusCancelled, orDefault(msg, "the upstream agent canceled the task")
	case "input-required":
		out = d.text(out, msg) // the agent's question is its answer so far
		f.Status, f.Reason = bridge.StatusInputRequired, "the upstream agent needs more input"
	case "auth-required":
		out = d.text(out, msg)
		f.Status, f.Reason = bridge.StatusInputRequired, "the upstream agent needs authentication"
	}
	return d.finish(out, f, meta)
}

// finish closes the answer and emits the usage a bridge upstream reports
// in metadata, then the final.
func (d *StreamDecoder) finish(out []bridge.Event, f *bridge.Final, meta json.RawMessage) []bridge.Event {
	if d.final {
		return out
	}
	d.final = true
	if d.started {
		out = d.emit(out, bridge.Event{Kind: bridge.KindMessageDone})
	}
	if u := usageFromMeta(meta); u != nil {
		out = d.emit(out, bridge.Event{Kind: bridge.KindUsage, Usage: u})
		f.Usage = u
	}
	return d.emit(out, bridge.Event{Kind: bridge.KindFinal, Final: f})
}

// usageFromMeta reads the bridge's usage extension from metadata.
func usageFromMeta(meta json.RawMessage) *bridge.Usage {
	if len(meta) == 0 {
		return nil
	}
	var m struct {
		Usage *struct {
			In    *int64 `json:"inputTokens"`
			Out   *int64 `json:"outputTokens"`
			Rsn   *int64 `json:"reasoningTokens"`
			Read  *int64 `json:"cacheReadTokens"`
			Write *int64 `json:"cacheWriteTokens"`
			Total *int64 `json:"totalTokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Usage == nil {
		return nil
	}
	u := &bridge.Usage{InputTokens: m.Usage.In, OutputTokens: m.Usage.Out, ReasoningTokens: m.Usage.Rsn,
		CacheReadTokens: m.Usage.Read, CacheWriteTokens: m.Usage.Write, TotalTokens: m.Usage.Total}
	if u.IsZero() {
		return nil
	}
	return u
}

// DecodeStream reads an upstream's SSE stream into events with a decoder
// of profile: events after a JSON-RPC error frame or a stream that ends
// without an outcome are an error. It closes nothing; the caller owns r.
func DecodeStream(r io.Reader, p Profile) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		d := NewStreamDecoder(p)
		sr := NewSSEReader(r)
		var buf []bridge.Event
		for {
			ev, err := sr.Next()
			if err == io.EOF {
				if !d.Done() {
					yield(bridge.Event{}, bridge.Errorf(bridge.CodeUpstream, "the upstream agent ended its stream without an outcome"))
				}
				return
			}
			if err != nil {
				yield(bridge.Event{}, err)
				return
			}
			buf, err = d.Frame(ev.Data, ev.ID, buf[:0])
			for _, e := range buf {
				if !yield(e, nil) {
					return
				}
			}
			if err != nil {
				yield(bridge.Event{}, err)
				return
			}
			if d.Done() {
				return
			}
		}
	}
}

package a2a

import (
	"strconv"
	"strings"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
)

// TaskBuilder folds a run's events into the A2A task they describe. The
// run is the task: its id is the task id, its session the contextId. The
// run's input and its steers are the user messages of the history; the
// upstream's reasoning (text parts with adk_thought), tool calls and tool
// results (data parts with adk_type function_call and function_response)
// are agent messages; each assistant answer is an artifact ("answer",
// "answer-2", ...). Events are added in seq order; a TaskBuilder is not
// safe for concurrent use.
type TaskBuilder struct {
	id, contextID string

	input   []*a2asdk.Message
	state   a2asdk.TaskState
	ts      time.Time
	status  *a2asdk.Message // the status message
	history []*a2asdk.Message
	arts    []*artifact
	open    *artifact       // the answer being written
	thought *a2asdk.Message // the reasoning message deltas are merged into
	usage   bridge.Usage
	working bool
	lastSeq int64
	final   bool
	dropped []string
}

// artifact is one artifact being built: an answer's text, or the parts of
// an artifact the upstream sent.
type artifact struct {
	id, name string
	answer   bool
	text     strings.Builder
	parts    a2asdk.ContentParts
}

// NewTaskBuilder starts the task of run. msgs are the run's transcript
// messages (Engine.RunMessages): the leading user messages are its input.
// The run's own status stands until events say more, so a run whose
// events were deleted by retention still has its outcome.
func NewTaskBuilder(run *bridge.Run, msgs []bridge.Message) *TaskBuilder {
	b := &TaskBuilder{id: run.ID, contextID: run.SessionID, state: taskState(run.Status), ts: run.Created}
	if b.state == a2asdk.TaskStateWorking {
		b.state = a2asdk.TaskStateSubmitted
	}
	if !run.Finished.IsZero() {
		b.ts = run.Finished
	}
	for i := range msgs {
		if msgs[i].Role != bridge.RoleUser {
			break
		}
		id := msgs[i].ID
		if i == 0 && run.ClientRunID != "" {
			id = run.ClientRunID // the client's own messageId
		}
		if id == "" {
			id = run.ID + ":in" + strconv.Itoa(i)
		}
		b.input = append(b.input, b.message(id, a2asdk.MessageRoleUser, sdkParts(msgs[i].Parts)))
	}
	if run.Status != bridge.StatusRunning && run.Reason != "" && run.Status != bridge.StatusCompleted {
		b.status = b.message(run.ID+":status", a2asdk.MessageRoleAgent, a2asdk.ContentParts{a2asdk.TextPart{Text: run.Reason}})
	}
	return b
}

// taskState maps a run status to a task state.
func taskState(s bridge.Status) a2asdk.TaskState {
	switch s {
	case bridge.StatusCompleted:
		return a2asdk.TaskStateCompleted
	case bridge.StatusFailed, bridge.StatusInterrupted:
		return a2asdk.TaskStateFailed
	case bridge.StatusCancelled:
		return a2asdk.TaskStateCanceled
	case bridge.StatusInputRequired:
		return a2asdk.TaskStateInputRequired
	}
	return a2asdk.TaskStateWorking
}

func (b *TaskBuilder) message(id string, role a2asdk.MessageRole, parts a2asdk.ContentParts) *a2asdk.Message {
	return &a2asdk.Message{ID: id, Role: role, Parts: parts, TaskID: a2asdk.TaskID(b.id), ContextID: b.contextID}
}

func sdkParts(parts []bridge.Part) a2asdk.ContentParts {
	out := make(a2asdk.ContentParts, 0, len(parts))
	for i := range parts {
		if p, ok := SDKPart(&parts[i]); ok {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = append(out, a2asdk.TextPart{Text: ""})
	}
	return out
}

// frame says what an event writes on the stream.
type frame struct {
	kind  frameKind
	msg   *a2asdk.Message // status: its message
	state a2asdk.TaskState
	ts    time.Time
	final bool
	meta  map[string]any
	art   *artifact // artifact: which
	text  string    // an answer's text chunk
	parts a2asdk.ContentParts
	first bool // the artifact's first chunk (append false)
	last  bool // lastChunk
}

type frameKind uint8

const (
	frameNone frameKind = iota
	frameTask
	frameStatus
	frameText
	frameParts
)

// Add folds ev into the task and says what it writes on a stream.
func (b *TaskBuilder) Add(ev *bridge.Event) frame {
	if ev.Seq > b.lastSeq {
		b.lastSeq = ev.Seq
	}
	if b.final && ev.Kind != bridge.KindFinal {
		if b.state != a2asdk.TaskStateInputRequired {
			return frame{}
		}
		// The run went on with the client's input (its tool results): the
		// task works again.
		b.final, b.working, b.status = false, false, nil
	}
	switch ev.Kind {
	case bridge.KindRunStarted:
		b.state, b.ts, b.status = a2asdk.TaskStateSubmitted, ev.Time, nil
		return frame{kind: frameTask}
	case bridge.KindMessageStarted:
		b.thought = nil
		if b.working {
			return frame{}
		}
		b.working, b.state, b.ts = true, a2asdk.TaskStateWorking, ev.Time
		return frame{kind: frameStatus, state: b.state, ts: ev.Time}
	case bridge.KindTextDelta:
		if ev.Text == "" {
			return frame{}
		}
		b.setWorking(ev.Time)
		b.thought = nil
		first := b.open == nil
		if first {
			b.open = &artifact{id: answerID(b.answers() + 1), name: "answer", answer: true}
			b.arts = append(b.arts, b.open)
		}
		b.open.text.WriteString(ev.Text)
		return frame{kind: frameText, art: b.open, text: ev.Text, first: first}
	case bridge.KindMessageDone:
		b.thought = nil
		if b.open == nil {
			return frame{}
		}
		a := b.open
		b.open = nil
		return frame{kind: frameText, art: a, last: true}
	case bridge.KindReasoningDelta:
		if ev.Signature != "" {
			b.drop("reasoning.signature")
		}
		if ev.Encrypted != "" {
			b.drop("reasoning.encrypted")
		}
		if ev.Text == "" {
			return frame{}
		}
		b.setWorking(ev.Time)
		part := a2asdk.TextPart{Text: ev.Text, Metadata: map[string]any{metaADKThought: true}}
		if b.thought != nil {
			t := b.thought.Parts[0].(a2asdk.TextPart)
			t.Text += ev.Text
			b.thought.Parts[0] = t
		} else {
			b.thought = b.message(b.eventID(ev), a2asdk.MessageRoleAgent, a2asdk.ContentParts{part})
			b.history = append(b.history, b.thought)
		}
		return b.statusFrame(b.message(b.eventID(ev), a2asdk.MessageRoleAgent, a2asdk.ContentParts{part}), ev.Time)
	case bridge.KindToolCallDone:
		if ev.ToolCall == nil {
			return frame{}
		}
		return b.agentPart(ev, toolCallPart(ev.ToolCall))
	case bridge.KindToolResult:
		if ev.ToolResult == nil {
			return frame{}
		}
		return b.agentPart(ev, toolResultPart(ev.ToolResult))
	case bridge.KindUserMessage:
		if ev.Message == nil {
			return frame{}
		}
		b.thought = nil
		b.claimSteer(ev.Message)
		m := b.message(b.eventID(ev), a2asdk.MessageRoleUser, sdkParts(ev.Message.Parts))
		b.history = append(b.history, m)
		return b.statusFrame(m, ev.Time)
	case bridge.KindArtifact:
		if ev.Artifact == nil {
			return frame{}
		}
		b.setWorking(ev.Time)
		return b.artifactEvent(ev, b.eventID(ev))
	case bridge.KindUsage:
		b.usage.Merge(ev.Usage)
	case bridge.KindStateUpdate:
		b.drop("state_update")
	case bridge.KindFinal:
		return b.finalFrame(ev, b.eventID(ev))
	}
	// run_started of a continued run, tool_call_started and _delta (the
	// done event carries the whole call), error (the final carries it).
	return frame{}
}

// eventID is the cursor of ev, the id of the message it makes.
func (b *TaskBuilder) eventID(ev *bridge.Event) string {
	run := ev.RunID
	if run == "" {
		run = b.id
	}
	return bridge.EventID(run, ev.Seq)
}

func (b *TaskBuilder) setWorking(t time.Time) {
	if !b.working {
		b.working = true
		b.state, b.ts = a2asdk.TaskStateWorking, t
	}
}

func (b *TaskBuilder) statusFrame(m *a2asdk.Message, t time.Time) frame {
	return frame{kind: frameStatus, state: a2asdk.TaskStateWorking, msg: m, ts: t}
}

// agentPart is a tool call's or a tool result's status update: an agent
// message of the one part, kept in the history.
func (b *TaskBuilder) agentPart(ev *bridge.Event, part a2asdk.Part) frame {
	b.thought = nil
	b.setWorking(ev.Time)
	m := b.message(b.eventID(ev), a2asdk.MessageRoleAgent, a2asdk.ContentParts{part})
	b.history = append(b.history, m)
	return b.statusFrame(m, ev.Time)
}

// claimSteer removes a steer from the input it was read into (a run that
// ended with no answer stores its steers right after its input).
func (b *TaskBuilder) claimSteer(m *bridge.Message) {
	fp := m.Fingerprint()
	for i := 1; i < len(b.input); i++ {
		mm := bridge.Message{Role: bridge.RoleUser, Parts: make([]bridge.Part, 0, len(b.input[i].Parts))}
		for _, p := range b.input[i].Parts {
			mm.Parts = append(mm.Parts, HubPart(p))
		}
		if mm.Fingerprint() == fp {
			b.input = append(b.input[:i:i], b.input[i+1:]...)
			return
		}
	}
}

func (b *TaskBuilder) artifactEvent(ev *bridge.Event, eid string) frame {
	ea := ev.Artifact
	id := ea.ID
	if id == "" {
		id = eid
	}
	parts := sdkParts(ea.Parts)
	var a *artifact
	for _, x := range b.arts {
		if x.id == id {
			a = x
		}
	}
	first := a == nil
	switch {
	case a == nil:
		a = &artifact{id: id, name: ea.Name}
		b.arts = append(b.arts, a)
		a.parts = append(a.parts, parts...)
	case ea.Append:
		a.parts = append(a.parts, parts...)
	default:
		a.parts = append(a.parts[:0], parts...)
		first = true
	}
	return frame{kind: frameParts, art: a, parts: parts, first: first || !ea.Append, last: ea.LastChunk}
}

func (b *TaskBuilder) finalFrame(ev *bridge.Event, eid string) frame {
	f := ev.Final
	if f == nil {
		f = &bridge.Final{Status: bridge.StatusFailed, Reason: "the run ended without an outcome"}
	}
	b.final, b.open, b.thought = true, nil, nil
	b.state, b.ts = taskState(f.Status), ev.Time
	b.usage.Merge(f.Usage)
	b.status = nil
	reason := f.Reason
	if reason == "" && f.Error != nil {
		reason = f.Error.Message
	}
	var meta map[string]any
	if f.Status != bridge.StatusCompleted && reason != "" {
		if f.Status == bridge.StatusInterrupted {
			reason = "interrupted: " + reason
		}
		b.status = b.message(eid, a2asdk.MessageRoleAgent, a2asdk.ContentParts{a2asdk.TextPart{Text: reason}})
		if f.Error != nil {
			b.status.Metadata = map[string]any{"error": map[string]any{"code": string(f.Error.Code), "message": f.Error.Message}}
		}
		b.history = append(b.history, b.status)
	}
	if u := usageMeta(&b.usage); u != nil {
		meta = map[string]any{"usage": u}
	}
	return frame{kind: frameStatus, state: b.state, msg: b.status, ts: ev.Time, final: true, meta: meta}
}

// usageMeta renders usage as the bridge's metadata extension, nil when
// nothing was reported.
func usageMeta(u *bridge.Usage) map[string]any {
	if u.IsZero() {
		return nil
	}
	m := map[string]any{}
	put := func(k string, v *int64) {
		if v != nil {
			m[k] = *v
		}
	}
	put("inputTokens", u.InputTokens)
	put("outputTokens", u.OutputTokens)
	put("reasoningTokens", u.ReasoningTokens)
	put("cacheReadTokens", u.CacheReadTokens)
	put("cacheWriteTokens", u.CacheWriteTokens)
	if u.TotalTokens != nil || u.InputTokens != nil || u.OutputTokens != nil {
		m["totalTokens"] = u.Total()
	}
	return m
}

func (b *TaskBuilder) drop(s string) { b.dropped = appendUnique(b.dropped, s) }

// Dropped lists what the events held that A2A cannot carry.
func (b *TaskBuilder) Dropped() []string { return b.dropped }

func (b *TaskBuilder) answers() int {
	n := 0
	for _, a := range b.arts {
		if a.answer {
			n++
		}
	}
	return n
}

func answerID(n int) string {
	if n == 1 {
		return "answer"
	}
	return "answer-" + strconv.Itoa(n)
}

// Final reports whether the run's final event was added.
func (b *TaskBuilder) Final() bool { return b.final }

// State is the task's state so far.
func (b *TaskBuilder) State() a2asdk.TaskState { return b.state }

// ID is the task id (the run id).
func (b *TaskBuilder) ID() string { return b.id }

// Task returns the task as the events added so far describe it. A task
// still working carries metadata.lastEventId, its resume cursor.
func (b *TaskBuilder) Task() *a2asdk.Task {
	ts := b.ts
	t := &a2asdk.Task{
		ID: a2asdk.TaskID(b.id), ContextID: b.contextID,
		Status:  a2asdk.TaskStatus{State: b.state, Message: b.status},
		History: make([]*a2asdk.Message, 0, len(b.input)+len(b.history)),
	}
	if !ts.IsZero() {
		t.Status.Timestamp = &ts
	}
	t.History = append(append(t.History, b.input...), b.history...)
	for _, a := range b.arts {
		art := &a2asdk.Artifact{ID: a2asdk.ArtifactID(a.id), Name: a.name, Parts: a.parts}
		if a.answer {
			art.Parts = a2asdk.ContentParts{a2asdk.TextPart{Text: a.text.String()}}
		}
		t.Artifacts = append(t.Artifacts, art)
	}
	meta := map[string]any{}
	if !b.state.Terminal() && b.state != a2asdk.TaskStateInputRequired && b.lastSeq > 0 {
		meta["lastEventId"] = bridge.EventID(b.id, b.lastSeq)
	}
	if u := usageMeta(&b.usage); u != nil {
		meta["usage"] = u
	}
	if len(meta) > 0 {
		t.Metadata = meta
	}
	return t
}

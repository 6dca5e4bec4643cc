package bridge

import (
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"time"
)

// Kind names one normalized step of a run.
type Kind string

// The event kinds. They are enough for every dialect and no more.
const (
	KindRunStarted      Kind = "run_started"
	KindUserMessage     Kind = "user_message" // user input that joined a running run (a steer)
	KindMessageStarted  Kind = "message_started"
	KindTextDelta       Kind = "text_delta"
	KindMessageDone     Kind = "message_done"
	KindReasoningDelta  Kind = "reasoning_delta"
	KindToolCallStarted Kind = "tool_call_started"
	KindToolCallDelta   Kind = "tool_call_delta"
	KindToolCallDone    Kind = "tool_call_done"
	KindToolResult      Kind = "tool_result"
	KindArtifact        Kind = "artifact"
	KindStateUpdate     Kind = "state_update"
	KindUsage           Kind = "usage"
	KindError           Kind = "error"
	KindFinal           Kind = "final"
)

// Source says who produced an event.
type Source string

const (
	SourceModel  Source = "model"  // the upstream model
	SourceAgent  Source = "agent"  // an upstream agent's own tool activity
	SourceBridge Source = "bridge" // the bridge itself (run_started, final, errors it raised)
)

// Event is one normalized step of a run. Only the fields its Kind uses are
// set; the zero value of every other field is omitted when it is stored.
//
// Seq is assigned by the engine, starting at 1 for each run; a client-facing
// event id is the pair (RunID, Seq), see EventID.
type Event struct {
	RunID  string    `json:"run_id,omitempty"`
	Seq    int64     `json:"seq,omitempty"`
	Time   time.Time `json:"time,omitzero"`
	Kind   Kind      `json:"kind"`
	Source Source    `json:"source,omitempty"`

	// Index is the choice or output slot for message events and the
	// tool-call index (0, 1, 2 ... within one model step) for tool events.
	Index int `json:"index,omitempty"`

	// Text is the text of a text_delta or reasoning_delta. Refusal marks a
	// text_delta that is a model's refusal rather than its answer.
	Text    string `json:"text,omitempty"`
	Refusal bool   `json:"refusal,omitempty"`

	// Signature and Encrypted belong to reasoning: a provider's signature over
	// the reasoning text (Anthropic thinking) and reasoning the provider sent
	// only in encrypted or redacted form. Both go back unchanged.
	Signature string `json:"signature,omitempty"`
	Encrypted string `json:"encrypted,omitempty"`

	// ToolCall is set on tool_call_started (ID, Name), tool_call_delta
	// (Arguments holds the fragment) and tool_call_done (Arguments holds the
	// complete argument text).
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	Artifact   *Artifact   `json:"artifact,omitempty"`
	// Message is the user input of a user_message event.
	Message *Message `json:"message,omitempty"`

	// State is a session state delta (a JSON object), for state_update.
	State json.RawMessage `json:"state,omitempty"`

	Usage *Usage `json:"usage,omitempty"`
	Error *Error `json:"error,omitempty"`
	Final *Final `json:"final,omitempty"`

	// Opaque is provider data the hub does not interpret, carried back to the
	// dialect that produced it.
	Opaque *Opaque `json:"opaque,omitempty"`

	// ResponseID and Model are set on message_started when the upstream
	// names its response (a chat completion id) and the model that answered.
	ResponseID string `json:"response_id,omitempty"`
	Model      string `json:"model,omitempty"`

	// UpstreamID is the upstream's own id for this event (an ADK event id, a
	// Responses sequence number, an A2A SSE id), kept for upstream resume.
	UpstreamID string `json:"upstream_id,omitempty"`

	// SessionSeq is the event's place in its session's commit order, set
	// by the store when it commits the event (Store.Commit) and given back
	// with it: the events one commit writes for one run share a number, a
	// later commit's (or the same commit's for another run) have a higher
	// one. A session's events in (SessionSeq, Seq) order are in the order
	// they were committed, whichever run they belong to (SessionEvents).
	// 0 for a run of no session and for events committed before the store
	// numbered them.
	SessionSeq int64 `json:"session_seq,omitempty"`
}

// ID is the event's client-facing cursor.
func (e *Event) ID() string { return EventID(e.RunID, e.Seq) }

// Stream is a sequence of events. Nothing is yielded after an error; ranging
// over a stream once, to its end or not, releases what it holds.
type Stream = iter.Seq2[Event, error]

// EventID renders the cursor of event seq of run. It names the run, so an
// event id alone locates the replay point.
func EventID(run string, seq int64) string {
	return run + ":" + strconv.FormatInt(seq, 10)
}

// ParseEventID splits a cursor made by EventID. ok is false for anything
// else, a FrameID included (ParseFrameID reads both).
func ParseEventID(id string) (run string, seq int64, ok bool) {
	run, seq, frame, ok := ParseFrameID(id)
	if !ok || frame != 0 {
		return "", 0, false
	}
	return run, seq, true
}

// FrameID renders the id of frame k (1, 2, ...) of the wire frames event
// seq of run renders, for every frame but the last: an event that renders
// as several frames (a Chat Completions finish chunk and usage chunk) gives
// each its own cursor, "run:seq.k", and its last frame keeps EventID, so
// "run:seq" still means "after all of event seq". Ids order as the frames
// do: run:seq.1 < run:seq.2 < run:seq < run:seq+1.1.
func FrameID(run string, seq int64, k int) string {
	return run + ":" + strconv.FormatInt(seq, 10) + "." + strconv.Itoa(k)
}

// ParseFrameID splits a cursor made by EventID (frame is 0: the event's
// last frame) or by FrameID (frame is k >= 1). ok is false for anything
// else.
func ParseFrameID(id string) (run string, seq int64, frame int, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", 0, 0, false
	}
	s, k, dotted := strings.Cut(id[i+1:], ".")
	if !digits(s) || dotted && !digits(k) {
		return "", 0, 0, false
	}
	seq, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return "", 0, 0, false
	}
	if dotted {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 {
			return "", 0, 0, false
		}
		frame = n
	}
	return id[:i], seq, frame, true
}

// digits reports whether s is a non-empty run of ASCII digits (no sign).
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Opaque is data only one provider understands (per-part provider data,
// reasoning details, unknown content kinds). Dialect names its producer;
// codecs of other dialects carry it through untouched.
type Opaque struct {
	Dialect string          `json:"dialect"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Arguments is JSON text as the model wrote it (it may not be valid JSON).
	Arguments string `json:"arguments,omitempty"`
	// Index is the call's position among the parallel calls of one model step.
	Index  int     `json:"index,omitempty"`
	Opaque *Opaque `json:"opaque,omitempty"`
}

// ToolResult is the outcome of one tool call.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name,omitempty"`
	Content []Part `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

// Artifact is a named output of an agent (A2A artifacts, files).
type Artifact struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Parts     []Part `json:"parts,omitempty"`
	Append    bool   `json:"append,omitempty"`
	LastChunk bool   `json:"last_chunk,omitempty"`
}

// Usage counts tokens. A nil pointer field means "not reported".
// InputTokens includes the cached ones (OpenAI's convention); CacheReadTokens
// and CacheWriteTokens say how many of them were read from or written to a
// provider's cache. Codecs of dialects that count them apart (Anthropic)
// convert both ways.
type Usage struct {
	InputTokens      *int64 `json:"input_tokens,omitempty"`
	OutputTokens     *int64 `json:"output_tokens,omitempty"`
	ReasoningTokens  *int64 `json:"reasoning_tokens,omitempty"`
	CacheReadTokens  *int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens *int64 `json:"cache_write_tokens,omitempty"`
	TotalTokens      *int64 `json:"total_tokens,omitempty"`
}

// Merge folds u2 into u: a field u2 reports (non-nil and non-zero) replaces
// the one in u; a null or zero field never overwrites a known count.
func (u *Usage) Merge(u2 *Usage) {
	if u2 == nil {
		return
	}
	merge := func(dst **int64, src *int64) {
		if src != nil && (*src != 0 || *dst == nil) {
			v := *src
			*dst = &v
		}
	}
	merge(&u.InputTokens, u2.InputTokens)
	merge(&u.OutputTokens, u2.OutputTokens)
	merge(&u.ReasoningTokens, u2.ReasoningTokens)
	merge(&u.CacheReadTokens, u2.CacheReadTokens)
	merge(&u.CacheWriteTokens, u2.CacheWriteTokens)
	merge(&u.TotalTokens, u2.TotalTokens)
}

// IsZero reports whether no field is set.
func (u *Usage) IsZero() bool {
	return u == nil || (u.InputTokens == nil && u.OutputTokens == nil && u.ReasoningTokens == nil &&
		u.CacheReadTokens == nil && u.CacheWriteTokens == nil && u.TotalTokens == nil)
}

// Total is TotalTokens when reported, else input plus output.
func (u *Usage) Total() int64 {
	if u == nil {
		return 0
	}
	if u.TotalTokens != nil {
		return *u.TotalTokens
	}
	var n int64
	if u.InputTokens != nil {
		n += *u.InputTokens
	}
	if u.OutputTokens != nil {
		n += *u.OutputTokens
	}
	return n
}

// Int64 returns a pointer to v, for Usage literals.
func Int64(v int64) *int64 { return &v }

// Status is the state of a run.
type Status string

const (
	StatusRunning       Status = "running"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
	StatusInterrupted   Status = "interrupted"
	StatusInputRequired Status = "input_required"
)

// Terminal reports whether a run in this status produces no more events
// unless it is continued (input_required waits for the client's tool results).
func (s Status) Terminal() bool { return s != StatusRunning && s != "" }

// StopReason says why a model step or a run ended.
type StopReason string

const (
	StopEndTurn       StopReason = "end_turn"      // the model finished its answer
	StopMaxTokens     StopReason = "max_tokens"    // a token limit cut it short
	StopSequence      StopReason = "stop_sequence" // a stop sequence matched
	StopToolUse       StopReason = "tool_use"      // the model asked for tool calls
	StopContentFilter StopReason = "content_filter"
	StopRefusal       StopReason = "refusal"
	StopPause         StopReason = "pause" // the provider paused a long turn
)

// Final ends a run.
type Final struct {
	Status Status `json:"status"`
	// StopReason is the model's reason for ending its last step, when known.
	StopReason StopReason `json:"stop_reason,omitempty"`
	// Reason is a human-readable explanation for non-completed outcomes.
	Reason string `json:"reason,omitempty"`
	Usage  *Usage `json:"usage,omitempty"`
	Error  *Error `json:"error,omitempty"`
	// Dropped is what the run's translations could not carry, as far as
	// the engine knows at the end (the inbound encoder may add to it).
	Dropped []string `json:"dropped,omitempty"`
}

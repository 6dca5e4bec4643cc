package adk

import (
	"encoding/json"
	"math"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Event is an ADK event as the api_server sends it (camelCase).
type Event struct {
	ID                 string          `json:"id,omitempty"`
	InvocationID       string          `json:"invocationId"`
	Author             string          `json:"author,omitempty"`
	Timestamp          Time            `json:"timestamp,omitzero"`
	Content            *Content        `json:"content,omitempty"`
	Partial            bool            `json:"partial,omitempty"`
	TurnComplete       bool            `json:"turnComplete,omitempty"`
	FinishReason       string          `json:"finishReason,omitempty"`
	ErrorCode          string          `json:"errorCode,omitempty"`
	ErrorMessage       string          `json:"errorMessage,omitempty"`
	Interrupted        bool            `json:"interrupted,omitempty"`
	Actions            Actions         `json:"actions"`
	LongRunningToolIDs []string        `json:"longRunningToolIds"`
	Branch             string          `json:"branch,omitempty"`
	UsageMetadata      *UsageMetadata  `json:"usageMetadata,omitempty"`
	CustomMetadata     json.RawMessage `json:"customMetadata,omitempty"`
}

// Actions are an event's side effects. The four maps are always written,
// as ADK-JS does.
type Actions struct {
	SkipSummarization          bool            `json:"skipSummarization,omitempty"`
	StateDelta                 json.RawMessage `json:"stateDelta"`
	ArtifactDelta              json.RawMessage `json:"artifactDelta"`
	TransferToAgent            string          `json:"transferToAgent,omitempty"`
	Escalate                   bool            `json:"escalate,omitempty"`
	RequestedAuthConfigs       json.RawMessage `json:"requestedAuthConfigs"`
	RequestedToolConfirmations json.RawMessage `json:"requestedToolConfirmations"`
}

// MarshalJSON writes empty maps for the maps not set.
func (a Actions) MarshalJSON() ([]byte, error) {
	type plain Actions
	p := plain(a)
	for _, m := range []*json.RawMessage{&p.StateDelta, &p.ArtifactDelta, &p.RequestedAuthConfigs, &p.RequestedToolConfirmations} {
		if len(*m) == 0 || wire.IsNull(*m) {
			*m = json.RawMessage("{}")
		}
	}
	return json.Marshal(p)
}

// Content is a genai Content.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is a genai Part.
type Part struct {
	Text                string            `json:"text,omitempty"`
	Thought             bool              `json:"thought,omitempty"`
	ThoughtSignature    string            `json:"thoughtSignature,omitempty"`
	FunctionCall        *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse    *FunctionResponse `json:"functionResponse,omitempty"`
	InlineData          *Blob             `json:"inlineData,omitempty"`
	FileData            *FileData         `json:"fileData,omitempty"`
	ExecutableCode      json.RawMessage   `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage   `json:"codeExecutionResult,omitempty"`
}

// FunctionCall is a model's call of a tool.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is a tool's result.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response,omitempty"`
}

// Blob is inline data (base64).
type Blob struct {
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data"`
}

// FileData names a file by URI.
type FileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// UsageMetadata counts tokens.
type UsageMetadata struct {
	PromptTokenCount        *int64 `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    *int64 `json:"candidatesTokenCount,omitempty"`
	ThoughtsTokenCount      *int64 `json:"thoughtsTokenCount,omitempty"`
	CachedContentTokenCount *int64 `json:"cachedContentTokenCount,omitempty"`
	TotalTokenCount         *int64 `json:"totalTokenCount,omitempty"`
}

// Session is an ADK session. Status and ActiveRun are the chatkit
// conventions the bridge adds (session.status and active_run); they are
// left out where nil, and ActiveRun is written as null when NoActiveRun.
type Session struct {
	ID             string          `json:"id"`
	AppName        string          `json:"appName"`
	UserID         string          `json:"userId"`
	State          json.RawMessage `json:"state"`
	Events         []Event         `json:"events"`
	LastUpdateTime Time            `json:"lastUpdateTime"`

	Status    *SessionStatus `json:"session,omitempty"`
	ActiveRun *ActiveRun     `json:"active_run,omitempty"`
	// NoActiveRun writes "active_run": null (known idle).
	NoActiveRun bool `json:"-"`
}

// MarshalJSON writes active_run: null for a session known to be idle.
func (s Session) MarshalJSON() ([]byte, error) {
	type plain Session
	p := plain(s)
	if len(p.State) == 0 {
		p.State = json.RawMessage("{}")
	}
	if p.Events == nil {
		p.Events = []Event{}
	}
	b, err := json.Marshal(p)
	if err != nil || !s.NoActiveRun || s.ActiveRun != nil {
		return b, err
	}
	return append(b[:len(b)-1], `,"active_run":null}`...), nil
}

// SessionStatus is the chatkit session.status.
type SessionStatus struct {
	Status string `json:"status"` // idle | running | error | unknown
}

// ActiveRun locates a running run: its invocation id and the id of the
// last event of it the session already holds.
type ActiveRun struct {
	RunID   string `json:"run_id"`
	EventID string `json:"event_id"`
}

// SessionList is the ADK-JS answer of GET .../sessions.
type SessionList struct {
	Sessions   []Session `json:"sessions"`
	Page       int       `json:"page"`
	Limit      int       `json:"limit"`
	TotalItems int       `json:"totalItems"`
	TotalPages int       `json:"totalPages"`
}

// Time is an ADK timestamp. It is read as milliseconds when it is larger
// than 1e11 (ADK-JS: Date.now()), else as float seconds (Python), and
// written as float seconds.
type Time time.Time

// IsZero reports whether t is the zero time.
func (t Time) IsZero() bool { return time.Time(t).IsZero() }

// MarshalJSON writes seconds with millisecond precision.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("0"), nil
	}
	ms := time.Time(t).UnixMilli()
	return []byte(formatSeconds(ms)), nil
}

func formatSeconds(ms int64) string {
	b, _ := json.Marshal(float64(ms) / 1000)
	return string(b)
}

// UnmarshalJSON reads milliseconds or seconds.
func (t *Time) UnmarshalJSON(b []byte) error {
	if wire.IsNull(b) {
		*t = Time{}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return bridge.Errorf(bridge.CodeInvalid, "timestamp: expected a number")
	}
	*t = Time(ParseTime(f))
	return nil
}

// ParseTime reads an ADK timestamp: milliseconds above 1e11, else seconds.
func ParseTime(f float64) time.Time {
	if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f > 1e16 {
		return time.Time{}
	}
	if f > 1e11 {
		return time.UnixMilli(int64(f)).UTC()
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e3))*1e6).UTC()
}

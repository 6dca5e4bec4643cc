package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Role is who a message is from.
type Role string

const (
	RoleSystem    Role = "system"
	RoleDeveloper Role = "developer"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType names a content part.
type PartType string

const (
	PartText      PartType = "text"
	PartImage     PartType = "image"
	PartAudio     PartType = "audio"
	PartFile      PartType = "file"
	PartReasoning PartType = "reasoning"
	PartRefusal   PartType = "refusal"
	PartData      PartType = "data" // structured JSON (A2A data parts, tool results as objects)
	PartOpaque    PartType = "opaque"
)

// Part is one piece of message content.
type Part struct {
	Type PartType `json:"type"`
	Text string   `json:"text,omitempty"`

	// Media: URL is a remote URL or a data: URL, passed through, never fetched.
	URL       string `json:"url,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"` // base64 payload (audio, inline files)
	Detail    string `json:"detail,omitempty"`
	Format    string `json:"format,omitempty"` // audio format (wav, mp3)
	Filename  string `json:"filename,omitempty"`
	FileID    string `json:"file_id,omitempty"`

	// Reasoning.
	Signature string `json:"signature,omitempty"`
	Encrypted string `json:"encrypted,omitempty"`

	// JSON is the value of a data part.
	JSON json.RawMessage `json:"json,omitempty"`

	Opaque *Opaque `json:"opaque,omitempty"`
}

// TextPart is a convenience constructor.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// Message is one entry of a session's normalized transcript.
type Message struct {
	ID      string    `json:"id,omitempty"`
	RunID   string    `json:"run_id,omitempty"`
	Created time.Time `json:"created_at"`

	Role  Role   `json:"role"`
	Name  string `json:"name,omitempty"`
	Parts []Part `json:"parts,omitempty"`

	// ToolCalls are an assistant's calls; ToolCallID and IsError belong to a
	// tool message carrying one call's result.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	IsError    bool       `json:"is_error,omitempty"`

	// NullContent records that the client sent content: null (as OpenAI
	// assistants with tool calls do), so a same-dialect round trip keeps it.
	NullContent bool `json:"null_content,omitempty"`
	// StringContent records that content came as a plain string rather than
	// an array of parts.
	StringContent bool `json:"string_content,omitempty"`

	Opaque *Opaque `json:"opaque,omitempty"`
}

// Text concatenates the message's text parts.
func (m *Message) Text() string {
	var n int
	for i := range m.Parts {
		if m.Parts[i].Type == PartText {
			n += len(m.Parts[i].Text)
		}
	}
	var b strings.Builder // one copy, none for a single part
	for i := range m.Parts {
		if m.Parts[i].Type == PartText {
			if len(m.Parts[i].Text) == n {
				return m.Parts[i].Text
			}
			b.Grow(n)
			b.WriteString(m.Parts[i].Text)
		}
	}
	return b.String()
}

// Fingerprint identifies the message's content (role, parts, tool calls),
// ignoring ids and times, so a resent transcript can be matched against the
// one the store holds. Reasoning parts are left out: most clients never send
// reasoning back (DeepSeek's rule), so a resent assistant turn lacks them.
func (m *Message) Fingerprint() string {
	parts := m.Parts
	for i := range m.Parts {
		if m.Parts[i].Type == PartReasoning {
			parts = make([]Part, 0, len(m.Parts))
			for _, p := range m.Parts {
				if p.Type != PartReasoning {
					parts = append(parts, p)
				}
			}
			break
		}
	}
	b, _ := json.Marshal(struct {
		Role       Role       `json:"r"`
		Name       string     `json:"n,omitempty"`
		Parts      []Part     `json:"p,omitempty"`
		ToolCalls  []ToolCall `json:"t,omitempty"`
		ToolCallID string     `json:"c,omitempty"`
	}{m.Role, m.Name, parts, m.ToolCalls, m.ToolCallID})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// Tool is a function the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON Schema
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolChoiceMode says how the model must use tools.
type ToolChoiceMode string

const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required" // any tool (Anthropic "any")
	ToolChoiceTool     ToolChoiceMode = "tool"     // the tool named in Name
)

// ToolChoice constrains tool use.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode"`
	Name string         `json:"name,omitempty"`
}

// Request is one inbound turn, normalized.
type Request struct {
	// Inbound is the dialect the client speaks; the engine renders the run's
	// events in it for replays.
	Inbound string `json:"inbound"`
	Model   string `json:"model,omitempty"`

	// SessionID attaches the run to an existing session of the caller's
	// principal (or names a new one). An upstream's Open gets a key that
	// names the session and its principal together instead (see
	// upstreamSession), to name its own conversation by.
	// Detached runs keep going when the client disconnects; plain stateless
	// requests are cancelled instead.
	SessionID   string `json:"session_id,omitempty"`
	ClientRunID string `json:"client_run_id,omitempty"`
	Principal   string `json:"principal,omitempty"`
	Detached    bool   `json:"detached,omitempty"`

	// Messages is the transcript the client sent: the whole history when
	// Full (stateless dialects such as Chat Completions), else only the new
	// input, which the engine appends to the session's stored transcript.
	Messages []Message `json:"messages"`
	Full     bool      `json:"full,omitempty"`
	// ReplaceFrom names a run of the session (the X-Replace-From header: a
	// regenerate, an edit) that the request discards with every later
	// run of the session before its input runs as a new run. A request
	// that names no session joins the run's.
	ReplaceFrom string `json:"replace_from,omitempty"`
	// DiscardUpstream, on a request to an upstream that discards turns
	// itself (a Discarder), is the upstream's id of the first run the
	// request discards: the upstream gets the new input in the context it
	// has, with its own X-Replace-From naming that run.
	DiscardUpstream string `json:"discard_upstream,omitempty"`
	// Instructions are put in front of the transcript on every model call
	// the request makes and are never stored in the session (the
	// Responses API's instructions, which do not carry over to the next
	// turn).
	Instructions []Message `json:"instructions,omitempty"`

	Tools             []Tool      `json:"tools,omitempty"`
	ToolChoice        *ToolChoice `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool       `json:"parallel_tool_calls,omitempty"`

	Stream       bool `json:"stream,omitempty"`
	IncludeUsage bool `json:"include_usage,omitempty"`

	MaxTokens       *int64            `json:"max_tokens,omitempty"`
	Temperature     *float64          `json:"temperature,omitempty"`
	TopP            *float64          `json:"top_p,omitempty"`
	TopK            *int64            `json:"top_k,omitempty"`
	Stop            []string          `json:"stop,omitempty"`
	Seed            *int64            `json:"seed,omitempty"`
	ReasoningEffort string            `json:"reasoning_effort,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	User            string            `json:"user,omitempty"`
	// ResponseFormat is a structured-output request, kept in the inbound
	// dialect's shape.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`

	// Extra holds top-level request fields the inbound codec does not know,
	// so a same-dialect upstream gets them back. ExtraDialect names their
	// dialect; other dialects drop them (and say so).
	Extra        map[string]json.RawMessage `json:"extra,omitempty"`
	ExtraDialect string                     `json:"extra_dialect,omitempty"`

	// Render is kept on the run as Run.Render (the inbound dialect's
	// rendering options).
	Render json.RawMessage `json:"render,omitempty"`

	// Dropped lists what the inbound decoder could not carry.
	Dropped []string `json:"dropped,omitempty"`
}

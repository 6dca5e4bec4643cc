package adk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// EncodeContent renders hub messages as the Content of a newMessage
// (camelCase): user text and media, and tool messages as
// functionResponse parts. Assistant messages have no place in a
// newMessage; they are rendered as text prefixed by the role when
// inline is true (earlier turns carried into a new upstream session).
func EncodeContent(msgs []bridge.Message) (*Content, []string) {
	c := &Content{Role: "user"}
	var dropped []string
	for i := range msgs {
		m := &msgs[i]
		if m.Role == bridge.RoleTool {
			resp := toolResponse(m.Parts)
			c.Parts = append(c.Parts, Part{FunctionResponse: &FunctionResponse{ID: m.ToolCallID, Name: m.Name, Response: resp}})
			continue
		}
		for _, p := range m.Parts {
			switch p.Type {
			case bridge.PartText, bridge.PartRefusal:
				c.Parts = append(c.Parts, Part{Text: p.Text})
			case bridge.PartReasoning:
				dropped = append(dropped, "reasoning")
			case bridge.PartImage, bridge.PartAudio, bridge.PartFile:
				switch {
				case p.Data != "":
					c.Parts = append(c.Parts, Part{InlineData: &Blob{MimeType: p.MediaType, Data: p.Data}})
				case p.URL != "":
					c.Parts = append(c.Parts, Part{FileData: &FileData{MimeType: p.MediaType, FileURI: p.URL}})
				}
			case bridge.PartData:
				c.Parts = append(c.Parts, Part{Text: string(p.JSON)})
			default:
				dropped = append(dropped, "content:"+string(p.Type))
			}
		}
	}
	if len(c.Parts) == 0 {
		c.Parts = []Part{{Text: ""}}
	}
	return c, dropped
}

// toolResponse is the functionResponse.response of a tool message: its
// JSON object, or {"result": text}.
func toolResponse(parts []bridge.Part) json.RawMessage {
	var text []byte
	for _, p := range parts {
		if p.Type == bridge.PartData && wire.Kind(p.JSON) == '{' {
			return p.JSON
		}
		text = append(text, p.Text...)
	}
	if json.Valid(text) && wire.Kind(text) == '{' {
		return text
	}
	b, _ := json.Marshal(map[string]string{"result": string(text)})
	return b
}

// EncodeRunRequest renders a run request in camelCase, the only case the
// ADK-JS server reads.
func EncodeRunRequest(r *RunRequest) ([]byte, error) {
	o := wire.NewObj()
	o.Str("appName", r.AppName)
	o.Str("userId", r.UserID)
	o.Str("sessionId", r.SessionID)
	if r.NewMessage != nil {
		nm, err := json.Marshal(r.NewMessage)
		if err != nil {
			return nil, err
		}
		o.Raw("newMessage", nm)
	}
	o.Bool("streaming", r.Streaming)
	if len(r.StateDelta) > 0 {
		o.Raw("stateDelta", r.StateDelta)
	}
	if r.LastEventID != "" {
		o.Str("lastEventId", r.LastEventID)
	}
	if len(r.Tools) > 0 {
		tools, err := json.Marshal(r.Tools)
		if err != nil {
			return nil, err
		}
		o.Raw("tools", tools)
	}
	return o.End(), nil
}

// EncodeOptions say where a run_sse request goes.
type EncodeOptions struct {
	// App, User and Session name the upstream session.
	App, User, Session string
	// Inline leads the new message with the earlier turns as text, for a
	// new upstream session, which holds none of them.
	Inline bool
}

// EncodeRequest renders req as a streaming run_sse request body for an
// upstream (hub -> wire): its new input as the newMessage (NewMessage),
// its tools in the bridge's extension key, which ADK ignores. The second
// result lists what could not be carried.
func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error) {
	content, dropped, err := NewMessage(req, opt.Inline)
	if err != nil {
		return nil, nil, err
	}
	body, err = EncodeRunRequest(&RunRequest{AppName: opt.App, UserID: opt.User, SessionID: opt.Session, NewMessage: content, Streaming: true,
		Tools: req.Tools})
	return body, dropped, err
}

// NewMessage renders req's new input, the messages after the transcript's
// last assistant message, as a newMessage: an ADK session holds the turns
// before it, and its agent holds its own system prompt (the request's is
// dropped). Tool results are named after the calls they answer. With
// inline, the earlier turns' text leads the message (see EncodeOptions).
// A transcript that ends with the assistant has nothing to send: an error.
func NewMessage(req *bridge.Request, inline bool) (*Content, []string, error) {
	var dropped []string
	for _, m := range req.Messages {
		if m.Role == bridge.RoleSystem || m.Role == bridge.RoleDeveloper {
			dropped = append(dropped, "adk:system_prompt")
			break
		}
	}
	prefix, input := SplitInput(req.Messages)
	if len(input) == 0 {
		return nil, nil, bridge.Errorf(bridge.CodeInvalid, "the transcript ends with the assistant: nothing to send the agent")
	}
	content, d := EncodeContent(bridge.NameToolResults(prefix, input))
	dropped = append(dropped, d...)
	if inline && TranscriptKey("", "", prefix) != "" {
		content.Parts = append([]Part{{Text: inlined(prefix)}}, content.Parts...)
		dropped = append(dropped, "adk:history_inlined_in_new_session")
	}
	return content, dropped, nil
}

// TranscriptKey identifies a transcript by its user and assistant text,
// the part every client resends the same way (tool activity of the agent
// and system prompts are the agent's own).
func TranscriptKey(app, user string, msgs []bridge.Message) string {
	h := sha256.New()
	n := 0
	h.Write([]byte(app + "\x00" + user + "\x00"))
	for i := range msgs {
		m := &msgs[i]
		if m.Role != bridge.RoleUser && m.Role != bridge.RoleAssistant {
			continue
		}
		t := m.Text()
		if t == "" {
			continue
		}
		n++
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(t))
		h.Write([]byte{1})
	}
	if n == 0 {
		return ""
	}
	return "adk:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// SplitInput returns the transcript before the new input and the input: the
// messages after the last assistant message.
func SplitInput(msgs []bridge.Message) (prefix, input []bridge.Message) {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role != bridge.RoleAssistant {
		i--
	}
	prefix, input = msgs[:i], msgs[i:]
	kept := input[:0:0]
	for _, m := range input {
		if m.Role == bridge.RoleUser || m.Role == bridge.RoleTool {
			kept = append(kept, m)
		}
	}
	return prefix, kept
}

// inlined renders earlier turns as text, for a new session.
func inlined(prefix []bridge.Message) string {
	var b strings.Builder
	b.WriteString("Earlier in this conversation:\n")
	for i := range prefix {
		m := &prefix[i]
		if t := m.Text(); t != "" && (m.Role == bridge.RoleUser || m.Role == bridge.RoleAssistant) {
			b.WriteString(string(m.Role) + ": " + t + "\n")
		}
	}
	return b.String()
}

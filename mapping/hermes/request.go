package hermes

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// TurnRequest is a decoded turn: the body of POST /api/sessions/{id}/chat
// and .../chat/stream, or of POST /v1/runs.
type TurnRequest struct {
	// Request holds the new input (Full false) and the model settings.
	Request *bridge.Request
	// SessionID is the runs body's session_id ("" when none).
	SessionID string
	// History is conversation_history, or the earlier items of an input
	// list: a transcript that replaces the stored one.
	History []bridge.Message
	// UserText is the user message's text, for run.started.
	UserText string
}

// The turn body members DecodeRequest reads; the rest are dropped (and named).
var turnFields = map[string]bool{
	"message": true, "input": true, "system_message": true, "instructions": true,
	"model": true, "provider": true, "model_options": true, "session_id": true,
	"conversation_history": true, "previous_response_id": true, "tools": true, "text": true,
}

// DecodeRequest parses a turn body (wire -> hub). message (or input, or
// text) is a string, content parts, or (runs) a list of messages whose
// last is the new input; system_message (or instructions) applies to this
// turn only. tools, an extension, declares client tools in the OpenAI
// function shape; a list input may then carry their results (role tool),
// which continue the run that asked for them. Malformed input is a
// *bridge.Error with CodeInvalid naming the member.
func DecodeRequest(body []byte) (*TurnRequest, error) {
	top, err := wire.DecodeBody(body)
	if err != nil {
		return nil, err
	}
	t := &TurnRequest{Request: &bridge.Request{Inbound: Dialect, Stream: true, Detached: true}}
	req := t.Request
	for _, k := range wire.SortedKeys(top) {
		if !turnFields[k] {
			req.Dropped = append(req.Dropped, "request."+k)
		}
	}
	if err := wire.OptString(top, "request", "model", &req.Model); err != nil {
		return nil, err
	}
	if err := wire.OptString(top, "request", "session_id", &t.SessionID); err != nil {
		return nil, err
	}
	for _, k := range []string{"provider", "model_options", "previous_response_id"} {
		if _, ok := top[k]; ok {
			req.Dropped = append(req.Dropped, "request."+k)
		}
	}
	for _, k := range []string{"system_message", "instructions"} {
		raw, ok := top[k]
		if !ok || wire.IsNull(raw) {
			continue
		}
		s, err := wire.AsString(raw, "request."+k)
		if err != nil {
			return nil, err
		}
		if s != "" {
			req.Instructions = append(req.Instructions, bridge.Message{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart(s)}})
		}
		break
	}
	if raw, ok := top["tools"]; ok && !wire.IsNull(raw) {
		if req.Tools, err = decodeTools(raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["conversation_history"]; ok && !wire.IsNull(raw) {
		if t.History, err = decodeMessages(raw, "request.conversation_history"); err != nil {
			return nil, err
		}
	}
	var input json.RawMessage
	var key string
	for _, k := range []string{"message", "input", "text"} {
		if raw, ok := top[k]; ok && !wire.IsNull(raw) {
			input, key = raw, k
			break
		}
	}
	if input == nil {
		return nil, bridge.Errorf(bridge.CodeInvalid, "request.message: missing (send message or input)")
	}
	path := "request." + key
	switch wire.Kind(input) {
	case '"':
		s, _ := wire.AsString(input, path)
		if strings.TrimSpace(s) == "" {
			return nil, bridge.Errorf(bridge.CodeInvalid, "%s: empty", path)
		}
		req.Messages = []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(s)}, StringContent: true}}
	case '[':
		items, _ := wire.AsArray(input, path)
		if len(items) == 0 {
			return nil, bridge.Errorf(bridge.CodeInvalid, "%s: empty", path)
		}
		if wire.Kind(items[0]) == '{' && hasRole(items[0]) {
			msgs, err := decodeMessages(input, path)
			if err != nil {
				return nil, err
			}
			// Trailing tool results, or the last message, are the new
			// input; earlier ones are history.
			n := len(msgs) - 1
			if msgs[n].Role == bridge.RoleTool {
				for n > 0 && msgs[n-1].Role == bridge.RoleTool {
					n--
				}
			}
			if n > 0 && t.History == nil {
				t.History = msgs[:n]
			}
			req.Messages = msgs[n:]
		} else {
			parts, err := decodeParts(input, path)
			if err != nil {
				return nil, err
			}
			req.Messages = []bridge.Message{{Role: bridge.RoleUser, Parts: parts}}
		}
	default:
		return nil, wire.TypeErr(path, "string or array", input)
	}
	for _, m := range req.Messages {
		if m.Role == bridge.RoleUser {
			t.UserText += m.Text()
		}
	}
	return t, nil
}

func hasRole(raw json.RawMessage) bool {
	o, err := wire.AsObject(raw, "")
	if err != nil {
		return false
	}
	_, ok := o["role"]
	return ok
}

func decodeParts(raw json.RawMessage, path string) ([]bridge.Part, error) {
	if wire.Kind(raw) == '"' {
		s, _ := wire.AsString(raw, path)
		return []bridge.Part{bridge.TextPart(s)}, nil
	}
	items, err := wire.AsArray(raw, path)
	if err != nil {
		return nil, wire.TypeErr(path, "string or array", raw)
	}
	var parts []bridge.Part
	for i, it := range items {
		p := path + "[" + itoa(i) + "]"
		o, err := wire.AsObject(it, p)
		if err != nil {
			return nil, err
		}
		typ, err := wire.ReqString(o, "type", p)
		if err != nil {
			return nil, err
		}
		switch typ {
		case "text", "input_text":
			s, err := wire.ReqString(o, "text", p)
			if err != nil {
				return nil, err
			}
			parts = append(parts, bridge.TextPart(s))
		case "image_url":
			var u struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			}
			raw := o["image_url"]
			if wire.Kind(raw) == '"' {
				_ = json.Unmarshal(raw, &u.URL)
			} else if json.Unmarshal(raw, &u) != nil {
				return nil, wire.TypeErr(p+".image_url", "object", raw)
			}
			if u.URL == "" {
				return nil, bridge.Errorf(bridge.CodeInvalid, "%s.image_url.url: missing", p)
			}
			parts = append(parts, bridge.Part{Type: bridge.PartImage, URL: u.URL, Detail: u.Detail})
		default:
			e := Errorf(bridge.CodeUnsupported, CodeUnsupportedContent, "%s.type: %q is not a supported content type", p, typ)
			e.Status = 400
			return nil, e
		}
	}
	return parts, nil
}

func decodeMessages(raw json.RawMessage, path string) ([]bridge.Message, error) {
	items, err := wire.AsArray(raw, path)
	if err != nil {
		return nil, err
	}
	msgs := make([]bridge.Message, 0, len(items))
	for i, it := range items {
		p := path + "[" + itoa(i) + "]"
		o, err := wire.AsObject(it, p)
		if err != nil {
			return nil, err
		}
		role, err := wire.ReqString(o, "role", p)
		if err != nil {
			return nil, err
		}
		m := bridge.Message{Role: bridge.Role(role)}
		switch m.Role {
		case bridge.RoleUser, bridge.RoleAssistant, bridge.RoleSystem, bridge.RoleTool:
		default:
			return nil, bridge.Errorf(bridge.CodeInvalid, "%s.role: unknown role %q", p, role)
		}
		if c, ok := o["content"]; ok && !wire.IsNull(c) {
			if m.Parts, err = decodeParts(c, p+".content"); err != nil {
				return nil, err
			}
		}
		if err := wire.OptString(o, p, "tool_call_id", &m.ToolCallID); err != nil {
			return nil, err
		}
		if m.Role == bridge.RoleTool && m.ToolCallID == "" {
			return nil, bridge.Errorf(bridge.CodeInvalid, "%s.tool_call_id: missing", p)
		}
		if tc, ok := o["tool_calls"]; ok && !wire.IsNull(tc) {
			calls, err := wire.AsArray(tc, p+".tool_calls")
			if err != nil {
				return nil, err
			}
			for j, c := range calls {
				cp := p + ".tool_calls[" + itoa(j) + "]"
				var w struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				}
				if json.Unmarshal(c, &w) != nil || w.ID == "" || w.Function.Name == "" {
					return nil, bridge.Errorf(bridge.CodeInvalid, "%s: want {id, function: {name, arguments}}", cp)
				}
				m.ToolCalls = append(m.ToolCalls, bridge.ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: w.Function.Arguments, Index: j})
			}
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

func decodeTools(raw json.RawMessage) ([]bridge.Tool, error) {
	items, err := wire.AsArray(raw, "request.tools")
	if err != nil {
		return nil, err
	}
	tools := make([]bridge.Tool, 0, len(items))
	for i, it := range items {
		p := "request.tools[" + itoa(i) + "]"
		var w struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if json.Unmarshal(it, &w) != nil || w.Function.Name == "" {
			return nil, bridge.Errorf(bridge.CodeInvalid, "%s: want {type: function, function: {name, parameters}}", p)
		}
		tools = append(tools, bridge.Tool{Name: w.Function.Name, Description: w.Function.Description, Parameters: w.Function.Parameters})
	}
	return tools, nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// DecodeSteer reads a steer body {"input"|"message"|"text": "..."}.
func DecodeSteer(body []byte) (bridge.Message, error) {
	if err := wire.CheckDepth(body, wire.MaxDepth); err != nil {
		return bridge.Message{}, err
	}
	top, err := wire.AsObject(body, "request body")
	if err != nil {
		return bridge.Message{}, err
	}
	for _, k := range []string{"input", "message", "text"} {
		raw, ok := top[k]
		if !ok || wire.IsNull(raw) {
			continue
		}
		parts, err := decodeParts(raw, "request."+k)
		if err != nil {
			return bridge.Message{}, err
		}
		m := bridge.Message{Role: bridge.RoleUser, Parts: parts}
		if strings.TrimSpace(m.Text()) == "" {
			return bridge.Message{}, bridge.Errorf(bridge.CodeInvalid, "request.%s: empty", k)
		}
		return m, nil
	}
	return bridge.Message{}, bridge.Errorf(bridge.CodeInvalid, "request.input: missing (send input, message or text)")
}

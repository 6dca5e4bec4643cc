package hermes

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
)

// EncodeOptions say what the upstream server takes.
type EncodeOptions struct {
	// Fresh: the upstream session is new and holds no earlier turn.
	Fresh bool
	// Tools: the server takes the client's tools and their results as
	// tool messages (a bridge's Hermes API; Hermes' agent runs only its
	// own).
	Tools bool
	// History: the server takes a fresh session's earlier turns as
	// conversation_history (Hermes takes it on /v1/runs only, so its
	// session chat gets them as text).
	History bool
	// Model, when set, is the body's model.
	Model string
}

// EncodeRequest renders req as a session chat body for an upstream (hub
// -> wire): the new input (what follows the transcript's last assistant
// message), the leading system messages as system_message, and, for a
// fresh upstream session, earlier turns as conversation_history where the
// server takes it, else carried in the message as text. Where the server
// takes the client's tools, the request's tools go along, and new input
// that is only tool results goes as a list of tool messages: the upstream
// run that asked for them goes on. A turn with no user text is an error.
// The second result lists what could not be carried.
func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error) {
	m, dropped := turn(req, opt)
	if empty(m) {
		return nil, nil, bridge.Errorf(bridge.CodeInvalid, "nothing to send to the Hermes agent: the turn has no user text")
	}
	if body, err = json.Marshal(m); err != nil {
		return nil, nil, bridge.Errorf(bridge.CodeInternal, "encode hermes request")
	}
	return body, dropped, nil
}

// turn builds the chat body EncodeRequest renders.
func turn(req *bridge.Request, opt EncodeOptions) (body map[string]any, dropped []string) {
	tools, fresh := opt.Tools, opt.Fresh
	msgs := req.Messages
	var system []string
	for len(msgs) > 0 && (msgs[0].Role == bridge.RoleSystem || msgs[0].Role == bridge.RoleDeveloper) {
		system = append(system, msgs[0].Text())
		msgs = msgs[1:]
	}
	start := len(msgs)
	for start > 0 && msgs[start-1].Role != bridge.RoleAssistant {
		start--
	}
	body = map[string]any{}
	if opt.Model != "" {
		body["model"] = opt.Model
	}
	if len(system) > 0 {
		body["system_message"] = strings.Join(system, "\n\n")
	}
	if len(req.Tools) > 0 {
		if tools {
			body["tools"] = toolsJSON(req.Tools)
		} else {
			dropped = append(dropped, "hermes: client tools (the agent runs its own)")
		}
	}
	input := msgs[start:]
	if tools && !fresh && len(input) > 0 && !slices.ContainsFunc(input, func(m bridge.Message) bool { return m.Role != bridge.RoleTool }) {
		results := make([]map[string]any, 0, len(input))
		for _, m := range input {
			results = append(results, map[string]any{"role": "tool", "tool_call_id": m.ToolCallID, "content": m.Text()})
			if slices.ContainsFunc(m.Parts, func(p bridge.Part) bool { return p.Type != bridge.PartText }) {
				dropped = append(dropped, "hermes: non-text tool results")
			}
		}
		body["message"] = results
		return body, dropped
	}
	var text strings.Builder
	if fresh && start > 0 && opt.History {
		body["conversation_history"] = historyJSON(msgs[:start])
	} else if fresh && start > 0 {
		text.WriteString("Earlier in this conversation:\n")
		for _, m := range msgs[:start] {
			switch m.Role {
			case bridge.RoleUser, bridge.RoleAssistant:
				if t := m.Text(); t != "" {
					text.WriteString(string(m.Role) + ": " + t + "\n")
				}
			}
		}
		text.WriteString("\n")
		dropped = append(dropped, "hermes: earlier turns sent as text")
	}
	for _, m := range input {
		switch m.Role {
		case bridge.RoleUser:
			if text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
				text.WriteString("\n")
			}
			text.WriteString(m.Text())
			for _, p := range m.Parts {
				if p.Type != bridge.PartText {
					dropped = append(dropped, "hermes: non-text content")
					break
				}
			}
		case bridge.RoleTool:
			dropped = append(dropped, "hermes: client tool results")
		}
	}
	body["message"] = text.String()
	return body, dropped
}

// historyJSON is a transcript as conversation_history: messages in the
// OpenAI shape (text content, tool calls, tool results).
func historyJSON(msgs []bridge.Message) []map[string]any {
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		o := map[string]any{"role": string(m.Role)}
		if m.Role == bridge.RoleDeveloper {
			o["role"] = string(bridge.RoleSystem)
		}
		if t := m.Text(); t != "" || len(m.ToolCalls) == 0 {
			o["content"] = t
		}
		if m.ToolCallID != "" {
			o["tool_call_id"] = m.ToolCallID
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]map[string]any, 0, len(m.ToolCalls))
			for _, tc := range m.ToolCalls {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
			}
			o["tool_calls"] = calls
		}
		out = append(out, o)
	}
	return out
}

// toolsJSON is tools in the OpenAI function shape the bridge's Hermes API
// takes.
func toolsJSON(tools []bridge.Tool) []map[string]any {
	out := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		f := map[string]any{"name": t.Name}
		if t.Description != "" {
			f["description"] = t.Description
		}
		if len(t.Parameters) > 0 {
			f["parameters"] = json.RawMessage(t.Parameters)
		}
		out = append(out, map[string]any{"type": "function", "function": f})
	}
	return out
}

// empty reports whether a chat body has nothing to send.
func empty(body map[string]any) bool {
	s, ok := body["message"].(string)
	return ok && strings.TrimSpace(s) == ""
}

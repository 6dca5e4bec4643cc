package adk

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// RunRequest is the body of POST /run and POST /run_sse, with the chatkit
// resume field LastEventID.
type RunRequest struct {
	AppName      string
	UserID       string
	SessionID    string
	NewMessage   *Content
	Streaming    bool
	StateDelta   json.RawMessage // a JSON object, or nil
	LastEventID  string
	InvocationID string
	// Tools are the client's tools, in the bridge's extension key "tools"
	// (a bridge upstream offers them to its model; ADK ignores the key).
	Tools []bridge.Tool
}

// maxDepth bounds the nesting of a request body.
const maxDepth = wire.MaxDepth

// appNameRE is the api_server's guard on app names.
var appNameRE = regexp.MustCompile(`^[a-zA-Z0-9_]+$`)

// ValidAppName reports whether name is an app name the api_server takes.
func ValidAppName(name string) bool { return appNameRE.MatchString(name) }

// get returns the value of the first of keys present in o (camelCase
// first, then snake_case).
func get(o wire.Object, keys ...string) (json.RawMessage, string, bool) {
	for _, k := range keys {
		if v, ok := o[k]; ok && !wire.IsNull(v) {
			return v, k, true
		}
	}
	return nil, keys[0], false
}

func optString(o wire.Object, path string, dst *string, keys ...string) error {
	v, k, ok := get(o, keys...)
	if !ok {
		return nil
	}
	s, err := wire.AsString(v, wire.Join(path, k))
	*dst = s
	return err
}

// DecodeRequest reads a run request. Keys are read in camelCase or
// snake_case; unknown keys are ignored, as the api_server does.
func DecodeRequest(body []byte) (*RunRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, bridge.Errorf(bridge.CodeInvalid, "request body is empty: send a JSON object with appName, userId, sessionId and newMessage")
	}
	if err := wire.CheckDepth(body, maxDepth); err != nil {
		return nil, err
	}
	var o wire.Object
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, wire.SyntaxErr("request body", err)
	}
	if o == nil {
		return nil, bridge.Errorf(bridge.CodeInvalid, "request body: expected an object")
	}
	r := &RunRequest{}
	for _, f := range []struct {
		dst  *string
		keys []string
	}{
		{&r.AppName, []string{"appName", "app_name"}},
		{&r.UserID, []string{"userId", "user_id"}},
		{&r.SessionID, []string{"sessionId", "session_id"}},
		{&r.LastEventID, []string{"lastEventId", "last_event_id"}},
		{&r.InvocationID, []string{"invocationId", "invocation_id"}},
	} {
		if err := optString(o, "", f.dst, f.keys...); err != nil {
			return nil, err
		}
	}
	if v, k, ok := get(o, "streaming"); ok {
		b, err := wire.AsBool(v, k)
		if err != nil {
			return nil, err
		}
		r.Streaming = b
	}
	if v, k, ok := get(o, "stateDelta", "state_delta"); ok {
		if wire.Kind(v) != '{' {
			return nil, wire.TypeErr(k, "object", v)
		}
		r.StateDelta = wire.Compact(v)
	}
	if v, k, ok := get(o, "tools"); ok {
		if json.Unmarshal(v, &r.Tools) != nil {
			return nil, wire.TypeErr(k, "array of {name, description, parameters}", v)
		}
		for i, t := range r.Tools {
			if t.Name == "" {
				return nil, bridge.Errorf(bridge.CodeInvalid, "tools[%d].name is required", i)
			}
		}
	}
	if v, k, ok := get(o, "newMessage", "new_message"); ok {
		c, err := DecodeContent(v, k)
		if err != nil {
			return nil, err
		}
		r.NewMessage = c
	}
	return r, nil
}

// DecodeContent reads a genai Content (camelCase or snake_case keys).
func DecodeContent(raw []byte, path string) (*Content, error) {
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return nil, err
	}
	c := &Content{}
	if err := optString(o, path, &c.Role, "role"); err != nil {
		return nil, err
	}
	v, k, ok := get(o, "parts")
	if !ok {
		return nil, bridge.Errorf(bridge.CodeInvalid, "%s.parts: required", path)
	}
	arr, err := wire.AsArray(v, wire.Join(path, k))
	if err != nil {
		return nil, err
	}
	for i, pr := range arr {
		p, err := decodePart(pr, wire.Join(path, k)+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		c.Parts = append(c.Parts, p)
	}
	return c, nil
}

func decodePart(raw []byte, path string) (Part, error) {
	var p Part
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return p, err
	}
	if err := optString(o, path, &p.Text, "text"); err != nil {
		return p, err
	}
	if err := optString(o, path, &p.ThoughtSignature, "thoughtSignature", "thought_signature"); err != nil {
		return p, err
	}
	if v, k, ok := get(o, "thought"); ok {
		if p.Thought, err = wire.AsBool(v, wire.Join(path, k)); err != nil {
			return p, err
		}
	}
	if v, k, ok := get(o, "functionCall", "function_call"); ok {
		fo, err := wire.AsObject(v, wire.Join(path, k))
		if err != nil {
			return p, err
		}
		fc := &FunctionCall{}
		if err := optString(fo, wire.Join(path, k), &fc.ID, "id"); err != nil {
			return p, err
		}
		if err := optString(fo, wire.Join(path, k), &fc.Name, "name"); err != nil {
			return p, err
		}
		if a, _, ok := get(fo, "args"); ok {
			fc.Args = wire.Compact(a)
		}
		p.FunctionCall = fc
	}
	if v, k, ok := get(o, "functionResponse", "function_response"); ok {
		fo, err := wire.AsObject(v, wire.Join(path, k))
		if err != nil {
			return p, err
		}
		fr := &FunctionResponse{}
		if err := optString(fo, wire.Join(path, k), &fr.ID, "id"); err != nil {
			return p, err
		}
		if err := optString(fo, wire.Join(path, k), &fr.Name, "name"); err != nil {
			return p, err
		}
		if a, _, ok := get(fo, "response"); ok {
			fr.Response = wire.Compact(a)
		}
		p.FunctionResponse = fr
	}
	if v, k, ok := get(o, "inlineData", "inline_data"); ok {
		bo, err := wire.AsObject(v, wire.Join(path, k))
		if err != nil {
			return p, err
		}
		b := &Blob{}
		if err := optString(bo, wire.Join(path, k), &b.MimeType, "mimeType", "mime_type"); err != nil {
			return p, err
		}
		if err := optString(bo, wire.Join(path, k), &b.Data, "data"); err != nil {
			return p, err
		}
		p.InlineData = b
	}
	if v, k, ok := get(o, "fileData", "file_data"); ok {
		fo, err := wire.AsObject(v, wire.Join(path, k))
		if err != nil {
			return p, err
		}
		f := &FileData{}
		if err := optString(fo, wire.Join(path, k), &f.MimeType, "mimeType", "mime_type"); err != nil {
			return p, err
		}
		if err := optString(fo, wire.Join(path, k), &f.FileURI, "fileUri", "file_uri"); err != nil {
			return p, err
		}
		p.FileData = f
	}
	if v, _, ok := get(o, "executableCode", "executable_code"); ok {
		p.ExecutableCode = wire.Compact(v)
	}
	if v, _, ok := get(o, "codeExecutionResult", "code_execution_result"); ok {
		p.CodeExecutionResult = wire.Compact(v)
	}
	return p, nil
}

// HubMessages turns a client's newMessage into transcript messages: its
// text, thought and media parts as one user message, and each
// functionResponse as a tool message (a client's tool result). What the
// hub has no place for is listed in dropped.
func HubMessages(c *Content) (msgs []bridge.Message, dropped []string) {
	user := bridge.Message{Role: bridge.RoleUser}
	for _, p := range c.Parts {
		switch {
		case p.FunctionResponse != nil:
			fr := p.FunctionResponse
			resp := fr.Response
			if len(resp) == 0 {
				resp = json.RawMessage("{}")
			}
			part := bridge.Part{Type: bridge.PartData, JSON: resp}
			if t, ok := resultText(resp); ok {
				part = bridge.TextPart(t) // the form toolResponse gives a text result
			}
			msgs = append(msgs, bridge.Message{Role: bridge.RoleTool, Name: fr.Name, ToolCallID: fr.ID,
				Parts: []bridge.Part{part}, IsError: hasErrorKey(resp)})
		case p.FunctionCall != nil:
			dropped = append(dropped, "adk:newMessage.functionCall")
		case p.InlineData != nil:
			user.Parts = append(user.Parts, bridge.Part{Type: wire.PartType(p.InlineData.MimeType), MediaType: p.InlineData.MimeType, Data: p.InlineData.Data})
		case p.FileData != nil:
			user.Parts = append(user.Parts, bridge.Part{Type: wire.PartType(p.FileData.MimeType), MediaType: p.FileData.MimeType, URL: p.FileData.FileURI})
		case p.ExecutableCode != nil || p.CodeExecutionResult != nil:
			dropped = append(dropped, "adk:newMessage.code")
		case p.Thought:
			user.Parts = append(user.Parts, bridge.Part{Type: bridge.PartReasoning, Text: p.Text, Signature: p.ThoughtSignature})
		default:
			user.Parts = append(user.Parts, bridge.TextPart(p.Text))
		}
	}
	if len(user.Parts) > 0 {
		msgs = append([]bridge.Message{user}, msgs...)
	}
	return msgs, dropped
}

// resultText is the text of a response {"result": "<text>"}, the object
// ADK wraps a tool's plain text result in.
func resultText(raw json.RawMessage) (string, bool) {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || len(o) != 1 {
		return "", false
	}
	var s string
	if r, ok := o["result"]; !ok || json.Unmarshal(r, &s) != nil {
		return "", false
	}
	return s, true
}

// hasErrorKey reports whether a tool response is an object with an
// "error" key (ADK's convention for a failed tool).
func hasErrorKey(raw json.RawMessage) bool {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return false
	}
	_, ok := o["error"]
	return ok
}

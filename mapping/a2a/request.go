package a2a

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// SendParams are the params of message/send and message/stream (and of
// 1.0's SendMessage and SendStreamingMessage), decoded.
type SendParams struct {
	Message *a2asdk.Message
	// AcceptedOutputModes are the MIME types the client takes.
	AcceptedOutputModes []string
	// Blocking: message/send waits for the task's outcome (0.3 blocking,
	// the default; 1.0's returnImmediately false).
	Blocking bool
	// HistoryLength bounds the history of the returned task (nil: all).
	HistoryLength *int
	// Push is set when the request configures push notifications.
	Push     bool
	Metadata map[string]any
}

// DecodeSendParams reads the params of a send in either version's shape
// (wire -> SDK types). Errors are *bridge.Error with CodeInvalid naming
// the field (-32602 on the wire).
func DecodeSendParams(raw json.RawMessage) (*SendParams, error) {
	o, err := paramsObject(raw)
	if err != nil {
		return nil, err
	}
	p := &SendParams{Blocking: true}
	mraw, ok := o["message"]
	if !ok || isNull(mraw) {
		return nil, invalid("params.message is required")
	}
	if p.Message, err = decodeMessage(mraw, "params.message"); err != nil {
		return nil, err
	}
	if p.Metadata, err = optMap(o, "metadata", "params"); err != nil {
		return nil, err
	}
	craw, ok := o["configuration"]
	if !ok || isNull(craw) {
		return p, nil
	}
	c, err := wire.AsObject(craw, "params.configuration")
	if err != nil {
		return nil, err
	}
	if v, ok := c["acceptedOutputModes"]; ok && !isNull(v) {
		if p.AcceptedOutputModes, err = asStrings(v, "params.configuration.acceptedOutputModes"); err != nil {
			return nil, err
		}
	}
	if v, ok := c["blocking"]; ok && !isNull(v) {
		if p.Blocking, err = wire.AsBool(v, "params.configuration.blocking"); err != nil {
			return nil, err
		}
	}
	if v, ok := c["returnImmediately"]; ok && !isNull(v) {
		ri, err := wire.AsBool(v, "params.configuration.returnImmediately")
		if err != nil {
			return nil, err
		}
		p.Blocking = !ri
	}
	if p.HistoryLength, err = historyLength(c, "params.configuration"); err != nil {
		return nil, err
	}
	for _, k := range []string{"pushNotificationConfig", "taskPushNotificationConfig"} {
		if v, ok := c[k]; ok && !isNull(v) {
			p.Push = true
		}
	}
	return p, nil
}

func paramsObject(raw json.RawMessage) (object, error) {
	if raw == nil {
		return nil, invalid("params is required")
	}
	if wire.Kind(raw) == '[' {
		return nil, invalid("params must be an object, not positional")
	}
	return wire.AsObject(raw, "params")
}

func historyLength(o object, path string) (*int, error) {
	v, ok := o["historyLength"]
	if !ok || isNull(v) {
		return nil, nil
	}
	n, err := asInt(v, path+".historyLength")
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalid("%s.historyLength: must not be negative", path)
	}
	return &n, nil
}

// TaskParams are the params of tasks/get, tasks/cancel and
// tasks/resubscribe (GetTask, CancelTask, SubscribeToTask).
type TaskParams struct {
	ID            string
	HistoryLength *int
}

// DecodeTaskParams reads {id, historyLength?, metadata?} (a 1.0 tenant is
// accepted and ignored).
func DecodeTaskParams(raw json.RawMessage) (*TaskParams, error) {
	o, err := paramsObject(raw)
	if err != nil {
		return nil, err
	}
	v, ok := o["id"]
	if !ok {
		return nil, invalid("params.id is required")
	}
	id, err := wire.AsString(v, "params.id")
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, invalid("params.id must not be empty")
	}
	p := &TaskParams{ID: id}
	if p.HistoryLength, err = historyLength(o, "params"); err != nil {
		return nil, err
	}
	if _, err := optMap(o, "metadata", "params"); err != nil {
		return nil, err
	}
	return p, nil
}

// ListParams are the params of 1.0's ListTasks.
type ListParams struct {
	ContextID        string
	State            a2asdk.TaskState // "" for any
	PageSize         int
	PageToken        string
	HistoryLength    *int
	IncludeArtifacts bool
	After            time.Time
}

// DecodeListParams reads ListTasks' params.
func DecodeListParams(raw json.RawMessage) (*ListParams, error) {
	if raw == nil {
		return &ListParams{}, nil
	}
	o, err := paramsObject(raw)
	if err != nil {
		return nil, err
	}
	p := &ListParams{}
	if p.ContextID, err = optString(o, "contextId", "params"); err != nil {
		return nil, err
	}
	if s, err := optString(o, "status", "params"); err != nil {
		return nil, err
	} else if s != "" {
		if p.State = ParseState(s); p.State == "" {
			return nil, invalid("params.status: unknown task state %q", s)
		}
	}
	if v, ok := o["pageSize"]; ok && !isNull(v) {
		if p.PageSize, err = asInt(v, "params.pageSize"); err != nil {
			return nil, err
		}
		if p.PageSize < 1 || p.PageSize > 100 {
			return nil, invalid("params.pageSize must be between 1 and 100")
		}
	}
	if p.PageToken, err = optString(o, "pageToken", "params"); err != nil {
		return nil, err
	}
	if p.HistoryLength, err = historyLength(o, "params"); err != nil {
		return nil, err
	}
	if v, ok := o["includeArtifacts"]; ok && !isNull(v) {
		if p.IncludeArtifacts, err = wire.AsBool(v, "params.includeArtifacts"); err != nil {
			return nil, err
		}
	}
	if s, err := optString(o, "statusTimestampAfter", "params"); err != nil {
		return nil, err
	} else if s != "" {
		if p.After, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, invalid("params.statusTimestampAfter: not an RFC 3339 time")
		}
	}
	return p, nil
}

// states maps both versions' task state names.
var states = map[string]a2asdk.TaskState{
	"submitted": a2asdk.TaskStateSubmitted, "TASK_STATE_SUBMITTED": a2asdk.TaskStateSubmitted,
	"working": a2asdk.TaskStateWorking, "TASK_STATE_WORKING": a2asdk.TaskStateWorking,
	"input-required": a2asdk.TaskStateInputRequired, "TASK_STATE_INPUT_REQUIRED": a2asdk.TaskStateInputRequired,
	"auth-required": a2asdk.TaskStateAuthRequired, "TASK_STATE_AUTH_REQUIRED": a2asdk.TaskStateAuthRequired,
	"completed": a2asdk.TaskStateCompleted, "TASK_STATE_COMPLETED": a2asdk.TaskStateCompleted,
	"canceled": a2asdk.TaskStateCanceled, "TASK_STATE_CANCELED": a2asdk.TaskStateCanceled,
	"failed": a2asdk.TaskStateFailed, "TASK_STATE_FAILED": a2asdk.TaskStateFailed,
	"rejected": a2asdk.TaskStateRejected, "TASK_STATE_REJECTED": a2asdk.TaskStateRejected,
	"unknown": a2asdk.TaskStateUnknown, "TASK_STATE_UNSPECIFIED": a2asdk.TaskStateUnknown,
}

// ParseState reads a task state in either version's spelling; "" when it
// is none.
func ParseState(s string) a2asdk.TaskState { return states[s] }

// stateName renders a state in version v.
func stateName(s a2asdk.TaskState, v Version) string {
	if v == V03 {
		if s == "" {
			return string(a2asdk.TaskStateUnknown)
		}
		return string(s)
	}
	switch s {
	case a2asdk.TaskStateUnknown, "":
		return "TASK_STATE_UNSPECIFIED"
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s), "-", "_"))
}

func parseRole(s string) a2asdk.MessageRole {
	switch s {
	case "user", "ROLE_USER":
		return a2asdk.MessageRoleUser
	case "agent", "ROLE_AGENT":
		return a2asdk.MessageRoleAgent
	}
	return a2asdk.MessageRoleUnspecified
}

func roleName(r a2asdk.MessageRole, v Version) string {
	if v == V03 {
		return string(r)
	}
	switch r {
	case a2asdk.MessageRoleUser:
		return "ROLE_USER"
	case a2asdk.MessageRoleAgent:
		return "ROLE_AGENT"
	}
	return "ROLE_UNSPECIFIED"
}

// decodeMessage reads a Message in either version's shape.
func decodeMessage(raw []byte, path string) (*a2asdk.Message, error) {
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return nil, err
	}
	if k, err := optString(o, "kind", path); err != nil {
		return nil, err
	} else if k != "" && k != "message" {
		return nil, invalid("%s.kind: %q, want \"message\"", path, k)
	}
	m := &a2asdk.Message{}
	if m.ID, err = optString(o, "messageId", path); err != nil {
		return nil, err
	}
	if m.ID == "" {
		return nil, invalid("%s.messageId is required", path)
	}
	rs, err := optString(o, "role", path)
	if err != nil {
		return nil, err
	}
	if m.Role = parseRole(rs); m.Role == "" {
		if rs == "" {
			return nil, invalid("%s.role is required", path)
		}
		return nil, invalid("%s.role: unknown role %q", path, rs)
	}
	praw, ok := o["parts"]
	if !ok || isNull(praw) {
		return nil, invalid("%s.parts is required", path)
	}
	parts, err := wire.AsArray(praw, path+".parts")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, invalid("%s.parts must not be empty", path)
	}
	m.Parts = make(a2asdk.ContentParts, 0, len(parts))
	for i, pr := range parts {
		p, err := decodePart(pr, path+".parts["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		m.Parts = append(m.Parts, p)
	}
	if m.ContextID, err = optString(o, "contextId", path); err != nil {
		return nil, err
	}
	var tid string
	if tid, err = optString(o, "taskId", path); err != nil {
		return nil, err
	}
	m.TaskID = a2asdk.TaskID(tid)
	if v, ok := o["referenceTaskIds"]; ok && !isNull(v) {
		ids, err := asStrings(v, path+".referenceTaskIds")
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			m.ReferenceTasks = append(m.ReferenceTasks, a2asdk.TaskID(id))
		}
	}
	if v, ok := o["extensions"]; ok && !isNull(v) {
		if m.Extensions, err = asStrings(v, path+".extensions"); err != nil {
			return nil, err
		}
	}
	if m.Metadata, err = optMap(o, "metadata", path); err != nil {
		return nil, err
	}
	return m, nil
}

// decodePart reads a Part: 0.3's {kind, ...} or 1.0's flattened
// {text|data|raw|url, mediaType?, filename?}.
func decodePart(raw []byte, path string) (a2asdk.Part, error) {
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return nil, err
	}
	meta, err := optMap(o, "metadata", path)
	if err != nil {
		return nil, err
	}
	kind, err := optString(o, "kind", path)
	if err != nil {
		return nil, err
	}
	if kind == "" { // 1.0: the member present says what the part is
		for _, k := range []string{"text", "data", "raw", "url", "file"} {
			if _, ok := o[k]; ok {
				kind = k
				break
			}
		}
	}
	switch kind {
	case "text":
		v, ok := o["text"]
		if !ok {
			return nil, invalid("%s.text is required", path)
		}
		s, err := wire.AsString(v, path+".text")
		if err != nil {
			return nil, err
		}
		return a2asdk.TextPart{Text: s, Metadata: meta}, nil
	case "data":
		v, ok := o["data"]
		if !ok {
			return nil, invalid("%s.data is required", path)
		}
		d, err := asMap(v, path+".data")
		if err != nil {
			return nil, err
		}
		return a2asdk.DataPart{Data: d, Metadata: meta}, nil
	case "file":
		v, ok := o["file"]
		if !ok {
			return nil, invalid("%s.file is required", path)
		}
		f, err := wire.AsObject(v, path+".file")
		if err != nil {
			return nil, err
		}
		var fm a2asdk.FileMeta
		if fm.MimeType, err = optString(f, "mimeType", path+".file"); err != nil {
			return nil, err
		}
		if fm.Name, err = optString(f, "name", path+".file"); err != nil {
			return nil, err
		}
		b, err := optString(f, "bytes", path+".file")
		if err != nil {
			return nil, err
		}
		u, err := optString(f, "uri", path+".file")
		if err != nil {
			return nil, err
		}
		switch {
		case b != "" && u != "":
			return nil, invalid("%s.file: bytes and uri are exclusive", path)
		case b != "":
			return a2asdk.FilePart{File: a2asdk.FileBytes{FileMeta: fm, Bytes: b}, Metadata: meta}, nil
		case u != "":
			return a2asdk.FilePart{File: a2asdk.FileURI{FileMeta: fm, URI: u}, Metadata: meta}, nil
		}
		return nil, invalid("%s.file: bytes or uri is required", path)
	case "raw", "url":
		var fm a2asdk.FileMeta
		if fm.MimeType, err = optString(o, "mediaType", path); err != nil {
			return nil, err
		}
		if fm.Name, err = optString(o, "filename", path); err != nil {
			return nil, err
		}
		s, err := optString(o, kind, path)
		if err != nil {
			return nil, err
		}
		if s == "" {
			return nil, invalid("%s.%s must not be empty", path, kind)
		}
		if kind == "raw" {
			return a2asdk.FilePart{File: a2asdk.FileBytes{FileMeta: fm, Bytes: s}, Metadata: meta}, nil
		}
		return a2asdk.FilePart{File: a2asdk.FileURI{FileMeta: fm, URI: s}, Metadata: meta}, nil
	case "":
		return nil, invalid("%s: a part needs kind, or one of text, data, raw, url", path)
	}
	return nil, invalid("%s.kind: unknown part kind %q", path, kind)
}

// partText returns a text part's text and whether p is one.
func partText(p a2asdk.Part) (string, bool) {
	switch t := p.(type) {
	case a2asdk.TextPart:
		return t.Text, true
	case *a2asdk.TextPart:
		return t.Text, true
	}
	return "", false
}

// Metadata keys of the ADK convention (google/adk-python a2a converters),
// which chatkit's A2A adapter reads.
const (
	metaADKType     = "adk_type"
	metaADKThought  = "adk_thought"
	adkFunctionCall = "function_call"
	adkFunctionResp = "function_response"
)

func isThought(meta map[string]any) bool {
	v, _ := meta[metaADKThought].(bool)
	return v
}

// hubError is a decoded frame's error as a hub error.
func hubError(err error) *bridge.Error { return bridge.AsError(err) }

// ToolsOf reads the client's tools a send's params.metadata carries under
// MetaTools (wire -> hub); none when absent.
func ToolsOf(meta map[string]any) ([]bridge.Tool, error) {
	v, ok := meta[MetaTools]
	if !ok || v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, invalid("params.metadata.%s: not JSON", MetaTools)
	}
	var tools []bridge.Tool
	if json.Unmarshal(raw, &tools) != nil {
		return nil, invalid("params.metadata.%s: want an array of {name, description, parameters}", MetaTools)
	}
	for i, t := range tools {
		if t.Name == "" {
			return nil, invalid("params.metadata.%s[%d].name is required", MetaTools, i)
		}
	}
	return tools, nil
}

// DecodeRequest parses a JSON-RPC POST body (wire -> requests): one request,
// or a batch. A body that is not JSON is -32700; one that is JSON but no
// request or batch (a bare string, an empty batch, a batch too big, JSON
// nested too deep) is -32600. Otherwise each request carries its own
// error, if any. DecodeRequest never panics and keeps no reference to body.
func DecodeRequest(body []byte) (reqs []Request, batch bool, err *Error) {
	if !json.Valid(body) {
		return nil, false, &Error{Code: CodeParseError, Message: "Invalid JSON payload."}
	}
	if wire.CheckDepth(body, maxDepth) != nil {
		return nil, false, &Error{Code: CodeInvalidRequest, Message: "Invalid JSON-RPC Request: JSON nested deeper than " + strconv.Itoa(maxDepth) + " levels."}
	}
	switch wire.Kind(body) {
	case '{':
		return []Request{decodeRequest(body)}, false, nil
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(body, &elems) != nil {
			return nil, false, &Error{Code: CodeParseError, Message: "Invalid JSON payload."}
		}
		switch {
		case len(elems) == 0:
			return nil, true, &Error{Code: CodeInvalidRequest, Message: "Invalid JSON-RPC Request: empty batch."}
		case len(elems) > MaxBatch:
			return nil, true, &Error{Code: CodeInvalidRequest,
				Message: "Invalid JSON-RPC Request: a batch of " + strconv.Itoa(len(elems)) + " requests; at most " + strconv.Itoa(MaxBatch) + "."}
		}
		reqs = make([]Request, len(elems))
		for i, e := range elems {
			reqs[i] = decodeRequest(e)
		}
		return reqs, true, nil
	}
	return nil, false, &Error{Code: CodeInvalidRequest, Message: "Invalid JSON-RPC Request: not an object or a batch."}
}

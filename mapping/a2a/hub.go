package a2a

import (
	"bytes"
	"encoding/json"
	"strings"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// HubMessage turns a client's message into the hub's (wire -> hub): text
// parts are text, file parts images, audio or files (inline bytes, or a URL
// passed through and never fetched), data parts data. The second result
// names what the hub does not carry (part and message metadata, reference
// task ids, extensions).
func HubMessage(m *a2asdk.Message) (bridge.Message, []string) {
	out := bridge.Message{Role: bridge.RoleUser, Parts: make([]bridge.Part, 0, len(m.Parts))}
	if m.Role == a2asdk.MessageRoleAgent {
		out.Role = bridge.RoleAssistant
	}
	var dropped []string
	for _, p := range m.Parts {
		if len(p.Meta()) > 0 && !isThought(p.Meta()) {
			dropped = appendUnique(dropped, "a2a:part.metadata")
		}
		out.Parts = append(out.Parts, HubPart(p))
	}
	if len(m.Metadata) > 0 {
		dropped = appendUnique(dropped, "a2a:message.metadata")
	}
	if len(m.ReferenceTasks) > 0 {
		dropped = appendUnique(dropped, "a2a:message.referenceTaskIds")
	}
	if len(m.Extensions) > 0 {
		dropped = appendUnique(dropped, "a2a:message.extensions")
	}
	return out, dropped
}

// HubToolResults takes the function_response data parts (ADK's adk_type
// convention, the shape the bridge's own tasks carry their tool results
// in) out of a client's message (wire -> hub): each is a tool message
// answering one call. rest is the message without them, nil when nothing
// else is left.
func HubToolResults(m *a2asdk.Message) (results []bridge.Message, rest *a2asdk.Message) {
	var kept a2asdk.ContentParts
	for _, p := range m.Parts {
		var dp a2asdk.DataPart
		switch t := p.(type) {
		case a2asdk.DataPart:
			dp = t
		case *a2asdk.DataPart:
			dp = *t
		default:
			kept = append(kept, p)
			continue
		}
		if kind, _ := dp.Metadata[metaADKType].(string); kind != adkFunctionResp {
			kept = append(kept, p)
			continue
		}
		id, _ := dp.Data["id"].(string)
		name, _ := dp.Data["name"].(string)
		isErr, _ := dp.Data["is_error"].(bool)
		results = append(results, bridge.Message{Role: bridge.RoleTool, ToolCallID: id, Name: name,
			IsError: isErr, Parts: []bridge.Part{resultPart(dp.Data["response"])}})
	}
	if len(results) == 0 {
		return nil, m
	}
	if len(kept) == 0 {
		return results, nil
	}
	r := *m
	r.Parts = kept
	return results, &r
}

// resultPart is the content of a function_response's response: the text
// of {"result": "<text>"} (the form resultValue gives text), else the
// JSON value.
func resultPart(v any) bridge.Part {
	if o, ok := v.(map[string]any); ok && len(o) == 1 {
		if s, ok := o["result"].(string); ok {
			return bridge.TextPart(s)
		}
	}
	raw, err := json.Marshal(v)
	if err != nil || v == nil {
		raw = []byte("{}")
	}
	return bridge.Part{Type: bridge.PartData, JSON: raw}
}

// HubPart converts one part.
func HubPart(p a2asdk.Part) bridge.Part {
	switch t := p.(type) {
	case *a2asdk.TextPart:
		return HubPart(*t)
	case *a2asdk.DataPart:
		return HubPart(*t)
	case *a2asdk.FilePart:
		return HubPart(*t)
	case a2asdk.TextPart:
		if isThought(t.Metadata) {
			return bridge.Part{Type: bridge.PartReasoning, Text: t.Text}
		}
		return bridge.TextPart(t.Text)
	case a2asdk.DataPart:
		raw, err := json.Marshal(t.Data)
		if err != nil || t.Data == nil {
			raw = []byte("{}")
		}
		return bridge.Part{Type: bridge.PartData, JSON: raw}
	case a2asdk.FilePart:
		var meta a2asdk.FileMeta
		var out bridge.Part
		switch f := t.File.(type) {
		case a2asdk.FileBytes:
			meta, out.Data = f.FileMeta, f.Bytes
		case *a2asdk.FileBytes:
			meta, out.Data = f.FileMeta, f.Bytes
		case a2asdk.FileURI:
			meta, out.URL = f.FileMeta, f.URI
		case *a2asdk.FileURI:
			meta, out.URL = f.FileMeta, f.URI
		}
		out.MediaType, out.Filename = meta.MimeType, meta.Name
		out.Type = wire.PartType(out.MediaType)
		return out
	}
	return bridge.TextPart("")
}

// SDKPart converts a hub part for an A2A message (hub -> wire). ok is
// false for parts A2A has no form for (reasoning signatures, opaque data
// of another dialect): the caller records them as dropped.
func SDKPart(p *bridge.Part) (a2asdk.Part, bool) {
	switch p.Type {
	case bridge.PartText, bridge.PartRefusal:
		return a2asdk.TextPart{Text: p.Text}, true
	case bridge.PartReasoning:
		if p.Text == "" {
			return nil, false
		}
		return a2asdk.TextPart{Text: p.Text, Metadata: map[string]any{metaADKThought: true}}, true
	case bridge.PartData:
		var m map[string]any
		if json.Unmarshal(p.JSON, &m) == nil && m != nil {
			return a2asdk.DataPart{Data: m}, true
		}
		return a2asdk.TextPart{Text: string(compact(p.JSON))}, true
	case bridge.PartImage, bridge.PartAudio, bridge.PartFile:
		meta := a2asdk.FileMeta{MimeType: p.MediaType, Name: p.Filename}
		switch {
		case p.Data != "":
			return a2asdk.FilePart{File: a2asdk.FileBytes{FileMeta: meta, Bytes: p.Data}}, true
		case strings.HasPrefix(p.URL, "data:"):
			mime, data, ok := parseDataURL(p.URL)
			if !ok {
				return nil, false
			}
			if meta.MimeType == "" {
				meta.MimeType = mime
			}
			return a2asdk.FilePart{File: a2asdk.FileBytes{FileMeta: meta, Bytes: data}}, true
		case p.URL != "":
			return a2asdk.FilePart{File: a2asdk.FileURI{FileMeta: meta, URI: p.URL}}, true
		}
	}
	return nil, false
}

// parseDataURL splits a base64 data: URL into its MIME type and payload.
func parseDataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	if !found || !strings.HasSuffix(head, ";base64") {
		return "", "", false
	}
	return strings.TrimSuffix(head, ";base64"), data, true
}

// toolCallPart renders a tool call as ADK's function_call data part.
func toolCallPart(tc *bridge.ToolCall) a2asdk.Part {
	d := map[string]any{"id": tc.ID, "name": tc.Name, "args": argsValue(tc.Arguments)}
	return a2asdk.DataPart{Data: d, Metadata: map[string]any{metaADKType: adkFunctionCall}}
}

// argsValue is a tool call's arguments as JSON when they are an object,
// else the text as the model wrote it.
func argsValue(args string) any {
	raw := bytes.TrimSpace([]byte(args))
	if wire.Kind(raw) == '{' && json.Valid(raw) {
		return json.RawMessage(compact(raw))
	}
	if len(raw) == 0 {
		return map[string]any{}
	}
	return args
}

// toolResultPart renders a tool result as ADK's function_response part.
func toolResultPart(tr *bridge.ToolResult) a2asdk.Part {
	d := map[string]any{"id": tr.CallID, "response": resultValue(tr.Content)}
	if tr.Name != "" {
		d["name"] = tr.Name
	}
	if tr.IsError {
		d["is_error"] = true
	}
	return a2asdk.DataPart{Data: d, Metadata: map[string]any{metaADKType: adkFunctionResp}}
}

// resultValue is a tool result's content: one JSON object as itself, else
// {"result": <the text>}.
func resultValue(parts []bridge.Part) any {
	if len(parts) == 1 && parts[0].Type == bridge.PartData && wire.Kind(parts[0].JSON) == '{' {
		return json.RawMessage(compact(parts[0].JSON))
	}
	var sb strings.Builder
	for i := range parts {
		switch parts[i].Type {
		case bridge.PartText:
			sb.WriteString(parts[i].Text)
		case bridge.PartData:
			sb.Write(compact(parts[i].JSON))
		}
	}
	s := sb.String()
	if raw := []byte(strings.TrimSpace(s)); wire.Kind(raw) == '{' && json.Valid(raw) {
		return json.RawMessage(compact(raw))
	}
	return map[string]any{"result": s}
}

func appendUnique(s []string, add ...string) []string {
	for _, a := range add {
		found := false
		for _, x := range s {
			if x == a {
				found = true
				break
			}
		}
		if !found {
			s = append(s, a)
		}
	}
	return s
}

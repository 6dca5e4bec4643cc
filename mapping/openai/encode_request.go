package openai

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// reservedFields are written by EncodeRequest itself; an Extra entry of the
// same name never overrides them.
var reservedFields = map[string]bool{
	"model": true, "messages": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "stream": true, "stream_options": true,
	"max_completion_tokens": true, keyMaxTokens: true, "temperature": true,
	"top_p": true, "stop": true, "seed": true, "reasoning_effort": true,
	"metadata": true, "user": true, "response_format": true,
}

// EncodeRequest renders req as a Chat Completions request body for an
// upstream (hub -> wire). It always asks for a stream with usage
// (stream: true, stream_options.include_usage: true): the bridge streams
// every upstream call. The second result lists what could not be carried.
//
// Messages are rendered as they came: string content when StringContent,
// null when NullContent, an array of parts otherwise. Reasoning parts are
// never sent back (DeepSeek rejects reasoning_content in requests; that is
// the protocol's rule, so they are not listed as dropped). Opaque data and
// Extra are merged back only when their dialect is "openai".
//
// The token limit goes out as max_completion_tokens, unless Extra (of
// dialect "openai") holds "max_tokens": then the client used the legacy key
// and it is written back under that key (see DecodeRequest).
func EncodeRequest(req *bridge.Request) (body []byte, dropped []string, err error) {
	var e reqEncoder
	return e.Encode(req, Dialect, e.encode)
}

type reqEncoder struct {
	wire.RequestEncoding
}

func (e *reqEncoder) drop(s string) { e.Dropped = append(e.Dropped, s) }

func (e *reqEncoder) encode() ([]byte, error) {
	req := e.Req
	w := wire.NewObj()
	w.Str("model", req.Model)

	w.Key("messages")
	w.B = append(w.B, '[')
	for i := range req.Messages {
		if i > 0 {
			w.B = append(w.B, ',')
		}
		m, err := e.message(&req.Messages[i], i)
		if err != nil {
			return nil, err
		}
		w.B = append(w.B, m...)
	}
	w.B = append(w.B, ']')

	if len(req.Tools) > 0 {
		w.Key("tools")
		w.B = append(w.B, '[')
		for i := range req.Tools {
			if i > 0 {
				w.B = append(w.B, ',')
			}
			t, err := tool(&req.Tools[i], i)
			if err != nil {
				return nil, err
			}
			w.B = append(w.B, t...)
		}
		w.B = append(w.B, ']')
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case bridge.ToolChoiceAuto, bridge.ToolChoiceNone, bridge.ToolChoiceRequired:
			w.Str("tool_choice", string(tc.Mode))
		case bridge.ToolChoiceTool:
			f := wire.NewObj()
			f.Str("name", tc.Name)
			c := wire.NewObj()
			c.Str("type", "function")
			c.Raw("function", f.End())
			w.Raw("tool_choice", c.End())
		default:
			e.drop("tool_choice:" + string(tc.Mode))
		}
	}
	if req.ParallelToolCalls != nil {
		w.Bool("parallel_tool_calls", *req.ParallelToolCalls)
	}

	w.Bool("stream", true)
	so := wire.NewObj()
	so.Bool("include_usage", true)
	if e.Same {
		if raw, ok := req.Extra["stream_options"]; ok && !so.Merge(raw) {
			e.drop("param:stream_options")
		}
	}
	w.Raw("stream_options", so.End())

	e.maxTokens(w)
	if req.Temperature != nil {
		w.Float("temperature", *req.Temperature)
	}
	if req.TopP != nil {
		w.Float("top_p", *req.TopP)
	}
	if req.TopK != nil {
		e.drop("top_k")
	}
	switch len(req.Stop) {
	case 0:
	case 1:
		w.Str("stop", req.Stop[0])
	default:
		w.Strings("stop", req.Stop)
	}
	if req.Seed != nil {
		w.Int("seed", *req.Seed)
	}
	if req.ReasoningEffort != "" {
		w.Str("reasoning_effort", req.ReasoningEffort)
	}
	if len(req.ResponseFormat) > 0 {
		if rf := e.responseFormat(); rf != nil {
			w.Raw("response_format", rf)
		}
	}
	if len(req.Metadata) > 0 {
		w.StrMap("metadata", req.Metadata)
	}
	if req.User != "" {
		w.Str("user", req.User)
	}

	for _, k := range wire.SortedKeys(req.Extra) {
		if !e.Same {
			e.drop("param:" + k)
			continue
		}
		if reservedFields[k] || w.Has(k) {
			continue
		}
		v := req.Extra[k]
		if !json.Valid(v) {
			e.drop("param:" + k)
			continue
		}
		w.Raw(k, wire.Compact(v))
	}
	return w.End(), nil
}

// maxTokens writes the token limit under the key the client used: see
// keyMaxTokens.
func (e *reqEncoder) maxTokens(w *wire.ObjWriter) {
	req := e.Req
	legacy, hasLegacy := req.Extra[keyMaxTokens]
	if !e.Same || !hasLegacy || !json.Valid(legacy) {
		if req.MaxTokens != nil {
			w.Int("max_completion_tokens", *req.MaxTokens)
		}
		return
	}
	v, err := strconv.ParseInt(string(wire.Compact(legacy)), 10, 64)
	switch {
	case req.MaxTokens == nil:
		w.Raw(keyMaxTokens, wire.Compact(legacy))
	case err == nil && v == *req.MaxTokens:
		w.Int(keyMaxTokens, *req.MaxTokens)
	default: // the client sent both keys, with different values
		w.Int("max_completion_tokens", *req.MaxTokens)
		w.Raw(keyMaxTokens, wire.Compact(legacy))
	}
}

// responseFormat renders ResponseFormat, which is in the inbound dialect's
// shape: Chat's own shape passes through; the Responses shape (a flat
// json_schema) is nested under "json_schema"; anything else is dropped.
func (e *reqEncoder) responseFormat() []byte {
	f := wire.ResponseFormat(e.Req.ResponseFormat, true)
	if f == nil {
		e.drop("response_format")
	}
	return f
}

func tool(t *bridge.Tool, i int) ([]byte, error) {
	if t.Name == "" {
		return nil, bridge.Errorf(bridge.CodeInvalid, "tools[%d].function.name: required", i)
	}
	f := wire.NewObj()
	f.Str("name", t.Name)
	if t.Description != "" {
		f.Str("description", t.Description)
	}
	if len(t.Parameters) > 0 {
		if !json.Valid(t.Parameters) {
			return nil, bridge.Errorf(bridge.CodeInvalid, "tools[%d].function.parameters: invalid JSON", i)
		}
		f.Raw("parameters", wire.Compact(t.Parameters))
	}
	if t.Strict != nil {
		f.Bool("strict", *t.Strict)
	}
	w := wire.NewObj()
	w.Str("type", "function")
	w.Raw("function", f.End())
	return w.End(), nil
}

func (e *reqEncoder) message(m *bridge.Message, i int) ([]byte, error) {
	path := "messages[" + strconv.Itoa(i) + "]"
	switch m.Role {
	case bridge.RoleSystem, bridge.RoleDeveloper, bridge.RoleUser, bridge.RoleAssistant, bridge.RoleTool:
	default:
		return nil, bridge.Errorf(bridge.CodeInvalid, "%s.role: unknown role %q", path, m.Role)
	}
	w := wire.NewObj()
	w.Str("role", string(m.Role))
	if m.Name != "" {
		w.Str("name", m.Name)
	}
	if err := e.content(w, m, path); err != nil {
		return nil, err
	}
	if m.Role == bridge.RoleAssistant && len(m.ToolCalls) > 0 {
		w.Array("tool_calls", len(m.ToolCalls), func(j int) []byte {
			return e.toolCall(&m.ToolCalls[j], path+".tool_calls["+strconv.Itoa(j)+"]")
		})
	} else if len(m.ToolCalls) > 0 {
		e.drop(path + ".tool_calls")
	}
	if m.Role == bridge.RoleTool {
		w.Str("tool_call_id", m.ToolCallID)
		if m.IsError {
			e.drop(path + ".is_error")
		}
	}
	e.mergeOpaque(w, m.Opaque, path)
	return w.End(), nil
}

func (e *reqEncoder) mergeOpaque(w *wire.ObjWriter, o *bridge.Opaque, path string) {
	if o == nil {
		return
	}
	if o.Dialect != Dialect || !w.Merge(o.Data) {
		e.drop(path + ": opaque " + wire.OpaqueDialect(o) + " data")
	}
}

func (e *reqEncoder) toolCall(tc *bridge.ToolCall, path string) []byte {
	w := toolCallObject(tc.ID, tc.Name, tc.Arguments)
	e.mergeOpaque(w, tc.Opaque, path)
	return w.End()
}

// toolCallObject starts a tool call as an assistant message carries it:
// {"id","type":"function","function":{"name","arguments"}}.
func toolCallObject(id, name, arguments string) *wire.ObjWriter {
	f := wire.NewObj()
	f.Str("name", name)
	f.Str("arguments", arguments)
	w := wire.NewObj()
	w.Str("id", id)
	w.Str("type", "function")
	w.Raw("function", f.End())
	return w
}

// content writes a message's content: see EncodeRequest.
func (e *reqEncoder) content(w *wire.ObjWriter, m *bridge.Message, path string) error {
	n := 0 // parts that go on the wire
	allText := true
	for i := range m.Parts {
		switch m.Parts[i].Type {
		case bridge.PartReasoning:
			continue
		case bridge.PartText, bridge.PartData:
		default:
			allText = false
		}
		n++
	}
	switch {
	case n == 0 && m.NullContent:
		w.Raw("content", []byte("null"))
		return nil
	case m.StringContent && allText:
		var sb strings.Builder
		for i := range m.Parts {
			switch p := &m.Parts[i]; p.Type {
			case bridge.PartText, bridge.PartData:
				sb.WriteString(wire.PartText(p))
			}
		}
		w.Str("content", sb.String())
		return nil
	case n == 0 && (m.Parts == nil || len(m.Parts) > 0):
		// No content, or only reasoning: leave content out.
		return nil
	}
	w.Key("content")
	w.B = append(w.B, '[')
	first := true
	for j := range m.Parts {
		p := &m.Parts[j]
		if p.Type == bridge.PartReasoning {
			continue
		}
		pp := path + ".content[" + strconv.Itoa(j) + "]"
		b := e.part(p, pp)
		if b == nil {
			continue
		}
		if !first {
			w.B = append(w.B, ',')
		}
		first = false
		w.B = append(w.B, b...)
	}
	w.B = append(w.B, ']')
	return nil
}

// part renders one content part, or returns nil (and records why) when it
// has no Chat Completions form.
func (e *reqEncoder) part(p *bridge.Part, path string) []byte {
	w := wire.NewObj()
	switch p.Type {
	case bridge.PartText, bridge.PartData:
		w.Str("type", "text")
		w.Str("text", wire.PartText(p))
	case bridge.PartRefusal:
		w.Str("type", "refusal")
		w.Str("refusal", p.Text)
	case bridge.PartImage:
		url := p.URL
		if url == "" && p.Data != "" && p.MediaType != "" {
			url = wire.DataURL(p.MediaType, p.Data)
		}
		if url == "" {
			e.drop(path + ": image without URL or data")
			return nil
		}
		iu := wire.NewObj()
		iu.Str("url", url)
		if p.Detail != "" {
			iu.Str("detail", p.Detail)
		}
		w.Str("type", "image_url")
		w.Raw("image_url", iu.End())
	case bridge.PartAudio:
		if p.Data == "" {
			e.drop(path + ": audio without inline data")
			return nil
		}
		a := wire.NewObj()
		a.Str("data", p.Data)
		if f := audioFormat(p); f != "" {
			a.Str("format", f)
		}
		w.Str("type", "input_audio")
		w.Raw("input_audio", a.End())
	case bridge.PartFile:
		f := wire.NewObj()
		if p.FileID != "" {
			f.Str("file_id", p.FileID)
		}
		switch {
		case p.Data != "" && p.MediaType != "":
			f.Str("file_data", wire.DataURL(p.MediaType, p.Data))
		case p.Data != "":
			f.Str("file_data", p.Data)
		case strings.HasPrefix(p.URL, "data:"):
			f.Str("file_data", p.URL)
		}
		if p.Filename != "" {
			f.Str("filename", p.Filename)
		}
		if !f.Has("file_id") && !f.Has("file_data") && p.URL != "" {
			e.drop(path + ": file by URL")
			return nil
		}
		w.Str("type", "file")
		w.Raw("file", f.End())
	case bridge.PartOpaque:
		if p.Opaque == nil || p.Opaque.Dialect != Dialect || !json.Valid(p.Opaque.Data) {
			e.drop(path + ": " + wire.OpaquePart(p.Opaque))
			return nil
		}
		return wire.Compact(p.Opaque.Data)
	default:
		e.drop(path + ": " + string(p.Type) + " part")
		return nil
	}
	e.mergeOpaque(w, p.Opaque, path)
	return w.End()
}

// audioFormat is the input_audio format of p: its Format, else one derived
// from its media type.
func audioFormat(p *bridge.Part) string {
	if p.Format != "" {
		return p.Format
	}
	switch strings.ToLower(p.MediaType) {
	case "audio/wav", "audio/x-wav", "audio/wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

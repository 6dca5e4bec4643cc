package openai

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
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
	if req == nil {
		return nil, nil, bridge.Errorf(bridge.CodeInternal, "openai: nil request")
	}
	e := reqEncoder{req: req, same: req.ExtraDialect == Dialect}
	b, err := e.encode()
	if err != nil {
		return nil, nil, err
	}
	return b, e.dropped, nil
}

type reqEncoder struct {
	req     *bridge.Request
	same    bool // Extra is ours
	dropped []string
}

func (e *reqEncoder) drop(s string) { e.dropped = append(e.dropped, s) }

func (e *reqEncoder) encode() ([]byte, error) {
	req := e.req
	w := newObj()
	w.str("model", req.Model)

	w.key("messages")
	w.b = append(w.b, '[')
	for i := range req.Messages {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		m, err := e.message(&req.Messages[i], i)
		if err != nil {
			return nil, err
		}
		w.b = append(w.b, m...)
	}
	w.b = append(w.b, ']')

	if len(req.Tools) > 0 {
		w.key("tools")
		w.b = append(w.b, '[')
		for i := range req.Tools {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			t, err := tool(&req.Tools[i], i)
			if err != nil {
				return nil, err
			}
			w.b = append(w.b, t...)
		}
		w.b = append(w.b, ']')
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case bridge.ToolChoiceAuto, bridge.ToolChoiceNone, bridge.ToolChoiceRequired:
			w.str("tool_choice", string(tc.Mode))
		case bridge.ToolChoiceTool:
			f := newObj()
			f.str("name", tc.Name)
			c := newObj()
			c.str("type", "function")
			c.raw("function", f.end())
			w.raw("tool_choice", c.end())
		default:
			e.drop("tool_choice:" + string(tc.Mode))
		}
	}
	if req.ParallelToolCalls != nil {
		w.bool("parallel_tool_calls", *req.ParallelToolCalls)
	}

	w.bool("stream", true)
	so := newObj()
	so.bool("include_usage", true)
	if e.same {
		if raw, ok := req.Extra["stream_options"]; ok && !so.merge(raw) {
			e.drop("param:stream_options")
		}
	}
	w.raw("stream_options", so.end())

	e.maxTokens(w)
	if req.Temperature != nil {
		w.float("temperature", *req.Temperature)
	}
	if req.TopP != nil {
		w.float("top_p", *req.TopP)
	}
	if req.TopK != nil {
		e.drop("top_k")
	}
	switch len(req.Stop) {
	case 0:
	case 1:
		w.str("stop", req.Stop[0])
	default:
		w.key("stop")
		w.b = append(w.b, '[')
		for i, s := range req.Stop {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, s)
		}
		w.b = append(w.b, ']')
	}
	if req.Seed != nil {
		w.int("seed", *req.Seed)
	}
	if req.ReasoningEffort != "" {
		w.str("reasoning_effort", req.ReasoningEffort)
	}
	if len(req.ResponseFormat) > 0 {
		if rf := e.responseFormat(); rf != nil {
			w.raw("response_format", rf)
		}
	}
	if len(req.Metadata) > 0 {
		m := newObj()
		for _, k := range sortedKeys(req.Metadata) {
			m.str(k, req.Metadata[k])
		}
		w.raw("metadata", m.end())
	}
	if req.User != "" {
		w.str("user", req.User)
	}

	for _, k := range sortedKeys(req.Extra) {
		if !e.same {
			e.drop("param:" + k)
			continue
		}
		if reservedFields[k] || w.has(k) {
			continue
		}
		v := req.Extra[k]
		if !json.Valid(v) {
			e.drop("param:" + k)
			continue
		}
		w.raw(k, compact(v))
	}
	return w.end(), nil
}

// maxTokens writes the token limit under the key the client used: see
// keyMaxTokens.
func (e *reqEncoder) maxTokens(w *objWriter) {
	req := e.req
	legacy, hasLegacy := req.Extra[keyMaxTokens]
	if !e.same || !hasLegacy || !json.Valid(legacy) {
		if req.MaxTokens != nil {
			w.int("max_completion_tokens", *req.MaxTokens)
		}
		return
	}
	v, err := strconv.ParseInt(string(compact(legacy)), 10, 64)
	switch {
	case req.MaxTokens == nil:
		w.raw(keyMaxTokens, compact(legacy))
	case err == nil && v == *req.MaxTokens:
		w.int(keyMaxTokens, *req.MaxTokens)
	default: // the client sent both keys, with different values
		w.int("max_completion_tokens", *req.MaxTokens)
		w.raw(keyMaxTokens, compact(legacy))
	}
}

// responseFormat renders ResponseFormat, which is in the inbound dialect's
// shape: Chat's own shape passes through; the Responses shape (a flat
// json_schema) is nested under "json_schema"; anything else is dropped.
func (e *reqEncoder) responseFormat() []byte {
	raw := e.req.ResponseFormat
	o, err := asObject(raw, "")
	if err != nil || !json.Valid(raw) {
		e.drop("response_format")
		return nil
	}
	var typ string
	if t, ok := o["type"]; ok {
		typ, _ = asString(t, "")
	}
	switch typ {
	case "text", "json_object":
		return compact(raw)
	case "json_schema":
		if _, ok := o["json_schema"]; ok {
			return compact(raw)
		}
		inner := make([]string, 0, len(o))
		for k := range o {
			if k != "type" {
				inner = append(inner, k)
			}
		}
		w := newObj()
		w.str("type", "json_schema")
		w.raw("json_schema", rawObject(o, inner))
		return w.end()
	}
	e.drop("response_format")
	return nil
}

func tool(t *bridge.Tool, i int) ([]byte, error) {
	if t.Name == "" {
		return nil, bridge.Errorf(bridge.CodeInvalid, "tools[%d].function.name: required", i)
	}
	f := newObj()
	f.str("name", t.Name)
	if t.Description != "" {
		f.str("description", t.Description)
	}
	if len(t.Parameters) > 0 {
		if !json.Valid(t.Parameters) {
			return nil, bridge.Errorf(bridge.CodeInvalid, "tools[%d].function.parameters: invalid JSON", i)
		}
		f.raw("parameters", compact(t.Parameters))
	}
	if t.Strict != nil {
		f.bool("strict", *t.Strict)
	}
	w := newObj()
	w.str("type", "function")
	w.raw("function", f.end())
	return w.end(), nil
}

func (e *reqEncoder) message(m *bridge.Message, i int) ([]byte, error) {
	path := "messages[" + strconv.Itoa(i) + "]"
	switch m.Role {
	case bridge.RoleSystem, bridge.RoleDeveloper, bridge.RoleUser, bridge.RoleAssistant, bridge.RoleTool:
	default:
		return nil, bridge.Errorf(bridge.CodeInvalid, "%s.role: unknown role %q", path, m.Role)
	}
	w := newObj()
	w.str("role", string(m.Role))
	if m.Name != "" {
		w.str("name", m.Name)
	}
	if err := e.content(w, m, path); err != nil {
		return nil, err
	}
	if m.Role == bridge.RoleAssistant && len(m.ToolCalls) > 0 {
		w.key("tool_calls")
		w.b = append(w.b, '[')
		for j := range m.ToolCalls {
			if j > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, e.toolCall(&m.ToolCalls[j], path+".tool_calls["+strconv.Itoa(j)+"]")...)
		}
		w.b = append(w.b, ']')
	} else if len(m.ToolCalls) > 0 {
		e.drop(path + ".tool_calls")
	}
	if m.Role == bridge.RoleTool {
		w.str("tool_call_id", m.ToolCallID)
		if m.IsError {
			e.drop(path + ".is_error")
		}
	}
	e.mergeOpaque(w, m.Opaque, path)
	return w.end(), nil
}

func (e *reqEncoder) mergeOpaque(w *objWriter, o *bridge.Opaque, path string) {
	if o == nil {
		return
	}
	if o.Dialect != Dialect || !w.merge(o.Data) {
		e.drop(path + ": opaque " + dialectName(o.Dialect) + " data")
	}
}

func dialectName(d string) string {
	if d == "" {
		return "unknown"
	}
	return d
}

func (e *reqEncoder) toolCall(tc *bridge.ToolCall, path string) []byte {
	f := newObj()
	f.str("name", tc.Name)
	f.str("arguments", tc.Arguments)
	w := newObj()
	w.str("id", tc.ID)
	w.str("type", "function")
	w.raw("function", f.end())
	e.mergeOpaque(w, tc.Opaque, path)
	return w.end()
}

// content writes a message's content: see EncodeRequest.
func (e *reqEncoder) content(w *objWriter, m *bridge.Message, path string) error {
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
		w.raw("content", []byte("null"))
		return nil
	case m.StringContent && allText:
		var sb strings.Builder
		for i := range m.Parts {
			switch p := &m.Parts[i]; p.Type {
			case bridge.PartText:
				sb.WriteString(p.Text)
			case bridge.PartData:
				sb.Write(compact(p.JSON))
			}
		}
		w.str("content", sb.String())
		return nil
	case n == 0 && (m.Parts == nil || len(m.Parts) > 0):
		// No content, or only reasoning: leave content out.
		return nil
	}
	w.key("content")
	w.b = append(w.b, '[')
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
			w.b = append(w.b, ',')
		}
		first = false
		w.b = append(w.b, b...)
	}
	w.b = append(w.b, ']')
	return nil
}

// part renders one content part, or returns nil (and records why) when it
// has no Chat Completions form.
func (e *reqEncoder) part(p *bridge.Part, path string) []byte {
	w := newObj()
	switch p.Type {
	case bridge.PartText:
		w.str("type", "text")
		w.str("text", p.Text)
	case bridge.PartData:
		w.str("type", "text")
		w.str("text", string(compact(p.JSON)))
	case bridge.PartRefusal:
		w.str("type", "refusal")
		w.str("refusal", p.Text)
	case bridge.PartImage:
		url := p.URL
		if url == "" && p.Data != "" && p.MediaType != "" {
			url = dataURL(p.MediaType, p.Data)
		}
		if url == "" {
			e.drop(path + ": image without URL or data")
			return nil
		}
		iu := newObj()
		iu.str("url", url)
		if p.Detail != "" {
			iu.str("detail", p.Detail)
		}
		w.str("type", "image_url")
		w.raw("image_url", iu.end())
	case bridge.PartAudio:
		if p.Data == "" {
			e.drop(path + ": audio without inline data")
			return nil
		}
		a := newObj()
		a.str("data", p.Data)
		if f := audioFormat(p); f != "" {
			a.str("format", f)
		}
		w.str("type", "input_audio")
		w.raw("input_audio", a.end())
	case bridge.PartFile:
		f := newObj()
		if p.FileID != "" {
			f.str("file_id", p.FileID)
		}
		switch {
		case p.Data != "" && p.MediaType != "":
			f.str("file_data", dataURL(p.MediaType, p.Data))
		case p.Data != "":
			f.str("file_data", p.Data)
		case strings.HasPrefix(p.URL, "data:"):
			f.str("file_data", p.URL)
		}
		if p.Filename != "" {
			f.str("filename", p.Filename)
		}
		if !f.has("file_id") && !f.has("file_data") && p.URL != "" {
			e.drop(path + ": file by URL")
			return nil
		}
		w.str("type", "file")
		w.raw("file", f.end())
	case bridge.PartOpaque:
		if p.Opaque == nil || p.Opaque.Dialect != Dialect || !json.Valid(p.Opaque.Data) {
			d := "unknown"
			if p.Opaque != nil {
				d = dialectName(p.Opaque.Dialect)
			}
			e.drop(path + ": opaque " + d + " part")
			return nil
		}
		return compact(p.Opaque.Data)
	default:
		e.drop(path + ": " + string(p.Type) + " part")
		return nil
	}
	if p.Opaque != nil {
		if p.Opaque.Dialect != Dialect || !w.merge(p.Opaque.Data) {
			e.drop(path + ": opaque " + dialectName(p.Opaque.Dialect) + " data")
		}
	}
	return w.end()
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

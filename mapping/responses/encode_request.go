package responses

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// EncodeOptions tune EncodeRequest.
type EncodeOptions struct {
	// Store asks the upstream to keep the response, so a later request can
	// continue it; false sends store: false (the bridge keeps the state).
	Store bool
	// PreviousResponseID continues that upstream response: only the
	// messages from From on go as input, and the leading system and
	// developer messages go as instructions (which the API does not carry
	// over from the previous response).
	PreviousResponseID string
	From               int
	// WebSocket renders the body as WebSocket mode's response.create
	// message: "type": "response.create" first, and no "stream" (every
	// response over the socket streams).
	WebSocket bool
}

// minOutputTokens is the least max_output_tokens the API accepts.
const minOutputTokens = 16

// reserved are written by EncodeRequest itself (or are the bridge's own to
// decide); an Extra entry of the same name never overrides them.
var reserved = map[string]bool{
	"model": true, "input": true, "instructions": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "stream": true, "stream_options": true, "store": true,
	"previous_response_id": true, "max_output_tokens": true, "temperature": true, "top_p": true,
	"reasoning": true, "text": true, "metadata": true, "user": true, "background": true,
	"conversation": true, "prompt": true,
}

// EncodeRequest renders req as a streaming create-response body for an
// upstream (hub -> wire). The second result lists what could not be
// carried.
//
// Messages become input items (see the package doc for the mapping back);
// an assistant's reasoning goes back only as the reasoning item a
// Responses upstream made (its id in the part's Opaque), with its
// encrypted_content. A function tool whose strict is not set is sent with
// strict: false, the default of every other dialect, unless the request
// came from a Responses client (then the upstream's own default holds).
// Stop sequences, top_k and seed have no Responses field and are dropped;
// Extra of dialect "responses" is merged back (include, truncation,
// built-in tools, ...), any other dialect's is dropped.
func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error) {
	e := reqEncoder{opt: opt}
	return e.Encode(req, Dialect, e.encode)
}

type reqEncoder struct {
	wire.RequestEncoding
	opt EncodeOptions
}

func (e *reqEncoder) drop(s string) { e.Dropped = wire.AddDropped(e.Dropped, s) }

func (e *reqEncoder) encode() ([]byte, error) {
	req := e.Req
	w := wire.NewObj()
	if e.opt.WebSocket {
		w.Str("type", "response.create")
	}
	w.Str("model", req.Model)

	msgs := req.Messages
	if e.opt.PreviousResponseID != "" {
		var instr []string
		for _, m := range msgs {
			if m.Role != bridge.RoleSystem && m.Role != bridge.RoleDeveloper {
				break
			}
			instr = append(instr, m.Text())
		}
		if len(instr) > 0 {
			w.Str("instructions", strings.Join(instr, "\n\n"))
		}
		from := min(max(e.opt.From, len(instr)), len(msgs))
		msgs = msgs[from:]
		w.Str("previous_response_id", e.opt.PreviousResponseID)
	}
	w.Key("input")
	w.B = append(w.B, '[')
	first := true
	for i := range msgs {
		items, err := e.message(&msgs[i], i)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if !first {
				w.B = append(w.B, ',')
			}
			first = false
			w.B = append(w.B, it...)
		}
	}
	w.B = append(w.B, ']')

	e.tools(w)
	switch tc := req.ToolChoice; {
	case tc == nil:
		if x, ok := req.Extra["tool_choice"]; ok && e.Same && json.Valid(x) {
			w.Raw("tool_choice", wire.Compact(x))
		}
	case tc.Mode == bridge.ToolChoiceAuto || tc.Mode == bridge.ToolChoiceNone || tc.Mode == bridge.ToolChoiceRequired:
		w.Str("tool_choice", string(tc.Mode))
	case tc.Mode == bridge.ToolChoiceTool:
		w.Raw("tool_choice", functionChoice(tc.Name))
	default:
		e.drop("tool_choice:" + string(tc.Mode))
	}
	if req.ParallelToolCalls != nil {
		w.Bool("parallel_tool_calls", *req.ParallelToolCalls)
	}
	if !e.opt.WebSocket {
		w.Bool("stream", true)
	}
	w.Bool("store", e.opt.Store)
	if req.MaxTokens != nil {
		n := *req.MaxTokens
		if n < minOutputTokens {
			n = minOutputTokens
			e.drop("max_tokens:raised_to_" + strconv.Itoa(minOutputTokens))
		}
		w.Int("max_output_tokens", n)
	}
	if req.Temperature != nil {
		w.Float("temperature", *req.Temperature)
	}
	if req.TopP != nil {
		w.Float("top_p", *req.TopP)
	}
	if req.TopK != nil {
		e.drop("top_k")
	}
	if len(req.Stop) > 0 {
		e.drop("stop")
	}
	if req.Seed != nil {
		e.drop("seed")
	}
	r := wire.NewObj()
	if req.ReasoningEffort != "" {
		r.Str("effort", req.ReasoningEffort)
	}
	if x, ok := req.Extra["reasoning"]; ok && e.Same {
		r.Merge(x)
	}
	if len(r.B) > 1 {
		w.Raw("reasoning", r.End())
	}
	t := wire.NewObj()
	if len(req.ResponseFormat) > 0 {
		if f := e.format(); f != nil {
			t.Raw("format", f)
		}
	}
	if x, ok := req.Extra["text"]; ok && e.Same {
		t.Merge(x)
	}
	if len(t.B) > 1 {
		w.Raw("text", t.End())
	}
	if len(req.Metadata) > 0 {
		w.StrMap("metadata", req.Metadata)
	}
	if req.User != "" {
		w.Str("user", req.User)
	}
	for _, k := range wire.SortedKeys(req.Extra) {
		v := req.Extra[k]
		switch {
		case !e.Same:
			if !carriedElsewhere(req.ExtraDialect, k, v) {
				e.drop("param:" + k)
			}
		case reserved[k] || w.Has(k):
		case !json.Valid(v):
			e.drop("param:" + k)
		default:
			w.Raw(k, wire.Compact(v))
		}
	}
	return w.End(), nil
}

// carriedElsewhere reports an Extra entry of another dialect that is only
// that dialect's record of something the hub carries: Chat's legacy
// max_tokens (also in MaxTokens) and n: 1.
func carriedElsewhere(dialect, k string, v json.RawMessage) bool {
	if dialect != "openai" {
		return false
	}
	switch k {
	case "max_tokens":
		return true
	case "n":
		return string(wire.Compact(v)) == "1"
	}
	return false
}

func (e *reqEncoder) tools(w *wire.ObjWriter) {
	req := e.Req
	var builtin []json.RawMessage
	if x, ok := req.Extra["tools"]; ok && e.Same {
		builtin, _ = wire.AsArray(x, "")
	}
	if len(req.Tools) == 0 && len(builtin) == 0 {
		return
	}
	w.Key("tools")
	w.B = append(w.B, '[')
	for i := range req.Tools {
		t := &req.Tools[i]
		if i > 0 {
			w.B = append(w.B, ',')
		}
		o := wire.NewObj()
		o.Str("type", "function")
		o.Str("name", t.Name)
		if t.Description != "" {
			o.Str("description", t.Description)
		}
		if len(t.Parameters) > 0 && json.Valid(t.Parameters) {
			o.Raw("parameters", wire.Compact(t.Parameters))
		} else {
			o.Raw("parameters", []byte(`{"type":"object","properties":{}}`))
		}
		switch {
		case t.Strict != nil:
			o.Bool("strict", *t.Strict)
		case req.Inbound != Dialect:
			o.Bool("strict", false)
		}
		w.B = append(w.B, o.End()...)
	}
	for i, b := range builtin {
		if i > 0 || len(req.Tools) > 0 {
			w.B = append(w.B, ',')
		}
		w.B = append(w.B, wire.Compact(b)...)
	}
	w.B = append(w.B, ']')
}

// format renders ResponseFormat as text.format: the flat Responses shape
// passes through; Chat's (a nested json_schema) is flattened.
func (e *reqEncoder) format() []byte {
	f := wire.ResponseFormat(e.Req.ResponseFormat, false)
	if f == nil {
		e.drop("response_format")
	}
	return f
}

// message renders one hub message as input items.
func (e *reqEncoder) message(m *bridge.Message, i int) ([][]byte, error) {
	path := "messages[" + strconv.Itoa(i) + "]"
	switch m.Role {
	case bridge.RoleSystem, bridge.RoleDeveloper, bridge.RoleUser:
		w := wire.NewObj()
		w.Str("type", "message")
		w.Str("role", string(m.Role))
		e.content(w, m.Parts, m.StringContent, path)
		e.mergeOpaque(w, m.Opaque, path)
		return [][]byte{w.End()}, nil
	case bridge.RoleAssistant:
		return e.assistant(m, path), nil
	case bridge.RoleTool:
		w := wire.NewObj()
		w.Str("type", "function_call_output")
		w.Str("call_id", m.ToolCallID)
		if allText(m.Parts) {
			w.Str("output", joinText(m.Parts))
		} else {
			w.Key("output")
			w.B = e.appendParts(w.B, m.Parts, path)
		}
		if m.IsError {
			e.drop(path + ".is_error")
		}
		return [][]byte{w.End()}, nil
	}
	return nil, bridge.Errorf(bridge.CodeInvalid, "%s.role: unknown role %q", path, m.Role)
}

// assistant renders an assistant message: its reasoning items, one message
// item for its text, then its function calls, in that order.
func (e *reqEncoder) assistant(m *bridge.Message, path string) [][]byte {
	var out [][]byte
	var text []bridge.Part
	for _, p := range m.Parts {
		switch p.Type {
		case bridge.PartReasoning:
			if it := e.reasoning(&p); it != nil {
				out = append(out, it)
			}
		case bridge.PartText, bridge.PartRefusal, bridge.PartData:
			text = append(text, p)
		case bridge.PartOpaque:
			if it := opaqueItem(&p); it != nil {
				out = append(out, it) // an item of this dialect the hub does not model (a compaction): back as it came
			} else if p.Opaque != nil && p.Opaque.Dialect == Dialect && json.Valid(p.Opaque.Data) {
				text = append(text, p) // a content part of this dialect the hub does not model: back as it came
			} else {
				e.drop(path + ": " + string(p.Type) + " part")
			}
		default:
			e.drop(path + ": " + string(p.Type) + " part")
		}
	}
	if len(text) > 0 {
		w := wire.NewObj()
		w.Str("type", "message")
		w.Str("role", "assistant")
		if allText(text) {
			w.Str("content", joinText(text))
		} else {
			w.Key("content")
			w.B = append(w.B, '[')
			for j, p := range text {
				if j > 0 {
					w.B = append(w.B, ',')
				}
				if p.Type == bridge.PartOpaque {
					w.B = append(w.B, wire.Compact(p.Opaque.Data)...)
					continue
				}
				o := wire.NewObj()
				if p.Type == bridge.PartRefusal {
					o.Str("type", "refusal")
					o.Str("refusal", p.Text)
				} else {
					o.Str("type", "output_text")
					o.Str("text", wire.PartText(&p))
					o.Raw("annotations", []byte("[]"))
				}
				w.B = append(w.B, o.End()...)
			}
			w.B = append(w.B, ']')
		}
		e.mergeOpaque(w, m.Opaque, path)
		out = append(out, w.End())
	} else if m.Opaque != nil && m.Opaque.Dialect != Dialect {
		e.drop(path + ": opaque " + wire.OpaqueDialect(m.Opaque) + " data")
	}
	for _, tc := range m.ToolCalls {
		w := wire.NewObj()
		w.Str("type", "function_call")
		w.Str("call_id", tc.ID)
		w.Str("name", tc.Name)
		w.Str("arguments", tc.Arguments)
		out = append(out, w.End())
	}
	return out
}

// itemTypes are the input items the decoder keeps whole as opaque parts.
var itemTypes = []string{"compaction"}

// opaqueItem is the item an opaque part of this dialect holds (a
// compaction), or nil for a content part or another dialect's.
func opaqueItem(p *bridge.Part) []byte {
	if p.Opaque == nil || p.Opaque.Dialect != Dialect {
		return nil
	}
	o, err := wire.AsObject(p.Opaque.Data, "")
	if err != nil {
		return nil
	}
	var typ string
	if wire.OptString(o, "", "type", &typ) != nil || !slices.Contains(itemTypes, typ) {
		return nil
	}
	return wire.Compact(p.Opaque.Data)
}

// reasoning renders a reasoning part as the reasoning item a Responses
// upstream made; reasoning from elsewhere has no item to go back as.
func (e *reqEncoder) reasoning(p *bridge.Part) []byte {
	var id string
	if p.Opaque != nil && p.Opaque.Dialect == Dialect {
		if o, err := wire.AsObject(p.Opaque.Data, ""); err == nil {
			_ = wire.OptString(o, "", "id", &id)
		}
	}
	if id == "" {
		if p.Signature != "" {
			e.drop("reasoning.signature")
		}
		if p.Encrypted != "" {
			e.drop("reasoning.encrypted")
		}
		return nil
	}
	w := wire.NewObj()
	w.Str("type", "reasoning")
	w.Str("id", id)
	w.Key("summary")
	if p.Text != "" {
		s := wire.NewObj()
		s.Str("type", "summary_text")
		s.Str("text", p.Text)
		w.B = append(w.B, '[')
		w.B = append(w.B, s.End()...)
		w.B = append(w.B, ']')
	} else {
		w.B = append(w.B, "[]"...)
	}
	if p.Encrypted != "" {
		w.Str("encrypted_content", p.Encrypted)
	}
	return w.End()
}

// content writes a system, developer or user message's content: a string
// when the client sent one (and it is all text), else input parts.
func (e *reqEncoder) content(w *wire.ObjWriter, parts []bridge.Part, str bool, path string) {
	if str && allText(parts) {
		w.Str("content", joinText(parts))
		return
	}
	w.Key("content")
	w.B = e.appendParts(w.B, parts, path)
}

func (e *reqEncoder) appendParts(b []byte, parts []bridge.Part, path string) []byte {
	b = append(b, '[')
	first := true
	for j := range parts {
		p := &parts[j]
		pb := e.part(p, path+".content["+strconv.Itoa(j)+"]")
		if pb == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, pb...)
	}
	return append(b, ']')
}

// part renders one input content part, or returns nil (and records why)
// when it has no Responses form.
func (e *reqEncoder) part(p *bridge.Part, path string) []byte {
	w := wire.NewObj()
	switch p.Type {
	case bridge.PartText, bridge.PartData:
		w.Str("type", "input_text")
		w.Str("text", wire.PartText(p))
	case bridge.PartRefusal:
		w.Str("type", "input_text")
		w.Str("text", p.Text)
	case bridge.PartImage:
		w.Str("type", "input_image")
		switch {
		case p.URL != "":
			w.Str("image_url", p.URL)
		case p.Data != "" && p.MediaType != "":
			w.Str("image_url", wire.DataURL(p.MediaType, p.Data))
		case p.FileID != "":
			w.Str("file_id", p.FileID)
		default:
			e.drop(path + ": image without URL or data")
			return nil
		}
		detail := p.Detail
		if detail == "" {
			detail = "auto" // required by the API
		}
		w.Str("detail", detail)
	case bridge.PartFile:
		w.Str("type", "input_file")
		if p.FileID != "" {
			w.Str("file_id", p.FileID)
		}
		switch {
		case p.Data != "" && p.MediaType != "":
			w.Str("file_data", wire.DataURL(p.MediaType, p.Data))
		case p.Data != "":
			w.Str("file_data", p.Data)
		case p.URL != "":
			w.Str("file_url", p.URL)
		}
		if p.Filename != "" {
			w.Str("filename", p.Filename)
		}
		if len(w.B) == len(`{"type":"input_file"`) {
			e.drop(path + ": file without id, data or URL")
			return nil
		}
	case bridge.PartReasoning:
		return nil // reasoning is the model's, not input
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

func (e *reqEncoder) mergeOpaque(w *wire.ObjWriter, o *bridge.Opaque, path string) {
	if o == nil {
		return
	}
	if o.Dialect != Dialect || !w.Merge(o.Data) {
		e.drop(path + ": opaque " + wire.OpaqueDialect(o) + " data")
	}
}

// allText reports whether parts are text (or data) only, with nothing a
// string content would lose.
func allText(parts []bridge.Part) bool {
	for _, p := range parts {
		if (p.Type != bridge.PartText && p.Type != bridge.PartData) || p.Opaque != nil {
			return false
		}
	}
	return true
}

func joinText(parts []bridge.Part) string {
	var sb strings.Builder
	for i := range parts {
		sb.WriteString(wire.PartText(&parts[i]))
	}
	return sb.String()
}

// functionChoice is the tool_choice that names one function.
func functionChoice(name string) []byte {
	c := wire.NewObj()
	c.Str("type", "function")
	c.Str("name", name)
	return c.End()
}

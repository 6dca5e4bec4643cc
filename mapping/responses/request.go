package responses

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Request is a decoded create-response request: the hub request, and what
// only the Responses API has.
type Request struct {
	// Hub is the request in the hub's terms: Hub.Messages is the input,
	// Hub.Instructions the instructions.
	Hub *bridge.Request `json:"hub"`
	// PreviousResponseID names the stored response this one continues.
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	// Store says whether the response is kept (the API's default: true).
	Store bool `json:"store"`
	// Background asks for a response that runs on when the client leaves.
	Background bool `json:"background,omitempty"`
	// Instructions is the instructions text, nil when none was sent.
	Instructions *string `json:"instructions,omitempty"`
	// Input is the input as normalized items (a JSON object each, without
	// ids), what GET /v1/responses/{id}/input_items lists.
	Input []json.RawMessage `json:"input"`
	// Echo is a JSON object of the request members a Response object
	// repeats (instructions, tools, tool_choice, temperature, ...), with
	// the API's defaults for those not sent.
	Echo json.RawMessage `json:"echo"`
}

// handled are the top-level fields DecodeRequest maps; every other field is
// kept verbatim in Request.Extra (dialect "responses") for a Responses
// upstream, and echoed when the Response object has a member of its name.
var handled = map[string]bool{
	"model": true, "input": true, "instructions": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "max_output_tokens": true,
	"temperature": true, "top_p": true, "reasoning": true, "store": true,
	"metadata": true, "stream": true, "stream_options": true, "background": true,
	"previous_response_id": true, "text": true, "user": true,
	"conversation": true, "prompt": true,
}

// echoed are the request members the Response object repeats as they were
// sent (others it renders from the hub fields), with their defaults.
var echoed = []struct{ key, def string }{
	{"max_tool_calls", "null"},
	{"presence_penalty", "0"},
	{"frequency_penalty", "0"},
	{"prompt_cache_key", "null"},
	{"safety_identifier", "null"},
	{"service_tier", `"default"`},
	{"top_logprobs", "0"},
	{"truncation", `"disabled"`},
}

// DecodeRequest parses a create-response body (wire -> hub). Malformed
// input is a *bridge.Error with CodeInvalid naming the field; features the
// bridge has no way to serve (conversation, stored prompts, item
// references) are CodeUnsupported.
func DecodeRequest(body []byte) (*Request, error) {
	top, err := wire.DecodeBody(body)
	if err != nil {
		return nil, err
	}
	d := reqDecoder{r: &Request{Hub: &bridge.Request{Inbound: Dialect}, Store: true}}
	if err := d.decode(top); err != nil {
		return nil, err
	}
	return d.r, nil
}

type reqDecoder struct {
	r         *Request
	tools     []json.RawMessage // the echo of tools
	toolExtra []json.RawMessage // tools the hub has no type for
}

func (d *reqDecoder) drop(path string) { d.r.Hub.Dropped = append(d.r.Hub.Dropped, path) }

func (d *reqDecoder) extra(k string, v json.RawMessage) { wire.AddExtra(d.r.Hub, Dialect, k, v) }

func (d *reqDecoder) decode(top wire.Object) error {
	r, h := d.r, d.r.Hub
	model, err := wire.ReqString(top, "model", "")
	if err != nil {
		return err
	}
	if model == "" {
		return bridge.Errorf(bridge.CodeInvalid, "model: required")
	}
	h.Model = model
	for _, k := range []string{"conversation", "prompt"} {
		if raw, ok := top[k]; ok && !wire.IsNull(raw) {
			return &bridge.Error{Code: bridge.CodeUnsupported, Param: k,
				Message: k + ": not supported by this bridge; chain turns with previous_response_id"}
		}
	}
	if err := wire.OptString(top, "", "previous_response_id", &r.PreviousResponseID); err != nil {
		return err
	}
	var b *bool
	if err := wire.OptBool(top, "", "store", &b); err != nil {
		return err
	}
	if b != nil {
		r.Store = *b
	}
	b = nil
	if err := wire.OptBool(top, "", "background", &b); err != nil {
		return err
	}
	r.Background = b != nil && *b
	b = nil
	if err := wire.OptBool(top, "", "stream", &b); err != nil {
		return err
	}
	h.Stream = b != nil && *b
	if raw, ok := top["stream_options"]; ok && !wire.IsNull(raw) {
		if _, err := wire.AsObject(raw, "stream_options"); err != nil {
			return err
		}
	}
	if raw, ok := top["instructions"]; ok && !wire.IsNull(raw) {
		s, err := wire.AsString(raw, "instructions")
		if err != nil {
			return err
		}
		r.Instructions = &s
		if s != "" {
			h.Instructions = []bridge.Message{{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart(s)}, StringContent: true}}
		}
	}
	if err := d.input(top); err != nil {
		return err
	}
	if err := d.decodeTools(top); err != nil {
		return err
	}
	if err := d.toolChoice(top); err != nil {
		return err
	}
	if err := wire.OptBool(top, "", "parallel_tool_calls", &h.ParallelToolCalls); err != nil {
		return err
	}
	if err := wire.OptInt(top, "", "max_output_tokens", &h.MaxTokens); err != nil {
		return err
	}
	if h.MaxTokens != nil && *h.MaxTokens < 1 {
		return &bridge.Error{Code: bridge.CodeInvalid, Param: "max_output_tokens", Message: "max_output_tokens: must be at least 1"}
	}
	if err := wire.OptFloat(top, "", "temperature", &h.Temperature); err != nil {
		return err
	}
	if err := wire.OptFloat(top, "", "top_p", &h.TopP); err != nil {
		return err
	}
	if err := wire.OptString(top, "", "user", &h.User); err != nil {
		return err
	}
	if err := d.reasoning(top); err != nil {
		return err
	}
	if err := d.text(top); err != nil {
		return err
	}
	if err := wire.OptStringMap(top, "", "metadata", &h.Metadata); err != nil {
		return err
	}
	for k, v := range top {
		if !handled[k] {
			d.extra(k, wire.Compact(v))
		}
	}
	if len(d.toolExtra) > 0 {
		d.extra("tools", wire.JoinArray(d.toolExtra))
	}
	if len(h.Tools) == 0 {
		h.Tools = nil
	}
	r.Echo = d.echo(top)
	return nil
}

// input decodes input: a string (one user message) or an array of items.
func (d *reqDecoder) input(top wire.Object) error {
	raw, ok := top["input"]
	if !ok || wire.IsNull(raw) {
		return &bridge.Error{Code: bridge.CodeInvalid, Param: "input", Message: "input: required"}
	}
	h := d.r.Hub
	if wire.Kind(raw) == '"' {
		s, err := wire.AsString(raw, "input")
		if err != nil {
			return err
		}
		h.Messages = []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(s)}, StringContent: true}}
		d.r.Input = []json.RawMessage{userTextItem(s)}
		return nil
	}
	items, err := wire.AsArray(raw, "input")
	if err != nil {
		return bridge.Errorf(bridge.CodeInvalid, "input: expected string or array, got %s", wire.KindName(raw))
	}
	if len(items) == 0 {
		return &bridge.Error{Code: bridge.CodeInvalid, Param: "input", Message: "input: must not be empty"}
	}
	in := inputDecoder{d: d}
	for i, it := range items {
		if err := in.item(it, "input["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	in.close()
	// An assistant turn with nothing in it says nothing to send upstream:
	// no parts, or only empty text (content "" and [{"text":""}] alike).
	in.msgs = slices.DeleteFunc(in.msgs, func(m bridge.Message) bool {
		return m.Role == bridge.RoleAssistant && len(m.ToolCalls) == 0 && !slices.ContainsFunc(m.Parts, saysSomething)
	})
	if len(in.msgs) == 0 {
		return &bridge.Error{Code: bridge.CodeInvalid, Param: "input", Message: "input: must not be empty"}
	}
	if onlyReasoning(in.msgs) {
		// Reasoning is context for a turn, not a turn: there is nothing to answer.
		return &bridge.Error{Code: bridge.CodeInvalid, Param: "input",
			Message: "input: holds only reasoning items; add a message or a function_call_output"}
	}
	h.Messages = in.msgs
	d.r.Input = in.items
	return nil
}

// saysSomething reports whether p carries anything but empty text.
func saysSomething(p bridge.Part) bool {
	return p.Type != bridge.PartText || p.Text != "" || p.Opaque != nil
}

// onlyReasoning reports whether msgs carry nothing but reasoning.
func onlyReasoning(msgs []bridge.Message) bool {
	seen := false
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" || len(m.Parts) == 0 {
			return false
		}
		for _, p := range m.Parts {
			if p.Type != bridge.PartReasoning {
				return false
			}
			seen = true
		}
	}
	return seen
}

func userTextItem(s string) json.RawMessage {
	p := wire.NewObj()
	p.Str("type", "input_text")
	p.Str("text", s)
	w := wire.NewObj()
	w.Str("type", "message")
	w.Str("role", "user")
	w.Raw("content", wire.JoinArray([]json.RawMessage{p.End()}))
	w.Str("status", "completed")
	return w.End()
}

// inputDecoder folds input items into hub messages. Reasoning, assistant
// message and function_call items that follow one another make one
// assistant message, as one model step produced them.
type inputDecoder struct {
	d     *reqDecoder
	msgs  []bridge.Message
	items []json.RawMessage
	open  bool // the last message is an assistant message items may join
}

func (in *inputDecoder) close() { in.open = false }

// assistant returns the open assistant message, or starts one.
func (in *inputDecoder) assistant() *bridge.Message {
	if !in.open {
		in.msgs = append(in.msgs, bridge.Message{Role: bridge.RoleAssistant})
		in.open = true
	}
	return &in.msgs[len(in.msgs)-1]
}

func hasContent(m *bridge.Message) bool {
	for _, p := range m.Parts {
		if p.Type != bridge.PartReasoning {
			return true
		}
	}
	return len(m.ToolCalls) > 0
}

func (in *inputDecoder) item(raw json.RawMessage, path string) error {
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return err
	}
	typ := "message" // the "easy" message form has no type
	if err := wire.OptString(o, path, "type", &typ); err != nil {
		return err
	}
	switch typ {
	case "message":
		return in.message(o, path)
	case "function_call":
		return in.functionCall(o, path)
	case "function_call_output":
		return in.functionCallOutput(o, path)
	case "reasoning":
		return in.reasoning(o, raw, path)
	case "compaction":
		return in.compaction(o, raw)
	case "item_reference":
		return &bridge.Error{Code: bridge.CodeUnsupported, Param: path,
			Message: path + ": item_reference is not supported by this bridge; send the item itself or use previous_response_id"}
	}
	// Built-in tool calls and their outputs (web_search_call, mcp_call,
	// computer_call_output, ...): no hub form.
	in.d.drop(path + ":" + typ)
	in.items = append(in.items, withoutID(o))
	return nil
}

var messageRoles = map[string]bridge.Role{
	"user": bridge.RoleUser, "system": bridge.RoleSystem, "developer": bridge.RoleDeveloper, "assistant": bridge.RoleAssistant,
}

func (in *inputDecoder) message(o wire.Object, path string) error {
	rs, err := wire.ReqString(o, "role", path)
	if err != nil {
		return err
	}
	role, ok := messageRoles[rs]
	if !ok {
		return bridge.Errorf(bridge.CodeInvalid, "%s.role: unknown role %q (want user, assistant, system or developer)", path, rs)
	}
	raw, ok := o["content"]
	if !ok || wire.IsNull(raw) {
		return bridge.Errorf(bridge.CodeInvalid, "%s.content: required", path)
	}
	var phase string
	if err := wire.OptString(o, path, "phase", &phase); err != nil {
		return err
	}
	var parts []bridge.Part
	str := false
	norm := wire.NewObj()
	norm.Str("type", "message")
	norm.Str("role", rs)
	switch wire.Kind(raw) {
	case '"':
		s, _ := wire.AsString(raw, path+".content")
		str = true
		if s != "" {
			parts = []bridge.Part{bridge.TextPart(s)}
		}
		p := wire.NewObj()
		if role == bridge.RoleAssistant {
			p.Str("type", "output_text")
			p.Str("text", s)
			p.Raw("annotations", []byte("[]"))
		} else {
			p.Str("type", "input_text")
			p.Str("text", s)
		}
		norm.Raw("content", wire.JoinArray([]json.RawMessage{p.End()}))
	case '[':
		arr, err := wire.AsArray(raw, path+".content")
		if err != nil {
			return err
		}
		parts = make([]bridge.Part, 0, len(arr))
		for j, v := range arr {
			p, err := in.d.part(v, path+".content["+strconv.Itoa(j)+"]")
			if err != nil {
				return err
			}
			parts = append(parts, p)
		}
		norm.Raw("content", wire.Compact(raw))
	default:
		return bridge.Errorf(bridge.CodeInvalid, "%s.content: expected string or array, got %s", path, wire.KindName(raw))
	}
	if phase != "" {
		norm.Str("phase", phase)
	}
	norm.Str("status", "completed")
	in.items = append(in.items, norm.End())

	var op *bridge.Opaque
	if phase != "" {
		p := wire.NewObj()
		p.Str("phase", phase)
		op = &bridge.Opaque{Dialect: Dialect, Data: p.End()}
	}
	if role != bridge.RoleAssistant {
		in.close()
		in.msgs = append(in.msgs, bridge.Message{Role: role, Parts: parts, StringContent: str, Opaque: op})
		return nil
	}
	// An assistant message joins reasoning before it; after text or tool
	// calls it is a message of its own (two phases stay two messages).
	if in.open && hasContent(&in.msgs[len(in.msgs)-1]) {
		in.close()
	}
	m := in.assistant()
	m.Parts = append(m.Parts, parts...)
	m.StringContent = str && len(m.Parts) == len(parts)
	if op != nil {
		m.Opaque = op
	}
	return nil
}

func (in *inputDecoder) functionCall(o wire.Object, path string) error {
	var tc bridge.ToolCall
	var err error
	if tc.ID, err = wire.ReqString(o, "call_id", path); err != nil {
		return err
	}
	if tc.Name, err = wire.ReqString(o, "name", path); err != nil {
		return err
	}
	if a, ok := o["arguments"]; ok && !wire.IsNull(a) {
		switch wire.Kind(a) {
		case '"':
			tc.Arguments, _ = wire.AsString(a, "")
		case '{', '[':
			tc.Arguments = wire.CompactText(a)
		default:
			return wire.TypeErr(path+".arguments", "string", a)
		}
	}
	m := in.assistant()
	tc.Index = len(m.ToolCalls)
	m.ToolCalls = append(m.ToolCalls, tc)
	w := wire.NewObj()
	w.Str("type", "function_call")
	w.Str("call_id", tc.ID)
	w.Str("name", tc.Name)
	w.Str("arguments", tc.Arguments)
	w.Str("status", "completed")
	in.items = append(in.items, w.End())
	return nil
}

func (in *inputDecoder) functionCallOutput(o wire.Object, path string) error {
	id, err := wire.ReqString(o, "call_id", path)
	if err != nil {
		return err
	}
	raw, ok := o["output"]
	if !ok || wire.IsNull(raw) {
		return bridge.Errorf(bridge.CodeInvalid, "%s.output: required", path)
	}
	m := bridge.Message{Role: bridge.RoleTool, ToolCallID: id}
	switch wire.Kind(raw) {
	case '"':
		s, _ := wire.AsString(raw, path+".output")
		m.StringContent = true
		if s != "" {
			m.Parts = []bridge.Part{bridge.TextPart(s)}
		}
	case '[':
		arr, err := wire.AsArray(raw, path+".output")
		if err != nil {
			return err
		}
		for j, v := range arr {
			p, err := in.d.part(v, path+".output["+strconv.Itoa(j)+"]")
			if err != nil {
				return err
			}
			m.Parts = append(m.Parts, p)
		}
	default:
		return bridge.Errorf(bridge.CodeInvalid, "%s.output: expected string or array, got %s", path, wire.KindName(raw))
	}
	in.close()
	in.msgs = append(in.msgs, m)
	w := wire.NewObj()
	w.Str("type", "function_call_output")
	w.Str("call_id", id)
	w.Raw("output", wire.Compact(raw))
	w.Str("status", "completed")
	in.items = append(in.items, w.End())
	return nil
}

// reasoning decodes a reasoning item passed back: its text (reasoning_text
// content when present, else the summary texts) and encrypted_content.
func (in *inputDecoder) reasoning(o wire.Object, raw json.RawMessage, path string) error {
	p := bridge.Part{Type: bridge.PartReasoning}
	var sb strings.Builder
	for _, key := range []string{"content", "summary"} {
		v, ok := o[key]
		if !ok || wire.IsNull(v) || sb.Len() > 0 {
			continue
		}
		arr, err := wire.AsArray(v, path+"."+key)
		if err != nil {
			return err
		}
		for j, e := range arr {
			eo, err := wire.AsObject(e, path+"."+key+"["+strconv.Itoa(j)+"]")
			if err != nil {
				return err
			}
			var t string
			if err := wire.OptString(eo, path+"."+key+"["+strconv.Itoa(j)+"]", "text", &t); err != nil {
				return err
			}
			if sb.Len() > 0 && t != "" {
				sb.WriteString("\n\n")
			}
			sb.WriteString(t)
		}
	}
	p.Text = sb.String()
	if err := wire.OptString(o, path, "encrypted_content", &p.Encrypted); err != nil {
		return err
	}
	if in.open && hasContent(&in.msgs[len(in.msgs)-1]) {
		in.close()
	}
	m := in.assistant()
	m.Parts = append(m.Parts, p)
	in.items = append(in.items, withoutID(o))
	return nil
}

// compaction keeps a compaction item an upstream made (its
// encrypted_content is that upstream's; the bridge's own were expanded
// before decoding) whole, as the opaque part of an assistant message of
// its own: it goes back to a Responses upstream as it came
// (EncodeRequest), and no other dialect can read it.
func (in *inputDecoder) compaction(o wire.Object, raw json.RawMessage) error {
	in.close()
	m := in.assistant()
	m.Parts = append(m.Parts, bridge.Part{Type: bridge.PartOpaque, Opaque: &bridge.Opaque{Dialect: Dialect, Data: wire.Compact(raw)}})
	in.close()
	in.items = append(in.items, withoutID(o))
	return nil
}

// withoutID renders an item without its id (the bridge gives every stored
// item an id of its own).
func withoutID(o wire.Object) json.RawMessage {
	keys := make([]string, 0, len(o))
	for k := range o {
		if k != "id" {
			keys = append(keys, k)
		}
	}
	return wire.RawObject(o, keys)
}

// part decodes one content part. Unknown part types are kept whole as an
// opaque part; unknown fields beside a known type go to Part.Opaque.
func (d *reqDecoder) part(raw json.RawMessage, path string) (bridge.Part, error) {
	var p bridge.Part
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return p, err
	}
	typ, err := wire.ReqString(o, "type", path)
	if err != nil {
		return p, err
	}
	known := []string{"type"}
	switch typ {
	case "input_text", "output_text", "text":
		p.Type = bridge.PartText
		if p.Text, err = wire.ReqString(o, "text", path); err != nil {
			return p, err
		}
		known = append(known, "text")
		for _, k := range []string{"annotations", "logprobs"} {
			if v, ok := o[k]; ok && (wire.IsNull(v) || string(wire.Compact(v)) == "[]") {
				known = append(known, k) // empty: nothing to keep
			}
		}
	case "refusal":
		p.Type = bridge.PartRefusal
		if p.Text, err = wire.ReqString(o, "refusal", path); err != nil {
			return p, err
		}
		known = append(known, "refusal")
	case "input_image":
		p.Type = bridge.PartImage
		if err := wire.OptString(o, path, "image_url", &p.URL); err != nil {
			return p, err
		}
		if err := wire.OptString(o, path, "file_id", &p.FileID); err != nil {
			return p, err
		}
		if p.URL == "" && p.FileID == "" {
			return p, bridge.Errorf(bridge.CodeInvalid, "%s: image_url or file_id required", path)
		}
		if err := wire.OptString(o, path, "detail", &p.Detail); err != nil {
			return p, err
		}
		if mt, _, ok := wire.ParseDataURL(p.URL); ok {
			p.MediaType = mt
		}
		known = append(known, "image_url", "file_id", "detail")
	case "input_file":
		p.Type = bridge.PartFile
		for _, f := range []struct {
			key string
			dst *string
		}{{"file_id", &p.FileID}, {"file_data", &p.Data}, {"file_url", &p.URL}, {"filename", &p.Filename}} {
			if err := wire.OptString(o, path, f.key, f.dst); err != nil {
				return p, err
			}
		}
		if p.FileID == "" && p.Data == "" && p.URL == "" {
			return p, bridge.Errorf(bridge.CodeInvalid, "%s: file_id, file_data or file_url required", path)
		}
		if mt, data, ok := wire.ParseDataURL(p.Data); ok {
			p.MediaType, p.Data = mt, data
		}
		known = append(known, "file_id", "file_data", "file_url", "filename")
	default:
		return bridge.Part{Type: bridge.PartOpaque, Opaque: &bridge.Opaque{Dialect: Dialect, Data: wire.Compact(raw)}}, nil
	}
	if rest := wire.Rest(o, known...); rest != nil {
		p.Opaque = &bridge.Opaque{Dialect: Dialect, Data: rest}
	}
	return p, nil
}

// decodeTools reads the flat function tools into hub tools; other tool
// types are kept raw for a Responses upstream (Extra "tools").
func (d *reqDecoder) decodeTools(top wire.Object) error {
	arr, err := wire.OptArray(top, "", "tools")
	if arr == nil || err != nil {
		return err
	}
	h := d.r.Hub
	for i, v := range arr {
		path := "tools[" + strconv.Itoa(i) + "]"
		o, err := wire.AsObject(v, path)
		if err != nil {
			return err
		}
		typ, err := wire.ReqString(o, "type", path)
		if err != nil {
			return err
		}
		if typ != "function" {
			d.toolExtra = append(d.toolExtra, wire.Compact(v))
			d.tools = append(d.tools, wire.Compact(v))
			d.drop(path + ":" + typ)
			continue
		}
		var t bridge.Tool
		if t.Name, err = wire.ReqString(o, "name", path); err != nil {
			return err
		}
		if t.Name == "" {
			return bridge.Errorf(bridge.CodeInvalid, "%s.name: must not be empty", path)
		}
		if err := wire.OptString(o, path, "description", &t.Description); err != nil {
			return err
		}
		if p, ok := o["parameters"]; ok && !wire.IsNull(p) {
			if wire.Kind(p) != '{' {
				return wire.TypeErr(path+".parameters", "object", p)
			}
			t.Parameters = wire.Compact(p)
		}
		if err := wire.OptBool(o, path, "strict", &t.Strict); err != nil {
			return err
		}
		for _, k := range wire.SortedKeys(o) {
			switch k {
			case "type", "name", "description", "parameters", "strict":
			default:
				d.drop(path + "." + k)
			}
		}
		h.Tools = append(h.Tools, t)
		d.tools = append(d.tools, toolEcho(&t))
	}
	return nil
}

// toolEcho is a function tool as the Response object lists it: every
// member present, null where not set.
func toolEcho(t *bridge.Tool) json.RawMessage {
	w := wire.NewObj()
	w.Str("type", "function")
	w.Str("name", t.Name)
	if t.Description != "" {
		w.Str("description", t.Description)
	} else {
		w.Null("description")
	}
	if len(t.Parameters) > 0 {
		w.Raw("parameters", t.Parameters)
	} else {
		w.Null("parameters")
	}
	if t.Strict != nil {
		w.Bool("strict", *t.Strict)
	} else {
		w.Null("strict")
	}
	return w.End()
}

func (d *reqDecoder) toolChoice(top wire.Object) error {
	raw, ok := top["tool_choice"]
	if !ok || wire.IsNull(raw) {
		return nil
	}
	h := d.r.Hub
	if wire.Kind(raw) == '"' {
		s, _ := wire.AsString(raw, "tool_choice")
		switch s {
		case "none", "auto", "required":
			h.ToolChoice = &bridge.ToolChoice{Mode: bridge.ToolChoiceMode(s)}
			return nil
		}
		return &bridge.Error{Code: bridge.CodeInvalid, Param: "tool_choice", Message: "tool_choice: unknown value " + strconv.Quote(s)}
	}
	o, err := wire.AsObject(raw, "tool_choice")
	if err != nil {
		return bridge.Errorf(bridge.CodeInvalid, "tool_choice: expected string or object, got %s", wire.KindName(raw))
	}
	typ, err := wire.ReqString(o, "type", "tool_choice")
	if err != nil {
		return err
	}
	if typ != "function" {
		// allowed_tools and the built-in tools' forms: only a Responses
		// upstream understands them.
		d.extra("tool_choice", wire.Compact(raw))
		return nil
	}
	name, err := wire.ReqString(o, "name", "tool_choice")
	if err != nil {
		return err
	}
	h.ToolChoice = &bridge.ToolChoice{Mode: bridge.ToolChoiceTool, Name: name}
	return nil
}

// reasoning reads reasoning.effort; the rest of the object (summary, ...)
// is kept for a Responses upstream.
func (d *reqDecoder) reasoning(top wire.Object) error {
	o, err := wire.OptObject(top, "", "reasoning")
	if o == nil || err != nil {
		return err
	}
	if err := wire.OptString(o, "reasoning", "effort", &d.r.Hub.ReasoningEffort); err != nil {
		return err
	}
	var rest []string
	for k, v := range o {
		if k != "effort" && !wire.IsNull(v) {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		d.extra("reasoning", wire.RawObject(o, rest))
	}
	return nil
}

// text reads text.format into ResponseFormat (the flat Responses shape);
// the rest of the object (verbosity) is kept for a Responses upstream.
func (d *reqDecoder) text(top wire.Object) error {
	o, err := wire.OptObject(top, "", "text")
	if o == nil || err != nil {
		return err
	}
	if f, ok := o["format"]; ok && !wire.IsNull(f) {
		fo, err := wire.AsObject(f, "text.format")
		if err != nil {
			return err
		}
		typ, err := wire.ReqString(fo, "type", "text.format")
		if err != nil {
			return err
		}
		switch typ {
		case "text":
		case "json_object", "json_schema":
			if typ == "json_schema" {
				if _, ok := fo["schema"]; !ok {
					return bridge.Errorf(bridge.CodeInvalid, "text.format.schema: required")
				}
			}
			d.r.Hub.ResponseFormat = wire.Compact(f)
		default:
			return bridge.Errorf(bridge.CodeInvalid, "text.format.type: unknown value %q", typ)
		}
	}
	var rest []string
	for k, v := range o {
		if k != "format" && !wire.IsNull(v) {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		d.extra("text", wire.RawObject(o, rest))
	}
	return nil
}

// echo renders the request members the Response object repeats.
func (d *reqDecoder) echo(top wire.Object) json.RawMessage {
	r, h := d.r, d.r.Hub
	w := wire.NewObj()
	if r.Instructions != nil {
		w.Str("instructions", *r.Instructions)
	} else {
		w.Null("instructions")
	}
	if h.MaxTokens != nil {
		w.Int("max_output_tokens", *h.MaxTokens)
	} else {
		w.Null("max_output_tokens")
	}
	w.StrMap("metadata", h.Metadata)
	w.Bool("parallel_tool_calls", h.ParallelToolCalls == nil || *h.ParallelToolCalls)
	if r.PreviousResponseID != "" {
		w.Str("previous_response_id", r.PreviousResponseID)
	} else {
		w.Null("previous_response_id")
	}
	rs := wire.NewObj()
	if h.ReasoningEffort != "" {
		rs.Str("effort", h.ReasoningEffort)
	} else {
		rs.Null("effort")
	}
	if x, ok := h.Extra["reasoning"]; ok {
		rs.Merge(x)
	}
	if !rs.Has("summary") {
		rs.Null("summary")
	}
	w.Raw("reasoning", rs.End())
	w.Bool("store", r.Store)
	w.Bool("background", r.Background)
	if h.Temperature != nil {
		w.Float("temperature", *h.Temperature)
	} else {
		w.Int("temperature", 1)
	}
	tx := wire.NewObj()
	if len(h.ResponseFormat) > 0 {
		tx.Raw("format", h.ResponseFormat)
	} else {
		tx.Raw("format", []byte(`{"type":"text"}`))
	}
	if x, ok := h.Extra["text"]; ok {
		tx.Merge(x)
	}
	w.Raw("text", tx.End())
	switch tc := h.ToolChoice; {
	case tc == nil:
		if x, ok := h.Extra["tool_choice"]; ok {
			w.Raw("tool_choice", x)
		} else {
			w.Str("tool_choice", "auto")
		}
	case tc.Mode == bridge.ToolChoiceTool:
		w.Raw("tool_choice", functionChoice(tc.Name))
	default:
		w.Str("tool_choice", string(tc.Mode))
	}
	w.Raw("tools", wire.JoinArray(d.tools))
	if h.TopP != nil {
		w.Float("top_p", *h.TopP)
	} else {
		w.Int("top_p", 1)
	}
	if h.User != "" {
		w.Str("user", h.User)
	}
	for _, e := range echoed {
		if v, ok := top[e.key]; ok && json.Valid(v) {
			w.Raw(e.key, wire.Compact(v))
		} else {
			w.Raw(e.key, []byte(e.def))
		}
	}
	return w.End()
}

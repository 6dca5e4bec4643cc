package openai

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// The request fields DecodeRequest maps onto hub fields. Every other
// top-level field (including "n", "max_tokens" and the OpenAI-only
// parameters such as logprobs or service_tier) is kept verbatim in
// Request.Extra.
var mappedFields = map[string]bool{
	"model": true, "messages": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "stream": true, "stream_options": true,
	"max_completion_tokens": true, "temperature": true, "top_p": true,
	"stop": true, "seed": true, "reasoning_effort": true, "metadata": true,
	"user": true, "response_format": true,
}

// keyMaxTokens is the legacy token-limit field. When a client sends it,
// DecodeRequest sets Request.MaxTokens from it (so every dialect reads the
// limit there) and also keeps it in Extra: its presence there is the record
// that the client used max_tokens rather than max_completion_tokens, so
// EncodeRequest writes the key the client chose.
const keyMaxTokens = "max_tokens"

// DecodeRequest parses a Chat Completions request body (wire -> hub).
// Malformed input is a *bridge.Error with CodeInvalid naming the field.
// Unknown top-level fields go to Request.Extra (ExtraDialect "openai");
// unknown message fields to Message.Opaque.
func DecodeRequest(body []byte) (*bridge.Request, error) {
	top, err := wire.DecodeBody(body)
	if err != nil {
		return nil, err
	}
	d := reqDecoder{req: &bridge.Request{Inbound: Dialect}}
	if err := d.decode(top); err != nil {
		return nil, err
	}
	return d.req, nil
}

type reqDecoder struct {
	req *bridge.Request
}

// drop records a field the hub cannot carry.
func (d *reqDecoder) drop(path string) { d.req.Dropped = append(d.req.Dropped, path) }

func (d *reqDecoder) extra(k string, v json.RawMessage) { wire.AddExtra(d.req, Dialect, k, v) }

func (d *reqDecoder) decode(top object) error {
	req := d.req
	raw, ok := top["model"]
	if !ok || wire.IsNull(raw) {
		return bridge.Errorf(bridge.CodeInvalid, "model: required")
	}
	model, err := wire.AsString(raw, "model")
	if err != nil {
		return err
	}
	if model == "" {
		return bridge.Errorf(bridge.CodeInvalid, "model: required")
	}
	req.Model = model

	raw, ok = top["messages"]
	if !ok || wire.IsNull(raw) {
		return bridge.Errorf(bridge.CodeInvalid, "messages: required")
	}
	msgs, err := wire.AsArray(raw, "messages")
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return bridge.Errorf(bridge.CodeInvalid, "messages: must not be empty")
	}
	req.Messages = make([]bridge.Message, 0, len(msgs))
	for i, m := range msgs {
		msg, err := d.message(m, i)
		if err != nil {
			return err
		}
		req.Messages = append(req.Messages, msg)
	}

	if raw, ok := top["n"]; ok && !wire.IsNull(raw) {
		n, err := wire.AsInt(raw, "n")
		if err != nil {
			return err
		}
		if n > 1 {
			return bridge.Errorf(bridge.CodeUnsupported, "n: n>1 is not supported")
		}
	}

	if err := d.tools(top); err != nil {
		return err
	}
	if err := d.toolChoice(top); err != nil {
		return err
	}
	if err := wire.OptBool(top, "", "parallel_tool_calls", &req.ParallelToolCalls); err != nil {
		return err
	}
	if raw, ok := top["stream"]; ok && !wire.IsNull(raw) {
		if req.Stream, err = wire.AsBool(raw, "stream"); err != nil {
			return err
		}
	}
	if err := d.streamOptions(top); err != nil {
		return err
	}
	if err := d.maxTokens(top); err != nil {
		return err
	}
	if err := wire.OptFloat(top, "", "temperature", &req.Temperature); err != nil {
		return err
	}
	if err := wire.OptFloat(top, "", "top_p", &req.TopP); err != nil {
		return err
	}
	if err := d.stop(top); err != nil {
		return err
	}
	if raw, ok := top["seed"]; ok && !wire.IsNull(raw) {
		v, err := wire.AsInt(raw, "seed")
		if err != nil {
			return err
		}
		req.Seed = &v
	}
	if err := wire.OptString(top, "", "reasoning_effort", &req.ReasoningEffort); err != nil {
		return err
	}
	if err := wire.OptString(top, "", "user", &req.User); err != nil {
		return err
	}
	if err := wire.OptStringMap(top, "", "metadata", &req.Metadata); err != nil {
		return err
	}
	if raw, ok := top["response_format"]; ok && !wire.IsNull(raw) {
		if wire.Kind(raw) != '{' {
			return wire.TypeErr("response_format", "object", raw)
		}
		req.ResponseFormat = wire.Compact(raw)
	}

	for k, v := range top {
		if !mappedFields[k] {
			d.extra(k, wire.Compact(v))
		}
	}
	// Empty lists carry nothing and are not sent back.
	if len(req.Tools) == 0 {
		req.Tools = nil
	}
	if len(req.Stop) == 0 {
		req.Stop = nil
	}
	return nil
}

func (d *reqDecoder) maxTokens(top object) error {
	req := d.req
	var legacy *int64
	if err := wire.OptInt(top, "", keyMaxTokens, &legacy); err != nil {
		return err
	}
	if err := wire.OptInt(top, "", "max_completion_tokens", &req.MaxTokens); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		v   *int64
	}{{keyMaxTokens, legacy}, {"max_completion_tokens", req.MaxTokens}} {
		if f.v != nil && *f.v < 1 { // as OpenAI answers it; no upstream takes a limit below one token
			e := bridge.Errorf(bridge.CodeInvalid, "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", f.key, *f.v)
			e.Param = f.key
			return e
		}
	}
	if req.MaxTokens == nil {
		req.MaxTokens = legacy
	}
	// A null max_tokens means "not set": leave it out of Extra too.
	if raw, ok := top[keyMaxTokens]; ok && wire.IsNull(raw) {
		delete(top, keyMaxTokens)
	}
	return nil
}

func (d *reqDecoder) streamOptions(top object) error {
	o, err := wire.OptObject(top, "", "stream_options")
	if o == nil || err != nil {
		return err
	}
	if v, ok := o["include_usage"]; ok && !wire.IsNull(v) {
		if d.req.IncludeUsage, err = wire.AsBool(v, "stream_options.include_usage"); err != nil {
			return err
		}
	}
	if rest := wire.Rest(o, "include_usage"); rest != nil {
		// Kept for a same-dialect upstream; EncodeRequest merges them into
		// the stream_options it always sends.
		d.extra("stream_options", rest)
	}
	return nil
}

func (d *reqDecoder) stop(top object) error {
	raw, ok := top["stop"]
	if !ok || wire.IsNull(raw) {
		return nil
	}
	if wire.Kind(raw) == '"' {
		s, err := wire.AsString(raw, "stop")
		if err != nil {
			return err
		}
		d.req.Stop = []string{s}
		return nil
	}
	arr, err := wire.AsArray(raw, "stop")
	if err != nil {
		return bridge.Errorf(bridge.CodeInvalid, "stop: expected string or array, got %s", wire.KindName(raw))
	}
	d.req.Stop = make([]string, 0, len(arr))
	for i, v := range arr {
		s, err := wire.AsString(v, "stop["+strconv.Itoa(i)+"]")
		if err != nil {
			return err
		}
		d.req.Stop = append(d.req.Stop, s)
	}
	return nil
}

func (d *reqDecoder) tools(top object) error {
	arr, err := wire.OptArray(top, "", "tools")
	if arr == nil || err != nil {
		return err
	}
	d.req.Tools = make([]bridge.Tool, 0, len(arr))
	for i, v := range arr {
		path := "tools[" + strconv.Itoa(i) + "]"
		o, err := wire.AsObject(v, path)
		if err != nil {
			return err
		}
		if t, ok := o["type"]; ok {
			typ, err := wire.AsString(t, path+".type")
			if err != nil {
				return err
			}
			if typ != "function" {
				return bridge.Errorf(bridge.CodeUnsupported, "%s.type: tool type %q is not supported (only function)", path, typ)
			}
		}
		fn, ok := o["function"]
		if !ok {
			return bridge.Errorf(bridge.CodeInvalid, "%s.function: required", path)
		}
		f, err := wire.AsObject(fn, path+".function")
		if err != nil {
			return err
		}
		var t bridge.Tool
		if t.Name, err = wire.ReqString(f, "name", path+".function"); err != nil {
			return err
		}
		if t.Name == "" {
			return bridge.Errorf(bridge.CodeInvalid, "%s.function.name: must not be empty", path)
		}
		if err := wire.OptString(f, path+".function", "description", &t.Description); err != nil {
			return err
		}
		if p, ok := f["parameters"]; ok && !wire.IsNull(p) {
			if wire.Kind(p) != '{' {
				return wire.TypeErr(path+".function.parameters", "object", p)
			}
			t.Parameters = wire.Compact(p)
		}
		if err := wire.OptBool(f, path+".function", "strict", &t.Strict); err != nil {
			return err
		}
		for _, k := range wire.SortedKeys(o) {
			if k != "type" && k != "function" {
				d.drop(path + "." + k)
			}
		}
		for _, k := range wire.SortedKeys(f) {
			switch k {
			case "name", "description", "parameters", "strict":
			default:
				d.drop(path + ".function." + k)
			}
		}
		d.req.Tools = append(d.req.Tools, t)
	}
	return nil
}

func (d *reqDecoder) toolChoice(top object) error {
	raw, ok := top["tool_choice"]
	if !ok || wire.IsNull(raw) {
		return nil
	}
	if wire.Kind(raw) == '"' {
		s, _ := wire.AsString(raw, "tool_choice")
		switch s {
		case "none", "auto", "required":
			d.req.ToolChoice = &bridge.ToolChoice{Mode: bridge.ToolChoiceMode(s)}
			return nil
		}
		return bridge.Errorf(bridge.CodeInvalid, "tool_choice: unknown value %q", s)
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
		return bridge.Errorf(bridge.CodeUnsupported, "tool_choice.type: %q is not supported (only function)", typ)
	}
	fn, ok := o["function"]
	if !ok {
		return bridge.Errorf(bridge.CodeInvalid, "tool_choice.function: required")
	}
	f, err := wire.AsObject(fn, "tool_choice.function")
	if err != nil {
		return err
	}
	name, err := wire.ReqString(f, "name", "tool_choice.function")
	if err != nil {
		return err
	}
	d.req.ToolChoice = &bridge.ToolChoice{Mode: bridge.ToolChoiceTool, Name: name}
	return nil
}

// The message fields DecodeRequest maps, by role; any other field of a
// message goes to Message.Opaque.
var messageFields = map[bridge.Role][]string{
	bridge.RoleSystem:    {"role", "content", "name"},
	bridge.RoleDeveloper: {"role", "content", "name"},
	bridge.RoleUser:      {"role", "content", "name"},
	bridge.RoleAssistant: {"role", "content", "name", "tool_calls", "reasoning_content"},
	bridge.RoleTool:      {"role", "content", "name", "tool_call_id"},
}

func (d *reqDecoder) message(raw json.RawMessage, i int) (bridge.Message, error) {
	path := "messages[" + strconv.Itoa(i) + "]"
	var msg bridge.Message
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return msg, err
	}
	role, err := wire.ReqString(o, "role", path)
	if err != nil {
		return msg, err
	}
	msg.Role = bridge.Role(role)
	fields, ok := messageFields[msg.Role]
	if !ok {
		if role == "function" {
			return msg, bridge.Errorf(bridge.CodeUnsupported, "%s.role: the legacy role \"function\" is not supported; use tool messages", path)
		}
		return msg, bridge.Errorf(bridge.CodeInvalid, "%s.role: unknown role %q", path, role)
	}
	if err := wire.OptString(o, path, "name", &msg.Name); err != nil {
		return msg, err
	}
	if raw, ok := o["content"]; ok {
		if err := d.content(&msg, raw, path+".content"); err != nil {
			return msg, err
		}
	}
	switch msg.Role {
	case bridge.RoleAssistant:
		var reasoning string
		if err := wire.OptString(o, path, "reasoning_content", &reasoning); err != nil {
			return msg, err
		}
		if reasoning != "" {
			msg.Parts = append([]bridge.Part{{Type: bridge.PartReasoning, Text: reasoning}}, msg.Parts...)
		}
		if raw, ok := o["tool_calls"]; ok && !wire.IsNull(raw) {
			if msg.ToolCalls, err = d.toolCalls(raw, path+".tool_calls"); err != nil {
				return msg, err
			}
			if len(msg.ToolCalls) == 0 {
				msg.ToolCalls = nil
			}
		}
	case bridge.RoleTool:
		if msg.ToolCallID, err = wire.ReqString(o, "tool_call_id", path); err != nil {
			return msg, err
		}
	}
	if rest := wire.Rest(o, fields...); rest != nil {
		msg.Opaque = &bridge.Opaque{Dialect: Dialect, Data: rest}
	}
	return msg, nil
}

func (d *reqDecoder) content(msg *bridge.Message, raw json.RawMessage, path string) error {
	switch wire.Kind(raw) {
	case 'n':
		msg.NullContent = true
		return nil
	case '"':
		s, err := wire.AsString(raw, path)
		if err != nil {
			return err
		}
		msg.StringContent = true
		if s != "" {
			msg.Parts = append(msg.Parts, bridge.TextPart(s))
		}
		return nil
	case '[':
	default:
		return bridge.Errorf(bridge.CodeInvalid, "%s: expected string, array or null, got %s", path, wire.KindName(raw))
	}
	arr, err := wire.AsArray(raw, path)
	if err != nil {
		return err
	}
	msg.Parts = make([]bridge.Part, 0, len(arr))
	for j, v := range arr {
		p, err := d.part(v, path+"["+strconv.Itoa(j)+"]")
		if err != nil {
			return err
		}
		msg.Parts = append(msg.Parts, p)
	}
	return nil
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
	known := []string{"type", typ}
	switch typ {
	case "text":
		p.Type = bridge.PartText
		if p.Text, err = wire.ReqString(o, "text", path); err != nil {
			return p, err
		}
	case "refusal":
		p.Type = bridge.PartRefusal
		if p.Text, err = wire.ReqString(o, "refusal", path); err != nil {
			return p, err
		}
	case "image_url":
		p.Type = bridge.PartImage
		v, ok := o["image_url"]
		if !ok {
			return p, bridge.Errorf(bridge.CodeInvalid, "%s.image_url: required", path)
		}
		if wire.Kind(v) == '"' { // a bare URL string, as some clients send
			p.URL, _ = wire.AsString(v, path+".image_url")
		} else {
			iu, err := wire.AsObject(v, path+".image_url")
			if err != nil {
				return p, err
			}
			if p.URL, err = wire.ReqString(iu, "url", path+".image_url"); err != nil {
				return p, err
			}
			if err := wire.OptString(iu, path+".image_url", "detail", &p.Detail); err != nil {
				return p, err
			}
			d.dropRest(iu, path+".image_url", "url", "detail")
		}
		if p.URL == "" { // as OpenAI answers it: no image to send on
			return p, bridge.Errorf(bridge.CodeInvalid, "%s.image_url: empty URL", path)
		}
		if mt, _, ok := wire.ParseDataURL(p.URL); ok {
			p.MediaType = mt
		}
	case "input_audio":
		p.Type = bridge.PartAudio
		v, ok := o["input_audio"]
		if !ok {
			return p, bridge.Errorf(bridge.CodeInvalid, "%s.input_audio: required", path)
		}
		ao, err := wire.AsObject(v, path+".input_audio")
		if err != nil {
			return p, err
		}
		if p.Data, err = wire.ReqString(ao, "data", path+".input_audio"); err != nil {
			return p, err
		}
		if err := wire.OptString(ao, path+".input_audio", "format", &p.Format); err != nil {
			return p, err
		}
		d.dropRest(ao, path+".input_audio", "data", "format")
	case "file":
		p.Type = bridge.PartFile
		v, ok := o["file"]
		if !ok {
			return p, bridge.Errorf(bridge.CodeInvalid, "%s.file: required", path)
		}
		fo, err := wire.AsObject(v, path+".file")
		if err != nil {
			return p, err
		}
		for _, f := range []struct {
			key string
			dst *string
		}{{"file_id", &p.FileID}, {"file_data", &p.Data}, {"filename", &p.Filename}} {
			if err := wire.OptString(fo, path+".file", f.key, f.dst); err != nil {
				return p, err
			}
		}
		if mt, data, ok := wire.ParseDataURL(p.Data); ok {
			p.MediaType, p.Data = mt, data
		}
		d.dropRest(fo, path+".file", "file_id", "file_data", "filename")
	default:
		return bridge.Part{Type: bridge.PartOpaque, Opaque: &bridge.Opaque{Dialect: Dialect, Data: wire.Compact(raw)}}, nil
	}
	if rest := wire.Rest(o, known...); rest != nil {
		p.Opaque = &bridge.Opaque{Dialect: Dialect, Data: rest}
	}
	return p, nil
}

// dropRest records the fields of a nested object the hub has no place for.
func (d *reqDecoder) dropRest(o object, path string, known ...string) {
	for _, k := range wire.SortedKeys(o) {
		if !slices.Contains(known, k) {
			d.drop(path + "." + k)
		}
	}
}

// toolCalls decodes an assistant's tool_calls. Index is the position;
// arguments are kept byte for byte. Unknown fields go to ToolCall.Opaque.
func (d *reqDecoder) toolCalls(raw json.RawMessage, path string) ([]bridge.ToolCall, error) {
	arr, err := wire.AsArray(raw, path)
	if err != nil {
		return nil, err
	}
	calls := make([]bridge.ToolCall, 0, len(arr))
	for j, v := range arr {
		p := path + "[" + strconv.Itoa(j) + "]"
		o, err := wire.AsObject(v, p)
		if err != nil {
			return nil, err
		}
		tc := bridge.ToolCall{Index: j}
		if err := wire.OptString(o, p, "id", &tc.ID); err != nil {
			return nil, err
		}
		if t, ok := o["type"]; ok && !wire.IsNull(t) {
			typ, err := wire.AsString(t, p+".type")
			if err != nil {
				return nil, err
			}
			if typ != "function" {
				return nil, bridge.Errorf(bridge.CodeUnsupported, "%s.type: tool call type %q is not supported (only function)", p, typ)
			}
		}
		fn, ok := o["function"]
		if !ok {
			return nil, bridge.Errorf(bridge.CodeInvalid, "%s.function: required", p)
		}
		f, err := wire.AsObject(fn, p+".function")
		if err != nil {
			return nil, err
		}
		if tc.Name, err = wire.ReqString(f, "name", p+".function"); err != nil {
			return nil, err
		}
		if a, ok := f["arguments"]; ok && !wire.IsNull(a) {
			switch wire.Kind(a) {
			case '"':
				tc.Arguments, _ = wire.AsString(a, "")
			case '{', '[': // some clients send the arguments as an object
				tc.Arguments = wire.CompactText(a)
			default:
				return nil, wire.TypeErr(p+".function.arguments", "string", a)
			}
		}
		d.dropRest(f, p+".function", "name", "arguments")
		if rest := wire.Rest(o, "id", "type", "function"); rest != nil {
			tc.Opaque = &bridge.Opaque{Dialect: Dialect, Data: rest}
		}
		calls = append(calls, tc)
	}
	return calls, nil
}

package anthropic

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// mappedFields are the top-level request fields DecodeRequest maps onto hub
// fields. Every other field (thinking, service_tier, container, ...) is
// kept verbatim in Request.Extra.
var mappedFields = map[string]bool{
	"model": true, "messages": true, "system": true, "max_tokens": true,
	"tools": true, "tool_choice": true, "stop_sequences": true,
	"temperature": true, "top_p": true, "top_k": true, "metadata": true,
	"stream": true,
}

// keyServerTools is the Extra key holding the request's server tools (tools
// with a dated type such as web_search_20250305): the hub has no tool kind
// for them, so only an Anthropic upstream gets them back.
const keyServerTools = "tools"

// DecodeRequest parses a Messages request body (wire -> hub). max_tokens is
// required, as the real API requires it. Malformed input is a
// *bridge.Error with CodeInvalid naming the field. Fields the hub cannot
// hold are listed in Request.Dropped. See the package comment for how the
// hub holds a Messages request.
func DecodeRequest(body []byte) (*bridge.Request, error) { return decodeRequest(body, true) }

// DecodeCountTokens parses a count_tokens request body: a Messages request
// without max_tokens, stream, metadata or sampling fields.
func DecodeCountTokens(body []byte) (*bridge.Request, error) { return decodeRequest(body, false) }

func decodeRequest(body []byte, messages bool) (*bridge.Request, error) {
	top, err := wire.DecodeBody(body)
	if err != nil {
		return nil, err
	}
	d := reqDecoder{req: &bridge.Request{Inbound: Dialect}, messages: messages}
	if err := d.decode(top); err != nil {
		return nil, err
	}
	return d.req, nil
}

type reqDecoder struct {
	nmsgs    int // how many messages the request has
	req      *bridge.Request
	messages bool // a Messages request, not count_tokens
}

// drop records a field the hub cannot carry.
func (d *reqDecoder) drop(path string) { d.req.Dropped = append(d.req.Dropped, path) }

func (d *reqDecoder) extra(k string, v json.RawMessage) { wire.AddExtra(d.req, Dialect, k, v) }

func (d *reqDecoder) decode(top object) error {
	req := d.req
	raw, ok := top["model"]
	if !ok || wire.IsNull(raw) {
		return bridge.Errorf(bridge.CodeInvalid, "model: Field required")
	}
	model, err := wire.AsString(raw, "model")
	if err != nil {
		return err
	}
	if model == "" {
		return bridge.Errorf(bridge.CodeInvalid, "model: must not be empty")
	}
	req.Model = model

	if d.messages {
		raw, ok = top["max_tokens"]
		if !ok || wire.IsNull(raw) {
			return bridge.Errorf(bridge.CodeInvalid, "max_tokens: Field required")
		}
		n, err := wire.AsInt(raw, "max_tokens")
		if err != nil {
			return err
		}
		if n < 1 {
			return bridge.Errorf(bridge.CodeInvalid, "max_tokens: must be at least 1")
		}
		req.MaxTokens = &n
	}

	if err := d.system(top); err != nil {
		return err
	}
	raw, ok = top["messages"]
	if !ok || wire.IsNull(raw) {
		return bridge.Errorf(bridge.CodeInvalid, "messages: Field required")
	}
	msgs, err := wire.AsArray(raw, "messages")
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return bridge.Errorf(bridge.CodeInvalid, "messages: at least one message is required")
	}
	d.nmsgs = len(msgs)
	for i, m := range msgs {
		if err := d.message(m, i); err != nil {
			return err
		}
	}
	if !slices.ContainsFunc(d.req.Messages, func(m bridge.Message) bool { return m.Role != bridge.RoleSystem }) {
		return bridge.Errorf(bridge.CodeInvalid, "messages: at least one user or assistant message with content is required")
	}

	if err := d.tools(top); err != nil {
		return err
	}
	if err := d.toolChoice(top); err != nil {
		return err
	}
	if raw, ok := top["tool_choice"]; ok && !wire.IsNull(raw) {
		if t, ok := top["tools"]; !ok || wire.IsNull(t) || string(wire.Compact(t)) == "[]" {
			return bridge.Errorf(bridge.CodeInvalid, "tool_choice: may only be specified while providing tools")
		}
	}
	if d.messages {
		if err := d.sampling(top); err != nil {
			return err
		}
	}
	for k, v := range top {
		if mappedFields[k] {
			if !d.messages && k != "model" && k != "messages" && k != "system" && k != "tools" && k != "tool_choice" {
				d.drop(k) // not a count_tokens field
			}
			continue
		}
		d.extra(k, wire.Compact(v))
	}
	if len(req.Tools) == 0 {
		req.Tools = nil
	}
	return nil
}

// sampling decodes the fields only a Messages request has.
func (d *reqDecoder) sampling(top object) error {
	req := d.req
	if raw, ok := top["stream"]; ok && !wire.IsNull(raw) {
		v, err := wire.AsBool(raw, "stream")
		if err != nil {
			return err
		}
		req.Stream = v
	}
	if err := optFloat(top, "temperature", &req.Temperature); err != nil {
		return err
	}
	if err := optFloat(top, "top_p", &req.TopP); err != nil {
		return err
	}
	if raw, ok := top["top_k"]; ok && !wire.IsNull(raw) {
		v, err := wire.AsInt(raw, "top_k")
		if err != nil {
			return err
		}
		req.TopK = &v
	}
	if raw, ok := top["stop_sequences"]; ok && !wire.IsNull(raw) {
		arr, err := wire.AsArray(raw, "stop_sequences")
		if err != nil {
			return err
		}
		for i, v := range arr {
			s, err := wire.AsString(v, "stop_sequences["+strconv.Itoa(i)+"]")
			if err != nil {
				return err
			}
			req.Stop = append(req.Stop, s)
		}
	}
	if raw, ok := top["metadata"]; ok && !wire.IsNull(raw) {
		o, err := wire.AsObject(raw, "metadata")
		if err != nil {
			return err
		}
		for _, k := range wire.SortedKeys(o) {
			if k != "user_id" {
				d.drop("metadata." + k)
				continue
			}
			if wire.IsNull(o[k]) {
				continue
			}
			if req.User, err = wire.AsString(o[k], "metadata.user_id"); err != nil {
				return err
			}
		}
	}
	return nil
}

// system decodes the top-level system prompt into a leading system message.
func (d *reqDecoder) system(top object) error {
	raw, ok := top["system"]
	if !ok || wire.IsNull(raw) {
		return nil
	}
	msg := bridge.Message{Role: bridge.RoleSystem}
	if err := d.textContent(&msg, raw, "system"); err != nil {
		return err
	}
	if len(msg.Parts) > 0 {
		d.req.Messages = append(d.req.Messages, msg)
	}
	return nil
}

// textContent decodes a string or an array of text blocks (system prompts).
func (d *reqDecoder) textContent(msg *bridge.Message, raw json.RawMessage, path string) error {
	if wire.Kind(raw) == '"' {
		s, err := wire.AsString(raw, path)
		if err != nil {
			return err
		}
		msg.StringContent = true
		if s != "" {
			msg.Parts = append(msg.Parts, bridge.TextPart(s))
		}
		return nil
	}
	arr, err := wire.AsArray(raw, path)
	if err != nil {
		return bridge.Errorf(bridge.CodeInvalid, "%s: expected string or array, got %s", path, wire.KindName(raw))
	}
	for j, v := range arr {
		p := path + "[" + strconv.Itoa(j) + "]"
		o, err := wire.AsObject(v, p)
		if err != nil {
			return err
		}
		typ, err := reqString(o, "type", p)
		if err != nil {
			return err
		}
		if typ != "text" {
			return bridge.Errorf(bridge.CodeInvalid, "%s.type: expected \"text\", got %q", p, typ)
		}
		part, err := d.textPart(o, p)
		if err != nil {
			return err
		}
		msg.Parts = append(msg.Parts, part)
	}
	return nil
}

func (d *reqDecoder) textPart(o object, path string) (bridge.Part, error) {
	text, err := reqString(o, "text", path)
	if err != nil {
		return bridge.Part{}, err
	}
	if text == "" {
		// As the API: an empty text block would be dropped on the way up.
		return bridge.Part{}, bridge.Errorf(bridge.CodeInvalid, "%s.text: text content blocks must be non-empty", path)
	}
	p := bridge.TextPart(text)
	p.Opaque = rest(o, "type", "text")
	return p, nil
}

// rest returns o's fields other than known as anthropic opaque data, nil
// when there are none. A citations field that is null or empty says
// nothing and is not kept.
func rest(o object, known ...string) *bridge.Opaque {
	var keys []string
	for k, v := range o {
		if slices.Contains(known, k) {
			continue
		}
		if k == "citations" && (wire.IsNull(v) || string(wire.Compact(v)) == "[]") {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil
	}
	return &bridge.Opaque{Dialect: Dialect, Data: wire.RawObject(o, keys)}
}

func (d *reqDecoder) message(raw json.RawMessage, i int) error {
	path := "messages[" + strconv.Itoa(i) + "]"
	o, err := wire.AsObject(raw, path)
	if err != nil {
		return err
	}
	role, err := reqString(o, "role", path)
	if err != nil {
		return err
	}
	content, ok := o["content"]
	if !ok || wire.IsNull(content) {
		return bridge.Errorf(bridge.CodeInvalid, "%s.content: Field required", path)
	}
	if wire.Kind(content) == '[' && string(wire.Compact(content)) == "[]" {
		// The API's own rule: an empty turn says nothing to send upstream.
		if role == "assistant" && i == d.nmsgs-1 {
			return nil // an empty prefill: nothing to continue from
		}
		return bridge.Errorf(bridge.CodeInvalid,
			"%s.content: all messages must have non-empty content except for the optional final assistant message", path)
	}
	opaque := rest(o, "role", "content")
	switch role {
	case "system":
		// SDK 1.15's SystemMessageParam: a system prompt among the messages.
		msg := bridge.Message{Role: bridge.RoleSystem, Opaque: opaque}
		if err := d.textContent(&msg, content, path+".content"); err != nil {
			return err
		}
		d.req.Messages = append(d.req.Messages, msg)
		return nil
	case "user":
		return d.userMessage(content, path, opaque)
	case "assistant":
		msg, err := d.assistantMessage(content, path)
		if err != nil {
			return err
		}
		msg.Opaque = opaque
		d.req.Messages = append(d.req.Messages, msg)
		return nil
	}
	return bridge.Errorf(bridge.CodeInvalid, "%s.role: unexpected role %q (want user or assistant)", path, role)
}

// userMessage appends a user message, split into tool messages (its
// tool_result blocks) and user messages (its other blocks) in order.
func (d *reqDecoder) userMessage(content json.RawMessage, path string, opaque *bridge.Opaque) error {
	if wire.Kind(content) == '"' {
		s, err := wire.AsString(content, path+".content")
		if err != nil {
			return err
		}
		msg := bridge.Message{Role: bridge.RoleUser, StringContent: true, Opaque: opaque}
		if s != "" {
			msg.Parts = []bridge.Part{bridge.TextPart(s)}
		}
		d.req.Messages = append(d.req.Messages, msg)
		return nil
	}
	arr, err := wire.AsArray(content, path+".content")
	if err != nil {
		return bridge.Errorf(bridge.CodeInvalid, "%s.content: expected string or array, got %s", path, wire.KindName(content))
	}
	var cur *bridge.Message // the user message being filled
	flush := func() {
		if cur != nil {
			d.req.Messages = append(d.req.Messages, *cur)
			cur = nil
		}
	}
	for j, v := range arr {
		p := path + ".content[" + strconv.Itoa(j) + "]"
		o, err := wire.AsObject(v, p)
		if err != nil {
			return err
		}
		typ, err := reqString(o, "type", p)
		if err != nil {
			return err
		}
		if typ == "tool_result" {
			flush()
			msg, err := d.toolResult(o, p)
			if err != nil {
				return err
			}
			d.req.Messages = append(d.req.Messages, msg)
			continue
		}
		part, err := d.part(o, typ, v, p)
		if err != nil {
			return err
		}
		if cur == nil {
			cur = &bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{}, Opaque: opaque}
			opaque = nil // once per wire message
		}
		cur.Parts = append(cur.Parts, part)
	}
	if len(arr) == 0 {
		cur = &bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{}, Opaque: opaque}
		opaque = nil
	}
	flush()
	if opaque != nil {
		// Only tool results: the hub's tool messages have no place for the
		// wire message's own fields.
		d.drop(path + ": message fields beside tool results")
	}
	return nil
}

// toolResult decodes a tool_result block into a tool message.
func (d *reqDecoder) toolResult(o object, path string) (bridge.Message, error) {
	msg := bridge.Message{Role: bridge.RoleTool}
	id, err := reqString(o, "tool_use_id", path)
	if err != nil {
		return msg, err
	}
	msg.ToolCallID = LocalToolID(id)
	if raw, ok := o["is_error"]; ok && !wire.IsNull(raw) {
		if msg.IsError, err = wire.AsBool(raw, path+".is_error"); err != nil {
			return msg, err
		}
	}
	if raw, ok := o["content"]; ok && !wire.IsNull(raw) {
		switch wire.Kind(raw) {
		case '"':
			s, _ := wire.AsString(raw, path+".content")
			msg.StringContent = true
			if s != "" {
				msg.Parts = []bridge.Part{bridge.TextPart(s)}
			}
		case '[':
			arr, err := wire.AsArray(raw, path+".content")
			if err != nil {
				return msg, err
			}
			msg.Parts = make([]bridge.Part, 0, len(arr))
			for k, v := range arr {
				p := path + ".content[" + strconv.Itoa(k) + "]"
				bo, err := wire.AsObject(v, p)
				if err != nil {
					return msg, err
				}
				typ, err := reqString(bo, "type", p)
				if err != nil {
					return msg, err
				}
				part, err := d.part(bo, typ, v, p)
				if err != nil {
					return msg, err
				}
				msg.Parts = append(msg.Parts, part)
			}
		default:
			return msg, bridge.Errorf(bridge.CodeInvalid, "%s.content: expected string or array, got %s", path, wire.KindName(raw))
		}
	}
	msg.Opaque = rest(o, "type", "tool_use_id", "is_error", "content")
	return msg, nil
}

// part decodes one user or tool_result content block. Block types the hub
// has no part for are kept whole as opaque parts.
func (d *reqDecoder) part(o object, typ string, raw json.RawMessage, path string) (bridge.Part, error) {
	switch typ {
	case "text":
		return d.textPart(o, path)
	case "image":
		p := bridge.Part{Type: bridge.PartImage}
		ok, err := source(o, path, &p, "base64", "url", "file")
		if err != nil {
			return p, err
		}
		if !ok {
			break
		}
		p.Opaque = rest(o, "type", "source")
		return p, nil
	case "document":
		p := bridge.Part{Type: bridge.PartFile}
		ok, err := source(o, path, &p, "base64", "url", "file")
		if err != nil {
			return p, err
		}
		if !ok {
			break // a text or content source: kept whole
		}
		p.Opaque = rest(o, "type", "source")
		return p, nil
	case "tool_use", "thinking", "redacted_thinking":
		return bridge.Part{}, bridge.Errorf(bridge.CodeInvalid, "%s.type: a %s block belongs in an assistant message", path, typ)
	}
	return bridge.Part{Type: bridge.PartOpaque, Opaque: &bridge.Opaque{Dialect: Dialect, Data: wire.Compact(raw)}}, nil
}

// source reads an image or document source of one of the given types into
// p. It reports false for a source type the hub has no fields for.
func source(o object, path string, p *bridge.Part, types ...string) (bool, error) {
	raw, ok := o["source"]
	if !ok || wire.IsNull(raw) {
		return false, bridge.Errorf(bridge.CodeInvalid, "%s.source: Field required", path)
	}
	path += ".source"
	s, err := wire.AsObject(raw, path)
	if err != nil {
		return false, err
	}
	typ, err := reqString(s, "type", path)
	if err != nil {
		return false, err
	}
	if !slices.Contains(types, typ) || rest(s, "type", "media_type", "data", "url", "file_id") != nil {
		return false, nil
	}
	switch typ {
	case "base64":
		if p.MediaType, err = reqString(s, "media_type", path); err != nil {
			return false, err
		}
		if p.Data, err = reqString(s, "data", path); err != nil {
			return false, err
		}
	case "url":
		if p.URL, err = reqString(s, "url", path); err != nil {
			return false, err
		}
	case "file":
		if p.FileID, err = reqString(s, "file_id", path); err != nil {
			return false, err
		}
	}
	// A field of another source type beside these: keep the block whole.
	for _, k := range []string{"media_type", "data", "url", "file_id"} {
		if _, ok := s[k]; ok && !sourceField(typ, k) {
			*p = bridge.Part{Type: p.Type}
			return false, nil
		}
	}
	return true, nil
}

func sourceField(typ, key string) bool {
	switch typ {
	case "base64":
		return key == "media_type" || key == "data"
	case "url":
		return key == "url"
	case "file":
		return key == "file_id"
	}
	return false
}

// assistantMessage decodes an assistant turn: text, thinking and
// redacted_thinking become parts, tool_use blocks tool calls.
func (d *reqDecoder) assistantMessage(content json.RawMessage, path string) (bridge.Message, error) {
	msg := bridge.Message{Role: bridge.RoleAssistant}
	if wire.Kind(content) == '"' {
		s, err := wire.AsString(content, path+".content")
		if err != nil {
			return msg, err
		}
		msg.StringContent = true
		if s != "" {
			msg.Parts = []bridge.Part{bridge.TextPart(s)}
		}
		return msg, nil
	}
	arr, err := wire.AsArray(content, path+".content")
	if err != nil {
		return msg, bridge.Errorf(bridge.CodeInvalid, "%s.content: expected string or array, got %s", path, wire.KindName(content))
	}
	for j, v := range arr {
		p := path + ".content[" + strconv.Itoa(j) + "]"
		o, err := wire.AsObject(v, p)
		if err != nil {
			return msg, err
		}
		typ, err := reqString(o, "type", p)
		if err != nil {
			return msg, err
		}
		switch typ {
		case "text":
			part, err := d.textPart(o, p)
			if err != nil {
				return msg, err
			}
			msg.Parts = append(msg.Parts, part)
		case "thinking":
			part := bridge.Part{Type: bridge.PartReasoning}
			if part.Text, err = reqString(o, "thinking", p); err != nil {
				return msg, err
			}
			if raw, ok := o["signature"]; ok && !wire.IsNull(raw) {
				if part.Signature, err = wire.AsString(raw, p+".signature"); err != nil {
					return msg, err
				}
			}
			part.Opaque = rest(o, "type", "thinking", "signature")
			msg.Parts = append(msg.Parts, part)
		case "redacted_thinking":
			part := bridge.Part{Type: bridge.PartReasoning}
			if part.Encrypted, err = reqString(o, "data", p); err != nil {
				return msg, err
			}
			part.Opaque = rest(o, "type", "data")
			msg.Parts = append(msg.Parts, part)
		case "tool_use":
			tc := bridge.ToolCall{Index: len(msg.ToolCalls)}
			if tc.ID, err = reqString(o, "id", p); err != nil {
				return msg, err
			}
			tc.ID = LocalToolID(tc.ID)
			if tc.Name, err = reqString(o, "name", p); err != nil {
				return msg, err
			}
			if in, ok := o["input"]; ok && !wire.IsNull(in) {
				if wire.Kind(in) != '{' {
					return msg, wire.TypeErr(p+".input", "object", in)
				}
				tc.Arguments = wire.CompactText(in)
			} else {
				tc.Arguments = "{}"
			}
			tc.Opaque = rest(o, "type", "id", "name", "input")
			msg.ToolCalls = append(msg.ToolCalls, tc)
		case "tool_result":
			return msg, bridge.Errorf(bridge.CodeInvalid, "%s.type: a tool_result block belongs in a user message", p)
		default:
			msg.Parts = append(msg.Parts, bridge.Part{Type: bridge.PartOpaque, Opaque: &bridge.Opaque{Dialect: Dialect, Data: wire.Compact(v)}})
		}
	}
	return msg, nil
}

func (d *reqDecoder) tools(top object) error {
	arr, err := wire.OptArray(top, "", "tools")
	if arr == nil || err != nil {
		return err
	}
	var server []json.RawMessage
	for i, v := range arr {
		path := "tools[" + strconv.Itoa(i) + "]"
		o, err := wire.AsObject(v, path)
		if err != nil {
			return err
		}
		if t, ok := o["type"]; ok && !wire.IsNull(t) {
			typ, err := wire.AsString(t, path+".type")
			if err != nil {
				return err
			}
			if typ != "custom" {
				server = append(server, wire.Compact(v))
				continue
			}
		}
		var t bridge.Tool
		if t.Name, err = reqString(o, "name", path); err != nil {
			return err
		}
		if t.Name == "" {
			return bridge.Errorf(bridge.CodeInvalid, "%s.name: must not be empty", path)
		}
		if err := wire.OptString(o, path, "description", &t.Description); err != nil {
			return err
		}
		if s, ok := o["input_schema"]; ok && !wire.IsNull(s) {
			if wire.Kind(s) != '{' {
				return wire.TypeErr(path+".input_schema", "object", s)
			}
			t.Parameters = wire.Compact(s)
		} else {
			return bridge.Errorf(bridge.CodeInvalid, "%s.input_schema: Field required", path)
		}
		if s, ok := o["strict"]; ok && !wire.IsNull(s) {
			v, err := wire.AsBool(s, path+".strict")
			if err != nil {
				return err
			}
			t.Strict = &v
		}
		for _, k := range wire.SortedKeys(o) {
			switch k {
			case "type", "name", "description", "input_schema", "strict":
			default:
				d.drop(path + "." + k)
			}
		}
		d.req.Tools = append(d.req.Tools, t)
	}
	if len(server) > 0 {
		b := []byte{'['}
		for i, s := range server {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, s...)
		}
		d.extra(keyServerTools, append(b, ']'))
	}
	return nil
}

func (d *reqDecoder) toolChoice(top object) error {
	o, err := wire.OptObject(top, "", "tool_choice")
	if o == nil || err != nil {
		return err
	}
	typ, err := reqString(o, "type", "tool_choice")
	if err != nil {
		return err
	}
	tc := &bridge.ToolChoice{}
	switch typ {
	case "auto":
		tc.Mode = bridge.ToolChoiceAuto
	case "any":
		tc.Mode = bridge.ToolChoiceRequired
	case "none":
		tc.Mode = bridge.ToolChoiceNone
	case "tool":
		tc.Mode = bridge.ToolChoiceTool
		if tc.Name, err = reqString(o, "name", "tool_choice"); err != nil {
			return err
		}
		if tc.Name == "" {
			return bridge.Errorf(bridge.CodeInvalid, "tool_choice.name: must not be empty")
		}
	default:
		return bridge.Errorf(bridge.CodeInvalid, "tool_choice.type: unknown value %q", typ)
	}
	if raw, ok := o["disable_parallel_tool_use"]; ok && !wire.IsNull(raw) {
		v, err := wire.AsBool(raw, "tool_choice.disable_parallel_tool_use")
		if err != nil {
			return err
		}
		if v {
			f := false
			d.req.ParallelToolCalls = &f
		}
	}
	for _, k := range wire.SortedKeys(o) {
		switch k {
		case "type", "name", "disable_parallel_tool_use":
		default:
			d.drop("tool_choice." + k)
		}
	}
	d.req.ToolChoice = tc
	return nil
}

func reqString(o object, key, path string) (string, error) {
	raw, ok := o[key]
	if !ok || wire.IsNull(raw) {
		return "", bridge.Errorf(bridge.CodeInvalid, "%s: Field required", wire.Join(path, key))
	}
	return wire.AsString(raw, wire.Join(path, key))
}

func optFloat(o object, key string, dst **float64) error {
	raw, ok := o[key]
	if !ok || wire.IsNull(raw) {
		return nil
	}
	v, err := wire.AsFloat(raw, key)
	if err != nil {
		return err
	}
	*dst = &v
	return nil
}

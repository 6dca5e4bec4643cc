package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// DefaultMaxTokens is the max_tokens EncodeRequest sends when neither the
// request nor EncodeOptions set one: the API requires the field.
const DefaultMaxTokens = 4096

// EncodeOptions configure EncodeRequest.
type EncodeOptions struct {
	// MaxTokens is sent when the request has no token limit (0:
	// DefaultMaxTokens).
	MaxTokens int64
}

// reservedFields are written by EncodeRequest itself; an Extra entry of the
// same name never overrides them.
var reservedFields = map[string]bool{
	"model": true, "messages": true, "system": true, "max_tokens": true,
	"tools": true, "tool_choice": true, "stop_sequences": true,
	"temperature": true, "top_p": true, "top_k": true, "metadata": true,
	"stream": true,
}

// countFields are the Extra fields a count_tokens body may carry.
var countFields = map[string]bool{
	"thinking": true, "cache_control": true, "output_config": true,
	"speed": true, "mcp_servers": true, "context_management": true,
}

// thinkingBudgets maps a reasoning effort to a thinking budget.
var thinkingBudgets = map[string]int64{"low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}

// EncodeRequest renders req as a Messages request body for an upstream
// (hub -> wire). It always asks for a stream (stream: true): the bridge
// streams every upstream call. The second result lists what could not be
// carried.
//
// System and developer messages are lifted into the top-level system (a
// string when the request had one string system prompt). Tool messages
// become tool_result blocks of a user message; consecutive ones share one
// user message, and user content that follows them joins it after the
// tool_result blocks (the API wants them first). An assistant's reasoning
// parts go back as thinking blocks when they carry a Signature and as
// redacted_thinking when they carry Encrypted; reasoning from other
// providers (no signature) cannot be sent and is listed as dropped. Tool
// calls become tool_use blocks after the assistant's other blocks, their
// arguments parsed into the input object. Images and documents go as
// base64 sources (a data: URL is split into media type and data) or URL
// sources; the bridge never fetches a URL.
//
// max_tokens is the request's limit, else opt.MaxTokens. A reasoning effort
// from another dialect becomes thinking {type: enabled, budget_tokens}
// (low 2048, medium 8192, high 16384, xhigh 32000), with max_tokens raised
// to hold the budget when the request set no limit; with thinking on,
// temperature, top_k and a top_p under 0.95 are not sent (the API refuses
// them); a tool_choice that forces a tool turns thinking off (the API takes
// it only with auto or none). temperature is clamped to Anthropic's range
// [0, 1].
//
// Opaque data and Extra are merged back only when their dialect is
// "anthropic"; another dialect's are listed as dropped ("param:<key>").
func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error) {
	if opt.MaxTokens <= 0 {
		opt.MaxTokens = DefaultMaxTokens
	}
	e := reqEncoder{opt: opt}
	return e.Encode(req, Dialect, e.encode)
}

// EncodeCountTokens renders req as a count_tokens body: the request's
// model, system, messages, tools and tool_choice (and the Extra fields
// count_tokens takes, such as thinking), without max_tokens, stream or
// sampling fields.
func EncodeCountTokens(req *bridge.Request) (body []byte, dropped []string, err error) {
	e := reqEncoder{count: true}
	return e.Encode(req, Dialect, e.encode)
}

type reqEncoder struct {
	wire.RequestEncoding
	opt   EncodeOptions
	count bool // a count_tokens body

	system     [][]byte // text blocks of the top-level system
	systemStr  *string  // the system as a string, while it can be one
	systemMsgs int
	msgs       []*wireMsg
}

// wireMsg is one message being built.
type wireMsg struct {
	role    string
	results [][]byte // tool_result blocks, written first
	blocks  [][]byte
	str     *string           // string content, while the message can keep it
	opaque  []json.RawMessage // extra fields of the message object
}

func (e *reqEncoder) drop(s string) { e.Dropped = wire.AddDropped(e.Dropped, s) }

func (e *reqEncoder) encode() ([]byte, error) {
	req := e.Req
	for i := range req.Messages {
		if err := e.message(&req.Messages[i], i); err != nil {
			return nil, err
		}
	}
	if len(e.msgs) == 0 {
		// The API refuses an empty messages list: say why here, in the
		// caller's dialect, rather than spend a call on its 400.
		why := "only system prompts"
		if len(e.Dropped) > 0 {
			why = strings.Join(e.Dropped, "; ")
		}
		return nil, bridge.Errorf(bridge.CodeUnsupported, "anthropic: no message is left to send (%s)", why)
	}
	w := wire.NewObj()
	w.Str("model", req.Model)

	thinking := e.thinking()
	if tc := req.ToolChoice; thinking > 0 && tc != nil && (tc.Mode == bridge.ToolChoiceRequired || tc.Mode == bridge.ToolChoiceTool) && len(req.Tools) > 0 {
		// The API takes thinking only with tool_choice auto or none; the
		// client's demand for a tool call wins.
		thinking = 0
		e.drop("reasoning_effort: tool_choice forces a tool")
	}
	if !e.count {
		max := e.opt.MaxTokens
		if req.MaxTokens != nil {
			max = *req.MaxTokens
		} else if thinking > 0 {
			max += thinking
		}
		if thinking > 0 && max <= thinking {
			thinking = max - 1
			if thinking < 1024 {
				thinking = 0
				e.drop("reasoning_effort")
			}
		}
		w.Int("max_tokens", max)
	}
	switch {
	case e.systemStr != nil && e.systemMsgs == 1 && len(e.system) == 1:
		w.Str("system", *e.systemStr)
	case len(e.system) > 0:
		w.Raw("system", wire.JoinArray(e.system))
	}
	w.Array("messages", len(e.msgs), func(i int) []byte { return e.msgs[i].render() })

	ntools := e.tools(w)
	e.toolChoice(w, ntools)
	if !e.count {
		e.sampling(w, thinking > 0)
	}
	if thinking > 0 {
		t := wire.NewObj()
		t.Str("type", "enabled")
		t.Int("budget_tokens", thinking)
		w.Raw("thinking", t.End())
	}
	if !e.count {
		w.Bool("stream", true)
	}
	e.extras(w)
	return w.End(), nil
}

// thinking is the budget another dialect's reasoning effort asks for, 0
// for none. An Anthropic request carries its own thinking in Extra.
func (e *reqEncoder) thinking() int64 {
	switch eff := e.Req.ReasoningEffort; eff {
	case "", "none", "minimal":
		return 0
	default:
		b, ok := thinkingBudgets[eff]
		if !ok {
			e.drop("reasoning_effort")
		}
		return b
	}
}

func (e *reqEncoder) sampling(w *wire.ObjWriter, thinking bool) {
	req := e.Req
	if len(req.Stop) > 0 {
		w.Strings("stop_sequences", req.Stop)
	}
	if t := req.Temperature; t != nil {
		switch v := *t; {
		case thinking && v != 1:
			e.drop("temperature")
		case v > 1:
			e.drop("temperature: clamped to 1")
			w.Float("temperature", 1)
		case v < 0:
			e.drop("temperature: clamped to 0")
			w.Float("temperature", 0)
		default:
			w.Float("temperature", v)
		}
	}
	if p := req.TopP; p != nil {
		if thinking && *p < 0.95 {
			e.drop("top_p")
		} else {
			w.Float("top_p", *p)
		}
	}
	if k := req.TopK; k != nil {
		if thinking {
			e.drop("top_k")
		} else {
			w.Int("top_k", *k)
		}
	}
	if req.User != "" {
		m := wire.NewObj()
		m.Str("user_id", req.User)
		w.Raw("metadata", m.End())
	}
	if len(req.Metadata) > 0 {
		e.drop("metadata")
	}
	if req.Seed != nil {
		e.drop("seed")
	}
	if len(req.ResponseFormat) > 0 {
		e.drop("response_format")
	}
}

func (e *reqEncoder) extras(w *wire.ObjWriter) {
	for _, k := range wire.SortedKeys(e.Req.Extra) {
		v := e.Req.Extra[k]
		if !e.Same {
			if k == "max_tokens" {
				continue // another dialect's record of its key; the limit is in MaxTokens
			}
			e.drop("param:" + k)
			continue
		}
		if reservedFields[k] || w.Has(k) {
			continue
		}
		if e.count && !countFields[k] {
			e.drop("param:" + k)
			continue
		}
		if !json.Valid(v) {
			e.drop("param:" + k)
			continue
		}
		w.Raw(k, wire.Compact(v))
	}
}

// tools writes the tools and returns how many were written.
func (e *reqEncoder) tools(w *wire.ObjWriter) int {
	req := e.Req
	var list [][]byte
	for i := range req.Tools {
		t := &req.Tools[i]
		o := wire.NewObj()
		o.Str("name", t.Name)
		if t.Description != "" {
			o.Str("description", t.Description)
		}
		if len(t.Parameters) > 0 && json.Valid(t.Parameters) && wire.Kind(t.Parameters) == '{' {
			o.Raw("input_schema", wire.Compact(t.Parameters))
		} else {
			if len(t.Parameters) > 0 {
				e.drop("tools[" + strconv.Itoa(i) + "].parameters")
			}
			o.Raw("input_schema", []byte(`{"type":"object","properties":{}}`))
		}
		if t.Strict != nil {
			o.Bool("strict", *t.Strict)
		}
		list = append(list, o.End())
	}
	if raw, ok := req.Extra[keyServerTools]; ok && e.Same {
		var server []json.RawMessage
		if json.Unmarshal(raw, &server) == nil {
			for _, s := range server {
				list = append(list, wire.Compact(s))
			}
		}
	}
	if len(list) > 0 {
		w.Raw("tools", wire.JoinArray(list))
	}
	return len(list)
}

func (e *reqEncoder) toolChoice(w *wire.ObjWriter, ntools int) {
	req := e.Req
	noParallel := req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	if ntools == 0 {
		return // nothing to choose from; the API refuses a tool_choice without tools
	}
	tc := req.ToolChoice
	if tc == nil {
		if noParallel {
			w.Raw("tool_choice", []byte(`{"type":"auto","disable_parallel_tool_use":true}`))
		}
		return
	}
	o := wire.NewObj()
	switch tc.Mode {
	case bridge.ToolChoiceAuto, "":
		o.Str("type", "auto")
	case bridge.ToolChoiceRequired:
		o.Str("type", "any")
	case bridge.ToolChoiceTool:
		o.Str("type", "tool")
		o.Str("name", tc.Name)
	case bridge.ToolChoiceNone:
		o.Str("type", "none")
		noParallel = false // not a field of none
	default:
		e.drop("tool_choice:" + string(tc.Mode))
		return
	}
	if noParallel {
		o.Bool("disable_parallel_tool_use", true)
	}
	w.Raw("tool_choice", o.End())
}

func (e *reqEncoder) last() *wireMsg {
	if len(e.msgs) == 0 {
		return nil
	}
	return e.msgs[len(e.msgs)-1]
}

func (e *reqEncoder) message(m *bridge.Message, i int) error {
	path := "messages[" + strconv.Itoa(i) + "]"
	switch m.Role {
	case bridge.RoleSystem, bridge.RoleDeveloper:
		e.systemMessage(m, path)
	case bridge.RoleUser:
		e.userMessage(m, path)
	case bridge.RoleTool:
		e.toolMessage(m, path)
	case bridge.RoleAssistant:
		e.assistantMessage(m, path)
	default:
		return bridge.Errorf(bridge.CodeInvalid, "%s.role: unknown role %q", path, m.Role)
	}
	return nil
}

func (e *reqEncoder) systemMessage(m *bridge.Message, path string) {
	e.systemMsgs++
	if text, ok := plainText(m); ok && m.StringContent && m.Opaque == nil && e.systemMsgs == 1 {
		e.systemStr = &text
	}
	for j := range m.Parts {
		p := &m.Parts[j]
		pp := path + ".content[" + strconv.Itoa(j) + "]"
		var text string
		switch p.Type {
		case bridge.PartText, bridge.PartData:
			text = wire.PartText(p)
		default:
			e.drop(pp + ": " + string(p.Type) + " part in a system prompt")
			continue
		}
		if text == "" {
			continue
		}
		b := wire.NewObj()
		b.Str("type", "text")
		b.Str("text", text)
		e.mergeOpaque(b, p.Opaque, pp)
		e.system = append(e.system, b.End())
	}
	e.mergeOpaque(nil, m.Opaque, path)
}

func (e *reqEncoder) userMessage(m *bridge.Message, path string) {
	blocks := e.contentBlocks(m.Parts, path+".content")
	if last := e.last(); last != nil && last.role == "user" && len(last.results) > 0 {
		last.str = nil
		last.blocks = append(last.blocks, blocks...)
		last.opaque = e.messageOpaque(last.opaque, m.Opaque, path)
		return
	}
	if len(blocks) == 0 && !m.StringContent && !(e.Same && len(m.Parts) == 0) {
		// (An Anthropic client's own empty content goes as it came: the
		// upstream answers it as the API does.)
		e.drop(path + ": nothing left to send")
		return
	}
	wm := &wireMsg{role: "user", blocks: blocks}
	if s, ok := plainText(m); ok && m.StringContent {
		wm.str = &s
	}
	wm.opaque = e.messageOpaque(nil, m.Opaque, path)
	e.msgs = append(e.msgs, wm)
}

// plainText is the text of a message whose parts are all text.
func plainText(m *bridge.Message) (string, bool) {
	var sb strings.Builder
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Type != bridge.PartText || p.Opaque != nil {
			return "", false
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), true
}

func (e *reqEncoder) toolMessage(m *bridge.Message, path string) {
	b := wire.NewObj()
	b.Str("type", "tool_result")
	b.Str("tool_use_id", m.ToolCallID)
	if s, ok := plainText(m); ok && m.StringContent {
		b.Str("content", s)
	} else if len(m.Parts) > 0 {
		blocks := e.contentBlocks(m.Parts, path+".content")
		if len(blocks) > 0 {
			b.Raw("content", wire.JoinArray(blocks))
		}
	}
	if m.IsError {
		b.Bool("is_error", true)
	}
	e.mergeOpaque(b, m.Opaque, path)
	block := b.End()
	if last := e.last(); last != nil && last.role == "user" {
		if last.str != nil {
			t := wire.NewObj()
			t.Str("type", "text")
			t.Str("text", *last.str)
			if *last.str != "" {
				last.blocks = append([][]byte{t.End()}, last.blocks...)
			}
			last.str = nil
		}
		last.results = append(last.results, block)
		return
	}
	e.msgs = append(e.msgs, &wireMsg{role: "user", results: [][]byte{block}})
}

func (e *reqEncoder) assistantMessage(m *bridge.Message, path string) {
	var blocks [][]byte
	for j := range m.Parts {
		p := &m.Parts[j]
		pp := path + ".content[" + strconv.Itoa(j) + "]"
		if p.Type != bridge.PartReasoning {
			if b := e.contentBlock(p, pp); b != nil {
				blocks = append(blocks, b)
			}
			continue
		}
		if p.Signature == "" && p.Encrypted == "" {
			if p.Text != "" {
				e.drop(pp + ": reasoning without a signature")
			}
			continue
		}
		if p.Signature != "" {
			b := wire.NewObj()
			b.Str("type", "thinking")
			b.Str("thinking", p.Text)
			b.Str("signature", p.Signature)
			e.mergeOpaque(b, p.Opaque, pp)
			blocks = append(blocks, b.End())
		}
		if p.Encrypted != "" {
			b := wire.NewObj()
			b.Str("type", "redacted_thinking")
			b.Str("data", p.Encrypted)
			if p.Signature == "" {
				e.mergeOpaque(b, p.Opaque, pp)
			}
			blocks = append(blocks, b.End())
		}
	}
	for j := range m.ToolCalls {
		tc := &m.ToolCalls[j]
		pp := path + ".tool_calls[" + strconv.Itoa(j) + "]"
		b := wire.NewObj()
		b.Str("type", "tool_use")
		b.Str("id", tc.ID)
		b.Str("name", tc.Name)
		args := strings.TrimSpace(tc.Arguments)
		switch {
		case args == "":
			b.Raw("input", []byte("{}"))
		case wire.Kind([]byte(args)) == '{' && json.Valid([]byte(args)):
			b.Raw("input", wire.Compact([]byte(args)))
		default:
			e.drop(pp + ".arguments: not a JSON object")
			b.Raw("input", []byte("{}"))
		}
		e.mergeOpaque(b, tc.Opaque, pp)
		blocks = append(blocks, b.End())
	}
	if len(blocks) == 0 && !m.StringContent {
		if len(m.Parts) > 0 || len(m.ToolCalls) > 0 || !m.NullContent {
			e.drop(path + ": nothing left to send")
		}
		return
	}
	wm := &wireMsg{role: "assistant", blocks: blocks}
	if s, ok := plainText(m); ok && m.StringContent && len(m.ToolCalls) == 0 {
		wm.str = &s
	}
	wm.opaque = e.messageOpaque(nil, m.Opaque, path)
	e.msgs = append(e.msgs, wm)
}

// contentBlocks renders user, tool_result or assistant content parts.
func (e *reqEncoder) contentBlocks(parts []bridge.Part, path string) [][]byte {
	var out [][]byte
	for j := range parts {
		if b := e.contentBlock(&parts[j], path+"["+strconv.Itoa(j)+"]"); b != nil {
			out = append(out, b)
		}
	}
	return out
}

// contentBlock renders one content part, or returns nil (and records why)
// when it has no Messages form. Empty text is left out: the API refuses
// empty text blocks.
func (e *reqEncoder) contentBlock(p *bridge.Part, path string) []byte {
	b := wire.NewObj()
	switch p.Type {
	case bridge.PartText, bridge.PartRefusal:
		if p.Text == "" {
			return nil
		}
		b.Str("type", "text")
		b.Str("text", p.Text)
	case bridge.PartData:
		b.Str("type", "text")
		b.Str("text", string(wire.Compact(p.JSON)))
	case bridge.PartImage:
		src := e.source(p, path, false)
		if src == nil {
			return nil
		}
		b.Str("type", "image")
		b.Raw("source", src)
	case bridge.PartFile:
		src := e.source(p, path, true)
		if src == nil {
			return nil
		}
		b.Str("type", "document")
		b.Raw("source", src)
		if p.Filename != "" && !hasOpaqueKey(p.Opaque, "title") {
			b.Str("title", p.Filename)
		}
	case bridge.PartOpaque:
		if p.Opaque == nil || p.Opaque.Dialect != Dialect || wire.Kind(p.Opaque.Data) != '{' || !json.Valid(p.Opaque.Data) {
			e.drop(path + ": " + wire.OpaquePart(p.Opaque))
			return nil
		}
		return wire.Compact(p.Opaque.Data)
	case bridge.PartReasoning:
		e.drop(path + ": reasoning outside an assistant message")
		return nil
	default:
		e.drop(path + ": " + string(p.Type) + " part")
		return nil
	}
	e.mergeOpaque(b, p.Opaque, path)
	return b.End()
}

func hasOpaqueKey(o *bridge.Opaque, key string) bool {
	if o == nil || o.Dialect != Dialect {
		return false
	}
	obj, err := wire.AsObject(o.Data, "")
	if err != nil {
		return false
	}
	_, ok := obj[key]
	return ok
}

// source renders an image or document source, nil (and recorded) when the
// part has nothing Anthropic can take.
func (e *reqEncoder) source(p *bridge.Part, path string, document bool) []byte {
	s := wire.NewObj()
	switch {
	case p.Data != "":
		mt := p.MediaType
		if mt == "" && document {
			mt = "application/pdf"
		}
		if mt == "" {
			e.drop(path + ": inline data without a media type")
			return nil
		}
		s.Str("type", "base64")
		s.Str("media_type", mt)
		s.Str("data", p.Data)
	case strings.HasPrefix(p.URL, "data:"):
		mt, data, ok := wire.ParseDataURL(p.URL)
		if !ok {
			e.drop(path + ": a data: URL that is not base64")
			return nil
		}
		s.Str("type", "base64")
		s.Str("media_type", mt)
		s.Str("data", data)
	case p.URL != "":
		s.Str("type", "url")
		s.Str("url", p.URL)
	case p.FileID != "":
		s.Str("type", "file")
		s.Str("file_id", p.FileID)
	default:
		e.drop(path + ": " + string(p.Type) + " without data, URL or file id")
		return nil
	}
	if p.Detail != "" {
		e.drop(path + ".detail")
	}
	return s.End()
}

// mergeOpaque merges anthropic opaque data into w (when w is not nil) and
// records another dialect's as dropped.
func (e *reqEncoder) mergeOpaque(w *wire.ObjWriter, o *bridge.Opaque, path string) {
	if o == nil {
		return
	}
	if o.Dialect != Dialect || w == nil || !w.Merge(o.Data) {
		e.drop(path + ": opaque " + wire.OpaqueDialect(o) + " data")
	}
}

// messageOpaque adds a message's opaque fields to the wire message's.
func (e *reqEncoder) messageOpaque(cur []json.RawMessage, o *bridge.Opaque, path string) []json.RawMessage {
	if o == nil {
		return cur
	}
	if o.Dialect != Dialect || wire.Kind(o.Data) != '{' || !json.Valid(o.Data) {
		e.mergeOpaque(nil, o, path)
		return cur
	}
	return append(cur, o.Data)
}

func (m *wireMsg) render() []byte {
	w := wire.NewObj()
	w.Str("role", m.role)
	if m.str != nil && len(m.results) == 0 {
		w.Str("content", *m.str)
	} else {
		all := append(append([][]byte(nil), m.results...), m.blocks...)
		w.Raw("content", wire.JoinArray(all))
	}
	for _, o := range m.opaque {
		w.Merge(o)
	}
	return w.End()
}

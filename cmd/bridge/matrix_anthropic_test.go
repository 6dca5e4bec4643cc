package main

// The anthropic dialect in the matrix: the inbound client driver (the
// official anthropic-sdk-go client, and raw SSE where ids and disconnects
// matter), whose every stream goes through the Messages stream validator
// (anthropictest.CheckStream, the one the codec and handler tests use), and
// the outbound upstream factory (anthropictest.Server, which writes
// Anthropic's named-event SSE by hand).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
)

// anthropicPairs are the matrix rows of the anthropic dialect, both ways.
func anthropicPairs() []pair {
	return []pair{
		{inbound: anthropicClient{over: "openai"}, outbound: openaiOut, notes: []string{
			"Text, tool_use input byte for byte as the upstream streamed it, parallel calls (serialized: a Messages " +
				"stream has one open block at a time, so a call whose fragments interleave with another's waits until " +
				"the open call's arguments are a complete JSON object), reasoning_content as thinking blocks (with an " +
				"empty signature), usage (stream_options.include_usage is always asked, so message_delta has the real " +
				"output count), finish reasons as stop reasons, the tool loop as one run.",
		}},
		{inbound: anthropicClient{over: "anthropic"}, outbound: anthropicOut, notes: []string{
			"Same dialect both ways: thinking with its signature and redacted_thinking go to the client and back " +
				"upstream unchanged; cache_control on system and content blocks, thinking, service_tier and the other " +
				"request fields the hub does not model ride in the request's Extra and opaque part data; server tools " +
				"and their blocks pass whole; upstream errors keep their status, type and message.",
		}},
		{inbound: anthropicClient{over: "echo"}, outbound: echoOut},
		{inbound: openaiClient{}, outbound: anthropicOut, notes: []string{
			"Text, parallel tool calls with their ids and arguments, thinking as reasoning_content, usage (prompt " +
				"tokens count cached ones, as Chat Completions does), stop reasons as finish reasons, the tool loop as one " +
				"run; system and developer messages become the top-level system, consecutive tool results one user " +
				"message of tool_result blocks, max_tokens is always set (4096 unless the request has a limit).",
		}},
	}
}

// ---- inbound: the Messages client -------------------------------------------

// anthropicClient drives the anthropic dialect; over names the pair's
// outbound, for what the scenarios can compare.
type anthropicClient struct{ over string }

func (anthropicClient) dialect() string { return "anthropic" }

func (anthropicClient) describe() string {
	return "Messages client: the official Go SDK (github.com/anthropics/anthropic-sdk-go/v2) for requests, streams, " +
		"errors and its message accumulator; raw net/http with an SSE reader where event ids and disconnects matter. " +
		"Every stream is checked by the Messages stream validator (anthropictest.CheckStream)."
}

// cannot: the error scenarios compare OpenAI's error objects, which have
// a code; an Anthropic error has only a type and a message, and its type
// comes from the error's class when the upstream is not Anthropic. (Over
// an Anthropic upstream, or echo, the factory says what it cannot play.)
func (c anthropicClient) cannot(sc string) string {
	if c.over == "anthropic" || c.over == "echo" {
		return ""
	}
	switch sc {
	case "error_before_first_byte":
		return "an Anthropic error has a type and a message but no code, and its status and type come from the " +
			"error's class (an upstream 500 is 502 api_error, a 503 is 529 overloaded_error), so the scenario's OpenAI " +
			"error objects cannot be compared; TestAnthropicSDKErrorsBeforeFirstByte checks that mapping"
	case "error_mid_stream":
		return "the in-stream error keeps the upstream's message but takes Anthropic's type for its class " +
			"(server_error is not an Anthropic type: it arrives as api_error); TestAnthropicSDKMidStreamError checks it"
	}
	return ""
}

func (anthropicClient) limits() []string {
	return []string{
		"stop_sequence: the hub does not carry which stop sequence matched; message_delta says null.",
		"Citations (citations_delta, text block citations) are not carried.",
		"cache_control on tool definitions and the other tool fields the hub has no place for " +
			"(input_examples, defer_loading, ...) are dropped and named (tools[i].<field>).",
		"A stream has one open content block at a time: parallel tool calls whose argument fragments interleave " +
			"upstream are serialized (a later call's fragments wait until the open call's arguments are a complete " +
			"JSON object, or its call is done).",
		"Resume: GET /v1/runs/{run}/events with Last-Event-ID continues the same message (frames up to the " +
			"cursor are not sent again, block indices go on); all the frames one event makes share its id and go " +
			"out in one write, so a resume after an id starts after all of them. A process killed inside that write " +
			"can leave a client part of an event: one whose last frame was message_start, message_delta or a block's " +
			"start or stop (frames more of their event always follow) resumes from the event before, as bridgesoak's " +
			"clients do, and gets that event's frames again (its text delta, always its last frame, it had not seen).",
		"Refusal text has no block of its own: it is text; the refusal itself is stop_reason refusal " +
			"(content_filter maps there too).",
		"Errors take Anthropic's status and type for their class unless the upstream is Anthropic (then they pass " +
			"unchanged); an Anthropic error has no code, so another dialect's error code is not carried.",
		"count_tokens is forwarded to an Anthropic upstream; over any other it is an estimate " +
			"(anthropic.EstimateInputTokens: 3.5 bytes of text a token, 4 a message, 10 a tool, 300 when tools are " +
			"declared, 1600 an image or document), marked X-Bridge-Token-Count: estimate.",
		"A tool-call id another dialect minted that Anthropic would refuse (not ^[a-zA-Z0-9_-]+$) is shown as " +
			"toolu_x_ and its base64url, undone when the client sends it back (no state kept).",
	}
}

func (anthropicClient) sdk(b *bridgeUT, tr turn) anthropic.Client {
	opts := []aoption.RequestOption{
		aoption.WithBaseURL(b.url), aoption.WithAPIKey("matrix-key"),
		aoption.WithHTTPClient(recordingClient{b.http}), aoption.WithMaxRetries(0),
	}
	if tr.session != "" {
		opts = append(opts, aoption.WithHeader("X-Session-Id", tr.session))
	}
	return anthropic.NewClient(opts...)
}

func (anthropicClient) params(tr turn) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{Model: matrixModel, MaxTokens: 1024}
	for _, m := range tr.messages {
		switch m.role {
		case bridge.RoleUser:
			p.Messages = append(p.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.text)))
		case bridge.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.text))
			}
			for _, tc := range m.toolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.id, json.RawMessage(tc.args), tc.name))
			}
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		case bridge.RoleTool:
			block := anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{
				ToolUseID: m.toolCallID,
				Content:   []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.text}}},
			}}
			// Consecutive results share one user message, as the API wants.
			if n := len(p.Messages); n > 0 && p.Messages[n-1].OfUser != nil && len(p.Messages[n-1].OfUser.Content) > 0 &&
				p.Messages[n-1].OfUser.Content[0].OfToolResult != nil {
				p.Messages[n-1].OfUser.Content = append(p.Messages[n-1].OfUser.Content, block)
			} else {
				p.Messages = append(p.Messages, anthropic.NewUserMessage(block))
			}
		}
	}
	for _, td := range tr.tools {
		schema := anthropic.ToolInputSchemaParam{Properties: td.params["properties"]}
		if req, ok := td.params["required"].([]string); ok {
			schema.Required = req
		}
		tool := anthropic.ToolUnionParamOfTool(schema, td.name)
		tool.OfTool.Description = anthropic.String(td.description)
		p.Tools = append(p.Tools, tool)
	}
	return p
}

// send runs a turn through the SDK; the recorded bytes are validated and
// normalized, and the SDK's reading is checked against them.
func (c anthropicClient) send(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *observation {
	t.Helper()
	cl := c.sdk(b, tr)
	rec := &capture{}
	ctx = withCapture(ctx, rec)
	p := c.params(tr)
	if tr.stream {
		s := cl.Messages.NewStreaming(ctx, p)
		var msg anthropic.Message
		for i := 0; s.Next(); i++ {
			if i > maxFrames {
				t.Fatalf("more than %d events", maxFrames)
			}
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Errorf("the SDK accumulator rejected %s: %v", s.Current().RawJSON(), err)
			}
		}
		serr := s.Err()
		_ = s.Close()
		obs := c.observe(t, rec, tr)
		crossCheckMessage(t, obs, &msg, serr)
		return obs
	}
	msg, err := cl.Messages.New(ctx, p)
	obs := c.observe(t, rec, tr)
	if err == nil {
		crossCheckMessage(t, obs, msg, nil)
	} else {
		crossCheckMessage(t, obs, nil, err)
	}
	return obs
}

// observe normalizes a recorded response.
func (anthropicClient) observe(t *testing.T, rec *capture, tr turn) *observation {
	t.Helper()
	obs, body := recorded(t, rec)
	ct := obs.header.Get("Content-Type")
	switch {
	case obs.status != http.StatusOK:
		observeErrorResponse(t, obs, body, parseAnthropicError)
	case tr.stream:
		if ct != "text/event-stream" {
			t.Errorf("stream Content-Type %q, want text/event-stream", ct)
		}
		observeMessagesStream(t, obs, body, anthropictest.Check{RunID: obs.runID, IDs: true, Complete: true})
	default:
		observeMessage(t, obs, body)
	}
	return obs
}

// observeMessagesStream validates a Messages stream and fills obs with
// what it says.
func observeMessagesStream(t *testing.T, obs *observation, body []byte, c anthropictest.Check) {
	t.Helper()
	obs.frames = bodyFrames(t, body, 0)
	af, err := anthropictest.ParseFrames(body)
	if err != nil && c.Complete {
		t.Errorf("stream: %v", err)
	}
	sum, problems := anthropictest.CheckStream(af, c)
	for _, p := range problems {
		t.Errorf("Messages stream: %s", p)
	}
	if len(problems) > 0 {
		t.Logf("the stream:\n%s", body)
	}
	obs.text, obs.reasoning = sum.Text, sum.Thinking
	for _, tc := range sum.ToolCalls {
		obs.toolCalls = append(obs.toolCalls, toolCall{index: tc.Index, id: tc.ID, name: tc.Name, args: tc.Input})
	}
	obs.finish = stopOf(sum.StopReason)
	if sum.ErrType != "" {
		obs.errFrame = true
		obs.err = &wireError{typ: sum.ErrType, message: sum.ErrMessage, codeNull: true, paramNull: true}
	} else if sum.StopReason != "" {
		obs.usage = anthropicUsage(sum.Usage.Input, sum.Usage.Output, sum.Usage.CacheRead, sum.Usage.CacheCreation)
	}
}

func anthropicUsage(in, out, cacheRead, cacheCreation int64) *usage {
	all := in + cacheRead + cacheCreation
	return &usage{in: all, out: out, total: all + out}
}

// observeMessage checks a message object and fills obs.
func observeMessage(t *testing.T, obs *observation, body []byte) {
	t.Helper()
	if ct := obs.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("message Content-Type %q, want application/json", ct)
	}
	var m struct {
		ID         string  `json:"id"`
		Type       string  `json:"type"`
		Role       string  `json:"role"`
		Model      string  `json:"model"`
		StopReason *string `json:"stop_reason"`
		Content    []struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			Thinking string          `json:"thinking"`
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Input    json.RawMessage `json:"input"`
		} `json:"content"`
		Usage *struct {
			Input         *int64 `json:"input_tokens"`
			Output        *int64 `json:"output_tokens"`
			CacheRead     int64  `json:"cache_read_input_tokens"`
			CacheCreation int64  `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Errorf("message: %v: %s", err, body)
		return
	}
	if m.ID == "" || m.Type != "message" || m.Role != "assistant" || m.Model != matrixModel || m.StopReason == nil ||
		m.Usage == nil || m.Usage.Input == nil || m.Usage.Output == nil {
		t.Errorf("message envelope: %s", body)
		return
	}
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			if c.Text == "" {
				t.Errorf("an empty text block in %s", body)
			}
			obs.text += c.Text
		case "thinking":
			obs.reasoning += c.Thinking
		case "tool_use":
			var in bytes.Buffer
			if err := json.Compact(&in, c.Input); err != nil {
				t.Errorf("tool_use input %s: %v", c.Input, err)
			}
			obs.toolCalls = append(obs.toolCalls, toolCall{index: len(obs.toolCalls), id: c.ID, name: c.Name, args: in.String()})
		}
	}
	obs.finish = stopOf(*m.StopReason)
	obs.usage = anthropicUsage(*m.Usage.Input, *m.Usage.Output, m.Usage.CacheRead, m.Usage.CacheCreation)
}

// crossCheckMessage checks that the SDK read the answer as the validator
// did.
func crossCheckMessage(t *testing.T, obs *observation, msg *anthropic.Message, err error) {
	t.Helper()
	var ae *anthropic.Error
	switch {
	case obs.status != http.StatusOK:
		if !errors.As(err, &ae) || ae.StatusCode != obs.status || string(ae.Type()) != obs.err.typ || ae.Message != obs.err.message {
			t.Errorf("SDK error %T %v; the body says %v", err, err, obs.err)
		}
		return
	case obs.errFrame:
		if !errors.As(err, &ae) || string(ae.Type()) != obs.err.typ || ae.Message != obs.err.message {
			t.Errorf("SDK stream error %T %v; the error event says %v", err, err, obs.err)
		}
		return
	case err != nil:
		t.Errorf("SDK: %v", err)
		return
	}
	var text, thinking string
	var calls []toolCall
	for _, c := range msg.Content {
		switch c.Type {
		case "text":
			text += c.Text
		case "thinking":
			thinking += c.Thinking
		case "tool_use":
			var in bytes.Buffer
			_ = json.Compact(&in, c.Input)
			calls = append(calls, toolCall{index: len(calls), id: c.ID, name: c.Name, args: in.String()})
		}
	}
	if text != obs.text || thinking != obs.reasoning {
		t.Errorf("SDK text %q thinking %q; the answer says %q %q", text, thinking, obs.text, obs.reasoning)
	}
	// The SDK's input is the JSON it parsed; compare it compacted.
	want := make([]toolCall, len(obs.toolCalls))
	for i, c := range obs.toolCalls {
		var in bytes.Buffer
		if json.Compact(&in, []byte(c.args)) == nil {
			c.args = in.String()
		}
		want[i] = c
	}
	if !sameCalls(calls, want) {
		t.Errorf("SDK tool calls %v; the answer says %v", calls, want)
	}
	if got := stopOf(string(msg.StopReason)); got != obs.finish {
		t.Errorf("SDK stop_reason %q; the answer says %q", msg.StopReason, obs.finish)
	}
	if u := obs.usage; u != nil && (msg.Usage.OutputTokens != u.out ||
		msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens+msg.Usage.CacheCreationInputTokens != u.in) {
		t.Errorf("SDK usage %+v; the answer says %+v", msg.Usage, *u)
	}
}

func stopOf(s string) bridge.StopReason {
	switch s {
	case "end_turn":
		return bridge.StopEndTurn
	case "max_tokens":
		return bridge.StopMaxTokens
	case "stop_sequence":
		return bridge.StopSequence
	case "tool_use":
		return bridge.StopToolUse
	case "refusal":
		return bridge.StopRefusal
	case "pause_turn":
		return bridge.StopPause
	case "":
		return ""
	}
	return bridge.StopReason("stop_reason:" + s)
}

// parseAnthropicError reads {"type":"error","error":{"type","message"}}.
func parseAnthropicError(body []byte) (*wireError, error) {
	var env struct {
		Type  string `json:"type"`
		Error *struct {
			Type    *string `json:"type"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	if env.Type != "error" || env.Error == nil || env.Error.Type == nil || env.Error.Message == nil {
		return nil, errors.New(`not a {"type":"error","error":{"type","message"}} object`)
	}
	return &wireError{typ: *env.Error.Type, message: *env.Error.Message, codeNull: true, paramNull: true}, nil
}

// open starts a raw streamed request, for reading ids and dropping it.
func (c anthropicClient) open(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *liveStream {
	t.Helper()
	ping := func(f frame) bool { return len(f.other) == 1 && f.other[0] == "event: ping" } // not an event of the run
	ls, drop := postStream(ctx, t, b, "/v1/messages", streamBody(t, c.params(tr)), tr.session, ping,
		"x-api-key", "matrix-key", "anthropic-version", "2023-06-01")
	ls.drop = func(t *testing.T) *observation {
		t.Helper()
		drop()
		obs := ls.observation("X-Session-Id")
		// Validate exactly the frames read (the reader may have buffered more).
		observeMessagesStream(t, obs, ls.text(), anthropictest.Check{RunID: ls.runID, IDs: true})
		return obs
	}
	return ls
}

// events reads GET /v1/runs/{run}/events (after lastEventID, when set) to
// the end. A resumed replay continues the message the client was reading.
func (anthropicClient) events(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string, tr turn) *observation {
	t.Helper()
	resp := getEvents(ctx, t, b, runID, lastEventID)
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Errorf("events of %s: %v", runID, err)
	}
	obs := &observation{status: resp.StatusCode, header: resp.Header, runID: runID}
	observeMessagesStream(t, obs, body, anthropictest.Check{RunID: runID, IDs: true, Complete: true, Resumed: lastEventID != "", Messages: true})
	return obs
}

// ---- outbound: an Anthropic upstream ----------------------------------------

var anthropicOut = outboundSide{
	name: "anthropic",
	describe: "The bridge's Messages client (outbound/anthropic) against anthropictest.Server, a fake upstream " +
		"that writes Anthropic's named-event SSE by hand.",
	play: anthropicUpstream,
	limits: func() []string {
		return []string{
			"An Anthropic stream never interleaves tool_use blocks: a script's interleaved parallel calls are " +
				"played one after the other, as the real API sends them.",
			"Reasoning without a signature (from another provider) cannot be sent back as a thinking block and is " +
				"dropped and named; Chat Completions clients cannot send signatures back at all.",
			"Tool-call ids Anthropic refuses (not ^[a-zA-Z0-9_-]+$) are replaced by toolu_ ids, mapped back by " +
				"the engine.",
			"Upstream resume: the Messages API has none, so a broken upstream stream fails the run.",
		}
	},
}

// anthropicUpstream plays a script with anthropictest.Server.
func anthropicUpstream(t *testing.T, sc *script) (*fakeUpstream, string) {
	for _, c := range sc.calls {
		if c.fail != nil && c.fail.code != "" {
			return nil, "an Anthropic error object has a type and a message but no code, so the scenario's error codes cannot be played"
		}
	}
	srv := anthropictest.New(func(n int, body []byte) anthropictest.Reply {
		return anthropicReply(sc.call(n, anthropicLastUser(body)))
	})
	t.Cleanup(srv.Close)
	up := &fakeUpstream{
		configure: func(c *Config) {
			c.Upstreams = []Upstream{{Name: "anthropic", Dialect: "anthropic", URL: srv.URL}}
		},
		requests: func() []upstreamRequest {
			var out []upstreamRequest
			for _, r := range srv.Requests() {
				out = append(out, parseAnthropicRequest(t, r.Body))
			}
			return out
		},
		cancelled: srv.Cancelled,
	}
	return up, ""
}

func anthropicStop(s bridge.StopReason) string {
	switch s {
	case bridge.StopToolUse:
		return "tool_use"
	case bridge.StopMaxTokens:
		return "max_tokens"
	case bridge.StopSequence:
		return "stop_sequence"
	case bridge.StopRefusal, bridge.StopContentFilter:
		return "refusal"
	}
	return "end_turn"
}

// anthropicReply renders a model call as Anthropic's wire.
func anthropicReply(c *modelCall) anthropictest.Reply {
	if c.fail != nil {
		return anthropictest.Reply{Status: c.fail.status, Body: anthropictest.ErrorBody(c.fail.typ, c.fail.message)}
	}
	ev := &anthropictest.Events{ID: "msg_upstream_1", Model: matrixModel}
	var in, out int
	if c.usage != nil {
		in, out = int(c.usage.in), int(c.usage.out)
	}
	ev.Start(in, 0, 0)
	if len(c.reasoning) > 0 {
		ev.Thinking("sig-matrix", c.reasoning...)
	}
	if c.midError != nil {
		// The error comes inside the open text block, as the real API can.
		ev.Raw("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for _, p := range c.text {
			d, _ := json.Marshal(p)
			ev.Raw("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(d)+`}}`)
		}
		ev.Error(c.midError.typ, c.midError.message)
		return anthropictest.Reply{Events: ev.List(), Delay: c.delay}
	}
	if len(c.text) > 0 {
		ev.Text(c.text...)
	}
	for _, tl := range c.tools {
		ev.ToolUse(tl.id, tl.name, tl.fragments...)
	}
	ev.Delta(anthropicStop(c.stop), out).Stop()
	return anthropictest.Reply{Events: ev.List(), Delay: c.delay}
}

// anthropicWire is the messages array of a Messages request.
type anthropicWire struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// anthropicBlocks reads content: a string or blocks.
func anthropicBlocks(raw json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func anthropicLastUser(body []byte) string {
	var w anthropicWire
	_ = json.Unmarshal(body, &w)
	for i := len(w.Messages) - 1; i >= 0; i-- {
		if w.Messages[i].Role != "user" {
			continue
		}
		var b strings.Builder
		for _, bl := range anthropicBlocks(w.Messages[i].Content) {
			if bl.Type == "text" {
				b.WriteString(bl.Text)
			}
		}
		return b.String()
	}
	return ""
}

// parseAnthropicRequest normalizes a Messages request: a user message's
// tool_result blocks are tool messages, its text a user message; an
// assistant's tool_use blocks its tool calls (input compacted).
func parseAnthropicRequest(t *testing.T, body []byte) upstreamRequest {
	var w anthropicWire
	if err := json.Unmarshal(body, &w); err != nil {
		t.Errorf("upstream request body: %v: %s", err, body)
	}
	r := upstreamRequest{model: w.Model}
	for _, m := range w.Messages {
		blocks := anthropicBlocks(m.Content)
		if m.Role == "assistant" {
			nm := msg{role: bridge.RoleAssistant}
			for _, bl := range blocks {
				switch bl.Type {
				case "text":
					nm.text += bl.Text
				case "tool_use":
					var in bytes.Buffer
					_ = json.Compact(&in, bl.Input)
					nm.toolCalls = append(nm.toolCalls, toolCall{index: len(nm.toolCalls), id: bl.ID, name: bl.Name, args: in.String()})
				}
			}
			r.messages = append(r.messages, nm)
			continue
		}
		var text strings.Builder
		hasText := false
		for _, bl := range blocks {
			switch bl.Type {
			case "tool_result":
				var rt strings.Builder
				for _, c := range anthropicBlocks(bl.Content) {
					rt.WriteString(c.Text)
				}
				r.messages = append(r.messages, msg{role: bridge.RoleTool, text: rt.String(), toolCallID: bl.ToolUseID})
			case "text":
				text.WriteString(bl.Text)
				hasText = true
			}
		}
		if hasText || len(blocks) == 0 {
			r.messages = append(r.messages, msg{role: bridge.RoleUser, text: text.String()})
		}
	}
	return r
}

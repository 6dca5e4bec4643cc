package main

// The openai dialect in the matrix: the inbound client driver (the official
// SDK, and raw SSE where ids and disconnects matter), the Chat Completions
// stream validator every stream goes through, and the outbound upstream
// factory (openaitest.Server behind a front that sees cancellations).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// ---- inbound: the Chat Completions client -----------------------------------

type openaiClient struct{}

func (openaiClient) dialect() string { return "openai" }

func (openaiClient) describe() string {
	return "Chat Completions client: the official Go SDK (github.com/openai/openai-go/v3) for requests, " +
		"streams and errors; raw net/http with an SSE reader where event ids and disconnects matter. " +
		"Every stream is checked by the Chat Completions stream grammar validator."
}

func (openaiClient) cannot(string) string { return "" }

func (openaiClient) limits() []string {
	return []string{
		"Reasoning signatures and encrypted reasoning: Chat Completions has no field for them; " +
			"they are dropped and named in X-Bridge-Dropped (reasoning.signature, reasoning.encrypted).",
		"Reasoning reaches the client in delta.reasoning_content (the DeepSeek convention); OpenAI's SDKs do not " +
			"type that field, so a client reads it from the raw chunk.",
		"Tool results, artifacts, session state updates and an agent's own tool calls have no place in a " +
			"chat.completion.chunk: dropped and named (tool_result, artifact, state_update, agent_tool_call).",
		"Stop reasons with no finish_reason value are sent as stop and recorded as stop_reason:<reason>.",
		"The dialect has no resume of its own: a stream is resumed through the run API " +
			"(GET /v1/runs/{run}/events with Last-Event-ID), and only for requests with X-Session-Id; " +
			"a stateless request whose client leaves is cancelled.",
	}
}

func (openaiClient) sdk(b *bridgeUT) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(b.url+"/v1"),
		option.WithAPIKey("matrix-key"),
		option.WithHTTPClient(recordingClient{b.http}),
		option.WithMaxRetries(0),
	)
}

func (openaiClient) params(tr turn) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: matrixModel}
	for _, m := range tr.messages {
		switch m.role {
		case bridge.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.text))
		case bridge.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.text != "" {
				a.Content.OfString = openai.String(m.text)
			}
			for _, tc := range m.toolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.id,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.name, Arguments: tc.args},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case bridge.RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.text, m.toolCallID))
		}
	}
	for _, td := range tr.tools {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        td.name,
			Description: openai.String(td.description),
			Parameters:  shared.FunctionParameters(td.params),
		}))
	}
	if tr.stream && tr.includeUsage {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p
}

func sessionOpts(tr turn) []option.RequestOption {
	if tr.session == "" {
		return nil
	}
	return []option.RequestOption{option.WithHeader("X-Session-Id", tr.session)}
}

// send runs a turn through the SDK; the recorded bytes are validated and
// normalized, and the SDK's reading is checked against them.
func (c openaiClient) send(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *observation {
	t.Helper()
	cl := c.sdk(b)
	rec := &capture{}
	ctx = withCapture(ctx, rec)
	p := c.params(tr)
	if tr.stream {
		s := cl.Chat.Completions.NewStreaming(ctx, p, sessionOpts(tr)...)
		var acc openai.ChatCompletionAccumulator
		for i := 0; s.Next(); i++ {
			if i > maxFrames {
				t.Fatalf("more than %d chunks", maxFrames)
			}
			if !acc.AddChunk(s.Current()) {
				t.Errorf("the SDK accumulator rejected chunk %s", s.Current().RawJSON())
			}
		}
		serr := s.Err()
		_ = s.Close()
		obs := c.observe(t, rec, tr)
		crossCheckStream(t, obs, &acc, serr)
		return obs
	}
	resp, err := cl.Chat.Completions.New(ctx, p, sessionOpts(tr)...)
	obs := c.observe(t, rec, tr)
	crossCheckCompletion(t, obs, resp, err)
	return obs
}

// maxFrames bounds every read of a stream.
const maxFrames = 10000

// observe normalizes a recorded response.
func (openaiClient) observe(t *testing.T, rec *capture, tr turn) *observation {
	t.Helper()
	obs, body := recorded(t, rec)
	ct := obs.header.Get("Content-Type")
	switch {
	case obs.status != http.StatusOK:
		observeErrorResponse(t, obs, body, parseOpenAIError)
	case tr.stream:
		if ct != "text/event-stream" {
			t.Errorf("stream Content-Type %q, want text/event-stream", ct)
		}
		obs.frames = bodyFrames(t, body, 0)
		validateChatStream(t, obs, streamCheck{runID: obs.runID, model: matrixModel, includeUsage: tr.includeUsage, complete: true})
	default:
		validateCompletion(t, obs, body)
	}
	return obs
}

// crossCheckStream checks that the SDK read the stream as the validator did.
func crossCheckStream(t *testing.T, obs *observation, acc *openai.ChatCompletionAccumulator, serr error) {
	t.Helper()
	switch {
	case obs.status != http.StatusOK:
		var ae *openai.Error
		if !errors.As(serr, &ae) {
			t.Errorf("SDK stream error %T %v, want *openai.Error", serr, serr)
			return
		}
		checkSDKError(t, ae, obs.err)
		return
	case obs.errFrame:
		var se *ssestream.StreamError
		if !errors.As(serr, &se) {
			t.Errorf("SDK stream error %T %v, want *ssestream.StreamError for the error frame", serr, serr)
			return
		}
		if m := jsonField(se.Event.Data, "error", "message"); m != obs.err.message {
			t.Errorf("SDK StreamError message %q, the frame says %q", m, obs.err.message)
		}
		return
	case serr != nil:
		t.Errorf("SDK stream error: %v", serr)
		return
	}
	if len(acc.Choices) != 1 {
		t.Errorf("SDK accumulated %d choices, want 1", len(acc.Choices))
		return
	}
	ch := acc.Choices[0]
	if ch.Message.Content != obs.text {
		t.Errorf("SDK content %q, the stream says %q", ch.Message.Content, obs.text)
	}
	if got := finishOf(ch.FinishReason); got != obs.finish {
		t.Errorf("SDK finish_reason %q, the stream says %q", ch.FinishReason, obs.finish)
	}
	var calls []toolCall
	for i, tc := range ch.Message.ToolCalls {
		calls = append(calls, toolCall{index: i, id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
	}
	if !sameCalls(calls, obs.toolCalls) {
		t.Errorf("SDK tool calls %v, the stream says %v", calls, obs.toolCalls)
	}
	if obs.usage != nil && (acc.Usage.PromptTokens != obs.usage.in || acc.Usage.CompletionTokens != obs.usage.out || acc.Usage.TotalTokens != obs.usage.total) {
		t.Errorf("SDK usage %d/%d/%d, the stream says %+v", acc.Usage.PromptTokens, acc.Usage.CompletionTokens, acc.Usage.TotalTokens, *obs.usage)
	}
}

func crossCheckCompletion(t *testing.T, obs *observation, resp *openai.ChatCompletion, err error) {
	t.Helper()
	if obs.status != http.StatusOK {
		var ae *openai.Error
		if !errors.As(err, &ae) {
			t.Errorf("SDK error %T %v, want *openai.Error", err, err)
			return
		}
		checkSDKError(t, ae, obs.err)
		return
	}
	if err != nil {
		t.Errorf("SDK: %v", err)
		return
	}
	if len(resp.Choices) != 1 {
		t.Errorf("SDK: %d choices, want 1", len(resp.Choices))
		return
	}
	m := resp.Choices[0].Message
	if m.Content != obs.text {
		t.Errorf("SDK content %q, the body says %q", m.Content, obs.text)
	}
	var calls []toolCall
	for i, tc := range m.ToolCalls {
		calls = append(calls, toolCall{index: i, id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
	}
	if !sameCalls(calls, obs.toolCalls) {
		t.Errorf("SDK tool calls %v, the body says %v", calls, obs.toolCalls)
	}
	if got := finishOf(resp.Choices[0].FinishReason); got != obs.finish {
		t.Errorf("SDK finish_reason %q, the body says %q", resp.Choices[0].FinishReason, obs.finish)
	}
}

func checkSDKError(t *testing.T, ae *openai.Error, want *wireError) {
	t.Helper()
	if ae.StatusCode != want.status || ae.Type != want.typ || ae.Code != want.code || ae.Message != want.message {
		t.Errorf("SDK *openai.Error status=%d type=%q code=%q message=%q; the body says %v",
			ae.StatusCode, ae.Type, ae.Code, ae.Message, want)
	}
}

// open starts a raw streamed request, for reading ids and dropping it.
func (c openaiClient) open(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *liveStream {
	t.Helper()
	tr.stream = true
	ls, drop := postStream(ctx, t, b, "/v1/chat/completions", streamBody(t, c.params(tr)), tr.session, nil,
		"Authorization", "Bearer matrix-key")
	ls.drop = func(t *testing.T) *observation {
		t.Helper()
		drop()
		obs := ls.observation("X-Session-Id")
		validateChatStream(t, obs, streamCheck{runID: ls.runID, model: matrixModel, includeUsage: tr.includeUsage})
		return obs
	}
	return ls
}

// events reads GET /v1/runs/{run}/events (after lastEventID, when set) to
// the end. The replay renders the run as its client first saw it: with
// the usage chunk when that request asked include_usage.
func (openaiClient) events(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string, tr turn) *observation {
	t.Helper()
	resp := getEvents(ctx, t, b, runID, lastEventID)
	defer resp.Body.Close()
	obs := readReplay(t, "events of "+runID, resp, runID)
	validateChatStream(t, obs, streamCheck{runID: runID, model: matrixModel, includeUsage: tr.stream && tr.includeUsage, complete: true,
		resumed: lastEventID != ""})
	return obs
}

// ---- the Chat Completions stream validator ----------------------------------

// streamCheck says what a stream must be.
type streamCheck struct {
	runID        string // every event id names this run
	model        string
	includeUsage bool
	// complete: the stream was read to its end (not dropped), so it must be
	// terminated properly.
	complete bool
	// resumed: the stream goes on after a frame its client has (a replay
	// after Last-Event-ID), so its first chunk is not the stream's first.
	resumed bool
}

// validateChatStream checks obs.frames against the grammar of the Chat
// Completions stream the bridge emits, and fills obs with what they say:
//
//   - every frame has one id: line (a frame id of the run, each frame's its
//     own, increasing) and one data: line; data: [DONE] has no id;
//   - JSON chunks have id, object "chat.completion.chunk", created and model,
//     the same on every chunk, and choices: one choice with index 0, a delta
//     and a finish_reason key (null until the finish), or none in the usage
//     chunk;
//   - the first chunk has delta.role "assistant" (of a resumed stream none
//     has: its client has the first), no later one has a role; no chunk is
//     empty;
//   - tool_calls: index on every delta; id, type "function" and name exactly
//     on the first delta of an index; no empty arguments on later deltas;
//     indices appear in order, contiguous from 0;
//   - exactly one finish_reason chunk, or an error frame ({"error":{message,
//     type,param,code}}) instead; nothing but the usage chunk after it;
//   - a usage chunk (empty choices, a usage object) only when include_usage
//     was asked, and only after the finish chunk; with include_usage every
//     other chunk has "usage":null;
//   - the stream ends with data: [DONE] and nothing after it.
func validateChatStream(t *testing.T, obs *observation, c streamCheck) {
	t.Helper()
	reportStream(t, "Chat Completions stream", obs, checkChatStream(obs, c))
}

// checkChatStream is validateChatStream's grammar: it fills obs and returns
// every violation.
func checkChatStream(obs *observation, c streamCheck) []string {
	var (
		problems  []string
		chunkID   string
		created   json.Number
		lastPos   = framePos{-1, 0}
		lastID    string
		chunks    int
		finishes  int
		usages    int
		errFrames int
		done      bool
		calls     = map[int]*toolCall{}
	)
	for i, f := range obs.frames {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("frame %d (%s): %s", i+1, f, fmt.Sprintf(format, args...)))
		}
		if done {
			bad("a frame after data: [DONE]")
			continue
		}
		if len(f.other) > 0 {
			bad("lines other than id and data: %q", f.other)
		}
		if len(f.data) != 1 {
			bad("%d data lines, want 1", len(f.data))
			if len(f.data) == 0 {
				continue
			}
		}
		data := f.data[0]
		if data == "[DONE]" {
			done = true
			if f.hasID {
				bad("data: [DONE] carries an id")
			}
			continue
		}
		// The id: one per frame, a frame id of the run, each frame's its
		// own, after the one before.
		if f.idN != 1 {
			bad("%d id lines, want 1", f.idN)
		} else if run, pos, ok := parseFramePos(f.id); !ok || (c.runID != "" && run != c.runID) {
			bad("id %q is not an event id of run %s", f.id, c.runID)
		} else {
			if !lastPos.before(pos) {
				bad("id %q does not follow id %q", f.id, lastID)
			}
			lastPos, lastID = pos, f.id
		}
		var m map[string]json.RawMessage
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil || dec.More() {
			bad("data is not one JSON object: %v", err)
			continue
		}
		if raw, ok := m["error"]; ok {
			errFrames++
			if errFrames > 1 {
				bad("a second error frame")
			}
			if finishes > 0 {
				bad("an error frame after the finish chunk")
			}
			e, err := parseErrorObject(raw)
			if err != nil {
				bad("error frame: %v", err)
			} else {
				obs.err, obs.errFrame = e, true
			}
			if len(m) != 1 {
				bad("error frame has keys besides error")
			}
			continue
		}
		if errFrames > 0 {
			bad("a chunk after the error frame")
		}
		// The chunk envelope.
		var env struct {
			ID      *string           `json:"id"`
			Object  *string           `json:"object"`
			Created *json.Number      `json:"created"`
			Model   *string           `json:"model"`
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &env); err != nil {
			bad("chunk: %v", err)
			continue
		}
		switch {
		case env.ID == nil || *env.ID == "":
			bad("no id")
		case chunkID == "":
			chunkID = *env.ID
		case *env.ID != chunkID:
			bad("id %q, earlier chunks %q", *env.ID, chunkID)
		}
		if env.Object == nil || *env.Object != "chat.completion.chunk" {
			bad("object is not chat.completion.chunk")
		}
		switch {
		case env.Created == nil:
			bad("no created")
		case created == "":
			created = *env.Created
			if _, err := created.Int64(); err != nil {
				bad("created %q is not an integer", created)
			}
		case *env.Created != created:
			bad("created %s, earlier chunks %s", *env.Created, created)
		}
		if env.Model == nil || *env.Model != c.model {
			bad("model is not %q", c.model)
		}
		if _, ok := m["choices"]; !ok || env.Choices == nil {
			bad("no choices array")
		}
		chunks++
		uraw, hasUsage := m["usage"]
		if len(env.Choices) == 0 {
			// The usage chunk.
			usages++
			if !c.includeUsage {
				bad("a usage chunk, but include_usage was not asked")
			}
			if finishes == 0 {
				bad("the usage chunk before the finish chunk")
			}
			if usages > 1 {
				bad("a second usage chunk")
			}
			u, err := parseUsage(uraw)
			if err != nil || u == nil {
				bad("usage chunk: usage %s: %v", uraw, err)
			} else {
				obs.usage = u
			}
			continue
		}
		switch {
		case c.includeUsage && (!hasUsage || string(uraw) != "null"):
			bad(`include_usage was asked: every chunk but the last carries "usage":null`)
		case !c.includeUsage && hasUsage && string(uraw) != "null":
			bad("usage %s without include_usage", uraw)
		}
		if finishes > 0 {
			bad("a chunk with choices after the finish chunk")
		}
		if len(env.Choices) != 1 {
			bad("%d choices, want 1", len(env.Choices))
			continue
		}
		var ch struct {
			Index        *int                       `json:"index"`
			Delta        map[string]json.RawMessage `json:"delta"`
			FinishReason json.RawMessage            `json:"finish_reason"`
		}
		if err := json.Unmarshal(env.Choices[0], &ch); err != nil {
			bad("choice: %v", err)
			continue
		}
		if ch.Index == nil || *ch.Index != 0 {
			bad("choice index is not 0")
		}
		if ch.Delta == nil {
			bad("no delta")
		}
		if ch.FinishReason == nil {
			bad("no finish_reason key")
		}
		said := false
		role, hasRole := ch.Delta["role"]
		switch {
		case chunks == 1 && !c.resumed && string(role) != `"assistant"`:
			bad(`the first chunk has no delta.role "assistant"`)
		case (chunks > 1 || c.resumed) && hasRole:
			bad("delta.role on a chunk after the stream's first")
		}
		for _, k := range sortedKeys(ch.Delta) {
			v := ch.Delta[k]
			switch k {
			case "role":
			case "content", "reasoning_content", "refusal":
				var s *string
				if err := json.Unmarshal(v, &s); err != nil {
					bad("delta.%s is not a string", k)
					continue
				}
				if s == nil {
					continue
				}
				if *s == "" && !(k == "content" && chunks == 1) {
					bad("an empty delta.%s", k)
				}
				said = said || *s != ""
				switch k {
				case "content":
					obs.text += *s
				case "reasoning_content":
					obs.reasoning += *s
				case "refusal":
					obs.refusal += *s
				}
			case "tool_calls":
				said = true
				validateToolDeltas(v, calls, bad)
			default:
				bad("unknown delta field %q", k)
			}
		}
		if string(ch.FinishReason) != "null" && ch.FinishReason != nil {
			var fr string
			if err := json.Unmarshal(ch.FinishReason, &fr); err != nil || fr == "" {
				bad("finish_reason %s", ch.FinishReason)
			}
			finishes++
			said = true
			obs.finish = finishOf(fr)
		}
		if !said && !(chunks == 1 && hasRole) {
			bad("an empty chunk")
		}
	}
	for i := 0; i < len(calls); i++ {
		if tc, ok := calls[i]; ok {
			obs.toolCalls = append(obs.toolCalls, *tc)
		}
	}
	if c.complete {
		if !done {
			problems = append(problems, "the stream does not end with data: [DONE]")
		}
		if finishes+errFrames != 1 {
			problems = append(problems, fmt.Sprintf("%d finish chunks and %d error frames; want exactly one of them", finishes, errFrames))
		}
		if c.includeUsage && finishes == 1 && usages != 1 {
			problems = append(problems, "include_usage was asked but no usage chunk came")
		}
	}
	return problems
}

// validateToolDeltas checks one delta.tool_calls array and folds it into calls.
func validateToolDeltas(raw json.RawMessage, calls map[int]*toolCall, bad func(string, ...any)) {
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) == 0 {
		bad("delta.tool_calls is not a non-empty array")
		return
	}
	for _, p := range parts {
		var idx *int
		if err := json.Unmarshal(p["index"], &idx); err != nil || idx == nil {
			bad("a tool_calls delta without an index")
			continue
		}
		var fn struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		}
		if f, ok := p["function"]; ok {
			if err := json.Unmarshal(f, &fn); err != nil {
				bad("tool_calls[%d].function: %v", *idx, err)
			}
		}
		_, hasID := p["id"]
		_, hasType := p["type"]
		tc, seen := calls[*idx]
		if !seen {
			if *idx != len(calls) {
				bad("tool call index %d first appears after %d calls (indices are contiguous from 0)", *idx, len(calls))
			}
			var id, typ string
			_ = json.Unmarshal(p["id"], &id)
			_ = json.Unmarshal(p["type"], &typ)
			if id == "" || typ != "function" || fn.Name == nil || *fn.Name == "" {
				bad("the first delta of tool call %d lacks id, type function or name", *idx)
			}
			tc = &toolCall{index: *idx, id: id}
			if fn.Name != nil {
				tc.name = *fn.Name
			}
			calls[*idx] = tc
		} else {
			if hasID || hasType || fn.Name != nil {
				bad("a later delta of tool call %d repeats id, type or name", *idx)
			}
			if fn.Arguments == nil || *fn.Arguments == "" {
				bad("an empty arguments delta for tool call %d", *idx)
			}
		}
		if fn.Arguments != nil {
			tc.args += *fn.Arguments
		}
	}
}

// validateCompletion checks a chat.completion body and fills obs.
func validateCompletion(t *testing.T, obs *observation, body []byte) {
	t.Helper()
	if ct := obs.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("completion Content-Type %q, want application/json", ct)
	}
	var c struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   *int `json:"index"`
			Message struct {
				Role             string  `json:"role"`
				Content          *string `json:"content"`
				Refusal          *string `json:"refusal"`
				ReasoningContent *string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Errorf("completion: %v: %s", err, body)
		return
	}
	if c.ID == "" || c.Object != "chat.completion" || c.Created <= 0 || c.Model != matrixModel || len(c.Choices) != 1 {
		t.Errorf("completion envelope: id=%q object=%q created=%d model=%q choices=%d", c.ID, c.Object, c.Created, c.Model, len(c.Choices))
		if len(c.Choices) != 1 {
			return
		}
	}
	ch := c.Choices[0]
	if ch.Index == nil || *ch.Index != 0 || ch.Message.Role != "assistant" || ch.FinishReason == nil {
		t.Errorf("completion choice: index, role assistant or finish_reason missing: %s", body)
	}
	if ch.Message.Content != nil {
		obs.text = *ch.Message.Content
	}
	if ch.Message.Refusal != nil {
		obs.refusal = *ch.Message.Refusal
	}
	if ch.Message.ReasoningContent != nil {
		obs.reasoning = *ch.Message.ReasoningContent
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" {
			t.Errorf("completion tool call %d lacks id, type function or name", i)
		}
		obs.toolCalls = append(obs.toolCalls, toolCall{index: i, id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
	}
	if ch.FinishReason != nil {
		obs.finish = finishOf(*ch.FinishReason)
	}
	if len(c.Usage) > 0 && string(c.Usage) != "null" {
		u, err := parseUsage(c.Usage)
		if err != nil {
			t.Errorf("completion usage: %v", err)
		}
		obs.usage = u
	}
}

func finishOf(fr string) bridge.StopReason {
	switch fr {
	case "stop":
		return bridge.StopEndTurn
	case "length":
		return bridge.StopMaxTokens
	case "tool_calls":
		return bridge.StopToolUse
	case "content_filter":
		return bridge.StopContentFilter
	case "":
		return ""
	}
	return bridge.StopReason("finish_reason:" + fr)
}

func finishReasonOf(s bridge.StopReason) string {
	switch s {
	case bridge.StopToolUse:
		return "tool_calls"
	case bridge.StopMaxTokens:
		return "length"
	case bridge.StopContentFilter:
		return "content_filter"
	}
	return "stop"
}

// parseOpenAIError reads {"error":{message,type,param,code}}.
func parseOpenAIError(body []byte) (*wireError, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	raw, ok := env["error"]
	if !ok || len(env) != 1 {
		return nil, errors.New(`not an {"error":{...}} object`)
	}
	return parseErrorObject(raw)
}

// parseErrorObject reads {message,type,param,code}: all four keys, message
// and type strings, param and code strings or null.
func parseErrorObject(raw json.RawMessage) (*wireError, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("error is not an object: %w", err)
	}
	e := &wireError{}
	for _, k := range []string{"message", "type", "param", "code"} {
		v, ok := o[k]
		if !ok {
			return nil, fmt.Errorf("error object has no %q", k)
		}
		var s *string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("error.%s is %s, not a string or null", k, v)
		}
		if s == nil && (k == "message" || k == "type") {
			return nil, fmt.Errorf("error.%s is null", k)
		}
		switch k {
		case "message":
			e.message = *s
		case "type":
			e.typ = *s
		case "param":
			e.paramNull = s == nil
			if s != nil {
				e.param = *s
			}
		case "code":
			e.codeNull = s == nil
			if s != nil {
				e.code = *s
			}
		}
	}
	return e, nil
}

func parseUsage(raw json.RawMessage) (*usage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var u struct {
		Prompt     *int64 `json:"prompt_tokens"`
		Completion *int64 `json:"completion_tokens"`
		Total      *int64 `json:"total_tokens"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, err
	}
	if u.Prompt == nil || u.Completion == nil || u.Total == nil {
		return nil, fmt.Errorf("usage %s lacks prompt_tokens, completion_tokens or total_tokens", raw)
	}
	return &usage{in: *u.Prompt, out: *u.Completion, total: *u.Total}, nil
}

// jsonField reads a string at a path of object keys, "" when absent.
func jsonField(data []byte, path ...string) string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// ---- outbound: a Chat Completions upstream ----------------------------------

// openaiUpstream plays a script with openaitest.Server, which writes the
// SSE by hand; a reverse-proxy front in between sees each upstream request's
// context, so a cancellation is observed at the fake upstream itself.
func openaiUpstream(t *testing.T, sc *script) (*fakeUpstream, string) {
	srv := openaitest.New(func(n int, body []byte) openaitest.Reply {
		return openaiReply(sc.call(n, lastUserText(body)))
	})
	t.Cleanup(srv.Close)
	f := newCancelFront(t, srv.URL)
	up := &fakeUpstream{
		configure: func(c *Config) {
			c.Upstreams = []Upstream{{Name: "openai", Dialect: "openai", URL: f.URL + "/v1"}}
		},
		requests: func() []upstreamRequest {
			var out []upstreamRequest
			for _, r := range srv.Requests() {
				out = append(out, parseUpstreamRequest(t, r.Body))
			}
			return out
		},
		cancelled: f.count,
	}
	return up, ""
}

const upstreamChunkID = "chatcmpl-upstream-1"

// openaiReply renders a model call as OpenAI's wire.
func openaiReply(c *modelCall) openaitest.Reply {
	if c.fail != nil {
		return openaitest.Reply{Status: c.fail.status, Body: openaitest.ErrorBody(c.fail.typ, c.fail.message, c.fail.code)}
	}
	ch := &openaitest.Chunks{ID: upstreamChunkID, Model: matrixModel}
	ch.Role()
	ch.Reasoning(c.reasoning...)
	ch.Text(c.text...)
	chunks := ch.List()
	if c.interleave {
		head := &openaitest.Chunks{ID: upstreamChunkID, Model: matrixModel}
		for i, tl := range c.tools {
			head.ToolCall(i, tl.id, tl.name)
		}
		chunks = append(chunks, head.List()...)
		for j := 0; ; j++ {
			more := false
			for i, tl := range c.tools {
				if j < len(tl.fragments) {
					chunks = append(chunks, toolArgChunk(i, tl.fragments[j]))
					more = true
				}
			}
			if !more || j > maxFrames {
				break
			}
		}
	} else {
		tc := &openaitest.Chunks{ID: upstreamChunkID, Model: matrixModel}
		for i, tl := range c.tools {
			tc.ToolCall(i, tl.id, tl.name, tl.fragments...)
		}
		chunks = append(chunks, tc.List()...)
	}
	tail := &openaitest.Chunks{ID: upstreamChunkID, Model: matrixModel}
	rep := openaitest.Reply{Delay: c.delay}
	if c.midError != nil {
		tail.Error(c.midError.typ, c.midError.message)
		rep.NoDone = true
	} else {
		tail.Finish(finishReasonOf(c.stop))
		if c.usage != nil {
			tail.Usage(int(c.usage.in), int(c.usage.out))
		}
	}
	rep.Chunks = append(chunks, tail.List()...)
	return rep
}

// toolArgChunk is an arguments-only tool-call chunk, in openaitest's shape.
func toolArgChunk(index int, fragment string) string {
	f, _ := json.Marshal(fragment)
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":1760000000,"model":%q,"system_fingerprint":"fp_test",`+
		`"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
		upstreamChunkID, matrixModel, index, f)
}

// wireMessages is the messages array of a Chat Completions request.
type wireMessages struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func lastUserText(body []byte) string {
	var w wireMessages
	_ = json.Unmarshal(body, &w)
	for i := len(w.Messages) - 1; i >= 0; i-- {
		if w.Messages[i].Role == "user" {
			return contentText(w.Messages[i].Content)
		}
	}
	return ""
}

func parseUpstreamRequest(t *testing.T, body []byte) upstreamRequest {
	var w wireMessages
	if err := json.Unmarshal(body, &w); err != nil {
		t.Errorf("upstream request body: %v: %s", err, body)
	}
	r := upstreamRequest{model: w.Model}
	for _, m := range w.Messages {
		nm := msg{role: bridge.Role(m.Role), text: contentText(m.Content), toolCallID: m.ToolCallID}
		for i, tc := range m.ToolCalls {
			nm.toolCalls = append(nm.toolCalls, toolCall{index: i, id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
		}
		r.messages = append(r.messages, nm)
	}
	return r
}

// cancelFront is a reverse proxy in front of a fake upstream that counts
// the requests whose context was done (the bridge went away) before the
// reply was complete.
type cancelFront struct {
	*httptest.Server
	mu        sync.Mutex
	cancelled int
	log       syncBuffer // the proxy's complaints, shown when a test fails
}

func (f *cancelFront) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled
}

func (f *cancelFront) saw() {
	f.mu.Lock()
	f.cancelled++
	f.mu.Unlock()
}

func newCancelFront(t *testing.T, target string) *cancelFront {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	f := &cancelFront{}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		Transport: tr,
		ErrorLog:  log.New(&f.log, "front: ", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				f.saw() // gone before the upstream answered
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			// The proxy aborts (panics with http.ErrAbortHandler) when the
			// copy of a streamed reply fails; with the request's context
			// done, the bridge cancelled the upstream call.
			if p := recover(); p != nil {
				if r.Context().Err() != nil {
					f.saw()
				}
				fmt.Fprintf(&f.log, "aborted %s %s: %v (request context: %v)\n", r.Method, r.URL, p, r.Context().Err())
				panic(p)
			}
		}()
		// The body is read whole first: streamed through, its last read
		// (for EOF) can race the server closing it once the reply starts,
		// and the transport then drops the backend connection mid-reply.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "front: reading the request body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		f.Close()
		tr.CloseIdleConnections()
		if l := f.log.String(); t.Failed() && l != "" {
			t.Logf("fake upstream front:\n%s", l)
		}
	})
	return f
}

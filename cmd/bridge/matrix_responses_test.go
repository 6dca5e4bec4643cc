package main

// The responses dialect in the matrix: the inbound client driver (the
// official openai-go client's Responses API, and raw SSE where ids and
// disconnects matter), every stream through the Responses validator
// (responsestest.CheckStream), and the outbound upstream factory
// (responsestest.Server, which writes OpenAI's typed events by hand).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
)

// responsesPairs are the matrix rows of the responses dialect, both ways.
func responsesPairs() []pair {
	rc := responsesClient{chains: &responseChains{m: map[string]responseChain{}}}
	return []pair{
		{inbound: rc, outbound: openaiOut, notes: []string{
			"A Responses client over Chat Completions: the bridge keeps the state. previous_response_id rebuilds the " +
				"session's transcript (function_call_output continues the run waiting for it, in the same run), and the " +
				"upstream gets the whole of it each turn; text, function calls with their call_id and streamed arguments " +
				"byte for byte, reasoning_content as reasoning summaries, usage, and upstream errors with their status, " +
				"type, code and message.",
			"WebSocket mode: each response.create a run, one after another on a connection, store: false ones continued " +
				"from the connection's cache; compaction: the model is asked for a summary, and the compaction item, back " +
				"as input, is that summary as a user message (TestResponsesWebSocket*, TestResponsesCompact, and the Open " +
				"Responses compliance suite, 17 of 17, over this pair).",
		}},
		{inbound: rc, outbound: responsesOut, notes: []string{
			"Same dialect both ways, the bridge keeping the state: the upstream is called with the whole transcript " +
				"as input items and store: false; the fields the hub does not model (include, truncation, built-in tools, " +
				"text.verbosity, reasoning.summary, ...) ride in the request's Extra back to the upstream.",
			"Compaction is the upstream's own (POST /responses/compact, its object passed through as it came), and its " +
				"compaction item, back as input, goes to it whole; an upstream without it (404, 405) gets the summary " +
				"path of the other upstreams (TestResponsesCompactOverResponses). With websocket: true the upstream is " +
				"called in WebSocket mode, whichever way the client came (TestResponsesUpstreamWebSocket).",
		}},
		{inbound: rc, outbound: echoOut},
		{inbound: rc, outbound: anthropicOut, notes: []string{
			"A Responses client over Messages: thinking reaches the client as reasoning summaries (its signature stays " +
				"in the bridge's session transcript and goes back upstream; a stateless client passing items back has " +
				"none to send), instructions as the top-level system, max_output_tokens as max_tokens.",
			"WebSocket mode and compaction as over Chat Completions: the summary is Claude's " +
				"(TestResponsesWebSocketAndCompactOverEachUpstream).",
		}},
		{inbound: rc, outbound: a2aOut, notes: []string{
			"WebSocket mode as over Chat Completions (a continuation sends only the new message into the agent's " +
				"context); compaction asks the agent for the summary in a context of its own, the conversation inlined " +
				"in its first message, and the compaction item, back as input, is that summary as text " +
				"(TestResponsesWebSocketAndCompactOverEachUpstream).",
		}},
		{inbound: rc, outbound: adkOut},
		{inbound: rc, outbound: hermesOut},
		{inbound: openaiClient{}, outbound: responsesOut, notes: []string{
			"Chat Completions over a Responses upstream: messages become input items (tool calls function_call items " +
				"with their call_id, tool messages function_call_output), tools go flat with strict: false (Chat's default), " +
				"text, function calls, reasoning summaries and usage come back; response.failed and error events are the " +
				"upstream's errors.",
		}},
		{inbound: anthropicClient{over: "responses"}, outbound: responsesOut},
		{inbound: a2aInClient{}, outbound: responsesOut},
		{inbound: adkClient{}, outbound: responsesOut},
		{inbound: hermesClient{}, outbound: responsesOut},
	}
}

// ---- inbound: the Responses client ------------------------------------------

// responsesClient drives the responses dialect. A turn with X-Session-Id
// that extends the one before it in the same session is sent as
// previous_response_id and only the new messages, as a Responses client
// chains turns; any other turn sends its whole transcript as input items.
type responsesClient struct{ chains *responseChains }

// responseChains remembers the last response of each (bridge, session).
type responseChains struct {
	mu sync.Mutex
	m  map[string]responseChain
}

type responseChain struct {
	id string
	n  int // the transcript messages it covers, its own answer included
}

func (responsesClient) dialect() string { return "responses" }

func (responsesClient) describe() string {
	return "Responses client: the official Go SDK's Responses API (github.com/openai/openai-go/v3/responses) for " +
		"requests, streams and errors, chaining turns of a session with previous_response_id; raw net/http with an " +
		"SSE reader where event ids and disconnects matter. Every stream is checked by the Responses stream validator " +
		"(responsestest.CheckStream: sequence numbers, item ids and output indices, every .done against its deltas, " +
		"the members the Open Responses schema requires)."
}

func (responsesClient) cannot(string) string { return "" }

func (responsesClient) limits() []string {
	return []string{
		"The hub's reasoning is shown as reasoning summaries (summary_text parts): a provider's signature has no " +
			"place in a Responses stream and is dropped and named (reasoning.signature); encrypted reasoning is the " +
			"item's encrypted_content.",
		"No finish_reason: a completed response with function_call items is a tool stop, max tokens and content " +
			"filters are response.incomplete with their reason; other stop reasons (stop_sequence, pause) are completed.",
		"Built-in tools (web_search, file_search, mcp, ...) and tool_choice forms other than a function reach a " +
			"Responses upstream only (dropped and named elsewhere); conversation, stored prompts and item_reference " +
			"answer 400 unsupported.",
		"Item ids a client sends back are the bridge's own and are not kept; reasoning items passed back statelessly " +
			"cannot reach an upstream (dropped and named); with previous_response_id the session transcript keeps them.",
		"Tool results, artifacts and state updates of an agent upstream, and the agent's own tool calls, have no " +
			"Responses item: dropped and named.",
		"annotations and logprobs are always empty; a message's phase goes back to a Responses upstream only.",
		"Resume: GET /v1/responses/{id}?stream=true&starting_after=N re-renders the response and writes the events " +
			"after N; the run API's Last-Event-ID works too, but the frames one hub event makes share its id, so it " +
			"resumes after all of them.",
		"WebSocket mode and compaction (POST /v1/responses/compact) are served over every upstream but are not " +
			"matrix scenarios: their tests are named in the pairs' notes. Over an upstream without compaction of its " +
			"own the routed model or agent is asked for a summary, and the item's encrypted_content is a reference " +
			"to that run, expanded into the summary when the item comes back.",
	}
}

func (c responsesClient) key(b *bridgeUT, session string) string { return b.url + "|" + session }

// chain returns the previous response a turn continues and the messages it
// covers, or "" and 0.
func (c responsesClient) chain(b *bridgeUT, tr turn) (string, int) {
	if tr.session == "" {
		return "", 0
	}
	c.chains.mu.Lock()
	defer c.chains.mu.Unlock()
	ch, ok := c.chains.m[c.key(b, tr.session)]
	if !ok || len(tr.messages) <= ch.n {
		return "", 0
	}
	return ch.id, ch.n
}

func (c responsesClient) remember(b *bridgeUT, tr turn, id string) {
	if tr.session == "" || id == "" {
		return
	}
	c.chains.mu.Lock()
	c.chains.m[c.key(b, tr.session)] = responseChain{id: id, n: len(tr.messages) + 1}
	c.chains.mu.Unlock()
}

func (responsesClient) sdk(b *bridgeUT, tr turn) openai.Client {
	opts := []option.RequestOption{
		option.WithBaseURL(b.url + "/v1"), option.WithAPIKey("matrix-key"),
		option.WithHTTPClient(recordingClient{b.http}), option.WithMaxRetries(0),
	}
	if tr.session != "" {
		opts = append(opts, option.WithHeader("X-Session-Id", tr.session))
	}
	return openai.NewClient(opts...)
}

func (c responsesClient) params(tr turn, prev string, from int) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: matrixModel}
	if prev != "" {
		p.PreviousResponseID = openai.String(prev)
	}
	var items responses.ResponseInputParam
	for _, m := range tr.messages[from:] {
		switch m.role {
		case bridge.RoleUser:
			items = append(items, responses.ResponseInputItemParamOfMessage(m.text, responses.EasyInputMessageRoleUser))
		case bridge.RoleAssistant:
			if m.text != "" {
				items = append(items, responses.ResponseInputItemParamOfMessage(m.text, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range m.toolCalls {
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(tc.args, tc.id, tc.name))
			}
		case bridge.RoleTool:
			items = append(items, functionCallOutput(m.toolCallID, m.text))
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, td := range tr.tools {
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: td.name, Description: openai.String(td.description), Parameters: td.params, Strict: openai.Bool(false),
		}})
	}
	return p
}

// send runs a turn through the SDK; the recorded bytes are validated and
// normalized, and the SDK's reading is checked against them.
func (c responsesClient) send(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *observation {
	t.Helper()
	cl := c.sdk(b, tr)
	rec := &capture{}
	ctx = withCapture(ctx, rec)
	prev, from := c.chain(b, tr)
	p := c.params(tr, prev, from)
	var obs *observation
	if tr.stream {
		s := cl.Responses.NewStreaming(ctx, p)
		var deltas strings.Builder
		var final *responses.Response
		for i := 0; s.Next(); i++ {
			if i > maxFrames {
				t.Fatalf("more than %d events", maxFrames)
			}
			ev := s.Current()
			switch ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.completed", "response.incomplete", "response.failed":
				r := ev.Response
				final = &r
			}
		}
		serr := s.Err()
		_ = s.Close()
		obs = c.observe(t, rec, tr)
		crossCheckResponses(t, obs, final, deltas.String(), serr)
	} else {
		r, err := cl.Responses.New(ctx, p)
		obs = c.observe(t, rec, tr)
		crossCheckResponses(t, obs, r, "", err)
	}
	if obs.status == http.StatusOK && !obs.errFrame {
		c.remember(b, tr, obs.header.Get("X-Matrix-Response-Id"))
	}
	return obs
}

// observe normalizes a recorded response.
func (responsesClient) observe(t *testing.T, rec *capture, tr turn) *observation {
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
		sum := observeResponsesStream(t, obs, body, responsestest.Check{RunID: obs.runID, Complete: true, Model: matrixModel})
		obs.header.Set("X-Matrix-Response-Id", sum.ResponseID)
	default:
		if !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		sum, problems := responsestest.CheckResponse(body)
		for _, p := range problems {
			t.Errorf("Response object: %s", p)
		}
		fillFromSummary(obs, sum)
		obs.header.Set("X-Matrix-Response-Id", sum.ResponseID)
	}
	return obs
}

// observeResponsesStream validates a Responses stream and fills obs with
// what it says.
func observeResponsesStream(t *testing.T, obs *observation, body []byte, c responsestest.Check) *responsestest.Summary {
	t.Helper()
	obs.frames = bodyFrames(t, body, 0)
	rf, err := responsestest.ParseFrames(body)
	if err != nil && c.Complete {
		t.Errorf("stream: %v", err)
	}
	sum, problems := responsestest.CheckStream(rf, c)
	for _, p := range problems {
		t.Errorf("Responses stream: %s", p)
	}
	if len(problems) > 0 {
		t.Logf("the stream:\n%s", body)
	}
	fillFromSummary(obs, sum)
	return sum
}

// fillFromSummary puts what a stream or a Response object said into obs.
func fillFromSummary(obs *observation, sum *responsestest.Summary) {
	obs.text, obs.reasoning, obs.refusal = sum.Text, sum.Reasoning, sum.Refusal
	for i, c := range sum.Calls {
		obs.toolCalls = append(obs.toolCalls, toolCall{index: i, id: c.CallID, name: c.Name, args: c.Args})
	}
	switch sum.Status {
	case "completed":
		obs.finish = bridge.StopEndTurn
		if len(sum.Calls) > 0 {
			obs.finish = bridge.StopToolUse
		}
	case "incomplete":
		obs.finish = bridge.StopMaxTokens
		if sum.IncompleteReason == "content_filter" {
			obs.finish = bridge.StopContentFilter
		}
	}
	if u := sum.Usage; u != nil && (sum.Status == "completed" || sum.Status == "incomplete") {
		obs.usage = &usage{in: u.Input, out: u.Output, total: u.Total}
	}
	switch {
	case sum.Error != nil:
		obs.errFrame = true
		obs.err = &wireError{typ: sum.Error.Type, code: sum.Error.Code, message: sum.Error.Message, param: sum.Error.Param,
			codeNull: sum.Error.CodeNull, paramNull: sum.Error.Param == ""}
	case sum.Terminal == "response.failed" && sum.ResponseError != nil:
		obs.errFrame = true
		obs.err = &wireError{code: sum.ResponseError.Code, message: sum.ResponseError.Message, paramNull: true}
	}
}

// crossCheckResponses checks that the SDK read the answer as the
// validator did.
func crossCheckResponses(t *testing.T, obs *observation, r *responses.Response, deltas string, err error) {
	t.Helper()
	var ae *openai.Error
	var se *ssestream.StreamError
	switch {
	case obs.status != http.StatusOK:
		if !errors.As(err, &ae) {
			t.Errorf("SDK error %T %v, want *openai.Error", err, err)
			return
		}
		checkSDKError(t, ae, obs.err)
		return
	case obs.errFrame && obs.err != nil && obs.err.typ != "":
		// The error event has a top-level "error": the SDK stops there.
		if !errors.As(err, &se) {
			t.Errorf("SDK stream error %T %v, want *ssestream.StreamError for the error event", err, err)
		} else if m := jsonField(se.Event.Data, "message"); m != obs.err.message {
			t.Errorf("SDK StreamError message %q, the event says %q", m, obs.err.message)
		}
		return
	case err != nil:
		t.Errorf("SDK: %v", err)
		return
	case r == nil:
		t.Errorf("the SDK saw no terminal event")
		return
	}
	if r.OutputText() != obs.text || (deltas != "" && deltas != obs.text) {
		t.Errorf("SDK output text %q (deltas %q), the answer says %q", r.OutputText(), deltas, obs.text)
	}
	var calls []toolCall
	for _, it := range r.Output {
		if it.Type == "function_call" {
			calls = append(calls, toolCall{index: len(calls), id: it.CallID, name: it.Name, args: it.Arguments.OfString})
		}
	}
	if !sameCalls(calls, obs.toolCalls) {
		t.Errorf("SDK function calls %v, the answer says %v", calls, obs.toolCalls)
	}
	if u := obs.usage; u != nil && (r.Usage.InputTokens != u.in || r.Usage.OutputTokens != u.out || r.Usage.TotalTokens != u.total) {
		t.Errorf("SDK usage %+v, the answer says %+v", r.Usage, *u)
	}
}

// open starts a raw streamed request, for reading ids and dropping it.
func (c responsesClient) open(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *liveStream {
	t.Helper()
	prev, from := c.chain(b, tr)
	ls, drop := postStream(ctx, t, b, "/v1/responses", streamBody(t, c.params(tr, prev, from)), tr.session, nil,
		"Authorization", "Bearer matrix-key")
	ls.drop = func(t *testing.T) *observation {
		t.Helper()
		drop()
		obs := ls.observation("X-Session-Id")
		observeResponsesStream(t, obs, ls.text(), responsestest.Check{RunID: ls.runID, Model: matrixModel})
		return obs
	}
	return ls
}

// events reads GET /v1/runs/{run}/events (after lastEventID, when set) to
// the end. A replay from the start is validated whole; a resumed one must
// be exactly the tail of the whole replay, and says what that tail says.
func (c responsesClient) events(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string, tr turn) *observation {
	t.Helper()
	read := func(cursor string) []byte {
		t.Helper()
		resp := getEvents(ctx, t, b, runID, cursor)
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		return body
	}
	full := &observation{status: http.StatusOK, runID: runID}
	fullBody := read("")
	observeResponsesStream(t, full, fullBody, responsestest.Check{RunID: runID, Complete: true, Model: matrixModel})
	if lastEventID == "" {
		return full
	}
	obs := &observation{status: http.StatusOK, runID: runID}
	frames, err := readFrames(bufio.NewReader(bytes.NewReader(read(lastEventID))), maxFrames)
	if err != nil {
		t.Errorf("events of %s: %v", runID, err)
	}
	obs.frames = frames
	if len(frames) > len(full.frames) {
		t.Fatalf("the resumed replay has %d frames, the whole one %d", len(frames), len(full.frames))
	}
	head := len(full.frames) - len(frames)
	for i, f := range frames {
		if fmt.Sprint(f) != fmt.Sprint(full.frames[head+i]) {
			t.Errorf("resumed frame %d is not frame %d of the whole replay:\n  %s\n  %s", i, head+i, f, full.frames[head+i])
		}
		for _, d := range f.data {
			var ev struct {
				Type  string `json:"type"`
				Delta string `json:"delta"`
			}
			if json.Unmarshal([]byte(d), &ev) == nil && ev.Type == "response.output_text.delta" {
				obs.text += ev.Delta
			}
		}
	}
	obs.finish, obs.usage, obs.err, obs.errFrame = full.finish, full.usage, full.err, full.errFrame
	return obs
}

// ---- outbound: a Responses upstream ------------------------------------------

var responsesOut = outboundSide{
	name: "responses",
	describe: "The bridge's Responses client (outbound/responses) against responsestest.Server, a fake upstream " +
		"that writes OpenAI's typed Responses events by hand.",
	play: responsesUpstream,
	limits: func() []string {
		return []string{
			"Call ids the Responses API refuses (empty, or over 64 bytes) are replaced by call_ ids, mapped back by " +
				"the engine.",
			"A Responses stream never interleaves output items: a script's interleaved parallel calls are played one " +
				"after the other, as the real API sends them.",
			"Reasoning goes back upstream only as the reasoning item the upstream made (its id and encrypted_content, " +
				"kept in the session transcript); reasoning from another provider, and signatures, have no Responses " +
				"form and are dropped and named.",
			"Stop sequences, seed and top_k have no Responses field: dropped and named; max_output_tokens is at least 16.",
			"Upstream resume: calls are streamed with store: false, which cannot be re-streamed, so a broken upstream " +
				"stream fails the run. With stateful: true the upstream keeps the chain (previous_response_id and only " +
				"the new input) instead.",
		}
	},
}

// responsesUpstream plays a script with responsestest.Server.
func responsesUpstream(t *testing.T, sc *script) (*fakeUpstream, string) {
	srv := responsestest.New(func(n int, body []byte) responsestest.Reply {
		return responsesReply(sc.call(n, responsesLastUser(body)))
	})
	t.Cleanup(srv.Close)
	up := &fakeUpstream{
		configure: func(c *Config) {
			c.Upstreams = []Upstream{{Name: "responses", Dialect: "responses", URL: srv.BaseURL()}}
		},
		requests: func() []upstreamRequest {
			var out []upstreamRequest
			for _, r := range srv.Requests() {
				out = append(out, parseResponsesRequest(t, r.Body))
			}
			return out
		},
		cancelled: srv.Cancelled,
	}
	return up, ""
}

// responsesReply renders a model call as OpenAI's Responses wire.
func responsesReply(c *modelCall) responsestest.Reply {
	if c.fail != nil {
		return responsestest.Reply{Status: c.fail.status, Body: responsestest.ErrorBody(c.fail.typ, c.fail.message, c.fail.code)}
	}
	e := &responsestest.Events{ID: "resp_upstream_1", Model: matrixModel}
	e.Created()
	if len(c.reasoning) > 0 {
		e.Reasoning("", c.reasoning...)
	}
	if len(c.text) > 0 {
		e.Text(c.text...)
	}
	for _, tl := range c.tools {
		e.FunctionCall(tl.id, tl.name, tl.fragments...)
	}
	var in, out int
	if c.usage != nil {
		in, out = int(c.usage.in), int(c.usage.out)
	}
	switch {
	case c.midError != nil:
		// A model failure mid-answer, as the API reports one.
		e.Failed("server_error", c.midError.message)
	case c.stop == bridge.StopMaxTokens:
		e.Incomplete("max_output_tokens", in, out)
	case c.usage == nil:
		e.CompletedWithoutUsage()
	default:
		e.Completed(in, out)
	}
	return responsestest.Reply{Events: e.List(), Delay: c.delay}
}

// responsesWire is the input of a create-response request.
type responsesWire struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Args    string          `json:"arguments"`
	Output  json.RawMessage `json:"output"`
}

// responsesText is the text of a content or output value: a string, or
// the text of its parts.
func responsesText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func responsesItems(body []byte) (string, []responsesItem) {
	var w responsesWire
	_ = json.Unmarshal(body, &w)
	var s string
	if json.Unmarshal(w.Input, &s) == nil {
		return w.Model, []responsesItem{{Type: "message", Role: "user", Content: w.Input}}
	}
	var items []responsesItem
	_ = json.Unmarshal(w.Input, &items)
	return w.Model, items
}

func responsesLastUser(body []byte) string {
	_, items := responsesItems(body)
	for i := len(items) - 1; i >= 0; i-- {
		if (items[i].Type == "message" || items[i].Type == "") && items[i].Role == "user" {
			return responsesText(items[i].Content)
		}
	}
	return ""
}

// parseResponsesRequest reads input items back into transcript messages:
// function_call items join the assistant message before them.
func parseResponsesRequest(t *testing.T, body []byte) upstreamRequest {
	if !json.Valid(body) {
		t.Errorf("upstream request body is not JSON: %s", body)
	}
	model, items := responsesItems(body)
	r := upstreamRequest{model: model}
	for _, it := range items {
		switch it.Type {
		case "message", "":
			r.messages = append(r.messages, msg{role: bridge.Role(it.Role), text: responsesText(it.Content)})
		case "function_call":
			if n := len(r.messages); n == 0 || r.messages[n-1].role != bridge.RoleAssistant {
				r.messages = append(r.messages, msg{role: bridge.RoleAssistant})
			}
			m := &r.messages[len(r.messages)-1]
			m.toolCalls = append(m.toolCalls, toolCall{index: len(m.toolCalls), id: it.CallID, name: it.Name, args: it.Args})
		case "function_call_output":
			r.messages = append(r.messages, msg{role: bridge.RoleTool, text: responsesText(it.Output), toolCallID: it.CallID})
		}
	}
	return r
}

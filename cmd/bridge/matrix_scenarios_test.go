package main

// The matrix's scenarios. Each speaks only the neutral shapes (turn, script,
// observation): the pair's client driver and upstream factory translate.

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/echo"
)

func matrixScenarios() []scenario {
	return []scenario{
		{"stream_text", "Streamed text",
			"a streamed answer with include_usage: the exact text, finish reason stop, the usage chunk after the finish chunk; the run completed.",
			scenarioStreamText},
		{"complete_text", "Non-streamed text",
			"the same answer as one response: exact text, finish reason, usage; the run completed.",
			scenarioCompleteText},
		{"tool_round_trip", "Tool call round trip",
			"the model calls a tool, its arguments streamed in fragments; the run waits in input_required; the client sends " +
				"the result with the same X-Session-Id and the model answers; both requests are one run (the same X-Run-Id), " +
				"and the upstream gets the call and its result back.",
			scenarioToolRoundTrip},
		{"tool_args_split", "Tool arguments split at every byte offset",
			"the arguments `" + splitArgs + "` arrive in two fragments split at each byte offset (streamed and not); the client " +
				"gets them byte for byte. Offsets inside a multi-byte character cannot be sent as JSON strings and are left out.",
			scenarioToolArgsSplit},
		{"parallel_tools", "Parallel tool calls",
			"two calls whose argument fragments interleave keep their indices, ids, names and arguments; both results continue the same run.",
			scenarioParallelTools},
		{"reasoning", "Reasoning",
			"reasoning deltas reach the client as reasoning, apart from the answer text (streamed and not).",
			scenarioReasoning},
		{"error_before_first_byte", "Upstream error before the first byte",
			"400, 429, 500 and 503 from the upstream reach the client with the same status and error object " +
				"(type, code, message), streamed and not; a 401 (the upstream refused the bridge's own key) is a 502 " +
				"that says so, with none of the upstream's text; the run is failed.",
			scenarioErrorBeforeFirstByte},
		{"error_mid_stream", "Upstream error mid-stream",
			"an in-stream error after some text: a streaming client gets the text, then an error frame; a non-streaming " +
				"client gets 502 with the upstream's error; the run is failed.",
			scenarioErrorMidStream},
		{"client_cancel", "Client cancel",
			"a client without X-Session-Id drops its stream: the upstream request is cancelled (seen at the fake upstream " +
				"as its request context done) and the run ends cancelled; its replay ends in an error frame.",
			scenarioClientCancel},
		{"resume", "Resume after disconnect",
			"with X-Session-Id, the client reads 5 events and drops the connection; GET /v1/runs/{run}/events with " +
				"Last-Event-ID set to the 5th event's id gives exactly the remaining events (no gap, no duplicate); the run completes.",
			scenarioResume},
	}
}

// ---- checks -----------------------------------------------------------------

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// expectOK checks a successful answer and its bridge headers.
func expectOK(t *testing.T, obs *observation) {
	t.Helper()
	if obs.status != 200 || obs.err != nil {
		t.Fatalf("status %d, error %v; want 200 and no error", obs.status, obs.err)
	}
	if obs.runID == "" {
		t.Errorf("no X-Run-Id header")
	}
	if obs.sessionID == "" {
		t.Errorf("no X-Session-Id header")
	}
}

func expectUsage(t *testing.T, got, want *usage) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("usage %+v, want %+v", got, want)
	case *got != *want:
		t.Errorf("usage %+v, want %+v", *got, *want)
	}
}

func expectCalls(t *testing.T, what string, got, want []toolCall) {
	t.Helper()
	if !sameCalls(got, want) {
		t.Errorf("%s: tool calls\n  got  %v\n  want %v", what, got, want)
	}
}

// expectUpstreamMessages checks the transcript the upstream got on its n-th
// request, when the upstream can be seen.
func expectUpstreamMessages(t *testing.T, up *fakeUpstream, n int, want []msg) {
	t.Helper()
	if up.requests == nil {
		return
	}
	reqs := up.requests()
	if len(reqs) <= n {
		t.Errorf("the upstream got %d requests, want at least %d", len(reqs), n+1)
		return
	}
	got := reqs[n].messages
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("upstream request %d: messages\n  got  %+v\n  want %+v", n, got, want)
	}
}

func expectUpstreamRequests(t *testing.T, up *fakeUpstream, n int) {
	t.Helper()
	if up.requests != nil {
		eq(t, "upstream requests", len(up.requests()), n)
	}
}

// pieces cuts text into word pieces that concatenate back to it.
func pieces(text string) []string { return echo.Split(text) }

var weatherTool = toolDef{name: "get_weather", description: "Current weather for a city",
	params: map[string]any{"type": "object", "properties": map[string]any{
		"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}, "note": map[string]any{"type": "string"},
	}, "required": []string{"city"}}}

var timeTool = toolDef{name: "get_time", description: "Local time in a time zone",
	params: map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}}}

// ---- scenarios --------------------------------------------------------------

const textInput = "Hello from the matrix: \"quoted\", ü and ✓, a tab\tthen done."

func textScript() *script {
	return &script{input: textInput, calls: []modelCall{{text: pieces(textInput), stop: bridge.StopEndTurn, usage: wordUsage(textInput)}}}
}

func scenarioStreamText(h *harness) {
	t := h.t
	up := h.upstream(textScript())
	b := startBridge(t, up)
	obs := h.client.send(h.ctx, t, b, turn{messages: []msg{userMsg(textInput)}, stream: true, includeUsage: true})
	expectOK(t, obs)
	eq(t, "text", obs.text, textInput)
	eq(t, "reasoning", obs.reasoning, "")
	eq(t, "finish", obs.finish, bridge.StopEndTurn)
	expectCalls(t, "answer", obs.toolCalls, nil)
	expectUsage(t, obs.usage, wordUsage(textInput))
	r := b.waitRun(h.ctx, t, obs.runID, bridge.StatusCompleted)
	eq(t, "run stop reason", r.StopReason, bridge.StopEndTurn)
	eq(t, "run session", r.SessionID, obs.sessionID)
	expectUpstreamMessages(t, up, 0, []msg{userMsg(textInput)})
	expectUpstreamRequests(t, up, 1)
}

func scenarioCompleteText(h *harness) {
	t := h.t
	up := h.upstream(textScript())
	b := startBridge(t, up)
	obs := h.client.send(h.ctx, t, b, turn{messages: []msg{userMsg(textInput)}})
	expectOK(t, obs)
	eq(t, "text", obs.text, textInput)
	eq(t, "finish", obs.finish, bridge.StopEndTurn)
	expectCalls(t, "answer", obs.toolCalls, nil)
	expectUsage(t, obs.usage, wordUsage(textInput))
	b.waitRun(h.ctx, t, obs.runID, bridge.StatusCompleted)
	expectUpstreamMessages(t, up, 0, []msg{userMsg(textInput)})
}

func scenarioToolRoundTrip(h *harness) {
	t := h.t
	const (
		question = "What is the weather in Paris?"
		args     = `{"city":"Paris","unit":"celsius"}`
		result   = `{"temp_c":21,"sky":"clear"}`
		answer   = "It is 21 °C and clear in Paris."
		callID   = "call_weather_1"
		session  = "sess_matrix_tool_round_trip"
	)
	frags := []string{`{"city":`, `"Paris","unit"`, `:"celsius"}`}
	up := h.upstream(&script{input: question, calls: []modelCall{
		{tools: []scriptTool{{id: callID, name: weatherTool.name, fragments: frags}}, stop: bridge.StopToolUse, usage: &usage{12, 9, 21}},
		{text: pieces(answer), stop: bridge.StopEndTurn, usage: &usage{40, 11, 51}},
	}})
	b := startBridge(t, up)
	tools := []toolDef{weatherTool}

	first := h.client.send(h.ctx, t, b, turn{session: session, messages: []msg{userMsg(question)}, tools: tools, stream: true})
	expectOK(t, first)
	eq(t, "X-Session-Id", first.sessionID, session)
	call := toolCall{index: 0, id: callID, name: weatherTool.name, args: args}
	expectCalls(t, "first answer", first.toolCalls, []toolCall{call})
	eq(t, "first finish", first.finish, bridge.StopToolUse)
	eq(t, "first text", first.text, "")
	b.waitRun(h.ctx, t, first.runID, bridge.StatusInputRequired)

	transcript := []msg{
		userMsg(question),
		{role: bridge.RoleAssistant, toolCalls: first.toolCalls},
		{role: bridge.RoleTool, text: result, toolCallID: callID},
	}
	// The second request asks for usage, the first did not: each response
	// is rendered as its own request asked.
	second := h.client.send(h.ctx, t, b, turn{session: session, messages: transcript, tools: tools, stream: true, includeUsage: true})
	expectOK(t, second)
	expectUsage(t, second.usage, &usage{40, 11, 51})
	if second.runID != first.runID {
		t.Errorf("the tool result started run %s; want it to continue run %s (one run per tool loop)", second.runID, first.runID)
	}
	eq(t, "second X-Session-Id", second.sessionID, session)
	eq(t, "answer", second.text, answer)
	eq(t, "second finish", second.finish, bridge.StopEndTurn)
	expectCalls(t, "second answer", second.toolCalls, nil)
	b.waitRun(h.ctx, t, first.runID, bridge.StatusCompleted)
	expectUpstreamMessages(t, up, 1, transcript)
	expectUpstreamRequests(t, up, 2)
}

// splitArgs are the arguments the byte-offset scenario splits: escapes and
// a two-byte character, where a wrong split shows.
const splitArgs = `{"city":"Paris","note":"a \"q\" ü"}`

func scenarioToolArgsSplit(h *harness) {
	t := h.t
	var offsets []int
	skipped := 0
	for i := 0; i <= len(splitArgs); i++ {
		if i < len(splitArgs) && !utf8.RuneStart(splitArgs[i]) {
			skipped++ // inside ü: no JSON string holds half a character
			continue
		}
		offsets = append(offsets, i)
	}
	calls := make([]modelCall, len(offsets))
	for k, off := range offsets {
		calls[k] = modelCall{
			tools: []scriptTool{{id: fmt.Sprintf("call_split_%02d", off), name: weatherTool.name,
				fragments: []string{splitArgs[:off], splitArgs[off:]}}},
			stop: bridge.StopToolUse,
		}
	}
	sc := &script{input: "split 0", calls: calls, pick: func(_ int, lastUser string) int {
		var k int
		if _, err := fmt.Sscanf(lastUser, "split %d", &k); err != nil {
			return 0
		}
		return k
	}}
	up := h.upstream(sc)
	b := startBridge(t, up) // one bridge for every offset
	t.Logf("%d offsets, %d inside a multi-byte character left out", len(offsets), skipped)
	for k, off := range offsets {
		want := []toolCall{{index: 0, id: fmt.Sprintf("call_split_%02d", off), name: weatherTool.name, args: splitArgs}}
		t.Run(fmt.Sprintf("offset_%02d", off), func(t *testing.T) {
			for _, stream := range []bool{true, false} {
				obs := h.client.send(h.ctx, t, b, turn{messages: []msg{userMsg(fmt.Sprintf("split %d", k))}, tools: []toolDef{weatherTool}, stream: stream})
				expectOK(t, obs)
				expectCalls(t, fmt.Sprintf("stream=%v", stream), obs.toolCalls, want)
				eq(t, "finish", obs.finish, bridge.StopToolUse)
			}
		})
	}
	expectUpstreamRequests(t, up, 2*len(offsets))
}

func scenarioParallelTools(h *harness) {
	t := h.t
	const (
		question = "Weather and time in Paris?"
		answer   = "At 14:00 it is 21 °C in Paris."
		session  = "sess_matrix_parallel"
	)
	a := scriptTool{id: "call_a", name: weatherTool.name, fragments: []string{`{"ci`, `ty":"Pa`, `ris"}`}}
	c := scriptTool{id: "call_b", name: timeTool.name, fragments: []string{`{"tz":`, `"Europe/Paris"}`}}
	up := h.upstream(&script{input: question, calls: []modelCall{
		{tools: []scriptTool{a, c}, interleave: true, stop: bridge.StopToolUse},
		{text: pieces(answer), stop: bridge.StopEndTurn},
	}})
	b := startBridge(t, up)
	tools := []toolDef{weatherTool, timeTool}
	first := h.client.send(h.ctx, t, b, turn{session: session, messages: []msg{userMsg(question)}, tools: tools, stream: true})
	expectOK(t, first)
	want := []toolCall{
		{index: 0, id: "call_a", name: weatherTool.name, args: a.args()},
		{index: 1, id: "call_b", name: timeTool.name, args: c.args()},
	}
	expectCalls(t, "parallel calls", first.toolCalls, want)
	eq(t, "finish", first.finish, bridge.StopToolUse)
	b.waitRun(h.ctx, t, first.runID, bridge.StatusInputRequired)

	transcript := []msg{
		userMsg(question),
		{role: bridge.RoleAssistant, toolCalls: first.toolCalls},
		{role: bridge.RoleTool, text: `{"temp_c":21}`, toolCallID: "call_a"},
		{role: bridge.RoleTool, text: `{"time":"14:00"}`, toolCallID: "call_b"},
	}
	second := h.client.send(h.ctx, t, b, turn{session: session, messages: transcript, tools: tools, stream: true})
	expectOK(t, second)
	if second.runID != first.runID {
		t.Errorf("the tool results started run %s; want them to continue run %s", second.runID, first.runID)
	}
	eq(t, "answer", second.text, answer)
	b.waitRun(h.ctx, t, first.runID, bridge.StatusCompleted)
	expectUpstreamMessages(t, up, 1, transcript)
}

func scenarioReasoning(h *harness) {
	t := h.t
	const question = "What is six times seven?"
	reasoning := []string{"Six ", "times seven ", "is 42; ", "\"check\": ü."}
	answer := []string{"The answer ", "is 42."}
	up := h.upstream(&script{input: question, calls: []modelCall{
		{reasoning: reasoning, text: answer, stop: bridge.StopEndTurn, usage: &usage{8, 20, 28}},
	}})
	b := startBridge(t, up)
	for _, stream := range []bool{true, false} {
		obs := h.client.send(h.ctx, t, b, turn{messages: []msg{userMsg(question)}, stream: stream, includeUsage: stream})
		expectOK(t, obs)
		eq(t, fmt.Sprintf("reasoning (stream=%v)", stream), obs.reasoning, strings.Join(reasoning, ""))
		eq(t, fmt.Sprintf("text (stream=%v)", stream), obs.text, strings.Join(answer, ""))
		eq(t, "finish", obs.finish, bridge.StopEndTurn)
		expectUsage(t, obs.usage, &usage{8, 20, 28})
		b.waitRun(h.ctx, t, obs.runID, bridge.StatusCompleted)
	}
}

// upstreamErrors are the errors the before-first-byte scenario plays.
var upstreamErrors = []wireError{
	{status: 400, typ: "invalid_request_error", code: "invalid_value", message: "Invalid value for 'temperature': 3 is above 2."},
	{status: 401, typ: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided."},
	{status: 429, typ: "rate_limit_error", code: "rate_limit_exceeded", message: "Rate limit reached for requests."},
	{status: 500, typ: "server_error", message: "The server had an error while processing your request."},
	{status: 503, typ: "server_error", code: "overloaded", message: "The engine is currently overloaded."},
}

func scenarioErrorBeforeFirstByte(h *harness) {
	t := h.t
	// An upstream and a bridge of their own for each request: the
	// upstream's circuit breaker starts closed, so what is checked is the
	// pass-through, whatever the retries before it. (The upstreams are made
	// here, in the scenario's test, which a not-applicable answer skips.)
	ups := make([][2]*fakeUpstream, len(upstreamErrors))
	for k := range upstreamErrors {
		for m := range ups[k] {
			ups[k][m] = h.upstream(&script{input: fmt.Sprintf("fail %d", k), calls: []modelCall{{fail: &upstreamErrors[k]}}})
		}
	}
	for k, want := range upstreamErrors {
		t.Run(fmt.Sprintf("status_%d", want.status), func(t *testing.T) {
			for m, stream := range []bool{true, false} {
				input := fmt.Sprintf("fail %d", k)
				b := startBridge(t, ups[k][m])
				obs := h.client.send(h.ctx, t, b, turn{messages: []msg{userMsg(input)}, stream: stream})
				if obs.err == nil || obs.errFrame {
					t.Fatalf("stream=%v: status %d, error %v; want an error response", stream, obs.status, obs.err)
				}
				if want.status == 401 { // not the client's own key: a bad gateway (issue 15)
					eq(t, fmt.Sprintf("status (stream=%v)", stream), obs.status, 502)
					eq(t, "error type", obs.err.typ, "server_error")
					eq(t, "error code is null", obs.err.codeNull, true)
					eq(t, "error message says the upstream refused", strings.HasPrefix(obs.err.message, outbound.Refused), true)
				} else {
					eq(t, fmt.Sprintf("status (stream=%v)", stream), obs.status, want.status)
					eq(t, "error type", obs.err.typ, want.typ)
					eq(t, "error code", obs.err.code, want.code)
					eq(t, "error code is null", obs.err.codeNull, want.code == "")
					eq(t, "error message", obs.err.message, want.message)
				}
				if obs.runID == "" {
					t.Errorf("no X-Run-Id on the error response")
				} else {
					b.waitRun(h.ctx, t, obs.runID, bridge.StatusFailed)
				}
			}
		})
	}
}

func scenarioErrorMidStream(h *harness) {
	t := h.t
	const question = "Tell me a long story."
	text := []string{"Once ", "upon ", "a time"}
	fail := &wireError{typ: "server_error", message: "The model crashed mid-answer."}
	up := h.upstream(&script{input: question, calls: []modelCall{{text: text, midError: fail}}})
	b := startBridge(t, up)

	obs := h.client.send(h.ctx, t, b, turn{messages: []msg{userMsg(question)}, stream: true, includeUsage: true})
	eq(t, "status", obs.status, 200)
	if !obs.errFrame || obs.err == nil {
		t.Fatalf("no error frame in the stream (error %v)", obs.err)
	}
	eq(t, "text before the error", obs.text, strings.Join(text, ""))
	eq(t, "error frame type", obs.err.typ, fail.typ)
	eq(t, "error frame message", obs.err.message, fail.message)
	eq(t, "finish", obs.finish, bridge.StopReason(""))
	b.waitRun(h.ctx, t, obs.runID, bridge.StatusFailed)

	obs = h.client.send(h.ctx, t, b, turn{messages: []msg{userMsg(question)}})
	if obs.err == nil || obs.errFrame {
		t.Fatalf("non-streamed: status %d, error %v; want an error response", obs.status, obs.err)
	}
	eq(t, "non-streamed status", obs.status, 502)
	eq(t, "non-streamed error type", obs.err.typ, fail.typ)
	eq(t, "non-streamed error message", obs.err.message, fail.message)
	b.waitRun(h.ctx, t, obs.runID, bridge.StatusFailed)
}

// slowText is a long answer paced by delay, for disconnects.
func slowText(prefix string, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return strings.Join(w, " ")
}

func scenarioClientCancel(h *harness) {
	t := h.t
	input := slowText("w", 150)
	up := h.upstream(&script{input: input, calls: []modelCall{
		{text: pieces(input), stop: bridge.StopEndTurn, usage: wordUsage(input), delay: 10 * time.Millisecond},
	}})
	b := startBridge(t, up)
	tr := turn{messages: []msg{userMsg(input)}, stream: true}
	ls := h.client.open(h.ctx, t, b, tr)
	if ls.runID == "" {
		t.Fatal("no X-Run-Id")
	}
	for range 3 {
		ls.next(t)
	}
	head := ls.drop(t)
	if up.cancelled != nil {
		waitFor(h.ctx, t, "the upstream request's context to be done", func() bool { return up.cancelled() >= 1 })
		eq(t, "cancelled upstream requests", up.cancelled(), 1)
	}
	expectUpstreamRequests(t, up, 1)
	r := b.waitRun(h.ctx, t, ls.runID, bridge.StatusCancelled)
	if r.Reason == "" {
		t.Errorf("the cancelled run has no reason")
	}
	rep := h.client.events(h.ctx, t, b, ls.runID, "", tr)
	if !rep.errFrame {
		t.Errorf("the replay of a cancelled run does not end in an error frame")
	}
	if !strings.HasPrefix(rep.text, head.text) || !strings.HasPrefix(input, rep.text) || len(rep.text) >= len(input) {
		t.Errorf("replayed text %q: want a proper prefix of the answer that extends what the client read (%q)", rep.text, head.text)
	}
}

func scenarioResume(h *harness) {
	t := h.t
	const session = "sess_matrix_resume"
	input := slowText("r", 24)
	up := h.upstream(&script{input: input, calls: []modelCall{
		{text: pieces(input), stop: bridge.StopEndTurn, usage: wordUsage(input), delay: 10 * time.Millisecond},
	}})
	b := startBridge(t, up)
	tr := turn{session: session, messages: []msg{userMsg(input)}, stream: true, includeUsage: true}
	ls := h.client.open(h.ctx, t, b, tr)
	for i := range 5 {
		if f := ls.next(t); !f.hasID {
			t.Fatalf("frame %d has no event id", i+1)
		}
	}
	head := ls.drop(t)
	fifth := head.frames[4].id
	rest := h.client.events(h.ctx, t, b, ls.runID, fifth, tr)
	b.waitRun(h.ctx, t, ls.runID, bridge.StatusCompleted)
	full := h.client.events(h.ctx, t, b, ls.runID, "", tr)

	eq(t, "text read before the drop + text resumed", head.text+rest.text, input)
	eq(t, "text of the whole replay", full.text, input)
	eq(t, "finish after resume", rest.finish, bridge.StopEndTurn)
	expectUsage(t, rest.usage, wordUsage(input))

	headIDs, restIDs, fullIDs := head.ids(), rest.ids(), full.ids()
	if len(fullIDs) < 6 {
		t.Fatalf("the whole replay has %d event ids", len(fullIDs))
	}
	eq(t, "ids read before the drop", strings.Join(headIDs, " "), strings.Join(fullIDs[:5], " "))
	eq(t, "ids resumed after "+fifth, strings.Join(restIDs, " "), strings.Join(fullIDs[5:], " "))
	for i := range 5 {
		eq(t, fmt.Sprintf("frame %d as first sent and as replayed", i+1), fmt.Sprint(head.frames[i]), fmt.Sprint(full.frames[i]))
	}
	// The seam: the first resumed event is the one right after the 5th.
	_, s5, _ := bridge.ParseEventID(fifth)
	if len(restIDs) > 0 {
		_, s6, _ := bridge.ParseEventID(restIDs[0])
		eq(t, "seq of the first resumed event", s6, s5+1)
	}
}

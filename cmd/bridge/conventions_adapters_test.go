package main

// The four chatkit adapters as client shims: each sends exactly the
// requests its chatkit adapter sends (the conventions digest,
// shared/protocols/chatkit-conventions.md, and the two seed pages), and
// reads the stream and the history the way that adapter reads them. Where
// the conventions leave a request to the integrator, the shim uses the
// bridge's answer to it, named in about().

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// convAdapter is one chatkit adapter.
type convAdapter interface {
	name() string
	about() string
	// session makes the session ready on the front bridge (where the
	// protocol creates sessions) and returns it.
	session(ctx context.Context, t *testing.T, c *chain, id string) *convSession
	// start sends a turn: the user's text (or, with o.toolResults, the
	// results of the run's tool calls).
	start(ctx context.Context, t *testing.T, c *chain, s *convSession, text string, o turnOpts) *convStream
	// runOf is the run id the adapter takes from the stream so far ("" when
	// not yet known).
	runOf(st *convStream) string
	// answer is the assistant text of the frames, as the adapter shows it.
	answer(frames []sseFrame) string
	// ended says the frames hold the stream's end (an outcome and, where the
	// protocol has one, its end marker).
	ended(frames []sseFrame) bool
	resume(ctx context.Context, t *testing.T, c *chain, s *convSession, run, eventID string) *convStream
	stop(ctx context.Context, t *testing.T, c *chain, s *convSession, run string)
	steer(ctx context.Context, t *testing.T, c *chain, s *convSession, run, text string)
	history(ctx context.Context, t *testing.T, c *chain, s *convSession) *convHistory
}

// toolCalling is an adapter whose client declares tools and runs them.
type toolCalling interface {
	toolCalls(frames []sseFrame) []toolCall
}

// agentToolAnswering is an adapter whose client declares no tools but
// answers the calls an agent makes of the client's tools (A2A's
// input-required task with function_call data parts, ADK's long-running
// functionCall).
type agentToolAnswering interface {
	agentToolCalls(frames []sseFrame) []toolCall
	// answerTools sends the calls' results, one text for all, and returns
	// the stream that continues the run.
	answerTools(ctx context.Context, t *testing.T, c *chain, s *convSession, run string, calls []toolCall, result string) *convStream
}

// turnOpts vary a turn.
type turnOpts struct {
	// replaceFrom discards that run and every later one (X-Replace-From).
	replaceFrom string
	// transcript, for a stateless adapter, is what it sends before the new
	// text; nil: the session's transcript so far.
	transcript []msg
	tools      bool
	// toolResults answer the run's tool calls instead of a user text.
	toolResults []msg
}

// convSession is a chat of one adapter.
type convSession struct {
	id         string
	app        string
	transcript []msg // what a stateless adapter resends
}

// record adds a finished turn to the transcript.
func (s *convSession) record(user, answer string) {
	s.transcript = append(s.transcript, userMsg(user), msg{role: bridge.RoleAssistant, text: answer})
}

// convHistory is a history page, normalized.
type convHistory struct {
	runs     []histRun
	messages []histMsg
	// cursor and partial are the running run's resume cursor and the
	// assistant text the history holds of it.
	running, cursor, partial string
}

type histRun struct {
	id     string
	status string // running, completed, ... (bridge.Status words)
}

type histMsg struct {
	role  bridge.Role
	text  string
	runID string
}

func (h *convHistory) runIDs() []string {
	var out []string
	for _, r := range h.runs {
		out = append(out, r.id)
	}
	return out
}

func (h *convHistory) texts(role bridge.Role) []string {
	var out []string
	for _, m := range h.messages {
		if m.role == role && m.text != "" {
			out = append(out, m.text)
		}
	}
	return out
}

var convSeq atomic.Int64

func convID(prefix string) string { return fmt.Sprintf("%s-%d", prefix, convSeq.Add(1)) }

// decodeJSON unmarshals data, failing the test with what it was.
func decodeJSON(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, data)
	}
}

// ---- OpenAI-compatible ---------------------------------------------------------

// openaiAdapter is chatkit's OpenAI-compatible adapter: Chat Completions
// with the whole transcript and X-Session-Id; stop, resume and steer
// through the run API; history ?format=openai.
type openaiAdapter struct{}

func (openaiAdapter) name() string { return "openai" }

func (openaiAdapter) about() string {
	return "POST /v1/chat/completions (stream, the whole transcript, `X-Session-Id`; `X-Replace-From` to regenerate or edit); " +
		"the run from `X-Run-Id`; stop `POST /v1/runs/{run}/cancel`; resume `GET /v1/runs/{run}/events` with `Last-Event-ID`; " +
		"steer `POST /v1/runs/{run}/steer`; history `GET /v1/sessions/{s}/history?format=openai` (`runs[].last_event_id`)"
}

func (openaiAdapter) session(_ context.Context, _ *testing.T, _ *chain, id string) *convSession {
	return &convSession{id: id}
}

func (openaiAdapter) start(ctx context.Context, t *testing.T, c *chain, s *convSession, text string, o turnOpts) *convStream {
	t.Helper()
	prior := s.transcript
	if o.transcript != nil {
		prior = o.transcript
	}
	var msgs []map[string]any
	for _, m := range prior {
		msgs = append(msgs, openaiMessage(m))
	}
	if o.toolResults != nil {
		for _, m := range o.toolResults {
			msgs = append(msgs, openaiMessage(m))
		}
	} else {
		msgs = append(msgs, openaiMessage(userMsg(text)))
	}
	body := map[string]any{"model": convModelName, "stream": true, "stream_options": map[string]any{"include_usage": true}, "messages": msgs}
	if o.tools {
		body["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	}
	h := map[string]string{"X-Session-Id": s.id, "Accept": "text/event-stream"}
	if o.replaceFrom != "" {
		h["X-Replace-From"] = o.replaceFrom
	}
	return openStream(ctx, t, "POST", c.front+"/v1/chat/completions", body, h)
}

func openaiMessage(m msg) map[string]any {
	out := map[string]any{"role": string(m.role), "content": m.text}
	if len(m.toolCalls) > 0 {
		var calls []any
		for _, tc := range m.toolCalls {
			calls = append(calls, map[string]any{"id": tc.id, "type": "function", "function": map[string]any{"name": tc.name, "arguments": tc.args}})
		}
		out["tool_calls"] = calls
		if m.text == "" {
			out["content"] = nil
		}
	}
	if m.role == bridge.RoleTool {
		out["tool_call_id"] = m.toolCallID
	}
	return out
}

func (openaiAdapter) runOf(st *convStream) string { return st.resp.Header.Get("X-Run-Id") }

type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

func (openaiAdapter) chunks(frames []sseFrame) []chatChunk {
	var out []chatChunk
	for _, f := range frames {
		if f.data == "" || f.data == "[DONE]" {
			continue
		}
		var c chatChunk
		if json.Unmarshal([]byte(f.data), &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

func (a openaiAdapter) answer(frames []sseFrame) string {
	var b strings.Builder
	for _, c := range a.chunks(frames) {
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String()
}

func (a openaiAdapter) toolCalls(frames []sseFrame) []toolCall {
	var calls []toolCall
	for _, c := range a.chunks(frames) {
		for _, ch := range c.Choices {
			for _, d := range ch.Delta.ToolCalls {
				for len(calls) <= d.Index {
					calls = append(calls, toolCall{index: len(calls)})
				}
				tc := &calls[d.Index]
				if d.ID != "" {
					tc.id = d.ID
				}
				if d.Function.Name != "" {
					tc.name = d.Function.Name
				}
				tc.args += d.Function.Arguments
			}
		}
	}
	return calls
}

func (openaiAdapter) ended(frames []sseFrame) bool {
	return len(frames) > 0 && frames[len(frames)-1].data == "[DONE]"
}

func (openaiAdapter) resume(ctx context.Context, t *testing.T, c *chain, _ *convSession, run, eventID string) *convStream {
	t.Helper()
	return openStream(ctx, t, "GET", c.front+"/v1/runs/"+run+"/events", nil, map[string]string{"Last-Event-ID": eventID})
}

func (openaiAdapter) stop(ctx context.Context, t *testing.T, c *chain, _ *convSession, run string) {
	t.Helper()
	runAPI(ctx, t, c, "cancel", run, nil)
}

func (openaiAdapter) steer(ctx context.Context, t *testing.T, c *chain, _ *convSession, run, text string) {
	t.Helper()
	runAPI(ctx, t, c, "steer", run, map[string]any{"input": text})
}

// runAPI posts to /v1/runs/{run}/{verb} and wants a 2xx.
func runAPI(ctx context.Context, t *testing.T, c *chain, verb, run string, body any) {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if status, b := convHTTP(ctx, t, "POST", c.front+"/v1/runs/"+run+"/"+verb, body, nil); status/100 != 2 {
		t.Fatalf("%s run %s: %d %s", verb, run, status, b)
	}
}

func (openaiAdapter) history(ctx context.Context, t *testing.T, c *chain, s *convSession) *convHistory {
	t.Helper()
	status, body := convHTTP(ctx, t, "GET", c.front+"/v1/sessions/"+url.PathEscape(s.id)+"/history?format=openai", nil, nil)
	if status != 200 {
		t.Fatalf("history: %d %s", status, body)
	}
	var page struct {
		Messages []struct {
			RunID   string  `json:"run_id"`
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
		Runs []struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			LastEventID string `json:"last_event_id"`
		} `json:"runs"`
	}
	decodeJSON(t, "history", body, &page)
	h := &convHistory{}
	for _, r := range page.Runs {
		h.runs = append(h.runs, histRun{id: r.ID, status: r.Status})
		if r.Status == string(bridge.StatusRunning) {
			h.running, h.cursor = r.ID, r.LastEventID
		}
	}
	for _, m := range page.Messages {
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		h.messages = append(h.messages, histMsg{role: bridge.Role(m.Role), text: text, runID: m.RunID})
		if h.running != "" && m.RunID == h.running && m.Role == "assistant" {
			h.partial += text
		}
	}
	return h
}

// ---- A2A -------------------------------------------------------------------

// a2aAdapter is chatkit's A2A adapter (profile a2a): JSON-RPC envelopes
// to POST /a2a.
type a2aAdapter struct{}

func (a2aAdapter) name() string { return "a2a" }

func (a2aAdapter) about() string {
	return "POST /a2a JSON-RPC envelopes: run `message/stream` (`contextId` the session; `X-Replace-From` to regenerate or edit), " +
		"the run is the task id; stop `tasks/cancel`; resume `tasks/resubscribe` with `Last-Event-ID`; steer `message/send` " +
		"with the running task's `taskId`; history `GET /v1/sessions/{s}/history?format=a2a` (tasks of the context, " +
		"`metadata.lastEventId`); the answer from artifact-updates"
}

func (a2aAdapter) session(_ context.Context, _ *testing.T, _ *chain, id string) *convSession {
	return &convSession{id: id}
}

func a2aEnvelope(method string, params any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
}

func a2aUserMessage(s *convSession, text, task string) map[string]any {
	m := map[string]any{"kind": "message", "messageId": convID("msg"), "role": "user", "contextId": s.id,
		"parts": []any{map[string]any{"kind": "text", "text": text}}}
	if task != "" {
		m["taskId"] = task
	}
	return m
}

func (a2aAdapter) start(ctx context.Context, t *testing.T, c *chain, s *convSession, text string, o turnOpts) *convStream {
	t.Helper()
	h := map[string]string{"Accept": "text/event-stream"}
	if o.replaceFrom != "" {
		h["X-Replace-From"] = o.replaceFrom
	}
	return openStream(ctx, t, "POST", c.front+"/a2a", a2aEnvelope("message/stream", map[string]any{"message": a2aUserMessage(s, text, "")}), h)
}

// a2aResult is what the adapter reads of a frame's JSON-RPC result.
type a2aResult struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Final     bool   `json:"final"`
	Append    bool   `json:"append"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
	Artifact struct {
		Parts []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifact"`
	Metadata map[string]any `json:"metadata"`
}

func a2aResultOf(f sseFrame) (*a2aResult, bool) {
	var env struct {
		Result *a2aResult      `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(f.data), &env) != nil || env.Result == nil {
		return nil, false
	}
	return env.Result, true
}

func (a2aAdapter) runOf(st *convStream) string {
	for _, f := range st.frames {
		if r, ok := a2aResultOf(f); ok {
			if r.Kind == "task" {
				return r.ID
			}
			if r.TaskID != "" {
				return r.TaskID
			}
		}
	}
	return ""
}

func (a2aAdapter) answer(frames []sseFrame) string {
	var b strings.Builder
	for _, f := range frames {
		if r, ok := a2aResultOf(f); ok && r.Kind == "artifact-update" {
			for _, p := range r.Artifact.Parts {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// ended: the task's final status-update (completion is its state; final
// only closes the reader, so the state is checked by the cases).
func (a2aAdapter) ended(frames []sseFrame) bool {
	for _, f := range frames {
		if r, ok := a2aResultOf(f); ok && r.Kind == "status-update" && r.Final {
			return true
		}
	}
	return false
}

// agentToolCalls are the function_call data parts (adk_type) of the
// status messages.
func (a2aAdapter) agentToolCalls(frames []sseFrame) []toolCall {
	var out []toolCall
	for _, f := range frames {
		var env struct {
			Result struct {
				Status struct {
					Message *struct {
						Parts []struct {
							Kind     string         `json:"kind"`
							Data     map[string]any `json:"data"`
							Metadata map[string]any `json:"metadata"`
						} `json:"parts"`
					} `json:"message"`
				} `json:"status"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(f.data), &env) != nil || env.Result.Status.Message == nil {
			continue
		}
		for _, p := range env.Result.Status.Message.Parts {
			if p.Kind != "data" || p.Metadata["adk_type"] != "function_call" {
				continue
			}
			id, _ := p.Data["id"].(string)
			name, _ := p.Data["name"].(string)
			if !slices.ContainsFunc(out, func(c toolCall) bool { return c.id == id }) {
				args, _ := json.Marshal(p.Data["args"])
				out = append(out, toolCall{index: len(out), id: id, name: name, args: string(args)})
			}
		}
	}
	return out
}

// answerTools sends the results as function_response data parts in a
// message to the input-required task.
func (a2aAdapter) answerTools(ctx context.Context, t *testing.T, c *chain, s *convSession, run string, calls []toolCall, result string) *convStream {
	t.Helper()
	var parts []any
	for _, tc := range calls {
		parts = append(parts, map[string]any{"kind": "data", "data": map[string]any{"id": tc.id, "name": tc.name,
			"response": map[string]any{"result": result}}, "metadata": map[string]any{"adk_type": "function_response"}})
	}
	m := map[string]any{"kind": "message", "messageId": convID("msg"), "role": "user", "contextId": s.id, "taskId": run, "parts": parts}
	return openStream(ctx, t, "POST", c.front+"/a2a", a2aEnvelope("message/stream", map[string]any{"message": m}),
		map[string]string{"Accept": "text/event-stream"})
}

func (a2aAdapter) resume(ctx context.Context, t *testing.T, c *chain, _ *convSession, run, eventID string) *convStream {
	t.Helper()
	return openStream(ctx, t, "POST", c.front+"/a2a", a2aEnvelope("tasks/resubscribe", map[string]any{"id": run}),
		map[string]string{"Accept": "text/event-stream", "Last-Event-ID": eventID})
}

// a2aRPC sends an envelope whose answer is one JSON-RPC response, and
// wants a 2xx without error (the A2A adapter's success rule).
func a2aRPC(ctx context.Context, t *testing.T, c *chain, method string, params any) map[string]any {
	t.Helper()
	status, body := convHTTP(ctx, t, "POST", c.front+"/a2a", a2aEnvelope(method, params), nil)
	var resp struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	decodeJSON(t, method, body, &resp)
	if status/100 != 2 || resp.Error != nil {
		t.Fatalf("%s: %d %s", method, status, body)
	}
	return resp.Result
}

func (a2aAdapter) stop(ctx context.Context, t *testing.T, c *chain, _ *convSession, run string) {
	t.Helper()
	a2aRPC(ctx, t, c, "tasks/cancel", map[string]any{"id": run})
}

func (a2aAdapter) steer(ctx context.Context, t *testing.T, c *chain, s *convSession, run, text string) {
	t.Helper()
	a2aRPC(ctx, t, c, "message/send", map[string]any{"message": a2aUserMessage(s, text, run)})
}

func (a2aAdapter) history(ctx context.Context, t *testing.T, c *chain, s *convSession) *convHistory {
	t.Helper()
	status, body := convHTTP(ctx, t, "GET", c.front+"/v1/sessions/"+url.PathEscape(s.id)+"/history?format=a2a", nil, nil)
	if status != 200 {
		t.Fatalf("history: %d %s", status, body)
	}
	var page struct {
		Tasks []struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Metadata map[string]any `json:"metadata"`
			History  []struct {
				Role  string `json:"role"`
				Parts []struct {
					Kind string `json:"kind"`
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"history"`
			Artifacts []struct {
				Parts []struct {
					Kind string `json:"kind"`
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"artifacts"`
		} `json:"tasks"`
	}
	decodeJSON(t, "history", body, &page)
	h := &convHistory{}
	for _, tk := range page.Tasks {
		st := a2aStatus(tk.Status.State)
		h.runs = append(h.runs, histRun{id: tk.ID, status: st})
		for _, m := range tk.History {
			if m.Role != "user" {
				continue
			}
			var b strings.Builder
			for _, p := range m.Parts {
				b.WriteString(p.Text)
			}
			h.messages = append(h.messages, histMsg{role: bridge.RoleUser, text: b.String(), runID: tk.ID})
		}
		var b strings.Builder
		for _, a := range tk.Artifacts {
			for _, p := range a.Parts {
				b.WriteString(p.Text)
			}
		}
		h.messages = append(h.messages, histMsg{role: bridge.RoleAssistant, text: b.String(), runID: tk.ID})
		if st == string(bridge.StatusRunning) {
			h.running, h.partial = tk.ID, b.String()
			h.cursor, _ = tk.Metadata["lastEventId"].(string)
		}
	}
	return h
}

// a2aStatus is a task state in the bridge's words.
func a2aStatus(state string) string {
	switch state {
	case "submitted", "working":
		return string(bridge.StatusRunning)
	case "canceled":
		return string(bridge.StatusCancelled)
	case "input-required":
		return string(bridge.StatusInputRequired)
	}
	return state
}

// ---- ADK -------------------------------------------------------------------

// adkAdapter is chatkit's ADK adapter: run_sse, resumed with lastEventId,
// the session detail as history.
type adkAdapter struct{}

func (adkAdapter) name() string { return "adk" }

func (adkAdapter) about() string {
	return "`POST /apps/{app}/users/{user}/sessions/{s}` once, then `POST /run_sse` (`newMessage`, streaming; `X-Replace-From` " +
		"to regenerate or edit), the run is the events' `invocationId`; resume `POST /run_sse` with `lastEventId` and no " +
		"`newMessage`; stop and steer through the run API (`POST /v1/runs/{invocationId}/cancel`, `/steer`: the ADK " +
		"api_server has neither); history the session detail (`GET /apps/{app}/users/{user}/sessions/{s}`: `events`, " +
		"`session.status`, `active_run`)"
}

const convADKUser = "u"

func (adkAdapter) session(ctx context.Context, t *testing.T, c *chain, id string) *convSession {
	t.Helper()
	status, body := convHTTP(ctx, t, "POST", c.front+"/apps/"+convModelName+"/users/"+convADKUser+"/sessions/"+url.PathEscape(id), map[string]any{}, nil)
	if status != 200 {
		t.Fatalf("create ADK session: %d %s", status, body)
	}
	return &convSession{id: id, app: convModelName}
}

func (adkAdapter) start(ctx context.Context, t *testing.T, c *chain, s *convSession, text string, o turnOpts) *convStream {
	t.Helper()
	body := map[string]any{"appName": s.app, "userId": convADKUser, "sessionId": s.id, "streaming": true,
		"newMessage": map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}}
	h := map[string]string{"Accept": "text/event-stream"}
	if o.replaceFrom != "" {
		h["X-Replace-From"] = o.replaceFrom
	}
	return openStream(ctx, t, "POST", c.front+"/run_sse", body, h)
}

type adkFrameEvent struct {
	ID           string `json:"id"`
	InvocationID string `json:"invocationId"`
	Author       string `json:"author"`
	Partial      bool   `json:"partial"`
	ErrorCode    string `json:"errorCode"`
	Content      *struct {
		Role  string `json:"role"`
		Parts []struct {
			Text    string `json:"text"`
			Thought bool   `json:"thought"`
		} `json:"parts"`
	} `json:"content"`
}

func (e *adkFrameEvent) text() string {
	var b strings.Builder
	if e.Content != nil {
		for _, p := range e.Content.Parts {
			if !p.Thought {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

func adkEvents(frames []sseFrame) []adkFrameEvent {
	var out []adkFrameEvent
	for _, f := range frames {
		var e adkFrameEvent
		if f.data != "[DONE]" && json.Unmarshal([]byte(f.data), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

func (adkAdapter) runOf(st *convStream) string {
	for _, e := range adkEvents(st.frames) {
		if e.InvocationID != "" {
			return e.InvocationID
		}
	}
	return ""
}

// answer: partial events stream the text; the complete event that follows
// them aggregates it (skipped); a complete event without partials before
// it is text of its own.
func (adkAdapter) answer(frames []sseFrame) string {
	var b strings.Builder
	partials := false
	for _, e := range adkEvents(frames) {
		if e.Author == "user" {
			continue
		}
		switch {
		case e.Partial:
			b.WriteString(e.text())
			partials = true
		case partials:
			partials = false
		default:
			b.WriteString(e.text())
		}
	}
	return b.String()
}

func (adkAdapter) ended(frames []sseFrame) bool {
	return len(frames) > 0 && frames[len(frames)-1].data == "[DONE]"
}

// agentToolCalls are the long-running functionCalls (the client's tools).
func (adkAdapter) agentToolCalls(frames []sseFrame) []toolCall {
	var out []toolCall
	for _, f := range frames {
		var e struct {
			LongRunningToolIDs []string `json:"longRunningToolIds"`
			Content            *struct {
				Parts []struct {
					FunctionCall *struct {
						ID   string          `json:"id"`
						Name string          `json:"name"`
						Args json.RawMessage `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
		}
		if json.Unmarshal([]byte(f.data), &e) != nil || e.Content == nil {
			continue
		}
		for _, p := range e.Content.Parts {
			fc := p.FunctionCall
			if fc != nil && slices.Contains(e.LongRunningToolIDs, fc.ID) && !slices.ContainsFunc(out, func(c toolCall) bool { return c.id == fc.ID }) {
				out = append(out, toolCall{index: len(out), id: fc.ID, name: fc.Name, args: string(fc.Args)})
			}
		}
	}
	return out
}

// answerTools sends the results as functionResponse parts of the next
// run_sse's newMessage.
func (adkAdapter) answerTools(ctx context.Context, t *testing.T, c *chain, s *convSession, _ string, calls []toolCall, result string) *convStream {
	t.Helper()
	var parts []any
	for _, tc := range calls {
		parts = append(parts, map[string]any{"functionResponse": map[string]any{"id": tc.id, "name": tc.name, "response": map[string]any{"result": result}}})
	}
	body := map[string]any{"appName": s.app, "userId": convADKUser, "sessionId": s.id, "streaming": true,
		"newMessage": map[string]any{"role": "user", "parts": parts}}
	return openStream(ctx, t, "POST", c.front+"/run_sse", body, map[string]string{"Accept": "text/event-stream"})
}

func (adkAdapter) resume(ctx context.Context, t *testing.T, c *chain, s *convSession, _ string, eventID string) *convStream {
	t.Helper()
	body := map[string]any{"appName": s.app, "userId": convADKUser, "sessionId": s.id, "streaming": true, "lastEventId": eventID}
	return openStream(ctx, t, "POST", c.front+"/run_sse", body, map[string]string{"Accept": "text/event-stream"})
}

func (adkAdapter) stop(ctx context.Context, t *testing.T, c *chain, _ *convSession, run string) {
	t.Helper()
	runAPI(ctx, t, c, "cancel", run, nil)
}

func (adkAdapter) steer(ctx context.Context, t *testing.T, c *chain, _ *convSession, run, text string) {
	t.Helper()
	runAPI(ctx, t, c, "steer", run, map[string]any{"input": text})
}

func (adkAdapter) history(ctx context.Context, t *testing.T, c *chain, s *convSession) *convHistory {
	t.Helper()
	status, body := convHTTP(ctx, t, "GET", c.front+"/apps/"+s.app+"/users/"+convADKUser+"/sessions/"+url.PathEscape(s.id), nil, nil)
	if status != 200 {
		t.Fatalf("session detail: %d %s", status, body)
	}
	var detail struct {
		Events  []adkFrameEvent `json:"events"`
		Session *struct {
			Status string `json:"status"`
		} `json:"session"`
		ActiveRun *struct {
			RunID   string `json:"run_id"`
			EventID string `json:"event_id"`
		} `json:"active_run"`
	}
	decodeJSON(t, "session detail", body, &detail)
	h := &convHistory{}
	if detail.ActiveRun != nil {
		h.running, h.cursor = detail.ActiveRun.RunID, detail.ActiveRun.EventID
	}
	for _, e := range detail.Events {
		if e.InvocationID != "" && (len(h.runs) == 0 || h.runs[len(h.runs)-1].id != e.InvocationID) {
			st := string(bridge.StatusCompleted) // the session detail has no outcome per invocation
			if e.InvocationID == h.running {
				st = string(bridge.StatusRunning)
			}
			h.runs = append(h.runs, histRun{id: e.InvocationID, status: st})
		}
		role := bridge.RoleAssistant
		if e.Author == "user" {
			role = bridge.RoleUser
		}
		text := e.text()
		h.messages = append(h.messages, histMsg{role: role, text: text, runID: e.InvocationID})
		if role == bridge.RoleAssistant && e.InvocationID == h.running && h.running != "" {
			h.partial += text
		}
	}
	return h
}

// ---- Hermes ----------------------------------------------------------------

// hermesAdapter is chatkit's Hermes adapter: the session API's chat
// stream, stop and steer by run id, history with runs.
type hermesAdapter struct{}

func (hermesAdapter) name() string { return "hermes" }

func (hermesAdapter) about() string {
	return "`POST /api/sessions` once, then `POST /api/sessions/{s}/chat/stream` (`message`; `tools` and tool results as " +
		"`input`; `X-Replace-From` to regenerate or edit), the run is the frames' `run_id`; resume `GET " +
		"/api/sessions/{s}/chat/stream` with `Last-Event-ID`; stop `POST /v1/runs/{run}/stop`; steer `POST " +
		"/v1/runs/{run}/steer`; history `GET /api/sessions/{s}/messages?format=chatkit` (`run_id` per message, `runs`)"
}

func (hermesAdapter) session(ctx context.Context, t *testing.T, c *chain, id string) *convSession {
	t.Helper()
	status, body := convHTTP(ctx, t, "POST", c.front+"/api/sessions", map[string]any{"id": id}, nil)
	if status != 201 && status != 200 {
		t.Fatalf("create Hermes session: %d %s", status, body)
	}
	return &convSession{id: id}
}

func (hermesAdapter) start(ctx context.Context, t *testing.T, c *chain, s *convSession, text string, o turnOpts) *convStream {
	t.Helper()
	body := map[string]any{"message": text}
	if o.toolResults != nil {
		var in []any
		for _, m := range o.toolResults {
			if m.role == bridge.RoleTool { // the assistant's calls are the bridge's already
				in = append(in, map[string]any{"role": "tool", "tool_call_id": m.toolCallID, "content": m.text})
			}
		}
		body = map[string]any{"input": in}
	}
	if o.tools {
		body["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather", "parameters": map[string]any{"type": "object"}}}}
	}
	h := map[string]string{"Accept": "text/event-stream"}
	if o.replaceFrom != "" {
		h["X-Replace-From"] = o.replaceFrom
	}
	return openStream(ctx, t, "POST", c.front+"/api/sessions/"+url.PathEscape(s.id)+"/chat/stream", body, h)
}

type hermesData struct {
	RunID      string          `json:"run_id"`
	Delta      string          `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolCallID string          `json:"tool_call_id"`
	Args       json.RawMessage `json:"args"`
}

func hermesEvents(frames []sseFrame) []hermesData {
	out := make([]hermesData, len(frames))
	for i, f := range frames {
		_ = json.Unmarshal([]byte(f.data), &out[i])
	}
	return out
}

func (hermesAdapter) runOf(st *convStream) string {
	for _, d := range hermesEvents(st.frames) {
		if d.RunID != "" {
			return d.RunID
		}
	}
	return ""
}

func (hermesAdapter) answer(frames []sseFrame) string {
	var b strings.Builder
	for i, d := range hermesEvents(frames) {
		if frames[i].event == "assistant.delta" {
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

func (hermesAdapter) toolCalls(frames []sseFrame) []toolCall {
	var out []toolCall
	for i, d := range hermesEvents(frames) {
		if frames[i].event == "tool.started" {
			out = append(out, toolCall{index: len(out), id: d.ToolCallID, name: d.ToolName, args: string(d.Args)})
		}
	}
	return out
}

func (hermesAdapter) ended(frames []sseFrame) bool {
	return len(frames) > 0 && frames[len(frames)-1].event == "done"
}

func (hermesAdapter) resume(ctx context.Context, t *testing.T, c *chain, s *convSession, _ string, eventID string) *convStream {
	t.Helper()
	return openStream(ctx, t, "GET", c.front+"/api/sessions/"+url.PathEscape(s.id)+"/chat/stream", nil,
		map[string]string{"Accept": "text/event-stream", "Last-Event-ID": eventID})
}

func (hermesAdapter) stop(ctx context.Context, t *testing.T, c *chain, _ *convSession, run string) {
	t.Helper()
	runAPI(ctx, t, c, "stop", run, nil)
}

func (hermesAdapter) steer(ctx context.Context, t *testing.T, c *chain, _ *convSession, run, text string) {
	t.Helper()
	runAPI(ctx, t, c, "steer", run, map[string]any{"input": text})
}

func (hermesAdapter) history(ctx context.Context, t *testing.T, c *chain, s *convSession) *convHistory {
	t.Helper()
	status, body := convHTTP(ctx, t, "GET", c.front+"/api/sessions/"+url.PathEscape(s.id)+"/messages?format=chatkit", nil, nil)
	if status != 200 {
		t.Fatalf("history: %d %s", status, body)
	}
	var page struct {
		Data []struct {
			RunID   string `json:"run_id"`
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"data"`
		Runs []struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			LastEventID string `json:"last_event_id"`
		} `json:"runs"`
	}
	decodeJSON(t, "history", body, &page)
	h := &convHistory{}
	for _, r := range page.Runs {
		h.runs = append(h.runs, histRun{id: r.ID, status: hermesStatus(r.Status)})
		if hermesStatus(r.Status) == string(bridge.StatusRunning) {
			h.running, h.cursor = r.ID, r.LastEventID
		}
	}
	for _, m := range page.Data {
		text, _ := m.Content.(string)
		h.messages = append(h.messages, histMsg{role: bridge.Role(m.Role), text: text, runID: m.RunID})
		if h.running != "" && m.RunID == h.running && m.Role == "assistant" {
			h.partial += text
		}
	}
	return h
}

// hermesStatus is a Hermes run status in the bridge's words.
func hermesStatus(s string) string {
	switch s {
	case "cancelled", "canceled", "stopped":
		return string(bridge.StatusCancelled)
	}
	return s
}

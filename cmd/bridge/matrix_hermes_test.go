package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// hermesMatrixPairs are the Hermes rows of the translation matrix.
func hermesMatrixPairs() []pair {
	return []pair{
		{inbound: hermesClient{}, outbound: openaiOut, notes: []string{
			"An OpenAI-compatible model served as a Hermes agent: the session's stored transcript is replayed to the " +
				"stateless upstream each turn; the session stream's frames (run.started ... done) carry text, _thinking " +
				"progress, tool.started for the model's calls (the client's tools, a bridge extension) and run.completed's usage.",
		}},
		{inbound: hermesClient{}, outbound: echoOut},
		{inbound: openaiClient{}, outbound: hermesOut, notes: []string{
			"A stateless Chat Completions client over a Hermes agent: the upstream session is kept in the id map, and a " +
				"turn sends only the new user message into it (a fresh upstream session gets the earlier turns as text).",
		}},
		{inbound: a2aInClient{}, outbound: hermesOut},
		{inbound: hermesClient{}, outbound: a2aOut},
		{inbound: hermesClient{}, outbound: hermesOut},
		{inbound: hermesClient{}, outbound: anthropicOut},
		{inbound: anthropicClient{over: "hermes"}, outbound: hermesOut},
		{inbound: hermesClient{}, outbound: adkOut},
		{inbound: adkClient{}, outbound: hermesOut},
	}
}

// ---- inbound: the Hermes client ----------------------------------------------

type hermesClient struct{}

var hermesSessionSeq atomic.Int64

func (hermesClient) dialect() string { return "hermes" }

func (hermesClient) describe() string {
	return "Hermes agent API client (raw net/http, as Hermes frontends and chatkit's Hermes adapter talk to it): it " +
		"creates the session (POST /api/sessions), streams turns with POST /api/sessions/{id}/chat/stream or sends " +
		"POST /api/sessions/{id}/chat, declares tools and sends their results with the bridge's extensions (tools, an " +
		"input list of tool messages), and resumes with GET /v1/runs/{id}/events and Last-Event-ID. Every stream is " +
		"checked by the Hermes stream validator."
}

func (hermesClient) cannot(scenario string) string {
	switch scenario {
	case "error_before_first_byte":
		return "a Hermes turn is a stream that ends with run.failed (the upstream's message as its error), and a " +
			"synchronous chat answers the bridge code's status: the upstream's status, error type and code have no place in it"
	case "error_mid_stream":
		return "a Hermes stream's failure is run.failed with the upstream's message: no error type of the upstream's"
	}
	return ""
}

func (hermesClient) limits() []string {
	return []string{
		"Tools: Hermes clients declare none (the agent's tools are its own); the bridge takes OpenAI-shaped tools and " +
			"tool-result messages as an extension, and shows each call as tool.started (its arguments in args) and " +
			"the run as waiting (run.interrupted with status input_required, its calls in messages; a client_tool " +
			"member on each tool.started says the client runs it); the stream that sends the results goes on from run.started.",
		"Reasoning is tool.progress with tool_name _thinking; signatures and encrypted reasoning are dropped and named.",
		"Stop reasons ride in run.completed's finish_reason (a bridge extension); a failed, cancelled or interrupted " +
			"run ends with run.failed, run.cancelled or run.interrupted (chatkit's names; Hermes itself sends error), then done.",
		"A dropped session stream leaves the turn running (Hermes' newer builds); in the client_cancel scenario the " +
			"client stops it with POST /v1/runs/{id}/stop, Hermes' way, then disconnects.",
	}
}

// session makes the turn's session (X-Session-Id as its id, or a fresh one).
func (hermesClient) session(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) string {
	t.Helper()
	id := tr.session
	if id == "" {
		id = fmt.Sprintf("matrix-hermes-%d", hermesSessionSeq.Add(1))
	}
	resp := hermesPost(ctx, t, b, "/api/sessions", map[string]any{"id": id})
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		t.Fatalf("create session: status %d", resp.StatusCode)
	}
	return id
}

func hermesPost(ctx context.Context, t *testing.T, b *bridgeUT, path string, body any, hdr ...string) *http.Response {
	t.Helper()
	j, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+path, bytes.NewReader(j))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// turnBody is the chat body of a turn: trailing tool results as an input
// list, else the last user message; the turn's tools.
func hermesTurnBody(tr turn) map[string]any {
	body := map[string]any{}
	n := len(tr.messages)
	k := n
	for k > 0 && tr.messages[k-1].role == bridge.RoleTool {
		k--
	}
	if k < n {
		var input []any
		for _, m := range tr.messages[k:] {
			input = append(input, map[string]any{"role": "tool", "tool_call_id": m.toolCallID, "content": m.text})
		}
		body["input"] = input
	} else {
		body["message"] = hermesLastUser(tr)
	}
	if len(tr.tools) > 0 {
		var tools []any
		for _, td := range tr.tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": td.name, "description": td.description, "parameters": td.params}})
		}
		body["tools"] = tools
	}
	return body
}

func hermesLastUser(tr turn) string {
	for i := len(tr.messages) - 1; i >= 0; i-- {
		if tr.messages[i].role == bridge.RoleUser {
			return tr.messages[i].text
		}
	}
	return ""
}

func (c hermesClient) send(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *observation {
	t.Helper()
	sess := c.session(ctx, t, b, tr)
	path := "/api/sessions/" + sess + "/chat"
	if tr.stream {
		path += "/stream"
	}
	resp := hermesPost(ctx, t, b, path, hermesTurnBody(tr))
	defer resp.Body.Close()
	obs := &observation{status: resp.StatusCode, header: resp.Header, runID: resp.Header.Get("X-Run-Id"),
		sessionID: resp.Header.Get("X-Hermes-Session-Id")}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != 200 {
		obs.err = hermesWireError(resp.StatusCode, body)
		return obs
	}
	if !tr.stream {
		var v struct {
			Message struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			Usage        *hermesUsage `json:"usage"`
			FinishReason string       `json:"finish_reason"`
			RunID        string       `json:"run_id"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("chat: %v: %s", err, body)
		}
		obs.text, obs.reasoning, obs.finish = v.Message.Content, v.Message.Reasoning, bridge.StopReason(v.FinishReason)
		for i, c := range v.Message.ToolCalls {
			obs.toolCalls = append(obs.toolCalls, toolCall{index: i, id: c.ID, name: c.Function.Name, args: c.Function.Arguments})
		}
		obs.usage = v.Usage.hub()
		if v.RunID != obs.runID {
			t.Errorf("chat: run_id %q, X-Run-Id %q", v.RunID, obs.runID)
		}
		return obs
	}
	obs.frames = bodyFrames(t, body, maxFrames)
	validateHermesStream(t, obs, true)
	return obs
}

type hermesUsage struct {
	In    int64 `json:"input_tokens"`
	Out   int64 `json:"output_tokens"`
	Total int64 `json:"total_tokens"`
}

func (u *hermesUsage) hub() *usage {
	if u == nil || (u.In == 0 && u.Out == 0 && u.Total == 0) {
		return nil
	}
	return &usage{in: u.In, out: u.Out, total: u.Total}
}

func hermesWireError(status int, body []byte) *wireError {
	var e struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	we := &wireError{status: status, typ: e.Error.Type, message: e.Error.Message}
	if json.Unmarshal(e.Error.Code, &we.code) != nil || we.code == "" {
		we.codeNull = true
	}
	return we
}

// hermesFrameNames are the frames the session stream may carry.
var hermesFrameNames = map[string]bool{
	"run.started": true, "message.started": true, "assistant.delta": true, "tool.progress": true,
	"tool.started": true, "tool.completed": true, "tool.failed": true, "assistant.completed": true,
	"run.steered": true, "run.completed": true, "run.failed": true, "run.cancelled": true,
	"run.interrupted": true, "done": true,
}

// validateHermesStream checks a session stream and folds it into obs:
// each frame is event: <name> + one data line with session_id, run_id (the
// run's), seq and ts; its SSE id is a frame id of the run (bridge.EventID
// or bridge.FrameID), each frame's its own; seqs count on by one; done
// ends a complete stream (a run that waits for tool results ends a segment
// with done, and its continuation counts on).
func validateHermesStream(t *testing.T, obs *observation, complete bool) {
	t.Helper()
	for _, e := range checkHermesStream(obs, complete) {
		t.Error(e)
	}
}

func checkHermesStream(obs *observation, complete bool) []string {
	var errs []string
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	var (
		prev       int64
		lastPos    framePos
		lastIDSeen bool
	)
	done := false
	for i, f := range obs.frames {
		if done {
			errorf("frame %d after done", i+1)
		}
		var name string
		for _, o := range f.other {
			if v, ok := strings.CutPrefix(o, "event: "); ok {
				name = v
			}
		}
		if !hermesFrameNames[name] || len(f.data) != 1 {
			errorf("frame %d: event %q with %d data lines", i+1, name, len(f.data))
			continue
		}
		var p struct {
			SessionID    string          `json:"session_id"`
			RunID        string          `json:"run_id"`
			Seq          int64           `json:"seq"`
			TS           *float64        `json:"ts"`
			Delta        string          `json:"delta"`
			ToolName     string          `json:"tool_name"`
			ToolCallID   string          `json:"tool_call_id"`
			Args         json.RawMessage `json:"args"`
			Error        string          `json:"error"`
			Usage        *hermesUsage    `json:"usage"`
			FinishReason string          `json:"finish_reason"`
			Status       string          `json:"status"`
		}
		if err := json.Unmarshal([]byte(f.data[0]), &p); err != nil {
			errorf("frame %d: %v", i+1, err)
			continue
		}
		if p.RunID != obs.runID || p.SessionID == "" || p.TS == nil {
			errorf("frame %d: run %q (want %q), session %q, ts %v", i+1, p.RunID, obs.runID, p.SessionID, p.TS)
		}
		// The SSE id: a frame id of the run, each frame's its own, in
		// order (its hub event's; the seq counts frames).
		if r, pos, ok := parseFramePos(f.id); !f.hasID || !ok || r != p.RunID || lastIDSeen && !lastPos.before(pos) {
			errorf("frame %d: SSE id %q is not a frame id of run %s after %v", i+1, f.id, p.RunID, lastPos)
		} else {
			lastPos, lastIDSeen = pos, true
		}
		if prev != 0 && p.Seq != prev+1 {
			errorf("frame %d: seq %d after %d", i+1, p.Seq, prev)
		}
		prev = p.Seq
		switch name {
		case "assistant.delta":
			obs.text += p.Delta
		case "tool.progress":
			if p.ToolName == "_thinking" {
				obs.reasoning += p.Delta
			}
		case "tool.started":
			args := string(p.Args)
			var s string
			if json.Unmarshal(p.Args, &s) == nil {
				args = s
			}
			obs.toolCalls = append(obs.toolCalls, toolCall{index: len(obs.toolCalls), id: p.ToolCallID, name: p.ToolName, args: args})
		case "run.completed":
			obs.finish = bridge.StopReason(p.FinishReason)
			obs.usage = p.Usage.hub()
		case "run.interrupted":
			if p.Status == "input_required" { // waiting for the client's tool results: not an error
				obs.finish = bridge.StopReason(p.FinishReason)
				obs.usage = p.Usage.hub()
				break
			}
			obs.err, obs.errFrame = &wireError{message: p.Error, codeNull: true}, true
		case "run.failed", "run.cancelled":
			obs.err, obs.errFrame = &wireError{message: p.Error, codeNull: true}, true
		case "done":
			done = true
		}
	}
	if complete && !done {
		errorf("the stream does not end with done")
	}
	return errs
}

func (c hermesClient) open(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *liveStream {
	t.Helper()
	sess := c.session(ctx, t, b, tr)
	sctx, cancel := context.WithCancel(ctx)
	resp := hermesPost(sctx, t, b, "/api/sessions/"+sess+"/chat/stream", hermesTurnBody(tr))
	ls, drop := liveSSE(t, "chat/stream", resp, cancel, nil)
	ls.drop = func(t *testing.T) *observation {
		t.Helper()
		if tr.session == "" { // a client done with the turn stops it, Hermes' way
			r := hermesPost(ctx, t, b, "/v1/runs/"+ls.runID+"/stop", map[string]any{})
			r.Body.Close()
		}
		drop()
		obs := ls.observation("X-Hermes-Session-Id")
		validateHermesStream(t, obs, false)
		return obs
	}
	return ls
}

func (hermesClient) events(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string, _ turn) *observation {
	t.Helper()
	resp := getEvents(ctx, t, b, runID, lastEventID)
	defer resp.Body.Close()
	obs := readReplay(t, "events of "+runID, resp, runID)
	validateHermesStream(t, obs, true)
	return obs
}

// ---- outbound: a fake Hermes server playing the script ----------------------

var hermesOut = outboundSide{
	name: "hermes",
	describe: "The bridge's Hermes client (outbound/hermes) against a fake Hermes API server that plays the script as " +
		"the session stream (run.started, message.started, tool.progress _thinking, assistant.delta, assistant.completed, " +
		"run.completed with usage or error, then done) and answers POST /v1/runs/{id}/stop.",
	play: hermesAgentUpstream,
	limits: func() []string {
		return []string{
			"Client tools cannot be offered to a Hermes agent (its tools are its own): a request's tools and tool results " +
				"are dropped and named; the agent's own tool.started / tool.completed come through as its activity.",
			"Hermes sends no stop reason: a completed turn is end_turn.",
			"No upstream resume: the session stream has no ids, so a stream that breaks before done fails the run; a " +
				"stop goes to POST /v1/runs/{run_id}/stop.",
		}
	},
}

func hermesAgentUpstream(t *testing.T, sc *script) (*fakeUpstream, string) {
	for _, c := range sc.calls {
		if len(c.tools) > 0 {
			return nil, "a Hermes agent runs its own tools: the client's tool calls and their results cannot be passed through it"
		}
		if c.fail != nil {
			return nil, "a Hermes session stream fails after its 200 with an error frame: there is no upstream status, " +
				"error type or code before the first byte to pass through"
		}
	}
	a := &fakeHermes{sc: sc, stops: map[string]chan struct{}{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return &fakeUpstream{
		configure: func(c *Config) {
			c.Upstreams = []Upstream{{Name: "hermes", Dialect: "hermes", URL: srv.URL}}
		},
		requests:  a.requests,
		cancelled: func() int { return int(a.cancelled.Load()) },
	}, ""
}

// fakeHermes is a Hermes server whose agent plays a script.
type fakeHermes struct {
	sc        *script
	mu        sync.Mutex
	reqs      []upstreamRequest
	n         int
	stops     map[string]chan struct{}
	cancelled atomic.Int32
}

func (a *fakeHermes) requests() []upstreamRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]upstreamRequest(nil), a.reqs...)
}

func (a *fakeHermes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/sessions":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"object":"hermes.session","session":{"id":"hs-%d"}}`, time.Now().UnixNano())
		return
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/runs/") && strings.HasSuffix(r.URL.Path, "/stop"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/runs/"), "/stop")
		a.mu.Lock()
		ch, ok := a.stops[id]
		if ok {
			delete(a.stops, id)
			close(ch)
		}
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"run_id":%q,"status":"stopping"}`, id)
		return
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/stream"):
	default:
		http.NotFound(w, r)
		return
	}
	session := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/sessions/"), "/chat/stream")
	var req struct {
		Message string `json:"message"`
		Model   string `json:"model"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	a.mu.Lock()
	n := a.n
	a.n++
	a.reqs = append(a.reqs, upstreamRequest{model: req.Model, messages: []msg{userMsg(req.Message)}})
	run := fmt.Sprintf("run_%032x", time.Now().UnixNano())
	stop := make(chan struct{})
	a.stops[run] = stop
	a.mu.Unlock()
	c := a.sc.call(n, req.Message)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	seq := 0
	send := func(name string, p map[string]any) bool {
		seq++
		p["session_id"], p["run_id"], p["seq"], p["ts"] = session, run, seq, float64(time.Now().UnixMilli())/1000
		b, _ := json.Marshal(p)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	defer send("done", map[string]any{})
	counted := false
	gone := func() bool {
		select {
		case <-r.Context().Done():
		case <-stop:
		default:
			return false
		}
		if !counted {
			counted = true
			a.cancelled.Add(1)
		}
		return true
	}
	wait := func() bool {
		if c.delay <= 0 {
			return !gone()
		}
		select {
		case <-time.After(c.delay):
			return !gone()
		case <-r.Context().Done():
		case <-stop:
		}
		return !gone()
	}
	const mid = "msg_1"
	send("run.started", map[string]any{"user_message": map[string]any{"role": "user", "content": req.Message}})
	send("message.started", map[string]any{"message": map[string]any{"id": mid, "role": "assistant"}})
	for _, s := range c.reasoning {
		if !wait() || !send("tool.progress", map[string]any{"message_id": mid, "tool_name": "_thinking", "delta": s}) {
			return
		}
	}
	var text strings.Builder
	for _, s := range c.text {
		if !wait() {
			send("assistant.completed", map[string]any{"message_id": mid, "content": text.String(), "completed": false, "partial": true, "interrupted": true})
			return
		}
		text.WriteString(s)
		if !send("assistant.delta", map[string]any{"message_id": mid, "delta": s}) {
			return
		}
	}
	if c.midError != nil {
		send("error", map[string]any{"message": c.midError.message})
		return
	}
	send("assistant.completed", map[string]any{"message_id": mid, "content": text.String(), "completed": true, "partial": false, "interrupted": false})
	done := map[string]any{"message_id": mid, "completed": true, "messages": []any{}}
	if c.usage != nil {
		done["usage"] = map[string]int64{"input_tokens": c.usage.in, "output_tokens": c.usage.out, "total_tokens": c.usage.total}
	}
	send("run.completed", done)
}

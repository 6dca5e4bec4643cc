package main

// The a2a dialect in the matrix: the inbound client driver (the a2a-go
// client for requests and streams, raw net/http with an SSE reader where
// event ids and disconnects matter), the A2A stream validator every stream
// goes through, and the outbound upstream factory (a fake A2A agent that
// writes the 0.3 wire by hand, as a2a-go and @a2a-js/sdk write it).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/bridge-dev/bridge/bridge"
)

// a2aMatrixPairs are the matrix rows with a2a on either side.
func a2aMatrixPairs() []pair {
	return []pair{
		{inbound: a2aInClient{}, outbound: openaiOut, notes: []string{
			"The headline use: an OpenAI-compatible model served as an A2A agent. The context's stored transcript " +
				"is replayed to the stateless upstream each turn; text, reasoning (as adk_thought status messages) " +
				"and usage (the final status-update's metadata.usage) reach the A2A client.",
		}},
		{inbound: a2aInClient{}, outbound: echoOut},
		{inbound: openaiClient{}, outbound: a2aOut, notes: []string{
			"A stateless Chat Completions client over an A2A agent: each request's transcript is fingerprinted, and a " +
				"request that extends one the agent answered sends only the new message into the same upstream context.",
		}},
		{inbound: a2aInClient{}, outbound: a2aOut},
	}
}

// matrixA2AReqID is the JSON-RPC id of every request the driver sends, so
// a stream and its replay carry the same frames.
const matrixA2AReqID = `"matrix"`

// ---- inbound: the A2A client -------------------------------------------------

type a2aInClient struct{}

func (a2aInClient) dialect() string { return "a2a" }

func (a2aInClient) describe() string {
	return "A2A 0.3 client: the official Go SDK (github.com/a2aproject/a2a-go, a2aclient) for message/send and " +
		"message/stream; raw net/http with an SSE reader for event ids, disconnects and tasks/resubscribe with " +
		"Last-Event-ID. The contextId is the session (X-Session-Id in the scenarios). Every stream is checked by the A2A stream validator."
}

func (a2aInClient) cannot(scenario string) string {
	switch scenario {
	case "tool_round_trip", "tool_args_split", "parallel_tools":
		return "an A2A client declares no tools and runs none: tool calls are the agent's own (shown as adk_type " +
			"function_call data parts), never the client's to execute"
	case "error_before_first_byte":
		return "a failed A2A task is not an HTTP error: the upstream's message is the final status message " +
			"(state failed, the bridge error code in its metadata), with no HTTP status, error type or code of the upstream's"
	case "error_mid_stream":
		return "A2A has no error frame of the upstream's shape: the task ends failed with the upstream's message as its " +
			"status message, and message/send answers the failed task, not a 502"
	}
	return ""
}

func (a2aInClient) limits() []string {
	return []string{
		"Tools: an A2A client declares none, so the upstream model gets no tools; what an upstream agent does with its own " +
			"tools is shown as ADK data parts (adk_type function_call / function_response) in working status-updates.",
		"Reasoning is shown as text parts with metadata adk_thought (the ADK convention chatkit reads); signatures and " +
			"encrypted reasoning are dropped and named.",
		"Stop reasons have no A2A form beyond the task state (completed, input-required, failed, canceled).",
		"Usage is carried in the final status-update's metadata.usage and the task's metadata, a bridge convention.",
		"A client that only disconnects leaves its task running (it resumes with tasks/resubscribe and Last-Event-ID); " +
			"in the client_cancel scenario the stateless-style client stops its task with tasks/cancel, A2A's way, then disconnects.",
	}
}

// a2aFromTurn is the message of a turn: its last user message, in the
// turn's session as contextId (A2A is stateful: the bridge holds the rest).
func a2aFromTurn(tr turn) *a2asdk.Message {
	text := ""
	for i := len(tr.messages) - 1; i >= 0; i-- {
		if tr.messages[i].role == bridge.RoleUser {
			text = tr.messages[i].text
			break
		}
	}
	m := a2asdk.NewMessage(a2asdk.MessageRoleUser, a2asdk.TextPart{Text: text})
	m.ContextID = tr.session
	return m
}

// recordingTransport records responses into the capture of the request's
// context, as recordingClient does for the openai SDK.
type recordingTransport struct{ rt http.RoundTripper }

func (r recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return recordingClient{&http.Client{Transport: r.rt}}.Do(req)
}

func (a2aInClient) sdk(t *testing.T, ctx context.Context, b *bridgeUT) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{Transport: recordingTransport{b.http.Transport}}
	c, err := a2aclient.NewFromEndpoints(ctx, []a2asdk.AgentInterface{{URL: b.url + "/a2a", Transport: a2asdk.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("a2a client: %v", err)
	}
	return c
}

// send runs a turn with the SDK: message/stream when the turn streams,
// else message/send (blocking). The recorded bytes are validated and
// normalized; the SDK's reading is checked against them.
func (c a2aInClient) send(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *observation {
	t.Helper()
	cl := c.sdk(t, ctx, b)
	rec := &capture{}
	ctx = withCapture(ctx, rec)
	params := &a2asdk.MessageSendParams{Message: a2aFromTurn(tr)}
	if tr.stream {
		var evs []a2asdk.Event
		var serr error
		for ev, err := range cl.SendStreamingMessage(ctx, params) {
			if err != nil {
				serr = err
				break
			}
			if len(evs) > maxFrames {
				t.Fatalf("more than %d events", maxFrames)
			}
			evs = append(evs, ev)
		}
		obs := c.observe(t, rec, true)
		if serr != nil {
			t.Errorf("SDK stream: %v", serr)
		}
		if got := answerText(evs); got != obs.text {
			t.Errorf("the SDK read the answer %q, the stream says %q", got, obs.text)
		}
		return obs
	}
	res, err := cl.SendMessage(ctx, params)
	obs := c.observe(t, rec, false)
	if err != nil {
		t.Errorf("SDK message/send: %v", err)
	} else if task, ok := res.(*a2asdk.Task); !ok || taskText(task) != obs.text {
		t.Errorf("the SDK read %#v, the body says %q", res, obs.text)
	}
	return obs
}

func (a2aInClient) observe(t *testing.T, rec *capture, stream bool) *observation {
	t.Helper()
	obs, body := recorded(t, rec)
	if !stream {
		validateA2ATaskResponse(t, obs, body)
		return obs
	}
	if ct := obs.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("stream Content-Type %q", ct)
	}
	obs.frames = bodyFrames(t, body, 0)
	validateA2AStream(t, obs, a2aCheck{runID: obs.runID, fromStart: true, complete: true})
	return obs
}

// post starts a raw JSON-RPC request.
func a2aPost(ctx context.Context, t *testing.T, b *bridgeUT, method string, params any, header ...string) *http.Response {
	t.Helper()
	p, _ := json.Marshal(params)
	body := `{"jsonrpc":"2.0","id":` + matrixA2AReqID + `,"method":"` + method + `","params":` + string(p) + `}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	return resp
}

// open starts a raw message/stream, to read it frame by frame and drop it.
// A turn without a session is a client that wants its task stopped when it
// leaves: drop sends tasks/cancel first (an A2A client that only
// disconnects leaves its task running).
func (a2aInClient) open(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	resp := a2aPost(ctx, t, b, "message/stream", &a2asdk.MessageSendParams{Message: a2aFromTurn(tr)})
	ls, drop := liveSSE(t, "message/stream", resp, cancel, nil)
	ls.drop = func(t *testing.T) *observation {
		t.Helper()
		if tr.session == "" {
			cr := a2aPost(ctx, t, b, "tasks/cancel", &a2asdk.TaskIDParams{ID: a2asdk.TaskID(ls.runID)})
			cr.Body.Close()
		}
		drop()
		obs := ls.observation("X-Session-Id")
		validateA2AStream(t, obs, a2aCheck{runID: ls.runID, fromStart: true, reqID: matrixA2AReqID})
		return obs
	}
	return ls
}

// events reads tasks/resubscribe of the run (after lastEventID, when set,
// given as Last-Event-ID) to the end.
func (a2aInClient) events(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string, _ turn) *observation {
	t.Helper()
	var h []string
	if lastEventID != "" {
		h = []string{"Last-Event-ID", lastEventID}
	}
	resp := a2aPost(ctx, t, b, "tasks/resubscribe", &a2asdk.TaskIDParams{ID: a2asdk.TaskID(runID)}, h...)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tasks/resubscribe %s: status %d", runID, resp.StatusCode)
	}
	obs := readReplay(t, "tasks/resubscribe "+runID, resp, runID)
	validateA2AStream(t, obs, a2aCheck{runID: runID, fromStart: lastEventID == "", complete: true, reqID: matrixA2AReqID})
	return obs
}

// ---- the A2A stream validator -------------------------------------------------

// a2aCheck says what a stream must be.
type a2aCheck struct {
	runID string // the task id (and every event id's run)
	// fromStart: the stream begins with the task (message/stream, or a
	// resubscribe without a cursor).
	fromStart bool
	// complete: the stream was read to its end, so it ends with the final
	// status-update.
	complete bool
	// reqID is the JSON-RPC id every frame answers; "" for any one id (the
	// SDK picks its own).
	reqID string
}

func validateA2AStream(t *testing.T, obs *observation, c a2aCheck) {
	t.Helper()
	reportStream(t, "A2A stream", obs, checkA2AStream(obs, c))
}

// checkA2AStream is the grammar of the A2A streams the bridge emits; it
// fills obs and returns every violation:
//
//   - every frame has one id: line (an event id of the task, seqs
//     increasing) and one data: line, and no other line;
//   - the data is one JSON-RPC 2.0 response with the request's id and a
//     result a2a-go's own decoder reads (task, status-update or
//     artifact-update);
//   - from the start, the first frame is the task, submitted, with the
//     user's message in its history; every frame names the same task and
//     context;
//   - an artifact's first chunk has append false, later ones true; no
//     chunk follows its lastChunk;
//   - status-updates are final false until the last frame, which is final
//     true in a state with an outcome (completed, failed, canceled,
//     input-required, rejected, auth-required); nothing follows it.
func checkA2AStream(obs *observation, c a2aCheck) []string {
	var (
		problems  []string
		lastSeq   int64 = -1
		taskID    string
		contextID string
		finals    int
		chunks    = map[a2asdk.ArtifactID]string{} // "open" or "closed"
	)
	for i, f := range obs.frames {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("frame %d (%s): %s", i+1, f, fmt.Sprintf(format, args...)))
		}
		if finals > 0 {
			bad("a frame after the final status-update")
		}
		if len(f.other) > 0 {
			bad("lines other than id and data: %q", f.other)
		}
		if f.idN != 1 {
			bad("%d id lines, want 1", f.idN)
		} else if run, seq, ok := bridge.ParseEventID(f.id); !ok || (c.runID != "" && run != c.runID) {
			bad("id %q is not an event id of task %s", f.id, c.runID)
		} else {
			if seq <= lastSeq {
				bad("seq %d after seq %d", seq, lastSeq)
			}
			lastSeq = seq
		}
		if len(f.data) != 1 {
			bad("%d data lines, want 1", len(f.data))
			if len(f.data) == 0 {
				continue
			}
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(f.data[0]), &resp); err != nil {
			bad("data is not JSON: %v", err)
			continue
		}
		if c.reqID == "" && len(resp.ID) > 0 {
			c.reqID = string(resp.ID)
		}
		if resp.JSONRPC != "2.0" || string(resp.ID) != c.reqID || (resp.Result == nil) == (resp.Error == nil) {
			bad("not a JSON-RPC 2.0 response to request %s with one of result and error", c.reqID)
			continue
		}
		if resp.Error != nil {
			bad("an error frame in a task's stream")
			continue
		}
		ev, err := a2asdk.UnmarshalEventJSON(resp.Result)
		if err != nil {
			bad("a2a-go cannot read the result: %v", err)
			continue
		}
		info := ev.TaskInfo()
		if taskID == "" {
			taskID, contextID = string(info.TaskID), info.ContextID
			if c.runID != "" && taskID != c.runID {
				bad("task %s, want %s", taskID, c.runID)
			}
		} else if string(info.TaskID) != taskID || info.ContextID != contextID {
			bad("names task %s in %s; earlier frames %s in %s", info.TaskID, info.ContextID, taskID, contextID)
		}
		if obs.sessionID == "" {
			obs.sessionID = contextID
		}
		switch e := ev.(type) {
		case *a2asdk.Task:
			if i != 0 || !c.fromStart {
				bad("a task snapshot that does not open the stream")
			}
			if e.Status.State != a2asdk.TaskStateSubmitted || len(e.History) == 0 || e.History[0].Role != a2asdk.MessageRoleUser {
				bad("the opening task is %s with %d history messages, want submitted with the user's message", e.Status.State, len(e.History))
			}
		case *a2asdk.TaskArtifactUpdateEvent:
			if i == 0 && c.fromStart {
				bad("the stream does not open with the task")
			}
			id := e.Artifact.ID
			switch state := chunks[id]; {
			case state == "" && e.Append && c.fromStart:
				bad("the first chunk of artifact %s has append true", id)
			case state == "open" && !e.Append:
				bad("a later chunk of artifact %s has append false", id)
			case state == "closed":
				bad("a chunk of artifact %s after its lastChunk", id)
			}
			chunks[id] = "open"
			if e.LastChunk {
				chunks[id] = "closed"
			}
			for _, p := range e.Artifact.Parts {
				if tp, ok := p.(a2asdk.TextPart); ok {
					obs.text += tp.Text
				}
			}
		case *a2asdk.TaskStatusUpdateEvent:
			if i == 0 && c.fromStart {
				bad("the stream does not open with the task")
			}
			st := e.Status.State
			if e.Final {
				finals++
				if !st.Terminal() && st != a2asdk.TaskStateInputRequired && st != a2asdk.TaskStateAuthRequired {
					bad("final true in state %s, which is no outcome", st)
				}
				a2aOutcome(obs, e)
			} else if st != a2asdk.TaskStateWorking && st != a2asdk.TaskStateSubmitted {
				bad("state %s without final true", st)
			}
			if m := e.Status.Message; m != nil && !e.Final {
				for _, p := range m.Parts {
					if tp, ok := p.(a2asdk.TextPart); ok && tp.Metadata["adk_thought"] == true {
						obs.reasoning += tp.Text
					}
				}
			}
		default:
			bad("a %T in a task's stream", ev)
		}
	}
	if c.complete && finals != 1 {
		problems = append(problems, fmt.Sprintf("%d final status-updates; want the stream to end with one", finals))
	}
	return problems
}

// a2aOutcome fills obs from a final status-update (or a task's status).
func a2aOutcome(obs *observation, e *a2asdk.TaskStatusUpdateEvent) {
	switch e.Status.State {
	case a2asdk.TaskStateCompleted:
		obs.finish = bridge.StopEndTurn
	case a2asdk.TaskStateInputRequired:
		obs.finish = bridge.StopToolUse
	default:
		// The run did not complete: the stream's last word is an error.
		obs.errFrame = true
		obs.err = &wireError{message: a2aStatusText(e.Status.Message)}
	}
	obs.usage = a2aUsage(e.Metadata)
}

func a2aStatusText(m *a2asdk.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if tp, ok := p.(a2asdk.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}

// a2aUsage reads the bridge's usage extension (metadata.usage).
func a2aUsage(meta map[string]any) *usage {
	u, ok := meta["usage"].(map[string]any)
	if !ok {
		return nil
	}
	n := func(k string) int64 {
		f, _ := u[k].(float64)
		return int64(f)
	}
	return &usage{in: n("inputTokens"), out: n("outputTokens"), total: n("totalTokens")}
}

// validateA2ATaskResponse checks a message/send response: one JSON-RPC
// response whose result is the task, and fills obs.
func validateA2ATaskResponse(t *testing.T, obs *observation, body []byte) {
	t.Helper()
	if ct := obs.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("message/send Content-Type %q", ct)
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || resp.JSONRPC != "2.0" || resp.Result == nil {
		t.Errorf("message/send answer: %v: %s", err, body)
		return
	}
	var task a2asdk.Task
	if err := json.Unmarshal(resp.Result, &task); err != nil {
		t.Errorf("a2a-go cannot read the task: %v", err)
		return
	}
	obs.runID, obs.sessionID = string(task.ID), task.ContextID
	obs.text = taskText(&task)
	for _, m := range task.History {
		for _, p := range m.Parts {
			if tp, ok := p.(a2asdk.TextPart); ok && tp.Metadata["adk_thought"] == true {
				obs.reasoning += tp.Text
			}
		}
	}
	a2aOutcome(obs, &a2asdk.TaskStatusUpdateEvent{Status: task.Status, Metadata: task.Metadata})
	if obs.errFrame {
		obs.errFrame = false // a failed task is the answer's content, not an error frame
	}
}

// ---- outbound: a fake A2A agent -----------------------------------------------

var a2aOut = outboundSide{
	name: "a2a",
	describe: "The bridge's A2A client (outbound/a2a) against a fake A2A agent that writes A2A 0.3 SSE by hand " +
		"(the frames a2a-go and @a2a-js/sdk write: the task, working, artifact-update chunks, the final status-update), " +
		"reporting usage the way a bridge does (metadata.usage).",
	play: a2aAgentUpstream,
	limits: func() []string {
		return []string{
			"An A2A agent runs its own tools and cannot ask the client to run one: client tools are dropped (named \"tools\").",
			"Usage: A2A has none; a bridge upstream reports it in metadata.usage, which is read back; other agents report none.",
			"The model's reasoning comes from status messages: adk_thought text, and any process text in the a2a profile.",
			"Stop reasons: only the task state (completed, input-required, failed, canceled) comes back.",
			"An agent's errors are JSON-RPC codes, mapped by the error table; the upstream's HTTP status and typed error object " +
				"of another dialect cannot come through.",
			"A stateless client's history is matched by fingerprint; an edited history opens a new context with the earlier " +
				"turns inlined as text (named in X-Bridge-Dropped).",
		}
	},
}

func a2aAgentUpstream(t *testing.T, sc *script) (*fakeUpstream, string) {
	for _, c := range sc.calls {
		switch {
		case len(c.tools) > 0:
			return nil, "an A2A agent runs its own tools: it cannot ask the client to run one"
		case c.fail != nil:
			return nil, "an A2A agent answers JSON-RPC errors, not HTTP statuses with another dialect's typed error object"
		}
	}
	a := &fakeAgent{sc: sc, stopped: map[string]bool{}, cancel: map[string]context.CancelFunc{}}
	a.srv = httptest.NewServer(a)
	t.Cleanup(a.srv.Close)
	return &fakeUpstream{
		configure: func(c *Config) {
			c.Upstreams = []Upstream{{Name: "a2a", Dialect: "a2a", URL: a.srv.URL}}
		},
		requests: a.requests,
		cancelled: func() int {
			a.mu.Lock()
			defer a.mu.Unlock()
			return len(a.stopped)
		},
	}, ""
}

// fakeAgent plays a script as an A2A 0.3 agent.
type fakeAgent struct {
	sc  *script
	srv *httptest.Server

	mu       sync.Mutex
	received []string
	contexts []string
	stopped  map[string]bool // tasks whose work stopped early (tasks/cancel or a closed stream)
	cancel   map[string]context.CancelFunc
}

func (a *fakeAgent) requests() []upstreamRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]upstreamRequest, len(a.received))
	for i, text := range a.received {
		out[i] = upstreamRequest{messages: []msg{userMsg(text)}}
	}
	return out
}

func (a *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"protocolVersion":"0.3.0","name":"matrix-agent","description":"scripted","url":%q,"preferredTransport":"JSONRPC",`+
			`"version":"1.0.0","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
			`"skills":[{"id":"s","name":"s","description":"s","tags":[]}]}`, a.srv.URL+"/a2a")
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ID      string         `json:"id"`
			Message a2asdk.Message `json:"message"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch req.Method {
	case "message/stream":
		a.stream(w, r, req.ID, &req.Params.Message)
	case "tasks/cancel":
		a.mu.Lock()
		stop, ok := a.cancel[req.Params.ID]
		if ok {
			a.stopped[req.Params.ID] = true
		}
		a.mu.Unlock()
		if !ok {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"Task not found: %s"}}`, req.ID, req.Params.ID)
			return
		}
		stop()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":%q,"contextId":"c","status":{"state":"canceled"}}}`, req.ID, req.Params.ID)
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"Task not found"}}`, req.ID)
	}
}

func (a *fakeAgent) stream(w http.ResponseWriter, r *http.Request, id json.RawMessage, m *a2asdk.Message) {
	var text strings.Builder
	for _, p := range m.Parts {
		if tp, ok := p.(a2asdk.TextPart); ok {
			text.WriteString(tp.Text)
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	a.mu.Lock()
	n := len(a.received)
	a.received = append(a.received, text.String())
	a.contexts = append(a.contexts, m.ContextID)
	task := fmt.Sprintf("task-%d", n)
	a.cancel[task] = cancel
	a.mu.Unlock()
	contextID := m.ContextID
	if contextID == "" {
		contextID = fmt.Sprintf("ctx-%d", n)
	}
	call := a.sc.call(n, text.String())
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	seq := 0
	head := fmt.Sprintf(`"taskId":%q,"contextId":%q`, task, contextID)
	delay := call.delay
	var write func(result string) bool
	write = func(result string) bool {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				a.mu.Lock()
				a.stopped[task] = true
				a.mu.Unlock()
				if r.Context().Err() == nil { // tasks/cancel: the stream ends canceled, as a2a-go's does
					delay = 0
					write(`{"kind":"status-update",` + head + `,"status":{"state":"canceled"},"final":true}`)
				}
				return false
			}
		}
		seq++
		if _, err := fmt.Fprintf(w, "id: %s-%d\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", task, seq, id, result); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	if !write(fmt.Sprintf(`{"kind":"task","id":%q,"contextId":%q,"status":{"state":"submitted"},"history":[]}`, task, contextID)) ||
		!write(`{"kind":"status-update",`+head+`,"status":{"state":"working"},"final":false}`) {
		return
	}
	for _, rs := range call.reasoning {
		if !write(`{"kind":"status-update",` + head + `,"status":{"state":"working","message":{"kind":"message","messageId":"r","role":"agent",` +
			`"parts":[{"kind":"text","text":` + q(rs) + `,"metadata":{"adk_thought":true}}]}},"final":false}`) {
			return
		}
	}
	for i, piece := range call.text {
		if !write(fmt.Sprintf(`{"kind":"artifact-update",%s,"artifact":{"artifactId":"answer","parts":[{"kind":"text","text":%s}]},"append":%v,"lastChunk":false}`,
			head, q(piece), i > 0)) {
			return
		}
	}
	if call.midError != nil {
		write(`{"kind":"status-update",` + head + `,"status":{"state":"failed","message":{"kind":"message","messageId":"e","role":"agent",` +
			`"parts":[{"kind":"text","text":` + q(call.midError.message) + `}]}},"final":true}`)
		return
	}
	meta := ""
	if call.usage != nil {
		meta = fmt.Sprintf(`,"metadata":{"usage":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}`, call.usage.in, call.usage.out, call.usage.total)
	}
	write(`{"kind":"status-update",` + head + `,"status":{"state":"completed"},"final":true` + meta + `}`)
}

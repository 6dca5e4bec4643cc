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

// adkMatrixPairs are the matrix rows with adk on either side.
func adkMatrixPairs() []pair {
	return []pair{
		{inbound: adkClient{}, outbound: openaiOut, notes: []string{
			"An OpenAI-compatible model served as an ADK api_server: the ADK session's stored transcript is replayed " +
				"to the stateless upstream each turn; partial text and thought events while streaming, then the complete " +
				"event (the whole text once, usageMetadata, finishReason), then data: [DONE].",
		}},
		{inbound: adkClient{}, outbound: echoOut},
		{inbound: openaiClient{}, outbound: adkOut, notes: []string{
			"A stateless Chat Completions client over an ADK api_server: a request whose history extends a transcript " +
				"the agent answered sends only the new message into the same ADK session; partial events become deltas " +
				"and the complete event adds only what they did not carry.",
		}},
		{inbound: adkClient{}, outbound: adkOut},
		{inbound: adkClient{}, outbound: anthropicOut},
		{inbound: adkClient{}, outbound: a2aOut},
		{inbound: anthropicClient{over: "adk"}, outbound: adkOut},
		{inbound: a2aInClient{}, outbound: adkOut},
	}
}

// matrixADKApp is the app name the ADK rows use (the model name has a
// dash, which an ADK app name cannot have).
const matrixADKApp = "matrix_app"

// ---- inbound: the ADK client -------------------------------------------------

type adkClient struct{}

// adkRunSessions remembers the ADK session of each run the driver started,
// for the resumes (an ADK resume names the session).
var adkRunSessions sync.Map

var adkSessionSeq atomic.Int64

func (adkClient) dialect() string { return "adk" }

func (adkClient) describe() string {
	return "ADK api_server client (raw net/http, as the ADK web UI and chatkit's ADK adapter talk to it): it creates the " +
		"session, POST /run_sse (streaming true) or POST /run, resumes with a run_sse request carrying lastEventId and no " +
		"newMessage. Every stream is checked by the ADK stream validator."
}

func (adkClient) cannot(scenario string) string {
	switch scenario {
	case "tool_round_trip", "tool_args_split", "parallel_tools":
		return "an ADK client declares no tools and runs none: tools are the agent's own, shown as functionCall and " +
			"functionResponse events, never the client's to execute"
	case "error_before_first_byte":
		return "an ADK error answer is {\"error\": message} with the status: the upstream's error type and code have no place in it"
	case "error_mid_stream":
		return "an ADK stream error is an event with errorCode and errorMessage: the upstream's error type has no place in it"
	case "client_cancel":
		return "an ADK run_sse stream is resumable (lastEventId), so a client that drops it leaves the run going; the ADK " +
			"api_server has no cancel request"
	}
	return ""
}

func (adkClient) limits() []string {
	return []string{
		"Tools: an ADK client declares none, so the upstream model gets no tools; an upstream agent's own tools are " +
			"shown as functionCall and functionResponse events.",
		"Reasoning is shown as thought parts; signatures ride in thoughtSignature, encrypted reasoning is dropped.",
		"Stop reasons are finishReason (STOP, MAX_TOKENS, SAFETY); a failed, cancelled or interrupted run ends with an " +
			"errorCode event (the upstream's code or the HTTP status, CANCELLED, INTERRUPTED), then [DONE].",
		"Timestamps and lastUpdateTime are float seconds (Python ADK's unit; ADK-JS writes milliseconds, which the bridge reads).",
	}
}

func adkLastUser(tr turn) string {
	for i := len(tr.messages) - 1; i >= 0; i-- {
		if tr.messages[i].role == bridge.RoleUser {
			return tr.messages[i].text
		}
	}
	return ""
}

// session makes the turn's ADK session (X-Session-Id as the ADK id, or a
// fresh one); an existing one is reused.
func (adkClient) session(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) string {
	t.Helper()
	id := tr.session
	if id == "" {
		id = fmt.Sprintf("matrix-%d", adkSessionSeq.Add(1))
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/apps/"+matrixADKApp+"/users/u/sessions/"+id, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 400 {
		t.Fatalf("create session: status %d", resp.StatusCode)
	}
	return id
}

func (adkClient) post(ctx context.Context, t *testing.T, b *bridgeUT, path string, body map[string]any) *http.Response {
	t.Helper()
	j, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+path, bytes.NewReader(j))
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

func (c adkClient) runBody(session string, tr turn, streaming bool) map[string]any {
	return map[string]any{"appName": matrixADKApp, "userId": "u", "sessionId": session, "streaming": streaming,
		"newMessage": map[string]any{"role": "user", "parts": []any{map[string]string{"text": adkLastUser(tr)}}}}
}

func (c adkClient) send(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *observation {
	t.Helper()
	sess := c.session(ctx, t, b, tr)
	path := "/run"
	if tr.stream {
		path = "/run_sse"
	}
	resp := c.post(ctx, t, b, path, c.runBody(sess, tr, tr.stream))
	defer resp.Body.Close()
	obs := &observation{status: resp.StatusCode, header: resp.Header, runID: resp.Header.Get("X-Run-Id"), sessionID: resp.Header.Get("X-Session-Id")}
	adkRunSessions.Store(obs.runID, sess)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != 200 {
		obs.err = adkWireError(resp.StatusCode, body)
		return obs
	}
	if !tr.stream {
		var evs []json.RawMessage
		if err := json.Unmarshal(body, &evs); err != nil {
			t.Fatalf("/run: %v: %s", err, body)
		}
		for _, e := range evs {
			adkObserve(t, obs, e, false)
		}
		return obs
	}
	obs.frames = bodyFrames(t, body, maxFrames)
	validateADKStream(t, obs, true)
	return obs
}

func adkWireError(status int, body []byte) *wireError {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return &wireError{status: status, message: e.Error}
}

// adkEv is the part of an ADK event the driver reads.
type adkEv struct {
	ID           string `json:"id"`
	InvocationID string `json:"invocationId"`
	Author       string `json:"author"`
	Partial      bool   `json:"partial"`
	FinishReason string `json:"finishReason"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
	Content      *struct {
		Role  string `json:"role"`
		Parts []struct {
			Text         string          `json:"text"`
			Thought      bool            `json:"thought"`
			FunctionCall json.RawMessage `json:"functionCall"`
		} `json:"parts"`
	} `json:"content"`
	UsageMetadata *struct {
		Prompt     *int64 `json:"promptTokenCount"`
		Candidates *int64 `json:"candidatesTokenCount"`
		Total      *int64 `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

// adkObserve folds one event into obs: the text and thought of partial
// events when streamed, of complete events when not.
func adkObserve(t *testing.T, obs *observation, raw []byte, streamed bool) adkEv {
	t.Helper()
	var ev adkEv
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("event %s: %v", raw, err)
	}
	if ev.ErrorCode != "" {
		obs.err, obs.errFrame = &wireError{message: ev.ErrorMessage, code: ev.ErrorCode}, true
	}
	if ev.Content != nil && ev.Partial == streamed {
		for _, p := range ev.Content.Parts {
			if p.Thought {
				obs.reasoning += p.Text
			} else {
				obs.text += p.Text
			}
		}
	}
	if !ev.Partial {
		switch ev.FinishReason {
		case "STOP":
			obs.finish = bridge.StopEndTurn
		case "MAX_TOKENS":
			obs.finish = bridge.StopMaxTokens
		}
		if u := ev.UsageMetadata; u != nil && u.Prompt != nil && u.Candidates != nil {
			obs.usage = &usage{in: *u.Prompt, out: *u.Candidates}
			if u.Total != nil {
				obs.usage.total = *u.Total
			}
		}
	}
	return ev
}

// validateADKStream checks a run_sse stream: every frame but the last is
// one ADK event, its id in the SSE id field too, of the run; the partial
// texts of a step are what its complete event repeats; a complete stream
// ends with [DONE].
func validateADKStream(t *testing.T, obs *observation, complete bool) {
	t.Helper()
	var stepText, stepThought strings.Builder
	done := false
	for i, f := range obs.frames {
		if done {
			t.Errorf("frame %d after [DONE]", i+1)
		}
		if len(f.data) != 1 {
			t.Errorf("frame %d has %d data lines", i+1, len(f.data))
			continue
		}
		if f.data[0] == "[DONE]" {
			done = true
			continue
		}
		ev := adkObserve(t, obs, []byte(f.data[0]), true)
		if !f.hasID || f.id != ev.ID || ev.ID == "" {
			t.Errorf("frame %d: SSE id %q, event id %q", i+1, f.id, ev.ID)
		}
		if ev.InvocationID != obs.runID {
			t.Errorf("frame %d: invocationId %q, run %q", i+1, ev.InvocationID, obs.runID)
		}
		if ev.Content == nil {
			continue
		}
		var text, thought string
		for _, p := range ev.Content.Parts {
			if p.Thought {
				thought += p.Text
			} else {
				text += p.Text
			}
		}
		if ev.Partial {
			stepText.WriteString(text)
			stepThought.WriteString(thought)
			continue
		}
		// The complete event repeats the step's text: the partials read are
		// all of it, or (after a resume) its end.
		if ev.Content.Role == "model" && !strings.HasSuffix(text, stepText.String()) {
			t.Errorf("frame %d: the complete event's text %q does not end with the partials' %q", i+1, text, stepText.String())
		}
		stepText.Reset()
		stepThought.Reset()
	}
	if complete && !done {
		t.Errorf("the stream does not end with [DONE]")
	}
}

func (c adkClient) open(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *liveStream {
	t.Helper()
	sess := c.session(ctx, t, b, tr)
	ctx, cancel := context.WithCancel(ctx)
	resp := c.post(ctx, t, b, "/run_sse", c.runBody(sess, tr, true))
	ls, drop := liveSSE(t, "run_sse", resp, cancel, nil)
	adkRunSessions.Store(ls.runID, sess)
	ls.drop = func(t *testing.T) *observation {
		t.Helper()
		drop()
		obs := ls.observation("X-Session-Id")
		validateADKStream(t, obs, false)
		return obs
	}
	return ls
}

// events resumes the run with a run_sse request carrying lastEventId (the
// run's start, run:0, for the whole run) and no newMessage.
func (c adkClient) events(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string, tr turn) *observation {
	t.Helper()
	sess, _ := adkRunSessions.Load(runID)
	if lastEventID == "" {
		lastEventID = bridge.EventID(runID, 0)
	}
	resp := c.post(ctx, t, b, "/run_sse", map[string]any{"sessionId": sess, "streaming": true, "lastEventId": lastEventID})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("resume %s after %s: status %d: %s", runID, lastEventID, resp.StatusCode, body)
	}
	obs := readReplay(t, "resume "+runID, resp, runID)
	validateADKStream(t, obs, true)
	return obs
}

// ---- outbound: a fake ADK api_server playing the script ---------------------

var adkOut = outboundSide{
	name: "adk",
	describe: "The bridge's ADK client (outbound/adk) against a fake ADK api_server that plays the script in the ADK-JS " +
		"wire format (partial events, then the complete event repeating their text, no [DONE]; the stream just ends).",
	play: adkUpstream,
	limits: func() []string {
		return []string{
			"The app is the configured model (ADK app names are letters, digits and _); the ADK user is the bridge principal.",
			"Client tools cannot be offered to an ADK agent (its tools are its own): a request's tools are dropped and named.",
			"No upstream resume: ADK has none, so a stream that closes before the final response interrupts the run.",
		}
	},
}

func adkUpstream(t *testing.T, sc *script) (*fakeUpstream, string) {
	for _, c := range sc.calls {
		if len(c.tools) > 0 {
			return nil, "an ADK agent runs its own tools: the client's tool calls and their results cannot be passed through it"
		}
		if c.fail != nil {
			return nil, "an ADK api_server's error is {\"error\": message}: no error type or code to pass through"
		}
		if c.midError != nil {
			return nil, "an ADK stream error is an errorCode event: no error type to pass through"
		}
	}
	a := &fakeADK{sc: sc}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return &fakeUpstream{
		configure: func(c *Config) {
			c.Upstreams = []Upstream{{Name: "adk", Dialect: "adk", URL: srv.URL, Model: matrixADKApp}}
		},
		requests:  a.requests,
		cancelled: func() int { return int(a.cancelled.Load()) },
	}, ""
}

// fakeADK is an api_server whose agent plays a script.
type fakeADK struct {
	sc        *script
	mu        sync.Mutex
	reqs      []upstreamRequest
	n         int
	cancelled atomic.Int32
}

func (a *fakeADK) requests() []upstreamRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]upstreamRequest(nil), a.reqs...)
}

func (a *fakeADK) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/sessions") && r.Method == http.MethodPost {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"adk-sess-%d","appName":"%s","userId":"u","state":{},"events":[],"lastUpdateTime":%d}`,
			time.Now().UnixNano(), matrixADKApp, time.Now().UnixMilli())
		return
	}
	if r.URL.Path != "/run_sse" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		AppName    string `json:"appName"`
		NewMessage struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"newMessage"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	var text string
	for _, p := range req.NewMessage.Parts {
		text += p.Text
	}
	a.mu.Lock()
	n := a.n
	a.n++
	a.reqs = append(a.reqs, upstreamRequest{model: req.AppName, messages: []msg{userMsg(text)}})
	a.mu.Unlock()
	c := a.sc.call(n, text)
	defer func() {
		if r.Context().Err() != nil { // the bridge closed the call before its end
			a.cancelled.Add(1)
		}
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	fl.Flush()
	inv := fmt.Sprintf("e-%d", time.Now().UnixNano())
	seq := 0
	send := func(ev map[string]any) bool {
		seq++
		ev["id"], ev["invocationId"], ev["author"] = fmt.Sprintf("ev%06d", seq), inv, req.AppName
		ev["actions"] = map[string]any{"stateDelta": map[string]any{}, "artifactDelta": map[string]any{}, "requestedAuthConfigs": map[string]any{}, "requestedToolConfirmations": map[string]any{}}
		ev["longRunningToolIds"], ev["timestamp"] = []string{}, time.Now().UnixMilli()
		b, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		fl.Flush()
		return r.Context().Err() == nil
	}
	partial := func(s string, thought bool) bool {
		if c.delay > 0 {
			select {
			case <-time.After(c.delay):
			case <-r.Context().Done():
				return false
			}
		}
		return send(map[string]any{"partial": true, "content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": s, "thought": thought}}}})
	}
	for _, s := range c.reasoning {
		if !partial(s, true) {
			return
		}
	}
	for _, s := range c.text {
		if !partial(s, false) {
			return
		}
	}
	var parts []any
	if len(c.reasoning) > 0 {
		parts = append(parts, map[string]any{"text": strings.Join(c.reasoning, ""), "thought": true})
	}
	parts = append(parts, map[string]any{"text": strings.Join(c.text, "")})
	final := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "turnComplete": true}
	if c.stop == bridge.StopMaxTokens {
		final["finishReason"] = "MAX_TOKENS"
	} else {
		final["finishReason"] = "STOP"
	}
	if c.usage != nil {
		final["usageMetadata"] = map[string]int64{"promptTokenCount": c.usage.in, "candidatesTokenCount": c.usage.out, "totalTokenCount": c.usage.total}
	}
	send(final)
}

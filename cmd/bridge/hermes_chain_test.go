package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// The tests here put a bridge in front of a second bridge that serves the
// Hermes API (--upstream hermes=URL): openai client -> bridge A -> hermes ->
// bridge B -> OpenAI upstream (hermesUpstream's script).

// hermesHop records the requests bridge A sends bridge B's session stream,
// and cuts POST .../chat/stream number cutPost after cutAfter frames.
type hermesHop struct {
	srv               *httptest.Server
	cutPost, cutAfter int

	mu     sync.Mutex
	posts  int
	resume []string // the Last-Event-ID of each GET .../chat/stream
	cut    atomic.Bool
}

func newHermesHop(t *testing.T, target string, cutPost, cutAfter int) *hermesHop {
	t.Helper()
	h := &hermesHop{cutPost: cutPost, cutAfter: cutAfter}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		stream := strings.HasSuffix(r.URL.Path, "/chat/stream")
		cut := false
		if stream {
			h.mu.Lock()
			if r.Method == http.MethodPost {
				h.posts++
				cut = h.posts == h.cutPost
			} else {
				h.resume = append(h.resume, r.Header.Get("Last-Event-ID"))
			}
			h.mu.Unlock()
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		br := bufio.NewReader(resp.Body)
		frames := 0
		for {
			line, err := br.ReadBytes('\n')
			_, _ = w.Write(line)
			w.(http.Flusher).Flush()
			if len(line) > 0 && len(bytes.TrimSpace(line)) == 0 {
				frames++
				if cut && frames >= h.cutAfter {
					h.cut.Store(true)
					panic(http.ErrAbortHandler) // the connection drops mid-stream
				}
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hermesHop) resumes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.resume...)
}

// chatChunks streams a Chat Completions request to base and returns its
// text, its tool calls (id, name, arguments joined), the finish reason and
// the run id.
type chatResult struct {
	text, finish, run string
	calls             []chatCall
}

type chatCall struct{ id, name, args string }

func chatStream(t *testing.T, ctx context.Context, base, session string, body map[string]any) chatResult {
	t.Helper()
	body["stream"] = true
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	res := chatResult{run: resp.Header.Get("X-Run-Id")}
	for _, ev := range readSSE(t, resp.Body, nil) {
		if ev.data == "[DONE]" {
			continue
		}
		var c struct {
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
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("chunk %s: %v", ev.data, err)
		}
		if c.Error != nil {
			t.Fatalf("error chunk: %s", ev.data)
		}
		for _, ch := range c.Choices {
			res.text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				for len(res.calls) <= tc.Index {
					res.calls = append(res.calls, chatCall{})
				}
				cc := &res.calls[tc.Index]
				cc.id += tc.ID
				cc.name += tc.Function.Name
				cc.args += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				res.finish = ch.FinishReason
			}
		}
	}
	return res
}

// hermesRun reads a run of a bridge's Hermes API (GET /v1/runs/{id}).
func hermesRun(t *testing.T, ctx context.Context, base, id string) map[string]any {
	t.Helper()
	return hermesJSON(t, hermesDo(t, ctx, "GET", base+"/v1/runs/"+id, ""), 200)
}

// TestOpenAIToolLoopOverHermes: an OpenAI client with tools over a bridge
// serving Hermes. B's model asks for the client's weather tool: A's client
// gets a tool call it can answer (B's call id, name, arguments) and
// finish_reason tool_calls; the next request with its result continues the
// same run in A and the same upstream run in B (one run each, B's model
// gets the result as a tool result), though the link drops mid-way.
func TestOpenAIToolLoopOverHermes(t *testing.T) {
	up := hermesUpstream(t)
	b := serveUpstream(t, "openai="+up.BaseURL())
	// The link drops in the continuation's stream too: A resumes it after
	// the last frame it read, in the second step of B's run.
	hop := newHermesHop(t, b, 2, 3)
	a := serveUpstream(t, "hermes="+hop.srv.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "weather", "parameters": map[string]any{"type": "object"}}}}

	r1 := chatStream(t, ctx, a, "ht-1", map[string]any{"model": "m", "tools": tools,
		"messages": []map[string]any{{"role": "user", "content": "weather?"}}})
	if len(r1.calls) != 1 || r1.calls[0] != (chatCall{"call_w", "weather", `{"city":"Paris"}`}) || r1.finish != "tool_calls" {
		t.Fatalf("first step: calls %+v finish %q", r1.calls, r1.finish)
	}
	run1 := runOf(t, a, r1.run)
	if run1.Status != bridge.StatusInputRequired || run1.UpstreamRunID == "" {
		t.Fatalf("A's run %+v", run1)
	}
	if st := hermesRun(t, ctx, b, run1.UpstreamRunID)["status"]; st != "input_required" {
		t.Fatalf("B's run is %v", st)
	}

	r2 := chatStream(t, ctx, a, "ht-1", map[string]any{"model": "m", "tools": tools, "messages": []map[string]any{
		{"role": "user", "content": "weather?"},
		{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_w", "type": "function",
			"function": map[string]any{"name": "weather", "arguments": `{"city":"Paris"}`}}}},
		{"role": "tool", "tool_call_id": "call_w", "content": "20C"}}})
	if r2.text != "It is 20C." || r2.finish != "stop" || r2.run != r1.run {
		t.Fatalf("second step: %+v (first run %s)", r2, r1.run)
	}
	if res := hop.resumes(); !hop.cut.Load() || len(res) != 1 || !strings.HasPrefix(res[0], run1.UpstreamRunID+":") {
		t.Errorf("the continuation's stream: cut %v, resumes %q", hop.cut.Load(), res)
	}
	run2 := runOf(t, a, r2.run)
	if run2.Status != bridge.StatusCompleted || run2.UpstreamRunID != run1.UpstreamRunID {
		t.Errorf("A's run %+v, upstream run was %s", run2, run1.UpstreamRunID)
	}
	bRun := hermesRun(t, ctx, b, run1.UpstreamRunID)
	if bRun["status"] != "completed" || bRun["output"] != "It is 20C." {
		t.Errorf("B's run %v", bRun)
	}
	hist := hermesJSON(t, hermesDo(t, ctx, "GET", b+"/v1/sessions/"+bRun["session_id"].(string)+"/history?format=hermes", ""), 200)
	if runs := hist["runs"].([]any); len(runs) != 1 {
		t.Errorf("B's session has %d runs: %v", len(runs), hist)
	}
	reqs := up.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `"role":"tool"`) || !strings.Contains(string(reqs[1].Body), `"tool_call_id":"call_w"`) {
		t.Fatalf("the model got %d requests", len(reqs))
	}
	hist = hermesJSON(t, hermesDo(t, ctx, "GET", a+"/v1/sessions/ht-1/history", ""), 200)
	if runs := hist["runs"].([]any); len(runs) != 1 {
		t.Errorf("A's session has %d runs", len(runs))
	}
}

// TestHermesChainResume: the connection from A to B drops mid-stream; A
// resumes B's session stream with Last-Event-ID, and A's client gets the
// whole answer once, no gap, no duplicate; the model was called once.
func TestHermesChainResume(t *testing.T) {
	up := hermesUpstream(t)
	b := serveUpstream(t, "openai="+up.BaseURL())
	hop := newHermesHop(t, b, 1, 8)
	a := serveUpstream(t, "hermes="+hop.srv.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	r := chatStream(t, ctx, a, "hr-1", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "slow please"}}})
	if want := strings.Join(words("w", 40), ""); r.text != want || r.finish != "stop" {
		t.Errorf("text after the cut:\n got %q\nwant %q (finish %q)", r.text, want, r.finish)
	}
	if !hop.cut.Load() {
		t.Fatal("the link was not cut")
	}
	res := hop.resumes()
	run := runOf(t, a, r.run)
	if len(res) != 1 || !strings.HasPrefix(res[0], run.UpstreamRunID+":") {
		t.Errorf("resumes %q (upstream run %s)", res, run.UpstreamRunID)
	}
	if run.Status != bridge.StatusCompleted {
		t.Errorf("run %s %q", run.Status, run.Reason)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1", n)
	}
}

// TestHermesRestartResumesUpstream SIGKILLs bridge A while an OpenAI client
// (X-Session-Id: the run is detached) streams an answer from B, and
// restarts it on the same store. The restarted A reads the rest of B's run
// after the last frame it had committed, and the run's events hold the
// whole answer exactly once, ending completed; the model was called once.
func TestHermesRestartResumesUpstream(t *testing.T) {
	answer := words("h", 120)
	up := newSlowOpenAI(t, 15*time.Millisecond, func(int) []string { return answer })
	b := a2aBridge(t, up.baseURL())
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "hermes="+b)

	resp, runID := streamDetached(t.Context(), t, base, "agent", "hermes-restart-1")
	var text strings.Builder
	readSSE(t, resp.Body, func(evs []sseEvent) bool {
		text.WriteString(chunkText(t, evs[len(evs)-1].data))
		return text.Len() > len(answer[0])*5
	})
	if text.Len() == 0 || runID == "" {
		t.Fatalf("run %q: text %q", runID, text.String())
	}
	killBridge(t, proc)
	resp.Body.Close()

	_, base = bridgeProcess(t, "--db", db, "--upstream", "hermes="+b)
	var got strings.Builder
	seqs := map[string]bool{}
	for _, ev := range replaySSE(t, base, runID) {
		if ev.id != "" && seqs[ev.id] {
			t.Errorf("event id %s twice", ev.id)
		}
		seqs[ev.id] = true
		got.WriteString(chunkText(t, ev.data))
	}
	if want := strings.Join(answer, ""); got.String() != want {
		t.Errorf("the run's text after the restart:\n got %q\nwant %q", got.String(), want)
	}
	if run := getRun(t, base, runID); run.Status != bridge.StatusCompleted {
		t.Errorf("run: %s %q", run.Status, run.Reason)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the model upstream got %d requests, want 1", n)
	}
}

// TestHermesChainStopAndSteer: a steer on A lands in B's running run (B's
// model gets it in one more call of the same run: one run in B); a stop on
// A stops B's run (B's run is cancelled) and the model's stream.
func TestHermesChainStopAndSteer(t *testing.T) {
	up := hermesUpstream(t)
	b := serveUpstream(t, "openai="+up.BaseURL())
	a := serveUpstream(t, "hermes="+b)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	// Steer, from A's Hermes API.
	id := hermesJSON(t, hermesDo(t, ctx, "POST", a+"/v1/runs", `{"input":"slow please","session_id":"hc-steer"}`), 202)["run_id"].(string)
	deltas := 0
	frames := hermesStream(t, hermesDo(t, ctx, "GET", a+"/v1/runs/"+id+"/events", "").Body, func(f hermesFrame) bool {
		if f.Name == "assistant.delta" {
			if deltas++; deltas == 3 {
				hermesJSON(t, hermesDo(t, ctx, "POST", a+"/v1/runs/"+id+"/steer", `{"input":"also mention Rome"}`), 200)
			}
		}
		return false
	})
	var text strings.Builder
	for _, f := range frames {
		text.WriteString(f.str("delta"))
	}
	if got := names(frames); !strings.Contains(got, "run.steered") || !strings.HasSuffix(got, "run.completed done") ||
		!strings.HasSuffix(text.String(), "Rome too.") {
		t.Errorf("frames %q, text %q", got, text.String())
	}
	aRun := hermesRun(t, ctx, a, id) // a Hermes client's run: the hermes.run object
	bRun := hermesRun(t, ctx, b, aRun["upstream_run_id"].(string))
	hist := hermesJSON(t, hermesDo(t, ctx, "GET", b+"/v1/sessions/"+bRun["session_id"].(string)+"/history?format=hermes", ""), 200)
	if runs := hist["runs"].([]any); bRun["status"] != "completed" || len(runs) != 1 {
		t.Errorf("B's run %v, runs %v", bRun, runs)
	}
	reqs := up.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "also mention Rome") {
		t.Errorf("the model got %d requests", len(reqs))
	}

	// Stop, from A's run API.
	r := chatStreamCancel(t, ctx, a, "hc-stop")
	stopped := runOf(t, a, r)
	if stopped.Status != bridge.StatusCancelled || stopped.UpstreamRunID == "" {
		t.Fatalf("A's run %+v", stopped)
	}
	var st any
	waitUntil(t, "B's run to end", func() bool {
		st = hermesRun(t, ctx, b, stopped.UpstreamRunID)["status"]
		return st != "running"
	})
	if st != "cancelled" {
		t.Errorf("B's run is %v, want cancelled", st)
	}
}

// chatStreamCancel streams "slow please" from base with X-Session-Id
// session and cancels the run through the run API after a few chunks; it
// returns the run id.
func chatStreamCancel(t *testing.T, ctx context.Context, base, session string) string {
	t.Helper()
	resp, runID := streamSlow(ctx, t, base, session)
	defer resp.Body.Close()
	n := 0
	readSSE(t, resp.Body, func(evs []sseEvent) bool {
		if chunkText(t, evs[len(evs)-1].data) != "" {
			if n++; n == 3 {
				hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs/"+runID+"/cancel", ""), 200)
			}
		}
		return false
	})
	return runID
}

func streamSlow(ctx context.Context, t *testing.T, base, session string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"slow please"}]}`))
	req.Header.Set("X-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, resp.Header.Get("X-Run-Id")
}

// TestHermesToolLoopOverHermes: a Hermes client with tools over a bridge
// serving Hermes: the model's call reaches A's client as a client_tool
// tool.started, the stream ends waiting (run.interrupted, input_required),
// and the stream that sends the result goes on from run.started in the
// same run, in A and in B.
func TestHermesToolLoopOverHermes(t *testing.T) {
	up := hermesUpstream(t)
	b := serveUpstream(t, "openai="+up.BaseURL())
	a := serveUpstream(t, "hermes="+b)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	hermesJSON(t, hermesDo(t, ctx, "POST", a+"/api/sessions", `{"id":"hh-tools"}`), 201)

	f1 := hermesStream(t, hermesDo(t, ctx, "POST", a+"/api/sessions/hh-tools/chat/stream", `{"message":"weather?","tools":`+hermesWeatherTool+`}`).Body, nil)
	if got, want := names(f1), "run.started message.started tool.progress tool.started assistant.completed run.interrupted done"; got != want {
		t.Fatalf("frames %q, want %q", got, want)
	}
	if f1[3].Data["client_tool"] != true || f1[3].str("tool_call_id") != "call_w" || f1[5].str("status") != "input_required" {
		t.Errorf("waiting: %v %v", f1[3].Data, f1[5].Data)
	}
	run := f1[0].str("run_id")
	f2 := hermesStream(t, hermesDo(t, ctx, "POST", a+"/api/sessions/hh-tools/chat/stream", `{"input":[{"role":"tool","tool_call_id":"call_w","content":"20C"}]}`).Body, nil)
	if got, want := names(f2), "run.started message.started assistant.delta assistant.delta assistant.completed run.completed done"; got != want {
		t.Fatalf("frames %q, want %q", got, want)
	}
	checkFrames(t, f2, "hh-tools", run, int64(len(f1))+1)
	aRun := hermesRun(t, ctx, a, run)
	bRun := hermesRun(t, ctx, b, aRun["upstream_run_id"].(string))
	if aRun["status"] != "completed" || bRun["status"] != "completed" || bRun["output"] != "It is 20C." {
		t.Errorf("A's run %v, B's run %v", aRun, bRun)
	}
	if n := len(up.Requests()); n != 2 {
		t.Errorf("the model got %d requests", n)
	}
}

// TestHermesChainStopWaiting: a run that waits for the client's tool
// results over hermes= is stopped on the front bridge: the front run ends
// cancelled, and so does the upstream run, which was waiting too.
func TestHermesChainStopWaiting(t *testing.T) {
	up := hermesUpstream(t)
	b := serveUpstream(t, "openai="+up.BaseURL())
	a := serveUpstream(t, "hermes="+b)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "weather", "parameters": map[string]any{"type": "object"}}}}
	r := chatStream(t, ctx, a, "hw-1", map[string]any{"model": "m", "tools": tools,
		"messages": []map[string]any{{"role": "user", "content": "weather?"}}})
	run := runOf(t, a, r.run)
	if run.Status != bridge.StatusInputRequired || run.UpstreamRunID == "" {
		t.Fatalf("A's run %+v, want it waiting for the tool results", run)
	}
	resp := hermesDo(t, ctx, "POST", a+"/v1/runs/"+r.run+"/stop", "{}")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stop: %d", resp.StatusCode)
	}
	if got := runOf(t, a, r.run); got.Status != bridge.StatusCancelled {
		t.Errorf("A's run after the stop: %s, want cancelled", got.Status)
	}
	if st := hermesRun(t, ctx, b, run.UpstreamRunID)["status"]; st != "cancelled" {
		t.Errorf("B's run after the stop: %v, want cancelled", st)
	}
}

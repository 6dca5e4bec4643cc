package main

// The upstreams of the conventions suite: the front bridge every adapter
// talks to, and what stands behind it. Over "openai" the front bridge
// calls the scripted model directly; over "a2a", "adk" and "hermes" it
// calls a second bridge serving that dialect, which calls the same
// scripted model; over "adk-server" it calls an ADK api_server.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/internal/adkreal"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// convModelName is the model every adapter asks for, and the app of the
// ADK api_server's scripted agent.
const convModelName = "scripted"

// The scripted model's prompts. Every prompt carries the sub-test's tag,
// so a shared model (and a shared chain) tells the sub-tests apart.
//
//   - "say:<text>": the answer is <text>, one word a chunk; a text with
//     the word "slow" in it comes convSlowDelay a word.
//   - "weather? <tag>": a call of the client's weather tool; the tool's
//     result then gets "It is 20C."
//   - "also mention Rome <tag>" (a steer): "Rome too."
const (
	convSlowDelay = 15 * time.Millisecond
	convToolReply = "It is 20C."
	convSteerText = "also mention Rome"
	convSteerAns  = "Rome too."
)

// sayPrompt is a prompt whose answer is text.
func sayPrompt(text string) string { return "say:" + text }

// convSlowAnswer is an answer long enough to stop, steer or reload in the
// middle of: n words after the tag.
func convSlowAnswer(tag string, n int) string {
	ws := []string{"slow", tag}
	for i := 1; i <= n; i++ {
		ws = append(ws, "w"+strconv.Itoa(i))
	}
	return strings.Join(ws, " ")
}

// convModel is the scripted OpenAI model (openaitest) behind a front that
// records each request and whether the bridge went away before its reply
// was complete.
type convModel struct {
	srv   *openaitest.Server
	front *httptest.Server

	mu   sync.Mutex
	reqs []*convModelRequest
}

// convModelRequest is one request the model received.
type convModelRequest struct {
	req       upstreamRequest
	raw       []byte
	done      bool // the handler returned
	cancelled bool // ... with the request's context done: the caller left
}

func newConvModel(t *testing.T) *convModel {
	t.Helper()
	m := &convModel{}
	m.srv = openaitest.New(convReply)
	inner := m.srv.Config.Handler
	m.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &convModelRequest{raw: body}
		var w0 struct{}
		if json.Unmarshal(body, &w0) == nil {
			rec.req = parseUpstreamRequest(t, body)
		}
		m.mu.Lock()
		m.reqs = append(m.reqs, rec)
		m.mu.Unlock()
		inner.ServeHTTP(w, r)
		m.mu.Lock()
		rec.done, rec.cancelled = true, r.Context().Err() != nil
		m.mu.Unlock()
	}))
	t.Cleanup(func() { m.front.Close(); m.srv.Close() })
	return m
}

func (m *convModel) baseURL() string { return m.front.URL + "/v1" }

// requests returns the requests that mention tag in any message, in order.
func (m *convModel) requests(tag string) []convModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []convModelRequest
	for _, r := range m.reqs {
		for _, msg := range r.req.messages {
			if strings.Contains(msg.text, tag) {
				out = append(out, *r)
				break
			}
		}
	}
	return out
}

// convReply answers a model request by its last message (see the prompts).
func convReply(n int, body []byte) openaitest.Reply {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	role, text := "", ""
	if k := len(req.Messages); k > 0 {
		role, text = req.Messages[k-1].Role, contentText(req.Messages[k-1].Content)
	}
	// A fresh upstream context seeded with a kept transcript (regenerate
	// over a stateful upstream) carries the earlier turns as text before
	// the prompt: the prompt is the last line, from its "say:" on.
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	if i := strings.LastIndex(text, "say:"); i > 0 {
		text = text[i:]
	}
	c := &openaitest.Chunks{ID: "chatcmpl-conv-" + strconv.Itoa(n), Model: convModelName}
	switch {
	case role == "tool":
		return openaitest.Reply{Chunks: c.Role().Text(openaitest.Words(convToolReply)...).Finish("stop").Usage(20, 3).List()}
	case strings.Contains(text, convSteerText):
		return openaitest.Reply{Chunks: c.Role().Text(openaitest.Words(convSteerAns)...).Finish("stop").Usage(30, 2).List()}
	case strings.HasPrefix(text, "weather?"):
		return openaitest.Reply{Chunks: c.Role().ToolCall(0, "call_w"+strconv.Itoa(n), "weather", `{"city":`, `"Paris"}`).Finish("tool_calls").Usage(10, 5).List()}
	case strings.HasPrefix(text, "say:"):
		answer := strings.TrimPrefix(text, "say:")
		rep := openaitest.Reply{Chunks: c.Role().Text(openaitest.Words(answer)...).Finish("stop").Usage(5, len(strings.Fields(answer))).List()}
		if strings.HasPrefix(answer, "slow ") {
			rep.Delay = convSlowDelay
		}
		return rep
	}
	return openaitest.Reply{Chunks: c.Role().Text("unscripted").Finish("stop").List()}
}

// chain is a front bridge and what stands behind it.
type chain struct {
	upstream string // the upstream's name in the grid
	front    string // the front bridge's base URL, the one adapters call
	back     string // the second bridge's base URL ("" when none)
	backMain *Main  // the second bridge
	model    *convModel
	adkURL   string // the ADK api_server (over adk-server)
}

// toolTurn is a prompt that makes the upstream ask for a client tool,
// the tool's name, and whether an answer is the one its result gets.
func (c *chain) toolTurn(tag string) (prompt, tool string, answered func(string) bool) {
	if c.adkURL != "" { // the agent's long-running client_weather
		return "client:" + tag, "client_weather", func(a string) bool {
			return strings.HasPrefix(a, "the tool said: ") && strings.Contains(a, "20C")
		}
	}
	return "weather? " + tag, "weather", func(a string) bool { return a == convToolReply }
}

// answer is what the upstream answers prompt, the session's turn-th user
// turn: the scripted model answers a "say:" prompt with its text, the ADK
// agent with "turn <turn>: <prompt>".
func (c *chain) answer(prompt string, turn int) string {
	if c.adkURL != "" {
		return fmt.Sprintf("turn %d: %s", turn, prompt)
	}
	return strings.TrimPrefix(prompt, "say:")
}

// convUpstream is one column of the grid.
type convUpstream struct {
	name  string
	about string // for the table
	start func(t *testing.T) *chain
}

func convUpstreams() []convUpstream {
	overBridge := func(dialect string) func(t *testing.T) *chain {
		return func(t *testing.T) *chain {
			m := newConvModel(t)
			bm := convMain(t, Upstream{Name: "model", Dialect: "openai", URL: m.baseURL()})
			back := "http://" + bm.Addr()
			front := convBridge(t, Upstream{Name: dialect, Dialect: dialect, URL: back})
			return &chain{upstream: dialect, front: front, back: back, backMain: bm, model: m}
		}
	}
	return []convUpstream{
		{name: "openai", about: "an OpenAI Chat Completions model (outbound/openai/openaitest)", start: func(t *testing.T) *chain {
			m := newConvModel(t)
			return &chain{upstream: "openai", front: convBridge(t, Upstream{Name: "model", Dialect: "openai", URL: m.baseURL()}), model: m}
		}},
		{name: "a2a", about: "a second `bridge serve` as an A2A agent (`--upstream a2a=`), over the same model", start: overBridge("a2a")},
		{name: "adk", about: "a second `bridge serve` as an ADK api_server (`--upstream adk=`), over the same model", start: overBridge("adk")},
		{name: "hermes", about: "a second `bridge serve` as a Hermes API server (`--upstream hermes=`), over the same model", start: overBridge("hermes")},
		{name: "adk-server", about: "the real ADK api_server (`--upstream adk=`; @google/adk-devtools 2.0.0 started by internal/adkreal), " +
			"whose scripted agent answers \"turn <n>: <text>\" and has a weather tool of its own", start: func(t *testing.T) *chain {
			url := adkreal.Start(t)
			return &chain{upstream: "adk-server", front: convBridge(t, Upstream{Name: "adk", Dialect: "adk", URL: url}), adkURL: url}
		}},
	}
}

// convBridge starts a bridge over up; requests that name no model ask for
// the scripted one.
func convBridge(t *testing.T, up Upstream) string {
	t.Helper()
	return "http://" + convMain(t, up).Addr()
}

func convMain(t *testing.T, up Upstream) *Main {
	t.Helper()
	cfg := defaultConfig()
	cfg.Model = convModelName
	cfg.Upstreams = []Upstream{up}
	return startMain(t, cfg)
}

// upstreamRuns are the runs of the second bridge's session whose input
// mentions tag (the upstream side of a front bridge's session).
func (c *chain) upstreamRuns(ctx context.Context, t *testing.T, tag string) []*bridge.Run {
	t.Helper()
	st := c.backMain.Store()
	all, err := st.ListRuns(ctx, bridge.RunFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		msgs, err := st.RunMessages(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			for _, p := range m.Parts {
				if strings.Contains(p.Text, tag) {
					runs, err := st.ListRuns(ctx, bridge.RunFilter{SessionID: r.SessionID, Limit: 10000})
					if err != nil {
						t.Fatal(err)
					}
					return runs
				}
			}
		}
	}
	t.Fatalf("the second bridge has no run of %s", tag)
	return nil
}

// ---- probes of the chain -----------------------------------------------------

// convRun is the run API's view of a run.
type convRun struct {
	ID            string        `json:"id"`
	Status        bridge.Status `json:"status"`
	Reason        string        `json:"reason"`
	UpstreamRunID string        `json:"upstream_run_id"`
	LastEventID   string        `json:"last_event_id"`
}

// getRunState reads GET /v1/runs/{id} of the bridge at base.
func getRunState(ctx context.Context, t *testing.T, base, id string) *convRun {
	t.Helper()
	var r convRun
	status, body := convHTTP(ctx, t, "GET", base+"/v1/runs/"+id, nil, nil)
	if status != 200 {
		t.Fatalf("GET run %s: %d %s", id, status, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("GET run %s: %v: %s", id, err, body)
	}
	return &r
}

// waitRunState polls a run until it leaves running, and returns it.
func waitRunState(ctx context.Context, t *testing.T, base, id string) *convRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for {
		r := getRunState(ctx, t, base, id)
		if r.Status != bridge.StatusRunning {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s still running after %v", id, waitTimeout)
		case <-time.After(pollEvery):
		}
	}
}

// convHTTP sends a request and reads the whole answer.
func convHTTP(ctx context.Context, t *testing.T, method, url string, body any, header map[string]string) (int, []byte) {
	t.Helper()
	resp := convSend(ctx, t, method, url, body, header)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return resp.StatusCode, b
}

// convSend sends a request with a JSON body (a string is sent as is).
func convSend(ctx context.Context, t *testing.T, method, url string, body any, header map[string]string) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	for k, v := range convHeaders(ctx) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

// waitCond polls cond until it holds (what names it in the failure).
func waitCond(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		case <-time.After(pollEvery):
		}
	}
}

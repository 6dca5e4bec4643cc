package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/internal/adkreal"
	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
	"github.com/bridge-dev/bridge/outbound/adk/adktest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// Tool loops, stop and steer through agent upstreams: a front bridge whose
// upstream is a second bridge's A2A or ADK endpoint (or a fake ADK
// api_server), the second bridge over a scripted OpenAI model.

// toolModel is an OpenAI upstream that asks for the client's tool
// get_weather on a request without a tool result, and answers from the
// result otherwise.

// modelGotTools checks that every request the model got offered the
// client's get_weather tool (the tools travel through the agent upstream).
func modelGotTools(t *testing.T, model *openaitest.Server) {
	t.Helper()
	for i, r := range model.Requests() {
		var req struct {
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(r.Body, &req)
		if len(req.Tools) != 1 || req.Tools[0].Function.Name != "get_weather" {
			t.Errorf("model request %d offers tools %+v, want the client's get_weather", i, req.Tools)
		}
	}
}
func toolModel(t *testing.T) *openaitest.Server {
	t.Helper()
	s := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-tool", Model: "m"}
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			var s string
			if json.Unmarshal(last.Content, &s) != nil {
				var parts []struct{ Text string }
				_ = json.Unmarshal(last.Content, &parts)
				for _, p := range parts {
					s += p.Text
				}
			}
			return openaitest.Reply{Chunks: c.Role().Text("the tool said: ", s).Finish("stop").List()}
		}
		return openaitest.Reply{Chunks: c.Role().Text("let me look").ToolCall(0, "call_w1", "get_weather", `{"city":`, `"Paris"}`).Finish("tool_calls").List()}
	})
	t.Cleanup(s.Close)
	return s
}

// agentTurn is one Chat Completions request's outcome.
type agentTurn struct {
	run, text, finish string
	calls             []struct{ ID, Name, Args string }
}

// agentChat streams a Chat Completions request to base and collects its answer.
func agentChat(t *testing.T, ctx context.Context, base string, header http.Header, body map[string]any) agentTurn {
	t.Helper()
	body["stream"] = true
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d %s", resp.StatusCode, raw)
	}
	out := agentTurn{run: resp.Header.Get("X-Run-Id")}
	var text strings.Builder
	for _, l := range bytes.Split(raw, []byte("\n")) {
		d, ok := bytes.CutPrefix(l, []byte("data: "))
		if !ok || string(d) == "[DONE]" {
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
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(d, &c) != nil || len(c.Error) > 0 {
			t.Fatalf("chat: frame %s", d)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				for len(out.calls) <= tc.Index {
					out.calls = append(out.calls, struct{ ID, Name, Args string }{})
				}
				cl := &out.calls[tc.Index]
				cl.ID += tc.ID
				cl.Name += tc.Function.Name
				cl.Args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				out.finish = *ch.FinishReason
			}
		}
	}
	out.text = text.String()
	return out
}

// runJSON reads a run from a bridge's run API.
func runJSON(t *testing.T, ctx context.Context, base, id string) map[string]any {
	t.Helper()
	var r map[string]any
	adkJSON(t, ctx, "GET", base+"/v1/runs/"+id, "", 200, &r)
	return r
}

// toolLoop runs an OpenAI client's tool loop against front: the model
// asks for get_weather, the client answers, the model answers from the
// result. With a session (X-Session-Id, the chatkit convention) the loop
// is one front run. It returns the two turns.
func toolLoop(t *testing.T, ctx context.Context, front, model, session string) (agentTurn, agentTurn) {
	t.Helper()
	var h http.Header
	if session != "" {
		h = http.Header{"X-Session-Id": {session}}
	}
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]string{"type": "string"}}}}}}
	msgs := []map[string]any{{"role": "user", "content": "weather in Paris?"}}
	first := agentChat(t, ctx, front, h, map[string]any{"model": model, "messages": msgs, "tools": tools})
	if first.finish != "tool_calls" || len(first.calls) != 1 || first.calls[0].Name != "get_weather" ||
		first.calls[0].ID == "" || !strings.Contains(first.calls[0].Args, "Paris") {
		t.Fatalf("first turn: %+v (want one get_weather call the client can answer)", first)
	}
	c := first.calls[0]
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": first.text, "tool_calls": []map[string]any{{"id": c.ID, "type": "function",
			"function": map[string]string{"name": c.Name, "arguments": c.Args}}}},
		map[string]any{"role": "tool", "tool_call_id": c.ID, "content": "sunny, 21 C"})
	second := agentChat(t, ctx, front, h, map[string]any{"model": model, "messages": msgs, "tools": tools})
	if second.finish != "stop" || !strings.Contains(second.text, "the tool said: sunny, 21 C") {
		t.Fatalf("second turn: %+v (want the answer from the tool's result)", second)
	}
	if session != "" {
		if second.run != first.run || first.run == "" {
			t.Errorf("the tool loop made runs %q and %q on the front, want one", first.run, second.run)
		}
		if r := runJSON(t, ctx, front, first.run); r["status"] != "completed" {
			t.Errorf("front run: %v", r)
		}
	}
	return first, second
}

// TestToolLoopOverA2ABridge: an OpenAI client with tools, over a front
// bridge whose upstream is a second bridge's A2A endpoint. The second
// bridge's task stops input-required with the model's function call; the
// client gets the call, and its result continues the same front run and
// the same upstream task, where the model gets it as a tool result.
func TestToolLoopOverA2ABridge(t *testing.T) {
	model := toolModel(t)
	back := a2aBridge(t, model.BaseURL())
	front := a2aUpstreamBridge(t, back, "")
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()

	for _, session := range []string{"loop-a2a", ""} {
		first, second := toolLoop(t, ctx, front, "agent", session)
		task, _ := runJSON(t, ctx, front, first.run)["upstream_run_id"].(string)
		task2, _ := runJSON(t, ctx, front, second.run)["upstream_run_id"].(string)
		if task == "" || task2 != task {
			t.Fatalf("session %q: the front runs name upstream tasks %q and %q, want one", session, task, task2)
		}
		up := runJSON(t, ctx, back, task)
		if up["status"] != "completed" {
			t.Errorf("session %q: upstream task %s: %v (want the one task, completed)", session, task, up)
		}
		// The upstream session holds one run: the task went on, no new one.
		var hist struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		adkJSON(t, ctx, "GET", back+"/v1/sessions/"+up["session_id"].(string)+"/history?format=openai", "", 200, &hist)
		if len(hist.Runs) != 1 || hist.Runs[0].ID != task {
			t.Errorf("session %q: upstream history runs %+v, want the one task %s", session, hist.Runs, task)
		}
		reqs := model.Requests()
		var last struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(reqs[len(reqs)-1].Body, &last)
		if m := last.Messages[len(last.Messages)-1]; m.Role != "tool" || m.ToolCallID != first.calls[0].ID {
			t.Errorf("session %q: the model's last request ends with %+v, want the tool result for %s", session, m, first.calls[0].ID)
		}
	}
	modelGotTools(t, model)
}

// TestToolLoopOverA2AAgent: the same over an a2a-go agent (a2asrv) that
// asks for the client's tool the way an ADK executor does: its task stops
// input-required with the function call in the status message. The
// client's result goes to the same task, as a function_response data part.
func TestToolLoopOverA2AAgent(t *testing.T) {
	agent := a2atest.New(func(n int, m *a2asdk.Message) a2atest.Reply {
		for _, p := range m.Parts {
			if d, ok := p.(a2asdk.DataPart); ok && d.Metadata["adk_type"] == "function_response" {
				resp, _ := json.Marshal(d.Data["response"])
				return a2atest.Reply{Chunks: []string{"the tool said: ", string(resp)}}
			}
		}
		return a2atest.Reply{Chunks: []string{"let me look"},
			Asks: map[string]any{"id": "adk-call-1", "name": "get_weather", "args": map[string]any{"city": "Paris"}}}
	})
	t.Cleanup(agent.Close)
	front := a2aUpstreamBridge(t, agent.URL, "")
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()

	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}}
	h := http.Header{"X-Session-Id": {"loop-a2a-agent"}}
	msgs := []map[string]any{{"role": "user", "content": "weather in Paris?"}}
	first := agentChat(t, ctx, front, h, map[string]any{"model": "agent", "messages": msgs, "tools": tools})
	if first.finish != "tool_calls" || len(first.calls) != 1 || first.calls[0].ID != "adk-call-1" || first.calls[0].Args != `{"city":"Paris"}` {
		t.Fatalf("first turn: %+v", first)
	}
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": first.text, "tool_calls": []map[string]any{{"id": "adk-call-1", "type": "function",
			"function": map[string]string{"name": "get_weather", "arguments": first.calls[0].Args}}}},
		map[string]any{"role": "tool", "tool_call_id": "adk-call-1", "content": `{"sky":"clear"}`})
	second := agentChat(t, ctx, front, h, map[string]any{"model": "agent", "messages": msgs, "tools": tools})
	if second.run != first.run || second.text != `the tool said: {"sky":"clear"}` {
		t.Fatalf("second turn: %+v (first run %s)", second, first.run)
	}
	got := agent.Received()
	if len(got) != 2 || got[1].TaskID != got[0].TaskID || got[0].TaskID == "" {
		t.Fatalf("the agent got %+v, want two messages to one task", got)
	}
	if r := runJSON(t, ctx, front, first.run); r["status"] != "completed" || r["upstream_run_id"] != got[0].TaskID {
		t.Errorf("front run: %v", r)
	}
}

// adkUpstreamBridge starts a bridge whose upstream is the ADK api_server
// (or a bridge's ADK endpoint) at url.
func adkUpstreamBridge(t *testing.T, url string) string {
	t.Helper()
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "adk", Dialect: "adk", URL: url}}
	return "http://" + startMain(t, cfg).Addr()
}

// TestToolLoopOverADKBridge: the tool loop over a front bridge whose
// upstream is a second bridge's ADK endpoint. The second bridge's run
// stops at the model's call, sent as a long-running functionCall; the
// client's result goes, as a functionResponse, to the same ADK session,
// where it continues the same run (the invocation).
func TestToolLoopOverADKBridge(t *testing.T) {
	model := toolModel(t)
	back := a2aBridge(t, model.BaseURL())
	front := adkUpstreamBridge(t, back)
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()

	for _, session := range []string{"loop-adk", ""} {
		first, second := toolLoop(t, ctx, front, "agent", session)
		inv, _ := runJSON(t, ctx, front, first.run)["upstream_run_id"].(string)
		inv2, _ := runJSON(t, ctx, front, second.run)["upstream_run_id"].(string)
		if inv == "" || inv2 != inv {
			t.Fatalf("session %q: the front runs name invocations %q and %q, want one", session, inv, inv2)
		}
		up := runJSON(t, ctx, back, inv)
		if up["status"] != "completed" {
			t.Errorf("session %q: upstream run %s: %v", session, inv, up)
		}
		var hist struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		adkJSON(t, ctx, "GET", back+"/v1/sessions/"+up["session_id"].(string)+"/history?format=openai", "", 200, &hist)
		if len(hist.Runs) != 1 || hist.Runs[0].ID != inv {
			t.Errorf("session %q: upstream history runs %+v, want the one run %s", session, hist.Runs, inv)
		}
	}
	modelGotTools(t, model)
}

// TestToolLoopOverADK: the same over ADK api_servers whose agent asks for
// the client's tool with a long-running functionCall (the fake, and the
// real one, whose client_weather tool is a LongRunningFunctionTool): the
// client's result goes to the same ADK session as a functionResponse, and
// the loop is one front run.
func TestToolLoopOverADK(t *testing.T) {
	fake := adktest.New()
	t.Cleanup(fake.Close)
	for _, c := range []struct {
		name, url, app, tool string
	}{{"fake", fake.URL, "scripted", "get_weather"}, {"real", adkreal.Start(t), adkreal.App, "client_weather"}} {
		t.Run(c.name, func(t *testing.T) {
			front := adkUpstreamBridge(t, c.url)
			ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
			defer cancel()
			h := http.Header{"X-Session-Id": {"loop-adk-" + c.name}}
			tools := []map[string]any{{"type": "function", "function": map[string]any{"name": c.tool, "parameters": map[string]any{"type": "object"}}}}
			msgs := []map[string]any{{"role": "user", "content": "client:Paris"}}
			first := agentChat(t, ctx, front, h, map[string]any{"model": c.app, "messages": msgs, "tools": tools})
			if first.finish != "tool_calls" || len(first.calls) != 1 || first.calls[0].ID != "call-client-1" ||
				first.calls[0].Name != c.tool || first.calls[0].Args != `{"city":"Paris"}` {
				t.Fatalf("first turn: %+v", first)
			}
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "call-client-1", "type": "function",
					"function": map[string]string{"name": c.tool, "arguments": first.calls[0].Args}}}},
				map[string]any{"role": "tool", "tool_call_id": "call-client-1", "content": `{"sky":"clear"}`})
			second := agentChat(t, ctx, front, h, map[string]any{"model": c.app, "messages": msgs, "tools": tools})
			if second.run != first.run || second.text != `the tool said: {"sky":"clear"}` {
				t.Fatalf("second turn: %+v (first run %s)", second, first.run)
			}
			if c.name == "fake" {
				reqs := fake.RunRequests()
				if len(reqs) != 2 || string(reqs[0]["sessionId"]) != string(reqs[1]["sessionId"]) {
					t.Fatalf("run requests %d: want two in one ADK session", len(reqs))
				}
				if !strings.Contains(string(reqs[1]["newMessage"]), `"functionResponse":{"id":"call-client-1"`) {
					t.Errorf("second newMessage %s, want the functionResponse", reqs[1]["newMessage"])
				}
			}
			if r := runJSON(t, ctx, front, first.run); r["status"] != "completed" {
				t.Errorf("front run: %v", r)
			}
		})
	}
}

// midStream streams a Chat Completions request to front and calls act
// with the run id once n frames have come, then reads the stream to its
// end. It returns the run id and the text.
func midStream(t *testing.T, ctx context.Context, front, model, session, input string, n int, act func(run string)) (string, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": model, "stream": true, "messages": []map[string]string{{"role": "user", "content": input}}})
	req, _ := http.NewRequestWithContext(ctx, "POST", front+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	run := resp.Header.Get("X-Run-Id")
	var raw bytes.Buffer
	br := bufio.NewReader(resp.Body)
	frames := 0
	for {
		line, err := br.ReadBytes('\n')
		raw.Write(line)
		if bytes.HasPrefix(line, []byte("data: ")) {
			if frames++; frames == n {
				act(run)
			}
		}
		if err != nil {
			break
		}
	}
	text, _ := chatStreamText(raw.Bytes())
	return run, text
}

// postRun posts to a bridge's run API and returns the status code.
func postRun(t *testing.T, ctx context.Context, base, run, op, body string) int {
	t.Helper()
	resp := adkDo(t, ctx, "POST", base+"/v1/runs/"+run+"/"+op, body)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitStatus waits until a bridge's run has ended and returns it.
func waitStatus(t *testing.T, ctx context.Context, base, run string) map[string]any {
	t.Helper()
	var r map[string]any
	waitUntil(t, "run "+run+" to end", func() bool {
		r = runJSON(t, ctx, base, run)
		return r["status"] != "running"
	})
	return r
}

// TestStopThroughAgentBridges: a stop on the front bridge stops the
// upstream bridge's run, over a2a= (tasks/cancel) and adk= (the upstream
// bridge's run API, found by the X-Run-Id its run_sse answer carries): its
// run ends cancelled and its model call is closed, not run to the end.
func TestStopThroughAgentBridges(t *testing.T) {
	for _, dialect := range []string{"a2a", "adk"} {
		t.Run(dialect, func(t *testing.T) {
			slow := newSlowOpenAI(t, 20*time.Millisecond, func(int) []string { return words("w", 200) })
			back := a2aBridge(t, slow.baseURL())
			front := a2aUpstreamBridge(t, back, "")
			if dialect == "adk" {
				front = adkUpstreamBridge(t, back)
			}
			ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
			defer cancel()
			run, text := midStream(t, ctx, front, "agent", "stop-"+dialect, "go", 4, func(run string) {
				if c := postRun(t, ctx, front, run, "cancel", ""); c != 200 {
					t.Errorf("cancel: %d", c)
				}
			})
			if len(text) >= len(strings.Join(words("w", 200), "")) {
				t.Errorf("the whole answer came despite the stop")
			}
			r := waitStatus(t, ctx, front, run)
			if r["status"] != "cancelled" {
				t.Errorf("front run %v", r)
			}
			up, _ := r["upstream_run_id"].(string)
			if up == "" {
				t.Fatalf("the front run names no upstream run: %v", r)
			}
			if u := waitStatus(t, ctx, back, up); u["status"] != "cancelled" {
				t.Errorf("upstream run %v, want cancelled", u)
			}
			waitUntil(t, "the upstream model call to be closed", func() bool { return slow.cancelled.Load() == 1 })
		})
	}
}

// TestStopOverADK: over ADK's own api_server (the fake) a stop closes
// run_sse, which is its stop: ADK-JS aborts the invocation when the
// connection closes, and the session never gets the answer's final event.
func TestStopOverADK(t *testing.T) {
	srv := adktest.New()
	srv.Delay = 20 * time.Millisecond
	t.Cleanup(srv.Close)
	front := adkUpstreamBridge(t, srv.URL)
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	long := strings.Repeat("word ", 200)
	run, _ := midStream(t, ctx, front, "scripted", "stop-adk-fake", "say:"+long, 4, func(run string) {
		if c := postRun(t, ctx, front, run, "cancel", ""); c != 200 {
			t.Errorf("cancel: %d", c)
		}
	})
	if r := waitStatus(t, ctx, front, run); r["status"] != "cancelled" {
		t.Errorf("front run %v", r)
	}
	reqs := srv.RunRequests()
	var sid string
	_ = json.Unmarshal(reqs[0]["sessionId"], &sid)
	waitUntil(t, "the ADK run to stop", func() bool { return srv.Aborted() == 1 })
	if sess := srv.Session("scripted", "bridge", sid); bytes.Contains(sess, []byte(`"turnComplete":true`)) {
		t.Errorf("the ADK session got the answer's final event after the stop: %s", sess)
	}
}

// TestSteerThroughAgentBridges: a steer to the front run lands in the same
// upstream turn, over a2a= (a message to the working task) and adk= (the
// upstream bridge's run API): the upstream bridge's run takes it (its
// model's next call ends with it), the front and the upstream each keep
// one run, and the front's client gets both answers in one stream.
func TestSteerThroughAgentBridges(t *testing.T) {
	for _, dialect := range []string{"a2a", "adk"} {
		t.Run(dialect, func(t *testing.T) {
			slow := newSlowOpenAI(t, 15*time.Millisecond, func(n int) []string {
				if n == 0 {
					return words("a", 20)
				}
				return []string{"steered"}
			})
			back := a2aBridge(t, slow.baseURL())
			front := a2aUpstreamBridge(t, back, "")
			if dialect == "adk" {
				front = adkUpstreamBridge(t, back)
			}
			ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
			defer cancel()
			run, text := midStream(t, ctx, front, "agent", "steer-"+dialect, "go", 4, func(run string) {
				if c := postRun(t, ctx, front, run, "steer", `{"input":"and also this"}`); c != 200 {
					t.Errorf("steer: %d", c)
				}
			})
			if !strings.HasPrefix(text, strings.Join(words("a", 20), "")) || !strings.HasSuffix(text, "steered") {
				t.Errorf("front answer %q, want the first answer then the steered one", text)
			}
			r := waitStatus(t, ctx, front, run)
			up, _ := r["upstream_run_id"].(string)
			if r["status"] != "completed" || up == "" {
				t.Fatalf("front run %v", r)
			}
			reqs := slow.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the upstream model got %d calls, want 2 (the steer adds one in the same run)", len(reqs))
			}
			if !strings.Contains(string(reqs[1].Body), "and also this") {
				t.Errorf("the model's second call lacks the steer: %s", reqs[1].Body)
			}
			u := waitStatus(t, ctx, back, up)
			var hist struct {
				Runs []struct{ ID string } `json:"runs"`
			}
			adkJSON(t, ctx, "GET", back+"/v1/sessions/"+u["session_id"].(string)+"/history?format=openai", "", 200, &hist)
			if u["status"] != "completed" || len(hist.Runs) != 1 {
				t.Errorf("upstream run %v, history runs %+v: want one completed run", u, hist.Runs)
			}
			var fh struct {
				Runs []struct {
					ID      string   `json:"id"`
					Dropped []string `json:"dropped"`
				} `json:"runs"`
			}
			adkJSON(t, ctx, "GET", front+"/v1/sessions/steer-"+dialect+"/history?format=openai", "", 200, &fh)
			if len(fh.Runs) != 1 || strings.Contains(strings.Join(fh.Runs[0].Dropped, ","), "steer") {
				t.Errorf("front history runs %+v, want one run whose steer joined the upstream turn", fh.Runs)
			}
		})
	}
}

// TestSteerOverADK: ADK's own api_server takes no input into an
// invocation in progress, so a steer waits for it to end and goes to the
// same ADK session as the next invocation, in the same front run; the
// run's history says the steer did not join the upstream turn.
func TestSteerOverADK(t *testing.T) {
	srv := adktest.New()
	srv.Delay = 15 * time.Millisecond
	t.Cleanup(srv.Close)
	front := adkUpstreamBridge(t, srv.URL)
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	run, text := midStream(t, ctx, front, "scripted", "steer-adk-fake", "say:"+strings.Repeat("word ", 20), 4, func(run string) {
		if c := postRun(t, ctx, front, run, "steer", `{"input":"say:steered"}`); c != 200 {
			t.Errorf("steer: %d", c)
		}
	})
	if !strings.HasSuffix(text, "steered") {
		t.Errorf("front answer %q, want the steered answer at its end", text)
	}
	if r := waitStatus(t, ctx, front, run); r["status"] != "completed" {
		t.Errorf("front run %v", r)
	}
	reqs := srv.RunRequests()
	if len(reqs) != 2 || string(reqs[0]["sessionId"]) != string(reqs[1]["sessionId"]) || !strings.Contains(string(reqs[1]["newMessage"]), "say:steered") {
		t.Fatalf("run requests %v: want the steer as the next invocation in the same session", reqs)
	}
	var fh struct {
		Runs []struct {
			ID      string   `json:"id"`
			Dropped []string `json:"dropped"`
		} `json:"runs"`
	}
	adkJSON(t, ctx, "GET", front+"/v1/sessions/steer-adk-fake/history?format=openai", "", 200, &fh)
	if len(fh.Runs) != 1 || !strings.Contains(strings.Join(fh.Runs[0].Dropped, ","), "steer:next_upstream_call") {
		t.Errorf("front history runs %+v, want one run that says its steer went to the next upstream call", fh.Runs)
	}
}

// TestADKOneSessionPerSessionID: two Chat Completions turns with one
// X-Session-Id, the first streamed and the second not (or the other way
// round), reach one ADK session: over the fake api_server (whose requests
// the test reads) and over the real one (whose agent counts the turns the
// session holds).
func TestADKOneSessionPerSessionID(t *testing.T) {
	real := adkreal.Start(t)
	for i, streams := range [][2]bool{{true, false}, {false, true}, {false, false}, {true, false}, {false, true}} {
		var srv *adktest.Server
		url := real
		if i < 3 {
			srv = adktest.New()
			url = srv.URL
		}
		front := adkUpstreamBridge(t, url)
		ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
		sid := fmt.Sprintf("one-adk-session-%d", i)
		turn := func(stream bool, msgs []map[string]string) string {
			b, _ := json.Marshal(map[string]any{"model": adkreal.App, "stream": stream, "messages": msgs})
			req, _ := http.NewRequestWithContext(ctx, "POST", front+"/v1/chat/completions", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Session-Id", sid)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("chat: %d %s", resp.StatusCode, raw)
			}
			if stream {
				text, _ := chatStreamText(raw)
				return text
			}
			var c struct {
				Choices []struct{ Message struct{ Content string } }
			}
			_ = json.Unmarshal(raw, &c)
			return c.Choices[0].Message.Content
		}
		msgs := []map[string]string{{"role": "user", "content": "hello"}}
		a1 := turn(streams[0], msgs)
		msgs = append(msgs, map[string]string{"role": "assistant", "content": a1}, map[string]string{"role": "user", "content": "again"})
		if a2 := turn(streams[1], msgs); a1 != "turn 1: hello" || a2 != "turn 2: again" {
			t.Errorf("streams %v: answers %q, %q (want one ADK session)", streams, a1, a2)
		}
		if srv != nil {
			if reqs := srv.RunRequests(); len(reqs) != 2 || string(reqs[0]["sessionId"]) != string(reqs[1]["sessionId"]) {
				t.Errorf("streams %v: run requests in sessions %s", streams, reqs)
			}
			srv.Close()
		}
		cancel()
	}
}

// TestADKListApps: GET /list-apps lists the --model and the config's
// models, hyphens and dots included, so an ADK web UI offers each; a
// session of such an app is created and runs.
func TestADKListApps(t *testing.T) {
	model := toolModel(t)
	cfg := defaultConfig()
	cfg.Model = "gpt-4o-mini"
	cfg.Upstreams = []Upstream{
		{Name: "one", Dialect: "openai", URL: model.BaseURL(), Models: []string{"gpt-4.1", "*"}},
		{Name: "two", Dialect: "openai", URL: model.BaseURL(), Models: []string{"claude_like"}},
	}
	base := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	var apps []string
	adkJSON(t, ctx, "GET", base+"/list-apps", "", 200, &apps)
	if strings.Join(apps, ",") != "claude_like,gpt-4.1,gpt-4o-mini" {
		t.Errorf("list-apps %q", apps)
	}
	var s struct{ ID string }
	adkJSON(t, ctx, "POST", base+"/apps/gpt-4o-mini/users/u/sessions/s1", `{}`, 200, &s)
	resp := adkDo(t, ctx, "POST", base+"/run_sse", `{"appName":"gpt-4o-mini","userId":"u","sessionId":"s1","streaming":true,"newMessage":{"role":"user","parts":[{"text":"hi"}]}}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "get_weather") {
		t.Errorf("run_sse of app gpt-4o-mini: %d %s", resp.StatusCode, b)
	}
	adkJSON(t, ctx, "POST", base+"/apps/no-such-model/users/u/sessions/s2", `{}`, 400, nil)
}

// TestStopOverRealADK: over the real api_server (ADK-JS 2.0.0) a stop
// ends the front run cancelled and closes run_sse, all ADK offers. What
// that does upstream is ADK's: its server means to abort the invocation
// when the request closes, yet the invocation of this test's agent runs
// to its end (its session gets the whole answer), which the test logs;
// docs/dialects.md says so.
func TestStopOverRealADK(t *testing.T) {
	url := adkreal.Start(t)
	front := adkUpstreamBridge(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	long := strings.Repeat("w ", 100)
	run, text := midStream(t, ctx, front, adkreal.App, "stop-adk-real", "slow "+long, 4, func(run string) {
		if c := postRun(t, ctx, front, run, "cancel", ""); c != 200 {
			t.Errorf("cancel: %d", c)
		}
	})
	r := waitStatus(t, ctx, front, run)
	inv, _ := r["upstream_run_id"].(string)
	if r["status"] != "cancelled" || inv == "" || strings.Contains(text, strings.TrimSpace(long)) {
		t.Fatalf("front run %v, text %q: want cancelled, the answer cut", r, text)
	}
	time.Sleep(2 * time.Second) // 100 words at 15 ms: an invocation that went on has ended
	var list struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	sessions := url + "/apps/" + adkreal.App + "/users/bridge/sessions"
	adkJSON(t, ctx, "GET", sessions, "", 200, &list)
	for _, s := range list.Sessions {
		var sess struct {
			Events []adkEvent `json:"events"`
		}
		adkJSON(t, ctx, "GET", sessions+"/"+s.ID, "", 200, &sess)
		for _, ev := range sess.Events {
			if ev.InvocationID == inv && ev.Author != "user" {
				t.Logf("ADK went on with the stopped invocation %s: its session has its answer", inv)
			}
		}
	}
}

// TestSteerOverA2AAgent: an a2a-go agent takes no message for a running
// task (its server answers an error), so a steer waits for the task to
// end and goes to the same context as the next message, in the same front
// run; the run's history says the steer did not join the upstream turn.
func TestSteerOverA2AAgent(t *testing.T) {
	agent := a2atest.New(func(n int, m *a2asdk.Message) a2atest.Reply {
		if n == 0 {
			return a2atest.Reply{Chunks: words("a", 20), Delay: 15 * time.Millisecond}
		}
		return a2atest.Reply{Chunks: []string{"steered"}}
	})
	t.Cleanup(agent.Close)
	front := a2aUpstreamBridge(t, agent.URL, "")
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	run, text := midStream(t, ctx, front, "agent", "steer-a2a-agent", "go", 4, func(run string) {
		if c := postRun(t, ctx, front, run, "steer", `{"input":"and also this"}`); c != 200 {
			t.Errorf("steer: %d", c)
		}
	})
	if !strings.HasSuffix(text, "steered") {
		t.Errorf("front answer %q, want the steered answer at its end", text)
	}
	if r := waitStatus(t, ctx, front, run); r["status"] != "completed" {
		t.Errorf("front run %v", r)
	}
	got := agent.Received()
	if len(got) < 2 || got[len(got)-1].Text != "and also this" || got[len(got)-1].ContextID != got[0].ContextID {
		t.Fatalf("the agent got %+v, want the steer as the next message of the context", got)
	}
	var fh struct {
		Runs []struct {
			ID      string   `json:"id"`
			Dropped []string `json:"dropped"`
		} `json:"runs"`
	}
	adkJSON(t, ctx, "GET", front+"/v1/sessions/steer-a2a-agent/history?format=openai", "", 200, &fh)
	if len(fh.Runs) != 1 || !strings.Contains(strings.Join(fh.Runs[0].Dropped, ","), "steer:next_upstream_call") {
		t.Errorf("front history runs %+v, want one run that says its steer went to the next upstream call", fh.Runs)
	}
}

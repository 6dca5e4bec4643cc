package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// Tool loops, stop and steer through agent upstreams: a front bridge whose
// upstream is a second bridge's A2A or ADK endpoint (or a fake ADK
// api_server), the second bridge over a scripted OpenAI model.

// toolModel is an OpenAI upstream that asks for the client's tool
// get_weather on a request without a tool result, and answers from the
// result otherwise.
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

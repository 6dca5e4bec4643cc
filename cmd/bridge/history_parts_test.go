package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// toolLoopUpstream answers a question with a call of the client's weather
// tool, and a tool result with the answer.
func toolLoopUpstream(t *testing.T) *openaitest.Server {
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: fmt.Sprintf("chatcmpl-%d", n), Model: "m"}
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		if k := len(req.Messages); k > 0 && req.Messages[k-1].Role == "tool" {
			return openaitest.Reply{Chunks: c.Role().Text("It is ", "20C.").Finish("stop").Usage(20, 4).List()}
		}
		if strings.Contains(string(body), "weather") {
			return openaitest.Reply{Chunks: c.Role().ToolCall(0, "call_w", "weather", `{"city":`, `"Paris"}`).Finish("tool_calls").Usage(10, 5).List()}
		}
		return openaitest.Reply{Chunks: c.Role().Text("ok").Finish("stop").Usage(1, 1).List()}
	})
	t.Cleanup(up.Close)
	return up
}

// TestADKToolLoopHistory: an ADK client's tool loop (the model calls the
// client's tool, the client sends the functionResponse, the same
// invocation answers) is whole in the ADK history, the session GET and
// format=adk alike: user text, functionCall, functionResponse, answer, one
// invocation.
func TestADKToolLoopHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: toolLoopUpstream(t).BaseURL()}}
	m := startMain(t, cfg)
	base := "http://" + m.Addr()
	adkJSON(t, ctx, "POST", base+"/apps/app/users/u/sessions/tl", `{}`, 200, nil)

	resp := adkDo(t, ctx, "POST", base+"/run_sse", runBody("app", "u", "tl", "weather in Paris?", true))
	first, done := adkFrames(t, resp.Body, 0)
	resp.Body.Close()
	session := resp.Header.Get("X-Session-Id")
	if !done || len(first) == 0 || session == "" {
		t.Fatalf("first turn: %d events, done %v, session %q", len(first), done, session)
	}
	inv := first[0].InvocationID
	answer, _ := json.Marshal(map[string]any{"appName": "app", "userId": "u", "sessionId": "tl", "streaming": true,
		"newMessage": map[string]any{"role": "user", "parts": []any{map[string]any{
			"functionResponse": map[string]any{"id": "call_w", "name": "weather", "response": map[string]any{"temp": 20}}}}}})
	resp = adkDo(t, ctx, "POST", base+"/run_sse", string(answer))
	second, done := adkFrames(t, resp.Body, 0)
	resp.Body.Close()
	if !done || len(second) == 0 || second[0].InvocationID != inv {
		t.Fatalf("the tool's result: %d events, done %v, invocation %v (want %s)", len(second), done, second, inv)
	}

	type part struct {
		Text             string          `json:"text"`
		FunctionCall     json.RawMessage `json:"functionCall"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	}
	type event struct {
		ID           string `json:"id"`
		InvocationID string `json:"invocationId"`
		Author       string `json:"author"`
		Partial      bool   `json:"partial"`
		Content      *struct {
			Parts []part `json:"parts"`
		} `json:"content"`
	}
	// The history from the run's events, then from its transcript once
	// retention deleted them.
	urls := []string{"/apps/app/users/u/sessions/tl", "/v1/sessions/" + session + "/history?format=adk"}
	urls = append(urls, "retention", urls[0], urls[1])
	for _, url := range urls {
		if url == "retention" {
			if _, err := m.Store().DeleteEventsBefore(ctx, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if evs, err := m.Store().Events(ctx, inv, 0, 0); err != nil || len(evs) != 0 {
				t.Fatalf("retention left %d events (%v)", len(evs), err)
			}
			continue
		}
		var s struct {
			Events    []event         `json:"events"`
			ActiveRun json.RawMessage `json:"active_run"`
		}
		getJSON(t, ctx, base+url, &s)
		var got []string
		for _, ev := range s.Events {
			if ev.InvocationID != inv {
				t.Errorf("%s: event %s of invocation %s, want one invocation %s", url, ev.ID, ev.InvocationID, inv)
			}
			if ev.Content == nil {
				continue
			}
			for _, p := range ev.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					got = append(got, ev.Author+":call:"+string(p.FunctionCall))
				case p.FunctionResponse != nil:
					got = append(got, ev.Author+":response:"+string(p.FunctionResponse))
				case p.Text != "":
					got = append(got, ev.Author+":text:"+p.Text)
				}
			}
		}
		want := []string{
			"user:text:weather in Paris?",
			`app:call:{"id":"call_w","name":"weather","args":{"city":"Paris"}}`,
			`user:response:{"id":"call_w","name":"weather","response":{"temp":20}}`,
			"app:text:It is 20C.",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: events\n%s\nwant\n%s", url, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		ids := map[string]bool{}
		for _, ev := range s.Events {
			if ids[ev.ID] {
				t.Errorf("%s: event id %s twice", url, ev.ID)
			}
			ids[ev.ID] = true
		}
		if string(s.ActiveRun) != "null" {
			t.Errorf("%s: active_run %s after the run ended", url, s.ActiveRun)
		}
	}
}

// TestA2AHistoryPagesByTask: whatever the page size, the tasks of a
// context (one of them a tool loop, four messages) come one page at a
// time, each task whole on one page, none twice, by ListTasks and by the
// a2a history route alike.
func TestA2AHistoryPagesByTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	base := serveUpstream(t, "openai="+toolLoopUpstream(t).BaseURL())
	send := func(body string) map[string]any {
		t.Helper()
		var v struct {
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(post(t, ctx, base+"/a2a", body), &v); err != nil || v.Error != nil {
			t.Fatalf("%s: %v %s", body, err, v.Error)
		}
		return v.Result
	}
	msg := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"` + id +
			`","role":"user","contextId":"pages","parts":[{"kind":"text","text":"` + text + `"}]}}}`
	}
	var want []string
	for i := range 5 {
		if i == 2 { // the tool loop: question, call, result, answer
			task := send(msg("q2", "weather?"))
			id, _ := task["id"].(string)
			if st := task["status"].(map[string]any)["state"]; st != "input-required" {
				t.Fatalf("tool task: state %v", st)
			}
			send(`{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"r2","role":"user","taskId":"` + id +
				`","contextId":"pages","parts":[{"kind":"data","data":{"id":"call_w","name":"weather","response":{"temp":20}},"metadata":{"adk_type":"function_response"}}]}}}`)
			want = append(want, id)
			continue
		}
		task := send(msg(fmt.Sprintf("q%d", i), fmt.Sprintf("question %d", i)))
		want = append(want, task["id"].(string))
	}
	var whole []a2aTaskJSON
	getJSON(t, ctx, base+"/v1/sessions/pages/history?format=a2a&limit=100", &struct {
		Tasks *[]a2aTaskJSON `json:"tasks"`
	}{&whole})
	if len(whole) != 5 || len(whole[2].History) < 3 || whole[2].Status.State != "completed" {
		t.Fatalf("whole history: %d tasks, the tool task %+v", len(whole), whole)
	}
	entries := func(tk a2aTaskJSON) int { return len(tk.History) + len(tk.Artifacts) }

	type page struct {
		tasks []a2aTaskJSON
		next  string
	}
	readers := map[string]func(size int, token string) page{
		"ListTasks": func(size int, token string) page {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"contextId":"pages","pageSize":%d,"pageToken":%q,"includeArtifacts":true}}`, size, token)
			var v struct {
				Result struct {
					Tasks         []a2aTaskJSON `json:"tasks"`
					NextPageToken string        `json:"nextPageToken"`
				} `json:"result"`
			}
			b := post(t, ctx, base+"/a2a", body)
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			return page{v.Result.Tasks, v.Result.NextPageToken}
		},
		"history": func(size int, token string) page {
			var v struct {
				Tasks         []a2aTaskJSON `json:"tasks"`
				NextPageToken string        `json:"nextPageToken"`
			}
			url := fmt.Sprintf("%s/v1/sessions/pages/history?format=a2a&limit=%d", base, size)
			if token != "" {
				url += "&cursor=" + token
			}
			getJSON(t, ctx, url, &v)
			return page{v.Tasks, v.NextPageToken}
		},
	}
	for name, read := range readers {
		for size := 1; size <= 3; size++ {
			var got []string
			token := ""
			for range 10 {
				p := read(size, token)
				if len(p.tasks) == 0 || len(p.tasks) > size {
					t.Fatalf("%s size %d: a page of %d tasks", name, size, len(p.tasks))
				}
				ids := []string{}
				for _, tk := range p.tasks {
					ids = append(ids, tk.ID)
					for _, w := range whole {
						if w.ID == tk.ID && entries(w) != entries(tk) {
							t.Errorf("%s size %d: task %s has %d of its %d messages and artifacts", name, size, tk.ID, entries(tk), entries(w))
						}
					}
				}
				got = append(ids, got...)
				if p.next == "" {
					break
				}
				token = p.next
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s size %d: tasks %v, want %v (each once, oldest first)", name, size, got, want)
			}
		}
	}
}

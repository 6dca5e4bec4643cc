package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/hermes/hermestest"
)

// hermesUpstreamBridge starts a bridge whose upstream is a hermestest
// server (--upstream hermes=URL).
func hermesUpstreamBridge(t *testing.T) (string, *hermestest.Server) {
	t.Helper()
	srv := hermestest.New()
	srv.Delay = 15 * time.Millisecond
	t.Cleanup(srv.Close)
	return serveUpstream(t, "hermes="+srv.URL), srv
}

// TestOpenAIOverHermes: the openai-go client against a Hermes server:
// streamed text around the agent's tool activity, a second turn of the
// same X-Session-Id in the same upstream session with only the new input,
// the upstream's failure as an OpenAI error, and a cancel that stops the
// Hermes run.
func TestOpenAIOverHermes(t *testing.T) {
	base, srv := hermesUpstreamBridge(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := oaClient(base, option.WithHeader("X-Session-Id", "oh-1"))

	text, resp := streamText(t, ctx, c, []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tool please")})
	if !strings.Contains(text, "you said: tool please") {
		t.Errorf("text %q", text)
	}
	run := runOf(t, base, resp.Header.Get("X-Run-Id"))
	if run.Status != bridge.StatusCompleted || !strings.HasPrefix(run.UpstreamRunID, "run_") || run.Outbound != "hermes" {
		t.Errorf("run %+v", run)
	}
	text, _ = streamText(t, ctx, c, []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("tool please"), openai.AssistantMessage(text), openai.UserMessage("again")})
	if !strings.Contains(text, "you said: again") {
		t.Errorf("second text %q", text)
	}
	chats, _, _ := srv.Snapshot()
	if srv.Sessions() != 1 || len(chats) != 2 || chats[1]["message"] != "again" {
		t.Errorf("sessions %d, chats %v", srv.Sessions(), chats)
	}

	// The agent fails: an error in OpenAI's shape.
	plain := oaClient(base)
	s := plain.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("please fail")}})
	for s.Next() {
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "provider failed") {
		t.Errorf("failed turn: %v", err)
	}

	// Cancel through the run API stops the Hermes run.
	c2 := oaClient(base, option.WithHeader("X-Session-Id", "oh-slow"))
	var sresp *http.Response
	s = c2.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("slow please")}}, option.WithResponseInto(&sresp))
	for n := 0; s.Next(); n++ {
		if n == 3 {
			r := hermesDo(t, ctx, "POST", base+"/v1/runs/"+sresp.Header.Get("X-Run-Id")+"/cancel", "")
			r.Body.Close()
		}
	}
	_ = s.Close()
	if _, stops, _ := srv.Snapshot(); len(stops) != 1 {
		t.Errorf("stops %v", stops)
	}
	if r := runOf(t, base, sresp.Header.Get("X-Run-Id")); r.Status != bridge.StatusCancelled {
		t.Errorf("run %s, want cancelled", r.Status)
	}
}

// TestA2AOverHermes: the a2a-go client against a Hermes server: the
// streamed answer, completed; tasks/cancel stops the Hermes run.
func TestA2AOverHermes(t *testing.T) {
	base, srv := hermesUpstreamBridge(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	client, _ := a2aClient(t, ctx, base, &sseTap{})
	var evs []a2asdk.Event
	for ev, err := range client.SendStreamingMessage(ctx, userMessage("ah-1", "tool please")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if got := answerText(evs); !strings.Contains(got, "you said: tool please") {
		t.Errorf("answer %q", got)
	}
	if st, final := finalState(evs); st != a2asdk.TaskStateCompleted || !final {
		t.Errorf("state %s final %v", st, final)
	}

	var task a2asdk.TaskID
	n := 0
	for ev, err := range client.SendStreamingMessage(ctx, userMessage("ah-2", "slow please")) {
		if err != nil {
			break
		}
		if task == "" {
			task = ev.TaskInfo().TaskID
		}
		if n++; n == 4 {
			if _, err := client.CancelTask(ctx, &a2asdk.TaskIDParams{ID: task}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitUntil(t, "the Hermes run to be stopped", func() bool { _, stops, _ := srv.Snapshot(); return len(stops) == 1 })
	if r := runOf(t, base, string(task)); r.Status != bridge.StatusCancelled {
		t.Errorf("run %s, want cancelled", r.Status)
	}
}

var _ = context.Background

// TestHermesOverHermesSteer: a Hermes client's steer of a run over a Hermes
// upstream reaches the upstream run (POST /v1/runs/{run_id}/steer), with
// no second turn; its stop stops the upstream run.
func TestHermesOverHermesSteer(t *testing.T) {
	base, srv := hermesUpstreamBridge(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	id := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs", `{"input":"slow please","session_id":"hh-1"}`), 202)["run_id"].(string)
	deltas := 0
	frames := hermesStream(t, hermesDo(t, ctx, "GET", base+"/v1/runs/"+id+"/events", "").Body, func(f hermesFrame) bool {
		if f.Name == "assistant.delta" {
			switch deltas++; deltas {
			case 2:
				hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs/"+id+"/steer", `{"input":"also mention Rome"}`), 200)
			case 4:
				hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs/"+id+"/stop", ``), 200)
			}
		}
		return false
	})
	if got := names(frames); !strings.Contains(got, "run.steered") || !strings.HasSuffix(got, "run.cancelled done") {
		t.Errorf("frames %q", got)
	}
	chats, stops, steers := srv.Snapshot()
	if len(steers) != 1 || steers[0] != "also mention Rome" || len(stops) != 1 || len(chats) != 1 {
		t.Errorf("upstream chats %d, stops %v, steers %v", len(chats), stops, steers)
	}
	h := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions/hh-1/messages", ""), 200)
	data := h["data"].([]any)
	if last := data[len(data)-1].(map[string]any); last["role"] != "user" || last["content"] != "also mention Rome" {
		t.Errorf("history %v", data)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/bridge-dev/bridge/outbound/adk/adktest"
)

// TestOpenAIOverADK: an OpenAI Chat Completions client over an ADK
// api_server (adktest, the real server's wire format): two turns of one
// conversation, the client resending its history, reach one ADK session,
// the second with only its new message; the agent's tool activity stays
// the agent's, and the answer is the final response's text once.
func TestOpenAIOverADK(t *testing.T) {
	srv := adktest.New()
	t.Cleanup(srv.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "adk", Dialect: "adk", URL: srv.URL}}
	base := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()

	chat := func(msgs []map[string]string, stream bool) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "scripted_tools", "messages": msgs, "stream": stream})
		resp := adkDo(t, ctx, "POST", base+"/v1/chat/completions", string(body))
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("chat: %d", resp.StatusCode)
		}
		if stream {
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			text, _ := chatStreamText(buf.Bytes())
			return text
		}
		var r struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Choices) == 0 {
			t.Fatalf("chat answer: %v", err)
		}
		return r.Choices[0].Message.Content
	}
	msgs := []map[string]string{{"role": "user", "content": "weather:Paris"}}
	a1 := chat(msgs, true)
	if a1 != "The weather in Paris: clear, 21 C." {
		t.Fatalf("turn 1: %q", a1)
	}
	msgs = append(msgs, map[string]string{"role": "assistant", "content": a1}, map[string]string{"role": "user", "content": "thanks"})
	if a2 := chat(msgs, false); a2 != "turn 2: thanks" {
		t.Fatalf("turn 2: %q (not the same ADK session?)", a2)
	}
	runs := srv.RunRequests()
	if len(runs) != 2 || string(runs[0]["sessionId"]) != string(runs[1]["sessionId"]) || string(runs[0]["appName"]) != `"scripted_tools"` {
		t.Fatalf("run requests: %v", runs)
	}
	if bytes.Contains(runs[1]["newMessage"], []byte("Paris")) {
		t.Errorf("the second turn resent the history: %s", runs[1]["newMessage"])
	}
	for _, k := range []string{"appName", "userId", "sessionId", "newMessage", "streaming"} {
		if _, ok := runs[1][k]; !ok {
			t.Errorf("run request without %s (camelCase): %v", k, runs[1])
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/internal/adkreal"
)

// TestOpenAIOverRealADK runs against the real ADK api_server (adkreal:
// adk api_server from @google/adk-devtools 2.0.0, with an app "scripted"
// whose fake model answers "turn <n>: <text>", n counting the user turns
// of its request). Two turns of a stateless Chat Completions client reach
// one ADK session, the second with only its new message; the session
// holds both.
func TestOpenAIOverRealADK(t *testing.T) {
	url := adkreal.Start(t)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "adk", Dialect: "adk", URL: url}}
	base := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	chat := func(msgs []map[string]string) (string, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "scripted", "messages": msgs, "stream": true})
		resp := adkDo(t, ctx, "POST", base+"/v1/chat/completions", string(body))
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("chat: %d %s", resp.StatusCode, b)
		}
		text, _ := chatStreamText(b)
		return text, resp.Header.Get("X-Run-Id")
	}
	msgs := []map[string]string{{"role": "user", "content": "hello"}}
	a1, run1 := chat(msgs)
	if a1 != "turn 1: hello" {
		t.Fatalf("turn 1: %q", a1)
	}
	msgs = append(msgs, map[string]string{"role": "assistant", "content": a1}, map[string]string{"role": "user", "content": "again"})
	if a2, _ := chat(msgs); a2 != "turn 2: again" {
		t.Fatalf("turn 2: %q (not the same ADK session?)", a2)
	}
	var r struct {
		Status        string `json:"status"`
		UpstreamRunID string `json:"upstream_run_id"`
	}
	adkJSON(t, ctx, "GET", base+"/v1/runs/"+run1, "", 200, &r)
	if r.Status != "completed" || !strings.HasPrefix(r.UpstreamRunID, "e-") {
		t.Errorf("run 1: %+v (want completed, the invocation id as the upstream run id)", r)
	}
}

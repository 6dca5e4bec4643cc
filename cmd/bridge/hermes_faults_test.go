package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestHermesOverload: a principal over its run limit gets Hermes' 429 with
// Retry-After; a body over the limit a 413; neither is a Go error string.
func TestHermesOverload(t *testing.T) {
	cfg := defaultConfig()
	cfg.EchoDelay = 50 * time.Millisecond
	cfg.MaxRunsPerPrincipal = 1
	base := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs", `{"input":"one two three four five six"}`), 202)
	resp := hermesDo(t, ctx, "POST", base+"/v1/runs", `{"input":"another"}`)
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Errorf("no Retry-After on the 429")
	}
	if v := hermesJSON(t, resp, 429); hermesErrorCode(v) != "rate_limit_exceeded" {
		t.Errorf("over the limit: %v", v)
	}
	hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions", `{"id":"big"}`), 201)
	big := `{"message":"` + strings.Repeat("x", 9<<20) + `"}`
	if v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions/big/chat", big), 413); hermesErrorCode(v) != "request_too_large" {
		t.Errorf("too large: %v", v)
	}
}

// TestHermesBreaker: upstream 500s fail the turns (502 upstream_error on
// the synchronous chat, run.failed on the stream) until the breaker opens;
// then a turn answers 503 with Retry-After at once, without the upstream.
func TestHermesBreaker(t *testing.T) {
	base, up, _ := flakyBridge(t, time.Minute) // failing throughout
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions", `{"id":"hb"}`), 201)
	for i := range 2 {
		if v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions/hb/chat", `{"message":"hi"}`), 502); hermesErrorCode(v) != "upstream_error" {
			t.Fatalf("call %d: %v", i, v)
		}
	}
	frames := hermesStream(t, hermesDo(t, ctx, "POST", base+"/api/sessions/hb/chat/stream", `{"message":"hi"}`).Body, nil)
	if got := names(frames); got != "run.started run.failed done" || !strings.Contains(frames[1].str("error"), "boom") {
		t.Fatalf("failed stream %q %v", got, frames)
	}
	resp := hermesDo(t, ctx, "POST", base+"/api/sessions/hb/chat", `{"message":"hi"}`)
	ra := resp.Header.Get("Retry-After")
	if v := hermesJSON(t, resp, 503); hermesErrorCode(v) != "service_unavailable" || ra == "" {
		t.Errorf("open breaker: %v Retry-After %q", v, ra)
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("%d upstream requests, want 3 (the open breaker keeps the 4th)", n)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cutProxy forwards to target; the first run_sse answer is cut after
// frames SSE frames (the connection drops).
func cutProxy(t *testing.T, target string, frames int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var runs atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
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
		n := int32(0)
		if r.URL.Path == "/run_sse" {
			n = runs.Add(1)
		}
		br := bufio.NewReader(resp.Body)
		seen := 0
		for {
			line, err := br.ReadBytes('\n')
			_, _ = w.Write(line)
			w.(http.Flusher).Flush()
			if len(bytes.TrimSpace(line)) == 0 && len(line) > 0 {
				seen++
				if n == 1 && seen >= frames {
					panic(http.ErrAbortHandler)
				}
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &runs
}

// TestADKChainResume: a bridge calling another bridge's ADK endpoint
// (openai client -> bridge A -> adk -> bridge B -> openai upstream). The
// connection between them drops mid-stream; A resumes from B with
// lastEventId, and A's client gets the whole answer once; the run
// completes.
func TestADKChainResume(t *testing.T) {
	up := newSlowOpenAI(t, 15*time.Millisecond, func(n int) []string { return words("c", 16) })
	b := a2aBridge(t, up.baseURL())
	proxy, runs := cutProxy(t, b, 5)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "adk", Dialect: "adk", URL: proxy.URL}}
	a := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()

	body, _ := json.Marshal(map[string]any{"model": "chain", "stream": true, "messages": []map[string]string{{"role": "user", "content": "count"}}})
	resp := adkDo(t, ctx, "POST", a+"/v1/chat/completions", string(body))
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text, errFrame := chatStreamText(raw)
	if errFrame != nil {
		t.Fatalf("error frame: %s", errFrame)
	}
	if want := strings.Join(words("c", 16), ""); text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	if runs.Load() != 2 {
		t.Errorf("run_sse requests between the bridges: %d, want 2 (the run and its resume)", runs.Load())
	}
	var r struct{ Status string }
	adkJSON(t, ctx, "GET", a+"/v1/runs/"+resp.Header.Get("X-Run-Id"), "", 200, &r)
	if r.Status != "completed" {
		t.Errorf("run status %q", r.Status)
	}
	if len(up.Requests()) != 1 {
		t.Errorf("the model upstream got %d requests, want 1 (the resume replays, it does not rerun)", len(up.Requests()))
	}
}

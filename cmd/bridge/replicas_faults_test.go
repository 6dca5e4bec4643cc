package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestReplicaPartitioned: replica b reaches the database through a link
// the test cuts (a silent blackhole). A run b was streaming ends for its
// client (as when a replica dies: its stream stops without its end, and
// the client resumes elsewhere from its last id), which got no event the
// database does not hold; a takes the run over. New requests to b
// are refused at once with Retry-After in each caller's dialect (503 for
// Chat Completions, Anthropic's 529 overloaded_error) instead of hanging,
// while replica a goes on serving. Once the link heals, b serves again.
func TestReplicaPartitioned(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	db := pgtest.Schema(t)
	proxy := pgtest.NewProxy(t, db)
	cfg := defaultConfig()
	cfg.EchoDelay = 40 * time.Millisecond
	cfg.Lease = time.Second
	cfg.DB = db
	a := "http://" + startMain(t, cfg).Addr()
	cfg.DB = proxy.URL()
	b := "http://" + startMain(t, cfg).Addr()

	// A run streaming on b when the link is cut.
	req, _ := http.NewRequestWithContext(ctx, "POST", b+"/v1/chat/completions", strings.NewReader(
		`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+strings.Join(words("w", 80), "")+`"}]}`))
	req.Header.Set("X-Session-Id", "partition")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	runID := resp.Header.Get("X-Run-Id")
	seen := readSSE(t, resp.Body, func(evs []sseEvent) bool { return len(evs) >= 3 })
	if len(seen) < 3 {
		t.Fatalf("b streamed %d events before the cut", len(seen))
	}
	proxy.Blackhole()
	ended := make(chan []sseEvent, 1)
	go func() { ended <- readSSE(t, resp.Body, nil) }()
	select {
	case rest := <-ended:
		seen = append(seen, rest...)
		if n := len(rest); n > 20 || n > 0 && rest[n-1].data == "[DONE]" && !strings.Contains(rest[n-2].data, "error") {
			t.Fatalf("b's run went on after the cut (%d more events, the last %v): the run was not cut off", n, rest[n-1])
		}

	case <-time.After(20 * time.Second):
		t.Fatal("b's client still waits 20s after b lost its database")
	}

	chat := `{"model":"echo","messages":[{"role":"user","content":"while cut off"}]}`
	anth := `{"model":"echo","max_tokens":64,"messages":[{"role":"user","content":"while cut off"}]}`
	for i, tc := range []struct {
		path, body string
		status     int
		errType    string
	}{
		{"/v1/chat/completions", chat, 503, "service_unavailable_error"},
		{"/v1/messages", anth, 529, "overloaded_error"},
		{"/v1/chat/completions", chat, 503, "service_unavailable_error"},
	} {
		start := time.Now()
		code, h, out := replicaDo(ctx, t, "POST", b+tc.path, tc.body, "X-Session-Id", "partition-new")
		if code != tc.status || h.Get("Retry-After") == "" || !strings.Contains(out, tc.errType) {
			t.Fatalf("request %d to the cut-off b: %d Retry-After %q %s, want %d %s with Retry-After", i, code, h.Get("Retry-After"), out, tc.status, tc.errType)
		}
		if took := time.Since(start); took > 7*time.Second {
			t.Fatalf("request %d to the cut-off b took %s", i, took)
		}
	}
	if code, _, out := replicaDo(ctx, t, "POST", a+"/v1/chat/completions", chat, "X-Session-Id", "partition-a"); code != 200 {
		t.Fatalf("a, not cut off: %d %s", code, out)
	}

	// What b's client saw is in the database: a serves it, and a has
	// closed the run b could not finish.
	var fromA []sseEvent
	for deadline := time.Now().Add(20 * time.Second); ; {
		req, _ := http.NewRequestWithContext(ctx, "GET", a+"/v1/runs/"+runID+"/events", nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		fromA = readSSE(t, r.Body, nil)
		r.Body.Close()
		if run := getRun(t, a, runID); run.Status != bridge.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still running on a 20s after b was cut off", runID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if run := getRun(t, a, runID); run.Status != bridge.StatusInterrupted || len(fromA) == 0 || fromA[len(fromA)-1].data != "[DONE]" {
		t.Errorf("b's run, read on a: %s %q, %d events, want interrupted (the echo cannot resume) to [DONE]", run.Status, run.Reason, len(fromA))
	}
	stored := map[string]string{}
	for _, ev := range fromA {
		stored[ev.id] = ev.data
	}
	for _, ev := range seen {
		if ev.id == "" {
			continue // the stream's end, not an event of the log
		}
		if d, ok := stored[ev.id]; !ok || d != ev.data {
			t.Errorf("b's client got event %s (%s), which the database does not hold as such (%q)", ev.id, ev.data, d)
		}
	}

	proxy.Heal()
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, _, out := replicaDo(ctx, t, "POST", b+"/v1/chat/completions", chat, "X-Session-Id", "partition-healed")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b still refuses 10s after the link healed: %d %s", code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

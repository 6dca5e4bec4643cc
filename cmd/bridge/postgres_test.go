package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestPostgresReplicas: two bridges on one PostgreSQL database (--db
// postgres://...). A run streamed by one is read back, event for event,
// from the other, and both give the session the same history.
func TestPostgresReplicas(t *testing.T) {
	db := pgtest.Schema(t)
	cfg := defaultConfig()
	cfg.DB = db
	a := "http://" + startMain(t, cfg).Addr()
	b := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	do := func(method, url, body string, h ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, out
	}
	resp, stream := do("POST", a+"/v1/chat/completions",
		`{"model":"echo","stream":true,"messages":[{"role":"user","content":"one bridge writes it"}]}`, "X-Session-Id", "shared")
	run := resp.Header.Get("X-Run-Id")
	if resp.StatusCode != 200 || run == "" {
		t.Fatalf("stream on replica a: %d %s", resp.StatusCode, stream)
	}
	if text, _ := chatStreamText(stream); text != "one bridge writes it" {
		t.Fatalf("replica a streamed %q", text)
	}
	_, fromA := do("GET", a+"/v1/runs/"+run+"/events", "")
	respB, fromB := do("GET", b+"/v1/runs/"+run+"/events", "")
	if respB.StatusCode != 200 || !bytes.Equal(fromA, fromB) || len(fromB) == 0 {
		t.Fatalf("the run's events from replica b (%d) differ from replica a's:\nb: %s\na: %s", respB.StatusCode, fromB, fromA)
	}
	_, histA := do("GET", a+"/v1/sessions/shared/history?format=openai", "")
	_, histB := do("GET", b+"/v1/sessions/shared/history?format=openai", "")
	if !bytes.Equal(histA, histB) || !bytes.Contains(histB, []byte("one bridge writes it")) {
		t.Fatalf("history differs between replicas:\na: %s\nb: %s", histA, histB)
	}
	// The second turn of the session lands on the other replica and sees the first.
	resp, stream = do("POST", b+"/v1/chat/completions",
		`{"model":"echo","stream":true,"messages":[{"role":"user","content":"one bridge writes it"},{"role":"assistant","content":"one bridge writes it"},{"role":"user","content":"the other goes on"}]}`,
		"X-Session-Id", "shared")
	if text, _ := chatStreamText(stream); resp.StatusCode != 200 || text != "the other goes on" {
		t.Fatalf("second turn on replica b: %d %q", resp.StatusCode, text)
	}
	_, histA = do("GET", a+"/v1/sessions/shared/history?format=openai", "")
	if n := strings.Count(string(histA), `"role":"user"`); n != 2 {
		t.Fatalf("replica a's history has %d user messages after the turn on b, want 2 (stored once each): %s", n, histA)
	}
}

// TestPostgresFollowAcrossReplicas: a client of replica b follows, live, a
// run that replica a drives, to its end: b streams what a commits as a
// commits it, then [DONE], and the text is a's.
func TestPostgresFollowAcrossReplicas(t *testing.T) {
	cfg := defaultConfig()
	cfg.DB = pgtest.Schema(t)
	cfg.EchoDelay = 40 * time.Millisecond
	a := "http://" + startMain(t, cfg).Addr()
	b := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	words := "a run that one replica drives and another follows live to its end"
	req, _ := http.NewRequestWithContext(ctx, "POST", a+"/v1/chat/completions",
		strings.NewReader(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+words+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", "follow")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	run := resp.Header.Get("X-Run-Id")
	fromA := make(chan []byte, 1)
	go func() { defer resp.Body.Close(); b, _ := io.ReadAll(resp.Body); fromA <- b }()

	// b, while the run goes on at a.
	req, _ = http.NewRequestWithContext(ctx, "GET", b+"/v1/runs/"+run, nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(st), `"status":"running"`) {
		t.Fatalf("the run is not running any more when b reads it (the echo is too fast for the test): %s", st)
	}
	req, _ = http.NewRequestWithContext(ctx, "GET", b+"/v1/runs/"+run+"/events", nil)
	r, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	fromB, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		t.Fatalf("b's stream: %v", err)
	}
	textB, _ := chatStreamText(fromB)
	textA, _ := chatStreamText(<-fromA)
	if textB != words || textA != words || !bytes.HasSuffix(bytes.TrimSpace(fromB), []byte("data: [DONE]")) {
		t.Fatalf("b followed %q (a streamed %q), want the whole answer and [DONE]:\n%s", textB, textA, fromB)
	}
}

// TestPostgresSteerThroughOtherReplica: a steer sent to replica b of a run
// replica a drives reaches a (relayed through the database): a's run takes
// it at its next model call (the echo model answers it), and b answers as
// a does; a steer of the run once it has ended is a conflict on b too.
func TestPostgresSteerThroughOtherReplica(t *testing.T) {
	cfg := defaultConfig()
	cfg.DB = pgtest.Schema(t)
	cfg.EchoDelay = 30 * time.Millisecond
	a := "http://" + startMain(t, cfg).Addr()
	b := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	words := "a run on one replica that a steer through the other one reaches before it ends"
	req, _ := http.NewRequestWithContext(ctx, "POST", a+"/v1/chat/completions",
		strings.NewReader(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+words+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", "steer-replicas")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	run := resp.Header.Get("X-Run-Id")
	steer := func() (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", b+"/v1/runs/"+run+"/steer", strings.NewReader(`{"input":"steered via b"}`))
		req.Header.Set("Content-Type", "application/json")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(body)
	}
	if code, body := steer(); code != 200 || !strings.Contains(body, `"accepted":true`) {
		t.Fatalf("steer through b: %d %s", code, body)
	}
	stream, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := chatStreamText(stream); !strings.HasSuffix(text, "steered via b") {
		t.Fatalf("a's run did not answer the steer sent to b: %q", text)
	}
	if code, body := steer(); code != 409 {
		t.Fatalf("steer of the ended run through b: %d %s, want 409", code, body)
	}
}

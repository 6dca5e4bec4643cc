package main

import (
	"context"
	"fmt"
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

// TestPostgresRestartedUnderLoad: the database both replicas share is
// restarted (a fast shutdown, 1s down) while 16 streams run on them. Every
// client's stream ends (with its end, or cut off as a dead replica's is);
// every event a client was sent is in the database after the restart, as it
// was sent; each client that resumes, on either replica, from its last id
// reads the rest of its run to its end with nothing twice; no run is left
// running; and both replicas take new runs again.
func TestPostgresRestartedUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv := pgtest.Private(t)
	cfg := defaultConfig()
	cfg.DB = srv.URL()
	cfg.EchoDelay = 30 * time.Millisecond
	cfg.Lease = time.Second
	bases := [2]string{"http://" + startMain(t, cfg).Addr(), "http://" + startMain(t, cfg).Addr()}

	type client struct {
		run  string
		seen []sseEvent
		err  error
	}
	const streams = 16
	clients := make([]client, streams)
	started := make(chan struct{}, streams)
	done := make(chan struct{}, streams)
	input := strings.Join(words("r", 60), "")
	for i := range clients {
		go func() {
			defer func() { done <- struct{}{} }()
			c := &clients[i]
			req, _ := http.NewRequestWithContext(ctx, "POST", bases[i%2]+"/v1/chat/completions", strings.NewReader(
				`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+input+`"}]}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				c.err = err
				started <- struct{}{}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				c.err = fmt.Errorf("status %d", resp.StatusCode)
				started <- struct{}{}
				return
			}
			c.run = resp.Header.Get("X-Run-Id")
			c.seen = readSSE(t, resp.Body, func(evs []sseEvent) bool {
				if len(evs) == 3 {
					started <- struct{}{}
				}
				return false
			})
			if len(c.seen) < 3 {
				started <- struct{}{}
			}
		}()
	}
	for range streams {
		<-started
	}
	srv.Stop(t)
	time.Sleep(time.Second)
	srv.Start(t)
	for range streams {
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("a client's stream did not end after the restart")
		}
	}

	cut := 0
	for i := range clients {
		c := &clients[i]
		if c.err != nil || c.run == "" {
			t.Fatalf("stream %d did not start: %v", i, c.err)
		}
		n := len(c.seen)
		if n == 0 || c.seen[n-1].data != "[DONE]" {
			cut++
		}
		// Resume on the other replica from the last id, to the end (503s
		// while the replicas reconnect are retried).
		var last string
		for _, ev := range c.seen {
			if ev.id != "" {
				last = ev.id
			}
		}
		ids := []string{}
		for _, ev := range c.seen {
			if ev.id != "" {
				ids = append(ids, ev.id)
			}
		}
		rest := resumeUntilEnd(ctx, t, bases[(i+1)%2], c.run, last)
		for _, ev := range rest {
			if ev.id != "" {
				ids = append(ids, ev.id)
			}
		}
		noDuplicates(t, ids)
		// What the client was sent is in the database, as sent.
		stored := map[string]string{}
		for _, ev := range resumeUntilEnd(ctx, t, bases[i%2], c.run, "") {
			stored[ev.id] = ev.data
		}
		for _, ev := range c.seen {
			if d, ok := stored[ev.id]; ev.id != "" && (!ok || d != ev.data) {
				t.Errorf("run %s: the client was sent event %s (%s); the database holds %q", c.run, ev.id, ev.data, d)
			}
		}
	}
	t.Logf("%d of %d streams were cut by the restart", cut, streams)
	if cut == 0 {
		t.Fatal("the restart cut no stream: it did not happen under load")
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		running := 0
		for _, c := range clients {
			if getRun(t, bases[0], c.run).Status == bridge.StatusRunning {
				running++
			}
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still running 20s after the restart", running)
		}
	}
	for _, base := range bases {
		code, _, out := replicaDo(ctx, t, "POST", base+"/v1/chat/completions",
			`{"model":"echo","messages":[{"role":"user","content":"after the restart"}]}`)
		if code != 200 || !strings.Contains(out, "after the restart") {
			t.Fatalf("a new run on %s after the restart: %d %s", base, code, out)
		}
	}
}

// resumeUntilEnd reads run's events from base after the event id last
// ("" for all) to the stream's end ([DONE]), retrying while the replica
// answers 503 or cuts the stream (it reconnects to its database).
func resumeUntilEnd(ctx context.Context, t *testing.T, base, run, last string) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/runs/"+run+"/events", nil)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got []sseEvent
		if resp.StatusCode == 200 {
			got = readSSE(t, resp.Body, nil)
		}
		resp.Body.Close()
		for _, ev := range got {
			out = append(out, ev)
			if ev.id != "" {
				last = ev.id
			}
		}
		if n := len(out); n > 0 && out[n-1].data == "[DONE]" {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s on %s: no end 30s after the restart (last status %d, %d events)", run, base, resp.StatusCode, len(out))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSubscribeLimits: the config's subscribe limits hold. A session takes
// channels_per_session channels and a principal channels_per_principal;
// one more is a 429 in the format's error shape, and closing one lets the
// next in. An idle channel gets a keep-alive every keep_alive, in its
// dialect's way (an SSE comment; Anthropic's ping event).
func TestSubscribeLimits(t *testing.T) {
	cfg := defaultConfig()
	cfg.Subscribe.ChannelsPerSession = 1
	cfg.Subscribe.ChannelsPerPrincipal = 2
	cfg.Subscribe.KeepAlive = 50 * time.Millisecond
	front := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	openIn := func(sid, format string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "GET", front+"/v1/sessions/"+sid+"/events?format="+format, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	open := func(sid string) *http.Response { return openIn(sid, "openai") }
	refused := func(resp *http.Response, why string) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), `"error"`) || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d %s (Retry-After %q), want a 429 in the OpenAI error shape with Retry-After", why, resp.StatusCode, b, resp.Header.Get("Retry-After"))
		}
	}

	a := open("limits-a")
	defer a.Body.Close()
	if a.StatusCode != http.StatusOK {
		t.Fatalf("first channel: %d", a.StatusCode)
	}
	refused(open("limits-a"), "a second channel on a session that takes one")
	b := open("limits-b")
	if b.StatusCode != http.StatusOK {
		t.Fatalf("a channel on another session: %d", b.StatusCode)
	}
	refused(open("limits-c"), "a third channel of a principal that takes two")
	b.Body.Close()
	// once waits for the server to notice a close: the channel then opens.
	once := func(sid, format string) *http.Response {
		t.Helper()
		var c *http.Response
		for i := 0; i < 250; i++ {
			if c = openIn(sid, format); c.StatusCode == http.StatusOK {
				return c
			}
			c.Body.Close()
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("a channel once another closed: %d", c.StatusCode)
		return nil
	}
	c := once("limits-c", "openai")
	defer c.Body.Close()

	// Keep-alives: SSE comments on the idle channel, keep_alive apart.
	r := bufio.NewReader(a.Body)
	start := time.Now()
	for n := 0; n < 3; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("idle channel: %v after %d keep-alives", err, n)
		}
		if strings.HasPrefix(line, ":") {
			n++
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("three keep-alives took %s, want about 150ms", d)
	}

	// Anthropic's stream keeps alive with its ping event, which its SDKs
	// skip by name.
	a.Body.Close()
	an := once("limits-a", "anthropic")
	defer an.Body.Close()
	r = bufio.NewReader(an.Body)
	var frame []string
	for len(frame) < 2 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("idle Anthropic channel: %v", err)
		}
		if line = strings.TrimSuffix(line, "\n"); line != "" {
			frame = append(frame, line)
		}
	}
	if frame[0] != "event: ping" || frame[1] != `data: {"type":"ping"}` {
		t.Errorf("idle Anthropic channel: %q, want its ping event", frame)
	}
}

// TestSubscribeFromStart: a channel opened without a cursor starts at the
// live edge (the session's ended runs are history's: its first frame is
// the next run's start), and one with ?from=start replays the session's
// runs, oldest first, each between its start and end frame.
func TestSubscribeFromStart(t *testing.T) {
	front := "http://" + startMain(t, defaultConfig()).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sid := convID("from-start")
	turn := func(text string) string {
		t.Helper()
		body := map[string]any{"model": "echo", "messages": []any{map[string]any{"role": "user", "content": text}}}
		resp := convSend(ctx, t, "POST", front+"/v1/chat/completions", body, map[string]string{"X-Session-Id": sid})
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Run-Id") == "" {
			t.Fatalf("turn: %d, run %q", resp.StatusCode, resp.Header.Get("X-Run-Id"))
		}
		return resp.Header.Get("X-Run-Id")
	}
	r1 := turn("one")
	r2 := turn("one two")

	replay := openStream(ctx, t, "GET", front+"/v1/sessions/"+sid+"/events?format=openai&from=start", nil, nil)
	for _, want := range []string{r1, r2} {
		if cr := readChannelRun(t, replay); cr.info.RunID != want || cr.info.Status != "completed" || len(cr.frames) == 0 {
			t.Fatalf("from=start: run %+v with %d frames, want %s completed", cr.info, len(cr.frames), want)
		}
	}
	replay.close()

	live := openStream(ctx, t, "GET", front+"/v1/sessions/"+sid+"/events?format=openai", nil, nil)
	r3 := turn("one two three")
	if cr := readChannelRun(t, live); cr.info.RunID != r3 {
		t.Fatalf("a channel without a cursor: its first run is %s, want the next one, %s (not %s or %s, which had ended)", cr.info.RunID, r3, r1, r2)
	}
	live.close()

	bad := convSend(ctx, t, "GET", front+"/v1/sessions/"+sid+"/events?format=openai&from=yesterday", nil, nil)
	b, _ := io.ReadAll(bad.Body)
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "from=") {
		t.Errorf("from=yesterday: %d %s, want a 400 saying what from takes", bad.StatusCode, b)
	}
}

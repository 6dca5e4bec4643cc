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
// next in. An idle channel gets a keep-alive every keep_alive.
func TestSubscribeLimits(t *testing.T) {
	cfg := defaultConfig()
	cfg.Subscribe.ChannelsPerSession = 1
	cfg.Subscribe.ChannelsPerPrincipal = 2
	cfg.Subscribe.KeepAlive = 50 * time.Millisecond
	front := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	open := func(sid string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "GET", front+"/v1/sessions/"+sid+"/events?format=openai", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
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
	var c *http.Response
	for i := 0; i < 100; i++ { // the server notices the close a moment later
		if c = open("limits-c"); c.StatusCode == http.StatusOK {
			break
		}
		c.Body.Close()
		time.Sleep(20 * time.Millisecond)
	}
	if c.StatusCode != http.StatusOK {
		t.Fatalf("a channel once another closed: %d", c.StatusCode)
	}
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
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// TestBreakerCountsMidStreamFaults: streams that each fail after their
// headers (a cut connection) open the breaker; the next request is refused
// at once without reaching the upstream.
func TestBreakerCountsMidStreamFaults(t *testing.T) {
	up := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "c", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text("par", "tial").Finish("stop").List(), CutAfter: 2}
	})
	t.Cleanup(up.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.BaseURL(), Breaker: outbound.BreakerConfig{OpenFor: time.Minute}}}
	base := "http://" + startMain(t, cfg).Addr()

	for i := range 5 {
		if status, _, body := chat(t, base, true); status != 200 || !strings.Contains(body, `"error"`) {
			t.Fatalf("stream %d: %d %s", i, status, body)
		}
	}
	status, retryAfter, body := chat(t, base, true)
	if status != 503 || retryAfter == "" || errorType(t, body) != "service_unavailable_error" {
		t.Fatalf("after 5 mid-stream faults: %d Retry-After %q %s", status, retryAfter, body)
	}
	if n := len(up.Requests()); n != 5 {
		t.Errorf("the open breaker let requests through: %d upstream requests", n)
	}
}

package responses_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
	outresponses "github.com/bridge-dev/bridge/outbound/responses"
	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
)

// textReply answers text with the request's number in it.
func textReply(text string) responsestest.Reply {
	e := &responsestest.Events{ID: "resp_up", Model: "gpt-test"}
	return responsestest.Reply{Events: e.Created().Text(text).Completed(3, 2).List()}
}

// wsClient is a client of srv in WebSocket mode.
func wsClient(t *testing.T, srv *responsestest.Server, cfg outresponses.Config) *outresponses.Client {
	t.Helper()
	cfg.Name, cfg.BaseURL, cfg.WebSocket = "up", srv.BaseURL(), true
	c := outresponses.New(cfg)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// callText opens a call and collects its text; the error is Open's or
// the stream's.
func callText(t *testing.T, c *outresponses.Client, req *bridge.Request) (string, error) {
	t.Helper()
	call, err := c.Open(t.Context(), req)
	if err != nil {
		return "", err
	}
	evs, err := bridgetest.Collect(call.Events)
	var text strings.Builder
	for _, ev := range evs {
		if ev.Kind == bridge.KindTextDelta {
			text.WriteString(ev.Text)
		}
	}
	return text.String(), err
}

// TestWebSocketCalls: in WebSocket mode, calls are response.create
// messages (no stream field) on one connection, authenticated on the
// upgrade; an error message fails Open and keeps the connection; two calls
// at once open two connections, both kept for later calls.
func TestWebSocketCalls(t *testing.T) {
	srv := responsestest.New(func(n int, body []byte) responsestest.Reply {
		if strings.Contains(string(body), "bad request") {
			return responsestest.Reply{Status: 400, Body: responsestest.ErrorBody("invalid_request_error", "no such tool", "")}
		}
		r := textReply("answer")
		if strings.Contains(string(body), "slow") {
			r.Delay = 20 * time.Millisecond
		}
		return r
	})
	t.Cleanup(srv.Close)
	c := wsClient(t, srv, outresponses.Config{APIKey: "secret"})
	for i := range 3 {
		text, err := callText(t, c, userRequest("sess_1", "hi"))
		if err != nil || text != "answer" {
			t.Fatalf("call %d: %q, %v", i, text, err)
		}
	}
	if n := srv.Upgrades(); n != 1 {
		t.Errorf("3 calls in a row opened %d connections, want 1", n)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests upstream, want 3", len(reqs))
	}
	for _, r := range reqs {
		b := body(t, r.Body)
		if b["type"] != "response.create" || b["stream"] != nil || b["model"] != "gpt-test" {
			t.Errorf("message %s", r.Body)
		}
		if r.Header.Get("Authorization") != "Bearer secret" {
			t.Errorf("upgrade headers %v", r.Header)
		}
	}

	_, err := callText(t, c, userRequest("sess_1", "bad request"))
	if bridge.ErrorCode(err) != bridge.CodeInvalid || !strings.Contains(err.Error(), "no such tool") {
		t.Errorf("an error message: %v, want the upstream's invalid request", err)
	}
	if text, err := callText(t, c, userRequest("sess_1", "hi")); err != nil || text != "answer" || srv.Upgrades() != 1 {
		t.Errorf("after an error message: %q, %v, %d connections (want the same one)", text, err, srv.Upgrades())
	}

	// Two calls at once: two connections, each kept.
	a, err := c.Open(t.Context(), userRequest("sess_a", "slow"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Open(t.Context(), userRequest("sess_b", "slow"))
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []*bridge.Call{a, b} {
		if _, err := bridgetest.Collect(call.Events); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"sess_a", "sess_b", "sess_c"} {
		if _, err := callText(t, c, userRequest(s, "hi")); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Upgrades(); n != 2 {
		t.Errorf("%d connections after two concurrent calls and three more, want 2", n)
	}
}

// TestWebSocketRefused: an upstream without WebSocket mode (404 on the
// upgrade) is called over HTTP, and later calls do not try the upgrade
// again.
func TestWebSocketRefused(t *testing.T) {
	srv := responsestest.New(func(n int, body []byte) responsestest.Reply { return textReply("over http") })
	srv.RefuseWebSocket = true
	t.Cleanup(srv.Close)
	var upgrades atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			upgrades.Add(1)
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	c := outresponses.New(outresponses.Config{Name: "up", BaseURL: front.URL + "/v1", WebSocket: true})
	t.Cleanup(func() { _ = c.Close() })
	for range 2 {
		text, err := callText(t, c, userRequest("", "hi"))
		if err != nil || text != "over http" {
			t.Fatalf("%q, %v", text, err)
		}
	}
	if n := upgrades.Load(); n != 1 {
		t.Errorf("%d upgrades tried, want 1 (then HTTP until the refusal is old)", n)
	}
	for _, r := range srv.Requests() {
		if b := body(t, r.Body); b["stream"] != true || b["type"] != nil {
			t.Errorf("HTTP body %s", r.Body)
		}
	}
}

// TestWebSocketClosed: a connection the upstream closed while it was idle
// is replaced by a new one and the call goes through; one cut in the
// middle of a response ends its stream in an error, and the next call
// dials again.
func TestWebSocketClosed(t *testing.T) {
	srv := responsestest.New(func(n int, body []byte) responsestest.Reply {
		r := textReply("whole")
		switch {
		case n == 0:
			r.CutAfter = len(r.Events) // closed once the response is whole
		case strings.Contains(string(body), "cut"):
			r.CutAfter = 3
		}
		return r
	})
	t.Cleanup(srv.Close)
	c := wsClient(t, srv, outresponses.Config{})
	for i := range 2 {
		if text, err := callText(t, c, userRequest("s", "hi")); err != nil || text != "whole" {
			t.Fatalf("call %d: %q, %v", i, text, err)
		}
	}
	if n := srv.Upgrades(); n != 2 {
		t.Errorf("%d connections, want 2 (the closed one replaced)", n)
	}
	if _, err := callText(t, c, userRequest("s", "cut")); bridge.ErrorCode(err) != bridge.CodeUpstream {
		t.Errorf("a response cut short: %v, want an upstream error", err)
	}
	if text, err := callText(t, c, userRequest("s", "hi")); err != nil || text != "whole" || srv.Upgrades() != 3 {
		t.Errorf("after a cut: %q, %v, %d connections (want a new one)", text, err, srv.Upgrades())
	}
}

// TestWebSocketIdleTimeout: a response that goes quiet for longer than the
// idle timeout ends in a timeout error, as over HTTP.
func TestWebSocketIdleTimeout(t *testing.T) {
	srv := responsestest.New(func(n int, body []byte) responsestest.Reply {
		r := textReply("slow")
		r.Delay = 300 * time.Millisecond
		return r
	})
	t.Cleanup(srv.Close)
	c := wsClient(t, srv, outresponses.Config{Timeouts: outbound.Timeouts{FirstByte: 5 * time.Second, Idle: 100 * time.Millisecond}})
	_, err := callText(t, c, userRequest("", "hi"))
	if bridge.ErrorCode(err) != bridge.CodeTimeout {
		t.Errorf("%v, want a timeout", err)
	}
}

// TestWebSocketRedirectKeepsKey: an upgrade redirected to another origin
// reaches it without the upstream's key.
func TestWebSocketRedirectKeepsKey(t *testing.T) {
	other := responsestest.New(func(n int, body []byte) responsestest.Reply { return textReply("elsewhere") })
	t.Cleanup(other.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)
	c := outresponses.New(outresponses.Config{Name: "up", BaseURL: front.URL + "/v1", APIKey: "secret", WebSocket: true})
	t.Cleanup(func() { _ = c.Close() })
	text, err := callText(t, c, userRequest("", "hi"))
	if err != nil || text != "elsewhere" || len(other.Requests()) != 1 {
		t.Fatalf("the redirected upgrade: %q, %v, %d requests there", text, err, len(other.Requests()))
	}
	for _, r := range other.Requests() {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the key followed a redirect to another origin: %v", r.Header)
		}
	}
}

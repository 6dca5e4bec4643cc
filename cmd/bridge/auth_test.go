package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/inbound"
)

// call sends a request with a bearer key ("" for none) and hdr (name,
// value pairs), and returns the response with its body read to the end.
func call(t *testing.T, method, url, key, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// do is call for the status and body alone.
func do(t *testing.T, method, url, key, body string, hdr ...string) (int, string) {
	t.Helper()
	resp, b := call(t, method, url, key, body, hdr...)
	return resp.StatusCode, b
}

// TestIsolation: key B cannot read, resume, cancel or join key A's session
// or run (the session id B names is B's own); requests without a valid key get 401 in OpenAI's shape.
func TestIsolation(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "key-a-secret,key-b-secret")
	t.Setenv("BRIDGE_API_KEY", "")
	cfg := defaultConfig()
	cfg.EchoDelay = 20 * time.Millisecond
	base := "http://" + startMain(t, cfg).Addr()
	chatBody := `{"model":"echo","messages":[{"role":"user","content":"a secret plan"}]}`

	for _, tt := range []struct{ name, key string }{{"no key", ""}, {"wrong key", "nope"}} {
		status, body := do(t, "POST", base+"/v1/chat/completions", tt.key, chatBody)
		if status != 401 || errorType(t, body) != "authentication_error" {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
	}
	if status, _ := do(t, "GET", base+"/healthz", "", ""); status != 200 {
		t.Errorf("healthz needs no key, got %d", status)
	}

	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer key-a-secret")
	req.Header.Set("X-Session-Id", "sess-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("key A: %d", resp.StatusCode)
	}
	run := resp.Header.Get("X-Run-Id")

	probes := []struct{ method, path, body string }{
		{"GET", "/v1/runs/" + run, ""},
		{"GET", "/v1/runs/" + run + "/events", ""},
		{"POST", "/v1/runs/" + run + "/cancel", ""},
		{"GET", "/v1/sessions/sess-a/history", ""},
	}
	for _, p := range probes {
		if status, body := do(t, p.method, base+p.path, "key-a-secret", p.body); status != 200 {
			t.Errorf("key A %s %s: %d %s", p.method, p.path, status, body)
		}
		status, body := do(t, p.method, base+p.path, "key-b-secret", p.body)
		if status != 404 || strings.Contains(body, "secret plan") {
			t.Errorf("key B %s %s: %d %s, want 404 and no data", p.method, p.path, status, body)
		}
	}
	// Key B naming "sess-a" names a session of its own (ids are per
	// principal): it never joins A's.
	status, body := do(t, "POST", base+"/v1/chat/completions", "key-b-secret",
		`{"model":"echo","messages":[{"role":"user","content":"b's own words"}]}`, "X-Session-Id", "sess-a")
	if status != 200 || strings.Contains(body, "secret plan") {
		t.Errorf("key B's own sess-a: %d %s", status, body)
	}
	// A's history is intact, and B's holds B's turn alone.
	for key, want := range map[string]string{"key-a-secret": "a secret plan", "key-b-secret": "b's own words"} {
		_, body = do(t, "GET", base+"/v1/sessions/sess-a/history", key, "")
		var h struct{ Messages []json.RawMessage }
		if err := json.Unmarshal([]byte(body), &h); err != nil || len(h.Messages) != 2 || !strings.Contains(body, want) {
			t.Errorf("%s's history of sess-a: %s", key, body)
		}
	}
}

func TestKeyLimitedToDialects(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	cfg := defaultConfig()
	cfg.Keys = []KeyConfig{{Name: "a2a-only", SHA256: inbound.HashKey("k1"), Dialects: []string{"a2a"}},
		{Name: "all", SHA256: inbound.HashKey("k2")}}
	base := "http://" + startMain(t, cfg).Addr()
	body := `{"model":"echo","messages":[{"role":"user","content":"x"}]}`
	if status, b := do(t, "POST", base+"/v1/chat/completions", "k1", body); status != 403 || errorType(t, b) != "permission_error" {
		t.Errorf("limited key: %d %s", status, b)
	}
	if status, b := do(t, "POST", base+"/v1/chat/completions", "k2", body); status != 200 {
		t.Errorf("full key: %d %s", status, b)
	}
}

func TestRunsPerPrincipalLimit(t *testing.T) {
	cfg := defaultConfig()
	cfg.EchoDelay = 100 * time.Millisecond
	cfg.MaxRunsPerPrincipal = 1
	base := "http://" + startMain(t, cfg).Addr()
	// The first run is live once its stream has begun.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"one two three"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	status, b := do(t, "POST", base+"/v1/chat/completions", "", `{"model":"echo","messages":[{"role":"user","content":"x"}]}`)
	if status != 429 || errorType(t, b) != "rate_limit_error" {
		t.Errorf("a second concurrent run: %d %s, want 429", status, b)
	}
	rest, _ := io.ReadAll(resp.Body)
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("the first run did not finish: %s", rest)
	}
}

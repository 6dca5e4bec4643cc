package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/inbound"
)

// adkCall sends a request with a bearer key ("" for none).
func adkCall(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	return do(t, method, url, key, body, "Content-Type", "application/json")
}

// TestADKAuth: with inbound keys the ADK endpoints need one, and answer
// without it in ADK's error shape; one principal's sessions are not
// another's, even under the same app, user and session id.
func TestADKAuth(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	cfg := defaultConfig()
	cfg.Keys = []KeyConfig{{Name: "a", SHA256: inbound.HashKey("key-a")}, {Name: "b", SHA256: inbound.HashKey("key-b")}}
	base := "http://" + startMain(t, cfg).Addr()
	sessions := base + "/apps/app/users/u/sessions"

	st, body := adkCall(t, "GET", base+"/list-apps", "", "")
	var e struct{ Error string }
	if st != 401 || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
		t.Fatalf("no key: %d %s", st, body)
	}
	if st, body := adkCall(t, "POST", sessions+"/s1", "key-a", `{"state":{"owner":"a"}}`); st != 200 {
		t.Fatalf("create: %d %s", st, body)
	}
	if st, body := adkCall(t, "POST", base+"/run", "key-a", runBody("app", "u", "s1", "hi", false)); st != 200 {
		t.Fatalf("run: %d %s", st, body)
	}
	if st, body := adkCall(t, "GET", sessions+"/s1", "key-b", ""); st != 404 || !strings.Contains(body, "Session not found: s1") {
		t.Errorf("b reads a's session: %d %s", st, body)
	}
	if st, body := adkCall(t, "POST", base+"/run_sse", "key-b", runBody("app", "u", "s1", "hi", true)); st != 404 {
		t.Errorf("b runs in a's session: %d %s", st, body)
	}
	if st, body := adkCall(t, "GET", sessions, "key-b", ""); st != 200 || !strings.Contains(body, `"sessions":[]`) {
		t.Errorf("b lists a's sessions: %d %s", st, body)
	}
	// b may have its own s1.
	if st, body := adkCall(t, "POST", sessions+"/s1", "key-b", `{}`); st != 200 || strings.Contains(body, "owner") {
		t.Errorf("b's own s1: %d %s", st, body)
	}
	if st, body := adkCall(t, "GET", sessions+"/s1", "key-a", ""); st != 200 || !strings.Contains(body, `"owner":"a"`) || !strings.Contains(body, `"author":"user"`) {
		t.Errorf("a's s1 after b made one: %d %s", st, body)
	}
}

// TestADKOverload: past the per-principal run limit a run is refused with
// ADK's error shape, 429 and Retry-After, before anything streams; a body
// over the limit is a 413 of the same shape.
func TestADKOverload(t *testing.T) {
	up := newSlowOpenAI(t, 50*time.Millisecond, func(n int) []string { return words("w", 20) })
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.baseURL()}}
	cfg.MaxRunsPerPrincipal = 1
	base := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	adkJSON(t, ctx, "POST", base+"/apps/app/users/u/sessions/o1", ``, 200, nil)
	adkJSON(t, ctx, "POST", base+"/apps/app/users/u/sessions/o2", ``, 200, nil)
	first := adkDo(t, ctx, "POST", base+"/run_sse", runBody("app", "u", "o1", "long", true))
	defer first.Body.Close()
	if evs, _ := adkFrames(t, first.Body, 1); len(evs) != 1 {
		t.Fatal("the first run streams nothing")
	}
	resp := adkDo(t, ctx, "POST", base+"/run_sse", runBody("app", "u", "o2", "another", true))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Error string }
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || json.Unmarshal(b, &e) != nil || e.Error == "" {
		t.Errorf("over the run limit: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	big := `{"appName":"app","userId":"u","sessionId":"o2","newMessage":{"parts":[{"text":"` + strings.Repeat("x", 9<<20) + `"}]}}`
	st, body := adkCall(t, "POST", base+"/run", "", big)
	if st != 413 || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
		t.Errorf("too large: %d %.200s", st, body)
	}
}

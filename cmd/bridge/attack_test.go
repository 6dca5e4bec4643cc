package main

// The attack suite: black-box tests that try, as an attacker would, what
// issue 15 found broken, against a real `bridge serve` (startMain) over a
// real listener. Each test counts the cases it tried and logs the counts
// (go test -v -run TestAttack ./cmd/bridge/), so later work adds cases to
// the same tally. docs/security.md lists what each test holds.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// tally counts the cases an attack test tried, by kind, and logs them
// when the test ends.
type tally struct {
	mu    sync.Mutex
	n     map[string]int
	order []string
}

func newTally(t *testing.T) *tally {
	a := &tally{n: map[string]int{}}
	t.Cleanup(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		total := 0
		parts := make([]string, 0, len(a.order))
		for _, k := range a.order {
			total += a.n[k]
			parts = append(parts, fmt.Sprintf("%s=%d", k, a.n[k]))
		}
		t.Logf("attack suite: %s tried %d cases (%s)", t.Name(), total, strings.Join(parts, " "))
	})
	return a
}

func (a *tally) add(kind string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[kind] == 0 {
		a.order = append(a.order, kind)
	}
	a.n[kind]++
}

// upstreamSecret is the upstream key of the credential attacks; a second
// upstream's key is otherSecret.
const (
	upstreamSecret = "sk-upstream-SECRET-4242abcd"
	otherSecret    = "sk-ant-OTHER-secret-9191"
)

// strayKeys are credentials no upstream is configured with, which an
// upstream's error may quote all the same (a key of its own, a proxy's):
// they are scrubbed by their shape, as the value of an Authorization,
// X-Api-Key or api-key.
var strayKeys = []string{"stray-bearer-TOKEN-5150", "stray-xkey-TOKEN-6161", "stray-azure-TOKEN-7171"}

// leaks reports which credential-looking text s holds.
func leaks(s string) []string {
	var out []string
	for _, k := range append([]string{upstreamSecret, otherSecret, "Bearer sk-", "x-api-key: sk", "SECRET", "OTHER-secret", "TOKEN-"}, strayKeys...) {
		if strings.Contains(s, k) {
			out = append(out, k)
		}
	}
	return out
}

// TestAttackUpstreamCredentialsStayIn: an upstream that quotes the
// bridge's key in its error (a 401 or 403 that echoes the Authorization or
// X-Api-Key header, a 500 that dumps the request, an in-stream error) gets
// the key scrubbed from what the client receives, from the run's failure
// reason and events as the run API serves them, and from the database
// file; a 401 or 403 reaches the client as a bad gateway, never as a
// 401/403 of its own.
func TestAttackUpstreamCredentialsStayIn(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "k1,k2")
	t.Setenv("BRIDGE_API_KEY", "")
	t.Setenv("BRIDGE_UPSTREAM_API_KEY", upstreamSecret)
	t.Setenv("ATTACK_ANTHROPIC_KEY", otherSecret)
	count := newTally(t)

	quote := func(prefix string) string {
		return prefix + ": bad key: Authorization: Bearer " + upstreamSecret + `; headers {"x-api-key": "` + otherSecret + `"} api_key=` + otherSecret +
			"; forwarded Authorization: Bearer " + strayKeys[0] + `, {"X-Api-Key":"` + strayKeys[1] + `"}, api-key: ` + strayKeys[2]
	}
	oa := openaitest.New(func(_ int, body []byte) openaitest.Reply {
		switch {
		case strings.Contains(string(body), `"o401"`):
			return openaitest.Reply{Status: 401, Body: openaitest.ErrorBody("invalid_request_error", quote("401"), "invalid_api_key")}
		case strings.Contains(string(body), `"o403"`):
			return openaitest.Reply{Status: 403, Body: openaitest.ErrorBody("permission_error", quote("403"), "")}
		case strings.Contains(string(body), `"o500"`):
			return openaitest.Reply{Status: 500, Body: openaitest.ErrorBody("server_error", quote("500"), "")}
		case strings.Contains(string(body), `"oraw"`): // not JSON: a proxy's page
			return openaitest.Reply{Status: 500, Body: "<pre>" + quote("proxy") + "</pre>"}
		}
		c := &openaitest.Chunks{ID: "c", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text("half").Error("server_error", quote("mid-stream")).List()}
	})
	t.Cleanup(oa.Close)
	an := anthropictest.New(func(_ int, body []byte) anthropictest.Reply {
		if strings.Contains(string(body), `"a401"`) {
			return anthropictest.Reply{Status: 401, Body: anthropictest.ErrorBody("authentication_error", quote("401"))}
		}
		return anthropictest.Reply{Status: 500, Body: anthropictest.ErrorBody("api_error", quote("500"))}
	})
	t.Cleanup(an.Close)

	cfg := defaultConfig()
	quiet := outbound.BreakerConfig{Failures: 1000}
	cfg.Upstreams = []Upstream{
		{Name: "oa", Dialect: "openai", URL: oa.BaseURL(), Models: []string{"o401", "o403", "o500", "oraw", "omid"}, Breaker: quiet},
		{Name: "an", Dialect: "anthropic", URL: an.URL, APIKeyEnv: "ATTACK_ANTHROPIC_KEY", Models: []string{"a401", "a500"}, Breaker: quiet},
	}
	cfg.Listen, cfg.DB = "127.0.0.1:0", filepath.Join(t.TempDir(), "bridge.db")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &lockedWriter{} // every level, to see what the logs would hold
	m, err := NewMain(t.Context(), cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Run() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.Close(ctx)
		count.add("log-scan")
		logs.mu.Lock()
		defer logs.mu.Unlock()
		if l := leaks(logs.buf.String()); len(l) > 0 {
			t.Errorf("the logs hold %q", l)
		}
		if logs.buf.Len() == 0 {
			t.Errorf("nothing was logged: the log check proves nothing")
		}
	})
	base := "http://" + m.Addr()

	type tc struct {
		name, path, body string
		refused          bool // an upstream 401/403: a bad gateway naming the refusal
	}
	chatReq := func(model string, stream bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	}
	msgReq := func(model string, stream bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%t,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	}
	var cases []tc
	for _, stream := range []bool{false, true} {
		for _, model := range []string{"o401", "o403", "o500", "oraw", "omid", "a401", "a500"} {
			refused := model == "o401" || model == "o403" || model == "a401"
			cases = append(cases,
				tc{fmt.Sprintf("chat/%s/stream=%t", model, stream), "/v1/chat/completions", chatReq(model, stream), refused},
				tc{fmt.Sprintf("messages/%s/stream=%t", model, stream), "/v1/messages", msgReq(model, stream), refused})
		}
	}
	// Responses and ADK (whose app names the model) too, over the
	// upstream that refuses the bridge's key and the one that quotes it in
	// a 500.
	for _, model := range []string{"o401", "o500"} {
		refused := model == "o401"
		if status, body := do(t, "POST", base+"/apps/"+model+"/users/u/sessions", "k1", `{"sessionId":"cred-`+model+`"}`); status != 200 {
			t.Fatalf("ADK session: %d %s", status, body)
		}
		cases = append(cases,
			tc{"responses/" + model, "/v1/responses", fmt.Sprintf(`{"model":%q,"input":"hi"}`, model), refused},
			tc{"responses/" + model + "/stream", "/v1/responses", fmt.Sprintf(`{"model":%q,"stream":true,"input":"hi"}`, model), refused},
			tc{"adk/" + model, "/run", runBody(model, "u", "cred-"+model, "hi", false), refused},
		)
	}
	for _, c := range cases {
		count.add("credential-quote")
		resp, body := call(t, "POST", base+c.path, "k1", c.body)
		if l := leaks(body); len(l) > 0 {
			t.Errorf("%s: the client got %q: %.400s", c.name, l, body)
		}
		if l := leaks(fmt.Sprint(resp.Header)); len(l) > 0 {
			t.Errorf("%s: the response headers hold %q", c.name, l)
		}
		if resp.StatusCode == 401 || resp.StatusCode == 403 {
			t.Errorf("%s: the upstream's refusal reached the client as its own %d: %.300s", c.name, resp.StatusCode, body)
		}
		if c.refused {
			if resp.StatusCode != 502 && resp.StatusCode != 200 { // 200: a stream that carries the error
				t.Errorf("%s: status %d, want 502: %.300s", c.name, resp.StatusCode, body)
			}
			if !strings.Contains(body, outbound.Refused) {
				t.Errorf("%s: the client is not told the upstream refused the bridge's credentials: %.300s", c.name, body)
			}
		}
		run := resp.Header.Get("X-Run-Id")
		if run == "" {
			continue
		}
		for _, p := range []string{"/v1/runs/" + run, "/v1/runs/" + run + "/events"} {
			count.add("run-api-read")
			_, got := do(t, "GET", base+p, "k1", "")
			if l := leaks(got); len(l) > 0 {
				t.Errorf("%s: GET %s serves %q: %.400s", c.name, p, l, got)
			}
		}
	}
	// The store: nothing of the keys in the database file or its WAL.
	for _, suffix := range []string{"", "-wal"} {
		count.add("db-file-scan")
		b, err := os.ReadFile(m.Config().DB + suffix)
		if err != nil && suffix == "" {
			t.Fatal(err)
		}
		for _, k := range append([]string{upstreamSecret, otherSecret}, strayKeys...) {
			if strings.Contains(string(b), k) {
				t.Errorf("the database file %s holds an upstream key", "bridge.db"+suffix)
			}
		}
	}
}

// redirectTarget is an upstream of another origin that records the
// headers it was sent and answers 500 (the bridge must not get anywhere
// through a redirect it was not meant to follow with its key).
func redirectTarget(t *testing.T) (*httptest.Server, func() []http.Header) {
	t.Helper()
	var mu sync.Mutex
	var seen []http.Header
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		http.Error(w, `{"error":{"message":"nope","type":"server_error"}}`, 500)
	}))
	t.Cleanup(s.Close)
	return s, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// TestAttackRedirectKeepsCredentials: an upstream of each dialect that
// redirects the bridge's call (307 and 302) to another origin; the other
// origin receives no credential header of any dialect.
func TestAttackRedirectKeepsCredentials(t *testing.T) {
	t.Setenv("BRIDGE_API_KEY", "")
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_UPSTREAM_API_KEY", upstreamSecret)
	count := newTally(t)
	target, seen := redirectTarget(t)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound, http.StatusPermanentRedirect} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, target.URL+r.URL.Path, code)
		}))
		t.Cleanup(redirector.Close)
		for _, up := range []struct{ dialect, url string }{
			{"openai", redirector.URL + "/v1"}, {"anthropic", redirector.URL}, {"responses", redirector.URL + "/v1"},
			{"hermes", redirector.URL}, {"adk", redirector.URL}, {"a2a", redirector.URL},
		} {
			count.add("redirect-" + up.dialect)
			cfg := defaultConfig()
			cfg.Upstreams = []Upstream{{Dialect: up.dialect, URL: up.url, Model: "m", Retry: outbound.RetryConfig{Disabled: true}}}
			base := "http://" + startMain(t, cfg).Addr()
			before := len(seen())
			status, body := do(t, "POST", base+"/v1/chat/completions", "", chatBody(false))
			if status/100 == 2 {
				t.Errorf("%s %d: the call went through a redirect: %d %.200s", up.dialect, code, status, body)
			}
			got := seen()[before:]
			if len(got) == 0 {
				t.Errorf("%s %d: the redirect was not followed at all (the test proves nothing)", up.dialect, code)
			}
			for _, h := range got {
				for name, vs := range h {
					if slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, upstreamSecret) }) {
						t.Errorf("%s %d: the other origin received the upstream key in %s", up.dialect, code, name)
					}
				}
			}
		}
	}
}

// TestAttackA2ACardOtherOrigin: an A2A agent whose card names an endpoint
// on another origin is refused on first use with a clear bad gateway, and
// the other origin receives nothing; with the origin in allow_origins the
// bridge goes there.
func TestAttackA2ACardOtherOrigin(t *testing.T) {
	t.Setenv("BRIDGE_API_KEY", "")
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_UPSTREAM_API_KEY", upstreamSecret)
	count := newTally(t)
	target, seen := redirectTarget(t)
	card := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"evil","url":%q,"preferredTransport":"JSONRPC","protocolVersion":"0.3.0","capabilities":{"streaming":false},"version":"1","skills":[]}`,
			target.URL+"/rpc")
	}))
	t.Cleanup(card.Close)

	for _, allowed := range []bool{false, true} {
		count.add(fmt.Sprintf("card-other-origin/allowed=%t", allowed))
		cfg := defaultConfig()
		u := Upstream{Dialect: "a2a", URL: card.URL, Retry: outbound.RetryConfig{Disabled: true}}
		if allowed {
			u.AllowOrigins = []string{target.URL}
		}
		cfg.Upstreams = []Upstream{u}
		base := "http://" + startMain(t, cfg).Addr()
		before := len(seen())
		status, body := do(t, "POST", base+"/v1/chat/completions", "", chatBody(false))
		reached := len(seen()) > before
		if !allowed {
			if status != 502 || !strings.Contains(body, "another origin") {
				t.Errorf("card naming another origin: %d %.300s, want a 502 that says so", status, body)
			}
			if reached {
				t.Errorf("the bridge posted to the other origin its card named")
			}
		} else if !reached {
			t.Errorf("allow_origins lists the card's origin, but the bridge did not go there: %d %.300s", status, body)
		}
	}
}

// TestAttackAgentCardURL: the URL the agent card names is not the
// caller's to choose. Without trusted_proxies, X-Forwarded-Host and
// -Proto are ignored (the card names the Host the request came to); from
// a trusted proxy's address they are taken; a configured a2a.url wins
// over both. The card stays readable from any origin (it is public).
func TestAttackAgentCardURL(t *testing.T) {
	t.Setenv("BRIDGE_API_KEY", "")
	t.Setenv("BRIDGE_API_KEYS", "k1")
	count := newTally(t)
	forged := []string{"X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https"}
	cardURL := func(t *testing.T, base string, hdr ...string) string {
		t.Helper()
		resp, body := call(t, "GET", base+"/.well-known/agent-card.json", "", "", hdr...)
		if resp.StatusCode != 200 {
			t.Fatalf("card: %d %.300s", resp.StatusCode, body)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("card Access-Control-Allow-Origin %q, want * (the card is public)", got)
		}
		var c struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("card: %v: %.300s", err, body)
		}
		return c.URL
	}
	for _, tt := range []struct {
		name    string
		proxies []string
		url     string // a2a.url
		want    func(addr string) string
	}{
		{"no trusted proxy", nil, "", func(addr string) string { return "http://" + addr + "/a2a" }},
		{"another proxy trusted", []string{"10.0.0.0/8", "192.0.2.7"}, "", func(addr string) string { return "http://" + addr + "/a2a" }},
		{"this client a trusted proxy", []string{"127.0.0.0/8"}, "", func(string) string { return "https://evil.example/a2a" }},
		{"configured url", []string{"127.0.0.1"}, "https://agents.example.org/bridge/a2a", func(string) string { return "https://agents.example.org/bridge/a2a" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			count.add("forwarded-card/" + tt.name)
			cfg := defaultConfig()
			cfg.TrustedProxies = tt.proxies
			cfg.A2A.URL = tt.url
			addr := startMain(t, cfg).Addr()
			if got, want := cardURL(t, "http://"+addr, forged...), tt.want(addr); got != want {
				t.Errorf("card url with forged X-Forwarded-* = %q, want %q", got, want)
			}
		})
	}
	for _, bad := range []string{"not-a-cidr", "10.0.0.0/99"} {
		count.add("bad-trusted-proxies")
		cfg := defaultConfig()
		cfg.TrustedProxies = []string{bad}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "trusted_proxies") {
			t.Errorf("trusted_proxies %q: %v, want an error naming trusted_proxies", bad, err)
		}
	}
}

// TestAttackResumeKeepsCredentials: a run resumed upstream after a
// restart (it takes no endpoint, so not the Open middleware) has its
// upstream's errors scrubbed as an Open's are. The bridge is killed while
// an A2A agent streams; after the restart the agent's URL answers every
// call with a 500 that quotes the bridge's key, so the resume fails: the
// run's reason says so, without the key, in the run API and its events.
func TestAttackResumeKeepsCredentials(t *testing.T) {
	t.Setenv("BRIDGE_API_KEY", "")
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_UPSTREAM_API_KEY", upstreamSecret)
	count := newTally(t)
	count.add("resume-error-quotes-key")
	agent := a2atest.New(func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: words("g", 100), Delay: 15 * time.Millisecond}
	})
	// The agent after the restart: its card still names itself, every
	// other call quotes the key it was sent.
	var leaky *httptest.Server
	leaky = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"agent","url":%q,"preferredTransport":"JSONRPC","protocolVersion":"0.3.0","capabilities":{"streaming":true},"version":"1","skills":[],"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"]}`, leaky.URL)
			return
		}
		http.Error(w, "upstream exploded handling request with Authorization: "+r.Header.Get("Authorization")+" key "+upstreamSecret+
			" proxy Authorization: Bearer "+strayKeys[0], http.StatusInternalServerError)
	}))
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent.URL)

	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	resp, runID := streamDetached(ctx, t, base, "agent", "resume-leak")
	readSSE(t, resp.Body, func(evs []sseEvent) bool { return len(evs) > 3 })
	killBridge(t, proc)
	resp.Body.Close()
	// The restarted bridge's upstream is at the agent's old address.
	ln, err := net.Listen("tcp", strings.TrimPrefix(agent.URL, "http://"))
	agent.Close()
	if err != nil {
		ln, err = net.Listen("tcp", strings.TrimPrefix(agent.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
	}
	leaky.Listener.Close()
	leaky.Listener = ln
	leaky.Start()
	t.Cleanup(leaky.Close)

	_, base = bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent.URL, "--resume-retry", "300ms")
	run := getRun(t, base, runID)
	for deadline := time.Now().Add(10 * time.Second); run.Status == bridge.StatusRunning && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // the resume fails in the background
		run = getRun(t, base, runID)
	}
	if run.Status != bridge.StatusInterrupted || !strings.Contains(run.Reason, "could not resume") {
		t.Errorf("the run is %s (%q), want interrupted saying the resume failed", run.Status, run.Reason)
	}
	if l := leaks(run.Reason); len(l) > 0 {
		t.Errorf("the resumed run's reason quotes %v: %q", l, run.Reason)
	}
	for _, ev := range replaySSE(t, base, runID) {
		if l := leaks(ev.data); len(l) > 0 {
			t.Errorf("event %s quotes %v: %.300s", ev.id, l, ev.data)
		}
	}
}

// TestAttackUpstreamURLWithoutHost: `--upstream openai=/v1` and its
// kin are refused when bridge serve starts, not at the first request.
func TestAttackUpstreamURLWithoutHost(t *testing.T) {
	count := newTally(t)
	for _, spec := range []string{"openai=/v1", "anthropic=/", "a2a=localhost:9999", "hermes=ftp://h/", "adk=http:///x", "responses=http://"} {
		count.add("upstream-flag")
		// The real command: it must refuse before it listens (were it to
		// start, it would serve until killed).
		if _, err := parseServeFlags([]string{"--upstream", spec}, io.Discard); err == nil {
			t.Errorf("--upstream %s: accepted", spec)
			continue
		}
		err := run([]string{"serve", "--listen", "127.0.0.1:0", "--upstream", spec, "--db", t.TempDir() + "/b.db"}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "url") {
			t.Errorf("bridge serve --upstream %s: %v, want a refusal naming the url", spec, err)
		}
	}
}

// bodyRoutes are the served routes that take a request body, with their
// wildcards filled in: generated from the route table, so a new route is
// attacked without anyone adding it here.
func bodyRoutes(m *Main) [][2]string {
	var out [][2]string
	for _, r := range m.Endpoints() {
		method, path, ok := strings.Cut(r, " ")
		if !ok || (method != "POST" && method != "PUT" && method != "PATCH") {
			continue
		}
		var b strings.Builder
		for len(path) > 0 {
			i := strings.IndexByte(path, '{')
			if i < 0 {
				b.WriteString(path)
				break
			}
			b.WriteString(path[:i])
			j := strings.IndexByte(path[i:], '}')
			b.WriteString("x")
			path = path[i+j+1:]
		}
		out = append(out, [2]string{method, b.String()})
	}
	return out
}

// rawRequest sends method path with headers that declare a body of
// declared bytes, then sends sent bytes of it and nothing more, and
// returns the status of the answer and how long it took (status 0: no
// answer within wait).
func rawRequest(t *testing.T, addr, method, path, key string, declared, sent int, wait time.Duration) (int, string, time.Duration) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	auth := ""
	if key != "" {
		auth = "Authorization: Bearer " + key + "\r\n"
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
		method, path, addr, auth, declared, strings.Repeat(" ", sent))
	_ = c.SetReadDeadline(start.Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err.Error(), time.Since(start)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}

// TestAttackSlowBody: on every route that takes a body, a client that
// declares 100,000 bytes and sends 10 gets the dialect's 408 once the body
// timeout has passed; one without a valid key gets its 401 at once,
// without the bridge waiting for a body it will not read.
func TestAttackSlowBody(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "k1")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	cfg := defaultConfig()
	cfg.BodyTimeout = 1500 * time.Millisecond
	m := startMain(t, cfg)
	routes := bodyRoutes(m)
	if len(routes) < 10 {
		t.Fatalf("only %d routes take a body: %v", len(routes), routes)
	}
	var wg sync.WaitGroup
	for _, rt := range routes {
		for _, key := range []string{"k1", "", "wrong"} {
			count.add("slow-body")
			wg.Go(func() {
				status, body, took := rawRequest(t, m.Addr(), rt[0], rt[1], key, 100000, 10, 6*time.Second)
				what := fmt.Sprintf("%s %s key=%q", rt[0], rt[1], key)
				if status == 0 {
					body = "no answer: " + body
				}
				switch {
				case key != "" && key != "wrong":
					if status != http.StatusRequestTimeout {
						t.Errorf("%s: %d after %s, want 408: %.200s", what, status, took, body)
					} else if took < cfg.BodyTimeout {
						t.Errorf("%s: 408 after %s, before the body timeout", what, took)
					}
				case status != http.StatusUnauthorized:
					t.Errorf("%s: %d after %s, want 401: %.200s", what, status, took, body)
				case took > cfg.BodyTimeout/2:
					t.Errorf("%s: the 401 took %s: it waited for the body", what, took)
				}
				if status != 0 && !inDialect(dialectOf(rt[1]), status, []byte(body)) {
					t.Errorf("%s: %d is not an error in the caller's dialect: %.200s", what, status, body)
				}
				if status != 0 && (strings.Contains(body, "i/o timeout") || strings.Contains(body, "deadline") || strings.Contains(body, "EOF")) {
					t.Errorf("%s: Go's error text reached the client: %.200s", what, body)
				}
			})
		}
	}
	wg.Wait()
}

// TestAttackClientReadsNothing: a client that opens a long stream in a
// session and reads nothing is cut off once a write has waited the write
// timeout (without it the bridge would wait on it for ever, and hand it the
// whole stream when it came back); its run goes on to the end.
func TestAttackClientReadsNothing(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	cfg := defaultConfig()
	cfg.WriteTimeout = 500 * time.Millisecond
	m := startMain(t, cfg)
	base := "http://" + m.Addr()

	d := net.Dialer{Timeout: time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.DialContext(t.Context(), "tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	count.add("reads-nothing")
	// ~8 MB of stream: more than the socket buffers on both sides hold.
	body := fmt.Sprintf(`{"model":"echo","stream":true,"messages":[{"role":"user","content":%q}]}`, strings.Repeat("w ", 40000))
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Session-Id: slow-reader\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := resp.Header.Get("X-Run-Id")
	// Read nothing more; the run goes on and ends.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, got := do(t, "GET", base+"/v1/runs/"+run, "", "")
		if strings.Contains(got, `"completed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %.300s", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * cfg.WriteTimeout)
	// Now read: a client the bridge cut off gets what was in flight, then
	// the end of the connection, not the rest of the stream.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(resp.Body)
	if strings.Contains(string(rest), "[DONE]") {
		t.Errorf("the client that read nothing got the whole stream (%d bytes): the bridge waited for it", len(rest))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the connection is still open: %v", err)
	}
}

// TestAttackConnectionLimit: with max_connections N, N idle connections
// hold the bridge's slots; the next client waits until one closes.
func TestAttackConnectionLimit(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	cfg := defaultConfig()
	cfg.MaxConnections = 4
	m := startMain(t, cfg)
	var held []net.Conn
	for range cfg.MaxConnections {
		count.add("idle-connection")
		c, err := net.DialTimeout("tcp", m.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	count.add("over-limit")
	status, _, _ := rawRequest(t, m.Addr(), "GET", "/healthz", "", 0, 0, 500*time.Millisecond)
	if status != 0 {
		t.Fatalf("a connection over the limit of %d was served (%d)", cfg.MaxConnections, status)
	}
	held[0].Close()
	if status, body, _ := rawRequest(t, m.Addr(), "GET", "/healthz", "", 0, 0, 3*time.Second); status != 200 {
		t.Errorf("after a slot freed: %d %s", status, body)
	}
}

// TestAttackDatabaseFileMode: the database file and its -wal and -shm are
// created 0600 under a umask that would leave them world-readable.
func TestAttackDatabaseFileMode(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	cfg := defaultConfig()
	cfg.DB = filepath.Join(t.TempDir(), "bridge.db")
	m := startMain(t, cfg)
	if status, body := do(t, "POST", "http://"+m.Addr()+"/v1/chat/completions", "", chatBody(false)); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		count.add("db-file-mode")
		fi, err := os.Stat(cfg.DB + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("bridge.db%s has mode %v, want -rw-------", suffix, fi.Mode().Perm())
		}
	}
}

// goErrorText is text of Go's own errors that must never reach a client.
var goErrorText = []string{"EOF", "read tcp", "write tcp", "connection reset", "broken pipe", "json:", "i/o timeout", "runtime error", "goroutine",
	"looking for beginning", "unexpected end of JSON", "after top-level value", "invalid character", "cannot unmarshal",
	"strconv.", "context deadline exceeded", "context canceled", "http: ", "dial tcp", "reflect:", "invalid memory address",
	"nil pointer", "index out of range"}

// TestAttackNoGoErrorText: an upstream that cuts its stream, or sends
// an event that is not its dialect's shape, gives the client (and the run
// API) a message of the bridge's own, never Go's error text.
func TestAttackNoGoErrorText(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	up := openaitest.New(func(_ int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "c", Model: "m"}
		if strings.Contains(string(body), "garbled") {
			return openaitest.Reply{Chunks: append(c.Role().Text("half").List(), `{"choices":[{"index":"zero","delta":{"content":7}}]}`)}
		}
		return openaitest.Reply{Chunks: c.Role().Text("half", " of it", " and").List(), CutAfter: 2, NoDone: true}
	})
	t.Cleanup(up.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.BaseURL(), Retry: outbound.RetryConfig{Disabled: true},
		Breaker: outbound.BreakerConfig{Failures: 1000}}}
	base := "http://" + startMain(t, cfg).Addr()
	for _, input := range []string{"cut", "garbled"} {
		for _, stream := range []bool{false, true} {
			for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
				count.add("upstream-fault")
				body := fmt.Sprintf(`{"model":"m","stream":%t,"max_tokens":9,"messages":[{"role":"user","content":%q}]}`, stream, input)
				if path == "/v1/responses" {
					body = fmt.Sprintf(`{"model":"m","stream":%t,"input":%q}`, stream, input)
				}
				resp, got := call(t, "POST", base+path, "", body)
				what := fmt.Sprintf("%s %s stream=%t", input, path, stream)
				if input == "cut" && !strings.Contains(got, "error") {
					t.Errorf("%s: no error for a cut stream: %.300s", what, got)
				}
				run := resp.Header.Get("X-Run-Id")
				runView := ""
				if run != "" {
					_, runView = do(t, "GET", base+"/v1/runs/"+run, "", "")
				}
				for _, s := range goErrorText {
					if strings.Contains(got, s) {
						t.Errorf("%s: Go's error text %q reached the client: %.300s", what, s, got)
					}
					if strings.Contains(runView, s) {
						t.Errorf("%s: Go's error text %q is in the run: %.300s", what, s, runView)
					}
				}
			}
		}
	}
}

// TestAttackSmallInputs: a content part of a type no dialect knows is
// named in X-Bridge-Dropped, not silently lost; a token limit below one
// is a 400 naming the field.
func TestAttackSmallInputs(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	base := "http://" + startMain(t, defaultConfig()).Addr()

	// Over echo, and over an Anthropic upstream (whose encoder cannot
	// carry another dialect's part).
	an := anthropictest.New(func(int, []byte) anthropictest.Reply {
		ev := &anthropictest.Events{ID: "msg_up", Model: "claude-x"}
		return anthropictest.Reply{Events: ev.Start(5, 0, 0).Text("ok").Delta("end_turn", 1).Stop().List()}
	})
	t.Cleanup(an.Close)
	anCfg := defaultConfig()
	anCfg.Upstreams = []Upstream{{Dialect: "anthropic", URL: an.URL}}
	for _, b := range []string{base, "http://" + startMain(t, anCfg).Addr()} {
		count.add("unknown-part")
		resp, body := call(t, "POST", b+"/v1/chat/completions", "",
			`{"model":"echo","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"hologram","hologram":{"id":1}}]}]}`)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("X-Bridge-Dropped"), `"hologram"`) {
			t.Errorf("unknown part: %d, X-Bridge-Dropped %q: %.300s", resp.StatusCode, resp.Header.Get("X-Bridge-Dropped"), body)
		}
	}

	for _, field := range []string{"max_tokens", "max_completion_tokens"} {
		for _, v := range []int{-1, 0, -9223372036854775807} {
			count.add("token-limit")
			status, body := do(t, "POST", base+"/v1/chat/completions", "",
				fmt.Sprintf(`{"model":"echo","%s":%d,"messages":[{"role":"user","content":"hi"}]}`, field, v))
			expectInvalidRequest(t, status, body, 400)
			if !strings.Contains(body, `"param":"`+field+`"`) {
				t.Errorf("%s=%d: the error does not name the field: %s", field, v, body)
			}
		}
	}
}

// badIDs are client-given ids the bridge refuses, as they go in a URL
// path (escaped) and as they are.
var badIDs = []struct{ name, escaped, raw string }{
	{"257 bytes", strings.Repeat("a", 257), strings.Repeat("a", 257)},
	{"200,000 bytes", strings.Repeat("b", 200000), strings.Repeat("b", 200000)},
	{"NUL", "x%00y", "x\x00y"},
	{"CR LF", "x%0D%0ASet-Cookie:%20a=b", "x\r\nSet-Cookie: a=b"},
	{"C1 control (NEL)", "x%C2%85y", "x\u0085y"},
	{"invalid UTF-8", "x%FFy", "x\xffy"},
}

// TestAttackClientIDs: every client-given id (each path wildcard of every
// route in the route table, the id headers, an A2A contextId, an ADK
// sessionId) longer than 256 bytes or holding a control character is a
// 400 in the caller's dialect, never a 404, a 500, or an id stored.
func TestAttackClientIDs(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "k1")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	m := startMain(t, defaultConfig())
	base := "http://" + m.Addr()

	// Path wildcards, from the route table.
	for _, route := range m.Endpoints() {
		method, pattern, _ := strings.Cut(route, " ")
		pattern = strings.TrimSuffix(pattern, "{$}") // an anchor, not a wildcard
		if !strings.Contains(pattern, "{") {
			continue
		}
		for _, bad := range badIDs {
			if len(bad.raw) > 8000 { // over Go's request-line limit on its own; the header cases carry it
				continue
			}
			count.add("path-id")
			path := wildcardRe.ReplaceAllString(pattern, bad.escaped)
			status, body := do(t, method, base+path, "k1", "{}")
			if status != http.StatusBadRequest {
				t.Errorf("%s %s with a %s id: %d, want 400: %.200s", method, pattern, bad.name, status, body)
			}
		}
	}
	// Id headers (Go's client refuses CR LF and NUL in a header; the
	// server would too, with its own 400).
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
		for _, h := range []string{"X-Session-Id", "X-Client-Run-Id"} {
			for _, bad := range badIDs {
				if strings.ContainsAny(bad.raw, "\x00\r\n") {
					continue
				}
				count.add("header-id")
				body := `{"model":"echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"input":"hi"}`
				resp, got := call(t, "POST", base+path, "k1", body, h, bad.raw)
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("%s %s: %s: %d, want 400: %.200s", path, h, bad.name, resp.StatusCode, got)
				}
			}
		}
	}
	// The other id headers, each on a route that reads it.
	resp, got := call(t, "POST", base+"/v1/chat/completions", "k1", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	run := resp.Header.Get("X-Run-Id")
	if run == "" {
		t.Fatalf("a run to name: %d %.200s", resp.StatusCode, got)
	}
	for _, h := range []struct{ header, method, path, body string }{
		{"Idempotency-Key", "POST", "/v1/runs", `{"input":"hi"}`},
		{"X-Replace-From", "POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`},
		{"Last-Event-ID", "GET", "/v1/runs/" + run + "/events", ""},
		{"Last-Event-ID", "GET", "/v1/sessions/s/events", ""},
	} {
		for _, bad := range badIDs {
			if strings.ContainsAny(bad.raw, "\x00\r\n") {
				continue
			}
			count.add("header-id")
			resp, got := call(t, h.method, base+h.path, "k1", h.body, h.header, bad.raw)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s %s %s: %s: %d, want 400: %.200s", h.method, h.path, h.header, bad.name, resp.StatusCode, got)
			}
		}
	}
	// Ids in bodies (JSON carries no invalid UTF-8: the encoder makes it
	// U+FFFD, a printable character).
	for _, bad := range badIDs {
		if !utf8.ValidString(bad.raw) {
			continue
		}
		id, _ := json.Marshal(bad.raw)
		for _, b := range []struct{ name, path, body string }{
			{"a2a-taskId", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","taskId":` + string(id) + `,"parts":[{"kind":"text","text":"hi"}]}}}`},
			{"a2a-tasks/get", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":` + string(id) + `}}`},
			{"a2a-tasks/cancel", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":` + string(id) + `}}`},
			{"a2a-tasks/resubscribe", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":` + string(id) + `}}`},
			{"adk-run-userId", "/run", `{"appName":"echo","userId":` + string(id) + `,"sessionId":"s","newMessage":{"role":"user","parts":[{"text":"hi"}]}}`},
			{"adk-run-appName", "/run", `{"appName":` + string(id) + `,"userId":"u","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"hi"}]}}`},
			{"hermes-session", "/api/sessions", `{"id":` + string(id) + `}`},
			{"hermes-runs-session_id", "/v1/runs", `{"session_id":` + string(id) + `,"input":"hi"}`},
			{"responses-previous_response_id", "/v1/responses", `{"model":"echo","input":"hi","previous_response_id":` + string(id) + `}`},
			{"responses-compact-previous_response_id", "/v1/responses/compact", `{"model":"echo","previous_response_id":` + string(id) + `}`},
		} {
			count.add(b.name)
			status, got := do(t, "POST", base+b.path, "k1", b.body)
			if b.path == "/a2a" {
				if !strings.Contains(got, `"code":-32602`) {
					t.Errorf("%s %s: want an invalid-params error: %.300s", b.name, bad.name, got)
				}
			} else if status != http.StatusBadRequest {
				t.Errorf("%s %s: %d, want 400: %.200s", b.name, bad.name, status, got)
			}
		}
		count.add("a2a-contextId")
		send := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","contextId":` +
			string(id) + `,"parts":[{"kind":"text","text":"hi"}]}}}`
		_, got := do(t, "POST", base+"/a2a", "k1", send)
		if !strings.Contains(got, `"code":-32602`) {
			t.Errorf("a2a contextId %s: want an invalid-params error: %.300s", bad.name, got)
		}
		count.add("adk-sessionId")
		status, got := do(t, "POST", base+"/apps/echo/users/u/sessions", "k1", `{"sessionId":`+string(id)+`}`)
		if status != http.StatusBadRequest {
			t.Errorf("adk sessionId %s: %d, want 400: %.200s", bad.name, status, got)
		}
		count.add("adk-run-sessionId")
		status, got = do(t, "POST", base+"/run", "k1", `{"appName":"echo","userId":"u","sessionId":`+string(id)+
			`,"newMessage":{"role":"user","parts":[{"text":"hi"}]}}`)
		if status != http.StatusBadRequest {
			t.Errorf("adk /run sessionId %s: %d, want 400: %.200s", bad.name, status, got)
		}
	}
	// The Responses WebSocket mode: a response.create (and a warm-up,
	// generate false) continuing an id that is no id.
	ws := wsDial(t, m, "k1")
	for _, bad := range badIDs {
		if !utf8.ValidString(bad.raw) {
			continue
		}
		for _, generate := range []bool{true, false} {
			count.add("responses-ws-previous_response_id")
			wsSend(t, ws, create("hi", "model", "echo", "previous_response_id", bad.raw, "generate", generate))
			msgs := wsTurn(t, ws)
			if last := msgs[len(msgs)-1]; last.Type != "error" || last.Status != http.StatusBadRequest {
				t.Errorf("WebSocket response.create generate=%t, previous_response_id %s: want a 400 error: %.300s", generate, bad.name, last.raw)
			}
		}
	}
}

var wildcardRe = regexp.MustCompile(`\{[^}]*\}`)

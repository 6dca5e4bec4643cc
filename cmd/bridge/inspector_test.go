package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/internal/browser"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/server"
)

// Keys of the inspector tests: two principals and an admin.
const (
	aliceKey = "alice-key-0123456789"
	bobKey   = "bob-key-0123456789"
	adminKey = "admin-key-0123456789"
)

// inspectorUpstream is a Chat Completions upstream that answers at once,
// or one word every 100 ms for 20 s when the request says "go slow".
func inspectorUpstream(t *testing.T) *openaitest.Server {
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: fmt.Sprintf("chatcmpl-up%d", n), Model: "gpt-test"}
		if strings.Contains(string(body), "go slow") {
			words := make([]string, 200)
			for i := range words {
				words[i] = fmt.Sprintf("w%d ", i)
			}
			return openaitest.Reply{Chunks: c.Role().Text(words...).Finish("stop").List(), Delay: 100 * time.Millisecond}
		}
		return openaitest.Reply{Chunks: c.Role().Text("Hello", " from", " upstream").Finish("stop").Usage(11, 3).List()}
	})
	t.Cleanup(up.Close)
	return up
}

// startInspectorBridge serves a bridge over up with alice's, bob's and an
// admin key.
func startInspectorBridge(t *testing.T, up *openaitest.Server) (string, *Main) {
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "openai", Dialect: "openai", URL: up.BaseURL(), Models: []string{"*"}}}
	cfg.Keys = []server.KeyConfig{{Name: "alice", SHA256: inbound.HashKey(aliceKey)}, {Name: "bob", SHA256: inbound.HashKey(bobKey)},
		{Name: "ops", SHA256: inbound.HashKey(adminKey), Admin: true}}
	m := startMain(t, cfg)
	return "http://" + m.Addr(), m
}

// inspPost sends body to base+path with key and returns the response, its
// body read whole.
func inspPost(t *testing.T, base, path, key, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if resp.Header.Get("X-Run-Id") == "" {
		t.Fatalf("POST %s: no X-Run-Id", path)
	}
	return resp, string(b)
}

// uiRun is GET /ui/api/runs/{run} with key.
func uiRun(t *testing.T, base, key, run string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/ui/api/runs/"+run, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

// page is one browser tab on the inspector, every step bounded.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func newPage(t *testing.T, base string) *page {
	t.Helper()
	ctx, cancel, err := browser.Start(t.Context(), t.TempDir(), 1400, 1000)
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(cancel)
	return &page{t: t, ctx: ctx, base: base}
}

// do runs steps within 20 s.
func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		html, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.getElementById("main").innerText`))
		p.t.Fatalf("%s: %v\npage text:\n%s", what, err, html)
	}
}

// doLive is do for an action on an element of a live run's page, which
// is drawn again for each event: when the node found was replaced before
// the action reached it ("Could not find node with given id": chromedp
// finds, then focuses or scrolls to, the node, so nothing was typed or
// clicked yet), the steps run again on the new one. A user's steer draft
// and focus are carried over a redraw by the page itself.
func (p *page) doLive(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	var err error
	for range 100 {
		err = chromedp.Do(ctx, steps...)
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "node with given id") {
			break
		}
	}
	if err != nil {
		html, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.getElementById("main").innerText`))
		p.t.Fatalf("%s: %v\npage text:\n%s", what, err, html)
	}
}

// until waits (15 s at most) for a JavaScript predicate.
func (p *page) until(what, expr string) {
	p.t.Helper()
	p.do(what, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(15*time.Second))(ctx, t)
		return chromedp.Void{}, err
	})
}

// text returns the text of the first element sel matches ("" if none).
func (p *page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel)))
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// open opens a page of the app by its hash.
func (p *page) open(hash string) {
	p.t.Helper()
	p.do("open "+hash, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, hash)))
}

func js(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestInspectorBrowser drives the inspector in headless Chromium: the
// admin key is asked for, another principal's key sees no foreign run, the
// runs list shows runs made through the bridge, the run page shows both
// wires of an A2A-over-OpenAI and an Anthropic-over-OpenAI run with what
// they dropped and their first commit and first client byte, and a
// running run's page follows it live, streamed, until Stop stops it.
func TestInspectorBrowser(t *testing.T) {
	up := inspectorUpstream(t)
	base, m := startInspectorBridge(t, up)

	respChat, _ := inspPost(t, base, "/v1/chat/completions", aliceKey,
		`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hello inspector"}]}`)
	chatRun := respChat.Header.Get("X-Run-Id")
	respA2A, a2aBody := inspPost(t, base, "/a2a", aliceKey, `{"jsonrpc":"2.0","id":"s1","method":"message/stream","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hello over a2a"}],"metadata":{"client":"inspector-test"}}}}`,
		"X-Bridge-Record", "upstream")
	a2aRun := respA2A.Header.Get("X-Run-Id")
	respAnt, antBody := inspPost(t, base, "/v1/messages", aliceKey, `{"model":"gpt-test","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello over anthropic"}],"tools":[{"name":"lookup","description":"looks up","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]}`,
		"X-Bridge-Record", "upstream")
	antRun := respAnt.Header.Get("X-Run-Id")

	store := m.Store()
	for _, id := range []string{a2aRun, antRun} {
		r, err := store.Run(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Dropped) == 0 {
			t.Fatalf("run %s (%s over openai) dropped nothing: the test needs a request with something to drop", id, r.Inbound)
		}
	}

	// The JSON: bob cannot read alice's run; no key is refused.
	if code, _ := uiRun(t, base, bobKey, chatRun); code != http.StatusNotFound {
		t.Errorf("bob reads alice's run: %d, want 404", code)
	}
	if code, _ := uiRun(t, base, "", chatRun); code != http.StatusUnauthorized {
		t.Errorf("no key: %d, want 401", code)
	}

	p := newPage(t, base)
	p.do("open /ui/", chromedp.Navigate(base+"/ui/"))

	t.Run("key required", func(t *testing.T) {
		p.t = t
		p.until("the key prompt", `document.querySelector("#login") !== null`)
		p.do("wrong key", chromedp.SendKeys(chromedp.CSS("#key"), "not-a-key"), chromedp.Click(chromedp.CSS("#key-submit")))
		p.until("the prompt again, with the error", `(document.querySelector("#login-error") || {}).innerText === "invalid API key"`)
	})

	t.Run("another principal sees no foreign run", func(t *testing.T) {
		p.t = t
		p.do("bob's key", chromedp.SendKeys(chromedp.CSS("#key"), bobKey), chromedp.Click(chromedp.CSS("#key-submit")))
		p.until("bob's empty list", `document.querySelector("#no-runs") !== null`)
		if got := p.text("#who"); got != "principal bob" {
			t.Errorf("who = %q", got)
		}
		p.open("#/run/" + chatRun)
		p.until("not found", `((document.querySelector("#error") || {}).innerText || "").includes("not found")`)
		p.do("forget bob's key", chromedp.Click(chromedp.CSS("#signout")))
		p.until("the key prompt", `document.querySelector("#login") !== null`)
	})

	t.Run("the list shows a run made through the bridge", func(t *testing.T) {
		p.t = t
		p.do("admin key", chromedp.SendKeys(chromedp.CSS("#key"), adminKey), chromedp.Click(chromedp.CSS("#key-submit")))
		p.open("#/runs")
		for _, id := range []string{chatRun, a2aRun, antRun} {
			p.until("run "+id+" listed", fmt.Sprintf(`document.querySelector('tr[data-run=%s]') !== null`, js(id)))
		}
		row := p.text(fmt.Sprintf(`tr[data-run=%s]`, js(chatRun)))
		for _, want := range []string{"completed", "openai → openai", "gpt-test"} {
			if !strings.Contains(row, want) {
				t.Errorf("row of %s = %q, want %q in it", chatRun, row, want)
			}
		}
		p.open("#/runs?inbound=a2a")
		p.until("the a2a filter", fmt.Sprintf(`document.querySelectorAll('tr[data-run]').length === 1 && document.querySelector('tr[data-run=%s]') !== null`, js(a2aRun)))
	})

	for _, tc := range []struct {
		name, run, clientWant, clientBody string
	}{
		{"both wires of A2A over OpenAI", a2aRun, `"jsonrpc":"2.0","id":"s1"`, a2aBody},
		{"both wires of Anthropic over OpenAI", antRun, "event: message_start", antBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.t = t
			p.open("#/run/" + tc.run)
			p.until("the run page", fmt.Sprintf(`document.querySelector('#run[data-run=%s] #wire-client pre') !== null`, js(tc.run)))
			client, upstream, dropped := p.text("#wire-client pre"), p.text("#wire-upstream"), p.text("#dropped")
			if !strings.Contains(client, tc.clientWant) {
				t.Errorf("client wire lacks %q:\n%s", tc.clientWant, client)
			}
			if strings.Contains(client, `"id":null`) {
				t.Errorf("client wire answers JSON-RPC id null, not the request's:\n%s", client)
			}
			// What the client got, frame for frame: every data line is on
			// the page as the client received it (an A2A frame with its
			// request's JSON-RPC id, which the run keeps).
			for _, line := range strings.Split(tc.clientBody, "\n") {
				if strings.HasPrefix(line, "data:") && !strings.Contains(client, line) {
					t.Errorf("client wire lacks the client's first frame line %q\n%s", line, client)
				}
			}
			for _, want := range []string{"chat.completion.chunk", "Hello", "upstream", "POST", "/chat/completions", "200"} {
				if !strings.Contains(upstream, want) {
					t.Errorf("upstream wire lacks %q:\n%s", want, upstream)
				}
			}
			// The waterfall places the first commit and the first byte
			// written to the client; the API and `bridge runs show` give
			// the same numbers.
			for _, mark := range []string{"first commit", "first client byte"} {
				if row := p.text(fmt.Sprintf(`#waterfall [data-mark=%s]`, js(mark))); !strings.Contains(row, " ms") {
					t.Errorf("waterfall row %q = %q, want a time", mark, row)
				}
			}
			_, page := uiRun(t, base, adminKey, tc.run)
			var cli struct {
				FirstCommitMS     *float64 `json:"first_commit_ms"`
				FirstClientByteMS *float64 `json:"first_client_byte_ms"`
			}
			if err := json.Unmarshal([]byte(runCLI(t, "runs", "show", tc.run, "--db", m.Config().DB, "--json")), &cli); err != nil {
				t.Fatal(err)
			}
			tl := page["timeline"].(map[string]any)
			if cli.FirstCommitMS == nil || cli.FirstClientByteMS == nil || tl["first_commit_ms"] != *cli.FirstCommitMS || tl["first_client_byte_ms"] != *cli.FirstClientByteMS {
				t.Errorf("page: first commit %v, first client byte %v; runs show: %v, %v", tl["first_commit_ms"], tl["first_client_byte_ms"], cli.FirstCommitMS, cli.FirstClientByteMS)
			}
			if ttft, commit := tl["ttft_ms"].(float64), *cli.FirstCommitMS; commit < ttft {
				t.Errorf("first commit %v before the first content %v", commit, ttft)
			}
			r, _ := store.Run(t.Context(), tc.run)
			for _, d := range r.Dropped {
				if !strings.Contains(dropped, d) {
					t.Errorf("dropped %q not shown: %q", d, dropped)
				}
			}
			if strings.Contains(upstream, "[redacted]") == false && strings.Contains(upstream, "Authorization") {
				t.Errorf("the upstream call's Authorization header is shown unredacted")
			}
		})
	}

	t.Run("a running run updates live and Stop stops it", func(t *testing.T) {
		p.t = t
		req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"go slow please"}]}`))
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body)) }()
		live := resp.Header.Get("X-Run-Id")
		p.do("count the page's requests afresh", chromedp.Evaluate[chromedp.Void](`performance.setResourceTimingBufferSize(100000); performance.clearResourceTimings()`))
		p.open("#/run/" + live)
		p.until("the live run", fmt.Sprintf(`document.querySelector('#run[data-run=%s] #stop') !== null`, js(live)))
		p.until("some events", `Number((document.querySelector("#run-seq") || {}).innerText) > 3`)
		if client := p.text("#wire-client pre"); !strings.Contains(client, "data: {") || strings.Contains(client, "[DONE]") {
			t.Errorf("the live run's client wire: want its frames so far and no end:\n%s", client)
		}
		seen := p.text("#run-seq")
		frames := strings.Count(p.text("#wire-client pre"), "data: {")
		p.until("more events, live (a second and more)", fmt.Sprintf(`Number((document.querySelector("#run-seq") || {}).innerText) > %s + 10`, seen))
		// They come by the page's stream (GET .../live), not by asking for
		// the whole page again: the run's JSON was read once.
		p.until("the page streams", `document.querySelector('#run[data-live="stream"]') !== null`)
		p.until("the client wire grows, frame by frame", fmt.Sprintf(`(document.querySelector("#wire-client pre").innerText.match(/data: \{/g) || []).length > %d`, frames))
		p.until("no polling", fmt.Sprintf(`performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/ui/api/runs/" + %s)).length === 1`, js(live)))
		// Steer: what is typed joins the running run as a user message.
		p.doLive("type a steer", chromedp.Evaluate[chromedp.Void](`document.querySelector("#steer-input").value = ""`),
			chromedp.SendKeys(chromedp.CSS("#steer-input"), "mind the gap, please"))
		p.until("the steer typed", `document.querySelector("#steer-input").value === "mind the gap, please"`)
		p.doLive("steer", chromedp.Click(chromedp.CSS("#steer-send")))
		// The page is drawn again for each event: what came of the steer
		// stays said.
		p.until("the steer sent", `document.querySelector("#live-note").innerText === "steer sent"`)
		p.until("the steer in the run's timeline", `document.querySelector("#run").innerText.includes("mind the gap, please")`)
		if note := p.text("#live-note"); note != "steer sent" {
			t.Errorf("the note after more events: %q, want it to still say the steer was sent", note)
		}
		p.doLive("stop", chromedp.Click(chromedp.CSS("#stop")))
		p.until("cancelled", `document.querySelector('#run-status [data-status="cancelled"]') !== null`)
		r, err := store.Run(t.Context(), live)
		if err != nil || r.Status != bridge.StatusCancelled {
			t.Fatalf("run after Stop: %+v, %v", r, err)
		}
		if r.LastSeq > 150 {
			t.Errorf("the run went on to seq %d: Stop did not stop it", r.LastSeq)
		}
	})
}

// TestInspectorAccess: BRIDGE_ADMIN_KEY is an admin key; a principal's key
// is not; a request without a key or with a wrong one is refused; a
// bridge without keys opens the inspector to loopback clients as admin;
// BRIDGE_ADMIN_KEY alone locks the inspector and nothing else.
func TestInspectorAccess(t *testing.T) {
	t.Setenv("BRIDGE_ADMIN_KEY", "env-admin-key-0123")
	base, _ := startInspectorBridge(t, inspectorUpstream(t))
	me := func(base, key string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/ui/api/me", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	tests := []struct {
		name, key string
		code      int
		body      string
	}{
		{"BRIDGE_ADMIN_KEY", "env-admin-key-0123", 200, `{"principal":"admin","admin":true}`},
		{"a config admin key", adminKey, 200, `{"principal":"ops","admin":true}`},
		{"a principal's key", aliceKey, 200, `{"principal":"alice","admin":false}`},
		{"no key", "", 401, "no API key"},
		{"a wrong key", "nope", 401, "invalid API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := me(base, tt.key)
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("%d %s, want %d %s", code, body, tt.code, tt.body)
			}
		})
	}
	t.Run("BRIDGE_ADMIN_KEY alone", func(t *testing.T) {
		base := serveUpstream(t, "echo")
		if code, body := me(base, ""); code != 401 {
			t.Errorf("no key: %d %s, want 401", code, body)
		}
		if code, body := me(base, "env-admin-key-0123"); code != 200 || body != `{"principal":"admin","admin":true}` {
			t.Errorf("admin key: %d %s", code, body)
		}
		req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"echo","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("chat completion without a key: %d, want 200 (the admin key locks the inspector only)", resp.StatusCode)
		}
	})
	t.Run("a non-streaming answer's first byte, learnt after the run's end", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-test","messages":[{"role":"user","content":"answer whole"}]}`))
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		run := resp.Header.Get("X-Run-Id")
		// The answer is written after the run's row was committed: the
		// time goes in a later commit.
		var tl map[string]any
		for deadline := time.Now().Add(5 * time.Second); ; {
			_, v := uiRun(t, base, adminKey, run)
			tl, _ = v["timeline"].(map[string]any)
			if tl != nil && tl["first_client_byte_ms"] != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		fb, ok1 := tl["first_client_byte_ms"].(float64)
		end, ok2 := tl["duration_ms"].(float64)
		commit, ok3 := tl["first_commit_ms"].(float64)
		ttft, ok4 := tl["ttft_ms"].(float64)
		if !ok1 || !ok2 || !ok3 || !ok4 || fb < end || commit < ttft {
			t.Errorf("first client byte %v, first commit %v, first content %v, end %v: want the commit after the content and the byte after the end",
				tl["first_client_byte_ms"], tl["first_commit_ms"], tl["ttft_ms"], tl["duration_ms"])
		}
	})
	t.Run("a recording survives a restart", func(t *testing.T) {
		t.Setenv("BRIDGE_ADMIN_KEY", "")
		t.Setenv("BRIDGE_UPSTREAM_API_KEY", "sk-upstream-key-0123")
		up := inspectorUpstream(t)
		cfg := defaultConfig()
		cfg.DB = filepath.Join(t.TempDir(), "bridge.db")
		cfg.Upstreams = []Upstream{{Name: "openai", Dialect: "openai", URL: up.BaseURL(), Models: []string{"*"}}}
		cfg.Keys = []server.KeyConfig{{Name: "alice", SHA256: inbound.HashKey(aliceKey)}, {Name: "ops", SHA256: inbound.HashKey(adminKey), Admin: true}}
		first := startMain(t, cfg)
		resp, _ := inspPost(t, "http://"+first.Addr(), "/v1/chat/completions", aliceKey,
			`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"record me"}]}`, "X-Bridge-Record", "upstream")
		run := resp.Header.Get("X-Run-Id")
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := first.Close(ctx); err != nil {
			t.Fatal(err)
		}
		again := startMain(t, cfg) // a new process (or another replica) on the same store
		code, v := uiRun(t, "http://"+again.Addr(), adminKey, run)
		if code != 200 {
			t.Fatalf("GET the run after the restart: %d %v", code, v)
		}
		up2, _ := v["upstream"].(map[string]any)
		calls, _ := up2["calls"].([]any)
		if up2["recorded"] != true || len(calls) != 1 {
			t.Fatalf("after a restart the upstream wire is %v, want its one recorded call", up2)
		}
		c := calls[0].(map[string]any)
		b, _ := json.Marshal(c)
		if body, _ := c["body"].(string); !strings.Contains(body, "chat.completion.chunk") || !strings.Contains(body, "upstream") {
			t.Errorf("the stored call's body: %q", body)
		}
		if strings.Contains(string(b), "sk-upstream-key-0123") || !strings.Contains(string(b), "[redacted]") {
			t.Errorf("the stored call holds the upstream key, or redacts nothing: %s", b)
		}
	})
	t.Run("no keys: loopback is admin", func(t *testing.T) {
		t.Setenv("BRIDGE_ADMIN_KEY", "")
		open := serveUpstream(t, "echo")
		if code, body := me(open, ""); code != 200 || body != `{"principal":"","admin":true}` {
			t.Errorf("%d %s", code, body)
		}
		resp, err := http.Get(open + "/ui/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "/ui/assets/app.js") || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET /ui/: %d %s", resp.StatusCode, b)
		}
	})
}

package hermes_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	inhermes "github.com/bridge-dev/bridge/inbound/hermes"
	"github.com/bridge-dev/bridge/inbound/inboundtest"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/storage/memory"
)

// newServer serves the dialect and the run API over an engine on an
// in-memory store and up.
func newServer(t *testing.T, up bridge.Upstream, opts ...func(*inhermes.Config)) string {
	t.Helper()
	st := memory.New(nil)
	e := bridgetest.NewEngine(t, st, up)
	cfg := inhermes.Config{Engine: e, Runs: st}
	for _, o := range opts {
		o(&cfg)
	}
	h := inhermes.New(cfg)
	return inboundtest.Serve(t, h, inboundtest.RunAPI(e, h, runs.Config{Create: h.CreateRun()}))
}

func do(t *testing.T, method, url, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	resp, b := inboundtest.Do(t, method, url, body, hdr...)
	return resp.StatusCode, resp.Header, string(b)
}

// TestBadInput: every bad request gets Hermes' error envelope with the
// right status and code, never a Go error string.
func TestBadInput(t *testing.T) {
	base := newServer(t, &bridgetest.Upstream{Events: bridgetest.TextEvents("hi")})
	if s, _, b := do(t, "POST", base+"/api/sessions", `{"id":"s1"}`); s != 201 {
		t.Fatalf("create: %d %s", s, b)
	}
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		code                     string
	}{
		{"create: not JSON", "POST", "/api/sessions", `{`, nil, 400, "invalid_request"},
		{"create: id not a string", "POST", "/api/sessions", `{"id":5}`, nil, 400, "invalid_request"},
		{"create: id with a slash", "POST", "/api/sessions", `{"id":"a/b"}`, nil, 400, "invalid_request"},
		{"create: exists", "POST", "/api/sessions", `{"session_id":"s1"}`, nil, 409, "session_exists"},
		{"get: unknown", "GET", "/api/sessions/nope", ``, nil, 404, "session_not_found"},
		{"patch: other field", "PATCH", "/api/sessions/s1", `{"model":"x"}`, nil, 400, "invalid_request"},
		{"patch: title not a string", "PATCH", "/api/sessions/s1", `{"title":[]}`, nil, 400, "invalid_request"},
		{"delete: unknown", "DELETE", "/api/sessions/nope", ``, nil, 404, "session_not_found"},
		{"messages: format", "GET", "/api/sessions/s1/messages?format=xml", ``, nil, 400, "invalid_request"},
		{"fork: unknown", "POST", "/api/sessions/nope/fork", `{}`, nil, 404, "session_not_found"},
		{"fork: exists", "POST", "/api/sessions/s1/fork", `{"id":"s1"}`, nil, 409, "session_exists"},
		{"list: offset", "GET", "/api/sessions?offset=-1", ``, nil, 400, "invalid_request"},
		{"chat: empty body", "POST", "/api/sessions/s1/chat", ``, nil, 400, "invalid_request"},
		{"chat: no message", "POST", "/api/sessions/s1/chat", `{"model":"m"}`, nil, 400, "invalid_request"},
		{"chat: deep JSON", "POST", "/api/sessions/s1/chat", `{"message":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, nil, 400, "invalid_request"},
		{"stream: unknown session", "POST", "/api/sessions/nope/chat/stream", `{"message":"x"}`, nil, 404, "session_not_found"},
		{"stream: bad role", "POST", "/api/sessions/s1/chat/stream", `{"input":[{"role":"robot","content":"x"}]}`, nil, 400, "invalid_request"},
		{"resume: nothing to resume", "GET", "/api/sessions/s1/chat/stream?after_event_id=x", ``, nil, 404, "run_not_found"},
		{"runs: bad key", "POST", "/v1/runs", `{"input":"x"}`, []string{"Idempotency-Key", strings.Repeat("k", 300)}, 400, "invalid_request"},
		{"runs: bad body", "POST", "/v1/runs", `[1]`, nil, 400, "invalid_request"},
		{"runs: bad session id", "POST", "/v1/runs", `{"input":"x","session_id":"a b"}`, nil, 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := do(t, tc.method, base+tc.path, tc.body, tc.hdr...)
			var env struct {
				Error struct {
					Message, Type, Code string
				} `json:"error"`
			}
			if status != tc.status || json.Unmarshal([]byte(body), &env) != nil || env.Error.Message == "" || hdr.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d body %s", status, body)
			}
			if tc.code != "" && env.Error.Code != tc.code {
				t.Errorf("code %q, want %q", env.Error.Code, tc.code)
			}
		})
	}
}

// TestStreamAndRun: a turn's frames, the hermes.run object, a failed
// upstream's run.failed, and an upstream error before the first byte.
func TestStreamAndRun(t *testing.T) {
	up := &bridgetest.Upstream{Script: func(n int, req *bridge.Request) []bridge.Event {
		return bridgetest.TextEvents("hello", " there")
	}}
	base := newServer(t, up)
	do(t, "POST", base+"/api/sessions", `{"id":"s","system_prompt":"be kind"}`)
	status, hdr, body := do(t, "POST", base+"/api/sessions/s/chat/stream", `{"message":"hi"}`)
	if status != 200 || hdr.Get("Content-Type") != "text/event-stream" || hdr.Get("X-Hermes-Session-Id") != "s" {
		t.Fatalf("%d %v", status, hdr)
	}
	run := hdr.Get("X-Run-Id")
	whole := body
	var names []string
	for _, block := range strings.Split(strings.TrimSpace(body), "\n\n") {
		lines := strings.Split(block, "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "id: "+run+":") {
			t.Fatalf("frame %q", block)
		}
		names = append(names, strings.TrimPrefix(lines[1], "event: "))
	}
	if got := strings.Join(names, " "); got != "run.started message.started assistant.delta assistant.delta assistant.completed run.completed done" {
		t.Errorf("frames %q", got)
	}
	if reqs := up.Requests(); len(reqs) != 1 || reqs[0].Messages[0].Role != bridge.RoleSystem || reqs[0].Messages[0].Text() != "be kind" {
		t.Errorf("the session's system prompt did not reach the upstream: %+v", reqs)
	}
	_, _, body = do(t, "GET", base+"/v1/runs/"+run, "")
	var r map[string]any
	_ = json.Unmarshal([]byte(body), &r)
	if r["object"] != "hermes.run" || r["output"] != "hello there" || r["status"] != "completed" || r["last_event"] != "run.completed" {
		t.Errorf("run %s", body)
	}
	// A cursor past the end replays from the start.
	_, _, body = do(t, "GET", base+"/v1/runs/"+run+"/events", "", "Last-Event-ID", run+":99")
	if !strings.HasPrefix(body, "id: "+run+":1\nevent: run.started") {
		t.Errorf("ahead cursor: %q", body)
	}
	// The id of run.completed, the frame before done: done alone follows;
	// after done, nothing.
	frames := strings.SplitAfter(whole, "\n\n")
	completed := strings.TrimPrefix(strings.SplitN(frames[len(frames)-3], "\n", 2)[0], "id: ")
	_, _, body = do(t, "GET", base+"/v1/runs/"+run+"/events?after_event_id="+completed, "")
	if body != frames[len(frames)-2] || !strings.Contains(body, "event: done") {
		t.Errorf("after run.completed (%s): %q", completed, body)
	}
	doneID := strings.TrimPrefix(strings.SplitN(frames[len(frames)-2], "\n", 2)[0], "id: ")
	if _, _, body = do(t, "GET", base+"/api/sessions/s/chat/stream", "", "Last-Event-ID", doneID); body != "" {
		t.Errorf("after done (%s): %q", doneID, body)
	}
	// Steer after the end, cancel after the end.
	if s, _, b := do(t, "POST", base+"/v1/runs/"+run+"/steer", `{"text":"more"}`); s != 409 || !strings.Contains(b, "run_not_accepting_steer") {
		t.Errorf("steer: %d %s", s, b)
	}
	if s, _, b := do(t, "POST", base+"/v1/runs/"+run+"/steer", `{}`); s != 400 || !strings.Contains(b, `"code":"invalid_request"`) {
		t.Errorf("empty steer: %d %s", s, b)
	}
	if s, _, b := do(t, "POST", base+"/v1/runs/"+run+"/stop", ``); s != 200 || !strings.Contains(b, `"status":"completed"`) {
		t.Errorf("stop: %d %s", s, b)
	}

	// An upstream that fails before its first byte: the turn's stream says run.failed, then done.
	up.OpenErr = &bridge.Error{Code: bridge.CodeUpstream, Message: "upstream said no"}
	_, _, body = do(t, "POST", base+"/api/sessions/s/chat/stream", `{"message":"again"}`)
	if !strings.Contains(body, "event: run.failed\ndata: {\"error\":\"upstream said no\"") || !strings.HasSuffix(strings.TrimSpace(body), "}") ||
		!strings.Contains(body, "event: done") {
		t.Errorf("failed stream: %s", body)
	}
	if s, _, b := do(t, "POST", base+"/api/sessions/s/chat", `{"message":"again"}`); s != 502 || !strings.Contains(b, "upstream said no") {
		t.Errorf("failed chat: %d %s", s, b)
	}
}

// TestKeepAlive: a quiet stream gets ": keepalive" comments between frames.
func TestKeepAlive(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("late"), Gate: gate}
	base := newServer(t, up, func(c *inhermes.Config) { c.KeepAlive = 10 * time.Millisecond })
	do(t, "POST", base+"/api/sessions", `{"id":"k"}`)
	go func() {
		time.Sleep(80 * time.Millisecond)
		for range 8 { // more than the events: the gate never blocks the end
			select {
			case gate <- struct{}{}:
			case <-time.After(time.Second):
				return
			}
		}
	}()
	_, _, body := do(t, "POST", base+"/api/sessions/k/chat/stream", `{"message":"hi"}`)
	if !strings.Contains(body, ": keepalive\n\n") || !strings.Contains(body, "event: done") {
		t.Errorf("stream %q", body)
	}
}

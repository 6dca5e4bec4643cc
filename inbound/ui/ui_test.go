package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/inbound/ui"
	"github.com/bridge-dev/bridge/internal/scrub"
	"github.com/bridge-dev/bridge/mapping/openai"
	"github.com/bridge-dev/bridge/storage/memory"
)

// stubDialect writes errors in the OpenAI shape and renders a run's events
// one JSON line each.
type stubDialect struct{}

func (stubDialect) Name() string { return "stub" }
func (stubDialect) WriteError(w http.ResponseWriter, err error) {
	status, body := openai.EncodeError(bridge.AsError(err))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
func (stubDialect) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	for ev, err := range events {
		if err != nil {
			return
		}
		fmt.Fprintf(w, "%d %s\n", ev.Seq, ev.Kind)
	}
}
func (stubDialect) History(*bridge.HistoryPage) ([]byte, error) { return nil, nil }

// fixture is an inspector over a memory store holding runs of alice (a1,
// a2, a3, oldest first) and bob (b1); ids maps each name to its run id.
type fixture struct {
	eng   *bridge.Engine
	store bridge.Store
	ids   map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	store := memory.New(func() time.Time { clock = clock.Add(time.Millisecond); return clock })
	up := &bridgetest.Upstream{Events: []bridge.Event{{Kind: bridge.KindTextDelta, Text: "hi"},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}}}}
	f := &fixture{eng: bridgetest.NewEngine(t, store, up), store: store, ids: map[string]string{}}
	for _, name := range []string{"a1", "a2", "a3", "b1"} {
		ctx := bridge.WithPrincipal(t.Context(), map[byte]string{'a': "alice", 'b': "bob"}[name[0]])
		run, err := f.eng.Start(ctx, &bridge.Request{SessionID: "sess_" + name[:1], Inbound: "stub", Model: "m-" + name,
			Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hello")}}}})
		if err != nil {
			t.Fatal(err)
		}
		_, events, err := f.eng.Subscribe(ctx, run.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range events {
			if err != nil {
				t.Fatal(err)
			}
		}
		f.ids[name] = run.ID
	}
	return f
}

func (f *fixture) handler(access func(*http.Request) (string, bool, error)) http.Handler {
	return ui.New(ui.Config{Engine: f.eng, Store: f.store, Default: stubDialect{}, Dialects: map[string]inbound.Dialect{"stub": stubDialect{}},
		Access: access})
}

func as(principal string, admin bool) func(*http.Request) (string, bool, error) {
	return func(*http.Request) (string, bool, error) { return principal, admin, nil }
}

func get(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	var v map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, path, w.Code, w.Body)
	}
	return w.Code, v
}

// runIDs names the runs of a list answer by fixture name.
func (f *fixture) names(v map[string]any) []string {
	byID := map[string]string{}
	for n, id := range f.ids {
		byID[id] = n
	}
	var out []string
	for _, r := range v["runs"].([]any) {
		out = append(out, byID[r.(map[string]any)["id"].(string)])
	}
	return out
}

func TestList(t *testing.T) {
	f := newFixture(t)
	admin, alice, bob := f.handler(as("", true)), f.handler(as("alice", false)), f.handler(as("bob", false))
	tests := []struct {
		name  string
		h     http.Handler
		query string
		want  []string
		next  string // the fixture name of the next page's cursor
	}{
		{"admin sees every run, newest first", admin, "", []string{"b1", "a3", "a2", "a1"}, ""},
		{"alice sees hers", alice, "", []string{"a3", "a2", "a1"}, ""},
		{"bob sees his", bob, "", []string{"b1"}, ""},
		{"a principal cannot widen the filter", bob, "session=sess_a", nil, ""},
		{"a page", admin, "limit=2", []string{"b1", "a3"}, "a3"},
		{"the next page", admin, "limit=2&before=" + f.ids["a3"], []string{"a2", "a1"}, "a1"},
		{"model", admin, "model=m-a2", []string{"a2"}, ""},
		{"inbound", admin, "inbound=stub&status=completed", []string{"b1", "a3", "a2", "a1"}, ""},
		{"the last hour", alice, "since=1h&until=" + time.Now().Add(time.Hour).Format(time.RFC3339), []string{"a3", "a2", "a1"}, ""},
		{"until 2026", alice, "until=2026-01-01T00:00:00Z", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, v := get(t, tt.h, "GET", "/ui/api/runs?"+tt.query, "")
			if code != 200 {
				t.Fatalf("%d %v", code, v)
			}
			if d := cmp.Diff(tt.want, f.names(v)); d != "" {
				t.Errorf("runs (-want +got):\n%s", d)
			}
			next, _ := v["next"].(string)
			if want := f.ids[tt.next]; next != want {
				t.Errorf("next = %q, want %q", next, want)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t)
	alice := f.handler(as("alice", false))
	refused := f.handler(func(*http.Request) (string, bool, error) {
		return "", false, bridge.Errorf(bridge.CodeUnauthenticated, "invalid API key")
	})
	tests := []struct {
		name         string
		h            http.Handler
		method, path string
		body         string
		code         int
		msg          string
	}{
		{"unknown status", alice, "GET", "/ui/api/runs?status=done", "", 400, `status: unknown status "done"`},
		{"limit", alice, "GET", "/ui/api/runs?limit=1000", "", 400, "limit must be between 1 and 200"},
		{"since", alice, "GET", "/ui/api/runs?since=yesterday", "", 400, "since: "},
		{"a foreign run", alice, "GET", "/ui/api/runs/" + f.ids["b1"], "", 404, "not found"},
		{"a foreign session", alice, "GET", "/ui/api/sessions/sess_b", "", 404, "not found"},
		{"stop a foreign run", alice, "POST", "/ui/api/runs/" + f.ids["b1"] + "/stop", "", 404, "not found"},
		{"steer without input", alice, "POST", "/ui/api/runs/" + f.ids["a1"] + "/steer", `{"text":1}`, 400, "want {\"input\""},
		{"steer an ended run", alice, "POST", "/ui/api/runs/" + f.ids["a1"] + "/steer", `{"input":"more"}`, 409, ""},
		{"no access", refused, "GET", "/ui/api/runs", "", 401, "invalid API key"},
		// httptest's requests come from 192.0.2.1, not the loopback.
		{"no keys, a client not on the loopback", f.handler(ui.Open), "GET", "/ui/api/runs", "", 403, "only loopback clients"},
		{"no keys, a client not on the loopback, a run", f.handler(ui.Open), "GET", "/ui/api/runs/" + f.ids["a1"], "", 403, "only loopback clients"},
		{"no such endpoint", alice, "GET", "/ui/api/nope", "", 404, "no such inspector page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, v := get(t, tt.h, tt.method, tt.path, tt.body)
			msg, _ := v["error"].(map[string]any)["message"].(string)
			if code != tt.code || !strings.Contains(msg, tt.msg) {
				t.Errorf("%d %q, want %d %q", code, msg, tt.code, tt.msg)
			}
		})
	}
}

func TestRunPage(t *testing.T) {
	f := newFixture(t)
	code, v := get(t, f.handler(as("alice", false)), "GET", "/ui/api/runs/"+f.ids["a2"], "")
	if code != 200 {
		t.Fatalf("%d %v", code, v)
	}
	client := v["client"].(map[string]any)
	if client["dialect"] != "stub" || client["body"] != "1 run_started\n2 text_delta\n3 final\n" {
		t.Errorf("client wire = %v", client)
	}
	if up := v["upstream"].(map[string]any); up["recorded"] != false {
		t.Errorf("upstream = %v, want not recorded", up)
	}
	tl := v["timeline"].(map[string]any)
	if n := len(tl["events"].([]any)); n != 3 {
		t.Errorf("timeline has %d events, want 3", n)
	}
	var marks []string
	for _, m := range v["waterfall"].([]any) {
		marks = append(marks, m.(map[string]any)["name"].(string))
	}
	if d := cmp.Diff([]string{"received", "upstream connected", "first upstream byte", "first upstream event", "first content", "first commit", "first client byte", "end"}, marks); d != "" {
		t.Errorf("waterfall (-want +got):\n%s", d)
	}
	code, v = get(t, f.handler(as("", true)), "GET", "/ui/api/sessions/sess_a", "")
	if code != 200 || len(v["runs"].([]any)) != 3 || len(v["messages"].([]any)) != 6 {
		t.Errorf("session: %d %v", code, v)
	}
}

// TestRecorder: a recorded call keeps both bodies, cut at the cap, with
// the key redacted wherever it appears; a run that did not opt in is not
// recorded. With a store, the call that has ended is there, found by a
// recorder that never saw it (another replica, or after a restart).
func TestRecorder(t *testing.T) {
	for _, stored := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "store"}[stored], func(t *testing.T) { testRecorder(t, stored) })
	}
}

func testRecorder(t *testing.T, stored bool) {
	const secret = "sk-upstream-secret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Set-Cookie", "s=1")
		_, _ = io.WriteString(w, "data: {\"echo\":\""+secret+"\"}\n\n"+strings.Repeat("x", 100))
	}))
	defer srv.Close()
	type runKey struct{}
	rec := &ui.Recorder{Max: 64, Keys: scrub.New(secret), RunID: func(ctx context.Context) string { s, _ := ctx.Value(runKey{}).(string); return s }}
	store := memory.New(nil)
	if stored {
		rec.Store = store
		if err := store.CreateSession(t.Context(), &bridge.Session{ID: "s"}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"run_1", "run_2"} {
			if err := store.CreateRun(t.Context(), &bridge.Run{ID: id, SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	client := &http.Client{Transport: rec.Transport(http.DefaultTransport)}
	call := func(run string, optIn bool) {
		var ctx = t.Context()
		h := rec.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ctx = r.Context() }))
		in := httptest.NewRequest("POST", "/", nil)
		if optIn {
			in.Header.Set(ui.RecordHeader, "upstream")
		}
		h.ServeHTTP(httptest.NewRecorder(), in)
		req, _ := http.NewRequestWithContext(context.WithValue(ctx, runKey{}, run), "POST", srv.URL+"/v1/chat?key="+secret, strings.NewReader(`{"k":"`+secret+`"}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	call("run_1", true)
	call("run_2", false)
	if stored { // what another replica's recorder, with the same store, shows
		rec = &ui.Recorder{Store: store}
	}
	calls, err := rec.Calls(t.Context(), "run_1")
	if err != nil || len(calls) != 1 {
		t.Fatalf("%d calls recorded (%v), want 1", len(calls), err)
	}
	c := calls[0]
	b, _ := json.Marshal(c)
	if strings.Contains(string(b), secret) {
		t.Errorf("the secret is in the recording: %s", b)
	}
	if c.Status != 200 || !c.Truncated || len(c.Body) > 64+len("[redacted]") || !strings.HasPrefix(c.Body, `data: {"echo":"[redacted]"}`) {
		t.Errorf("call = %+v", c)
	}
	if c.RequestHeaders["Authorization"] != "[redacted]" || c.ResponseHeaders["Set-Cookie"] != "[redacted]" || c.RequestBody != `{"k":"[redacted]"}` {
		t.Errorf("headers and body not redacted: %+v", c)
	}
	if c.HeadersMS == nil || c.FirstByteMS == nil || c.EndMS == nil {
		t.Errorf("times missing: %+v", c)
	}
	if got, _ := rec.Calls(t.Context(), "run_2"); len(got) != 0 {
		t.Errorf("a run that did not opt in was recorded: %+v", got)
	}
	if stored {
		recs, _ := store.Recordings(t.Context(), "run_1")
		if len(recs) != 1 || strings.Contains(string(recs[0].Data), secret) {
			t.Errorf("stored: %s", recs)
		}
	}
}

// TestRecorderCapsStored: a call whose JSON would pass the store's cap
// (escaping makes a body several times its size) is stored cut, marked
// truncated, rather than refused.
func TestRecorderCapsStored(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte{1}, 1<<20)) // each byte \u0001 in JSON
	}))
	defer srv.Close()
	store := memory.New(nil)
	if err := store.CreateSession(t.Context(), &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateRun(t.Context(), &bridge.Run{ID: "run_1", SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
		t.Fatal(err)
	}
	rec := &ui.Recorder{All: true, Max: 2 << 20, Store: store, RunID: func(context.Context) string { return "run_1" }}
	resp, err := (&http.Client{Transport: rec.Transport(http.DefaultTransport)}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	recs, err := store.Recordings(t.Context(), "run_1")
	if err != nil || len(recs) != 1 {
		t.Fatalf("stored %d recordings (%v), want 1", len(recs), err)
	}
	if n := len(recs[0].Data); n > bridge.MaxRecording || n < bridge.MaxRecording/4 {
		t.Errorf("stored %d bytes; want at most %d, and not far less", n, bridge.MaxRecording)
	}
	var c ui.Call
	if err := json.Unmarshal(recs[0].Data, &c); err != nil || !c.Truncated || c.Body == "" {
		t.Errorf("stored call: truncated %v, %d body bytes, %v", c.Truncated, len(c.Body), err)
	}
}

// TestLive: the live stream of a run gives each committed event, then the
// client's dialect's frame for it, and ends with the run; another
// principal's run is not found.
func TestLive(t *testing.T) {
	f := newFixture(t)
	alice := f.handler(as("alice", false))
	w := httptest.NewRecorder()
	alice.ServeHTTP(w, httptest.NewRequest("GET", "/ui/api/runs/"+f.ids["a2"]+"/live", nil))
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", w.Code, w.Header().Get("Content-Type"))
	}
	var got []string
	for _, frame := range strings.Split(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n") {
		lines := strings.Split(frame, "\n")
		kind := strings.TrimPrefix(lines[0], "event: ")
		data := strings.TrimPrefix(lines[len(lines)-1], "data: ")
		switch kind {
		case "event":
			var ev bridge.Event
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			got = append(got, fmt.Sprintf("event %s %d %s", strings.TrimPrefix(lines[1], "id: "), ev.Seq, ev.Kind))
		case "wire":
			var s string
			if err := json.Unmarshal([]byte(data), &s); err != nil {
				t.Fatalf("wire %q: %v", data, err)
			}
			got = append(got, "wire "+strings.TrimSpace(s))
		default:
			got = append(got, kind+" "+data)
		}
	}
	want := []string{"event 1 1 run_started", "wire 1 run_started", "event 2 2 text_delta", "wire 2 text_delta",
		"event 3 3 final", "wire 3 final", "end {}"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("live stream (-want +got):\n%s", d)
	}
	code, v := get(t, alice, "GET", "/ui/api/runs/"+f.ids["b1"]+"/live", "")
	if msg, _ := v["error"].(map[string]any)["message"].(string); code != 404 || !strings.Contains(msg, "not found") {
		t.Errorf("bob's run: %d %v", code, v)
	}
}

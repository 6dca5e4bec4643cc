package adk

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/memory"
)

func newHandler(t testing.TB, up *bridgetest.Upstream) *Handler {
	t.Helper()
	st := memory.New(nil)
	e := bridgetest.NewEngine(t, st, up)
	return New(Config{Engine: e, Store: st, Apps: func() []string { return []string{"app", "bad-name"} }})
}

func do(t testing.TB, h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// frames splits a run_sse body into its data payloads.
func frames(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func runBody(text string) string {
	return `{"appName":"app","userId":"u","sessionId":"s","streaming":true,"newMessage":{"role":"user","parts":[{"text":` + q(text) + `}]}}`
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestAgentTools: an upstream agent's own tool call and result reach the
// client as functionCall and functionResponse events, before the answer.
func TestAgentTools(t *testing.T) {
	up := &bridgetest.Upstream{Events: []bridge.Event{
		{Kind: bridge.KindMessageStarted},
		{Kind: bridge.KindToolCallStarted, Source: bridge.SourceAgent, ToolCall: &bridge.ToolCall{ID: "c1", Name: "get_weather"}},
		{Kind: bridge.KindToolCallDone, Source: bridge.SourceAgent, ToolCall: &bridge.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		{Kind: bridge.KindToolResult, Source: bridge.SourceAgent, ToolResult: &bridge.ToolResult{CallID: "c1", Name: "get_weather",
			Content: []bridge.Part{{Type: bridge.PartData, JSON: json.RawMessage(`{"temp":21}`)}}}},
		{Kind: bridge.KindMessageStarted},
		{Kind: bridge.KindTextDelta, Text: "21 "},
		{Kind: bridge.KindTextDelta, Text: "C"},
		{Kind: bridge.KindMessageDone},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}},
	}}
	h := newHandler(t, up)
	if w := do(t, h, "POST", "/apps/app/users/u/sessions/s", ``); w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	w := do(t, h, "POST", "/run_sse", runBody("weather in Oslo?"))
	fs := frames(w.Body.String())
	if len(fs) != 6 || fs[5] != "[DONE]" ||
		!strings.Contains(fs[0], `"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Oslo"}}`) ||
		!strings.Contains(fs[1], `"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"temp":21}}}]`) ||
		!strings.Contains(fs[2], `"partial":true`) || !strings.Contains(fs[4], `"text":"21 C"`) {
		t.Fatalf("frames:\n%s", strings.Join(fs, "\n"))
	}
	s := do(t, h, "GET", "/apps/app/users/u/sessions/s", "")
	var sess struct {
		Events []struct {
			Author  string `json:"author"`
			Partial bool   `json:"partial"`
		} `json:"events"`
	}
	if err := json.Unmarshal(s.Body.Bytes(), &sess); err != nil || len(sess.Events) != 4 || sess.Events[0].Author != "user" {
		t.Errorf("session: %s", s.Body)
	}
}

// TestFailures: an upstream that refuses is an ADK error answer with its
// status (nothing streamed); a run that fails mid-way ends with an
// errorCode event, then [DONE].
func TestFailures(t *testing.T) {
	h := newHandler(t, &bridgetest.Upstream{OpenErr: &bridge.Error{Code: bridge.CodeRateLimited, Message: "slow down"}})
	do(t, h, "POST", "/apps/app/users/u/sessions/s", ``)
	w := do(t, h, "POST", "/run_sse", runBody("hi"))
	if w.Code != 429 || w.Body.String() != `{"error":"slow down"}` {
		t.Errorf("refused: %d %s", w.Code, w.Body)
	}
	h = newHandler(t, &bridgetest.Upstream{Events: []bridge.Event{
		{Kind: bridge.KindTextDelta, Text: "par"},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Reason: "boom",
			Error: &bridge.Error{Code: bridge.CodeUpstream, Message: "the model crashed"}}},
	}})
	do(t, h, "POST", "/apps/app/users/u/sessions/s", ``)
	w = do(t, h, "POST", "/run_sse", runBody("hi"))
	fs := frames(w.Body.String())
	if w.Code != 200 || len(fs) != 4 || !strings.Contains(fs[2], `"errorCode":"502","errorMessage":"the model crashed"`) || fs[3] != "[DONE]" {
		t.Errorf("failed mid-way: %d\n%s", w.Code, strings.Join(fs, "\n"))
	}
	// A model name that is no ADK app name (a hyphen) is listed all the
	// same: the bridge takes it as an app.
	if w := do(t, h, "GET", "/list-apps", ""); w.Body.String() != `["app","bad-name"]` {
		t.Errorf("list-apps: %s", w.Body)
	}
}

// FuzzRun posts arbitrary bodies to /run and /run_sse: the answer is a
// run, a stream, or an ADK error object, never a panic or a Go error text.
func FuzzRun(f *testing.F) {
	for _, s := range []string{runBody("hi"), `{}`, ``, `{"sessionId":"s","lastEventId":"x"}`, `{"sessionId":"s","lastEventId":"run_1:2"}`,
		`{"app_name":"app","user_id":"u","session_id":"s","new_message":{"parts":[{"text":"x"}]}}`, `{"sessionId":"s","newMessage":{"parts":[]}}`,
		`{"sessionId":"s","stateDelta":{"a":1},"newMessage":{"parts":[{"functionResponse":{"name":"f","response":{}}}]}}`, `[[[[`, `{"sessionId":"s","streaming":1}`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	h := newHandler(f, &bridgetest.Upstream{Events: bridgetest.TextEvents("ok")})
	do(f, h, "POST", "/apps/app/users/u/sessions/s", ``)
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		path := "/run"
		if sse {
			path = "/run_sse"
		}
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == 200 {
			return
		}
		var e struct {
			Error *string `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == nil || *e.Error == "" {
			t.Fatalf("status %d, body %q: not an ADK error", w.Code, w.Body)
		}
	})
}

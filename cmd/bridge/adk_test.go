package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// adkTimeout bounds every ADK test's requests.
const adkTimeout = 30 * time.Second

// adkEvent is the part of an ADK event the tests read.
type adkEvent struct {
	ID           string `json:"id"`
	InvocationID string `json:"invocationId"`
	Author       string `json:"author"`
	Partial      bool   `json:"partial"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
	Content      *struct {
		Role  string `json:"role"`
		Parts []struct {
			Text         string          `json:"text"`
			Thought      bool            `json:"thought"`
			FunctionCall json.RawMessage `json:"functionCall"`
		} `json:"parts"`
	} `json:"content"`
}

func (e adkEvent) text() string {
	if e.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range e.Content.Parts {
		if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

type adkSession struct {
	ID             string          `json:"id"`
	AppName        string          `json:"appName"`
	UserID         string          `json:"userId"`
	State          json.RawMessage `json:"state"`
	Events         []adkEvent      `json:"events"`
	LastUpdateTime float64         `json:"lastUpdateTime"`
	Session        *struct {
		Status string `json:"status"`
	} `json:"session"`
	ActiveRun json.RawMessage `json:"active_run"`
}

// chatStreamText is the text of a Chat Completions stream body: the delta
// content of its data: chunks, in order. errFrame is the first chunk that
// carries an error object, nil when none does.
func chatStreamText(body []byte) (text string, errFrame []byte) {
	var b strings.Builder
	for _, l := range bytes.Split(body, []byte("\n")) {
		d, ok := bytes.CutPrefix(l, []byte("data: "))
		if !ok || string(d) == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(d, &c)
		if c.Error != nil && errFrame == nil {
			errFrame = d
		}
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String(), errFrame
}

// adkDo sends a JSON request and returns the response (the caller closes it).
func adkDo(t *testing.T, ctx context.Context, method, url, body string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// adkJSON sends a request and decodes a JSON answer with the wanted status.
func adkJSON(t *testing.T, ctx context.Context, method, url, body string, want int, v any) {
	t.Helper()
	resp := adkDo(t, ctx, method, url, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, resp.StatusCode, want, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
}

// adkFrames reads run_sse frames: events until [DONE] (done true) or the
// end of the body, at most max events (0: all).
func adkFrames(t *testing.T, body io.Reader, max int) (evs []adkEvent, done bool) {
	t.Helper()
	br := bufio.NewReader(body)
	for {
		line, err := br.ReadBytes('\n')
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: ")); ok {
			if string(d) == "[DONE]" {
				return evs, true
			}
			var ev adkEvent
			if err := json.Unmarshal(d, &ev); err != nil {
				t.Fatalf("frame %s: %v", d, err)
			}
			evs = append(evs, ev)
			if max > 0 && len(evs) >= max {
				return evs, false
			}
		}
		if err != nil {
			return evs, false
		}
	}
}

func runBody(app, user, session, text string, streaming bool) string {
	b, _ := json.Marshal(map[string]any{"appName": app, "userId": user, "sessionId": session, "streaming": streaming,
		"newMessage": map[string]any{"role": "user", "parts": []any{map[string]string{"text": text}}}})
	return string(b)
}

// TestADKOverOpenAI is an ADK client's flow against the bridge over an
// OpenAI upstream: apps, a session with a client-chosen id and state, a
// streamed turn (partials, then the complete event, then [DONE]), the
// session with its events, a second turn (/run) whose upstream request
// carries the first, the list, the errors, and the delete.
func TestADKOverOpenAI(t *testing.T) {
	up := newSlowOpenAI(t, 0, func(n int) []string {
		if n == 0 {
			return []string{"Paris ", "is ", "sunny."}
		}
		return []string{"Lyon ", "too."}
	})
	base := a2aBridge(t, up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()

	var apps []string
	adkJSON(t, ctx, "GET", base+"/list-apps", "", 200, &apps)

	sessions := base + "/apps/weather/users/u1/sessions"
	var s adkSession
	adkJSON(t, ctx, "POST", sessions+"/s-1", `{"state":{"topic":"weather"}}`, 200, &s)
	if s.ID != "s-1" || s.AppName != "weather" || s.UserID != "u1" || string(s.State) != `{"topic":"weather"}` || len(s.Events) != 0 {
		t.Fatalf("created session = %+v", s)
	}
	var e struct{ Error string }
	adkJSON(t, ctx, "POST", sessions+"/s-1", `{}`, 400, &e)
	if e.Error != "Session already exists: s-1" {
		t.Errorf("second create: %q", e.Error)
	}
	var other adkSession
	adkJSON(t, ctx, "POST", sessions, ``, 200, &other)
	if other.ID == "" || other.ID == "s-1" {
		t.Errorf("server-chosen id = %q", other.ID)
	}

	resp := adkDo(t, ctx, "POST", base+"/run_sse", runBody("weather", "u1", "s-1", "Weather in Paris?", true))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("run_sse: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs, done := adkFrames(t, resp.Body, 0)
	resp.Body.Close()
	if !done {
		t.Fatal("the stream did not end with [DONE]")
	}
	var partial strings.Builder
	var complete []adkEvent
	for _, ev := range evs {
		if ev.ID == "" || ev.InvocationID == "" || ev.Author != "weather" {
			t.Errorf("event without id, invocationId or author: %+v", ev)
		}
		if ev.Partial {
			partial.WriteString(ev.text())
		} else {
			complete = append(complete, ev)
		}
	}
	if partial.String() != "Paris is sunny." || len(complete) != 1 || complete[0].text() != "Paris is sunny." {
		t.Fatalf("partials %q, complete %+v", partial.String(), complete)
	}
	inv := complete[0].InvocationID

	adkJSON(t, ctx, "GET", sessions+"/s-1", "", 200, &s)
	if len(s.Events) != 2 || s.Events[0].Author != "user" || s.Events[0].text() != "Weather in Paris?" ||
		s.Events[1].ID != complete[0].ID || s.Events[1].text() != "Paris is sunny." || s.Events[1].InvocationID != inv {
		t.Fatalf("session events = %+v", s.Events)
	}
	if s.Session == nil || s.Session.Status != "idle" || string(s.ActiveRun) != "null" || s.LastUpdateTime < 1e9 || s.LastUpdateTime > 1e11 {
		t.Errorf("session status %+v, active_run %s, lastUpdateTime %v", s.Session, s.ActiveRun, s.LastUpdateTime)
	}

	var arr []adkEvent
	adkJSON(t, ctx, "POST", base+"/run", runBody("weather", "u1", "s-1", "And Lyon?", false), 200, &arr)
	if len(arr) != 1 || arr[0].text() != "Lyon too." || arr[0].Partial || arr[0].InvocationID == inv {
		t.Fatalf("/run = %+v", arr)
	}
	reqs := up.Requests()
	if len(reqs) != 2 || !bytes.Contains(reqs[1].Body, []byte("Paris is sunny.")) || !bytes.Contains(reqs[1].Body, []byte("Weather in Paris?")) {
		t.Fatalf("the second upstream request does not carry the first turn: %s", reqs[len(reqs)-1].Body)
	}

	var list struct {
		Sessions   []adkSession `json:"sessions"`
		TotalItems int          `json:"totalItems"`
	}
	adkJSON(t, ctx, "GET", sessions, "", 200, &list)
	if list.TotalItems != 2 || len(list.Sessions) != 2 {
		t.Errorf("list = %+v", list)
	}

	for _, c := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"unknown session", "/run_sse", runBody("weather", "u1", "nope", "hi", true), 404, "Session not found: nope"},
		{"empty body", "/run", `{}`, 404, "Session not found: undefined"},
		{"bad json", "/run_sse", `{"appName":`, 400, "invalid JSON"},
		{"nothing to resume", "/run_sse", `{"sessionId":"s-1","streaming":true}`, 404, "no active or completed stream"},
		{"unknown cursor", "/run_sse", `{"sessionId":"s-1","streaming":true,"lastEventId":"run_x:3"}`, 404, "no active or completed stream"},
	} {
		var e struct{ Error string }
		adkJSON(t, ctx, "POST", base+c.path, c.body, c.status, &e)
		if !strings.Contains(e.Error, c.want) {
			t.Errorf("%s: error %q, want it to contain %q", c.name, e.Error, c.want)
		}
	}

	dr := adkDo(t, ctx, "DELETE", sessions+"/s-1", "")
	dr.Body.Close()
	if dr.StatusCode != 204 {
		t.Fatalf("delete: %d", dr.StatusCode)
	}
	adkJSON(t, ctx, "GET", sessions+"/s-1", "", 404, &e)
	if e.Error != "Session not found: s-1" {
		t.Errorf("get after delete: %q", e.Error)
	}
}

// TestADKResume: a client that drops a run_sse stream and resumes with the
// lastEventId it has gets the rest, with no duplicate; GET of the session
// says running with the active run while it runs, idle after.
func TestADKResume(t *testing.T) {
	up := newSlowOpenAI(t, 40*time.Millisecond, func(n int) []string { return words("w", 12) })
	base := a2aBridge(t, up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	sessions := base + "/apps/app/users/u/sessions"
	adkJSON(t, ctx, "POST", sessions+"/r-1", ``, 200, nil)

	sctx, scancel := context.WithCancel(ctx)
	resp := adkDo(t, sctx, "POST", base+"/run_sse", runBody("app", "u", "r-1", "count", true))
	first, done := adkFrames(t, resp.Body, 3)
	scancel()
	resp.Body.Close()
	if done || len(first) != 3 {
		t.Fatalf("first frames: %d, done %v", len(first), done)
	}
	last := first[len(first)-1]

	var s adkSession
	adkJSON(t, ctx, "GET", sessions+"/r-1", "", 200, &s)
	var active struct {
		RunID   string `json:"run_id"`
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(s.ActiveRun, &active); err != nil || s.Session == nil || s.Session.Status != "running" ||
		active.RunID != last.InvocationID || active.EventID == "" {
		t.Fatalf("while running: status %+v, active_run %s", s.Session, s.ActiveRun)
	}
	found := false
	for _, ev := range s.Events {
		found = found || ev.ID == active.EventID
	}
	if !found {
		t.Errorf("active_run.event_id %q is not among the session's events %+v", active.EventID, s.Events)
	}

	body, _ := json.Marshal(map[string]any{"appName": "app", "userId": "u", "sessionId": "r-1", "streaming": true, "lastEventId": last.ID})
	resp = adkDo(t, ctx, "POST", base+"/run_sse", string(body))
	rest, done := adkFrames(t, resp.Body, 0)
	resp.Body.Close()
	if resp.StatusCode != 200 || !done {
		t.Fatalf("resume: status %d, done %v", resp.StatusCode, done)
	}
	seen := map[string]bool{}
	var text strings.Builder
	var complete string
	for _, ev := range append(first, rest...) {
		if seen[ev.ID] {
			t.Errorf("duplicate event %s", ev.ID)
		}
		seen[ev.ID] = true
		if ev.Partial {
			text.WriteString(ev.text())
		} else {
			complete = ev.text()
		}
	}
	want := strings.Join(words("w", 12), "")
	if text.String() != want || complete != want {
		t.Errorf("partials %q, complete %q, want %q", text.String(), complete, want)
	}

	adkJSON(t, ctx, "GET", sessions+"/r-1", "", 200, &s)
	if s.Session == nil || s.Session.Status != "idle" || string(s.ActiveRun) != "null" || len(s.Events) != 2 {
		t.Errorf("after: status %+v, active_run %s, %d events", s.Session, s.ActiveRun, len(s.Events))
	}
	// A resume after the end: the stream ends at once, with [DONE] only.
	body, _ = json.Marshal(map[string]any{"sessionId": "r-1", "streaming": true, "lastEventId": s.Events[1].ID})
	resp = adkDo(t, ctx, "POST", base+"/run_sse", string(body))
	none, done := adkFrames(t, resp.Body, 0)
	resp.Body.Close()
	if !done || len(none) != 0 {
		t.Errorf("resume after the end: %d events, done %v", len(none), done)
	}
}

// jsonShape is the JSON type of each key of an object.
func jsonShape(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	m := map[string]string{}
	for k, v := range o {
		switch v[0] {
		case '{':
			m[k] = "object"
		case '[':
			m[k] = "array"
		case '"':
			m[k] = "string"
		case 't', 'f':
			m[k] = "bool"
		case 'n':
			m[k] = "null"
		default:
			m[k] = "number"
		}
	}
	return m
}

// sameKeys checks that got has every key of want with the same JSON type.
func sameKeys(t *testing.T, what string, want, got []byte) {
	t.Helper()
	ws, gs := jsonShape(t, want), jsonShape(t, got)
	for k, typ := range ws {
		if gs[k] != typ {
			t.Errorf("%s: key %q is %q from the bridge, %q from the real server", what, k, gs[k], typ)
		}
	}
}

// TestADKShapes: the session, list and event answers of the bridge have
// the field names and JSON types of the real ADK-JS server's (the corpus
// captures of the same flows); stateDelta updates the state; the run
// API's history in format=adk is the session detail.
func TestADKShapes(t *testing.T) {
	real := func(name string) []byte {
		b, err := os.ReadFile(corpusDir + "/adk/server/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	up := newSlowOpenAI(t, 0, func(n int) []string { return []string{"hello ", "there ", "friend"} })
	base := a2aBridge(t, up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), adkTimeout)
	defer cancel()
	sessions := base + "/apps/scripted/users/u1/sessions"

	get := func(method, url, body string) []byte {
		resp := adkDo(t, ctx, method, url, body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
		}
		return b
	}
	sameKeys(t, "created session", real("session-create-with-id.json"), get("POST", sessions+"/fixed-session-1", `{"state":{"topic":"weather"}}`))
	sameKeys(t, "list-apps", []byte(`{"a":`+string(real("list-apps.json"))+`}`), []byte(`{"a":`+string(get("GET", base+"/list-apps", ""))+`}`))

	body := `{"appName":"scripted","userId":"u1","sessionId":"fixed-session-1","streaming":true,"stateDelta":{"mood":"good"},` +
		`"newMessage":{"role":"user","parts":[{"text":"say:hello there friend"}]}}`
	resp := adkDo(t, ctx, "POST", base+"/run_sse", body)
	evs, done := adkFrames(t, resp.Body, 0)
	bridgeSession := resp.Header.Get("X-Session-Id")
	resp.Body.Close()
	if !done || len(evs) == 0 {
		t.Fatalf("run_sse: %d events, done %v", len(evs), done)
	}

	s := get("GET", sessions+"/fixed-session-1", "")
	want := real("session-get-after-two-turns.json")
	sameKeys(t, "session", want, s)
	var ws, gs struct {
		Events []json.RawMessage `json:"events"`
		State  map[string]any    `json:"state"`
	}
	_ = json.Unmarshal(want, &ws)
	_ = json.Unmarshal(s, &gs)
	if len(gs.Events) != 2 {
		t.Fatalf("session events: %d", len(gs.Events))
	}
	sameKeys(t, "user event", ws.Events[0], gs.Events[0])
	sameKeys(t, "model event", ws.Events[1], gs.Events[1])
	if gs.State["topic"] != "weather" || gs.State["mood"] != "good" {
		t.Errorf("state after stateDelta: %v", gs.State)
	}
	var wl, gl struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	l := get("GET", sessions, "")
	sameKeys(t, "session list", real("sessions-list.json"), l)
	_ = json.Unmarshal(real("sessions-list.json"), &wl)
	_ = json.Unmarshal(l, &gl)
	if len(gl.Sessions) != 1 {
		t.Fatalf("list: %s", l)
	}
	sameKeys(t, "listed session", wl.Sessions[0], gl.Sessions[0])

	h := get("GET", base+"/v1/sessions/"+bridgeSession+"/history?format=adk", "")
	sameKeys(t, "history format=adk", want, h)
	var hs struct {
		ID     string            `json:"id"`
		Events []json.RawMessage `json:"events"`
	}
	if json.Unmarshal(h, &hs) != nil || hs.ID != "fixed-session-1" || len(hs.Events) != 2 {
		t.Errorf("history format=adk: %s", h)
	}
}

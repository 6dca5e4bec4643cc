package main

// TestAttackNoGoErrorText's siblings: every client dialect over every
// upstream dialect whose answer is cut or garbled, and every client
// dialect's request body badly typed, cut short or over the limit. The
// standard they hold: a clear error in the caller's own dialect, never a
// panic, a hang, a 500, or Go's own error text.

import (
	"bufio"
	"bytes"
	"context"

	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/coder/websocket"

	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
	"github.com/bridge-dev/bridge/outbound/adk/adktest"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/outbound/hermes/hermestest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
)

// The faults a faultProxy makes of an answer, named by the word in the
// request that asks for it: the stream (or JSON body) cut mid-way with no
// end, a frame (or body) that is not JSON, one whose values are of the
// wrong JSON types; and, in place of the answer, a 500 whose body is a
// proxy's HTML page and a 400 whose error object has the wrong types.
var upstreamFaults = []string{"cutoff", "notjson", "badtype", "htmlfivehundred", "typedfourhundred"}

// faultProxy stands in front of one dialect's test server and spoils the
// answer to each request whose body holds a fault word (the user's text
// carries it through the bridge); other requests (an agent card, a
// session made first) pass through untouched. The test server's answer is
// read whole, then: an SSE stream is cut after half its frames, or its
// middle JSON frame replaced; a JSON body is cut after half its bytes
// (the connection dropped under a Content-Length that promised more),
// or replaced. Applied counts the answers spoiled, so a case whose fault
// never reached the bridge fails rather than passes.
type faultProxy struct {
	*httptest.Server
	mu      sync.Mutex
	applied map[string]int
	always  string // a fault for every answer, the setup calls' too
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	p := &faultProxy{applied: map[string]int{}}
	client := &http.Client{Timeout: 20 * time.Second}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fault := ""
		for _, f := range upstreamFaults {
			if bytes.Contains(body, []byte(f)) {
				fault = f
			}
		}
		p.mu.Lock()
		if p.always != "" {
			fault = p.always
		}
		p.mu.Unlock()
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, "proxy: upstream unreachable", http.StatusBadGateway)
			return
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// An A2A card names its endpoint: the proxy's, so the calls come here.
		data = bytes.ReplaceAll(data, []byte(target), []byte(p.URL))
		for k, vs := range resp.Header {
			if k != "Content-Length" {
				w.Header()[k] = vs
			}
		}
		switch fault {
		case "htmlfivehundred", "typedfourhundred":
			p.mu.Lock()
			p.applied[fault]++
			p.mu.Unlock()
			if fault == "htmlfivehundred" {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, "<html><body><h1>500 Internal Server Error</h1></body></html>")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":7,"type":["x"],"code":{"a":1}},"type":7,"detail":false}`)
			return
		}
		if fault == "" || resp.StatusCode != http.StatusOK {
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(data)
			return
		}
		sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		if sse {
			frames := splitFrames(data)
			if len(frames) < 2 { // nothing to cut in the middle of: pass it on
				w.WriteHeader(resp.StatusCode)
				_, _ = w.Write(data)
				return
			}
			k := len(frames) / 2
			switch fault {
			case "cutoff":
				frames = frames[:k]
			case "notjson":
				frames[middleJSON(frames)] = withData(frames[middleJSON(frames)], `{"garbled":`)
			case "badtype":
				i := middleJSON(frames)
				frames[i] = withData(frames[i], string(mistype([]byte(frameData(frames[i])))))
			}
			data = []byte(strings.Join(frames, ""))
		} else {
			switch fault {
			case "notjson":
				data = data[:len(data)/2]
			case "badtype":
				data = mistype(data)
			}
		}
		p.mu.Lock()
		p.applied[fault]++
		p.mu.Unlock()
		if fault == "cutoff" {
			if !sse {
				w.Header().Set("Content-Length", fmt.Sprint(len(data)))
				data = data[:len(data)/2]
			}
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(data)
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler) // drop the connection: no end, no [DONE]
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *faultProxy) count(fault string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied[fault]
}

// splitFrames splits an SSE body into its frames, each with its blank line.
func splitFrames(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	var out []string
	for s != "" {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		if f := s[:i+2]; strings.TrimSpace(f) != "" {
			out = append(out, f)
		}
		s = s[i+2:]
	}
	return out
}

// frameData is the data of an SSE frame (its data: lines joined).
func frameData(f string) string {
	var d []string
	for line := range strings.SplitSeq(strings.TrimRight(f, "\n"), "\n") {
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			d = append(d, strings.TrimPrefix(v, " "))
		}
	}
	return strings.Join(d, "\n")
}

// withData is frame f with its data replaced by d (its other fields kept).
func withData(f, d string) string {
	var out []string
	put := false
	for line := range strings.SplitSeq(strings.TrimRight(f, "\n"), "\n") {
		if strings.HasPrefix(line, "data:") {
			if !put {
				out = append(out, "data: "+d)
				put = true
			}
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n\n"
}

// middleJSON is the index of the frame at or after the middle whose data
// is a JSON object (the middle frame when none is).
func middleJSON(frames []string) int {
	for i := len(frames) / 2; i < len(frames); i++ {
		if strings.HasPrefix(strings.TrimSpace(frameData(frames[i])), "{") {
			return i
		}
	}
	return len(frames) / 2
}

// mistype is a JSON document with each value of the wrong JSON type: a
// string becomes a number, a number or a bool a string. The keys that
// say what an object is (type, kind, jsonrpc, id, object, role, event)
// keep their values, so that the decoder reaches the bad fields.
func mistype(doc []byte) []byte {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return []byte(`{"garbled":7}`)
	}
	var walk func(v any, key string) any
	walk = func(v any, key string) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e, k)
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(x[i], "")
			}
			return x
		case string:
			if slices.Contains([]string{"type", "kind", "jsonrpc", "id", "object", "role", "event"}, key) {
				return x
			}
			return 7
		case float64, bool:
			if key == "id" {
				return x
			}
			return "seven"
		}
		return v
	}
	b, _ := json.Marshal(walk(v, ""))
	return b
}

// goErrorIn reports the Go error text s holds.
func goErrorIn(s string) []string {
	var out []string
	for _, g := range goErrorText {
		if strings.Contains(s, g) {
			out = append(out, g)
		}
	}
	return out
}

// readBounded reads a response body to its end, or for at most d (a
// stream that does not end is a hang, which the caller reports).
func readBounded(resp *http.Response, d time.Duration) (string, bool) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return string(r.b), true
	case <-time.After(d):
		resp.Body.Close()
		r := <-done
		return string(r.b), false
	}
}

// goErrClient is the test's HTTP client: no overall timeout (readBounded
// bounds each body), a bounded dial and header wait.
var goErrClient = &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 15 * time.Second, DisableKeepAlives: false}}

// goErrDo sends body to url and reads the answer within 15 s.
func goErrDo(t *testing.T, method, url, body string) (*http.Response, string, bool) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := goErrClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	got, ended := readBounded(resp, 15*time.Second)
	return resp, got, ended
}

// faultUpstreams start each upstream dialect's test server, behind a
// faultProxy, answering a few words of text; the bridge's upstream is
// the proxy.
func faultUpstreams(t *testing.T) map[string]*faultProxy {
	t.Helper()
	oa := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "c", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text("half", " of it", " and the rest").Finish("stop").List()}
	})
	t.Cleanup(oa.Close)
	an := anthropictest.New(func(int, []byte) anthropictest.Reply {
		ev := &anthropictest.Events{ID: "msg_up", Model: "claude-x"}
		return anthropictest.Reply{Events: ev.Start(5, 0, 0).Text("half", " of it", " and the rest").Delta("end_turn", 4).Stop().List()}
	})
	t.Cleanup(an.Close)
	rs := responsestest.New(func(int, []byte) responsestest.Reply {
		ev := &responsestest.Events{ID: "resp_up", Model: "m"}
		return responsestest.Reply{Events: ev.Created().Text("half", " of it", " and the rest").Completed(5, 4).List()}
	})
	t.Cleanup(rs.Close)
	aa := a2atest.New(func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: []string{"half", " of it", " and the rest"}}
	})
	t.Cleanup(aa.Close)
	// An agent whose card says no streaming: message/send, one JSON body.
	as := a2atest.NewProfile(a2atest.Artifacts, false, func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: []string{"half", " of it", " and the rest"}}
	})
	t.Cleanup(as.Close)
	ad := adktest.New()
	t.Cleanup(ad.Close)
	he := hermestest.New()
	t.Cleanup(he.Close)
	return map[string]*faultProxy{
		"openai":    newFaultProxy(t, oa.URL),
		"anthropic": newFaultProxy(t, an.URL),
		"responses": newFaultProxy(t, rs.URL),
		"a2a":       newFaultProxy(t, aa.URL),
		"a2a-send":  newFaultProxy(t, as.URL),
		"adk":       newFaultProxy(t, ad.URL),
		"hermes":    newFaultProxy(t, he.URL),
	}
}

// TestAttackNoGoErrorTextAcross: each client dialect (Chat Completions,
// Messages, Responses, A2A message/send and message/stream, ADK /run and
// /run_sse in a session made first, Hermes' session chat, its chat stream
// and /v1/runs with its events) over each upstream dialect's test server
// whose answer is cut mid-way or garbled (not JSON, or values of the
// wrong types), streamed and not. The client's answer, the run the run
// API shows and the run's events hold no Go error text; the answer is
// never a 500 and never hangs.
func TestAttackNoGoErrorTextAcross(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	proxies := faultUpstreams(t)
	upstreams := []string{"openai", "anthropic", "responses", "a2a", "a2a-send", "adk", "hermes"}
	for _, up := range upstreams {
		t.Run(up, func(t *testing.T) { goErrUpstream(t, count, up, proxies[up], false) })
	}
}

// goErrUpstream runs every client dialect's turns, with each fault, over
// one upstream dialect's faultProxy. With setup, every answer of the
// upstream is spoiled, the calls the bridge makes before the turn too (an
// A2A agent card, an ADK or Hermes session), each fault on a bridge of
// its own (a card is kept once read); the client's request was fine, so
// its answer is never a 4xx either.
func goErrUpstream(t *testing.T, count *tally, up string, p *faultProxy, setup bool) {
	url := p.URL
	if up == "openai" || up == "responses" {
		url += "/v1"
	}
	start := func() string {
		cfg := defaultConfig()
		cfg.Upstreams = []Upstream{{Dialect: strings.TrimSuffix(up, "-send"), URL: url, Model: "scripted", Retry: outbound.RetryConfig{Disabled: true},
			Breaker: outbound.BreakerConfig{Failures: 1000}}}
		return "http://" + startMain(t, cfg).Addr()
	}
	base := ""
	if !setup {
		base = start()
	}
	n := 0
	for _, fault := range upstreamFaults {
		kind := up + "/" + fault
		if setup {
			p.mu.Lock()
			p.always = fault
			p.mu.Unlock()
			base = start()
			kind = up + "/setup-" + fault
		}
		for _, client := range []string{"chat", "messages", "responses", "responses-ws", "a2a", "adk", "hermes-chat", "hermes-runs"} {
			for _, stream := range []bool{false, true} {
				if (client == "hermes-runs" || client == "responses-ws") && !stream {
					continue // a run is always read as its event stream; the WebSocket mode streams
				}
				n++
				count.add(kind)
				what := fmt.Sprintf("%s client over %s upstream, %s, stream=%t", client, up, kind, stream)
				text := fmt.Sprintf("please %s %d", fault, n)
				before := p.count(fault)
				got, runID, status, views := goErrCall(t, base, client, text, stream, n)
				// An upstream's own error status is the client's to see
				// (a same-family client gets the upstream's 500 or 400 back,
				// by design); the bridge's must not be a 500, nor a 4xx for
				// an upstream that broke.
				upstreamStatus := fault == "htmlfivehundred" || fault == "typedfourhundred"
				if status == http.StatusInternalServerError && !upstreamStatus {
					t.Errorf("%s: 500: %.300s", what, got)
				}
				if setup && status >= 400 && status < 500 && !upstreamStatus {
					t.Errorf("%s: %d, the client's fault, for the upstream's: %.300s", what, status, got)
				}
				if g := goErrorIn(got); len(g) > 0 {
					t.Errorf("%s: Go's error text %q reached the client: %.400s", what, g, got)
				}
				if p.count(fault) == before {
					t.Errorf("%s: the fault never reached the bridge (the case proves nothing): %.300s", what, got)
				}
				if runID == "" {
					if !setup && client != "responses-ws" { // a turn that failed before its run began has none
						t.Errorf("%s: no run id to read: %.300s", what, got)
					}
				} else {
					views = append(views, view{"GET", "/v1/runs/" + runID, ""}, view{"GET", "/v1/runs/" + runID + "/events", ""})
				}
				for _, v := range views {
					count.add("view-read")
					vr, seen, ended := goErrDo(t, v.method, base+v.path, v.body)
					if vr.StatusCode != http.StatusOK { // a view that is not there proves nothing
						t.Errorf("%s: %s %s: %d: %.300s", what, v.method, v.path, vr.StatusCode, seen)
					}
					if !ended {
						t.Errorf("%s: %s %s did not end", what, v.method, v.path)
					}
					if g := goErrorIn(seen); len(g) > 0 {
						t.Errorf("%s: Go's error text %q is in %s %s: %.400s", what, g, v.method, v.path, seen)
					}
				}
			}
		}
	}
}

// A view is a read of what a dialect keeps of a turn (an A2A task, an ADK
// session's events, a Hermes session's messages).
type view struct{ method, path, body string }

// goErrCall makes one turn as a client of the dialect does, and returns
// everything the client was sent, the run's id, and the dialect's own
// views of the turn.
func goErrCall(t *testing.T, base, client, text string, stream bool, n int) (got, runID string, status int, views []view) {
	t.Helper()
	var (
		resp  *http.Response
		ended bool
	)
	switch client {
	case "chat", "messages":
		path := map[string]string{"chat": "/v1/chat/completions", "messages": "/v1/messages"}[client]
		resp, got, ended = goErrDo(t, "POST", base+path,
			fmt.Sprintf(`{"model":"scripted","stream":%t,"max_tokens":50,"messages":[{"role":"user","content":%q}]}`, stream, text))
		runID = resp.Header.Get("X-Run-Id")
	case "responses":
		resp, got, ended = goErrDo(t, "POST", base+"/v1/responses", fmt.Sprintf(`{"model":"scripted","stream":%t,"input":%q}`, stream, text))
		runID = resp.Header.Get("X-Run-Id")
	case "responses-ws":
		if !stream {
			return "", "", 0, nil // the WebSocket mode streams; see goErrUpstream
		}
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws://"+strings.TrimPrefix(base, "http://")+"/v1/responses", nil)
		if err != nil {
			t.Fatalf("WebSocket mode: %v", err)
		}
		defer c.CloseNow()
		c.SetReadLimit(8 << 20)
		wsSend(t, c, create(text, "model", "scripted"))
		var b strings.Builder
		respID := ""
		for _, m := range wsTurn(t, c) {
			b.WriteString(m.raw + "\n")
			if m.Response.ID != "" {
				respID = m.Response.ID
			}
		}
		// The messages name the response, not the run: its view is the
		// stored response (GET /v1/responses/{id}).
		if respID != "" {
			views = append(views, view{"GET", "/v1/responses/" + respID, ""})
		} else {
			t.Errorf("WebSocket mode over a faulty upstream: no response id: %.300s", b.String())
		}
		return b.String(), "", http.StatusOK, views
	case "a2a":
		method := "message/send"
		if stream {
			method = "message/stream"
		}
		resp, got, ended = goErrDo(t, "POST", base+"/a2a", fmt.Sprintf(
			`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"message":{"messageId":"m-%d","role":"user","kind":"message","parts":[{"kind":"text","text":%q}]}}}`,
			n, method, n, text))
		runID = resp.Header.Get("X-Run-Id")
		if runID == "" {
			runID = a2aTaskID(got)
		}
		views = append(views, view{"POST", "/a2a", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, runID)})
	case "adk":
		session := fmt.Sprintf("goerr-%d", n)
		if st, b := do(t, "POST", base+"/apps/scripted/users/u/sessions", "", `{"sessionId":"`+session+`"}`); st != 200 {
			return b, "", st, nil
		}
		path := "/run"
		if stream {
			path = "/run_sse"
		}
		resp, got, ended = goErrDo(t, "POST", base+path, runBody("scripted", "u", session, text, stream))
		runID = resp.Header.Get("X-Run-Id")
		views = append(views, view{"GET", "/apps/scripted/users/u/sessions/" + session, ""})
	case "hermes-chat":
		session := fmt.Sprintf("goerr-%d", n)
		if st, b := do(t, "POST", base+"/api/sessions", "", `{"id":"`+session+`"}`); st != 201 {
			return b, "", st, nil
		}
		path := "/api/sessions/" + session + "/chat"
		if stream {
			path += "/stream"
		}
		resp, got, ended = goErrDo(t, "POST", base+path, fmt.Sprintf(`{"message":%q}`, text))
		runID = resp.Header.Get("X-Run-Id")
		if runID == "" {
			runID = hermesRunID(got)
		}
		views = append(views, view{"GET", "/api/sessions/" + session + "/messages", ""}, view{"GET", "/api/sessions/" + session, ""})
	case "hermes-runs":
		var created string
		resp, created, _ = goErrDo(t, "POST", base+"/v1/runs", fmt.Sprintf(`{"input":%q}`, text))
		var c struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal([]byte(created), &c)
		runID = c.RunID
		if resp.StatusCode != http.StatusAccepted || runID == "" {
			return created, "", resp.StatusCode, nil
		}
		var events *http.Response
		events, got, ended = goErrDo(t, "GET", base+"/v1/runs/"+runID+"/events", "")
		got = created + "\n" + got
		_, view, _ := goErrDo(t, "GET", base+"/v1/runs/"+runID, "") // Hermes' own view of the run
		got += "\n" + view
		resp.StatusCode = max(resp.StatusCode, events.StatusCode)
	}
	if !ended {
		t.Errorf("%s over a faulty upstream: the answer did not end within 15 s: %.300s", client, got)
	}
	return got, runID, resp.StatusCode, views
}

// a2aTaskID is the task id in an A2A answer (a JSON-RPC response, or the
// first SSE event of a stream that names one).
func a2aTaskID(body string) string {
	docs := []string{body}
	if strings.HasPrefix(body, "data:") {
		docs = nil
		sc := bufio.NewScanner(strings.NewReader(body))
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				docs = append(docs, d)
			}
		}
	}
	for _, d := range docs {
		var r struct {
			Result struct {
				Kind   string `json:"kind"`
				ID     string `json:"id"`
				TaskID string `json:"taskId"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(d), &r) != nil {
			continue
		}
		if r.Result.TaskID != "" {
			return r.Result.TaskID
		}
		if r.Result.Kind == "task" && r.Result.ID != "" {
			return r.Result.ID
		}
	}
	return ""
}

// hermesRunID is the run id a Hermes chat answer names (run_id in its JSON
// or in its stream's frames).
func hermesRunID(body string) string {
	i := strings.Index(body, `"run_id":"`)
	if i < 0 {
		return ""
	}
	rest := body[i+len(`"run_id":"`):]
	if j := strings.IndexByte(rest, '"'); j > 0 {
		return rest[:j]
	}
	return ""
}

// TestAttackBadRequestBodies: each client dialect's turn endpoints (and
// the Responses WebSocket mode's response.create) get a body with a field
// of the wrong JSON type, a body cut short, and one of 10 MB (over the
// 8 MB limit). Each answer is a 4xx (over A2A's JSON-RPC,
// an error response) in the dialect's error shape, never a 5xx, and holds
// no Go error text (json: cannot unmarshal…, unexpected EOF, http: …).
func TestAttackBadRequestBodies(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	base := "http://" + startMain(t, defaultConfig()).Addr()
	if st, b := do(t, "POST", base+"/apps/echo/users/u/sessions", "", `{"sessionId":"bad-body"}`); st != 200 {
		t.Fatalf("ADK session: %d %s", st, b)
	}
	if st, b := do(t, "POST", base+"/api/sessions", "", `{"id":"bad-body"}`); st != 201 {
		t.Fatalf("Hermes session: %d %s", st, b)
	}
	big := strings.Repeat("a", 10<<20)
	rpc := func(method, message string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"message":` + message + `}}`
	}
	adkRun := func(extra string) string {
		return `{"appName":"echo","userId":"u","sessionId":"bad-body"` + extra + `}`
	}
	type endpoint struct {
		path  string
		typed []string // bodies with a field of the wrong JSON type
		huge  string   // a valid body of 10 MB
	}
	endpoints := []endpoint{
		{"/v1/chat/completions", []string{
			`{"model":7,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"echo","messages":"hi"}`,
			`{"model":"echo","messages":[{"role":"user","content":7}]}`,
			`{"model":"echo","messages":[{"role":"user","content":"hi"}],"max_tokens":"ten"}`,
			`{"model":"echo","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`,
			`{"model":"echo","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`,
		}, `{"model":"echo","messages":[{"role":"user","content":"` + big + `"}]}`},
		{"/v1/messages", []string{
			`{"model":"echo","max_tokens":"ten","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"echo","max_tokens":9,"messages":{}}`,
			`{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":7}]}`,
			`{"model":"echo","max_tokens":9,"system":7,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"echo","max_tokens":9,"stream":"yes","messages":[{"role":"user","content":"hi"}]}`,
		}, `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":"` + big + `"}]}`},
		{"/v1/responses", []string{
			`{"model":"echo","input":7}`,
			`{"model":7,"input":"hi"}`,
			`{"model":"echo","input":"hi","stream":"yes"}`,
			`{"model":"echo","input":"hi","max_output_tokens":"ten"}`,
			`{"model":"echo","input":[{"role":"user","content":7}]}`,
		}, `{"model":"echo","input":"` + big + `"}`},
		{"/a2a", []string{
			rpc("message/send", `{"messageId":"m","role":"user","parts":"hi"}`),
			rpc("message/send", `{"messageId":"m","role":"user","parts":[{"kind":"text","text":7}]}`),
			rpc("message/stream", `{"messageId":"m","role":"user","parts":"hi"}`),
			rpc("message/stream", `{"messageId":7,"role":"user","parts":[{"kind":"text","text":"hi"}]}`),
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":"hi"}`,
			`{"jsonrpc":"2.0","id":1,"method":7,"params":{}}`,
		}, rpc("message/send", `{"messageId":"m","role":"user","parts":[{"kind":"text","text":"`+big+`"}]}`)},
		{"/run", []string{
			adkRun(`,"newMessage":{"role":"user","parts":"hi"}`),
			adkRun(`,"newMessage":{"role":"user","parts":[{"text":7}]}`),
			adkRun(`,"newMessage":7`),
			`{"appName":7,"userId":"u","sessionId":"bad-body","newMessage":{"role":"user","parts":[{"text":"hi"}]}}`,
		}, adkRun(`,"newMessage":{"role":"user","parts":[{"text":"` + big + `"}]}`)},
		{"/run_sse", []string{
			adkRun(`,"newMessage":{"role":"user","parts":"hi"}`),
			adkRun(`,"streaming":"yes","newMessage":{"role":"user","parts":[{"text":"hi"}]}`),
		}, adkRun(`,"newMessage":{"role":"user","parts":[{"text":"` + big + `"}]}`)},
		{"/v1/runs", []string{
			`{"input":7}`,
			`{"input":"hi","session_id":7}`,
			`{"input":"hi","instructions":7}`,
		}, `{"input":"` + big + `"}`},
		{"/api/sessions/bad-body/chat", []string{`{"message":7}`, `{"message":["hi"]}`}, `{"message":"` + big + `"}`},
		{"/api/sessions/bad-body/chat/stream", []string{`{"message":7}`}, `{"message":"` + big + `"}`},
		{"/api/sessions", []string{`{"id":7}`, `{"title":7}`}, `{"title":"` + big + `"}`},
	}
	for _, ep := range endpoints {
		dialect := dialectOf(ep.path)
		type tc struct{ kind, body string }
		cases := []tc{{"truncated", ep.typed[0][:len(ep.typed[0])/2]}, {"10 MB", ep.huge}}
		for _, b := range ep.typed {
			cases = append(cases, tc{"wrong type", b})
		}
		for _, c := range cases {
			count.add(c.kind)
			what := fmt.Sprintf("POST %s, %s body %.80q", ep.path, c.kind, c.body)
			resp, got, ended := goErrDo(t, "POST", base+ep.path, c.body)
			if !ended {
				t.Errorf("%s: the answer did not end", what)
			}
			if g := goErrorIn(got); len(g) > 0 {
				t.Errorf("%s: Go's error text %q reached the client: %.300s", what, g, got)
			}
			body := []byte(got)
			if dialect == "a2a" {
				// message/stream refuses with one SSE event holding the
				// JSON-RPC error; JSON-RPC answers with 200 or a 4xx.
				if d, ok := bytes.CutPrefix(bytes.TrimSpace(body), []byte("data: ")); ok {
					body = d
				} else if i := bytes.Index(body, []byte("\ndata: ")); i >= 0 {
					body = bytes.TrimSpace(body[i+len("\ndata: "):])
				}
				if resp.StatusCode >= 500 || !inDialect("a2a", resp.StatusCode, body) {
					t.Errorf("%s: %d, want a JSON-RPC error: %.300s", what, resp.StatusCode, got)
				}
				continue
			}
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%s: %d, want a 4xx: %.300s", what, resp.StatusCode, got)
			}
			if !inDialect(dialect, resp.StatusCode, body) {
				t.Errorf("%s: %d is not a %s error: %.300s", what, resp.StatusCode, dialect, got)
			}
		}
	}
	// The Responses WebSocket mode: each bad message on a connection of
	// its own is answered with an error message (type error, a 4xx
	// status), not a closed connection or Go's text.
	for _, msg := range []struct{ kind, body, says string }{
		{"wrong type", `{"type":"response.create","model":"echo","input":7}`, "input: expected string or array, got number"},
		{"wrong type", `{"type":"response.create","model":7,"input":"hi"}`, "model: expected string, got number"},
		{"wrong type", `{"type":7}`, "type: must be a string"},
		{"wrong type", `[]`, "not a JSON object"},
		{"truncated", `{"type":"response.create","model":"echo","inp`, "cut short"},
		{"10 MB", `{"type":"response.create","model":"echo","input":"` + big + `"}`, "too large"},
	} {
		count.add("ws " + msg.kind)
		what := fmt.Sprintf("WebSocket mode, %s message %.80q", msg.kind, msg.body)
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		c, _, err := websocket.Dial(ctx, "ws://"+strings.TrimPrefix(base, "http://")+"/v1/responses", nil)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", what, err)
		}
		c.SetReadLimit(8 << 20)
		if err := c.Write(ctx, websocket.MessageText, []byte(msg.body)); err != nil {
			t.Errorf("%s: write: %v", what, err)
		}
		_, b, err := c.Read(ctx)
		c.CloseNow()
		cancel()
		var m struct {
			Type   string `json:"type"`
			Status int    `json:"status"`
			Error  struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if err != nil || json.Unmarshal(b, &m) != nil || m.Type != "error" || m.Status < 400 || m.Status >= 500 || m.Error.Message == "" || m.Error.Type == "" {
			t.Errorf("%s: want an error message with a 4xx: %v %.300s", what, err, b)
		}
		if !strings.Contains(m.Error.Message, msg.says) {
			t.Errorf("%s: the error does not say %q: %.300s", what, msg.says, b)
		}
		if g := goErrorIn(string(b)); len(g) > 0 {
			t.Errorf("%s: Go's error text %q reached the client: %.300s", what, g, b)
		}
	}
}

// TestAttackUpstreamSetupFaults: TestAttackNoGoErrorTextAcross with
// every answer of the upstream spoiled, the calls the bridge makes before
// a turn among them: an A2A agent card cut short, not JSON or badly typed
// (a bad gateway saying so, never the 404 of the card places tried after
// it), an ADK or Hermes session that cannot be read. No Go error text, no
// 500, no 4xx (the client asked for nothing wrong), no hang.
func TestAttackUpstreamSetupFaults(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	proxies := faultUpstreams(t)
	for _, up := range []string{"a2a", "a2a-send", "adk", "hermes"} {
		t.Run(up, func(t *testing.T) { goErrUpstream(t, count, up, proxies[up], true) })
	}
}

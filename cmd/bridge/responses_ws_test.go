package main

// WebSocket mode of the Responses dialect end to end: coder/websocket's
// client against `bridge serve` over a fake OpenAI Chat upstream.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/coder/websocket"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
)

// wsMsg is one server message, with the fields the tests read.
type wsMsg struct {
	Type     string `json:"type"`
	Status   int    `json:"status"`
	Delta    string `json:"delta"`
	Response struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	} `json:"response"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

func (m *wsMsg) text() string {
	var b strings.Builder
	for _, o := range m.Response.Output {
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func wsDial(t *testing.T, m *Main, key string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	c, _, err := websocket.Dial(ctx, "ws://"+m.Addr()+"/v1/responses", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(8 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func wsRead(t *testing.T, c *websocket.Conn) *wsMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m wsMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %q: %v", b, err)
	}
	m.raw = string(b)
	return &m
}

// wsTurn reads one response's messages to its terminal event (or an error
// message) and returns them; the last is the terminal one.
func wsTurn(t *testing.T, c *websocket.Conn) []*wsMsg {
	t.Helper()
	var out []*wsMsg
	for range 500 {
		m := wsRead(t, c)
		out = append(out, m)
		switch m.Type {
		case "response.completed", "response.failed", "response.incomplete", "error":
			return out
		}
	}
	t.Fatal("no terminal message in 500")
	return nil
}

func create(input string, extra ...any) map[string]any {
	v := map[string]any{"type": "response.create", "model": "gpt-4o-mini", "input": input}
	for i := 0; i+1 < len(extra); i += 2 {
		v[extra[i].(string)] = extra[i+1]
	}
	return v
}

// TestResponsesWebSocketSequential: one connection carries several
// responses, one after another, each event one message with its sequence
// numbers from 0, and each response a run in the history.
func TestResponsesWebSocketSequential(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	c := wsDial(t, m, "")
	var ids []string
	for _, word := range []string{"first", "second", "third"} {
		wsSend(t, c, create("Reply with "+word, "store", false))
		turn := wsTurn(t, c)
		last := turn[len(turn)-1]
		if last.Type != "response.completed" || last.Response.Status != "completed" {
			t.Fatalf("%s: terminal %s", word, last.raw)
		}
		if turn[0].Type != "response.created" || !strings.Contains(turn[0].raw, `"sequence_number":0`) {
			t.Errorf("%s: first message %s, want response.created with sequence_number 0", word, turn[0].raw)
		}
		if got, want := last.text(), "You said: Reply with "+word; got != want {
			t.Errorf("%s: text %q, want %q", word, got, want)
		}
		ids = append(ids, last.Response.ID)
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("response ids %v, want distinct", ids)
	}
	runs, err := m.Store().ListRuns(t.Context(), bridge.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want one a response", len(runs))
	}
	for _, r := range runs {
		if r.Inbound != "responses" || r.Status != bridge.StatusCompleted {
			t.Errorf("run %s: inbound %s status %s", r.ID, r.Inbound, r.Status)
		}
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("%d upstream calls, want 3", n)
	}
}

// TestResponsesWebSocketContinuation: previous_response_id continues a
// store: false response of the same connection (the upstream sees the
// earlier turn); on another connection that id is not found, nor is an
// unknown one; a stored one is found anywhere.
func TestResponsesWebSocketContinuation(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	c := wsDial(t, m, "")
	wsSend(t, c, create("Remember cobalt", "store", false))
	first := wsTurn(t, c)
	id := first[len(first)-1].Response.ID
	wsSend(t, c, create("What was the word?", "store", false, "previous_response_id", id))
	second := wsTurn(t, c)
	if last := second[len(second)-1]; last.Type != "response.completed" {
		t.Fatalf("continuation: %s", last.raw)
	}
	reqs := up.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "Remember cobalt") || !strings.Contains(body, "You said: Remember cobalt") {
		t.Errorf("the continuation's upstream call lacks the earlier turn: %s", body)
	}

	// generate: false holds input for the next response, with no model
	// call and no output.
	calls := len(up.Requests())
	wsSend(t, c, create("Prepare: warmed", "store", false, "generate", false))
	warm := wsTurn(t, c)
	if last := warm[len(warm)-1]; last.Type != "response.completed" || len(last.Response.Output) != 0 || len(up.Requests()) != calls {
		t.Fatalf("generate false: %s (%d upstream calls, want %d)", last.raw, len(up.Requests()), calls)
	}
	wsSend(t, c, create("Reply", "store", false, "previous_response_id", warm[len(warm)-1].Response.ID))
	if got := wsTurn(t, c); got[len(got)-1].Type != "response.completed" {
		t.Fatalf("after the warmup: %s", got[len(got)-1].raw)
	}
	reqs = up.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "Prepare: warmed") {
		t.Errorf("the warmup's input did not reach the next call: %s", body)
	}

	other := wsDial(t, m, "")
	wsSend(t, other, create("Again", "store", false, "previous_response_id", id))
	if got := wsTurn(t, other); got[0].Type != "error" || got[0].Error.Code != "previous_response_not_found" || got[0].Status != 404 {
		t.Errorf("another connection's unstored response: %s, want error previous_response_not_found", got[0].raw)
	}
	wsSend(t, other, create("Again", "previous_response_id", "resp_unknown"))
	if got := wsTurn(t, other); got[0].Type != "error" || got[0].Error.Code != "previous_response_not_found" {
		t.Errorf("an unknown id: %s, want error previous_response_not_found", got[0].raw)
	}
	// A stored response continues on any connection.
	wsSend(t, c, create("Store this"))
	stored := wsTurn(t, c)
	wsSend(t, other, create("Continue it", "previous_response_id", stored[len(stored)-1].Response.ID))
	if got := wsTurn(t, other); got[len(got)-1].Type != "response.completed" {
		t.Errorf("a stored response on another connection: %s", got[len(got)-1].raw)
	}
}

// TestResponsesWebSocketEviction: a continuation that fails (a tool output
// answering no call) evicts the response it continued from; the next
// continuation of it is previous_response_not_found.
func TestResponsesWebSocketEviction(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	c := wsDial(t, m, "")
	wsSend(t, c, create("Remember ember", "store", false))
	first := wsTurn(t, c)
	id := first[len(first)-1].Response.ID
	bad := map[string]any{"type": "response.create", "model": "gpt-4o-mini", "store": false, "previous_response_id": id,
		"input": []any{map[string]any{"type": "function_call_output", "call_id": "call_missing", "output": "nothing"}}}
	wsSend(t, c, bad)
	failed := wsTurn(t, c)
	last := failed[len(failed)-1]
	if last.Type != "error" && last.Type != "response.failed" {
		t.Fatalf("a continuation answering no call: %s, want it to fail", last.raw)
	}
	wsSend(t, c, create("Try again", "store", false, "previous_response_id", id))
	if got := wsTurn(t, c); got[0].Type != "error" || got[0].Error.Code != "previous_response_not_found" {
		t.Errorf("after the failed continuation: %s, want previous_response_not_found", got[0].raw)
	}
}

// TestResponsesWebSocketBadFrames: a message that is not JSON, one of an
// unknown type and one over the size limit are each answered with an
// error message; the connection goes on serving.
func TestResponsesWebSocketBadFrames(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	c := wsDial(t, m, "")
	for _, tc := range []struct {
		name string
		msg  []byte
		want string // in the error's message
	}{
		{"not JSON", []byte("{not json"), "not a JSON object"},
		{"unknown type", []byte(`{"type":"response.frobnicate","model":"gpt-4o-mini"}`), "unknown client event"},
		{"no input", []byte(`{"type":"response.create","model":"gpt-4o-mini"}`), "input"},
		{"background", []byte(`{"type":"response.create","model":"gpt-4o-mini","input":"hi","background":true}`), "background"},
		{"oversize", []byte(`{"type":"response.create","model":"gpt-4o-mini","input":"` + strings.Repeat("a", 9<<20) + `"}`), "too large"},
	} {
		wsSend(t, c, tc.msg)
		got := wsRead(t, c)
		if got.Type != "error" || got.Status < 400 || !strings.Contains(got.Error.Message, tc.want) {
			t.Errorf("%s: %s, want an error event saying %q", tc.name, got.raw, tc.want)
		}
	}
	wsSend(t, c, create("still there?", "store", false))
	if got := wsTurn(t, c); got[len(got)-1].Type != "response.completed" {
		t.Errorf("after the bad frames: %s", got[len(got)-1].raw)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("%d upstream calls, want 1 (no bad frame reached the upstream)", n)
	}
}

// TestResponsesWebSocketResume: a client that drops the connection in the
// middle of a response leaves its run running; the run API replays the
// whole response.
func TestResponsesWebSocketResume(t *testing.T) {
	up := chatUpstream(t, 20*time.Millisecond)
	m := bridgeOver(t, "openai", up.BaseURL())
	c := wsDial(t, m, "")
	wsSend(t, c, create("one two three four five six seven eight nine ten"))
	var respID string
	for range 4 {
		msg := wsRead(t, c)
		if msg.Response.ID != "" {
			respID = msg.Response.ID
		}
	}
	c.CloseNow()
	runs, err := m.Store().ListRuns(t.Context(), bridge.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+m.Addr()+"/v1/runs/"+runs[0].ID+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("run events: %s", resp.Status)
	}
	var text strings.Builder
	done := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev wsMsg
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" {
			done = true
			if ev.Response.ID != respID {
				t.Errorf("resumed response id %s, want %s", ev.Response.ID, respID)
			}
			break
		}
	}
	if want := "You said: one two three four five six seven eight nine ten"; !done || text.String() != want {
		t.Errorf("resumed: completed %v, text %q; want %q", done, text.String(), want)
	}
}

// TestResponsesWebSocketStopsReading: a client that sends a
// response.create and then reads nothing is cut off once a message's
// write has waited the write timeout (the server's write_timeout, short
// here); its run goes on to the end and the run API replays it whole.
func TestResponsesWebSocketStopsReading(t *testing.T) {
	// 2 MiB of text in deltas, and each of output_text.done,
	// content_part.done, output_item.done and response.completed repeats
	// it: more than both sockets' buffers hold (4 MiB at most here).
	const chunk, chunks = 64 << 10, 32
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-big", Model: "gpt-4o-mini"}
		c.Role()
		for range chunks {
			c.Text(strings.Repeat("x", chunk))
		}
		return openaitest.Reply{Chunks: c.Finish("stop").Usage(3, chunks).List()}
	})
	t.Cleanup(up.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.BaseURL()}}
	cfg.WriteTimeout = 500 * time.Millisecond
	m := startMain(t, cfg)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+m.Addr()+"/v1/responses", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.CloseNow()
	c.SetReadLimit(16 << 20)
	wsSend(t, c, create("a long answer, please"))
	start := time.Now()

	// Read nothing; the run goes on and ends.
	var run *bridge.Run
	for deadline := time.Now().Add(20 * time.Second); ; {
		runs, err := m.Store().ListRuns(t.Context(), bridge.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 && runs[0].Status != bridge.StatusRunning {
			run = runs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %+v", runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if run.Status != bridge.StatusCompleted {
		t.Fatalf("the run of the client that stopped reading ended %s, want completed", run.Status)
	}
	t.Logf("the run ended after %s", time.Since(start).Round(time.Millisecond))
	// The connection's messages lag the run a little: leave the bridge's
	// next write time to wait its timeout out, several times over.
	time.Sleep(5 * cfg.WriteTimeout)
	// Now read: what was in flight, then the end of the connection, not
	// the rest of the response.
	var got int
	var readErr error
	for range 10000 {
		_, b, err := c.Read(ctx)
		if err != nil {
			readErr = err
			break
		}
		got += len(b)
		if strings.Contains(string(b[:min(len(b), 64)]), `"response.completed"`) {
			t.Fatalf("the client that stopped reading got the whole response (%d bytes): the bridge waited for it", got)
		}
	}
	if readErr == nil || ctx.Err() != nil {
		t.Fatalf("the connection is still open after %d bytes: %v", got, readErr)
	}

	// The run API replays the whole response.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+m.Addr()+"/v1/runs/"+run.ID+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read it whole first: a reader slower than write_timeout is cut off.
	all, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("run events after %d bytes: %v", len(all), err)
	}
	var text int
	done := false
	for line := range strings.SplitSeq(string(all), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("run events: %.200s: %v", d, err)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text += len(ev.Delta)
		case "response.completed":
			done = true
		}
	}
	if !done || text != chunk*chunks {
		t.Errorf("replayed: completed %v, %d bytes of text; want %d", done, text, chunk*chunks)
	}
}

// TestResponsesWebSocketAuth: the upgrade authenticates as any request
// does.
func TestResponsesWebSocketAuth(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "ws-secret")
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws://"+m.Addr()+"/v1/responses", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %v, %v; want 401", resp, err)
	}
	c := wsDial(t, m, "ws-secret")
	wsSend(t, c, create("hi", "store", false))
	if got := wsTurn(t, c); got[len(got)-1].Type != "response.completed" {
		t.Errorf("with the key: %s", got[len(got)-1].raw)
	}
	// A plain GET is told what the route is for.
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+m.Addr()+"/v1/responses", nil)
	req.Header.Set("Authorization", "Bearer ws-secret")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusBadRequest {
		t.Errorf("GET without an upgrade: %s, want 400", r2.Status)
	}
}

// TestResponsesCompact: /v1/responses/compact over a Chat upstream asks
// the model for a summary and answers a response.compaction object with
// one compaction item; that item, sent back as input, reaches the upstream
// as the summary. No model is a 400; a forged reference is a 400.
func TestResponsesCompact(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	var hdr http.Header // the last answer's
	post := func(path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+m.Addr()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		hdr = resp.Header
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := post("/v1/responses/compact", `{"input":"hi"}`); code != 400 || !strings.Contains(string(b), `"param":"model"`) {
		t.Errorf("no model: %d %s, want 400 on model", code, b)
	}
	code, b := post("/v1/responses/compact", `{"model":"gpt-4o-mini","input":[{"role":"user","content":"My name is Ada."},{"role":"assistant","content":"Hello Ada."}]}`)
	if code != 200 {
		t.Fatalf("compact: %d %s", code, b)
	}
	var obj struct {
		ID     string `json:"id"`
		Object string `json:"object"`
		Output []struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Content string `json:"encrypted_content"`
		} `json:"output"`
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Object != "response.compaction" || len(obj.Output) != 1 || obj.Output[0].Type != "compaction" || obj.Output[0].Content == "" || obj.Usage.InputTokens == 0 {
		t.Fatalf("compaction object: %s", b)
	}
	reqs := up.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "My name is Ada.") || !strings.Contains(body, "Summarize the conversation") {
		t.Errorf("the summary call did not carry the conversation and the prompt: %s", body)
	}
	item, _ := json.Marshal(obj.Output[0])
	code, b = post("/v1/responses", `{"model":"gpt-4o-mini","store":false,"input":[`+string(item)+`,{"role":"user","content":"What is my name?"}]}`)
	if code != 200 {
		t.Fatalf("a request with the compaction item: %d %s", code, b)
	}
	reqs = up.Requests()
	body := string(reqs[len(reqs)-1].Body)
	// The fake model's summary echoes the last user message: the prompt.
	if !strings.Contains(body, "Summary of the conversation so far") || !strings.Contains(body, "You said: Summarize the conversation") {
		t.Errorf("the compaction item did not reach the upstream as its summary: %s", body)
	}
	// Compacting a stored conversation by previous_response_id: the
	// summary call carries that conversation, and the summary run has a
	// session of its own: the conversation's session does not hold it, and
	// continuing the conversation stays in that session (no branch).
	code, b = post("/v1/responses", `{"model":"gpt-4o-mini","input":"My name is Grace."}`)
	var first struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &first); code != 200 || err != nil || first.ID == "" {
		t.Fatalf("a stored response: %d %s", code, b)
	}
	session := hdr.Get("X-Session-Id")
	if code, b = post("/v1/responses/compact", `{"model":"gpt-4o-mini","previous_response_id":"`+first.ID+`"}`); code != 200 {
		t.Fatalf("compact by previous_response_id: %d %s", code, b)
	}
	if s := hdr.Get("X-Session-Id"); s == "" || s == session {
		t.Errorf("the summary run's session is %q, want one of its own (the conversation's is %q)", s, session)
	}
	reqs = up.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "My name is Grace.") || !strings.Contains(body, "Summarize the conversation") {
		t.Errorf("the summary call did not carry the previous conversation and the prompt: %s", body)
	}
	msgs, _, err := m.Store().Messages(t.Context(), "default", session, 0, 0) // BRIDGE_API_KEY is principal "default"
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range msgs {
		if strings.Contains(msg.Text(), "Summarize the conversation") {
			t.Errorf("the conversation's session holds the summary run's prompt (message %s)", msg.ID)
			break
		}
	}
	if code, b = post("/v1/responses", `{"model":"gpt-4o-mini","previous_response_id":"`+first.ID+`","input":"And now?"}`); code != 200 {
		t.Fatalf("continuing the compacted conversation: %d %s", code, b)
	}
	if s := hdr.Get("X-Session-Id"); s != session {
		t.Errorf("continuing the conversation after its compaction went to session %q, want its own %q", s, session)
	}
	reqs = up.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "My name is Grace.") || strings.Contains(body, "Summarize the conversation") {
		t.Errorf("the summary run became a turn of the conversation it compacted: %s", body)
	}
	if code, b := post("/v1/responses/compact", `{"model":"gpt-4o-mini","previous_response_id":"resp_nope"}`); code != 404 || !strings.Contains(string(b), "previous_response_not_found") {
		t.Errorf("compact of an unknown previous response: %d %s, want 404 previous_response_not_found", code, b)
	}
	forged := `{"type":"compaction","encrypted_content":"bridge-compaction:v1:run_nope"}`
	if code, b := post("/v1/responses", `{"model":"gpt-4o-mini","input":[`+forged+`,{"role":"user","content":"hi"}]}`); code != 400 {
		t.Errorf("a forged compaction reference: %d %s, want 400", code, b)
	}
}

// TestResponsesUpstreamWebSocket: a responses upstream with websocket:
// true is called in WebSocket mode, two calls of a session on one
// connection, the recorder keeping the handshake (the upgraded
// connection must stay writable through it); the answers reach a Chat
// client as over HTTP.
func TestResponsesUpstreamWebSocket(t *testing.T) {
	up := responsestest.New(func(n int, body []byte) responsestest.Reply {
		e := &responsestest.Events{ID: fmt.Sprintf("resp_up%d", n), Model: "gpt-test"}
		return responsestest.Reply{Events: e.Created().Text("over ", "the socket").Completed(3, 2).List()}
	})
	t.Cleanup(up.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "responses", URL: up.BaseURL(), WebSocket: true}}
	cfg.RecordUpstream = true
	m := startMain(t, cfg)
	base := "http://" + m.Addr()
	for i, msg := range []string{"first", "second"} {
		code, b := do(t, "POST", base+"/v1/chat/completions", "",
			`{"model":"gpt-test","messages":[{"role":"user","content":"`+msg+`"}]}`, "X-Session-Id", "ws-upstream")
		if code != 200 || !strings.Contains(b, "over the socket") {
			t.Fatalf("call %d: %d %s", i, code, b)
		}
	}
	if n := up.Upgrades(); n != 1 {
		t.Errorf("two calls opened %d WebSocket connections upstream, want 1", n)
	}
	reqs := up.Requests()
	if len(reqs) != 2 || !strings.HasPrefix(string(reqs[1].Body), `{"type":"response.create"`) || !strings.Contains(string(reqs[1].Body), "second") {
		t.Errorf("upstream messages: %+v", reqs)
	}
}

// TestResponsesCompactOverResponses: over a Responses upstream with
// compaction, /v1/responses/compact is the upstream's own (its object
// passed through, the conversation sent as input), and its compaction
// item, back in a later input, reaches the upstream whole; over one
// without (404) the bridge asks the model for a summary.
func TestResponsesCompactOverResponses(t *testing.T) {
	const upstreamItem = `{"id":"cmp_up1","type":"compaction","encrypted_content":"gAAAA-upstream-opaque"}`
	up := responsestest.New(func(n int, body []byte) responsestest.Reply {
		e := &responsestest.Events{ID: fmt.Sprintf("resp_up%d", n), Model: "gpt-test"}
		return responsestest.Reply{Events: e.Created().Text("a summary").Completed(3, 2).List()}
	})
	up.Compact = func(body []byte) (int, string) {
		return 200, `{"id":"resp_cmp_up","object":"response.compaction","created_at":1760000000,"output":[` + upstreamItem +
			`],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":13}}`
	}
	t.Cleanup(up.Close)
	m := bridgeOver(t, "responses", up.BaseURL())
	base := "http://" + m.Addr()
	code, b := do(t, "POST", base+"/v1/responses/compact", "", `{"model":"gpt-test","input":[{"role":"user","content":"My name is Ada."},{"role":"assistant","content":"Hello Ada."}]}`)
	if code != 200 || !strings.Contains(b, `"id":"resp_cmp_up"`) || !strings.Contains(b, "gAAAA-upstream-opaque") {
		t.Fatalf("compact over a Responses upstream: %d %s, want the upstream's object", code, b)
	}
	reqs := up.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "My name is Ada.") || strings.Contains(last, "Summarize the conversation") || strings.Contains(last, `"stream"`) {
		t.Errorf("the upstream's compact got %s, want the conversation alone", last)
	}
	code, b = do(t, "POST", base+"/v1/responses", "", `{"model":"gpt-test","store":false,"input":[`+upstreamItem+`,{"role":"user","content":"What is my name?"}]}`)
	if code != 200 {
		t.Fatalf("a request with the upstream's compaction item: %d %s", code, b)
	}
	reqs = up.Requests()
	var sent struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &sent); err != nil || len(sent.Input) != 2 || string(sent.Input[0]) != upstreamItem {
		t.Errorf("the compaction item did not reach the upstream whole: %s", reqs[len(reqs)-1].Body)
	}

	// Without compaction upstream: the summary path.
	up.Compact = nil
	code, b = do(t, "POST", base+"/v1/responses/compact", "", `{"model":"gpt-test","input":"My name is Ada."}`)
	if code != 200 || !strings.Contains(b, "bridge-compaction:v1:") {
		t.Fatalf("compact over a Responses upstream without it: %d %s, want the bridge's summary", code, b)
	}
	reqs = up.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "Summarize the conversation") {
		t.Errorf("the summary call: %s", last)
	}
}

// TestResponsesWebSocketAndCompactOverEachUpstream: WebSocket mode and
// /v1/responses/compact over an Anthropic upstream and an agent (A2A)
// upstream, as over Chat: two responses on one connection, the second
// continuing the first (store: false) with the earlier turn reaching the
// upstream; a compaction the bridge makes by asking the upstream for a
// summary; its item, back as input over the same connection, reaching the
// upstream as that summary.
func TestResponsesWebSocketAndCompactOverEachUpstream(t *testing.T) {
	for _, kind := range []string{"anthropic", "a2a"} {
		t.Run(kind, func(t *testing.T) {
			var m *Main
			var seen func() string // the text of the last call the upstream got
			var agent *a2atest.Server
			switch kind {
			case "anthropic":
				up := anthropictest.New(func(n int, body []byte) anthropictest.Reply {
					e := &anthropictest.Events{ID: fmt.Sprintf("msg_%d", n), Model: "claude-test"}
					return anthropictest.Reply{Events: e.Start(5, 0, 0).Text("answer ", fmt.Sprint(n)).Delta("end_turn", 2).Stop().List()}
				})
				t.Cleanup(up.Close)
				m = bridgeOver(t, "anthropic", up.URL)
				seen = func() string { r := up.Requests(); return string(r[len(r)-1].Body) }
			case "a2a":
				agent = a2atest.New(func(n int, _ *a2asdk.Message) a2atest.Reply {
					return a2atest.Reply{Chunks: []string{"answer ", fmt.Sprint(n)}}
				})
				t.Cleanup(agent.Close)
				m = bridgeOver(t, "a2a", agent.URL)
				seen = func() string { r := agent.Received(); return r[len(r)-1].Text }
			}
			c := wsDial(t, m, "")
			wsSend(t, c, create("Remember cobalt", "store", false))
			first := wsTurn(t, c)
			if last := first[len(first)-1]; last.Type != "response.completed" || last.text() != "answer 0" {
				t.Fatalf("first response: %s", last.raw)
			}
			wsSend(t, c, create("What was the word?", "store", false, "previous_response_id", first[len(first)-1].Response.ID))
			second := wsTurn(t, c)
			if last := second[len(second)-1]; last.Type != "response.completed" || last.text() != "answer 1" {
				t.Fatalf("the continuation: %s", last.raw)
			}
			if got := seen(); !strings.Contains(got, "What was the word?") || (kind == "anthropic" && !strings.Contains(got, "Remember cobalt")) {
				t.Errorf("the continuation's upstream call: %s", got)
			}
			if agent != nil {
				// The agent keeps the context: only the new message goes.
				if got := agent.Received(); got[1].Text != "What was the word?" || got[1].ContextID != got[0].ContextID {
					t.Errorf("the continuation sent %q in context %q, want only the new message in %q", got[1].Text, got[1].ContextID, got[0].ContextID)
				}
			}

			code, b := do(t, "POST", "http://"+m.Addr()+"/v1/responses/compact", "",
				`{"model":"gpt-test","input":[{"role":"user","content":"My name is Ada."},{"role":"assistant","content":"Hello Ada."}]}`)
			var obj struct {
				Object string            `json:"object"`
				Output []json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal([]byte(b), &obj); code != 200 || err != nil || obj.Object != "response.compaction" || len(obj.Output) != 1 ||
				!strings.Contains(b, "bridge-compaction:v1:") {
				t.Fatalf("compact: %d %s", code, b)
			}
			if got := seen(); !strings.Contains(got, "My name is Ada.") || !strings.Contains(got, "Summarize the conversation") {
				t.Errorf("the summary call: %s", got)
			}
			if agent != nil {
				if got := agent.Received(); got[2].ContextID == got[0].ContextID {
					t.Errorf("the summary was asked in the conversation's context %q, want one of its own", got[0].ContextID)
				}
			}
			wsSend(t, c, map[string]any{"type": "response.create", "model": "gpt-test", "store": false,
				"input": []any{obj.Output[0], map[string]any{"role": "user", "content": "What is my name?"}}})
			third := wsTurn(t, c)
			if last := third[len(third)-1]; last.Type != "response.completed" || last.text() != "answer 3" {
				t.Fatalf("a response with the compaction item: %s", last.raw)
			}
			if got := seen(); !strings.Contains(got, "Summary of the conversation so far (compacted):") || !strings.Contains(got, "answer 2") || !strings.Contains(got, "What is my name?") {
				t.Errorf("the compaction item did not reach the upstream as its summary: %s", got)
			}
		})
	}
}

// TestResponsesWebSocketPingAndClose: a ping is answered while a response
// is under way (its upstream holds its answer until the pong has come);
// a message past 64 MiB closes the connection with 1009; a bridge that
// shuts down closes an open connection with 1001.
func TestResponsesWebSocketPingAndClose(t *testing.T) {
	release := make(chan struct{})
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		c := &openaitest.Chunks{ID: "chatcmpl-held", Model: "gpt-4o-mini"}
		return openaitest.Reply{Chunks: c.Role().Text("after the pong").Finish("stop").Usage(3, 3).List()}
	})
	t.Cleanup(up.Close)
	m := bridgeOver(t, "openai", up.BaseURL())

	c := wsDial(t, m, "")
	wsSend(t, c, create("hold on", "store", false))
	// coder/websocket reads the pong in a Read: one goroutine reads the
	// response while the test pings.
	turn := make(chan []*wsMsg, 1)
	go func() {
		var out []*wsMsg
		defer func() { turn <- out }()
		for range 500 {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			_, b, err := c.Read(ctx)
			cancel()
			if err != nil {
				return
			}
			var msg wsMsg
			_ = json.Unmarshal(b, &msg)
			msg.raw = string(b)
			out = append(out, &msg)
			if msg.Type == "response.completed" || msg.Type == "response.failed" || msg.Type == "error" {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	err := c.Ping(ctx)
	cancel()
	close(release)
	if err != nil {
		t.Errorf("a ping while the response waited for its upstream: %v", err)
	}
	if got := <-turn; len(got) == 0 || got[len(got)-1].Type != "response.completed" || got[len(got)-1].text() != "after the pong" {
		t.Fatalf("the response after the ping: %v", got)
	}

	// Past 64 MiB: closed with 1009 (a message under it but over the
	// body limit is an error message, TestResponsesWebSocketBadFrames).
	big := wsDial(t, m, "")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = big.Write(ctx, websocket.MessageText, make([]byte, 64<<20+1024))
	}()
	rctx, rcancel := context.WithTimeout(t.Context(), 60*time.Second)
	_, _, err = big.Read(rctx)
	rcancel()
	if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
		t.Errorf("a message past 64 MiB: %v (close status %d), want 1009", err, got)
	}

	// Shutdown: 1001.
	idle := wsDial(t, m, "")
	wsSend(t, idle, create("one before", "store", false))
	if got := wsTurn(t, idle); got[len(got)-1].Type != "response.completed" {
		t.Fatalf("before the shutdown: %s", got[len(got)-1].raw)
	}
	sctx, scancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer scancel()
	if err := m.Close(sctx); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel = context.WithTimeout(t.Context(), 10*time.Second)
	_, _, err = idle.Read(rctx)
	rcancel()
	if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
		t.Errorf("at shutdown: %v (close status %d), want 1001", err, got)
	}
}

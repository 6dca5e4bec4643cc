package responses_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/inbound/inboundtest"
	inresponses "github.com/bridge-dev/bridge/inbound/responses"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/storage/memory"
)

type server struct {
	url    string
	engine *bridge.Engine
}

// newServer serves the dialect and the run API over an engine on an
// in-memory store and up. Requests authenticate with key "key-a" (principal a)
// or "key-b" (principal b).
func newServer(t *testing.T, up bridge.Upstream) *server {
	t.Helper()
	st := memory.New(nil)
	e := bridgetest.NewEngine(t, st, up)
	h := inresponses.New(inresponses.Config{Engine: e, Store: st, Responses: st})
	t.Cleanup(func() { _ = h.Close() })
	keys := &inbound.Keys{}
	keys.AddKey("a", "key-a")
	keys.AddKey("b", "key-b")
	url := inboundtest.Serve(t,
		inboundtest.Wrap(h, func(next http.Handler) http.Handler { return keys.Authenticate(h.Name(), h.WriteError, next) }),
		inboundtest.Wrap(inboundtest.RunAPI(e, h, runs.Config{}), func(next http.Handler) http.Handler { return keys.Authenticate("", h.WriteError, next) }))
	return &server{url: url, engine: e}
}

// do sends a request as principal a (or as the key in header "key") and
// reads the whole answer.
func (s *server) do(t *testing.T, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	hdr := []string{"Authorization", "Bearer key-a"}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "key" {
			hdr = append(hdr, "Authorization", "Bearer "+header[i+1])
			continue
		}
		hdr = append(hdr, header[i], header[i+1])
	}
	return inboundtest.Do(t, method, s.url+path, body, hdr...)
}

// response is the part of a Response object the tests read.
type response struct {
	ID                 string `json:"id"`
	Object             string `json:"object"`
	Status             string `json:"status"`
	PreviousResponseID string `json:"previous_response_id"`
	Output             []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens int `json:"input_tokens"`
	} `json:"usage"`
}

func (r *response) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func decodeResponse(t *testing.T, body []byte) *response {
	t.Helper()
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response: %v: %s", err, body)
	}
	return &r
}

// create posts a non-streamed request and returns the response.
func (s *server) create(t *testing.T, body string, header ...string) (*http.Response, *response) {
	t.Helper()
	resp, b := s.do(t, http.MethodPost, "/v1/responses", body, header...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/responses: status %d: %s", resp.StatusCode, b)
	}
	return resp, decodeResponse(t, b)
}

// transcript renders what an upstream request carried, one line a message.
func transcript(req *bridge.Request) []string {
	var out []string
	for _, m := range req.Messages {
		line := string(m.Role) + ":" + m.Text()
		for _, c := range m.ToolCalls {
			line += " call(" + c.ID + " " + c.Name + " " + c.Arguments + ")"
		}
		if m.ToolCallID != "" {
			line += " result(" + m.ToolCallID + ")"
		}
		out = append(out, line)
	}
	return out
}

func eqLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n  got  %q\n  want %q", what, got, want)
	}
}

func toolCallEvents(id, name string, frags ...string) []bridge.Event {
	evs := []bridge.Event{{Kind: bridge.KindMessageStarted, Model: "m"},
		{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: id, Name: name}}}
	for _, f := range frags {
		evs = append(evs, bridge.Event{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: f}})
	}
	return append(evs,
		bridge.Event{Kind: bridge.KindToolCallDone, ToolCall: &bridge.ToolCall{ID: id, Name: name, Arguments: strings.Join(frags, "")}},
		bridge.Event{Kind: bridge.KindMessageDone},
		bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}})
}

func TestCreate(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("Hello", " there")}
	s := newServer(t, up)
	resp, r := s.create(t, `{"model":"m","input":"hi","instructions":"Be terse.","metadata":{"k":"v"}}`)
	if r.Object != "response" || r.Status != "completed" || r.text() != "Hello there" || !strings.HasPrefix(r.ID, "resp_") {
		t.Errorf("response %+v", r)
	}
	if resp.Header.Get("X-Run-Id") == "" || resp.Header.Get("X-Session-Id") == "" {
		t.Errorf("no X-Run-Id or X-Session-Id")
	}
	eqLines(t, "upstream transcript", transcript(up.Requests()[0]), []string{"system:Be terse.", "user:hi"})
	// The stored copy is the same object.
	_, got := s.do(t, http.MethodGet, "/v1/responses/"+r.ID, "")
	if g := decodeResponse(t, got); g.text() != r.text() || g.Status != "completed" {
		t.Errorf("GET: %s", got)
	}
}

// frames reads an SSE body into (id, type, sequence_number, data) frames.
type sse struct {
	id, typ string
	seq     int64
	data    map[string]any
}

func readSSE(t *testing.T, r io.Reader, n int) []sse {
	t.Helper()
	var out []sse
	br := bufio.NewReader(r)
	var cur sse
	for n <= 0 || len(out) < n {
		line, err := br.ReadString('\n')
		if err != nil {
			return out
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if cur.data != nil {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.data); err != nil {
				t.Fatalf("frame data %q: %v", line, err)
			}
			if v, ok := cur.data["sequence_number"].(float64); ok {
				cur.seq = int64(v)
			} else {
				t.Errorf("frame without sequence_number: %s", line)
			}
			if cur.data["type"] != cur.typ {
				t.Errorf("event: %q but type %v", cur.typ, cur.data["type"])
			}
		}
	}
	return out
}

// checkSequence: sequence numbers from first on, no gap; every frame an
// event id of run.
func checkSequence(t *testing.T, frames []sse, first int64, run string) {
	t.Helper()
	for i, f := range frames {
		if f.seq != first+int64(i) {
			t.Errorf("frame %d (%s): sequence_number %d, want %d", i, f.typ, f.seq, first+int64(i))
		}
		if r, _, _, ok := bridge.ParseFrameID(f.id); !ok || r != run {
			t.Errorf("frame %d (%s): id %q is not a frame id of %s", i, f.typ, f.id, run)
		}
		if i > 0 && f.id == frames[i-1].id {
			t.Errorf("frame %d (%s): id %q is the frame before's too", i, f.typ, f.id)
		}
	}
}

func deltas(frames []sse) string {
	var b strings.Builder
	for _, f := range frames {
		if f.typ == "response.output_text.delta" {
			b.WriteString(f.data["delta"].(string))
		}
	}
	return b.String()
}

func TestStream(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b", "c")}
	s := newServer(t, up)
	resp, body := s.do(t, http.MethodPost, "/v1/responses", `{"model":"m","input":"hi","stream":true}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	frames := readSSE(t, bytes.NewReader(body), 0)
	checkSequence(t, frames, 0, resp.Header.Get("X-Run-Id"))
	var types []string
	for _, f := range frames {
		types = append(types, f.typ)
	}
	eqLines(t, "event types", types, []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"})
	if deltas(frames) != "abc" {
		t.Errorf("text %q", deltas(frames))
	}
}

func TestPreviousResponseID(t *testing.T) {
	up := &bridgetest.Upstream{Script: func(n int, _ *bridge.Request) []bridge.Event {
		return bridgetest.TextEvents(fmt.Sprintf("answer %d", n))
	}}
	s := newServer(t, up)
	_, r1 := s.create(t, `{"model":"m","input":"one","instructions":"first rules"}`)
	_, r2 := s.create(t, `{"model":"m","input":"two","previous_response_id":"`+r1.ID+`","instructions":"second rules"}`)
	if r2.PreviousResponseID != r1.ID {
		t.Errorf("previous_response_id %q", r2.PreviousResponseID)
	}
	eqLines(t, "second upstream transcript", transcript(up.Requests()[1]),
		[]string{"system:second rules", "user:one", "assistant:answer 0", "user:two"})
	// A branch from the first response leaves the second out.
	_, r3 := s.create(t, `{"model":"m","input":"three","previous_response_id":"`+r1.ID+`"}`)
	eqLines(t, "branch upstream transcript", transcript(up.Requests()[2]), []string{"user:one", "assistant:answer 0", "user:three"})
	// And the chain goes on from the branch.
	_, r4 := s.create(t, `{"model":"m","input":"four","previous_response_id":"`+r3.ID+`"}`)
	eqLines(t, "chain after the branch", transcript(up.Requests()[3]),
		[]string{"user:one", "assistant:answer 0", "user:three", "assistant:answer 2", "user:four"})
	// An unstored response in the chain moves it on all the same: a later
	// continuation of the response before it branches, without it.
	_, r5 := s.create(t, `{"model":"m","input":"unstored","store":false,"previous_response_id":"`+r4.ID+`"}`)
	if resp, _ := s.do(t, http.MethodGet, "/v1/responses/"+r5.ID, ""); resp.StatusCode != 404 {
		t.Errorf("an unstored response is found: %d", resp.StatusCode)
	}
	s.create(t, `{"model":"m","input":"after","previous_response_id":"`+r4.ID+`"}`)
	eqLines(t, "past an unstored response", transcript(up.Requests()[5]),
		[]string{"user:one", "assistant:answer 0", "user:three", "assistant:answer 2", "user:four", "assistant:answer 3", "user:after"})
	// The second chain still continues where it was.
	s.create(t, `{"model":"m","input":"five","previous_response_id":"`+r2.ID+`"}`)
	eqLines(t, "the first chain again", transcript(up.Requests()[6]),
		[]string{"user:one", "assistant:answer 0", "user:two", "assistant:answer 1", "user:five"})
}

func TestFunctionCallRoundTrip(t *testing.T) {
	up := &bridgetest.Upstream{Script: func(n int, _ *bridge.Request) []bridge.Event {
		if n == 0 {
			return toolCallEvents("call_1", "get_weather", `{"city":`, `"Paris"}`)
		}
		return bridgetest.TextEvents("It is sunny.")
	}}
	s := newServer(t, up)
	h1, r1 := s.create(t, `{"model":"m","input":"Weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`)
	if len(r1.Output) != 1 || r1.Output[0].Type != "function_call" || r1.Output[0].CallID != "call_1" || r1.Output[0].Arguments != `{"city":"Paris"}` {
		t.Fatalf("first output %+v", r1.Output)
	}
	h2, r2 := s.create(t, `{"model":"m","previous_response_id":"`+r1.ID+`","input":[{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`)
	if r2.text() != "It is sunny." {
		t.Errorf("answer %q", r2.text())
	}
	if h1.Header.Get("X-Run-Id") != h2.Header.Get("X-Run-Id") {
		t.Errorf("the tool output started run %s, want run %s continued", h2.Header.Get("X-Run-Id"), h1.Header.Get("X-Run-Id"))
	}
	eqLines(t, "upstream transcript", transcript(up.Requests()[1]),
		[]string{"user:Weather?", `assistant: call(call_1 get_weather {"city":"Paris"})`, "tool:sunny result(call_1)"})
	// Each response renders its own segment of the run.
	_, b := s.do(t, http.MethodGet, "/v1/responses/"+r1.ID, "")
	if g := decodeResponse(t, b); len(g.Output) != 1 || g.Output[0].Type != "function_call" {
		t.Errorf("GET first: %s", b)
	}
	_, b = s.do(t, http.MethodGet, "/v1/responses/"+r2.ID, "")
	if g := decodeResponse(t, b); g.text() != "It is sunny." || len(g.Output) != 1 {
		t.Errorf("GET second: %s", b)
	}
}

func TestNotFound(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("x")}
	s := newServer(t, up)
	_, r1 := s.create(t, `{"model":"m","input":"one"}`)
	for _, tt := range []struct{ name, prev, key string }{
		{"unknown", "resp_unknown", "key-a"},
		{"another principal's", r1.ID, "key-b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := s.do(t, http.MethodPost, "/v1/responses", `{"model":"m","input":"two","previous_response_id":"`+tt.prev+`"}`, "key", tt.key)
			if resp.StatusCode != 404 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			want := fmt.Sprintf(`{"error":{"message":"Previous response with id '%s' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`, tt.prev)
			if string(b) != want {
				t.Errorf("body %s\nwant %s", b, want)
			}
		})
	}
	for _, path := range []string{"/v1/responses/" + r1.ID, "/v1/responses/" + r1.ID + "/input_items"} {
		resp, b := s.do(t, http.MethodGet, path, "", "key", "key-b")
		if resp.StatusCode != 404 || !strings.Contains(string(b), "not found") {
			t.Errorf("GET %s as another principal: %d %s", path, resp.StatusCode, b)
		}
	}
	if resp, _ := s.do(t, http.MethodDelete, "/v1/responses/"+r1.ID, "", "key", "key-b"); resp.StatusCode != 404 {
		t.Errorf("DELETE as another principal: %d", resp.StatusCode)
	}
	// store: false keeps nothing to continue from.
	_, r2 := s.create(t, `{"model":"m","input":"one","store":false}`)
	if resp, _ := s.do(t, http.MethodGet, "/v1/responses/"+r2.ID, ""); resp.StatusCode != 404 {
		t.Errorf("GET of an unstored response: %d", resp.StatusCode)
	}
}

func TestInputItemsAndDelete(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("x")}
	s := newServer(t, up)
	_, r := s.create(t, `{"model":"m","input":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"input_text","text":"b"}]},{"type":"function_call_output","call_id":"c","output":"o"}]}`)
	type list struct {
		Object string `json:"object"`
		Data   []struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"data"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
		HasMore bool   `json:"has_more"`
	}
	get := func(q string) list {
		t.Helper()
		resp, b := s.do(t, http.MethodGet, "/v1/responses/"+r.ID+"/input_items"+q, "")
		if resp.StatusCode != 200 {
			t.Fatalf("input_items%s: %d %s", q, resp.StatusCode, b)
		}
		var l list
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := get("?order=asc")
	if l.Object != "list" || len(l.Data) != 3 || l.Data[0].Content[0].Text != "a" || l.Data[2].Type != "function_call_output" || l.HasMore {
		t.Fatalf("input items %+v", l)
	}
	if l.FirstID != l.Data[0].ID || l.LastID != l.Data[2].ID || l.Data[0].ID == "" {
		t.Errorf("ids %+v", l)
	}
	if d := get(""); d.Data[0].ID != l.Data[2].ID {
		t.Errorf("the default order is not desc: %+v", d)
	}
	if p := get("?order=asc&limit=1&after=" + l.Data[0].ID); len(p.Data) != 1 || p.Data[0].ID != l.Data[1].ID || !p.HasMore {
		t.Errorf("a page after the first: %+v", p)
	}
	resp, b := s.do(t, http.MethodDelete, "/v1/responses/"+r.ID, "")
	if resp.StatusCode != 200 || string(b) != `{"id":"`+r.ID+`","object":"response","deleted":true}` {
		t.Errorf("DELETE: %d %s", resp.StatusCode, b)
	}
	for _, path := range []string{"/v1/responses/" + r.ID, "/v1/responses/" + r.ID + "/input_items"} {
		if resp, _ := s.do(t, http.MethodGet, path, ""); resp.StatusCode != 404 {
			t.Errorf("GET %s after DELETE: %d", path, resp.StatusCode)
		}
	}
	if resp, _ := s.do(t, http.MethodPost, "/v1/responses", `{"model":"m","input":"x","previous_response_id":"`+r.ID+`"}`); resp.StatusCode != 404 {
		t.Errorf("continuing a deleted response: %d", resp.StatusCode)
	}
}

// gated is an upstream whose words wait for the test.
func gated(words int) (*bridgetest.Upstream, chan struct{}) {
	gate := make(chan struct{})
	w := make([]string, words)
	for i := range w {
		w[i] = fmt.Sprintf("w%d ", i)
	}
	return &bridgetest.Upstream{Gate: gate, Events: bridgetest.TextEvents(w...)}, gate
}

func TestBackgroundResume(t *testing.T) {
	up, gate := gated(6)
	s := newServer(t, up)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/responses",
		strings.NewReader(`{"model":"m","input":"go","stream":true,"background":true}`))
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	run := resp.Header.Get("X-Run-Id")
	gate <- struct{}{} // message_started
	gate <- struct{}{} // w0
	gate <- struct{}{} // w1
	head := readSSE(t, resp.Body, 6)
	cancel()
	resp.Body.Close()
	if head[0].typ != "response.created" || head[0].data["response"].(map[string]any)["status"] != "queued" {
		t.Errorf("first frame %+v", head[0])
	}
	id := head[0].data["response"].(map[string]any)["id"].(string)
	last := head[len(head)-1].seq
	// The run goes on without its client.
	for range 4 + 2 {
		select {
		case gate <- struct{}{}:
		case <-time.After(5 * time.Second):
			t.Fatal("the background run stopped when its client left")
		}
	}
	_, body := s.do(t, http.MethodGet, fmt.Sprintf("/v1/responses/%s?stream=true&starting_after=%d", id, last), "")
	rest := readSSE(t, bytes.NewReader(body), 0)
	checkSequence(t, rest, last+1, run)
	if got := deltas(head) + deltas(rest); got != "w0 w1 w2 w3 w4 w5 " {
		t.Errorf("text read + resumed = %q", got)
	}
	if rest[len(rest)-1].typ != "response.completed" {
		t.Errorf("the resumed stream ends with %s", rest[len(rest)-1].typ)
	}
	// The whole stream again, byte for byte the same frames.
	_, all := s.do(t, http.MethodGet, "/v1/responses/"+id+"?stream=true", "")
	full := readSSE(t, bytes.NewReader(all), 0)
	if len(full) != len(head)+len(rest) || full[len(head)].id != rest[0].id {
		t.Errorf("the whole replay has %d frames, the two parts %d+%d", len(full), len(head), len(rest))
	}
}

func TestCancelBackground(t *testing.T) {
	up, gate := gated(50)
	s := newServer(t, up)
	_, r := s.create(t, `{"model":"m","input":"go","background":true}`)
	if r.Status != "queued" {
		t.Errorf("status %q, want queued", r.Status)
	}
	gate <- struct{}{}
	gate <- struct{}{}
	resp, b := s.do(t, http.MethodPost, "/v1/responses/"+r.ID+"/cancel", "")
	if resp.StatusCode != 200 {
		t.Fatalf("cancel: %d %s", resp.StatusCode, b)
	}
	if c := decodeResponse(t, b); c.Status != "cancelled" {
		t.Errorf("after cancel: %s", b)
	}
	_, b = s.do(t, http.MethodGet, "/v1/responses/"+r.ID, "")
	if g := decodeResponse(t, b); g.Status != "cancelled" {
		t.Errorf("GET after cancel: %s", b)
	}
}

func TestErrorBeforeFirstByte(t *testing.T) {
	up := &bridgetest.Upstream{OpenErr: &bridge.Error{Code: bridge.CodeRateLimited, Status: 429, Dialect: "openai",
		Type: "rate_limit_error", UpstreamCode: "rate_limit_exceeded", Message: "slow down"}}
	s := newServer(t, up)
	for _, stream := range []string{"true", "false"} {
		resp, b := s.do(t, http.MethodPost, "/v1/responses", `{"model":"m","input":"x","stream":`+stream+`}`)
		want := `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`
		if resp.StatusCode != 429 || string(b) != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("stream=%s: %d %s", stream, resp.StatusCode, b)
		}
	}
}

func TestBadRequest(t *testing.T) {
	s := newServer(t, &bridgetest.Upstream{Events: bridgetest.TextEvents("x")})
	for _, body := range []string{`{`, `{"model":"m"}`, `{"model":"m","input":"x","background":true,"store":false}`,
		`{"model":"m","input":[{"type":"item_reference","id":"x"}]}`} {
		resp, b := s.do(t, http.MethodPost, "/v1/responses", body)
		var env struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if resp.StatusCode != 400 || json.Unmarshal(b, &env) != nil || env.Error.Type != "invalid_request_error" || env.Error.Message == "" {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
	for path, body := range map[string]string{"/v1/responses/compact": `{"input":"x"}`, "/v1/responses/input_tokens": `{"model":"m","input":"x"}`} {
		want := "not supported"
		if strings.HasSuffix(path, "compact") {
			want = "model: required"
		}
		resp, b := s.do(t, http.MethodPost, path, body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), want) || !strings.Contains(string(b), `"type":"invalid_request_error"`) {
			t.Errorf("%s %s: %d %s", path, body, resp.StatusCode, b)
		}
	}
	if resp, b := s.do(t, http.MethodGet, "/v1/responses/resp_x?stream=true&starting_after=x", ""); resp.StatusCode != 404 {
		t.Errorf("unknown response: %d %s", resp.StatusCode, b)
	}
}

// TestRunAPIResume: the run API's replay after a cursor goes on with the
// same sequence numbers the client had.
func TestRunAPIResume(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("one ", "two ", "three")}
	s := newServer(t, up)
	resp, body := s.do(t, http.MethodPost, "/v1/responses", `{"model":"m","input":"x","stream":true}`)
	run := resp.Header.Get("X-Run-Id")
	full := readSSE(t, bytes.NewReader(body), 0)
	cut := 5 // after the first delta's frames
	_, b := s.do(t, http.MethodGet, "/v1/runs/"+run+"/events", "", "Last-Event-ID", full[cut-1].id)
	rest := readSSE(t, bytes.NewReader(b), 0)
	if len(rest) != len(full)-cut {
		t.Fatalf("%d frames after %s, want %d: %s", len(rest), full[cut-1].id, len(full)-cut, b)
	}
	for i := range rest {
		if rest[i].seq != full[cut+i].seq || rest[i].id != full[cut+i].id || rest[i].typ != full[cut+i].typ {
			t.Errorf("frame %d: %s %d %s, first stream had %s %d %s", i, rest[i].id, rest[i].seq, rest[i].typ, full[cut+i].id, full[cut+i].seq, full[cut+i].typ)
		}
	}
}

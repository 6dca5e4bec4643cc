package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	ina2a "github.com/bridge-dev/bridge/inbound/a2a"
	"github.com/bridge-dev/bridge/inbound/inboundtest"
	"github.com/bridge-dev/bridge/storage/memory"
)

// failingStore is the in-memory store whose RunMessages fails with a Go error
// naming a path: the client must see -32603 and not the text.
type failingStore struct {
	*memory.Store
	fail bool
}

func (s *failingStore) RunMessages(ctx context.Context, run string) ([]bridge.Message, error) {
	if s.fail {
		return nil, errors.New("disk I/O error at /var/secret/bridge.db")
	}
	return s.Store.RunMessages(ctx, run)
}

type server struct {
	url    string
	engine *bridge.Engine
	store  *failingStore
	up     *bridgetest.Upstream
}

// newServer serves the dialect over an engine on an in-memory store and up.
func newServer(t *testing.T, up *bridgetest.Upstream) *server {
	t.Helper()
	fs := &failingStore{Store: memory.New(nil)}
	e := bridgetest.NewEngine(t, fs, up)
	h := ina2a.New(ina2a.Config{Engine: e})
	url := inboundtest.Serve(t, h, publicRoutes{h})
	return &server{url: url, engine: e, store: fs, up: up}
}

// publicRoutes is the handler on the routes it serves without
// authentication (the agent card).
type publicRoutes struct{ *ina2a.Handler }

func (p publicRoutes) Routes() []string { return p.PublicRoutes() }

// post sends body to /a2a with the given headers (name, value, ...).
func (s *server) post(t *testing.T, body string, header ...string) (*http.Response, string) {
	t.Helper()
	resp, b := inboundtest.Do(t, "POST", s.url+"/a2a", body, header...)
	return resp, string(b)
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decodeResponse(t *testing.T, body string) rpcResponse {
	t.Helper()
	var r rpcResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("not a JSON-RPC response: %v: %s", err, body)
	}
	if r.JSONRPC != "2.0" || (r.Result == nil) == (r.Error == nil) {
		t.Fatalf("not a JSON-RPC 2.0 response with exactly one of result and error: %s", body)
	}
	return r
}

// sseData returns the data: payloads of an SSE body, checking that each
// frame has at most one id: and exactly one data: line.
func sseData(t *testing.T, body string) (ids, data []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	var id string
	n := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			n++
			data = append(data, line[6:])
			ids = append(ids, id)
		case line == "":
			if n != 1 {
				t.Fatalf("a frame with %d data lines in:\n%s", n, body)
			}
			n, id = 0, ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return ids, data
}

func text(s string) []bridge.Event { return bridgetest.TextEvents(strings.Fields(s)...) }

// send starts a task with message/send (blocking) and returns its id and
// context.
func (s *server) send(t *testing.T, msg string) (task, context string) {
	t.Helper()
	_, body := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-`+
		msg+`","role":"user","parts":[{"kind":"text","text":"`+msg+`"}]}}}`)
	r := decodeResponse(t, body)
	if r.Error != nil {
		t.Fatalf("message/send: %s", body)
	}
	var res struct {
		ID        string `json:"id"`
		ContextID string `json:"contextId"`
	}
	_ = json.Unmarshal(r.Result, &res)
	return res.ID, res.ContextID
}

// TestErrorCodes: every JSON-RPC and A2A error the endpoint answers, each
// with its code, HTTP 200 and an id where one could be read.
func TestErrorCodes(t *testing.T) {
	s := newServer(t, &bridgetest.Upstream{Events: text("done")})
	done, ctxID := s.send(t, "first")

	msg := func(extra string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"x","role":"user","parts":[{"kind":"text","text":"hi"}]` + extra + `}}}`
	}
	cases := []struct {
		name, body string
		header     []string
		code       int
		id         string // the id the error answers; "null" when none could be read
	}{
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,"method":`, nil, -32700, "null"},
		{"not JSON", `hello`, nil, -32700, "null"},
		{"a bare string", `"tasks/get"`, nil, -32600, "null"},
		{"empty batch", `[]`, nil, -32600, "null"},
		{"batch too big", "[" + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}},`, 32) + `1]`, nil, -32600, "null"},
		{"JSON too deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), nil, -32600, "null"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":9,"method":"tasks/get","params":{"id":"x"}}`, nil, -32600, "9"},
		{"no jsonrpc", `{"id":9,"method":"tasks/get","params":{"id":"x"}}`, nil, -32600, "9"},
		{"no method", `{"jsonrpc":"2.0","id":8}`, nil, -32600, "8"},
		{"method not a string", `{"jsonrpc":"2.0","id":8,"method":5}`, nil, -32600, "8"},
		{"id an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"tasks/get"}`, nil, -32600, "null"},
		{"params a string", `{"jsonrpc":"2.0","id":"p","method":"tasks/get","params":"x"}`, nil, -32600, `"p"`},
		{"case matters", `{"JSONRPC":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`, nil, -32600, "1"},
		{"unknown method", `{"jsonrpc":"2.0","id":11,"method":"message/nope"}`, nil, -32601, "11"},
		{"tasks/list is not 0.3 JSON-RPC", `{"jsonrpc":"2.0","id":11,"method":"tasks/list","params":{}}`, nil, -32601, "11"},
		{"no params", `{"jsonrpc":"2.0","id":12,"method":"message/send"}`, nil, -32602, "12"},
		{"positional params", `{"jsonrpc":"2.0","id":12,"method":"tasks/get","params":["x"]}`, nil, -32602, "12"},
		{"no messageId", `{"jsonrpc":"2.0","id":15,"method":"message/send","params":{"message":{"kind":"message","role":"user","parts":[{"kind":"text","text":"x"}]}}}`, nil, -32602, "15"},
		{"no parts", `{"jsonrpc":"2.0","id":15,"method":"message/send","params":{"message":{"messageId":"a","role":"user","parts":[]}}}`, nil, -32602, "15"},
		{"unknown part kind", `{"jsonrpc":"2.0","id":15,"method":"message/send","params":{"message":{"messageId":"a","role":"user","parts":[{"kind":"video"}]}}}`, nil, -32602, "15"},
		{"file with bytes and uri", `{"jsonrpc":"2.0","id":15,"method":"message/send","params":{"message":{"messageId":"a","role":"user","parts":[{"kind":"file","file":{"bytes":"AA==","uri":"http://x"}}]}}}`, nil, -32602, "15"},
		{"agent role", `{"jsonrpc":"2.0","id":15,"method":"message/send","params":{"message":{"messageId":"a","role":"agent","parts":[{"kind":"text","text":"x"}]}}}`, nil, -32602, "15"},
		{"unknown role", `{"jsonrpc":"2.0","id":15,"method":"message/send","params":{"message":{"messageId":"a","role":"system","parts":[{"kind":"text","text":"x"}]}}}`, nil, -32602, "15"},
		{"text not a string", `{"jsonrpc":"2.0","id":15,"method":"message/send","params":{"message":{"messageId":"a","role":"user","parts":[{"kind":"text","text":5}]}}}`, nil, -32602, "15"},
		{"tasks/get without id", `{"jsonrpc":"2.0","id":16,"method":"tasks/get","params":{}}`, nil, -32602, "16"},
		{"negative historyLength", `{"jsonrpc":"2.0","id":16,"method":"tasks/get","params":{"id":"` + done + `","historyLength":-1}}`, nil, -32602, "16"},
		{"contextId of another task", msg(`,"taskId":"` + done + `","contextId":"elsewhere"`), nil, -32602, "7"},
		{"unknown task", `{"jsonrpc":"2.0","id":13,"method":"tasks/get","params":{"id":"no-such-task"}}`, nil, -32001, "13"},
		{"cancel unknown task", `{"jsonrpc":"2.0","id":14,"method":"tasks/cancel","params":{"id":"no-such-task"}}`, nil, -32001, "14"},
		{"message to unknown task", msg(`,"taskId":"no-such-task"`), nil, -32001, "7"},
		{"cancel a completed task", `{"jsonrpc":"2.0","id":6,"method":"tasks/cancel","params":{"id":"` + done + `"}}`, nil, -32002, "6"},
		{"push config", `{"jsonrpc":"2.0","id":"p1","method":"tasks/pushNotificationConfig/set","params":{"taskId":"x","pushNotificationConfig":{"url":"http://127.0.0.1/x"}}}`, nil, -32003, `"p1"`},
		{"push config get (1.0 name)", `{"jsonrpc":"2.0","id":"p1","method":"GetTaskPushNotificationConfig","params":{"id":"x"}}`, nil, -32003, `"p1"`},
		{"push in a send", `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"messageId":"x","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":{"url":"http://127.0.0.1/x"}}}}`, nil, -32003, "7"},
		{"subscribe to a finished task (1.0)", `{"jsonrpc":"2.0","id":3,"method":"SubscribeToTask","params":{"id":"` + done + `"}}`, []string{"A2A-Version", "1.0"}, -32004, "3"},
		{"text/plain body", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`, []string{"Content-Type", "text/plain"}, -32005, "null"},
		{"no accepted output mode", `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"messageId":"x","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"acceptedOutputModes":["image/png"]}}}`, nil, -32005, "7"},
		{"extended card", `{"jsonrpc":"2.0","id":2,"method":"agent/getAuthenticatedExtendedCard"}`, nil, -32007, "2"},
		{"unsupported version", `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"x"}}`, []string{"A2A-Version", "2.0"}, -32009, "4"},
	}
	_ = ctxID
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			resp, body := s.post(t, c.body, c.header...)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("HTTP %d, want 200", resp.StatusCode)
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				_, data := sseData(t, body)
				if len(data) != 1 {
					t.Fatalf("a streamed error should be one frame: %s", body)
				}
				body = data[0]
			}
			r := decodeResponse(t, body)
			if r.Error == nil || r.Error.Code != c.code {
				t.Fatalf("got %s, want error %d", body, c.code)
			}
			if string(r.ID) != c.id {
				t.Errorf("id %s, want %s", r.ID, c.id)
			}
			if r.Error.Message == "" || strings.Contains(r.Error.Message, "json:") || strings.Contains(r.Error.Message, "Go ") {
				t.Errorf("message %q", r.Error.Message)
			}
		})
	}

	t.Run("streamed errors", func(t *testing.T) {
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":"r","method":"tasks/resubscribe","params":{"id":"no-such-task"}}`,
			`{"jsonrpc":"2.0","id":"r","method":"message/stream","params":{}}`,
		} {
			resp, out := s.post(t, body, "Accept", "text/event-stream")
			if resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
			_, data := sseData(t, out)
			if len(data) != 1 || decodeResponse(t, data[0]).Error == nil {
				t.Errorf("want one error frame, got %s", out)
			}
		}
		// A cursor of another task.
		resp, out := s.post(t, `{"jsonrpc":"2.0","id":"r","method":"tasks/resubscribe","params":{"id":"`+done+`"}}`, "Last-Event-ID", "run_other:3")
		_, data := sseData(t, out)
		if len(data) != 1 || decodeResponse(t, data[0]).Error.Code != -32602 || resp.StatusCode != 200 {
			t.Errorf("a foreign cursor: %s", out)
		}
	})

	t.Run("internal error hides its text", func(t *testing.T) {
		s.store.fail = true
		defer func() { s.store.fail = false }()
		_, body := s.post(t, `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"id":"`+done+`"}}`)
		r := decodeResponse(t, body)
		if r.Error == nil || r.Error.Code != -32603 || strings.Contains(body, "secret") || strings.Contains(body, "disk") {
			t.Errorf("got %s, want -32603 without the Go error's text", body)
		}
	})

	t.Run("1.0 errors carry ErrorInfo", func(t *testing.T) {
		_, body := s.post(t, `{"jsonrpc":"2.0","id":13,"method":"GetTask","params":{"id":"no-such-task"}}`, "A2A-Version", "1.0")
		r := decodeResponse(t, body)
		var infos []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
			Domain string `json:"domain"`
		}
		if err := json.Unmarshal(r.Error.Data, &infos); err != nil || len(infos) != 1 || infos[0].Reason != "TASK_NOT_FOUND" ||
			infos[0].Domain != "a2a-protocol.org" || infos[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" {
			t.Errorf("1.0 error data %s", r.Error.Data)
		}
	})
}

// TestBatchAndNotifications: a batch is answered in order with one
// response per request that has an id; notifications get none; a body of
// notifications only gets 204.
func TestBatchAndNotifications(t *testing.T) {
	s := newServer(t, &bridgetest.Upstream{Events: text("ok")})
	done, _ := s.send(t, "first")
	resp, body := s.post(t, `[
		{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{"id":"`+done+`"}},
		{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"`+done+`"}},
		{"jsonrpc":"2.0","id":"b","method":"nope"},
		{"jsonrpc":"2.0","id":"c","method":"message/stream","params":{}},
		5
	]`)
	var out []rpcResponse
	if err := json.Unmarshal([]byte(body), &out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("batch answer %d: %v: %s", resp.StatusCode, err, body)
	}
	want := []struct {
		id   string
		code int
	}{{`"a"`, 0}, {`"b"`, -32601}, {`"c"`, -32600}, {"null", -32600}}
	if len(out) != len(want) {
		t.Fatalf("%d responses, want %d: %s", len(out), len(want), body)
	}
	for i, w := range want {
		code := 0
		if out[i].Error != nil {
			code = out[i].Error.Code
		}
		if string(out[i].ID) != w.id || code != w.code {
			t.Errorf("response %d: id %s code %d, want %s %d", i, out[i].ID, code, w.id, w.code)
		}
	}

	before := len(s.up.Requests())
	resp, body = s.post(t, `{"jsonrpc":"2.0","method":"message/send","params":{"message":{"messageId":"n1","role":"user","parts":[{"kind":"text","text":"fire and forget"}]}}}`)
	if resp.StatusCode != http.StatusNoContent || body != "" {
		t.Errorf("a notification got %d %q, want 204 and nothing", resp.StatusCode, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.up.Requests()) == before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(s.up.Requests()) != before+1 {
		t.Errorf("the notification's message did not reach the upstream")
	}
	resp, _ = s.post(t, `[{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"`+done+`"}},{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"`+done+`"}}]`)
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("a batch of notifications got %d, want 204", resp.StatusCode)
	}
	// A notification that cannot be carried out is answered with its
	// error (id null), as the A2A TCK requires.
	for body, code := range map[string]int{
		`{"jsonrpc":"2.0","method":"message/ssend","params":{}}`:                -32601,
		`{"jsonrpc":"2.0","method":"message/send","params":{"":"not_a_dict"}}`:  -32602,
		`{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"no-such-task"}}`: -32001,
	} {
		_, out := s.post(t, body)
		if r := decodeResponse(t, out); r.Error == nil || r.Error.Code != code || string(r.ID) != "null" {
			t.Errorf("%s: got %s, want error %d with id null", body, out, code)
		}
	}
}

// TestSteer: message/send naming a running task adds the message to that
// run: the answer says so, and the upstream's next model call, in the same
// run, has it. A message naming a finished task starts a new task in its
// context.
func TestSteer(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Gate: gate, Script: func(n int, _ *bridge.Request) []bridge.Event {
		if n == 0 {
			return text("first answer")
		}
		return text("second answer")
	}}
	s := newServer(t, up)
	resp, body := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"u1","role":"user","parts":[{"kind":"text","text":"start"}]},"configuration":{"blocking":false}}}`)
	r := decodeResponse(t, body)
	var task struct {
		ID        string `json:"id"`
		ContextID string `json:"contextId"`
		Status    struct{ State string }
		Metadata  map[string]any
	}
	if err := json.Unmarshal(r.Result, &task); err != nil || task.ID == "" || resp.StatusCode != 200 {
		t.Fatalf("non-blocking send: %s", body)
	}
	gate <- struct{}{} // message_started: the run is answering
	_, body = s.post(t, `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"messageId":"u2","role":"user","taskId":"`+
		task.ID+`","parts":[{"kind":"text","text":"and also this"}]}}}`)
	r = decodeResponse(t, body)
	var steered struct {
		ID       string `json:"id"`
		Metadata map[string]any
		History  []struct {
			Role  string
			Parts []struct{ Text string }
		}
	}
	if err := json.Unmarshal(r.Result, &steered); err != nil || steered.ID != task.ID || steered.Metadata["steer"] != "accepted" {
		t.Fatalf("steer answer: %s", body)
	}
	go func() {
		for range 20 {
			select {
			case gate <- struct{}{}:
			case <-time.After(5 * time.Second):
				return
			}
		}
	}()
	_, body = s.post(t, `{"jsonrpc":"2.0","id":"r","method":"tasks/resubscribe","params":{"id":"`+task.ID+`"}}`)
	_, frames := sseData(t, body)
	all := strings.Join(frames, "\n")
	if !strings.Contains(all, `"and also this"`) || !strings.Contains(all, `"state":"completed"`) {
		t.Errorf("the task's stream does not show the steer and the end:\n%s", all)
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream calls %d, want 2 (the steer adds a model call in the same run)", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != bridge.RoleUser || last.Text() != "and also this" {
		t.Errorf("the second model call ends with %+v", last)
	}
	run, _ := s.engine.Run(t.Context(), task.ID)
	if run.Status != bridge.StatusCompleted {
		t.Errorf("run %s", run.Status)
	}

	// A message naming the finished task is refused; without taskId it
	// starts a new task in the same context.
	_, body = s.post(t, `{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"messageId":"u3","role":"user","taskId":"`+
		task.ID+`","parts":[{"kind":"text","text":"next"}]},"configuration":{"blocking":false}}}`)
	if r := decodeResponse(t, body); r.Error == nil || r.Error.Code != -32004 {
		t.Errorf("a message to a finished task: %s (want error -32004)", body)
	}
	_, body = s.post(t, `{"jsonrpc":"2.0","id":4,"method":"message/send","params":{"message":{"messageId":"u4","role":"user","contextId":"`+
		task.ContextID+`","parts":[{"kind":"text","text":"next"}]},"configuration":{"blocking":false}}}`)
	var next struct{ ID, ContextID string }
	_ = json.Unmarshal(decodeResponse(t, body).Result, &next)
	if next.ID == "" || next.ID == task.ID || next.ContextID != task.ContextID {
		t.Errorf("a message in the finished task's context: %s", body)
	}
}

// TestHistoryLength: tasks/get keeps the last historyLength messages; 0
// keeps none; absent keeps all.
func TestHistoryLength(t *testing.T) {
	s := newServer(t, &bridgetest.Upstream{Events: []bridge.Event{
		{Kind: bridge.KindMessageStarted},
		{Kind: bridge.KindReasoningDelta, Text: "thinking"},
		{Kind: bridge.KindTextDelta, Text: "ok"},
		{Kind: bridge.KindMessageDone},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted}},
	}})
	id, _ := s.send(t, "q")
	for _, c := range []struct {
		hl   string
		want int
	}{{"", 2}, {`,"historyLength":1`, 1}, {`,"historyLength":0`, 0}, {`,"historyLength":9`, 2}} {
		_, body := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+id+`"`+c.hl+`}}`)
		var task struct{ History []json.RawMessage }
		_ = json.Unmarshal(decodeResponse(t, body).Result, &task)
		if len(task.History) != c.want {
			t.Errorf("historyLength %q: %d messages, want %d: %s", c.hl, len(task.History), c.want, body)
		}
	}
}

// TestVersion10: requests with A2A-Version: 1.0 get 1.0's shapes: wrapped
// stream results, TASK_STATE_* and ROLE_* names, no kind, no final.
func TestVersion10(t *testing.T) {
	s := newServer(t, &bridgetest.Upstream{Events: text("hello world")})
	_, body := s.post(t, `{"jsonrpc":"2.0","method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{}},"id":1}`,
		"A2A-Version", "1.0", "Accept", "text/event-stream")
	ids, frames := sseData(t, body)
	var kinds []string
	for i, f := range frames {
		if ids[i] == "" {
			t.Errorf("frame %d has no id", i)
		}
		r := decodeResponse(t, f)
		var res map[string]json.RawMessage
		_ = json.Unmarshal(r.Result, &res)
		if len(res) != 1 {
			t.Fatalf("frame %d result is not a one-key wrapper: %s", i, r.Result)
		}
		for k := range res {
			kinds = append(kinds, k)
		}
		if strings.Contains(f, `"kind"`) || strings.Contains(f, `"final"`) || strings.Contains(f, `"append":false`) {
			t.Errorf("frame %d has 0.3 fields: %s", i, f)
		}
	}
	if got := strings.Join(kinds, ","); got != "task,statusUpdate,artifactUpdate,artifactUpdate,artifactUpdate,statusUpdate" {
		t.Errorf("frames %s", got)
	}
	if !strings.Contains(frames[len(frames)-1], `"TASK_STATE_COMPLETED"`) || !strings.Contains(frames[0], `"ROLE_USER"`) {
		t.Errorf("1.0 enum names missing:\n%s", strings.Join(frames, "\n"))
	}
	var first struct {
		Result struct {
			Task struct{ ID, ContextID string } `json:"task"`
		} `json:"result"`
	}
	_ = json.Unmarshal([]byte(frames[0]), &first)

	_, body = s.post(t, `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"`+first.Result.Task.ID+`"},"id":3}`, "A2A-Version", "1.0")
	r := decodeResponse(t, body)
	if !strings.Contains(string(r.Result), `"TASK_STATE_COMPLETED"`) || strings.Contains(string(r.Result), `"task":`) {
		t.Errorf("GetTask in 1.0 is a bare task: %s", r.Result)
	}
	_, body = s.post(t, `{"jsonrpc":"2.0","method":"ListTasks","params":{"contextId":"`+first.Result.Task.ContextID+`"},"id":4}`, "A2A-Version", "1.0")
	var list struct {
		Tasks []struct {
			ID        string
			Artifacts []json.RawMessage
		}
		TotalSize     int    `json:"totalSize"`
		NextPageToken string `json:"nextPageToken"`
	}
	if err := json.Unmarshal(decodeResponse(t, body).Result, &list); err != nil || len(list.Tasks) != 1 ||
		list.Tasks[0].ID != first.Result.Task.ID || list.TotalSize != 1 || list.Tasks[0].Artifacts != nil {
		t.Errorf("ListTasks: %v %s", err, body)
	}
	_, body = s.post(t, `{"jsonrpc":"2.0","method":"ListTasks","params":{"contextId":"nope"},"id":4}`, "A2A-Version", "1.0")
	if !strings.Contains(body, `"tasks":[]`) {
		t.Errorf("ListTasks of an unknown context: %s", body)
	}
	// 1.0 method names work without the header too, in 0.3 shapes.
	_, body = s.post(t, `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"`+first.Result.Task.ID+`"},"id":5}`)
	if r := decodeResponse(t, body); !strings.Contains(string(r.Result), `"kind":"task"`) {
		t.Errorf("GetTask without A2A-Version: %s", r.Result)
	}
	_ = fmt.Sprint
}

// TestToolResultsContinueTask: a task stops input-required with the
// model's function call; a message with its taskId and one
// function_response part continues the same task and run, and the model
// gets the result as a tool result. Results that answer no call are
// -32602; a message to the task once it ended is -32004.
func TestToolResultsContinueTask(t *testing.T) {
	up := &bridgetest.Upstream{Script: func(n int, _ *bridge.Request) []bridge.Event {
		if n == 0 {
			return []bridge.Event{
				{Kind: bridge.KindMessageStarted},
				{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: "call_1", Name: "weather"}},
				{Kind: bridge.KindToolCallDone, ToolCall: &bridge.ToolCall{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`}},
				{Kind: bridge.KindMessageDone},
				{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}},
			}
		}
		return text("sunny it is")
	}}
	s := newServer(t, up)
	task, ctxID := s.send(t, "weather?")
	if r, _ := s.engine.Run(t.Context(), task); r.Status != bridge.StatusInputRequired {
		t.Fatalf("task %s: %s, want input_required", task, r.Status)
	}
	answer := func(id, callID string) string {
		_, body := s.post(t, `{"jsonrpc":"2.0","id":"`+id+`","method":"message/stream","params":{"message":{"kind":"message","messageId":"`+id+
			`","role":"user","taskId":"`+task+`","contextId":"`+ctxID+`","parts":[{"kind":"data","data":{"id":"`+callID+
			`","name":"weather","response":{"result":"sunny"}},"metadata":{"adk_type":"function_response"}}]}}}`)
		return body
	}
	if body := answer("bad", "call_9"); !strings.Contains(body, `"code":-32602`) {
		t.Errorf("a result for no call: %s", body)
	}
	_, frames := sseData(t, answer("good", "call_1"))
	all := strings.Join(frames, "\n")
	if !strings.Contains(all, `"text":"sunny"`) || !strings.Contains(all, `"state":"completed"`) || strings.Contains(all, `"state":"input-required"`) {
		t.Errorf("the continued task's stream:\n%s", all)
	}
	for _, f := range frames {
		if strings.Contains(f, `"taskId"`) && !strings.Contains(f, `"taskId":"`+task+`"`) {
			t.Errorf("a frame of another task: %s", f)
		}
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls %d, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != bridge.RoleTool || last.ToolCallID != "call_1" || last.Text() != "sunny" {
		t.Errorf("the model's second call ends with %+v, want the tool result", last)
	}
	if r, _ := s.engine.Run(t.Context(), task); r.Status != bridge.StatusCompleted {
		t.Errorf("task %s: %s, want completed", task, r.Status)
	}
	if body := answer("late", "call_1"); !strings.Contains(body, `"code":-32004`) {
		t.Errorf("a message to the ended task: %s", body)
	}
	// A replay of the whole task goes past the step that waited for the
	// result: one final frame, the outcome.
	_, body := s.post(t, `{"jsonrpc":"2.0","id":"r","method":"tasks/resubscribe","params":{"id":"`+task+`"}}`)
	_, frames = sseData(t, body)
	all = strings.Join(frames, "\n")
	if strings.Count(all, `"final":true`) != 1 || !strings.Contains(all, `"adk_type":"function_call"`) ||
		!strings.Contains(all, `"text":"sunny"`) || !strings.Contains(all, `"state":"completed"`) {
		t.Errorf("the replayed task:\n%s", all)
	}
}

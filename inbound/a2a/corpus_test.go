package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// capturedRequest is one client request of the wire corpus.
type capturedRequest struct {
	method, path string
	header       http.Header
	body         []byte
}

func corpusRequests(t *testing.T, dir string) map[string]capturedRequest {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "corpus", dir, "client", "*.http"))
	if len(files) == 0 {
		t.Fatalf("no captures in testdata/corpus/%s/client", dir)
	}
	out := map[string]capturedRequest{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		head, body, ok := bytes.Cut(b, []byte("\r\n\r\n"))
		if !ok {
			head, body, _ = bytes.Cut(b, []byte("\n\n"))
		}
		lines := strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n")
		rl := strings.Fields(lines[0])
		c := capturedRequest{method: rl[0], path: rl[1], header: http.Header{}, body: body}
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ":")
			switch strings.ToLower(k) {
			case "host", "content-length", "connection", "accept-encoding":
				continue
			}
			c.header.Add(k, strings.TrimSpace(v))
		}
		out[filepath.Base(f)] = c
	}
	return out
}

// replay sends a captured request to the server, its task id (if any)
// replaced by id.
func (s *server) replay(t *testing.T, c capturedRequest, id string) (*http.Response, string) {
	t.Helper()
	body := c.body
	if id != "" {
		var env struct {
			Params struct{ ID string } `json:"params"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Params.ID == "" {
			t.Fatalf("captured body has no params.id: %s", body)
		}
		body = bytes.ReplaceAll(body, []byte(env.Params.ID), []byte(id))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, c.method, s.url+c.path, bytes.NewReader(body))
	if c.method == "GET" {
		req.Body = nil
	}
	req.Header = c.header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// events decodes a 0.3 SSE body with a2a-go's types.
func sdkEvents(t *testing.T, body string) []a2asdk.Event {
	t.Helper()
	_, frames := sseData(t, body)
	var evs []a2asdk.Event
	for _, f := range frames {
		r := decodeResponse(t, f)
		if r.Error != nil {
			t.Fatalf("error frame %s", f)
		}
		ev, err := a2asdk.UnmarshalEventJSON(r.Result)
		if err != nil {
			t.Fatalf("a2a-go cannot read %s: %v", r.Result, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestCorpusClientRequestsV03 serves every request the @a2a-js/sdk 0.3.14
// client was captured sending, unchanged but for the task ids.
func TestCorpusClientRequestsV03(t *testing.T) {
	reqs := corpusRequests(t, "a2a-v0.3")
	s := newServer(t, &bridgetest.Upstream{Events: text("Hello, world")})

	resp, body := s.replay(t, reqs["card-fetch.http"], "")
	var card a2asdk.AgentCard
	if err := json.Unmarshal([]byte(body), &card); err != nil || resp.StatusCode != 200 || card.URL != s.url+"/a2a" || !card.Capabilities.Streaming {
		t.Errorf("card: %d %v %s", resp.StatusCode, err, body)
	}

	_, body = s.replay(t, reqs["message-send.http"], "")
	var task a2asdk.Task
	if err := json.Unmarshal(decodeResponse(t, body).Result, &task); err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2asdk.TaskStateCompleted || task.History[0].ID != "client-msg-send" || len(task.Artifacts) != 1 {
		t.Errorf("message/send: %s", body)
	}

	resp, body = s.replay(t, reqs["message-stream.http"], "")
	evs := sdkEvents(t, body)
	if resp.Header.Get("Content-Type") != "text/event-stream" || len(evs) < 4 {
		t.Fatalf("message/stream: %s", body)
	}
	streamed := evs[0].(*a2asdk.Task)
	if st := evs[len(evs)-1].(*a2asdk.TaskStatusUpdateEvent); st.Status.State != a2asdk.TaskStateCompleted || !st.Final {
		t.Errorf("the stream ends in %+v", st)
	}

	_, body = s.replay(t, reqs["tasks-get.http"], string(streamed.ID))
	if err := json.Unmarshal(decodeResponse(t, body).Result, &task); err != nil || task.ID != streamed.ID ||
		task.Status.State != a2asdk.TaskStateCompleted || len(task.History) != 1 || task.History[0].ID != "client-msg-stream" {
		t.Errorf("tasks/get: %v %s", err, body)
	}

	_, body = s.replay(t, reqs["tasks-resubscribe.http"], string(streamed.ID))
	if re := sdkEvents(t, body); len(re) != len(evs) {
		t.Errorf("tasks/resubscribe replayed %d events of %d", len(re), len(evs))
	}

	// tasks/cancel of a running task.
	gate := make(chan struct{})
	slow := newServer(t, &bridgetest.Upstream{Events: text("w1 w2 w3"), Gate: gate})
	running, _ := slow.startRunning(t, gate)
	_, body = slow.replay(t, reqs["tasks-cancel.http"], running)
	if err := json.Unmarshal(decodeResponse(t, body).Result, &task); err != nil || task.Status.State != a2asdk.TaskStateCanceled {
		t.Errorf("tasks/cancel: %v %s", err, body)
	}
}

// startRunning starts a task whose upstream waits at gate, and lets its
// first event through.
func (s *server) startRunning(t *testing.T, gate chan struct{}) (task, context string) {
	t.Helper()
	_, body := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"slow","role":"user","parts":[{"kind":"text","text":"slow"}]},"configuration":{"blocking":false}}}`)
	var res struct{ ID, ContextID string }
	if err := json.Unmarshal(decodeResponse(t, body).Result, &res); err != nil || res.ID == "" {
		t.Fatalf("start: %s", body)
	}
	select {
	case gate <- struct{}{}:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream did not start")
	}
	return res.ID, res.ContextID
}

// TestCorpusClientRequestsV10 serves every request the native 1.0 client
// (@a2a-js/sdk 1.3.0) was captured sending, with its A2A-Version header.
func TestCorpusClientRequestsV10(t *testing.T) {
	reqs := corpusRequests(t, "a2a-v1")
	s := newServer(t, &bridgetest.Upstream{Events: text("Hello, world")})

	resp, body := s.replay(t, reqs["card-fetch.http"], "")
	var card struct {
		SupportedInterfaces []struct{ URL, ProtocolBinding, ProtocolVersion string } `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal([]byte(body), &card); err != nil || resp.StatusCode != 200 || len(card.SupportedInterfaces) != 1 ||
		card.SupportedInterfaces[0].ProtocolVersion != "1.0" {
		t.Errorf("card: %s", body)
	}

	resp, body = s.replay(t, reqs["send-streaming-message.http"], "")
	_, frames := sseData(t, body)
	if resp.Header.Get("Content-Type") != "text/event-stream" || len(frames) < 4 {
		t.Fatalf("SendStreamingMessage: %s", body)
	}
	var first struct {
		Result struct {
			Task struct {
				ID      string
				History []struct{ MessageID, Role string }
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(frames[0]), &first); err != nil || first.Result.Task.ID == "" ||
		first.Result.Task.History[0].MessageID != "client-msg-stream" || first.Result.Task.History[0].Role != "ROLE_USER" {
		t.Errorf("first frame %s", frames[0])
	}
	if !strings.Contains(frames[len(frames)-1], `"statusUpdate"`) || !strings.Contains(frames[len(frames)-1], "TASK_STATE_COMPLETED") {
		t.Errorf("last frame %s", frames[len(frames)-1])
	}
	id := first.Result.Task.ID

	_, body = s.replay(t, reqs["send-message.http"], "")
	var sent struct {
		Task struct {
			Status struct{ State string }
		} `json:"task"`
	}
	if err := json.Unmarshal(decodeResponse(t, body).Result, &sent); err != nil || sent.Task.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("SendMessage: %s", body)
	}

	_, body = s.replay(t, reqs["get-task.http"], id)
	var got struct {
		ID     string
		Status struct{ State string }
	}
	if err := json.Unmarshal(decodeResponse(t, body).Result, &got); err != nil || got.ID != id || got.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask: %s", body)
	}

	// SubscribeToTask of a running task, then CancelTask of it.
	gate := make(chan struct{})
	slow := newServer(t, &bridgetest.Upstream{Events: text("w1 w2 w3"), Gate: gate})
	running, _ := slow.startRunning(t, gate)
	done := make(chan string, 1)
	go func() {
		_, b := slow.replay(t, reqs["subscribe-to-task.http"], running)
		done <- b
	}()
	time.Sleep(50 * time.Millisecond) // let the subscription attach
	_, body = slow.replay(t, reqs["cancel-task.http"], running)
	if !strings.Contains(string(decodeResponse(t, body).Result), "TASK_STATE_CANCELED") {
		t.Errorf("CancelTask: %s", body)
	}
	select {
	case b := <-done:
		_, sub := sseData(t, b)
		if len(sub) == 0 || !strings.Contains(sub[len(sub)-1], "TASK_STATE_CANCELED") {
			t.Errorf("SubscribeToTask stream: %s", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SubscribeToTask did not end after the cancel")
	}
	if run, _ := slow.engine.Run(t.Context(), running); run.Status != bridge.StatusCancelled {
		t.Errorf("run %s", run.Status)
	}
}

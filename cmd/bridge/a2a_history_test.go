package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/openai/openai-go/v3"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// TestA2AHistory: GET /v1/sessions/{contextId}/history?format=a2a gives the
// context's tasks oldest first, each with its status, history and
// artifacts; a task still working carries metadata.lastEventId.
func TestA2AHistory(t *testing.T) {
	up := newSlowOpenAI(t, 0, func(n int) []string {
		if n < 2 {
			return []string{"answer ", "one"}
		}
		return words("s", 100)
	})
	up.Server.Reply = wrapDelay(up.Server.Reply, 2, 10*time.Millisecond)
	base := a2aBridge(t, up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	client, _ := a2aClient(t, ctx, base, &sseTap{})
	var ids []a2asdk.TaskID
	for _, q := range []string{"first", "second"} {
		res, err := client.SendMessage(ctx, userMessage("hist-ctx", q))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.(*a2asdk.Task).ID)
	}
	// A third task still streaming.
	sctx, drop := context.WithCancel(ctx)
	defer drop()
	for ev, err := range client.SendStreamingMessage(sctx, userMessage("hist-ctx", "third")) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*a2asdk.TaskArtifactUpdateEvent); ok {
			ids = append(ids, ev.TaskInfo().TaskID)
			break
		}
	}

	resp, err := http.Get(base + "/v1/sessions/hist-ctx/history?format=a2a")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Tasks         []a2asdk.Task `json:"tasks"`
		NextPageToken *string       `json:"nextPageToken"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 {
		t.Fatalf("history %d: %v", resp.StatusCode, err)
	}
	if len(h.Tasks) != 3 || h.NextPageToken != nil {
		t.Fatalf("%d tasks, next %v", len(h.Tasks), h.NextPageToken)
	}
	for i, task := range h.Tasks {
		if task.ID != ids[i] || task.ContextID != "hist-ctx" || task.Status.Timestamp == nil || len(task.History) == 0 ||
			task.History[0].Role != a2asdk.MessageRoleUser {
			t.Errorf("task %d = %+v", i, task)
		}
	}
	for _, task := range h.Tasks[:2] {
		if task.Status.State != a2asdk.TaskStateCompleted || taskText(&task) != "answer one" || task.Metadata["lastEventId"] != nil {
			t.Errorf("finished task %s: %s %q %v", task.ID, task.Status.State, taskText(&task), task.Metadata)
		}
	}
	last := h.Tasks[2]
	cur, _ := last.Metadata["lastEventId"].(string)
	if run, _, ok := bridge.ParseEventID(cur); last.Status.State != a2asdk.TaskStateWorking || !ok || run != string(last.ID) {
		t.Errorf("the working task: state %s lastEventId %q", last.Status.State, cur)
	}
	// The history's cursor resumes the task: the rest of it, to the end.
	var rest []a2asdk.Event
	for ev, err := range client.ResubscribeToTask(context.WithValue(ctx, lastEventIDKey{}, cur), &a2asdk.TaskIDParams{ID: last.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, ev)
	}
	if st, _ := finalState(rest); st != a2asdk.TaskStateCompleted || len(rest) == 0 {
		t.Errorf("resuming from the history's cursor ended in %s after %d events", st, len(rest))
	}
}

// wrapDelay paces the replies from the n-th on.
func wrapDelay(reply func(int, []byte) openaitest.Reply, from int, d time.Duration) func(int, []byte) openaitest.Reply {
	return func(n int, b []byte) openaitest.Reply {
		r := reply(n, b)
		if n >= from {
			r.Delay = d
		}
		return r
	}
}

// TestA2AChainResume: bridge A (openai in, a2a out) over bridge B (a2a in,
// openai out), with a proxy that cuts A's first stream from B mid-task. A
// resubscribes to B with Last-Event-ID, so A's client gets the whole
// answer, once, and B's model is called once.
func TestA2AChainResume(t *testing.T) {
	all := words("z", 60)
	up := newSlowOpenAI(t, 5*time.Millisecond, func(int) []string { return all })
	b := a2aBridge(t, up.baseURL())

	var streams atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, b+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		req.Host = r.Host // B's card then names the proxy as its endpoint
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		cutAfter := -1
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && streams.Add(1) == 1 {
			cutAfter = 10 // the first stream breaks after 10 frames
		}
		buf := make([]byte, 1)
		frames, nl := 0, 0
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				if buf[0] == '\n' {
					if nl++; nl == 2 {
						frames++
						w.(http.Flusher).Flush()
					}
				} else {
					nl = 0
				}
				if cutAfter >= 0 && frames == cutAfter {
					panic(http.ErrAbortHandler) // drop the connection
				}
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(proxy.Close)

	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "a2a", URL: proxy.URL}}
	a := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	got, _ := streamText(t, ctx, oaClient(a), []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")})
	if got != strings.Join(all, "") {
		t.Errorf("through the broken chain the client got\n%q\nwant\n%q", got, strings.Join(all, ""))
	}
	if n := streams.Load(); n != 2 {
		t.Errorf("%d streams from A to B, want 2 (the cut one and the resubscribe)", n)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("B's model was called %d times, want once", n)
	}
}

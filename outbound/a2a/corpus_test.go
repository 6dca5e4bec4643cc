package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/a2a"
	outa2a "github.com/bridge-dev/bridge/outbound/a2a"
	"github.com/bridge-dev/bridge/storage/memory"
)

// capture is a captured server answer: status, headers and exact body.
type capture struct {
	status int
	header http.Header
	body   []byte
}

// loadCapture reads a capture of the repo's testdata/corpus: .http has a status line and headers,
// .sse and .json are a 200 body.
func loadCapture(t *testing.T, name string) capture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	c := capture{status: 200, header: http.Header{}, body: b}
	switch {
	case strings.HasSuffix(name, ".sse"):
		c.header.Set("Content-Type", "text/event-stream")
	case strings.HasSuffix(name, ".json"):
		c.header.Set("Content-Type", "application/json")
	case strings.HasSuffix(name, ".http"):
		head, body, ok := bytes.Cut(b, []byte("\r\n\r\n"))
		if !ok {
			t.Fatalf("%s: no header end", name)
		}
		lines := strings.Split(string(head), "\r\n")
		f := strings.Fields(lines[0])
		c.status, _ = strconv.Atoi(f[1])
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ":")
			if !strings.EqualFold(k, "Content-Length") && !strings.EqualFold(k, "Transfer-Encoding") {
				c.header.Add(k, strings.TrimSpace(v))
			}
		}
		c.body = body
	}
	return c
}

// corpusAgent serves a captured card (its urls pointed at itself) and
// answers each JSON-RPC method with the capture the test set for it.
type corpusAgent struct {
	*httptest.Server
	t       *testing.T
	mu      sync.Mutex
	answers map[string][]capture // by method, one per call (the last repeats)
	calls   []string
	headers []http.Header
}

func newCorpusAgent(t *testing.T, card string, streaming *bool) *corpusAgent {
	t.Helper()
	a := &corpusAgent{t: t, answers: map[string][]capture{}}
	cc := loadCapture(t, card)
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			var m map[string]any
			_ = json.Unmarshal(cc.body, &m)
			m["url"] = a.URL + "/a2a"
			if ifs, ok := m["supportedInterfaces"].([]any); ok {
				for _, i := range ifs {
					i.(map[string]any)["url"] = a.URL + "/a2a"
				}
				delete(m, "url")
			}
			if streaming != nil {
				m["capabilities"].(map[string]any)["streaming"] = *streaming
			}
			_ = json.NewEncoder(w).Encode(m)
			return
		}
		var req struct{ Method string }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		a.mu.Lock()
		a.calls = append(a.calls, req.Method)
		a.headers = append(a.headers, r.Header.Clone())
		list := a.answers[req.Method]
		var c capture
		switch {
		case len(list) == 0:
			c = capture{status: 200, header: http.Header{"Content-Type": {"application/json"}},
				body: []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"not scripted"}}`)}
		case len(list) == 1:
			c = list[0]
		default:
			c, a.answers[req.Method] = list[0], list[1:]
		}
		a.mu.Unlock()
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
		_, _ = w.Write(c.body)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *corpusAgent) answer(method string, cs ...capture) {
	a.mu.Lock()
	a.answers[method] = append(a.answers[method], cs...)
	a.mu.Unlock()
}

func (a *corpusAgent) methods() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

// remoteID is what ids maps the local id of kind to for the agent, or "".
func remoteID(ids *memory.Store, kind bridge.IDKind, local string) string {
	r, _ := ids.RemoteID(context.Background(), kind, "agent", local)
	return r
}

func userReq(text string) *bridge.Request {
	return &bridge.Request{SessionID: "sess_1", Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(text)}}}}
}

// result is what a call's events said.
type result struct {
	text, reasoning string
	final           *bridge.Final
	err             error
	events          []bridge.Event
}

func drain(t *testing.T, call *bridge.Call) result {
	t.Helper()
	var r result
	for ev, err := range call.Events {
		if err != nil {
			r.err = err
			break
		}
		r.events = append(r.events, ev)
		switch ev.Kind {
		case bridge.KindTextDelta:
			r.text += ev.Text
		case bridge.KindReasoningDelta:
			r.reasoning += ev.Text
		case bridge.KindFinal:
			r.final = ev.Final
		}
	}
	return r
}

func ctxRun(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCorpusCards: both versions' captured cards are read: 0.3's url, and
// 1.0's supportedInterfaces (with the A2A-Version header on its calls).
func TestCorpusCards(t *testing.T) {
	for _, c := range []struct {
		card    string
		version wire.Version
	}{{"a2a-v0.3/server/agent-card.json", wire.V03}, {"a2a-v1/server/agent-card.json", wire.V10}} {
		a := newCorpusAgent(t, c.card, nil)
		card, err := outa2a.New(outa2a.Config{URL: a.URL}).Card(ctxRun(t))
		if err != nil {
			t.Fatalf("%s: %v", c.card, err)
		}
		if card.URL != a.URL+"/a2a" || card.Version != c.version || !card.Streaming {
			t.Errorf("%s: %+v", c.card, card)
		}
	}
}

// TestCorpusStreams decodes every captured stream through the client.
func TestCorpusStreams(t *testing.T) {
	cases := []struct {
		card, method, stream string
		text, reasoning      string
		status               bridge.Status
	}{
		{"a2a-v0.3/server/agent-card.json", "message/stream", "a2a-v0.3/server/message-stream.sse", "Hello, world", "Looking it up", bridge.StatusCompleted},
		{"a2a-v0.3/server/agent-card.json", "message/stream", "a2a-v0.3/server/tasks-cancel.stream.sse", "w1 ", "Working slowly", bridge.StatusInterrupted},
		{"a2a-v1/server/agent-card.json", "SendStreamingMessage", "a2a-v1/server/send-streaming-message.sse", "Hello, world", "Looking it up", bridge.StatusCompleted},
		{"a2a-v1/server/agent-card.json", "SendStreamingMessage", "a2a-v1/server/cancel-task.stream.sse", "w1 ", "Working slowly", bridge.StatusInterrupted},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.stream), func(t *testing.T) {
			a := newCorpusAgent(t, c.card, nil)
			a.answer(c.method, loadCapture(t, c.stream))
			ids := memory.New(nil)
			ctx := ctxRun(t)
			call, err := outa2a.New(outa2a.Config{Name: "agent", URL: a.URL, IDs: ids}).Open(ctx, userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			r := drain(t, call)
			if r.err != nil || r.text != c.text || r.reasoning != c.reasoning || r.final == nil || r.final.Status != c.status {
				t.Errorf("text %q reasoning %q final %+v err %v", r.text, r.reasoning, r.final, r.err)
			}
			if remoteID(ids, bridge.IDSession, "sess_1") == "" {
				t.Errorf("the upstream context was not recorded")
			}
			if strings.HasPrefix(c.card, "a2a-v1") && a.headers[0].Get("A2A-Version") != "1.0" {
				t.Errorf("a 1.0 call without A2A-Version: 1.0")
			}
		})
	}
}

// TestCorpusResults: an agent whose card says no streaming gets
// message/send, and its captured result (0.3 and 1.0) is the answer.
func TestCorpusResults(t *testing.T) {
	no := false
	for _, c := range []struct{ card, method, result string }{
		{"a2a-v0.3/server/agent-card.json", "message/send", "a2a-v0.3/server/message-send.result.json"},
		{"a2a-v1/server/agent-card.json", "SendMessage", "a2a-v1/server/send-message.result.json"},
	} {
		a := newCorpusAgent(t, c.card, &no)
		a.answer(c.method, loadCapture(t, c.result))
		call, err := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("hi"))
		if err != nil {
			t.Fatal(err)
		}
		r := drain(t, call)
		if r.text != "Hello, world" || r.final == nil || r.final.Status != bridge.StatusCompleted {
			t.Errorf("%s: text %q final %+v err %v", c.result, r.text, r.final, r.err)
		}
		if got := a.methods(); len(got) != 1 || got[0] != c.method {
			t.Errorf("%s: calls %v", c.result, got)
		}
	}
}

// cut returns the first n frames of a captured stream, ending the body
// there as a dropped connection does.
func cut(c capture, n int) capture {
	frames := bytes.SplitAfter(c.body, []byte("\n\n"))
	c.body = bytes.Join(frames[:n], nil)
	return c
}

// TestCorpusResume: a stream that breaks mid-task is resubscribed; the
// captured resubscribe (a Task snapshot with the artifact so far, then the
// rest) continues it with no gap and no duplicate. When the agent cannot
// resubscribe (a2a-go answers -32001), tasks/get (the captured task) ends
// it.
func TestCorpusResume(t *testing.T) {
	all := "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 "
	t.Run("resubscribe", func(t *testing.T) {
		a := newCorpusAgent(t, "a2a-v0.3/server/agent-card.json", nil)
		a.answer("message/stream", loadCapture(t, "a2a-v0.3/server/tasks-resubscribe.before-disconnect.sse"))
		a.answer("tasks/resubscribe", loadCapture(t, "a2a-v0.3/server/tasks-resubscribe.sse"))
		call, err := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("slow"))
		if err != nil {
			t.Fatal(err)
		}
		if r := drain(t, call); r.err != nil || r.text != all || r.final.Status != bridge.StatusCompleted {
			t.Errorf("text %q final %+v err %v", r.text, r.final, r.err)
		}
		if got := strings.Join(a.methods(), ","); got != "message/stream,tasks/resubscribe" {
			t.Errorf("calls %s", got)
		}
	})
	t.Run("resubscribe a finished task", func(t *testing.T) {
		a := newCorpusAgent(t, "a2a-v0.3/server/agent-card.json", nil)
		a.answer("message/stream", loadCapture(t, "a2a-v0.3/server/tasks-resubscribe.before-disconnect.sse"))
		a.answer("tasks/resubscribe", loadCapture(t, "a2a-v0.3/server/tasks-resubscribe-finished-task.http"))
		call, _ := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("slow"))
		if r := drain(t, call); r.err != nil || r.text != all || r.final.Status != bridge.StatusCompleted {
			t.Errorf("text %q final %+v err %v", r.text, r.final, r.err)
		}
	})
	t.Run("1.0 subscribe", func(t *testing.T) {
		a := newCorpusAgent(t, "a2a-v1/server/agent-card.json", nil)
		a.answer("SendStreamingMessage", cut(loadCapture(t, "a2a-v1/server/cancel-task.stream.sse"), 4))
		a.answer("SubscribeToTask", loadCapture(t, "a2a-v1/server/subscribe-to-task.sse"))
		call, _ := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("slow"))
		if r := drain(t, call); r.err != nil || r.text != all || r.final.Status != bridge.StatusCompleted {
			t.Errorf("text %q final %+v err %v", r.text, r.final, r.err)
		}
	})
	// Each version's methods (stream, resubscribe, get) and captures.
	for _, v := range []struct {
		dir, stream, streamCapture, resubscribe, get string
		gets                                         []string
	}{
		{"a2a-v0.3/server", "message/stream", "message-stream.sse", "tasks/resubscribe", "tasks/get",
			[]string{"tasks-get.json", "tasks-get-history-length-0.json", "tasks-get-history-length-1.json"}},
		{"a2a-v1/server", "SendStreamingMessage", "send-streaming-message.sse", "SubscribeToTask", "GetTask",
			[]string{"get-task.json", "get-task-history-length-0.json"}},
	} {
		for _, get := range v.gets {
			t.Run(v.get+" "+get, func(t *testing.T) {
				a := newCorpusAgent(t, v.dir+"/agent-card.json", nil)
				a.answer(v.stream, cut(loadCapture(t, v.dir+"/"+v.streamCapture), 4))
				a.answer(v.resubscribe, loadCapture(t, v.dir+"/error-unknown-task.http"))
				a.answer(v.get, loadCapture(t, v.dir+"/"+get))
				call, _ := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("hi"))
				if r := drain(t, call); r.err != nil || r.text != "Hello, world" || r.final.Status != bridge.StatusCompleted {
					t.Errorf("text %q final %+v err %v", r.text, r.final, r.err)
				}
				if got, want := strings.Join(a.methods(), ","), v.stream+","+v.resubscribe+","+v.get; got != want {
					t.Errorf("calls %s, want %s", got, want)
				}
			})
		}
	}
}

// TestCorpusCancel: Call.Cancel sends tasks/cancel of the upstream task;
// the captured answers are a success (the canceled task) and -32002.
func TestCorpusCancel(t *testing.T) {
	for _, c := range []struct {
		card, stream, method, answer string
		ok                           bool
	}{
		{"a2a-v0.3/server/agent-card.json", "a2a-v0.3/server/tasks-cancel.stream.sse", "tasks/cancel", "a2a-v0.3/server/tasks-cancel.json", true},
		{"a2a-v0.3/server/agent-card.json", "a2a-v0.3/server/tasks-cancel.stream.sse", "tasks/cancel", "a2a-v0.3/server/error-task-not-cancelable.http", false},
		{"a2a-v0.3/server/agent-card.json", "a2a-v0.3/server/tasks-cancel.stream.sse", "tasks/cancel", "a2a-v0.3/server/error-unknown-task-cancel.http", false},
		{"a2a-v1/server/agent-card.json", "a2a-v1/server/cancel-task.stream.sse", "CancelTask", "a2a-v1/server/cancel-task.json", true},
		{"a2a-v1/server/agent-card.json", "a2a-v1/server/cancel-task.stream.sse", "CancelTask", "a2a-v1/server/error-cancel-completed-task.http", false},
	} {
		t.Run(filepath.Base(c.answer), func(t *testing.T) {
			a := newCorpusAgent(t, c.card, nil)
			a.answer(strings.Replace(strings.Replace(c.method, "tasks/cancel", "message/stream", 1), "CancelTask", "SendStreamingMessage", 1),
				cut(loadCapture(t, c.stream), 4))
			a.answer(c.method, loadCapture(t, c.answer))
			call, err := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("slow"))
			if err != nil {
				t.Fatal(err)
			}
			for range call.Events { // the first frames name the task, then the stream breaks
				break
			}
			err = call.Cancel(ctxRun(t))
			if c.ok != (err == nil) {
				t.Errorf("cancel: %v", err)
			}
			var be *bridge.Error
			if err != nil && (!errors.As(err, &be) || be.Dialect != wire.Dialect) {
				t.Errorf("cancel error %T %v", err, err)
			}
			if got := a.methods(); got[len(got)-1] != c.method {
				t.Errorf("calls %v", got)
			}
		})
	}
}

// TestCorpusErrors: every captured error answer, to a send, is Open's
// error with the code the table gives.
func TestCorpusErrors(t *testing.T) {
	cases := map[string]bridge.Code{
		"a2a-v0.3/server/error-parse-error.http":                 bridge.CodeInvalid,
		"a2a-v0.3/server/error-invalid-request-no-method.http":   bridge.CodeInvalid,
		"a2a-v0.3/server/error-invalid-request-bad-jsonrpc.http": bridge.CodeInvalid,
		"a2a-v0.3/server/error-invalid-request-batch.http":       bridge.CodeInvalid,
		"a2a-v0.3/server/error-unknown-method.http":              bridge.CodeUnsupported,
		"a2a-v0.3/server/error-unknown-method-v1-name.http":      bridge.CodeUnsupported,
		"a2a-v0.3/server/error-unknown-task.http":                bridge.CodeNotFound,
		"a2a-v0.3/server/error-unknown-task-cancel.http":         bridge.CodeNotFound,
		"a2a-v0.3/server/error-invalid-params.http":              bridge.CodeInvalid,
		"a2a-v0.3/server/error-message-to-terminal-task.http":    bridge.CodeInvalid,
		"a2a-v0.3/server/error-text-plain-content-type.http":     bridge.CodeInvalid,
		"a2a-v0.3/server/error-task-not-cancelable.http":         bridge.CodeConflict,
		"a2a-v1/server/error-parse-error.http":                   bridge.CodeInvalid,
		"a2a-v1/server/error-invalid-request-no-method.http":     bridge.CodeInvalid,
		"a2a-v1/server/error-unknown-method.http":                bridge.CodeUnsupported,
		"a2a-v1/server/error-unknown-method-v03-name.http":       bridge.CodeUnsupported,
		"a2a-v1/server/error-unknown-task.http":                  bridge.CodeNotFound,
		"a2a-v1/server/error-no-a2a-version-header.http":         bridge.CodeUnsupported,
		"a2a-v1/server/error-cancel-completed-task.http":         bridge.CodeConflict,
	}
	for name, code := range cases {
		t.Run(filepath.Base(name), func(t *testing.T) {
			card, method := "a2a-v0.3/server/agent-card.json", "message/stream"
			if strings.HasPrefix(name, "a2a-v1") {
				card, method = "a2a-v1/server/agent-card.json", "SendStreamingMessage"
			}
			a := newCorpusAgent(t, card, nil)
			cp := loadCapture(t, name)
			a.answer(method, cp)
			_, err := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("hi"))
			var be *bridge.Error
			if !errors.As(err, &be) || be.Code != code || be.Dialect != wire.Dialect || be.Message == "" {
				t.Fatalf("Open error %v, want %s", err, code)
			}
			if cp.status != 200 && be.Status != cp.status {
				t.Errorf("status %d, captured %d", be.Status, cp.status)
			}
			var env struct {
				Error struct{ Code int } `json:"error"`
			}
			_ = json.Unmarshal(cp.body, &env)
			if be.UpstreamCode != strconv.Itoa(env.Error.Code) {
				t.Errorf("upstream code %q, captured %d", be.UpstreamCode, env.Error.Code)
			}
		})
	}
	// And inside a stream (a2a-go's way): an error frame before any event.
	a := newCorpusAgent(t, "a2a-v0.3/server/agent-card.json", nil)
	body := loadCapture(t, "a2a-v0.3/server/error-unknown-task.http").body
	a.answer("message/stream", capture{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}},
		body: append(append([]byte("id: x\ndata: "), body...), "\n\n"...)})
	_, err := outa2a.New(outa2a.Config{URL: a.URL}).Open(ctxRun(t), userReq("hi"))
	if bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("an error frame first: %v", err)
	}
}

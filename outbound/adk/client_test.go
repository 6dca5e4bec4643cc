package adk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/adk/adktest"
	"github.com/bridge-dev/bridge/storage/memory"
)

type result struct {
	evs   []bridge.Event
	text  string
	final *bridge.Final
}

func collect(t *testing.T, call *bridge.Call) result {
	t.Helper()
	var r result
	for ev, err := range call.Events {
		if err != nil {
			t.Fatalf("stream error: %v", err)
		}
		r.evs = append(r.evs, ev)
		if ev.Kind == bridge.KindTextDelta {
			r.text += ev.Text
		}
		if ev.Kind == bridge.KindFinal {
			r.final = ev.Final
		}
	}
	if r.final == nil {
		t.Fatal("no final event")
	}
	return r
}

func user(text string) bridge.Message {
	return bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(text)}}
}

func assistant(text string) bridge.Message {
	return bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart(text)}}
}

// TestTwoTurnsOneSession: a stateless client's second turn (the whole
// history resent) goes to the same ADK session with only its new message.
func TestTwoTurnsOneSession(t *testing.T) {
	srv := adktest.New()
	t.Cleanup(srv.Close)
	c := New(Config{URL: srv.URL, IDs: memory.New(nil)})
	ctx := bridge.WithPrincipal(t.Context(), "alice")
	call, err := c.Open(ctx, &bridge.Request{Model: "scripted", Messages: []bridge.Message{user("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	r1 := collect(t, call)
	if r1.text != "turn 1: hello" || r1.final.Status != bridge.StatusCompleted {
		t.Fatalf("turn 1: %q %+v", r1.text, r1.final)
	}
	call, err = c.Open(ctx, &bridge.Request{Model: "scripted", Messages: []bridge.Message{user("hello"), assistant(r1.text), user("again")}})
	if err != nil {
		t.Fatal(err)
	}
	r2 := collect(t, call)
	if r2.text != "turn 2: again" {
		t.Fatalf("turn 2: %q (a new session?)", r2.text)
	}
	runs := srv.RunRequests()
	if len(runs) != 2 || string(runs[0]["sessionId"]) != string(runs[1]["sessionId"]) || string(runs[1]["userId"]) != `"alice"` {
		t.Fatalf("run requests: %v", runs)
	}
	if bytes.Contains(runs[1]["newMessage"], []byte("hello")) {
		t.Errorf("the second turn resent the history: %s", runs[1]["newMessage"])
	}
	// An edited history opens a new session, with the earlier turns inlined.
	call, err = c.Open(ctx, &bridge.Request{Model: "scripted", Messages: []bridge.Message{user("hi"), assistant("other"), user("more")}})
	if err != nil {
		t.Fatal(err)
	}
	r3 := collect(t, call)
	if !strings.HasPrefix(r3.text, "turn 1: ") || !strings.Contains(r3.text, "other") || len(call.Dropped) == 0 {
		t.Errorf("edited: %q, dropped %v", r3.text, call.Dropped)
	}
}

// TestToolsAndErrors: the agent's own tool activity, a model error and a
// connection cut before the complete event.
func TestToolsAndErrors(t *testing.T) {
	srv := adktest.New()
	t.Cleanup(srv.Close)
	c := New(Config{URL: srv.URL})
	ctx := t.Context()
	open := func(text string) result {
		call, err := c.Open(ctx, &bridge.Request{Model: "scripted_tools", Messages: []bridge.Message{user(text)}})
		if err != nil {
			t.Fatal(err)
		}
		return collect(t, call)
	}
	r := open("weather:Oslo")
	var kinds []bridge.Kind
	for _, ev := range r.evs {
		if ev.Kind == bridge.KindToolCallDone || ev.Kind == bridge.KindToolResult {
			if ev.Source != bridge.SourceAgent {
				t.Errorf("%s source %q", ev.Kind, ev.Source)
			}
			kinds = append(kinds, ev.Kind)
		}
	}
	if len(kinds) != 2 || r.text != "The weather in Oslo: clear, 21 C." || r.final.Status != bridge.StatusCompleted {
		t.Errorf("tools: %v %q %+v", kinds, r.text, r.final)
	}
	if r := open("error:429"); r.final.Status != bridge.StatusFailed || r.final.Error.Code != bridge.CodeRateLimited {
		t.Errorf("error: %+v", r.final)
	}
	if r := open("cut:never finished"); r.final.Status != bridge.StatusInterrupted {
		t.Errorf("cut: %+v, want interrupted", r.final)
	}
	if _, err := c.Open(ctx, &bridge.Request{Model: "bad-name", Messages: []bridge.Message{user("x")}}); bridge.ErrorCode(err) != bridge.CodeInvalid {
		t.Errorf("bad app: %v", err)
	}
}

// TestCorpus serves every captured answer of the real ADK-JS api_server
// as the answer to run_sse and decodes it through the client: streams
// end with their final, error answers are errors with their text.
func TestCorpus(t *testing.T) {
	dir := "../../testdata/corpus/adk/server"
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) == 0 {
		t.Fatalf("no captures in %s", dir)
	}
	created, err := os.ReadFile(filepath.Join(dir, "session-create.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if !strings.HasSuffix(name, ".sse") && !strings.HasPrefix(name, "error-run") && !strings.HasPrefix(name, "run") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			raw, _ := os.ReadFile(f)
			status, ctype, body := 200, "text/event-stream", raw
			if strings.HasSuffix(name, ".http") {
				head, b, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
				lines := strings.Split(string(head), "\r\n")
				_, _ = fmt.Sscanf(lines[0], "HTTP/1.1 %d", &status)
				for _, l := range lines[1:] {
					if v, ok := strings.CutPrefix(l, "Content-Type: "); ok {
						ctype = v
					}
				}
				body = b
			}
			if strings.HasSuffix(name, ".json") { // a /run array served as one SSE frame per event
				var evs []json.RawMessage
				if err := json.Unmarshal(raw, &evs); err != nil {
					t.Fatal(err)
				}
				body = nil
				for _, e := range evs {
					body = append(append(append(body, "data: "...), e...), "\n\n"...)
				}
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/sessions") {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(created)
					return
				}
				w.Header().Set("Content-Type", ctype)
				w.WriteHeader(status)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			c := New(Config{URL: srv.URL})
			call, err := c.Open(t.Context(), &bridge.Request{Model: "scripted", Messages: []bridge.Message{user("x")}})
			if status/100 != 2 {
				be := bridge.AsError(err)
				if err == nil || be.Status != status || be.Message == "" || strings.Contains(be.Message, "<") {
					t.Fatalf("error answer: %v", err)
				}
				if ctype != "text/html; charset=utf-8" && !strings.Contains(string(body), be.Message) {
					t.Errorf("message %q is not the server's %s", be.Message, body)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := collect(t, call)
			switch {
			case strings.Contains(name, "error") || strings.Contains(name, "bad-new-message"):
				want := bridge.StatusFailed
				if strings.Contains(name, "no-new-message") {
					want = bridge.StatusInterrupted // an empty stream is not a success
				}
				if r.final.Status != want {
					t.Errorf("final %+v, want %s", r.final, want)
				}
			default:
				if r.final.Status != bridge.StatusCompleted || r.text == "" {
					t.Errorf("final %+v, text %q", r.final, r.text)
				}
			}
		})
	}
}

// TestResumeUpstream: over an upstream that resumes (a bridge's ADK
// endpoint), a stream cut halfway is resumed with lastEventId: the text
// arrives once, whole, and the run completes. Over ADK itself (no resume)
// the same cut interrupts the run (TestToolsAndErrors).
func TestResumeUpstream(t *testing.T) {
	srv := adktest.New()
	srv.Resumable = true
	t.Cleanup(srv.Close)
	c := New(Config{URL: srv.URL})
	call, err := c.Open(t.Context(), &bridge.Request{Model: "scripted", Messages: []bridge.Message{user("cut:alpha beta gamma delta epsilon")}})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, call)
	if r.text != "alpha beta gamma delta epsilon" || r.final.Status != bridge.StatusCompleted {
		t.Fatalf("text %q, final %+v", r.text, r.final)
	}
	runs := srv.RunRequests()
	if len(runs) != 2 || runs[1]["newMessage"] != nil || len(runs[1]["lastEventId"]) == 0 || string(runs[0]["sessionId"]) != string(runs[1]["sessionId"]) {
		t.Errorf("run requests: %v", runs)
	}
}

// TestResumeAfterRestart: the bridge's Resumer. A run whose process died
// after a few events (the call dropped unread) is resumed by a new client
// from the committed events: the upstream sends the rest after the last
// upstream event id, and the text is whole, once.
func TestResumeAfterRestart(t *testing.T) {
	srv := adktest.New()
	srv.Resumable = true
	t.Cleanup(srv.Close)
	store := memory.New(nil)
	c := New(Config{URL: srv.URL, IDs: store})
	req := &bridge.Request{Model: "scripted", SessionID: "sess_1", Messages: []bridge.Message{user("cut:one two three four five six")}}
	call, err := c.Open(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	var committed []bridge.Event
	text := ""
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		committed = append(committed, ev)
		if ev.Kind == bridge.KindTextDelta {
			text += ev.Text
			if len(text) > 6 {
				break // the process dies here
			}
		}
	}
	c2 := New(Config{URL: srv.URL, IDs: store}) // the next process
	call, err = c2.Resume(t.Context(), req, &bridge.Run{ID: "run_1", Model: "scripted"}, committed)
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, call)
	if text+r.text != "one two three four five six" || r.final.Status != bridge.StatusCompleted {
		t.Fatalf("before %q + after %q; final %+v", text, r.text, r.final)
	}
	if _, err := c2.Resume(t.Context(), &bridge.Request{SessionID: "unknown"}, &bridge.Run{ID: "run_2", Model: "scripted"}, nil); bridge.ErrorCode(err) != bridge.CodeUnsupported {
		t.Errorf("unknown session: %v", err)
	}
}

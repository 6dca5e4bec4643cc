package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// readWSRun reads a channel's messages over a WebSocket until the end
// frame of a run, as SSE frames (so the adapter's reader reads them).
func readWSRun(ctx context.Context, t *testing.T, c *websocket.Conn, until func([]sseFrame) bool) []sseFrame {
	t.Helper()
	var out []sseFrame
	for i := 0; i < 10000 && !until(out); i++ {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v after %d frames", err, len(out))
		}
		var m struct {
			ID    string          `json:"id"`
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		decodeJSON(t, "message", b, &m)
		data := string(m.Data)
		var s string
		if json.Unmarshal(m.Data, &s) == nil {
			data = s // [DONE]
		}
		out = append(out, sseFrame{id: m.ID, hasID: m.ID != "", event: m.Event, data: data})
	}
	return out
}

// TestSubscribeWebSocket: the session channel over a WebSocket, for the
// OpenAI-compatible adapter: an accepted run's first message is its start
// frame with the client's local id, its answer arrives whole between its
// start and end, and a channel cut mid-run resumes from its last id
// (Last-Event-ID on the new connection) with no gap and no duplicate, and
// another client's run of the session (a plain streamed request) comes on
// it too.
func TestSubscribeWebSocket(t *testing.T) {
	m := newConvModel(t)
	c := &chain{upstream: "openai", front: convBridge(t, Upstream{Name: "model", Dialect: "openai", URL: m.baseURL()}), model: m}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	a := openaiAdapter{}
	s := a.session(ctx, t, c, convID("ws"))
	wsURL := "ws" + strings.TrimPrefix(c.front, "http") + "/v1/sessions/" + s.id + "/events?format=openai"
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()

	ended := func(f []sseFrame) bool { return len(f) > 0 && f[len(f)-1].event == "bridge.run.ended" }
	p1 := sayPrompt("over a websocket " + s.id)
	local := convID("local")
	run1, _ := acceptedRun(ctx, t, a, c, s, s.id, p1, local)
	frames := readWSRun(ctx, t, conn, ended)
	var start struct {
		RunID       string `json:"run_id"`
		ClientRunID string `json:"client_run_id"`
	}
	decodeJSON(t, "start", []byte(frames[0].data), &start)
	if frames[0].event != "bridge.run.started" || start.RunID != run1 || start.ClientRunID != local {
		t.Fatalf("first message %+v, want the start of run %s with client_run_id %s", frames[0], run1, local)
	}
	if got, want := a.answer(frames[1:len(frames)-1]), c.answer(p1, 1); got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	s.record(p1, c.answer(p1, 1))

	// Cut mid-run, resume with Last-Event-ID.
	p2 := sayPrompt(convSlowAnswer(s.id, 30))
	acceptedRun(ctx, t, a, c, s, s.id, p2, convID("local"))
	head := readWSRun(ctx, t, conn, func(f []sseFrame) bool { return len(f) > 1 && wordCount(a.answer(f[1:])) >= 3 })
	conn.CloseNow()
	last := head[len(head)-1].id
	conn, _, err = websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Last-Event-ID": {last}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	tail := readWSRun(ctx, t, conn, ended)
	whole := append(append([]sseFrame(nil), head[1:]...), tail[:len(tail)-1]...)
	if got, want := a.answer(whole), c.answer(p2, 2); got != want {
		t.Errorf("cut at %s and resumed: answer %q, want %q", last, got, want)
	}
	seen := map[string]bool{}
	for _, f := range whole {
		if f.hasID && seen[f.id] {
			t.Errorf("frame %s twice across the cut", f.id)
		}
		seen[f.id] = true
	}

	s.record(p2, c.answer(p2, 2))

	// Another client's run of the session.
	p3 := sayPrompt("another client " + s.id)
	other := a.start(ctx, t, c, s, p3, turnOpts{})
	otherFrames := other.all(t)
	otherRun := a.runOf(&convStream{resp: other.resp, frames: otherFrames})
	frames = readWSRun(ctx, t, conn, ended)
	var info struct {
		RunID       string `json:"run_id"`
		ClientRunID string `json:"client_run_id"`
	}
	decodeJSON(t, "start", []byte(frames[0].data), &info)
	if frames[0].event != "bridge.run.started" || info.RunID != otherRun || otherRun == "" {
		t.Fatalf("after the other client's run: first message %+v, want the start of its run %q", frames[0], otherRun)
	}
	if got, want := a.answer(frames[1:len(frames)-1]), c.answer(p3, 3); got != want {
		t.Errorf("the other client's run on the channel: answer %q, want %q", got, want)
	}
}

package hermes

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound/hermes/hermestest"
	"github.com/bridge-dev/bridge/storage/memory"
)

// open starts c's call for a user message in session "s".
func open(t *testing.T, c *Client, msg string) *bridge.Call {
	t.Helper()
	call, err := c.Open(t.Context(), &bridge.Request{SessionID: "s", Messages: []bridge.Message{user(msg)}})
	if err != nil {
		t.Fatal(err)
	}
	return call
}

func user(s string) bridge.Message {
	return bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(s)}}
}

func text(evs []bridge.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == bridge.KindTextDelta {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func final(evs []bridge.Event) *bridge.Final {
	for _, ev := range evs {
		if ev.Kind == bridge.KindFinal {
			return ev.Final
		}
	}
	return nil
}

func TestClient(t *testing.T) {
	srv := hermestest.New()
	defer srv.Close()
	srv.Key = "k"
	ids := memory.New(nil)
	c := New(Config{Name: "h", URL: srv.URL, APIKey: "k", IDs: ids})
	ctx := t.Context()

	// A tool turn: the agent's tool as its own activity, then the answer.
	call, err := c.Open(ctx, &bridge.Request{SessionID: "local-1", Messages: []bridge.Message{
		{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart("be brief")}}, user("tool please")}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := bridgetest.Collect(call.Events)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(evs); got != "you said: tool please" {
		t.Errorf("text %q", got)
	}
	var started, result bool
	for _, ev := range evs {
		switch ev.Kind {
		case bridge.KindToolCallDone:
			started = ev.Source == bridge.SourceAgent && ev.ToolCall.Name == "terminal" && ev.ToolCall.Arguments == `{"command":"ls"}`
		case bridge.KindToolResult:
			result = ev.Source == bridge.SourceAgent && ev.ToolResult.Name == "terminal"
		case bridge.KindMessageStarted:
			if !strings.HasPrefix(ev.ResponseID, "run_") {
				t.Errorf("message_started names no upstream run: %+v", ev)
			}
		}
	}
	if !started || !result {
		t.Errorf("tool activity missing: %+v", evs)
	}
	if f := final(evs); f == nil || f.Status != bridge.StatusCompleted || f.Usage.Total() != 15 {
		t.Errorf("final %+v", f)
	}

	// The next turn reuses the upstream session and sends only the new input.
	call, err = c.Open(ctx, &bridge.Request{SessionID: "local-1", Messages: []bridge.Message{
		user("tool please"), {Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("you said: tool please")}}, user("again")}})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err = bridgetest.Collect(call.Events); err != nil || text(evs) != "you said: again" {
		t.Fatalf("%q %v", text(evs), err)
	}
	chats, _, _ := srv.Snapshot()
	if srv.Sessions() != 1 || len(chats) != 2 || chats[1]["message"] != "again" || chats[0]["system_message"] != "be brief" {
		t.Errorf("sessions %d chats %v", srv.Sessions(), chats)
	}

	// The upstream forgot the session: a new one, earlier turns as text.
	srv.Forget("hs-1")
	call, err = c.Open(ctx, &bridge.Request{SessionID: "local-1", Messages: []bridge.Message{
		user("hi"), {Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("hello")}}, user("more")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = bridgetest.Collect(call.Events); err != nil {
		t.Fatal(err)
	}
	chats, _, _ = srv.Snapshot()
	if m := chats[len(chats)-1]["message"].(string); !strings.Contains(m, "user: hi") || !strings.HasSuffix(m, "more") {
		t.Errorf("message %q", m)
	}
	if len(call.Dropped) == 0 {
		t.Error("no dropped note for the inlined turns")
	}
}

func TestClientFailAndAuth(t *testing.T) {
	srv := hermestest.New()
	defer srv.Close()
	c := New(Config{URL: srv.URL, IDs: memory.New(nil)})
	call := open(t, c, "think and fail")
	evs, err := bridgetest.Collect(call.Events)
	if err != nil {
		t.Fatal(err)
	}
	if f := final(evs); f == nil || f.Status != bridge.StatusFailed || !strings.Contains(f.Reason, "provider failed") {
		t.Errorf("final %+v", f)
	}
	if evs[1].Kind != bridge.KindReasoningDelta || evs[1].Text != "pondering" {
		t.Errorf("no reasoning: %+v", evs)
	}
	srv.Key = "right"
	_, err = New(Config{URL: srv.URL, APIKey: "wrong"}).Open(t.Context(), &bridge.Request{SessionID: "x", Messages: []bridge.Message{user("hi")}})
	if bridge.ErrorCode(err) != bridge.CodeUnauthenticated || strings.Contains(err.Error(), "wrong") {
		t.Errorf("err %v", err)
	}
}

func TestClientStop(t *testing.T) {
	srv := hermestest.New()
	defer srv.Close()
	c := New(Config{URL: srv.URL, IDs: memory.New(nil)})
	call := open(t, c, "slow please")
	var evs []bridge.Event
	n := 0
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Kind == bridge.KindTextDelta {
			if n++; n == 3 {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				if err := call.Cancel(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
			}
		}
	}
	if f := final(evs); f == nil || f.Status != bridge.StatusCancelled {
		t.Errorf("final %+v", f)
	}
	if _, stops, _ := srv.Snapshot(); len(stops) != 1 {
		t.Errorf("stops %v", stops)
	}
	// The upstream run stopped: its status is cancelled.
	resp, err := http.Get(srv.URL + "/v1/runs/" + evs[0].ResponseID)
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Status string }
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Status != "cancelled" {
		t.Errorf("the upstream run is %q", st.Status)
	}
	// A steer through the call reaches the running upstream run; after
	// the end it is refused.
	call, err = c.Open(t.Context(), &bridge.Request{SessionID: "s2", Messages: []bridge.Message{user("slow again")}})
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == bridge.KindTextDelta {
			if n++; n == 2 {
				if err := call.Steer(t.Context(), user("faster")); err != nil {
					t.Fatal(err)
				}
				if err := call.Cancel(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if _, _, steers := srv.Snapshot(); len(steers) != 1 || steers[0] != "faster" {
		t.Errorf("steers %v", steers)
	}
	if err := call.Steer(t.Context(), user("late")); bridge.ErrorCode(err) != bridge.CodeConflict {
		t.Errorf("late steer: %v", err)
	}
	if err := c.Steer(t.Context(), "run_nope", "x"); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("steer %v", err)
	}
}

// TestClientResume: a session stream that breaks mid-turn is resumed after
// the last frame read (Last-Event-ID "<run_id>:<seq>"): the answer once,
// completed. Over a server that cannot resume (Hermes' own), the call
// settles from the run's status: the rest of its output, its usage and
// outcome, and Dropped says the events in between are lost.
func TestClientResume(t *testing.T) {
	// cut reads a call whose first chat stream the server cuts after n
	// frames.
	cut := func(resumable bool, n int, msg string) (*hermestest.Server, *bridge.Call, []bridge.Event) {
		t.Helper()
		srv := hermestest.New()
		t.Cleanup(srv.Close)
		srv.Resumable, srv.CutAfter = resumable, n
		c := New(Config{URL: srv.URL, IDs: memory.New(nil)})
		call := open(t, c, msg)
		evs, err := bridgetest.Collect(call.Events)
		if err != nil {
			t.Fatal(err)
		}
		return srv, call, evs
	}
	srv, _, evs := cut(true, 4, "tell me one two three four")
	if got := text(evs); got != "you said: tell me one two three four" {
		t.Errorf("text %q", got)
	}
	if f := final(evs); f == nil || f.Status != bridge.StatusCompleted {
		t.Errorf("final %+v", f)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		if ev.Kind == bridge.KindTextDelta && seen[ev.UpstreamID] {
			t.Errorf("frame %s twice", ev.UpstreamID)
		}
		seen[ev.UpstreamID] = true
	}
	if r := srv.Resumes(); len(r) != 1 || !strings.HasSuffix(r[0], ":4") {
		t.Errorf("resumes %q", r)
	}

	_, call, evs := cut(false, 4, "tell me one two three four")
	if got := text(evs); got != "you said: tell me one two three four" {
		t.Errorf("settled text %q", got)
	}
	if f := final(evs); f == nil || f.Status != bridge.StatusCompleted || f.Usage.Total() != 15 {
		t.Errorf("settled final %+v", f)
	}
	if len(call.Dropped) != 1 || !strings.Contains(call.Dropped[0], "after its stream broke") {
		t.Errorf("dropped %q", call.Dropped)
	}

	// Its run failed upstream meanwhile: the call fails with its error.
	_, _, evs = cut(false, 2, "please fail")
	if f := final(evs); f == nil || f.Status != bridge.StatusFailed {
		t.Errorf("settled final %+v", f)
	}
}

// TestClientResumeAfterRestart: Resume, given the events a bridge had
// committed of a run, reads the rest of the upstream run after them: the
// answer once, the agent's tool result paired with its call (the frame
// names no call id), completed.
func TestClientResumeAfterRestart(t *testing.T) {
	srv := hermestest.New()
	defer srv.Close()
	srv.Resumable = true
	ids := memory.New(nil)
	c := New(Config{Name: "h", URL: srv.URL, IDs: ids})
	call := open(t, c, "tool and one two three")
	var committed []bridge.Event
	upRun := ""
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		committed = append(committed, ev)
		if ev.Kind == bridge.KindMessageStarted {
			upRun = ev.ResponseID
		}
		if ev.Kind == bridge.KindToolCallDone {
			break // the bridge dies here, before the tool's result
		}
	}
	if _, err := c.Resume(t.Context(), &bridge.Request{}, &bridge.Run{ID: "r1", UpstreamRunID: upRun}, committed); bridge.ErrorCode(err) != bridge.CodeUnsupported {
		t.Errorf("resume without a session: %v", err)
	}
	call, err := c.Resume(t.Context(), &bridge.Request{SessionID: "s"}, &bridge.Run{ID: "r1", UpstreamRunID: upRun}, committed)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := bridgetest.Collect(call.Events)
	if err != nil {
		t.Fatal(err)
	}
	all := append(committed, rest...)
	if got := text(all); got != "you said: tool and one two three" {
		t.Errorf("text %q", got)
	}
	results := 0
	for _, ev := range all {
		if ev.Kind == bridge.KindToolResult {
			results++
			if ev.ToolResult.CallID != all[2].ToolCall.ID {
				t.Errorf("the result of %s, the call was %s", ev.ToolResult.CallID, all[2].ToolCall.ID)
			}
		}
	}
	if f := final(rest); results != 1 || f == nil || f.Status != bridge.StatusCompleted || f.Usage.Total() != 15 {
		t.Errorf("results %d final %+v", results, f)
	}
	// The cursor is the last committed frame's SSE id, which the event
	// kept as its upstream id.
	if r := srv.Resumes(); len(r) != 1 || r[0] != committed[len(committed)-1].UpstreamID || !strings.HasPrefix(r[0], upRun+":") {
		t.Errorf("resumes %q", r)
	}
}

// TestClientSettleAfterRestart: over Hermes' own server (no resumable
// stream), Resume after a restart settles the run from its status.
func TestClientSettleAfterRestart(t *testing.T) {
	srv := hermestest.New()
	defer srv.Close()
	c := New(Config{Name: "h", URL: srv.URL, IDs: memory.New(nil)})
	call := open(t, c, "one two three")
	var committed []bridge.Event
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		committed = append(committed, ev)
		if ev.Kind == bridge.KindTextDelta {
			break // the bridge dies here
		}
	}
	call, err := c.Resume(t.Context(), &bridge.Request{SessionID: "s"}, &bridge.Run{ID: "r1", UpstreamRunID: committed[0].ResponseID}, committed)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := bridgetest.Collect(call.Events)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(append(committed, rest...)); got != "you said: one two three" {
		t.Errorf("text %q", got)
	}
	if f := final(rest); f == nil || f.Status != bridge.StatusCompleted || len(call.Dropped) != 1 {
		t.Errorf("final %+v dropped %q", f, call.Dropped)
	}
}

// TestClientHistory: a fresh upstream session of a server that takes
// conversation_history (a bridge) starts from the earlier turns as
// messages, and the turn's message is only the new input; nothing is
// dropped.
func TestClientHistory(t *testing.T) {
	srv := hermestest.New()
	defer srv.Close()
	srv.Features = map[string]bool{"conversation_history": true}
	c := New(Config{URL: srv.URL, IDs: memory.New(nil)})
	call, err := c.Open(t.Context(), &bridge.Request{SessionID: "s", Messages: []bridge.Message{
		user("hi"), {Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("hello")}}, user("more")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bridgetest.Collect(call.Events); err != nil {
		t.Fatal(err)
	}
	chats, _, _ := srv.Snapshot()
	h, _ := chats[0]["conversation_history"].([]any)
	if chats[0]["message"] != "more" || len(h) != 2 || len(call.Dropped) != 0 {
		t.Fatalf("chat %v, dropped %q", chats[0], call.Dropped)
	}
	if m := h[1].(map[string]any); m["role"] != "assistant" || m["content"] != "hello" {
		t.Errorf("history %v", h)
	}
}

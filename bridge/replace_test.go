package bridge_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// answering is an upstream that answers each call "a<n>" (n from 1).
func answering() *bridgetest.Upstream {
	return &bridgetest.Upstream{Script: func(call int, _ *bridge.Request) []bridge.Event {
		return bridgetest.TextEvents("a" + strconv.Itoa(call+1))
	}}
}

func user(text string) bridge.Message {
	return bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(text)}}
}

func assistant(text string) bridge.Message {
	return bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart(text)}}
}

// texts renders messages as "role:text".
func texts(msgs []bridge.Message) []string {
	out := make([]string, len(msgs))
	for i := range msgs {
		out[i] = string(msgs[i].Role) + ":" + msgs[i].Text()
	}
	return out
}

// turn runs req to its end and returns its run.
func turn(t *testing.T, e *bridge.Engine, ctx context.Context, req *bridge.Request) *bridge.Run {
	t.Helper()
	run, err := e.Start(ctx, req)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	_, events, err := e.Subscribe(ctx, run.ID, run.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range events {
		if err != nil {
			t.Fatal(err)
		}
	}
	return run
}

func diffStrings(t *testing.T, what string, want, got []string) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// TestReplaceFromStateful: a session's input with ReplaceFrom discards
// that run and the later ones: the upstream gets the kept transcript and
// the new input, the history leaves them out (shows them, marked, when
// asked), the store keeps them, and the upstream context the session had
// is forgotten.
func TestReplaceFromStateful(t *testing.T) {
	up := answering()
	e, store := newEngine(t, up)
	ctx := t.Context()
	in := func(text, replace string) *bridge.Request {
		return &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", ReplaceFrom: replace, Messages: []bridge.Message{user(text)}}
	}
	turn(t, e, ctx, in("q1", ""))
	r2 := turn(t, e, ctx, in("q2", ""))
	r3 := turn(t, e, ctx, in("q3", ""))
	if err := store.PutID(ctx, bridge.IDMapping{Kind: bridge.IDSession, Scope: up.Name(), Local: "s1", Remote: "ctx_old"}); err != nil {
		t.Fatal(err)
	}

	r4 := turn(t, e, ctx, in("q2 again", r2.ID))
	reqs := up.Requests()
	diffStrings(t, "upstream transcript", []string{"user:q1", "assistant:a1", "user:q2 again"}, texts(reqs[len(reqs)-1].Messages))
	if r4.ID == r2.ID || r4.ID == r3.ID {
		t.Errorf("the new input ran as run %s, not a new run", r4.ID)
	}
	kept, _, _ := store.Messages(ctx, "", "s1", 0, 0)
	diffStrings(t, "transcript", []string{"user:q1", "assistant:a1", "user:q2 again", "assistant:a4"}, texts(kept))
	all, _, _ := store.AllMessages(ctx, "", "s1", 0, 0)
	if len(all) != 8 {
		t.Errorf("the store holds %d messages, want 8 (the discarded kept)", len(all))
	}
	for id, want := range map[string]bool{r2.ID: true, r3.ID: true, r4.ID: false} {
		r, err := e.Run(ctx, id)
		if err != nil || r.Superseded != want {
			t.Errorf("run %s superseded = %v (%v), want %v", id, r != nil && r.Superseded, err, want)
		}
	}
	if remote, _ := store.RemoteID(ctx, bridge.IDSession, up.Name(), "s1"); remote != "" {
		t.Errorf("the session's upstream context is still mapped to %q", remote)
	}

	page, err := e.History(ctx, "s1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	diffStrings(t, "history", texts(kept), texts(page.Messages))
	if len(page.Runs) != 2 {
		t.Errorf("history runs = %d, want 2", len(page.Runs))
	}
	page, err = e.QueryHistory(ctx, "s1", bridge.HistoryQuery{Superseded: true})
	if err != nil {
		t.Fatal(err)
	}
	diffStrings(t, "history with the superseded", texts(all), texts(page.Messages))
	var marked []string
	for _, r := range page.Runs {
		if r.Superseded {
			marked = append(marked, r.ID)
		}
	}
	diffStrings(t, "runs marked", []string{r2.ID, r3.ID}, marked)

	// The discarded run cannot be replaced again.
	if _, err := e.Start(ctx, in("q2 once more", r3.ID)); bridge.ErrorCode(err) != bridge.CodeConflict {
		t.Errorf("replacing a superseded run: %v, want a conflict", err)
	}
}

// TestFullTranscriptDivergence: a stateless client's transcript that
// stops short of the stored one (a regenerate) or changes a turn (an
// edit) discards the runs from there on; no message is stored twice.
func TestFullTranscriptDivergence(t *testing.T) {
	up := answering()
	e, store := newEngine(t, up)
	ctx := t.Context()
	full := func(msgs ...bridge.Message) *bridge.Request {
		return &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", Full: true, Messages: msgs}
	}
	turn(t, e, ctx, full(user("q1")))
	r2 := turn(t, e, ctx, full(user("q1"), assistant("a1"), user("q2")))

	// Regenerate: the same transcript again, without the answer.
	r3 := turn(t, e, ctx, full(user("q1"), assistant("a1"), user("q2")))
	kept, _, _ := store.Messages(ctx, "", "s1", 0, 0)
	diffStrings(t, "after a regenerate", []string{"user:q1", "assistant:a1", "user:q2", "assistant:a3"}, texts(kept))
	if msgs, _ := store.RunMessages(ctx, r3.ID); len(msgs) != 2 {
		t.Errorf("the regenerated run stored %v, want its input and answer", texts(msgs))
	}

	// Edit the first question.
	r4 := turn(t, e, ctx, full(user("q1 edited")))
	kept, _, _ = store.Messages(ctx, "", "s1", 0, 0)
	diffStrings(t, "after an edit", []string{"user:q1 edited", "assistant:a4"}, texts(kept))
	all, _, _ := store.AllMessages(ctx, "", "s1", 0, 0)
	count := map[string]int{}
	for _, m := range all {
		count[m.RunID]++
	}
	if len(all) != 8 || count[r2.ID] != 2 || count[r3.ID] != 2 || count[r4.ID] != 2 {
		t.Errorf("stored messages %v by run %v: a turn is stored twice", texts(all), count)
	}
	for _, id := range []string{r2.ID, r3.ID} {
		if r, _ := e.Run(ctx, id); r == nil || !r.Superseded {
			t.Errorf("run %s is not superseded", id)
		}
	}
	reqs := up.Requests()
	diffStrings(t, "upstream transcript of the edit", []string{"user:q1 edited"}, texts(reqs[len(reqs)-1].Messages))
}

// TestReplaceFromRunning: a target still running is cancelled before it is
// discarded.
func TestReplaceFromRunning(t *testing.T) {
	started := make(chan struct{})
	up := &blockingFirst{started: started}
	e, store := newEngine(t, up)
	ctx := t.Context()
	r1, err := e.Start(ctx, &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", Detached: true, Messages: []bridge.Message{user("q1")}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first run never started")
	}
	r2 := turn(t, e, ctx, &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", ReplaceFrom: r1.ID, Messages: []bridge.Message{user("q1b")}})
	old, err := e.Run(ctx, r1.ID)
	if err != nil || !old.Superseded || old.Status != bridge.StatusCancelled {
		t.Errorf("the running target: %+v, %v; want cancelled and superseded", old, err)
	}
	kept, _, _ := store.Messages(ctx, "", "s1", 0, 0)
	diffStrings(t, "transcript", []string{"user:q1b", "assistant:done"}, texts(kept))
	if len(kept) > 0 && kept[0].RunID != r2.ID {
		t.Errorf("transcript of run %s, want %s", kept[0].RunID, r2.ID)
	}
	all, _, _ := store.AllMessages(ctx, "", "s1", 0, 0)
	diffStrings(t, "stored", []string{"user:q1", "assistant:partial", "user:q1b", "assistant:done"}, texts(all))
}

// blockingFirst answers its first call with "partial" and then waits for
// the call to be cancelled; later calls answer "done".
type blockingFirst struct {
	started chan struct{}
	calls   atomic.Int32
}

func (u *blockingFirst) Name() string    { return "blocking" }
func (u *blockingFirst) Dialect() string { return "test" }
func (u *blockingFirst) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	first := u.calls.Add(1) == 1
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) {
		if !first {
			for _, ev := range bridgetest.TextEvents("done") {
				if !yield(ev, nil) {
					return
				}
			}
			return
		}
		for _, ev := range bridgetest.TextEvents("partial")[:2] { // message_started, the delta
			if !yield(ev, nil) {
				return
			}
		}
		close(u.started)
		<-ctx.Done()
		yield(bridge.Event{}, context.Cause(ctx))
	}}, nil
}

// TestReplaceFromNotFound: an unknown target, another principal's, or one
// of another session is not found, and nothing is discarded.
func TestReplaceFromNotFound(t *testing.T) {
	e, _ := newEngine(t, answering())
	alice := bridge.WithPrincipal(t.Context(), "alice")
	bob := bridge.WithPrincipal(t.Context(), "bob")
	r1 := turn(t, e, alice, &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", Messages: []bridge.Message{user("q1")}})
	turn(t, e, alice, &bridge.Request{Inbound: "test", Model: "m", SessionID: "s2", Messages: []bridge.Message{user("other")}})
	for _, tt := range []struct {
		name    string
		ctx     context.Context
		session string
		target  string
	}{
		{"unknown", alice, "s1", "run_nope"},
		{"another principal's", bob, "", r1.ID},
		{"another session's", alice, "s2", r1.ID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Start(tt.ctx, &bridge.Request{Inbound: "test", Model: "m", SessionID: tt.session, ReplaceFrom: tt.target,
				Messages: []bridge.Message{user("again")}})
			if bridge.ErrorCode(err) != bridge.CodeNotFound || !strings.Contains(err.Error(), tt.target) {
				t.Errorf("Start = %v, want not found naming %s", err, tt.target)
			}
		})
	}
	if r, _ := e.Run(alice, r1.ID); r == nil || r.Superseded {
		t.Errorf("run %s was discarded by a refused request", r1.ID)
	}
}

// TestFullTranscriptAgentTools: an agent upstream's own tool calls, stored
// with the answer but never shown to a Chat Completions client, do not make
// the client's resent transcript diverge.
func TestFullTranscriptAgentTools(t *testing.T) {
	up := &bridgetest.Upstream{Script: func(call int, _ *bridge.Request) []bridge.Event {
		evs := bridgetest.TextEvents("a" + strconv.Itoa(call+1))
		tool := bridge.Event{Kind: bridge.KindToolCallDone, Source: bridge.SourceAgent,
			ToolCall: &bridge.ToolCall{ID: "agent_" + strconv.Itoa(call), Name: "search", Arguments: "{}"}}
		return append(evs[:1], append([]bridge.Event{tool}, evs[1:]...)...)
	}}
	e, store := newEngine(t, up)
	ctx := t.Context()
	full := func(msgs ...bridge.Message) *bridge.Request {
		return &bridge.Request{Inbound: "test", Model: "m", SessionID: "s1", Full: true, Messages: msgs}
	}
	r1 := turn(t, e, ctx, full(user("q1")))
	turn(t, e, ctx, full(user("q1"), assistant("a1"), user("q2")))
	if r, _ := e.Run(ctx, r1.ID); r == nil || r.Superseded {
		t.Errorf("the first run was discarded by a transcript that only lacks the agent's tool calls")
	}
	all, _, _ := store.AllMessages(ctx, "", "s1", 0, 0)
	if len(all) != 4 {
		t.Errorf("stored %v, want 4 messages", texts(all))
	}
}

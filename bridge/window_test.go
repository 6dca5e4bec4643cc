package bridge_test

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// windowEngine is newEngine with a live window of window events.
func windowEngine(t *testing.T, up bridge.Upstream, window int) *bridge.Engine {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := bridge.New(bridge.Config{Store: store, LiveEvents: window,
		Route: func(string) (bridge.Upstream, error) { return up, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(t.Context()); err != nil {
			t.Error(err)
		}
		store.Close()
	})
	return e
}

// TestLiveWindow: a live run keeps only its newest events in memory,
// however many it streams; subscribers that fell far behind it (from the
// start, from a cursor the window dropped, one that stopped reading for
// hundreds of events) get every event exactly once, in order, the seam
// between the store and the window crossed again and again; the history
// of the running run folds its whole turn; after the run, a replay is the
// same.
func TestLiveWindow(t *testing.T) {
	const window, n = 16, 600
	up := &chanUpstream{ch: make(chan bridge.Event)}
	e := windowEngine(t, up, window)
	req := userRequest("hi")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	send := func(ev bridge.Event) {
		t.Helper()
		select {
		case up.ch <- ev:
		case <-time.After(10 * time.Second):
			t.Fatal("the pump never took the next event")
		}
	}
	// A subscriber from the start that reads its first event and then
	// nothing for hundreds (the run keeps what it has yet to read, up to
	// LiveLag windows, then leaves it to the store), and one that reads a
	// few events at a time, falling further behind.
	_, lazy, err := e.Subscribe(t.Context(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, slow, err := e.Subscribe(t.Context(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	nextLazy, stopLazy := iter.Pull2(lazy)
	defer stopLazy()
	nextSlow, stopSlow := iter.Pull2(slow)
	defer stopSlow()
	check := func(name string, next func() (bridge.Event, error, bool), want *int64) {
		t.Helper()
		ev, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("%s: stream ended at %d: %v", name, *want-1, err)
		}
		if ev.Seq != *want {
			t.Fatalf("%s: seq %d, want %d", name, ev.Seq, *want)
		}
		if ev.Kind == bridge.KindTextDelta && ev.Text != word(ev.Seq) {
			t.Fatalf("%s: seq %d says %q, want %q", name, ev.Seq, ev.Text, word(ev.Seq))
		}
		*want++
	}
	lazyNext, slowNext := int64(1), int64(1)
	check("lazy", nextLazy, &lazyNext)
	send(bridge.Event{Kind: bridge.KindMessageStarted})
	most := 0
	for i := int64(3); i < n+3; i++ { // run_started is 1, message_started 2
		send(bridge.Event{Kind: bridge.KindTextDelta, Text: word(i)})
		if i%8 == 0 {
			waitSeq(t, e, run.ID, i)
			most = max(most, e.LiveEvents(run.ID))
		}
		if i%50 == 0 {
			check("slow", nextSlow, &slowNext)
		}
	}
	waitSeq(t, e, run.ID, n+2)
	const block = window // blocks are min(window, 256) events
	if most < bridge.LiveLag*window-block || most > bridge.LiveLag*window+block {
		t.Errorf("the live run held up to %d events; it keeps %d while a follower has yet to read them (%d, a block more at most)",
			most, bridge.LiveLag*window, window)
	}
	if held := e.LiveEvents(run.ID); held > window+2*block {
		t.Errorf("with its followers behind the window the run holds %d events, want %d and two blocks at most", held, window)
	}

	// A cursor the window dropped long ago, and the history of the run,
	// while it runs.
	_, mid, err := e.Subscribe(t.Context(), run.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	nextMid, stopMid := iter.Pull2(mid)
	defer stopMid()
	midNext := int64(101)
	page, err := e.History(t.Context(), run.SessionID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	for i := int64(3); i < n+3; i++ {
		said.WriteString(word(i))
	}
	if got := page.Messages[len(page.Messages)-1].Text(); got != said.String() || page.Runs[0].LastSeq != n+2 {
		t.Errorf("history of the running run: cursor %d, %d bytes of text (want %d, %d bytes)",
			page.Runs[0].LastSeq, len(got), n+2, said.Len())
	}

	// Each reads up to the live end; then more events arrive and each
	// reads them too.
	for lazyNext <= n+2 {
		check("lazy", nextLazy, &lazyNext)
	}
	for slowNext <= n+2 {
		check("slow", nextSlow, &slowNext)
	}
	for midNext <= n+2 {
		check("mid", nextMid, &midNext)
	}
	for i := int64(n + 3); i < n+3+3*window; i++ {
		send(bridge.Event{Kind: bridge.KindTextDelta, Text: word(i)})
		check("lazy", nextLazy, &lazyNext)
		check("slow", nextSlow, &slowNext)
		check("mid", nextMid, &midNext)
	}
	if held := e.LiveEvents(run.ID); held > window+2*block {
		t.Errorf("with its followers caught up the run holds %d events, want %d and two blocks at most", held, window)
	}
	close(up.ch)
	for _, s := range []struct {
		name string
		next func() (bridge.Event, error, bool)
		want *int64
	}{{"lazy", nextLazy, &lazyNext}, {"slow", nextSlow, &slowNext}, {"mid", nextMid, &midNext}} {
		for {
			ev, err, ok := s.next()
			if !ok {
				break
			}
			if err != nil || ev.Seq != *s.want {
				t.Fatalf("%s: seq %d (%v), want %d", s.name, ev.Seq, err, *s.want)
			}
			*s.want++
		}
		if last := *s.want - 1; last != n+3+3*window { // the final after the last delta
			t.Errorf("%s: ended at %d, want %d", s.name, last, n+3+3*window)
		}
	}
	if got := e.LiveEvents(run.ID); got != 0 {
		t.Errorf("an ended run still holds %d events", got)
	}
}

// word is the text of the delta with seq seq.
func word(seq int64) string { return fmt.Sprintf("w%d ", seq) }

// TestLiveWindowContinued: a run continued with the client's tool results
// starts its window from its newest stored events: a subscriber from the
// start reads the first step from the store and the second live, each
// event once.
func TestLiveWindowContinued(t *testing.T) {
	const window, n = 4, 40
	var args strings.Builder
	first := []bridge.Event{{Kind: bridge.KindMessageStarted},
		{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: "c1", Name: "f"}}}
	args.WriteString(`{"a":"`)
	for i := range n {
		frag := fmt.Sprintf("x%d", i)
		if i == 0 {
			frag = `{"a":"` + frag
		}
		first = append(first, bridge.Event{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: frag}})
		args.WriteString(fmt.Sprintf("x%d", i))
	}
	args.WriteString(`"}`)
	call := bridge.ToolCall{ID: "c1", Name: "f", Arguments: args.String()}
	first = append(first, bridge.Event{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: `"}`}},
		bridge.Event{Kind: bridge.KindToolCallDone, ToolCall: &call},
		bridge.Event{Kind: bridge.KindMessageDone},
		bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}})
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("a%d ", i)
	}
	live := &chanUpstream{ch: make(chan bridge.Event)}
	up := &stepsUpstream{steps: []bridge.Upstream{&bridgetest.Upstream{Events: first}, live}}
	e := windowEngine(t, up, window)
	run, err := e.Start(t.Context(), userRequest("go"))
	if err != nil {
		t.Fatal(err)
	}
	step := bridgetest.Drain(t, e, run)
	next := userRequest("go")
	next.SessionID = run.SessionID
	next.Messages = append(next.Messages,
		bridge.Message{Role: bridge.RoleAssistant, NullContent: true, ToolCalls: []bridge.ToolCall{call}},
		bridge.Message{Role: bridge.RoleTool, ToolCallID: "c1", Parts: []bridge.Part{bridge.TextPart("ok")}})
	again, err := e.Start(t.Context(), next)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != run.ID {
		t.Fatalf("the tool results started run %s, not continued %s", again.ID, run.ID)
	}
	if held := e.LiveEvents(run.ID); held == 0 || held > window {
		t.Errorf("the continued run holds %d events, its window is %d", held, window)
	}
	_, all, err := e.Subscribe(t.Context(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, ev := range bridgetest.TextEvents(words...) {
			if ev.Kind != bridge.KindFinal {
				live.ch <- ev
			}
		}
		close(live.ch)
	}()
	got := collect(t, all)
	deltas, argDeltas := 0, 0
	for i, ev := range got {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		switch ev.Kind {
		case bridge.KindTextDelta:
			deltas++
		case bridge.KindToolCallDelta:
			argDeltas++
		}
	}
	if len(got) <= len(step) || deltas != n || argDeltas != n+1 {
		t.Errorf("%d events (the first step %d), %d text and %d argument deltas (want %d, %d)",
			len(got), len(step), deltas, argDeltas, n, n+1)
	}
	if last := got[len(got)-1]; last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusCompleted {
		t.Errorf("the continued run ends with %+v", last)
	}
}

// stepsUpstream answers its nth call with steps[n].
type stepsUpstream struct {
	steps []bridge.Upstream
	calls atomic.Int64
}

func (u *stepsUpstream) Name() string    { return "steps" }
func (u *stepsUpstream) Dialect() string { return "test" }
func (u *stepsUpstream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	n := int(u.calls.Add(1)) - 1
	return u.steps[min(n, len(u.steps)-1)].Open(ctx, req)
}

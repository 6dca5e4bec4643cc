package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// newEngine returns an engine over a real SQLite file and up: the engine's
// tests hold it to what it promises over the store it ships with.
func newEngine(t *testing.T, up bridge.Upstream) (*bridge.Engine, *sqlite.Store) {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bridgetest.NewEngine(t, store, up), store
}

func userRequest(text string) *bridge.Request {
	return &bridge.Request{Inbound: "test", Model: "m", Full: true,
		Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(text)}}}}
}

// collect ranges over a stream to its end.
func collect(t *testing.T, s bridge.Stream) []bridge.Event {
	t.Helper()
	var out []bridge.Event
	for ev, err := range s {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

func TestEventsAreCommittedBeforeTheyAreSeen(t *testing.T) {
	words := make([]string, 200)
	for i := range words {
		words[i] = fmt.Sprintf(" w%d", i)
	}
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents(words...)}
	e, store := newEngine(t, up)
	run, err := e.Start(t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, events, err := e.Subscribe(t.Context(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	var text strings.Builder
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != seq+1 {
			t.Fatalf("seq %d after %d", ev.Seq, seq)
		}
		seq = ev.Seq
		stored, err := store.Events(t.Context(), run.ID, ev.Seq-1, 1)
		if err != nil || len(stored) != 1 || stored[0].Kind != ev.Kind {
			t.Fatalf("event %d seen before it was committed (stored %v, err %v)", ev.Seq, stored, err)
		}
		text.WriteString(ev.Text)
	}
	if got, want := text.String(), strings.Join(words, ""); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	got, err := e.Run(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != bridge.StatusCompleted || got.LastSeq != seq || got.UpstreamRunID != "resp-1" {
		t.Errorf("run = status %s last_seq %d upstream %q, want completed %d resp-1", got.Status, got.LastSeq, got.UpstreamRunID, seq)
	}
}

// TestSubscribeSeam subscribes at every cursor while the run is producing,
// with several subscribers at once: each gets exactly the events after its
// cursor, none missing and none twice.
func TestSubscribeSeam(t *testing.T) {
	const n = 40
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d ", i)
	}
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents(words...), Gate: gate}
	e, _ := newEngine(t, up)
	run, err := e.Start(t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	total := int64(len(up.Events)) + 1 // plus run_started; the upstream final becomes the engine's
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(up.Events))
	for i := range up.Events {
		// Subscribe from a few cursors, then let one more event out.
		for _, after := range []int64{0, int64(i), int64(i) + 1, int64(i) + 5} {
			_, events, err := e.Subscribe(t.Context(), run.ID, after)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := after + 1
				for ev, err := range events {
					if err != nil {
						errs <- err
						return
					}
					if ev.Seq != want {
						errs <- fmt.Errorf("after %d: got seq %d, want %d", after, ev.Seq, want)
						return
					}
					want++
				}
				if want != max(total+1, after+1) {
					errs <- fmt.Errorf("after %d: stream ended at %d, want %d", after, want-1, total)
				}
			}()
		}
		select {
		case gate <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatal("upstream never asked for the next event")
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// After the run: a replay from the store is the same sequence.
	_, events, err := e.Subscribe(t.Context(), run.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, events)
	if int64(len(got)) != total-3 || got[0].Seq != 4 || got[len(got)-1].Kind != bridge.KindFinal {
		t.Errorf("replay after 3: %d events from seq %d", len(got), got[0].Seq)
	}
}

func TestAbort(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b", "c"), Gate: gate}
	e, _ := newEngine(t, up)
	req := userRequest("hi")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{} // message_started
	gate <- struct{}{} // "a"
	got, err := e.Abort(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != bridge.StatusCancelled {
		t.Errorf("status after abort = %s", got.Status)
	}
	again, err := e.Abort(t.Context(), run.ID)
	if err != nil || again.Status != bridge.StatusCancelled || again.LastSeq != got.LastSeq {
		t.Errorf("second abort = %+v, %v; want the same cancelled run", again, err)
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	evs := collect(t, events)
	last := evs[len(evs)-1]
	if last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusCancelled || last.Final.Reason == "" {
		t.Errorf("last event = %+v", last)
	}
}

func TestStatelessClientDisconnectCancels(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b"), Gate: gate}
	e, _ := newEngine(t, up)
	ctx, cancel := context.WithCancel(t.Context())
	run, err := e.Start(ctx, userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	evs := collect(t, events)
	f := evs[len(evs)-1].Final
	if f == nil || f.Status != bridge.StatusCancelled || f.Reason != "client disconnected" {
		t.Errorf("final = %+v, want cancelled: client disconnected", f)
	}
}

func TestDetachedRunSurvivesDisconnect(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b"), Gate: gate}
	e, _ := newEngine(t, up)
	ctx, cancel := context.WithCancel(t.Context())
	req := userRequest("hi")
	req.Detached = true
	run, err := e.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range 5 {
		gate <- struct{}{}
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	evs := collect(t, events)
	if f := evs[len(evs)-1].Final; f == nil || f.Status != bridge.StatusCompleted {
		t.Errorf("final = %+v, want completed", f)
	}
}

func TestUpstreamErrorBeforeFirstByte(t *testing.T) {
	up := &bridgetest.Upstream{OpenErr: &bridge.Error{Code: bridge.CodeRateLimited, Message: "slow down", Status: 429}}
	e, _ := newEngine(t, up)
	run, err := e.Start(t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	evs := collect(t, events)
	f := evs[len(evs)-1].Final
	if f == nil || f.Status != bridge.StatusFailed || f.Error == nil || f.Error.Status != 429 || f.Error.Code != bridge.CodeRateLimited {
		t.Errorf("final = %+v", f)
	}
}

// refusing is an upstream that refuses every call before it is made (an
// open circuit breaker), as a bridge.Admitter.
type refusing struct {
	bridgetest.Upstream
	err error
}

func (r *refusing) Admit() error { return r.err }

// TestRefusedBeforeARun: a call the upstream refuses before it is made
// (Admit) fails Start with that error, and leaves no run behind.
func TestRefusedBeforeARun(t *testing.T) {
	open := &bridge.Error{Code: bridge.CodeUnavailable, Message: "its circuit breaker is open", RetryAfter: time.Second}
	up := &refusing{err: open}
	e, store := newEngine(t, up)
	run, err := e.Start(t.Context(), userRequest("hi"))
	if run != nil || !errors.Is(err, open) {
		t.Fatalf("Start = %+v, %v; want the refusal", run, err)
	}
	if runs, err := store.ListRuns(t.Context(), bridge.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("runs after a refusal: %d, %v; want none", len(runs), err)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("the upstream got %d calls", n)
	}
	// Admitted again, the same request runs.
	up.err = nil
	up.Events = bridgetest.TextEvents("ok")
	run, err = e.Start(t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	if evs := collect(t, events); evs[len(evs)-1].Final.Status != bridge.StatusCompleted {
		t.Errorf("admitted run ended %+v", evs[len(evs)-1].Final)
	}
}

func TestUsageIsMergedNotOverwritten(t *testing.T) {
	evs := bridgetest.TextEvents("x")
	fin := evs[len(evs)-1]
	evs = append(evs[:len(evs)-1],
		bridge.Event{Kind: bridge.KindUsage, Usage: &bridge.Usage{InputTokens: bridge.Int64(7), OutputTokens: bridge.Int64(3)}},
		bridge.Event{Kind: bridge.KindUsage, Usage: &bridge.Usage{InputTokens: bridge.Int64(0), ReasoningTokens: bridge.Int64(2)}},
		fin)
	e, _ := newEngine(t, &bridgetest.Upstream{Events: evs})
	run, _ := e.Start(t.Context(), userRequest("hi"))
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	collect(t, events)
	got, _ := e.Run(t.Context(), run.ID)
	want := bridge.Usage{InputTokens: bridge.Int64(7), OutputTokens: bridge.Int64(3), ReasoningTokens: bridge.Int64(2)}
	if diff := cmp.Diff(want, got.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

// TestToolLoopIsOneRun: a run that stops for client tool calls waits in
// input_required; the next request carrying exactly those results continues
// the same run, with seqs that go on.
func TestToolLoopIsOneRun(t *testing.T) {
	call := bridge.ToolCall{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`}
	up := &bridgetest.Upstream{Script: func(n int, req *bridge.Request) []bridge.Event {
		if n == 0 {
			return []bridge.Event{
				{Kind: bridge.KindMessageStarted},
				{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: call.ID, Name: call.Name}},
				{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: call.Arguments}},
				{Kind: bridge.KindToolCallDone, ToolCall: &call},
				{Kind: bridge.KindMessageDone},
				{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}},
			}
		}
		return bridgetest.TextEvents("sunny")
	}}
	e, _ := newEngine(t, up)
	req := userRequest("weather?")
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	first := collect(t, events)
	if f := first[len(first)-1].Final; f.Status != bridge.StatusInputRequired {
		t.Fatalf("first step final = %+v", f)
	}

	next := userRequest("weather?")
	next.SessionID = run.SessionID
	next.Messages = append(next.Messages,
		bridge.Message{Role: bridge.RoleAssistant, NullContent: true, ToolCalls: []bridge.ToolCall{call}},
		bridge.Message{Role: bridge.RoleTool, ToolCallID: "call_1", Parts: []bridge.Part{bridge.TextPart("sunny")}})
	run2, err := e.Start(t.Context(), next)
	if err != nil {
		t.Fatal(err)
	}
	if run2.ID != run.ID {
		t.Fatalf("tool results started run %s, want the same run %s", run2.ID, run.ID)
	}
	_, events, _ = e.Subscribe(t.Context(), run.ID, int64(len(first)))
	second := collect(t, events)
	if second[0].Seq != int64(len(first))+1 {
		t.Errorf("continued run starts at seq %d, want %d", second[0].Seq, len(first)+1)
	}
	if f := second[len(second)-1].Final; f.Status != bridge.StatusCompleted {
		t.Errorf("final = %+v", f)
	}
	// The upstream got the whole transcript the second time.
	if got := len(up.Requests()[1].Messages); got != 3 {
		t.Errorf("second upstream call had %d messages, want 3", got)
	}
	page, err := e.History(t.Context(), run.SessionID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 {
		t.Errorf("history has %d runs, want 1", len(page.Runs))
	}
	var roles []bridge.Role
	for _, m := range page.Messages {
		roles = append(roles, m.Role)
		if m.RunID != run.ID {
			t.Errorf("message %s belongs to run %s", m.ID, m.RunID)
		}
	}
	want := []bridge.Role{bridge.RoleUser, bridge.RoleAssistant, bridge.RoleTool, bridge.RoleAssistant}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Errorf("history roles (-want +got):\n%s", diff)
	}
}

func TestHistoryPages(t *testing.T) {
	e, _ := newEngine(t, &bridgetest.Upstream{Events: bridgetest.TextEvents("ok")})
	var session string
	var transcript []bridge.Message
	for i := range 3 {
		req := userRequest(fmt.Sprintf("q%d", i))
		req.SessionID = session
		req.Messages = append(append([]bridge.Message(nil), transcript...), req.Messages...)
		run, err := e.Start(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		session = run.SessionID
		_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
		collect(t, events)
		transcript = append(req.Messages, bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("ok")}})
	}
	page, err := e.History(t.Context(), session, "", 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 4 || !page.HasMore || page.Cursor == "" || len(page.Runs) != 2 {
		t.Fatalf("page 1: %d messages, more %v, cursor %q, %d runs", len(page.Messages), page.HasMore, page.Cursor, len(page.Runs))
	}
	older, err := e.History(t.Context(), session, page.Cursor, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(older.Messages) != 2 || older.HasMore || older.Messages[0].Text() != "q0" {
		t.Errorf("page 2: %d messages, more %v", len(older.Messages), older.HasMore)
	}
	if _, err := e.History(bridge.WithPrincipal(t.Context(), "other"), session, "", 0); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("another principal's history: err %v, want not found", err)
	}
}

func TestCloseInterruptsRunningRuns(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a"), Gate: make(chan struct{})}
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "b.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e, _ := bridge.New(bridge.Config{Store: store, Route: func(string) (bridge.Upstream, error) { return up, nil }})
	req := userRequest("hi")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := store.Run(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != bridge.StatusInterrupted {
		t.Errorf("status after Close = %s, want interrupted", got.Status)
	}
	if _, err := e.Start(t.Context(), userRequest("late")); bridge.ErrorCode(err) != bridge.CodeUnavailable {
		t.Errorf("Start after Close: %v", err)
	}
}

func TestRunTimeout(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("never"), Gate: make(chan struct{})}
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "b.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e, _ := bridge.New(bridge.Config{Store: store, RunTimeout: 50 * time.Millisecond,
		Route: func(string) (bridge.Upstream, error) { return up, nil }})
	defer e.Close(t.Context())
	run, err := e.Start(t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	evs := collect(t, events)
	f := evs[len(evs)-1].Final
	if f == nil || f.Status != bridge.StatusFailed || f.Error == nil || f.Error.Code != bridge.CodeTimeout || f.Reason != "run timeout" {
		t.Errorf("final = %+v, want failed by the run timeout", f)
	}
}

// failingStore refuses writes while fail is set, as a full disk would.
type failingStore struct {
	*sqlite.Store
	fail atomic.Bool
}

func (f *failingStore) CreateRun(ctx context.Context, r *bridge.Run, in []bridge.Message) error {
	if f.fail.Load() {
		return errors.New("database or disk is full")
	}
	return f.Store.CreateRun(ctx, r, in)
}

func (f *failingStore) Commit(ctx context.Context, b *bridge.Batch) error {
	if f.fail.Load() {
		return errors.New("database or disk is full")
	}
	return f.Store.Commit(ctx, b)
}

func TestStoreFailure(t *testing.T) {
	inner, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "b.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	store := &failingStore{Store: inner}
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b", "c"), Gate: gate}
	e, _ := bridge.New(bridge.Config{Store: store, Route: func(string) (bridge.Upstream, error) { return up, nil }})
	defer e.Close(t.Context())

	store.fail.Store(true)
	_, err = e.Start(t.Context(), userRequest("hi"))
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeUnavailable || strings.Contains(be.Message, "disk") {
		t.Fatalf("Start on a full disk: %v, want unavailable without internals", err)
	}

	// A failure mid-run: nothing uncommitted is ever shown.
	store.fail.Store(false)
	run, err := e.Start(t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{} // message_started
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	next, stop := iter.Pull2(events)
	defer stop()
	for range 2 { // run_started, message_started
		if _, err, ok := next(); !ok || err != nil {
			t.Fatalf("committed events: %v %v", ok, err)
		}
	}
	store.fail.Store(true)
	gate <- struct{}{} // "a" cannot be committed
	ev, err, ok := next()
	if ok && err == nil {
		t.Fatalf("an event that was not committed reached a subscriber: %+v", ev)
	}
	close(gate)
}

func TestNewIDSortsByTime(t *testing.T) {
	a := bridge.NewID("run_")
	time.Sleep(2 * time.Millisecond)
	b := bridge.NewID("run_")
	if !(a < b) || len(a) != len(b) || a == bridge.NewID("run_") {
		t.Errorf("ids %q then %q: want later ids to sort later, same length, unique", a, b)
	}
}

func TestFingerprintIgnoresReasoning(t *testing.T) {
	with := bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{
		{Type: bridge.PartReasoning, Text: "hmm", Signature: "s"}, bridge.TextPart("answer")}}
	without := bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("answer")}}
	if with.Fingerprint() != without.Fingerprint() {
		t.Error("a resent turn without its reasoning does not match the stored one")
	}
	other := bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("other")}}
	if other.Fingerprint() == without.Fingerprint() {
		t.Error("different text, same fingerprint")
	}
}

// chanUpstream streams the events sent on ch, then a final.
type chanUpstream struct{ ch chan bridge.Event }

func (u *chanUpstream) Name() string    { return "chan" }
func (u *chanUpstream) Dialect() string { return "test" }
func (u *chanUpstream) Open(ctx context.Context, _ *bridge.Request) (*bridge.Call, error) {
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) {
		for {
			select {
			case ev, ok := <-u.ch:
				if !ok {
					yield(bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}}, nil)
					return
				}
				if !yield(ev, nil) {
					return
				}
			case <-ctx.Done():
				yield(bridge.Event{}, ctx.Err())
				return
			}
		}
	}}, nil
}

// TestIdleBeforeWaiting: a subscription made WithIdle calls the hook each
// time it has yielded what is committed and must wait, so an SSE writer
// flushes then, and only then.
func TestIdleBeforeWaiting(t *testing.T) {
	up := &chanUpstream{ch: make(chan bridge.Event)}
	e, _ := newEngine(t, up)
	run, err := e.Start(t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var idles atomic.Int64
	ctx := bridge.WithIdle(t.Context(), func() { idles.Add(1) })
	_, events, err := e.Subscribe(ctx, run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(events)
	defer stop()
	waitIdle := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for idles.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("subscription never went idle (%d calls, want %d)", idles.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	got := make(chan bridge.Event, 1)
	pull := func() {
		ev, err, ok := next()
		if err != nil || !ok {
			t.Errorf("stream ended early: %v", err)
		}
		got <- ev
	}
	// run_started is committed with the run: yielded without a wait.
	pull()
	if ev := <-got; ev.Kind != bridge.KindRunStarted {
		t.Fatalf("first event %s, want run_started", ev.Kind)
	}
	for i := range 5 {
		before := idles.Load()
		go pull()
		waitIdle(before + 1) // waiting for the next event: idle said so
		up.ch <- bridge.Event{Kind: bridge.KindTextDelta, Text: fmt.Sprint(i)}
		select {
		case ev := <-got:
			if ev.Kind != bridge.KindTextDelta || ev.Text != fmt.Sprint(i) {
				t.Fatalf("event %d = %s %q", i, ev.Kind, ev.Text)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d never came", i)
		}
	}
	close(up.ch)
}

// eventReads counts a store's Events calls.
type eventReads struct {
	bridge.Store
	n atomic.Int64
}

func (s *eventReads) Events(ctx context.Context, run string, after int64, limit int) ([]bridge.Event, error) {
	s.n.Add(1)
	return s.Store.Events(ctx, run, after, limit)
}

// TestStartFollowingAfterTheRunEnded: a run whose upstream answered whole
// before its client began to read (a fast upstream, a busy handler) is
// read from the live run StartFollowing made, in memory and whole, not
// looked up by its id once the engine let it go and read from the store.
func TestStartFollowingAfterTheRunEnded(t *testing.T) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b", "c")}
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := &eventReads{Store: db}
	e := bridgetest.NewEngine(t, store, up)
	run, events, err := e.StartFollowing(t.Context(), t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		got, err := e.Run(t.Context(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != bridge.StatusRunning && e.LiveEvents(run.ID) == 0 {
			break // ended, and no longer live
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not end")
		}
	}
	reads := store.n.Load()
	var text strings.Builder
	kinds := 0
	for _, ev := range collect(t, events) {
		kinds++
		if ev.Kind == bridge.KindTextDelta {
			text.WriteString(ev.Text)
		}
		if ev.Seq != int64(kinds)+run.LastSeq {
			t.Errorf("event %d has seq %d", kinds, ev.Seq)
		}
	}
	if text.String() != "abc" || kinds < 5 {
		t.Errorf("followed %d events, text %q", kinds, text.String())
	}
	if n := store.n.Load() - reads; n != 0 {
		t.Errorf("the ended run's events were read from the store %d times; want from memory", n)
	}
}

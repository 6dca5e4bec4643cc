package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-kit/kit/endpoint"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// crashed stores what a crash leaves of a run: the run still running, its
// input, and its first events, the last naming upstream event u3.
func crashed(t *testing.T, store *sqlite.Store) *bridge.Run {
	t.Helper()
	now := time.Now().UTC()
	run := &bridge.Run{ID: "run_1", SessionID: "sess_1", Inbound: "test", Outbound: "test", Upstream: "agent",
		Model: "m", Status: bridge.StatusRunning, Created: now}
	b := &bridge.Batch{
		Sessions: []*bridge.Session{{ID: "sess_1", Created: now, Updated: now}},
		NewRuns:  []*bridge.Run{run},
		Messages: []bridge.Message{{RunID: "run_1", Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("go")}, Created: now}},
		Events: []bridge.Event{
			{RunID: "run_1", Seq: 1, Time: now, Kind: bridge.KindRunStarted, Source: bridge.SourceBridge},
			{RunID: "run_1", Seq: 2, Time: now, Kind: bridge.KindMessageStarted, Source: bridge.SourceModel, ResponseID: "task-1", UpstreamID: "u1"},
			{RunID: "run_1", Seq: 3, Time: now, Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "Hello, ", UpstreamID: "u2"},
			{RunID: "run_1", Seq: 4, Time: now, Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "wor", UpstreamID: "u3"},
		},
	}
	if err := store.Commit(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	r, err := store.Run(t.Context(), "run_1")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resumeCrashed makes an engine over up, stores what a crash leaves of a
// run (crashed), resumes the run and subscribes to it from its start.
func resumeCrashed(t *testing.T, up bridge.Upstream) (*bridge.Engine, *sqlite.Store, *bridge.Run, bridge.Stream) {
	t.Helper()
	e, store := newEngine(t, up)
	run := crashed(t, store)
	if err := e.Resume(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	_, events, err := e.Subscribe(t.Context(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return e, store, run, events
}

// TestResume: a run a crash left running goes on over its upstream's
// Resumer: the resumer gets the run (its upstream task id learnt from the
// committed message_started) and its committed events; the resumed events
// follow them with the next seqs; a subscriber from the start sees the
// whole answer once; the run ends completed with the whole answer in the
// transcript.
func TestResume(t *testing.T) {
	up := &bridgetest.Resumable{Upstream: bridgetest.Upstream{UpName: "agent"}, ResumeEvents: []bridge.Event{
		{Kind: bridge.KindTextDelta, Text: "ld", UpstreamID: "u4"},
		{Kind: bridge.KindTextDelta, Text: "!", UpstreamID: "u5"},
		{Kind: bridge.KindMessageDone, UpstreamID: "u6"},
		{Kind: bridge.KindUsage, Usage: &bridge.Usage{InputTokens: bridge.Int64(3), OutputTokens: bridge.Int64(4)}},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}},
	}}
	// Through outbound.Wrap, as the bridge configures every upstream.
	pass := func(next endpoint.Endpoint) endpoint.Endpoint { return next }
	_, store, run, events := resumeCrashed(t, outbound.Wrap(up, pass))
	evs := collect(t, events)
	var text strings.Builder
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		text.WriteString(ev.Text)
	}
	if text.String() != "Hello, world!" {
		t.Errorf("the run's text %q, want %q once", text.String(), "Hello, world!")
	}
	if last := evs[len(evs)-1]; last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusCompleted || last.Seq != 9 {
		t.Errorf("the run ends with %+v, want final completed at seq 9", last)
	}

	rs := up.Resumes()
	if len(rs) != 1 {
		t.Fatalf("%d resumes, want 1", len(rs))
	}
	if rs[0].Run.UpstreamRunID != "task-1" || len(rs[0].Events) != 4 || rs[0].Events[3].UpstreamID != "u3" {
		t.Errorf("the resumer got run %+v and %d events", rs[0].Run, len(rs[0].Events))
	}
	if rs[0].Request == nil || len(rs[0].Request.Messages) != 1 || rs[0].Request.Messages[0].Text() != "go" {
		t.Errorf("the resumer got request %+v, want the transcript", rs[0].Request)
	}
	if len(up.Requests()) != 0 {
		t.Errorf("the upstream was opened %d times, want none (resumed)", len(up.Requests()))
	}

	r, err := store.Run(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != bridge.StatusCompleted || r.LastSeq != 9 || r.UpstreamRunID != "task-1" || r.Usage.Total() != 7 {
		t.Errorf("stored run %+v", r)
	}
	msgs, err := store.RunMessages(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[1].Role != bridge.RoleAssistant || msgs[1].Text() != "Hello, world!" {
		t.Errorf("the run's transcript %+v, want the input and the whole answer", msgs)
	}
}

// TestResumeRefused: an upstream that cannot resume the run ends it
// interrupted, saying the resume failed, after the committed events.
func TestResumeRefused(t *testing.T) {
	up := &bridgetest.Resumable{Upstream: bridgetest.Upstream{UpName: "agent"},
		ResumeErr: bridge.Errorf(bridge.CodeNotFound, "task task-1 not found")}
	_, store, run, events := resumeCrashed(t, up)
	evs := collect(t, events)
	last := evs[len(evs)-1]
	if len(evs) != 5 || last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusInterrupted ||
		!strings.Contains(last.Final.Reason, "could not resume") || !strings.Contains(last.Final.Reason, "task task-1 not found") {
		t.Fatalf("%d events, the last %+v; want the 4 committed and final interrupted saying the resume failed", len(evs), last.Final)
	}
	r, err := store.Run(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != bridge.StatusInterrupted || r.Reason != last.Final.Reason {
		t.Errorf("stored run is %s (%q)", r.Status, r.Reason)
	}
}

// TestResumeNotResumable: over an upstream with no Resumer, or another
// upstream than the run's, Resume fails and leaves the run as stored.
func TestResumeNotResumable(t *testing.T) {
	for _, up := range []bridge.Upstream{
		&bridgetest.Upstream{UpName: "agent"},
		&bridgetest.Resumable{Upstream: bridgetest.Upstream{UpName: "other"}},
	} {
		e, store := newEngine(t, up)
		run := crashed(t, store)
		if err := e.Resume(t.Context(), run); err == nil {
			t.Errorf("Resume over %T %s: no error", up, up.Name())
		}
		r, err := store.Run(t.Context(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != bridge.StatusRunning {
			t.Errorf("the run is %s, want it left running", r.Status)
		}
		if lr, err := e.Run(t.Context(), run.ID); err != nil || lr.Status != bridge.StatusRunning {
			t.Errorf("Run = %+v, %v", lr, err)
		}
	}
}

// TestResumeRetried: a resume the upstream cannot answer for now (it is
// unreachable, restarting with the bridge, or its breaker is open) is
// tried again after a backoff until it answers: the run goes on and
// completes. One that keeps failing past the retry's bound ends
// interrupted, saying why; a stop meanwhile ends the wait at once.
func TestResumeRetried(t *testing.T) {
	answer := []bridge.Event{
		{Kind: bridge.KindTextDelta, Text: "ld!", UpstreamID: "u4"},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}},
	}
	t.Run("answers on the third try", func(t *testing.T) {
		bridge.SetResumeRetry(t, 20*time.Millisecond, time.Minute)
		up := &bridgetest.Resumable{Upstream: bridgetest.Upstream{UpName: "agent"}, ResumeEvents: answer, ResumeErrs: []error{
			bridge.Errorf(bridge.CodeUnavailable, "connection refused"),
			&bridge.Error{Code: bridge.CodeUnavailable, Message: "upstream agent is failing; its circuit breaker is open", RetryAfter: 30 * time.Millisecond},
		}}
		_, _, _, events := resumeCrashed(t, up)
		evs := collect(t, events)
		var text strings.Builder
		for _, ev := range evs {
			text.WriteString(ev.Text)
		}
		if last := evs[len(evs)-1]; last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusCompleted || text.String() != "Hello, world!" {
			t.Fatalf("the run ended %+v with %q; want completed with the whole answer", last.Final, text.String())
		}
		if n := len(up.Resumes()); n != 3 {
			t.Errorf("%d resumes, want 3 (two refused, one answered)", n)
		}
	})
	t.Run("refused past the bound", func(t *testing.T) {
		bridge.SetResumeRetry(t, 20*time.Millisecond, 200*time.Millisecond)
		up := &bridgetest.Resumable{Upstream: bridgetest.Upstream{UpName: "agent"},
			ResumeErr: bridge.Errorf(bridge.CodeUpstream, "upstream answered 503")}
		_, _, _, events := resumeCrashed(t, up)
		evs := collect(t, events)
		last := evs[len(evs)-1]
		if last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusInterrupted || !strings.Contains(last.Final.Reason, "503") {
			t.Fatalf("the run ended %+v; want interrupted, saying the upstream answered 503", last.Final)
		}
		if n := len(up.Resumes()); n < 2 {
			t.Errorf("%d resumes, want it tried again within the bound", n)
		}
	})
	t.Run("stopped while it waits", func(t *testing.T) {
		bridge.SetResumeRetry(t, time.Hour, 2*time.Hour)
		up := &bridgetest.Resumable{Upstream: bridgetest.Upstream{UpName: "agent"},
			ResumeErr: bridge.Errorf(bridge.CodeUnavailable, "connection refused")}
		e, _, run, events := resumeCrashed(t, up)
		for wait := time.Now().Add(10 * time.Second); len(up.Resumes()) == 0; { // the first try was refused: it waits an hour
			if time.Now().After(wait) {
				t.Fatal("no resume tried in 10 s")
			}
			time.Sleep(time.Millisecond)
		}
		if _, err := e.Abort(t.Context(), run.ID); err != nil {
			t.Fatal(err)
		}
		evs := collect(t, events)
		if last := evs[len(evs)-1]; last.Kind != bridge.KindFinal || last.Final.Status == bridge.StatusCompleted || last.Final.Status == bridge.StatusRunning {
			t.Fatalf("the run ended %+v; want it stopped", last.Final)
		}
	})
}

package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestLeases: a run is leased to the process that created it; another
// process takes it only once the lease has ended unrenewed, one process
// takes it once, and the first then learns it lost it. Its waits are
// bounded and leave the load room: a renews r1 (a 1 s lease) every 100
// ms from a goroutine of its own, and the test goes on until r1 has lived
// well past its lease, so only the renewals can have kept it; r2's
// creator (a 300 ms lease) never renews it; the takers' leases are long,
// so whichever took r2 keeps it without renewing. (With one 300 ms lease
// for all and the renewals in the test's loop, a loop turn slowed past
// the lease by a loaded machine let r1 be taken.)
func TestLeases(t *testing.T) {
	url := pgtest.Schema(t)
	open := func(lease time.Duration) *postgres.Store { return openStore(t, url, postgres.Options{Lease: lease}) }
	const aLease = time.Second
	a, d, b, c := open(aLease), open(300*time.Millisecond), open(time.Minute), open(time.Minute)
	ctx := t.Context()
	if err := a.CreateSession(ctx, &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateRun(ctx, &bridge.Run{ID: "r1", SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateRun(ctx, &bridge.Run{ID: "r2", SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	renewed := make(chan error, 1)
	stop := make(chan struct{})
	go func() { // a keeps r1
		tick := time.NewTicker(aLease / 10)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				renewed <- nil
				return
			case <-tick.C:
			}
			if lost, err := a.RenewLeases(ctx, []string{"r1"}); err != nil || len(lost) > 0 {
				renewed <- fmt.Errorf("renew r1: lost %v, %v", lost, err)
				return
			}
		}
	}()
	var took []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && (len(took) == 0 || time.Since(start) < 3*aLease) {
		for _, s := range []*postgres.Store{b, c} {
			runs, err := s.TakeExpired(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				took = append(took, r.ID)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	if err := <-renewed; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(took, []string{"r2"}) {
		t.Fatalf("taken over in %v: %v, want r2 once", time.Since(start).Round(time.Millisecond), took)
	}
	if lost, err := d.RenewLeases(ctx, []string{"r2"}); err != nil || !slices.Equal(lost, []string{"r2"}) {
		t.Fatalf("r2's creator renews it: lost %v (want r2), %v", lost, err)
	}
	if lost, err := a.RenewLeases(ctx, []string{"r1", "r2"}); err != nil || !slices.Equal(lost, []string{"r2"}) {
		t.Fatalf("a renews r1, r2: lost %v (want r2), %v", lost, err)
	}
	ids, err := c.InterruptRuns(ctx, "gone", time.Now(), "r2")
	if err != nil || !slices.Equal(ids, []string{"r2"}) {
		t.Fatalf("interrupt r2: %v %v", ids, err)
	}
	if r, _ := a.Run(ctx, "r1"); r.Status != bridge.StatusRunning {
		t.Fatalf("r1 is %s, want running", r.Status)
	}
}

// TestRelay: a stop sent through one process reaches the process that
// holds the run's lease, and its answer comes back; a run whose lease
// ended gets CodeUnavailable at once.
func TestRelay(t *testing.T) {
	url := pgtest.Schema(t)
	open := func(lease time.Duration) *postgres.Store { return openStore(t, url, postgres.Options{Lease: lease}) }
	a, b := open(time.Minute), open(time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := a.CreateSession(ctx, &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateRun(ctx, &bridge.Run{ID: "r1", SessionID: "s", Status: bridge.StatusRunning, Principal: "p"}, nil); err != nil {
		t.Fatal(err)
	}
	got := make(chan bridge.Command, 1)
	go a.ServeRelay(ctx, func(_ context.Context, cmd bridge.Command) bridge.Answer {
		got <- cmd
		return bridge.Answer{Run: &bridge.Run{ID: cmd.Run, Status: bridge.StatusCancelled}, Error: bridge.Errorf(bridge.CodeConflict, "told")}
	})
	ans, err := b.Relay(ctx, bridge.Command{Kind: bridge.CommandAbort, Run: "r1", Principal: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if cmd := <-got; cmd.Kind != bridge.CommandAbort || cmd.Run != "r1" || cmd.Principal != "p" {
		t.Fatalf("the owner got %+v", cmd)
	}
	if ans.Run == nil || ans.Run.Status != bridge.StatusCancelled || ans.Error == nil || ans.Error.Code != bridge.CodeConflict {
		t.Fatalf("answer %+v", ans)
	}

	short := open(50 * time.Millisecond)
	if err := short.CreateRun(ctx, &bridge.Run{ID: "r2", SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := b.Relay(ctx, bridge.Command{Kind: bridge.CommandAbort, Run: "r2"}); bridge.ErrorCode(err) != bridge.CodeUnavailable {
		t.Fatalf("relay to a dead owner: %v, want unavailable", err)
	}
}

// TestOneJanitor: while one replica's janitor holds the retention lock,
// another's deletes nothing (and does not wait); once it is free, it does.
func TestOneJanitor(t *testing.T) {
	url := pgtest.Schema(t)
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.CreateSession(ctx, &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := s.CreateRun(ctx, &bridge.Run{ID: "r", SessionID: "s", Status: bridge.StatusRunning, Created: old}, nil); err != nil {
		t.Fatal(err)
	}
	evs := []bridge.Event{{RunID: "r", Seq: 1, Time: old, Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted}}}
	if err := s.Commit(ctx, &bridge.Batch{Events: evs, Runs: []*bridge.Run{{ID: "r", SessionID: "s", Status: bridge.StatusCompleted, Finished: old, LastSeq: 1}}}); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(0x6272696467650002)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteEventsBefore(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("with the lock held elsewhere: deleted %d, %v; want 0", n, err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(0x6272696467650002)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteEventsBefore(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("with the lock free: deleted %d, %v; want 1", n, err)
	}
}

// cancelCounting is a resumable scripted upstream whose calls have an
// upstream cancel of their own (as A2A's tasks/cancel), counted.
type cancelCounting struct {
	*bridgetest.Resumable
	cancels atomic.Int32
}

func (u *cancelCounting) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	call, err := u.Resumable.Open(ctx, req)
	if call != nil {
		call.Cancel = func(context.Context) error { u.cancels.Add(1); return nil }
	}
	return call, err
}

// TestEngineHandsOverOnClose: an engine on a store replicas share, closed
// with runs still going, hands over the run whose upstream can resume it:
// no final event, no upstream cancel, its lease released at once (another
// process takes it over though its lease had a minute left, and is woken to
// look), its follower's stream ends with neither a final event nor an
// error; that process resumes it to the end. A run whose upstream cannot
// resume it is interrupted, as before.
func TestEngineHandsOverOnClose(t *testing.T) {
	url := pgtest.Schema(t)
	open := func() *postgres.Store { return openStore(t, url, postgres.Options{Lease: time.Minute}) }
	sa, sb := open(), open()
	agent := &cancelCounting{Resumable: &bridgetest.Resumable{
		Upstream: bridgetest.Upstream{UpName: "agent", Events: bridgetest.TextEvents("one ", "two ", "three"), Gate: make(chan struct{})},
		ResumeEvents: []bridge.Event{{Kind: bridge.KindTextDelta, Text: "three"}, {Kind: bridge.KindMessageDone},
			{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}}},
	}}
	plain := &bridgetest.Upstream{UpName: "plain", Events: bridgetest.TextEvents("x", "y"), Gate: make(chan struct{})}
	route := func(model string) (bridge.Upstream, error) {
		if model == "agent" {
			return agent, nil
		}
		return plain, nil
	}
	ea, err := bridge.New(bridge.Config{Store: sa, Route: route})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := func(model string, gate chan struct{}, events int) *bridge.Run {
		run, err := ea.Start(ctx, &bridge.Request{Inbound: "test", Model: model, Detached: true,
			Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("go")}}}})
		if err != nil {
			t.Fatal(err)
		}
		for range events {
			gate <- struct{}{}
		}
		return run
	}
	run1 := start("agent", agent.Gate, 3) // message_started, "one ", "two "
	run2 := start("plain", plain.Gate, 2)

	// A client of the first run on this process: it has "two " before the close.
	_, events, err := ea.Subscribe(ctx, run1.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		evs []bridge.Event
		err error
	}
	followed := make(chan result, 1)
	sawTwo := make(chan struct{})
	go func() {
		var r result
		for ev, err := range events {
			if err != nil {
				r.err = err
				break
			}
			r.evs = append(r.evs, ev)
			if ev.Text == "two " {
				close(sawTwo)
			}
		}
		followed <- r
	}()
	select {
	case <-sawTwo:
	case <-ctx.Done():
		t.Fatal("the follower did not get the run's second word")
	}
	released, stopWatch := sb.WatchReleases()
	defer stopWatch()

	cctx, ccancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer ccancel()
	if err := ea.Close(cctx); err != nil {
		t.Fatal(err)
	}
	r := <-followed
	if r.err != nil {
		t.Errorf("the follower's stream ended with %v, want no error", r.err)
	}
	for _, ev := range r.evs {
		if ev.Kind == bridge.KindFinal || ev.Kind == bridge.KindError {
			t.Errorf("the follower got a %s event: %+v", ev.Kind, ev)
		}
	}
	if n := agent.cancels.Load(); n != 0 {
		t.Errorf("the upstream's own cancel was called %d times, want none", n)
	}
	got, err := sb.Run(ctx, run1.ID)
	if err != nil || got.Status != bridge.StatusRunning {
		t.Fatalf("the handed-over run: %+v %v, want running", got, err)
	}
	evs, err := sb.Events(ctx, run1.ID, 0, 0)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Text != "two " {
		t.Fatalf("the handed-over run's events end with %+v (%v), want the second word", evs[len(evs)-1], err)
	}
	if got, err := sb.Run(ctx, run2.ID); err != nil || got.Status != bridge.StatusInterrupted {
		t.Errorf("the run whose upstream cannot resume: %+v %v, want interrupted", got, err)
	}
	select {
	case <-released:
	case <-ctx.Done():
		t.Fatal("the other process was not told of the release")
	}
	taken, err := sb.TakeExpired(ctx)
	if err != nil || len(taken) != 1 || taken[0].ID != run1.ID {
		t.Fatalf("the other process took %v (%v), want the handed-over run, its lease ended", taken, err)
	}
	if again, err := sa.ReleaseLeases(ctx, []string{run1.ID}); err != nil || len(again) != 0 {
		t.Errorf("releasing a run another process took: %v %v, want nothing released", again, err)
	}

	close(agent.Gate) // the resumed call's events come at once
	eb, err := bridge.New(bridge.Config{Store: sb, Route: route})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		eb.Close(cctx)
	}()
	if err := eb.Resume(ctx, taken[0]); err != nil {
		t.Fatal(err)
	}
	_, events, err = eb.Subscribe(ctx, run1.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	all, err := bridgetest.Collect(events)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, ev := range all {
		text.WriteString(ev.Text)
	}
	last := all[len(all)-1]
	if text.String() != "one two three" || last.Final == nil || last.Final.Status != bridge.StatusCompleted {
		t.Errorf("resumed: %q, final %+v; want \"one two three\", completed", text.String(), last.Final)
	}
	if n := len(agent.Requests()); n != 1 {
		t.Errorf("the upstream got %d calls, want 1 (resumed, not started again)", n)
	}
}

package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
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
	open := func(lease time.Duration) *postgres.Store {
		s, err := postgres.Open(t.Context(), url, postgres.Options{Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
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
	open := func(lease time.Duration) *postgres.Store {
		s, err := postgres.Open(t.Context(), url, postgres.Options{Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
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

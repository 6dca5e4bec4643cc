package postgres_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// The benchmarks run against pgtest's server (fsync off: they measure the
// database's work, not the disk's), beside storage/sqlite's of the same
// names in one command:
//
//	go test -run '^$' -bench 'Commit$|CommitRuns|FollowDelay' ./storage/sqlite ./storage/postgres

func benchStore(b *testing.B, url string) *postgres.Store {
	b.Helper()
	s, err := postgres.Open(b.Context(), url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func benchRuns(b *testing.B, s *postgres.Store, ids ...string) {
	b.Helper()
	ctx := b.Context()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateSession(ctx, &bridge.Session{ID: "sess_bench", Created: t0}); err != nil {
		b.Fatal(err)
	}
	for _, id := range ids {
		if err := s.CreateRun(ctx, &bridge.Run{ID: id, SessionID: "sess_bench", Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommit commits batches of small text_delta events, the engine's
// hot path, and reports committed events per second (storage/sqlite's
// BenchmarkCommit, on PostgreSQL).
func BenchmarkCommit(b *testing.B) {
	for _, size := range []int{1, 16, 256} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			ctx := b.Context()
			s := benchStore(b, pgtest.Schema(b))
			benchRuns(b, s, "run_bench")
			t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			batch := &bridge.Batch{Events: make([]bridge.Event, size)}
			for i := range batch.Events {
				batch.Events[i] = bridge.Event{RunID: "run_bench", Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: " token"}
			}
			var seq int64
			b.ReportAllocs()
			for b.Loop() {
				for i := range batch.Events {
					seq++
					batch.Events[i].Seq = seq
					batch.Events[i].Time = t0.Add(time.Duration(seq) * time.Microsecond)
				}
				if err := s.Commit(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkCommitRuns commits batches as a busy engine makes them: the
// deltas of 50 runs interleaved, a few of each run's per batch.
func BenchmarkCommitRuns(b *testing.B) {
	for _, perRun := range []int{1, 2, 8} {
		const runs = 50
		b.Run("runs=50/each="+strconv.Itoa(perRun), func(b *testing.B) {
			ctx := b.Context()
			s := benchStore(b, pgtest.Schema(b))
			ids := make([]string, runs)
			for i := range ids {
				ids[i] = "run_bench_" + strconv.Itoa(i)
			}
			benchRuns(b, s, ids...)
			t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			batch := &bridge.Batch{Events: make([]bridge.Event, runs*perRun)}
			var seq int64
			b.ReportAllocs()
			for b.Loop() {
				for k := range perRun {
					seq++
					for i, id := range ids {
						batch.Events[k*runs+i] = bridge.Event{RunID: id, Seq: seq, Kind: bridge.KindTextDelta, Source: bridge.SourceModel,
							Text: " token", Time: t0.Add(time.Duration(seq) * time.Microsecond)}
					}
				}
				if err := s.Commit(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(seq*runs)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkFollowDelay: process a commits one event of a run at a time;
// process b, watching the run, gets it. Each iteration is one event; it
// reports the delay from the end of a's commit to b holding the event,
// p50 and p99 (the store's share of the cross-replica delay; cmd/bridge's
// BenchmarkCrossReplicaDelay measures it from client to client). With
// how=carried, b takes the event from the notification (WatchRunEvents,
// as bridge's followers do); with how=read, b reads the store when woken
// (WatchRun), as followers did before notifications carried events.
func BenchmarkFollowDelay(b *testing.B) {
	for _, how := range []string{"carried", "read"} {
		b.Run("how="+how, func(b *testing.B) {
			url := pgtest.Schema(b)
			a, f := benchStore(b, url), benchStore(b, url)
			benchRuns(b, a, "run_bench")
			ctx := b.Context()
			var (
				wake <-chan struct{}
				take func() ([]bridge.Event, bool)
				stop func()
			)
			if how == "carried" {
				wake, take, stop = f.WatchRunEvents("run_bench")
			} else {
				wake, stop = f.WatchRun("run_bench")
			}
			defer stop()
			t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			var (
				seq   int64
				delay []time.Duration
				reads int
			)
			for b.Loop() {
				seq++
				ev := bridge.Event{RunID: "run_bench", Seq: seq, Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: " token", Time: t0}
				if err := a.Commit(ctx, &bridge.Batch{Events: []bridge.Event{ev}}); err != nil {
					b.Fatal(err)
				}
				committed := time.Now()
				read := take == nil
				for got := false; !got; {
					if read {
						reads++
						evs, err := f.Events(ctx, "run_bench", seq-1, 0)
						if err != nil {
							b.Fatal(err)
						}
						if len(evs) > 0 {
							break
						}
					}
					select {
					case <-wake:
					case <-time.After(5 * time.Second):
						b.Fatalf("event %d: no notification in 5s", seq)
					}
					if take != nil {
						evs, lacked := take()
						got = slices.ContainsFunc(evs, func(e bridge.Event) bool { return e.Seq == seq })
						read = lacked
					}
				}
				delay = append(delay, time.Since(committed))
			}
			reportQuantiles(b, delay)
			b.ReportMetric(float64(reads)/float64(b.N), "reads/event")
		})
	}
}

// reportQuantiles reports the p50, p99 and max of d in milliseconds.
func reportQuantiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(d[len(d)-1].Microseconds())/1000, "max-ms")
}

package sqlite_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// BenchmarkCommit commits batches of small text_delta events, the engine's
// hot path, and reports committed events per second.
func BenchmarkCommit(b *testing.B) {
	for _, size := range []int{1, 16, 256} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			ctx := b.Context()
			s := MustOpen(b, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
			t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			if err := s.CreateRun(ctx, &bridge.Run{ID: "run_bench", Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
				b.Fatal(err)
			}
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
// deltas of many runs interleaved, a few of each run's per batch.
func BenchmarkCommitRuns(b *testing.B) {
	for _, perRun := range []int{1, 2, 8} {
		const runs = 50
		b.Run("runs=50/each="+strconv.Itoa(perRun), func(b *testing.B) {
			ctx := b.Context()
			s := MustOpen(b, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
			t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			ids := make([]string, runs)
			for i := range ids {
				ids[i] = "run_bench_" + strconv.Itoa(i)
				if err := s.CreateRun(ctx, &bridge.Run{ID: ids[i], Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
					b.Fatal(err)
				}
			}
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

// BenchmarkCommitNewRun commits what a new run's first commit holds: its
// session, its row, its input message and its run_started event.
func BenchmarkCommitNewRun(b *testing.B) {
	ctx := b.Context()
	s := MustOpen(b, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		id := "run_bench_" + strconv.Itoa(n)
		sess := &bridge.Session{ID: "sess_bench_" + strconv.Itoa(n), Created: t0, Updated: t0}
		run := &bridge.Run{ID: id, SessionID: sess.ID, Status: bridge.StatusRunning, Inbound: "openai", Model: "m", Created: t0}
		batch := &bridge.Batch{Sessions: []*bridge.Session{sess}, NewRuns: []*bridge.Run{run},
			Events:   []bridge.Event{{RunID: id, Seq: 1, Kind: bridge.KindRunStarted, Source: bridge.SourceBridge, Time: t0}},
			Messages: []bridge.Message{{RunID: id, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("Say forty words.")}}}}
		if err := s.Commit(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitLatency commits what the engine commits for one stream
// after another: a new run's first commit, 5 batches of 20 deltas, the
// final with the run's row. Each iteration is one stream; it reports the
// commits' latency quantiles, where a checkpoint that gets in a commit's way
// shows (the mean hides it), and the size of the WAL file at the end.
func BenchmarkCommitLatency(b *testing.B) {
	ctx := b.Context()
	dbp := filepath.Join(b.TempDir(), "bench.db")
	s := MustOpen(b, dbp, sqlite.Options{})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var lat []time.Duration
	commit := func(batch *bridge.Batch) {
		start := time.Now()
		if err := s.Commit(ctx, batch); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	deltas := &bridge.Batch{Events: make([]bridge.Event, 20)}
	n := 0
	for b.Loop() {
		n++
		id := "run_bench_" + strconv.Itoa(n)
		sess := &bridge.Session{ID: "sess_bench_" + strconv.Itoa(n), Created: t0, Updated: t0}
		run := &bridge.Run{ID: id, SessionID: sess.ID, Status: bridge.StatusRunning, Inbound: "openai", Model: "m", Created: t0}
		commit(&bridge.Batch{Sessions: []*bridge.Session{sess}, NewRuns: []*bridge.Run{run},
			Events:   []bridge.Event{{RunID: id, Seq: 1, Kind: bridge.KindRunStarted, Source: bridge.SourceBridge, Time: t0}},
			Messages: []bridge.Message{{RunID: id, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("Say forty words.")}}}})
		seq := int64(1)
		for range 5 {
			for i := range deltas.Events {
				seq++
				deltas.Events[i] = bridge.Event{RunID: id, Seq: seq, Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: " token", Time: t0}
			}
			commit(deltas)
		}
		seq++
		done := *run
		done.Status, done.LastSeq = bridge.StatusCompleted, seq
		commit(&bridge.Batch{Runs: []*bridge.Run{&done}, Events: []bridge.Event{{RunID: id, Seq: seq, Kind: bridge.KindFinal,
			Source: bridge.SourceBridge, Time: t0, Final: &bridge.Final{Status: bridge.StatusCompleted}}}})
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(q(0.999), "p99.9-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	if fi, err := os.Stat(dbp + "-wal"); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "wal-MiB")
	}
}

// BenchmarkEvents reads back a run of 2,000 text deltas committed 20 at a
// time (a resume from its start, or a replay), and reports events read per
// second.
func BenchmarkEvents(b *testing.B) {
	ctx := b.Context()
	s := MustOpen(b, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &bridge.Run{ID: "run_bench", Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
		b.Fatal(err)
	}
	batch := &bridge.Batch{Events: make([]bridge.Event, 20)}
	seq := int64(0)
	for range 100 {
		for i := range batch.Events {
			seq++
			batch.Events[i] = bridge.Event{RunID: "run_bench", Seq: seq, Kind: bridge.KindTextDelta, Source: bridge.SourceModel,
				Text: " token", Time: t0.Add(time.Duration(seq) * time.Millisecond)}
		}
		if err := s.Commit(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		evs, err := s.Events(ctx, "run_bench", 0, 0)
		if err != nil || len(evs) != int(seq) {
			b.Fatalf("%d events, %v", len(evs), err)
		}
		n += len(evs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

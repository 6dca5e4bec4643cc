package sqlite_test

import (
	"path/filepath"
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

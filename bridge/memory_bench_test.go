package bridge_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// pausedUpstream streams n text deltas, then holds the call open until its
// context ends: the run stays live with every event committed.
type pausedUpstream struct{ n int }

func (u *pausedUpstream) Name() string    { return "paused" }
func (u *pausedUpstream) Dialect() string { return "test" }
func (u *pausedUpstream) Open(ctx context.Context, _ *bridge.Request) (*bridge.Call, error) {
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) {
		if !yield(bridge.Event{Kind: bridge.KindMessageStarted}, nil) {
			return
		}
		for i := range u.n {
			if !yield(bridge.Event{Kind: bridge.KindTextDelta, Text: benchTokens[i%len(benchTokens)]}, nil) {
				return
			}
		}
		<-ctx.Done()
		yield(bridge.Event{}, context.Cause(ctx))
	}}, nil
}

// benchTokens are the deltas pausedUpstream sends, shared by every run (so
// the upstream's script is not counted as the runs').
var benchTokens = benchWords(100)

// BenchmarkLiveRunMemory measures what live runs hold in memory: 20 runs,
// each of which has streamed events=N text deltas (a model token each,
// ~6 bytes of text) that are all committed, and is still running. The Go
// heap in use (after a GC) with the runs live, less before they started,
// gives B/live-run, and that over N, B/live-event. Before the window a
// live run held every event (about 1 KB each); now it holds its newest
// LiveEvents events, its request, and the text it said so far (the
// transcript message its end commits), so B/live-event falls towards the
// text's size as N grows.
func BenchmarkLiveRunMemory(b *testing.B) {
	const runs = 20
	for _, n := range []int{100, 1_000, 20_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			e, _ := benchEngine(b, &pausedUpstream{n: n})
			var held float64
			for range b.N {
				before := heapInUse()
				ids := make([]string, runs)
				for i := range ids {
					req := userRequest("hi")
					req.Detached = true
					run, err := e.Start(b.Context(), req)
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = run.ID
				}
				for _, id := range ids {
					waitCommitted(b, e, id, int64(n)+2) // run_started, message_started, the deltas
				}
				held = float64(heapInUse()) - float64(before)
				for _, id := range ids {
					if _, err := e.Abort(b.Context(), id); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(held/runs, "B/live-run")
			b.ReportMetric(held/runs/float64(n), "B/live-event")
		})
	}
}

// heapInUse is the Go heap's live bytes after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// waitCommitted waits until run's event seq is committed.
func waitCommitted(b *testing.B, e *bridge.Engine, run string, seq int64) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := e.Run(b.Context(), run)
		if err != nil {
			b.Fatal(err)
		}
		if r.LastSeq >= seq {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("run %s: seq %d not committed (last %d)", run, seq, r.LastSeq)
		}
		time.Sleep(time.Millisecond)
	}
}

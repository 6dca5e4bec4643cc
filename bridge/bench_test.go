package bridge_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// countingStore is the SQLite store with its commits counted, so a benchmark
// can say how many events the writer grouped into one transaction.
type countingStore struct {
	*sqlite.Store
	commits atomic.Int64
	events  atomic.Int64
}

func (s *countingStore) Commit(ctx context.Context, b *bridge.Batch) error {
	s.commits.Add(1)
	s.events.Add(int64(len(b.Events)))
	return s.Store.Commit(ctx, b)
}

// heldUpstream holds each call's events until release is closed, so every
// subscriber is following the live run before its first event is produced
// (else a fast run could end first and the benchmark would measure replay
// from the store instead of live fan-out).
type heldUpstream struct {
	*bridgetest.Upstream
	mu      sync.Mutex
	release chan struct{}
}

func (u *heldUpstream) hold() chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.release = make(chan struct{})
	return u.release
}

func (u *heldUpstream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	u.mu.Lock()
	rel := u.release
	u.mu.Unlock()
	if rel != nil {
		select {
		case <-rel:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return u.Upstream.Open(ctx, req)
}

func benchEngine(b *testing.B, up bridge.Upstream) (*bridge.Engine, *countingStore) {
	b.Helper()
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	store := &countingStore{Store: st}
	e, err := bridge.New(bridge.Config{Store: store, Route: func(string) (bridge.Upstream, error) { return up, nil }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			b.Error(err)
		}
		st.Close()
	})
	return e, store
}

// benchWords is the text of one run: n small deltas, like model tokens.
func benchWords(n int) []string {
	w := make([]string, n)
	for i := range w {
		w[i] = " tok" + strconv.Itoa(i%100)
	}
	return w
}

// BenchmarkEngineFanout measures the engine's hot path end to end: each
// iteration starts runs whose upstream yields text_delta events as fast as
// it can; every event is committed to a real SQLite file, then delivered to
// every subscriber, and the iteration ends when every subscriber has read
// its run to the final event.
//
// events/s counts committed events (every one of them also delivered to
// each subscriber); deliveries/s counts events times subscribers;
// events/commit is how many events the writer grouped per transaction.
func BenchmarkEngineFanout(b *testing.B) {
	cases := []struct {
		name               string
		runs, subs, deltas int
	}{
		{"subscribers=1", 1, 1, 10_000},
		{"subscribers=100", 1, 100, 10_000},
		{"runs=8/subscribers=1", 8, 1, 10_000},
		{"runs=8/subscribers=10", 8, 10, 10_000},
		// The load of tools/bridgeload's throughput phase without HTTP: 50
		// short runs at once, each a new session.
		{"runs=50/deltas=100", 50, 1, 100},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			deltas := c.deltas
			up := &heldUpstream{Upstream: &bridgetest.Upstream{Events: bridgetest.TextEvents(benchWords(deltas)...)}}
			e, store := benchEngine(b, up)
			ctx := b.Context()
			var committed, delivered int64
			commits0, events0 := store.commits.Load(), store.events.Load()
			b.ReportAllocs()
			for b.Loop() {
				release := up.hold()
				var wg sync.WaitGroup
				counts := make([]int64, c.runs*c.subs)
				errs := make([]error, c.runs*c.subs)
				for r := range c.runs {
					run, err := e.Start(ctx, &bridge.Request{Inbound: "bench", Model: "m", Full: true,
						Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("go " + strconv.Itoa(r))}}}})
					if err != nil {
						b.Fatal(err)
					}
					for s := range c.subs {
						_, events, err := e.Subscribe(ctx, run.ID, 0)
						if err != nil {
							b.Fatal(err)
						}
						i := r*c.subs + s
						wg.Go(func() {
							var last bridge.Event
							for ev, err := range events {
								if err != nil {
									errs[i] = err
									return
								}
								counts[i]++
								last = ev
							}
							if last.Kind != bridge.KindFinal || last.Final.Status != bridge.StatusCompleted {
								errs[i] = fmt.Errorf("stream ended with %s %+v", last.Kind, last.Final)
							}
						})
					}
				}
				close(release)
				wg.Wait()
				for i, n := range counts {
					if errs[i] != nil {
						b.Fatal(errs[i])
					}
					if n < int64(deltas) {
						b.Fatalf("subscriber %d got %d events, want more than %d", i, n, deltas)
					}
					delivered += n
					if i%c.subs == 0 {
						committed += n
					}
				}
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(committed)/sec, "events/s")
			b.ReportMetric(float64(delivered)/sec, "deliveries/s")
			b.ReportMetric(float64(b.N*c.runs)/sec, "runs/s")
			if n := store.commits.Load() - commits0; n > 0 {
				b.ReportMetric(float64(store.events.Load()-events0)/float64(n), "events/commit")
			}
		})
	}
}

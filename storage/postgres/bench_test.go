package postgres_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
			url := pgtest.Schema(b)
			s := benchStore(b, url)
			benchRuns(b, s, "run_bench")
			t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			batch := &bridge.Batch{Events: make([]bridge.Event, size)}
			for i := range batch.Events {
				batch.Events[i] = bridge.Event{RunID: "run_bench", Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: " token"}
			}
			var seq int64
			b.ReportAllocs()
			cpu := startCPU(b, url)
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
			cpu.report(seq)
		})
	}
}

// BenchmarkCommitRuns commits batches as a busy engine makes them: the
// deltas of 50 runs interleaved, a few of each run's per batch; the runs
// are of one session, or each of its own (sessions=50: a counter row of
// each session is numbered by each commit).
func BenchmarkCommitRuns(b *testing.B) {
	type shape struct{ each, sessions int }
	for _, sh := range []shape{{1, 1}, {2, 1}, {8, 1}, {8, 50}} {
		const runs = 50
		name := "runs=50/each=" + strconv.Itoa(sh.each)
		if sh.sessions > 1 {
			name += "/sessions=" + strconv.Itoa(sh.sessions)
		}
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			url := pgtest.Schema(b)
			s := benchStore(b, url)
			ids := make([]string, runs)
			for i := range ids {
				ids[i] = "run_bench_" + strconv.Itoa(i)
			}
			if sh.sessions == 1 {
				benchRuns(b, s, ids...)
			} else {
				t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
				for _, id := range ids {
					if err := s.CreateRun(ctx, &bridge.Run{ID: id, SessionID: "sess_" + id, Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			batch := &bridge.Batch{Events: make([]bridge.Event, runs*sh.each)}
			var seq int64
			b.ReportAllocs()
			cpu := startCPU(b, url)
			for b.Loop() {
				for k := range sh.each {
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
			cpu.report(seq * runs)
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

// cpuClock measures the CPU time a benchmark takes: the database server's
// (every process of it: the backends, the WAL writer, ...) and this
// process's. On a machine shared with other work, a benchmark's wall time
// (events/s) moves with the load by 2-3x while its CPU time a event
// moves far less: it is what a quiet machine's throughput follows.
type cpuClock struct {
	b        *testing.B
	server   int // the postmaster's pid, 0 when not found (not Linux)
	db0, me0 time.Duration
}

func startCPU(b *testing.B, url string) *cpuClock {
	conn, err := pgx.Connect(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(b.Context())
	var pid int
	if err := conn.QueryRow(b.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	c := &cpuClock{b: b, server: parentPID(pid)}
	c.db0, c.me0 = c.serverCPU(), processCPU()
	return c
}

// report reports the CPU time of each of n events since startCPU.
func (c *cpuClock) report(n int64) {
	if c.server == 0 || n == 0 {
		return
	}
	c.b.ReportMetric(float64((c.serverCPU()-c.db0).Nanoseconds())/1000/float64(n), "db-cpu-µs/event")
	c.b.ReportMetric(float64((processCPU()-c.me0).Nanoseconds())/1000/float64(n), "go-cpu-µs/event")
}

// serverCPU sums the time on CPU (/proc/<pid>/schedstat) of the server's
// processes.
func (c *cpuClock) serverCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var sum time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid != c.server && parentPID(pid) != c.server {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/schedstat")
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(n)
		}
	}
	return sum
}

// parentPID is pid's parent's, or 0.
func parentPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// processCPU is this process's user and system time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

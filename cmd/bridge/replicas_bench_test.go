package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// The replica benchmarks run against pgtest's PostgreSQL server (fsync
// off), the bridges in this process:
//
//	go test -run '^$' -bench 'CrossReplicaDelay|SessionChannelDelay|FirstBytePostgres' -benchtime 200x ./cmd/bridge/

// BenchmarkCrossReplicaDelay: replica a drives a run (the echo model, a
// word every 2ms) for its client; a client of replica b follows the run
// (GET /v1/runs/{id}/events) from the start. Each iteration is one run of
// 40 words; for every event b's client gets live (committed after b's
// first event reached it), the delay is its arrival at b's client less its
// arrival at a's, which a sends right after its commit: the issue's "from
// a's commit to b's client". Reported: p50, p99 and max in ms.
func BenchmarkCrossReplicaDelay(b *testing.B) {
	db := pgtest.Schema(b)
	cfg := defaultConfig()
	cfg.EchoDelay = 2 * time.Millisecond
	a, f := "http://"+benchMainOn(b, cfg, db).Addr(), "http://"+benchMainOn(b, cfg, db).Addr()
	input := strings.TrimSpace(strings.Join(words("d", 40), ""))
	client := &http.Client{}
	var delays []time.Duration
	for b.Loop() {
		req, _ := http.NewRequestWithContext(b.Context(), "POST", a+"/v1/chat/completions",
			strings.NewReader(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+input+`"}]}`))
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		run := resp.Header.Get("X-Run-Id")
		var (
			wg     sync.WaitGroup
			atB    map[string]time.Time
			bFirst time.Time
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(b.Context(), "GET", f+"/v1/runs/"+run+"/events", nil)
			r, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			defer r.Body.Close()
			atB = sseArrivals(r.Body, &bFirst)
		}()
		atA := sseArrivals(resp.Body, nil)
		resp.Body.Close()
		wg.Wait()
		for id, ta := range atA {
			if tb, ok := atB[id]; ok && ta.After(bFirst) {
				delays = append(delays, tb.Sub(ta))
			}
		}
	}
	if len(delays) == 0 {
		b.Fatal("no event reached b's client live")
	}
	reportDelays(b, delays)
	b.ReportMetric(float64(len(delays))/float64(b.N), "live-events/run")
}

// reportDelays reports the p50, p99 and max of delays (sorted here) in ms.
func reportDelays(b *testing.B, delays []time.Duration) {
	slices.Sort(delays)
	q := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkSessionChannelDelay: a session channel (GET
// /v1/sessions/{s}/events) open on replica a and one open on replica b;
// each iteration, a's client starts a run of the session on a (the echo
// model, 40 words 2ms apart) and reads it, and the benchmark waits for
// both channels to carry the run's end frame. For every frame of the run
// (its start frame included), the delay is its arrival at b's channel less
// its arrival at a's, which a's commit wakes at once: from a's commit to
// b's subscriber, as the notification (or, without it, b's poll) brings
// it. Reported: p50, p99 and max in ms.
func BenchmarkSessionChannelDelay(b *testing.B) {
	db := pgtest.Schema(b)
	cfg := defaultConfig()
	cfg.EchoDelay = 2 * time.Millisecond
	a, f := "http://"+benchMainOn(b, cfg, db).Addr(), "http://"+benchMainOn(b, cfg, db).Addr()
	const sid = "bench-channel"
	input := strings.TrimSpace(strings.Join(words("d", 40), ""))
	client := &http.Client{}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	type channel struct {
		mu    sync.Mutex
		at    map[string]time.Time
		ended chan struct{}
	}
	open := func(base string) *channel {
		c := &channel{at: map[string]time.Time{}, ended: make(chan struct{}, 1024)}
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+sid+"/events?format=openai", nil)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("channel on %s: %v %v", base, err, resp)
		}
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if id, ok := strings.CutPrefix(line, "id: "); ok {
					now := time.Now()
					c.mu.Lock()
					c.at[id] = now
					c.mu.Unlock()
				}
				if line == "event: bridge.run.ended" {
					c.ended <- struct{}{}
				}
			}
		}()
		return c
	}
	onA, onB := open(a), open(f)
	wait := func(c *channel) {
		select {
		case <-c.ended:
		case <-time.After(30 * time.Second):
			b.Fatal("a channel did not carry a run's end in 30s")
		}
	}
	var delays []time.Duration
	frames := 0
	for b.Loop() {
		req, _ := http.NewRequestWithContext(ctx, "POST", a+"/v1/chat/completions",
			strings.NewReader(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+input+`"}]}`))
		req.Header.Set("X-Session-Id", sid)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		wait(onA)
		wait(onB)
		onA.mu.Lock()
		onB.mu.Lock()
		for id, ta := range onA.at {
			if tb, ok := onB.at[id]; ok {
				delays = append(delays, tb.Sub(ta))
				frames++
			}
		}
		clear(onA.at)
		clear(onB.at)
		onB.mu.Unlock()
		onA.mu.Unlock()
	}
	if len(delays) == 0 {
		b.Fatal("no frame reached both channels")
	}
	reportDelays(b, delays)
	b.ReportMetric(float64(frames)/float64(b.N), "frames/run")
}

// sseArrivals reads an SSE body to its end and returns when each event id
// arrived; first, when not nil, gets the first event's arrival.
func sseArrivals(r interface{ Read([]byte) (int, error) }, first *time.Time) map[string]time.Time {
	at := map[string]time.Time{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			now := time.Now()
			if first != nil && first.IsZero() {
				*first = now
			}
			at[id] = now
		}
	}
	return at
}

// BenchmarkFirstBytePostgres: the time to first content of a stream (the
// echo model, no delay: the bridge's own time, most of it the new run's
// commit) on a bridge whose log is PostgreSQL beside one whose log is a
// SQLite file, the two requests of each iteration in turns. Reported: the
// median of each and what PostgreSQL adds (pg-added-µs).
func BenchmarkFirstBytePostgres(b *testing.B) {
	cfg := defaultConfig()
	lite := "http://" + benchMainOn(b, cfg, filepath.Join(b.TempDir(), "bridge.db")).Addr()
	pg := "http://" + benchMainOn(b, cfg, pgtest.Schema(b)).Addr()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(client.CloseIdleConnections)
	first := func(base string) time.Duration {
		ctx, cancel := context.WithTimeout(b.Context(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"first byte"}]}`))
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var took time.Duration
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if took == 0 && strings.Contains(sc.Text(), `"content":"`) {
				took = time.Since(start)
			}
		}
		if took == 0 {
			b.Fatalf("%s: no content", base)
		}
		return took
	}
	var onLite, onPG []time.Duration
	i := 0
	for b.Loop() {
		if i++; i%2 == 0 {
			onLite = append(onLite, first(lite))
			onPG = append(onPG, first(pg))
		} else {
			onPG = append(onPG, first(pg))
			onLite = append(onLite, first(lite))
		}
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	l, p := med(onLite), med(onPG)
	b.ReportMetric(l, "sqlite-first-µs")
	b.ReportMetric(p, "pg-first-µs")
	b.ReportMetric(p-l, "pg-added-µs")
}

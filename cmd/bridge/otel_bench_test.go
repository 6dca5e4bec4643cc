package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// startBenchMain runs a bridge with cfg on 127.0.0.1:0 and a temp database;
// it closes it (flushing its telemetry) at cleanup.
func startBenchMain(tb testing.TB, cfg Config) *Main {
	tb.Helper()
	return benchMainOn(tb, cfg, filepath.Join(tb.TempDir(), "bridge.db"))
}

// benchMainOn starts a bridge for a benchmark with its log in db (a SQLite
// file or a postgres:// URL), logging nothing.
func benchMainOn(tb testing.TB, cfg Config, db string) *Main {
	tb.Helper()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = db
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	m, err := NewMain(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = m.Run() }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m
}

// benchBody is the streamed request every benchmark iteration sends.
const benchBody = `{"model":"gpt-bench","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"count to eight"}]}`

// benchUpstream is a local OpenAI upstream answering 8 words, a finish
// and usage.
func benchUpstream(b *testing.B) *openaitest.Server {
	up := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-bench", Model: "gpt-bench"}
		return openaitest.Reply{Chunks: c.Role().Text(openaitest.Words("one two three four five six seven eight")...).
			Finish("stop").Usage(12, 8).List()}
	})
	b.Cleanup(up.Close)
	return up
}

// benchBridge starts a bridge over up with env as its OTEL_* environment
// (a name env does not set is empty); the bridge reads it as it starts.
func benchBridge(b *testing.B, up *openaitest.Server, env map[string]string) *Main {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_TRACES_SAMPLER", "OTEL_METRICS_EXPORTER", "OTEL_SDK_DISABLED"} {
		b.Setenv(k, env[k])
	}
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "openai", Dialect: "openai", URL: up.BaseURL()}}
	return startBenchMain(b, cfg)
}

// BenchmarkOpenAIToOpenAI is one streamed Chat Completions request through
// the bridge to an openai upstream (a local fake answering 8 words, a
// finish and usage), one request at a time, with tracing off and on: off
// is OTEL_TRACES_EXPORTER=none (the traceparent still propagates); on is
// the always_on sampler and the batch OTLP/HTTP exporter to a local
// receiver (which reads and drops what it is sent, so decoding costs the
// benchmark nothing); on+metrics adds the Prometheus meter provider. Every request
// carries a traceparent. The difference between the sub-benchmarks' ns/op
// is the added cost per request.
//
//	go test -run '^$' -bench OpenAIToOpenAI -benchtime 3000x -count 6 ./cmd/bridge/
func BenchmarkOpenAIToOpenAI(b *testing.B) {
	rcv := newDiscardReceiver()
	b.Cleanup(rcv.Close)
	up := benchUpstream(b)
	modes := []struct {
		name string
		env  map[string]string
	}{
		{"tracing=off", map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{"tracing=on", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
			"OTEL_TRACES_SAMPLER": "always_on"}},
		{"tracing=on,metrics=on", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
			"OTEL_TRACES_SAMPLER": "always_on", "OTEL_METRICS_EXPORTER": "prometheus"}},
	}
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			m := benchBridge(b, up, mode.env)
			url := "http://" + m.Addr() + "/v1/chat/completions"
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer client.CloseIdleConnections()
			before := rcv.bytes.Load()
			cpu0 := processCPU()
			b.ReportAllocs()
			for b.Loop() {
				benchRequest(b, client, url, benchBody)
			}
			b.StopTimer()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = m.Close(ctx) // flushes the batch exporter
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(rcv.bytes.Load()-before)/float64(b.N), "exported-B/op")
		})
	}
}

// benchRequest sends one streamed request with a traceparent and reads it
// to its end.
func benchRequest(b *testing.B, client *http.Client, url, body string) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n == 0 {
		b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
	}
}

// processCPU is the CPU time this process has used (user and system), in
// ns: unlike wall time it does not grow when other processes load the
// machine.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkTracingOverheadPaired runs a bridge with tracing off and one
// with tracing on (always_on, batch OTLP export to a local receiver) side
// by side and sends each iteration one request to each, in alternating
// order, so both see the same machine load. It reports each one's wall
// time per request and the difference.
//
//	go test -run '^$' -bench TracingOverheadPaired -benchtime 3000x -count 3 ./cmd/bridge/
func BenchmarkTracingOverheadPaired(b *testing.B) {
	rcv := newDiscardReceiver()
	b.Cleanup(rcv.Close)
	up := benchUpstream(b)
	start := func(env map[string]string) string {
		return "http://" + benchBridge(b, up, env).Addr() + "/v1/chat/completions"
	}
	off := start(map[string]string{"OTEL_TRACES_EXPORTER": "none"})
	on := start(map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_TRACES_SAMPLER": "always_on"})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	var tOff, tOn time.Duration
	i := 0
	for b.Loop() {
		urls := [2]string{off, on}
		if i%2 == 1 {
			urls = [2]string{on, off}
		}
		for _, u := range urls {
			t0 := time.Now()
			benchRequest(b, client, u, benchBody)
			if u == on {
				tOn += time.Since(t0)
			} else {
				tOff += time.Since(t0)
			}
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(tOff.Nanoseconds())/n, "off-ns/req")
	b.ReportMetric(float64(tOn.Nanoseconds())/n, "on-ns/req")
	b.ReportMetric(float64((tOn-tOff).Nanoseconds())/n, "added-ns/req")
}

// discardReceiver is an OTLP endpoint that reads export requests, counts
// their bytes and drops them (oteltest.Receiver decodes them, which would
// add the test's own work to the bridge's).
type discardReceiver struct {
	*httptest.Server
	bytes atomic.Int64
}

func newDiscardReceiver() *discardReceiver {
	d := &discardReceiver{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		d.bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	return d
}

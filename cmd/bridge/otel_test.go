package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/otel/oteltest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

const (
	otelParentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	otelParentSpan  = "00f067aa0ba902b7"
	otelTraceparent = "00-" + otelParentTrace + "-" + otelParentSpan + "-01"
)

// postChat posts a chat completion with the headers and reads the whole
// response. It returns the run id and the body.
func postChat(t testing.TB, base, body string, header map[string]string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, b)
	}
	return resp.Header.Get("X-Run-Id"), string(b)
}

func otelUpstream(t testing.TB) *openaitest.Server {
	up := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-up", Model: "gpt-up"}
		return openaitest.Reply{Chunks: c.Role().Text("hello", " from", " upstream").Finish("stop").Usage(9, 3).List()}
	})
	t.Cleanup(up.Close)
	return up
}

// TestServeExportsOTLP starts `bridge serve` with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a local receiver, sends one openai -> openai stream with a
// traceparent, stops the bridge with SIGTERM, and decodes the spans its
// shutdown flushed: one trace, server span child of the given parent, the
// run span, the upstream client span with its GenAI attributes.
func TestServeExportsOTLP(t *testing.T) {
	rcv := oteltest.NewReceiver()
	defer rcv.Close()
	up := otelUpstream(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "bridge-e2e")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "openai="+up.BaseURL())

	runID, body := postChat(t, base, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Traceparent": otelTraceparent})
	if !strings.Contains(body, "[DONE]") {
		t.Fatalf("stream did not end: %s", body)
	}
	termBridge(t, proc, 20*time.Second)

	spans := rcv.Spans()
	server, run, client := rcv.Named("POST /v1/chat/completions"), rcv.Named("run"), rcv.Named("chat m")
	if server == nil || run == nil || client == nil {
		t.Fatalf("missing spans; received %+v", spans)
	}
	for _, s := range spans {
		if s.TraceID != otelParentTrace || s.Service != "bridge-e2e" {
			t.Errorf("span %q: trace %s service %q", s.Name, s.TraceID, s.Service)
		}
	}
	if server.ParentSpanID != otelParentSpan || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span: parent %s kind %v", server.ParentSpanID, server.Kind)
	}
	if run.ParentSpanID != server.SpanID || client.ParentSpanID != run.SpanID || client.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("parents: run's %s (server %s), client's %s (run %s), client kind %v",
			run.ParentSpanID, server.SpanID, client.ParentSpanID, run.SpanID, client.Kind)
	}
	want := map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m",
		"gen_ai.response.model": "gpt-up", "gen_ai.usage.input_tokens": "9", "gen_ai.usage.output_tokens": "3",
		"gen_ai.response.finish_reasons": "stop",
	}
	for k, v := range want {
		if client.Attributes[k] != v {
			t.Errorf("client span %s = %q, want %q", k, client.Attributes[k], v)
		}
	}
	if run.Attributes["bridge.run.id"] != runID || server.Attributes["http.route"] != "/v1/chat/completions" {
		t.Errorf("run span %v, server span %v", run.Attributes, server.Attributes)
	}
	for _, s := range []*oteltest.Span{run, client} {
		if !strings.Contains(strings.Join(s.Events, ","), "first_token") {
			t.Errorf("span %q events %v lack first_token", s.Name, s.Events)
		}
	}
	if got := up.Requests()[0].Header.Get("Traceparent"); got != "00-"+otelParentTrace+"-"+client.SpanID+"-01" {
		t.Errorf("upstream traceparent %q, want the client span %s of trace %s", got, client.SpanID, otelParentTrace)
	}
	// The stored run names the trace.
	out := runCLI(t, "runs", "show", runID, "--db", db)
	if !strings.Contains(out, "trace      "+otelParentTrace) {
		t.Errorf("runs show:\n%s", out)
	}
}

// TestServeNoExporterKeepsTraceID: with OTEL_TRACES_EXPORTER=none the run
// still keeps the inbound traceparent's trace id, and the upstream gets a
// traceparent of that trace.
func TestServeNoExporterKeepsTraceID(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	up := otelUpstream(t)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "openai", Dialect: "openai", URL: up.BaseURL()}}
	m := startMain(t, cfg)
	base := "http://" + m.Addr()
	runID, _ := postChat(t, base, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Traceparent": otelTraceparent})
	resp, err := http.Get(base + "/v1/runs/" + runID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var run bridge.Run
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil {
		t.Fatal(err)
	}
	if run.TraceID != otelParentTrace {
		t.Errorf("run trace id %q, want %s", run.TraceID, otelParentTrace)
	}
	if got := up.Requests()[0].Header.Get("Traceparent"); !strings.HasPrefix(got, "00-"+otelParentTrace+"-") {
		t.Errorf("upstream traceparent %q", got)
	}
}

// TestServeMetrics: OTEL_METRICS_EXPORTER=prometheus serves GET /metrics in
// the Prometheus text format; without it there is no /metrics.
func TestServeMetrics(t *testing.T) {
	m := startMain(t, defaultConfig())
	resp, err := http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics without the exporter: %d", resp.StatusCode)
	}

	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	m = startMain(t, defaultConfig())
	base := "http://" + m.Addr()
	postChat(t, base, `{"model":"echo","stream":true,"messages":[{"role":"user","content":"a b c"}]}`, nil)
	want := []string{
		`bridge_runs_started_total{bridge_dialect_inbound="openai",bridge_dialect_outbound="echo"`,
		`bridge_runs_ended_total{bridge_dialect_inbound="openai",bridge_dialect_outbound="echo",bridge_run_outcome="completed"`,
		`bridge_run_time_to_first_token_seconds_count{`,
		`bridge_run_duration_seconds_count{`,
		`bridge_streams_active{`,
	}
	var body string
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err = http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, want[1]) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	if !strings.Contains(strings.Join(m.Endpoints(), " "), "GET /metrics") {
		t.Errorf("endpoints %v do not list /metrics", m.Endpoints())
	}
}

// syncLog is a log destination tests read, by line, while the bridge
// writes.
type syncLog struct{ syncBuffer }

func (l *syncLog) lines() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestRunEndLog: one structured line per run end, with run id, trace id,
// dialects, outcome, ttft and duration, and no message content.
func TestRunEndLog(t *testing.T) {
	cfg := defaultConfig()
	cfg.Listen, cfg.DB = "127.0.0.1:0", filepath.Join(t.TempDir(), "bridge.db")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncLog{}
	m, err := NewMain(t.Context(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Run() }()
	runID, _ := postChat(t, "http://"+m.Addr(), `{"model":"echo","stream":true,"messages":[{"role":"user","content":"very secret words"}]}`,
		map[string]string{"Traceparent": otelTraceparent})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var ended []map[string]any
	for _, l := range logs.lines() {
		if strings.Contains(l, "secret") {
			t.Errorf("log line carries message content: %s", l)
		}
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "run ended" {
			ended = append(ended, rec)
		}
	}
	if len(ended) != 1 {
		t.Fatalf("%d run ended lines: %v", len(ended), logs.lines())
	}
	rec := ended[0]
	for k, v := range map[string]any{"run": runID, "trace_id": otelParentTrace, "inbound": "openai", "outbound": "echo", "status": "completed"} {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
	ttft, ok1 := rec["ttft_ms"].(float64)
	dur, ok2 := rec["duration_ms"].(float64)
	if !ok1 || !ok2 || ttft < 0 || dur < ttft {
		t.Errorf("ttft_ms %v duration_ms %v", rec["ttft_ms"], rec["duration_ms"])
	}
}

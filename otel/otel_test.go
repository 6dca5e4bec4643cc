package otel_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sony/gobreaker"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/outbound"
	outa2a "github.com/bridge-dev/bridge/outbound/a2a"
	outopenai "github.com/bridge-dev/bridge/outbound/openai"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
	traceparent = "00-" + parentTrace + "-" + parentSpan + "-01"
)

// stack is a bridge wired as cmd/bridge wires it (one openai upstream),
// over a Telemetry the test chose.
type stack struct {
	url    string
	up     *openaitest.Server
	engine *bridge.Engine
	store  *sqlite.Store
}

func newStack(t *testing.T, tel *otel.Telemetry, reply func(n int, body []byte) openaitest.Reply) *stack {
	t.Helper()
	up := openaitest.New(reply)
	t.Cleanup(up.Close)
	client := outopenai.New(outopenai.Config{Name: "up", BaseURL: up.BaseURL(),
		HTTPClient: outbound.NewHTTPClient(outbound.Timeouts{}, tel.Transport)})
	wrapped := outbound.Wrap(client, tel.Upstream(client, otel.GenAI{Provider: "openai", Operation: "chat"}))
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	engine, err := bridge.New(bridge.Config{Store: store, Tracer: tel.Tracer(),
		Route: func(string) (bridge.Upstream, error) { return wrapped, nil }})
	if err != nil {
		t.Fatal(err)
	}
	oa := inopenai.New(inopenai.Config{Engine: engine})
	ra := runs.New(runs.Config{Engine: engine, Default: oa, Dialects: map[string]inbound.Dialect{oa.Name(): oa}})
	mux := http.NewServeMux()
	for _, p := range oa.Routes() {
		mux.Handle(p, oa)
	}
	for _, p := range ra.Routes() {
		mux.Handle(p, ra)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(tel.Handler(mux, "/healthz"))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = engine.Close(ctx)
		store.Close()
	})
	return &stack{url: srv.URL, up: up, engine: engine, store: store}
}

func textReply(int, []byte) openaitest.Reply {
	c := &openaitest.Chunks{ID: "chatcmpl-up1", Model: "gpt-test-2025"}
	return openaitest.Reply{Chunks: c.Role().Text("hello", " there").Finish("stop").Usage(7, 2).List()}
}

// chat posts a streamed chat completion and reads it to its end. It
// returns the run id.
func (s *stack) chat(t *testing.T, header http.Header, body string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		if sc.Text() == "data: [DONE]" {
			done = true
		}
	}
	if !done {
		t.Fatalf("stream ended without [DONE]: %v", sc.Err())
	}
	return resp.Header.Get("X-Run-Id")
}

// waitSpans polls the exporter until a span named each of names has ended
// (the run span ends just after the response does).
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, names ...string) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		spans := exp.GetSpans()
		missing := false
		for _, n := range names {
			if spanNamed(spans, n) == nil {
				missing = true
			}
		}
		if !missing {
			return spans
		}
		if time.Now().After(deadline) {
			var got []string
			for _, s := range spans {
				got = append(got, s.Name)
			}
			t.Fatalf("spans %v did not all end; have %v", names, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func spanNamed(spans tracetest.SpanStubs, name string) *tracetest.SpanStub {
	for i := range spans {
		if spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

func attrs(s *tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func hasEvent(s *tracetest.SpanStub, name string) bool {
	return slices.ContainsFunc(s.Events, func(e sdktrace.Event) bool { return e.Name == name })
}

func newTelemetry(t *testing.T, cfg otel.Config) (*otel.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg.TracerProvider = tp
	tel, err := otel.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tel, exp
}

// TestOneTrace: an openai -> openai streamed request with a traceparent is
// one trace: the server span is the child of the given parent, the run span
// and the upstream client span are in it, the upstream received a
// traceparent of the same trace, the GenAI attributes are set and the first
// token is an event.
func TestOneTrace(t *testing.T) {
	tel, exp := newTelemetry(t, otel.Config{})
	s := newStack(t, tel, textReply)
	runID := s.chat(t, http.Header{"Traceparent": {traceparent}},
		`{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"secret prompt"}]}`)

	spans := waitSpans(t, exp, "POST /v1/chat/completions", "run", "chat gpt-test")
	server, run, client := spanNamed(spans, "POST /v1/chat/completions"), spanNamed(spans, "run"), spanNamed(spans, "chat gpt-test")
	for _, sp := range spans {
		if got := sp.SpanContext.TraceID().String(); got != parentTrace {
			t.Errorf("span %q is in trace %s, want %s", sp.Name, got, parentTrace)
		}
	}
	if server.Parent.SpanID().String() != parentSpan || !server.Parent.IsRemote() || server.SpanKind != trace.SpanKindServer {
		t.Errorf("server span parent %s remote=%v kind %v; want the remote %s, server", server.Parent.SpanID(), server.Parent.IsRemote(), server.SpanKind, parentSpan)
	}
	if run.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("run span's parent is %s, not the server span %s", run.Parent.SpanID(), server.SpanContext.SpanID())
	}
	if client.Parent.SpanID() != run.SpanContext.SpanID() || client.SpanKind != trace.SpanKindClient {
		t.Errorf("client span's parent is %s (kind %v), not the run span %s", client.Parent.SpanID(), client.SpanKind, run.SpanContext.SpanID())
	}

	reqs := s.up.Requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	got := reqs[0].Header.Get("Traceparent")
	want := "00-" + parentTrace + "-" + client.SpanContext.SpanID().String() + "-01"
	if got != want {
		t.Errorf("upstream traceparent %q, want %q (the client span's)", got, want)
	}

	wantServer := map[string]string{
		"http.request.method": "POST", "http.route": "/v1/chat/completions", "url.path": "/v1/chat/completions",
		"url.scheme": "http", "http.response.status_code": "200", "bridge.run.id": runID, "network.protocol.version": "1.1",
	}
	checkAttrs(t, server, wantServer)
	checkAttrs(t, run, map[string]string{
		"bridge.run.id": runID, "bridge.dialect.inbound": "openai", "bridge.dialect.outbound": "openai",
		"bridge.upstream.name": "up", "gen_ai.request.model": "gpt-test", "bridge.run.outcome": "completed",
		"gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": "2",
	})
	if attrs(run)["bridge.session.id"] == "" {
		t.Error("run span has no session id")
	}
	checkAttrs(t, client, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
		"gen_ai.request.model": "gpt-test", "gen_ai.response.model": "gpt-test-2025", "gen_ai.response.id": "chatcmpl-up1",
		"gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": "2",
		"gen_ai.response.finish_reasons": `["stop"]`, "bridge.run.outcome": "completed",
	})
	for _, sp := range []*tracetest.SpanStub{run, client} {
		if !hasEvent(sp, otel.EventFirstToken) {
			t.Errorf("span %q has no %s event: %+v", sp.Name, otel.EventFirstToken, sp.Events)
		}
	}
	// No message content unless asked for.
	for _, sp := range spans {
		for _, kv := range sp.Attributes {
			if strings.Contains(kv.Value.Emit(), "secret prompt") || strings.Contains(kv.Value.Emit(), "hello") {
				t.Errorf("span %q records content in %s", sp.Name, kv.Key)
			}
		}
	}

	stored, err := s.store.Run(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.TraceID != parentTrace {
		t.Errorf("stored trace id %q, want %s", stored.TraceID, parentTrace)
	}
}

func checkAttrs(t *testing.T, s *tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, got[k], v)
		}
	}
}

// TestNoProviderKeepsTraceID: with no tracer provider (no exporter) the
// inbound traceparent's trace id is still the run's, and still goes
// upstream.
func TestNoProviderKeepsTraceID(t *testing.T) {
	tel, err := otel.New(otel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, tel, textReply)
	runID := s.chat(t, http.Header{"Traceparent": {traceparent}},
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	run, err := s.engine.Run(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.TraceID != parentTrace {
		t.Errorf("run trace id %q, want %s", run.TraceID, parentTrace)
	}
	if got := s.up.Requests()[0].Header.Get("Traceparent"); !strings.Contains(got, parentTrace) {
		t.Errorf("upstream traceparent %q is not of trace %s", got, parentTrace)
	}

	// Without a traceparent there is no trace id to keep.
	runID = s.chat(t, nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if run, _ = s.engine.Run(t.Context(), runID); run.TraceID != "" {
		t.Errorf("run without a traceparent has trace id %q", run.TraceID)
	}
	if got := s.up.Requests()[1].Header.Get("Traceparent"); got != "" {
		t.Errorf("upstream got traceparent %q with nothing to propagate", got)
	}
}

// TestRecordContent: the option puts messages and the answer on the span.
func TestRecordContent(t *testing.T) {
	tel, exp := newTelemetry(t, otel.Config{RecordContent: true})
	s := newStack(t, tel, textReply)
	s.chat(t, nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"secret prompt"}]}`)
	client := spanNamed(waitSpans(t, exp, "chat m", "run"), "chat m")
	a := attrs(client)
	if !strings.Contains(a["gen_ai.input.messages"], "secret prompt") {
		t.Errorf("gen_ai.input.messages = %q", a["gen_ai.input.messages"])
	}
	if !strings.Contains(a["gen_ai.output.messages"], "hello there") {
		t.Errorf("gen_ai.output.messages = %q", a["gen_ai.output.messages"])
	}
}

// TestToolCallsAndResume: each tool call is a span; the request that brings
// the tool results continues the run, whose new span has a resume event and
// links back to the trace the run started in.
func TestToolCallsAndResume(t *testing.T) {
	tel, exp := newTelemetry(t, otel.Config{})
	s := newStack(t, tel, func(n int, _ []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-t", Model: "m"}
		if n == 0 {
			return openaitest.Reply{Chunks: c.Role().ToolCall(0, "call_a", "get_weather", `{"city":`, `"Oslo"}`).
				ToolCall(1, "call_b", "get_time", `{}`).Finish("tool_calls").List()}
		}
		return openaitest.Reply{Chunks: c.Role().Text("sunny").Finish("stop").List()}
	})
	hdr := http.Header{"Traceparent": {traceparent}, "X-Session-Id": {"s1"}}
	first := s.chat(t, hdr, `{"model":"m","stream":true,"messages":[{"role":"user","content":"weather?"}]}`)
	spans := waitSpans(t, exp, "run", "tool_call get_weather", "tool_call get_time")
	client := spanNamed(spans, "chat m")
	for _, name := range []string{"get_weather", "get_time"} {
		ts := spanNamed(spans, "tool_call "+name)
		if ts.Parent.SpanID() != client.SpanContext.SpanID() {
			t.Errorf("tool span %s is not the client span's child", name)
		}
		checkAttrs(t, ts, map[string]string{"gen_ai.tool.name": name, "bridge.tool_call.executor": "client"})
		if strings.Contains(attrs(ts)["gen_ai.tool.call.arguments"], "Oslo") {
			t.Error("tool arguments recorded without RecordContent")
		}
	}
	checkAttrs(t, spanNamed(spans, "tool_call get_weather"), map[string]string{"gen_ai.tool.call.id": "call_a"})
	checkAttrs(t, client, map[string]string{"gen_ai.response.finish_reasons": `["tool_calls"]`})
	exp.Reset()

	other := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	hdr.Set("Traceparent", other)
	second := s.chat(t, hdr, `{"model":"m","stream":true,"messages":[{"role":"user","content":"weather?"},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
		{"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"sunny"},{"role":"tool","tool_call_id":"call_b","content":"noon"}]}`)
	if second != first {
		t.Fatalf("tool results started run %s, not continued %s", second, first)
	}
	run := spanNamed(waitSpans(t, exp, "run"), "run")
	if !hasEvent(run, "resume") {
		t.Errorf("continued run span has no resume event: %+v", run.Events)
	}
	if len(run.Links) != 1 || run.Links[0].SpanContext.TraceID().String() != parentTrace {
		t.Errorf("continued run span links %+v, want one to trace %s", run.Links, parentTrace)
	}
	if got := run.SpanContext.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("continued run span is in trace %s, not the request's", got)
	}
	stored, _ := s.store.Run(t.Context(), first)
	if stored.TraceID != parentTrace {
		t.Errorf("continued run keeps trace id %q, want the original %s", stored.TraceID, parentTrace)
	}
}

// TestCancelEvent: a cancelled run's span has a cancel event, and a replay
// from a cursor is a resume event on the replay request's span.
func TestCancelEvent(t *testing.T) {
	tel, exp := newTelemetry(t, otel.Config{})
	words := make([]string, 100)
	for i := range words {
		words[i] = "w "
	}
	s := newStack(t, tel, func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "x", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text(words...).Finish("stop").List(), Delay: 20 * time.Millisecond}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("X-Session-Id", "c1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	runID := resp.Header.Get("X-Run-Id")
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 3 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	cresp, err := http.Post(s.url+"/v1/runs/"+runID+"/cancel", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	cresp.Body.Close()
	spans := waitSpans(t, exp, "run", "POST /v1/runs/{run}/cancel")
	if run := spanNamed(spans, "run"); !hasEvent(run, "cancel") || attrs(run)["bridge.run.outcome"] != "cancelled" {
		t.Errorf("cancelled run span: events %+v attributes %v", run.Events, attrs(run))
	}

	r, err := http.Get(s.url + "/v1/runs/" + runID + "/events?after=2")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	ev := spanNamed(waitSpans(t, exp, "GET /v1/runs/{run}/events"), "GET /v1/runs/{run}/events")
	if !hasEvent(ev, "resume") || attrs(ev)["http.route"] != "/v1/runs/{run}/events" {
		t.Errorf("replay span: events %+v attributes %v", ev.Events, attrs(ev))
	}
}

// TestServerSpanNames: spans are named by the route the mux matched, not
// the raw path; unmatched requests keep the bare method; skipped paths get
// no span.
func TestServerSpanNames(t *testing.T) {
	tel, exp := newTelemetry(t, otel.Config{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{run}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(tel.Handler(mux, "/healthz"))
	defer srv.Close()
	for _, p := range []string{"/v1/runs/run_123", "/nope", "/boom", "/healthz"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var got []string
	for _, s := range exp.GetSpans() {
		got = append(got, s.Name+" "+attrs(&s)["http.response.status_code"]+" "+s.Status.Code.String())
	}
	want := []string{"GET /v1/runs/{run} 204 Unset", "GET 404 Unset", "GET /boom 502 Error"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span names (-want +got)\n%s", diff)
	}
}

// TestMetrics reads the run metrics after one run and one upstream error.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel, err := otel.New(otel.Config{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, tel, func(n int, b []byte) openaitest.Reply {
		if n == 1 {
			return openaitest.Reply{Status: 500, Body: openaitest.ErrorBody("server_error", "boom", "")}
		}
		return textReply(n, b)
	})
	s.chat(t, nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	resp, err := http.Post(s.url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	tel.OnBreakerChange("up", gobreaker.StateClosed, gobreaker.StateOpen)

	var rm metricdata.ResourceMetrics
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := reader.Collect(t.Context(), &rm); err != nil {
			t.Fatal(err)
		}
		if sum(rm, otel.MetricRunsEnded, nil) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	pair := map[string]string{"bridge.dialect.inbound": "openai", "bridge.dialect.outbound": "openai"}
	checks := []struct {
		metric string
		attrs  map[string]string
		want   int64
	}{
		{otel.MetricRunsStarted, pair, 2},
		{otel.MetricRunsEnded, map[string]string{"bridge.run.outcome": "completed"}, 1},
		{otel.MetricRunsEnded, map[string]string{"bridge.run.outcome": "failed"}, 1},
		{otel.MetricUpstreamErrs, map[string]string{"bridge.upstream.name": "up", "error.type": "upstream"}, 1},
		{otel.MetricActiveStreams, nil, 0},
		{otel.MetricTTFT, pair, 1},
		{otel.MetricRunDuration, pair, 2},
		{otel.MetricBreakerChange, map[string]string{"bridge.upstream.name": "up", "bridge.breaker.from": "closed", "bridge.breaker.to": "open"}, 1},
		{otel.MetricBreakerState, map[string]string{"bridge.upstream.name": "up"}, 2},
	}
	for _, c := range checks {
		if got := sum(rm, c.metric, c.attrs); got != c.want {
			t.Errorf("%s%v = %d, want %d", c.metric, c.attrs, got, c.want)
		}
	}
}

// sum adds a metric's points whose attributes include want: counter values,
// histogram counts.
func sum(rm metricdata.ResourceMetrics, name string, want map[string]string) int64 {
	match := func(set attribute.Set) bool {
		for k, v := range want {
			if got, ok := set.Value(attribute.Key(k)); !ok || got.Emit() != v {
				return false
			}
		}
		return true
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += p.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						n += int64(p.Count)
					}
				}
			}
		}
	}
	return n
}

// TestA2AUpstreamGetsTraceparent: an A2A upstream's HTTP requests (here
// the agent-card fetch, the first one it makes) carry the client span's
// traceparent, through the same Transport.
func TestA2AUpstreamGetsTraceparent(t *testing.T) {
	tel, exp := newTelemetry(t, otel.Config{})
	got := make(chan string, 8)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Traceparent"):
		default:
		}
		http.NotFound(w, r)
	}))
	defer agent.Close()
	client := outa2a.New(outa2a.Config{Name: "agent", URL: agent.URL,
		HTTPClient: outbound.NewHTTPClient(outbound.Timeouts{}, tel.Transport)})
	up := outbound.Wrap(client, tel.Upstream(client, otel.GenAI{Provider: "a2a", Operation: "invoke_agent"}))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ctx, run := tel.Tracer().Start(ctx, "run")
	if _, err := up.Open(ctx, &bridge.Request{Inbound: "openai", Model: "m",
		Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}}}); err == nil {
		t.Fatal("an agent without a card answered")
	}
	run.End()
	span := spanNamed(exp.GetSpans(), "invoke_agent m")
	if span == nil {
		t.Fatalf("no client span; have %+v", exp.GetSpans())
	}
	checkAttrs(t, span, map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "a2a"})
	if span.Status.Code.String() != "Error" {
		t.Errorf("failed call's span status %v", span.Status)
	}
	select {
	case tp := <-got:
		if want := "00-" + span.SpanContext.TraceID().String() + "-" + span.SpanContext.SpanID().String() + "-01"; tp != want {
			t.Errorf("agent got traceparent %q, want %q", tp, want)
		}
	default:
		t.Fatal("the agent got no request")
	}
}

// TestSteerEvent: a steer that joins a running run is an event on the run
// span, and the steering caller's span links to the run's trace.
func TestSteerEvent(t *testing.T) {
	tel, exp := newTelemetry(t, otel.Config{})
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	defer release()
	s := newStack(t, tel, func(n int, _ []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "x", Model: "m"}
		if n == 0 {
			<-gate // hold the first answer until the steer is in
		}
		return openaitest.Reply{Chunks: c.Role().Text("ok").Finish("stop").List()}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	run, err := s.engine.Start(trace.ContextWithRemoteSpanContext(ctx, remoteParent(t)), &bridge.Request{Inbound: "openai", Model: "m", Full: true,
		SessionID: "steer-1", Detached: true, Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("start")}}}})
	if err != nil {
		t.Fatal(err)
	}
	sctx, steerSpan := tel.Tracer().Start(ctx, "steer request")
	err = s.engine.Steer(sctx, run.ID, bridge.Message{Parts: []bridge.Part{bridge.TextPart("also this")}})
	steerSpan.End()
	release()
	if err != nil {
		t.Fatal(err)
	}
	runSpan := spanNamed(waitSpans(t, exp, "run"), "run")
	if !hasEvent(runSpan, "steer") {
		t.Errorf("run span events %+v lack steer", runSpan.Events)
	}
	st := spanNamed(exp.GetSpans(), "steer request")
	if !hasEvent(st, "steer") || len(st.Links) != 1 || st.Links[0].SpanContext.TraceID().String() != parentTrace {
		t.Errorf("steering span: events %+v links %+v", st.Events, st.Links)
	}
}

func remoteParent(t *testing.T) trace.SpanContext {
	t.Helper()
	tid, _ := trace.TraceIDFromHex(parentTrace)
	sid, _ := trace.SpanIDFromHex(parentSpan)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

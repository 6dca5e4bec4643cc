package otel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/outbound"
)

// BenchmarkTracedRequest is the tracing work of one openai -> openai
// streamed request, without the bridge's other work: the server middleware
// around a routed handler that starts a run span (with the engine's
// attributes and first_token event), calls an upstream through the
// client-span middleware, ranges over its 13-event stream and sends the
// upstream request through Transport. "off" is a no-op provider with the
// traceparent still propagated; "on" is the SDK with the always_on sampler
// and the batch OTLP/HTTP exporter to a local endpoint that drops what it
// gets. The difference is the CPU tracing adds per request.
//
//	go test -run '^$' -bench TracedRequest -count 6 ./otel/
func BenchmarkTracedRequest(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer sink.Close()
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			cfg := otel.Config{}
			if mode == "on" {
				exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
				if err != nil {
					b.Fatal(err)
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(exp))
				defer func() { _ = tp.Shutdown(context.Background()) }()
				cfg.TracerProvider = tp
			}
			tel, err := otel.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			events := bridgetest.TextEvents("one", " two", " three", " four", " five", " six", " seven", " eight")
			events = append(events[:len(events)-1], bridge.Event{Kind: bridge.KindUsage, Usage: &bridge.Usage{
				InputTokens: bridge.Int64(12), OutputTokens: bridge.Int64(8)}}, events[len(events)-1])
			up := &bridgetest.Upstream{UpName: "up", UpDialect: "openai", Events: events}
			upstream := outbound.Wrap(up, tel.Upstream(up, otel.GenAI{Provider: "openai", Operation: "chat"}))
			rt := tel.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) { return nil, nil }))
			tracer := tel.Tracer()
			mux := http.NewServeMux()
			mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
				ctx, span := tracer.Start(r.Context(), "run", trace.WithAttributes(
					attribute.String("bridge.run.id", "run_x"), attribute.String("bridge.session.id", "sess_x"),
					attribute.String("bridge.dialect.inbound", "openai"), attribute.String("bridge.dialect.outbound", "openai"),
					attribute.String("bridge.upstream.name", "up"), attribute.String("gen_ai.request.model", "m")))
				defer span.End()
				call, err := upstream.Open(ctx, &bridge.Request{Inbound: "openai", Model: "m", SessionID: "sess_x"})
				if err != nil {
					b.Error(err)
					return
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", "http://upstream/v1/chat/completions", nil)
				_, _ = rt.RoundTrip(req)
				first := true
				for ev, err := range call.Events {
					if err != nil {
						b.Error(err)
						return
					}
					if first && ev.Kind == bridge.KindTextDelta {
						first = false
						span.AddEvent("first_token")
					}
				}
				span.SetAttributes(attribute.String("bridge.run.outcome", "completed"))
				w.Header().Set("X-Run-Id", "run_x")
			})
			h := tel.Handler(mux, "/healthz")
			req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(""))
			req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			var ru0 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
			b.StopTimer()
			if tp, ok := cfg.TracerProvider.(*sdktrace.TracerProvider); ok {
				_ = tp.ForceFlush(context.Background()) // the export is part of the cost
			}
			var ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := (ru1.Utime.Nano() + ru1.Stime.Nano()) - (ru0.Utime.Nano() + ru0.Stime.Nano())
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

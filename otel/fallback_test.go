package otel_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/outbound"
)

// TestOnFallback: a fallback taken is counted and is an event on the
// context's span.
func TestOnFallback(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := otel.New(otel.Config{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	primary := &bridgetest.Upstream{UpName: "gpt", UpDialect: "openai", OpenErr: outbound.ConnectError("gpt", false)}
	fb := &bridgetest.Upstream{UpName: "claude", UpDialect: "anthropic", Events: bridgetest.TextEvents("hi")}
	u := outbound.NewFallback(primary, []bridge.Upstream{fb}, outbound.FallbackConfig{OnFallback: tel.OnFallback})

	ctx, span := tel.Tracer().Start(t.Context(), "run")
	if _, err := u.Open(ctx, &bridge.Request{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	span.End()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"bridge.upstream.name": "gpt", "bridge.fallback.upstream": "claude", "error.type": "upstream"}
	if n := sum(rm, otel.MetricFallbacks, want); n != 1 {
		t.Errorf("%s = %d, want 1", otel.MetricFallbacks, n)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || !hasEvent(&spans[0], otel.EventFallback) {
		t.Errorf("run span has no %s event: %+v", otel.EventFallback, spans)
	}
}

package otel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/bridge-dev/bridge/bridge"
)

// EventFallback is the span event on the run span when an upstream failed
// before answering and a fallback is tried.
const EventFallback = "upstream_fallback"

var attrFallbackTo = attribute.Key("bridge.fallback.upstream")

// OnFallback records a fallback taken: the bridge.upstream.fallbacks
// counter (by the upstream that failed, the fallback tried and the error
// code) and an upstream_fallback event on ctx's span (the run's). Its
// signature is the one outbound.FallbackConfig.OnFallback takes.
func (t *Telemetry) OnFallback(ctx context.Context, from, to bridge.Upstream, err error) {
	attrs := []attribute.KeyValue{attrUpstream.String(from.Name()), attrFallbackTo.String(to.Name()),
		attribute.Key(keyErrCode).String(string(bridge.ErrorCode(err)))}
	t.m.fallbacks.Add(ctx, 1, metric.WithAttributes(attrs...))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventFallback, trace.WithAttributes(append(attrs, attrOutbound.String(to.Dialect()))...))
	}
}

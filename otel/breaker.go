package otel

import (
	"context"

	"github.com/sony/gobreaker"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

var (
	attrBreakerFrom = attribute.Key("bridge.breaker.from")
	attrBreakerTo   = attribute.Key("bridge.breaker.to")
)

// OnBreakerChange records a circuit breaker's state change in the metrics
// (bridge.breaker.state_changes and the bridge.breaker.state gauge). Its
// signature is the one outbound.NewBreaker's onChange takes.
func (t *Telemetry) OnBreakerChange(name string, from, to gobreaker.State) {
	ctx := context.Background()
	up := attrUpstream.String(name)
	t.m.brChange.Add(ctx, 1, metric.WithAttributes(up, attrBreakerFrom.String(from.String()), attrBreakerTo.String(to.String())))
	var v int64
	switch to {
	case gobreaker.StateHalfOpen:
		v = 1
	case gobreaker.StateOpen:
		v = 2
	}
	t.m.brState.Record(ctx, v, metric.WithAttributes(up))
}

package otel

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// The metrics, as OpenTelemetry names them (the Prometheus exporter turns
// dots into underscores and adds _total to counters and the unit to
// histograms: bridge_runs_started_total, bridge_run_duration_seconds).
const (
	MetricRunsStarted   = "bridge.runs.started"
	MetricRunsEnded     = "bridge.runs.ended"
	MetricTTFT          = "bridge.run.time_to_first_token"
	MetricRunDuration   = "bridge.run.duration"
	MetricActiveStreams = "bridge.streams.active"
	MetricUpstreamErrs  = "bridge.upstream.errors"
	MetricBreakerChange = "bridge.breaker.state_changes"
	MetricBreakerState  = "bridge.breaker.state"
	MetricFallbacks     = "bridge.upstream.fallbacks"
)

// Metric attribute keys.
const (
	keyInbound  = "bridge.dialect.inbound"
	keyOutbound = "bridge.dialect.outbound"
	keyUpstream = "bridge.upstream.name"
	keyOutcome  = "bridge.run.outcome"
	keyErrCode  = "error.type"
)

// latencyBuckets are histogram bounds in seconds, from 5ms to 10min.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// instruments are the bridge's metric instruments. A run here is one upstream
// call of a run: a run continued after its client's tool results counts
// again, as does each model step an agent upstream reports in one call.
type instruments struct {
	started  metric.Int64Counter
	ended    metric.Int64Counter
	ttft     metric.Float64Histogram
	duration metric.Float64Histogram
	active   metric.Int64UpDownCounter
	upErrs   metric.Int64Counter
	brChange metric.Int64Counter
	brState  metric.Int64Gauge
	// fallbacks counts fallbacks taken (see Telemetry.OnFallback).
	fallbacks metric.Int64Counter
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var (
		in   instruments
		errs []error
	)
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	in.started, err = m.Int64Counter(MetricRunsStarted, metric.WithUnit("{run}"),
		metric.WithDescription("Runs (upstream calls of a run) started, by inbound and outbound dialect."))
	add(err)
	in.ended, err = m.Int64Counter(MetricRunsEnded, metric.WithUnit("{run}"),
		metric.WithDescription("Runs (upstream calls of a run) ended, by dialect pair and outcome."))
	add(err)
	in.ttft, err = m.Float64Histogram(MetricTTFT, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(latencyBuckets...),
		metric.WithDescription("Time from opening the upstream call to its first token."))
	add(err)
	in.duration, err = m.Float64Histogram(MetricRunDuration, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(latencyBuckets...),
		metric.WithDescription("Time from opening the upstream call to the end of its stream."))
	add(err)
	in.active, err = m.Int64UpDownCounter(MetricActiveStreams, metric.WithUnit("{stream}"),
		metric.WithDescription("Upstream streams open now."))
	add(err)
	in.upErrs, err = m.Int64Counter(MetricUpstreamErrs, metric.WithUnit("{error}"),
		metric.WithDescription("Upstream calls that failed to open or whose stream failed, by upstream and error code."))
	add(err)
	in.brChange, err = m.Int64Counter(MetricBreakerChange, metric.WithUnit("{change}"),
		metric.WithDescription("Circuit breaker state changes, by upstream and the states left and entered."))
	add(err)
	in.brState, err = m.Int64Gauge(MetricBreakerState, metric.WithUnit("{state}"),
		metric.WithDescription("Circuit breaker state by upstream: 0 closed, 1 half-open, 2 open."))
	add(err)
	in.fallbacks, err = m.Int64Counter(MetricFallbacks, metric.WithUnit("{fallback}"),
		metric.WithDescription("Upstream calls that failed before answering and went on to a fallback, by upstream, fallback and error code."))
	add(err)
	if len(errs) > 0 {
		return nil, fmt.Errorf("otel: metric instruments: %v", errs)
	}
	return &in, nil
}

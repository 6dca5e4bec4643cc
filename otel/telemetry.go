package otel

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span and instrument the
// bridge makes.
const ScopeName = "github.com/bridge-dev/bridge"

// Config configures a Telemetry built from explicit providers. The zero
// value of each field means its default: no-op providers (nothing is
// recorded, but an inbound traceparent still propagates), the W3C
// tracecontext and baggage propagators, time.Now.
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
	// RecordContent records message contents (the request's messages, the
	// answer's text, tool-call arguments and results) on spans. Off by
	// default: spans carry ids, models, counts and timings only.
	RecordContent bool
	Now           func() time.Time
}

// Telemetry is the bridge's OpenTelemetry side: the tracer the engine takes,
// the HTTP server middleware, the upstream endpoint middleware and the
// upstream transport, and the metrics. It is safe for concurrent use.
//
// A Telemetry made by FromEnv owns its providers: Shutdown flushes and stops
// them. One made by New does not; its caller shuts its providers down.
type Telemetry struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	now    func() time.Time
	// recordContent: see Config.RecordContent.
	recordContent bool
	m             *instruments

	metrics http.Handler

	mu       sync.Mutex
	shutdown []func(context.Context) error // guarded by mu
}

// New returns a Telemetry over cfg's providers.
func New(cfg Config) (*Telemetry, error) {
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = noop.NewTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = metricnoop.NewMeterProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m, err := newInstruments(cfg.MeterProvider.Meter(ScopeName))
	if err != nil {
		return nil, err
	}
	return &Telemetry{
		tp:            cfg.TracerProvider,
		tracer:        cfg.TracerProvider.Tracer(ScopeName),
		prop:          cfg.Propagator,
		now:           cfg.Now,
		recordContent: cfg.RecordContent,
		m:             m,
	}, nil
}

// Tracer is the tracer to hand the engine (bridge.Config.Tracer).
func (t *Telemetry) Tracer() trace.Tracer { return t.tracer }

// TracerProvider is the provider the Telemetry's spans come from.
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.tp }

// Propagator is the propagator the middleware extracts and injects with.
func (t *Telemetry) Propagator() propagation.TextMapPropagator { return t.prop }

// MetricsHandler serves the metrics in the Prometheus text format, or is
// nil when no Prometheus exporter was configured.
func (t *Telemetry) MetricsHandler() http.Handler { return t.metrics }

// Shutdown flushes the spans and metrics still buffered to their exporters
// and stops the providers FromEnv made, within ctx. It is safe to call more
// than once, from any goroutine; calls after the first do nothing.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	fns := t.shutdown
	t.shutdown = nil
	t.mu.Unlock()
	var errs []error
	for i := len(fns) - 1; i >= 0; i-- {
		errs = append(errs, fns[i](ctx))
	}
	return errors.Join(errs...)
}

// Package otel builds the OpenTelemetry side of the bridge: providers and
// exporters from the standard OTEL_* environment variables, and the HTTP
// and upstream middleware. The engine (package bridge) sees only the trace
// API's interfaces; this package may import bridge, never the reverse.
//
// Unfinished: only the seam exists so far (the engine takes a
// trace.Tracer; outbound.Wrap takes go-kit middleware). Providers,
// exporters and spans are the tracing issue's work.
package otel

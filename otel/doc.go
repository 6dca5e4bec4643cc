// Package otel is the OpenTelemetry side of the bridge: providers and
// exporters from the standard OTEL_* environment variables (FromEnv), or
// from providers a caller built (New); the HTTP server middleware
// (Telemetry.Handler); the go-kit endpoint middleware that makes the
// upstream client span (Telemetry.Upstream); the http.RoundTripper that
// sends the traceparent upstream (Telemetry.Transport); and the run metrics,
// served in the Prometheus text format by Telemetry.MetricsHandler.
//
// The engine (package bridge) sees only the trace API: it takes
// Telemetry.Tracer and makes the run span itself. This package may import
// bridge, never the reverse, and sets no global: no otel.SetTracerProvider,
// no default Prometheus registry.
//
// # Spans
//
// One inbound request with a traceparent is one trace:
//
//	POST /v1/chat/completions      server span, child of the traceparent; named
//	│                              after the route pattern the mux matched
//	└─ run                         the engine's; bridge.run.id, bridge.session.id,
//	   │                           bridge.dialect.inbound/outbound; events
//	   │                           first_token, resume, steer, cancel
//	   └─ chat MODEL               client span per upstream call, GenAI semantic
//	      │                        conventions; ends when the stream ends; event
//	      │                        first_token; its context is the traceparent
//	      │                        the upstream receives
//	      └─ tool_call NAME        one per tool call the stream makes
//
// A request that resumes a stream from a cursor (Last-Event-ID, ?after=)
// has a resume event on its server span. A run continued by a later request
// (the client's tool results) gets a new run span in that request's trace,
// with a resume event and a link to the trace the run started in; the
// stored run keeps its first trace id. A steer is a steer event on the run
// span when it joins the run's next model call, and the steering request's
// span links to the run's trace.
//
// Message contents (the request's messages, the answer, tool arguments and
// results) are recorded only with Config.RecordContent
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
//
// # No exporter
//
// With no exporter configured the tracer provider is a no-op one, and the
// server middleware still extracts the inbound traceparent into the request
// context: the no-op tracer hands that span context on, so the engine's run
// (and its stored trace id) and the upstream's traceparent are of the
// caller's trace.
//
// # Metrics
//
// Counted per upstream call of a run (a run continued after tool results
// counts again): bridge.runs.started and bridge.runs.ended (by inbound and
// outbound dialect, and outcome), bridge.run.time_to_first_token and
// bridge.run.duration histograms (seconds), bridge.streams.active, and
// bridge.upstream.errors (by upstream and error code).
package otel

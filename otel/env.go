package otel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The environment variables FromEnv reads.
const (
	EnvSDKDisabled         = "OTEL_SDK_DISABLED"
	EnvTracesExporter      = "OTEL_TRACES_EXPORTER"
	EnvMetricsExporter     = "OTEL_METRICS_EXPORTER"
	EnvEndpoint            = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint      = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol            = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol      = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName         = "OTEL_SERVICE_NAME"
	EnvResourceAttributes  = "OTEL_RESOURCE_ATTRIBUTES"
	EnvSampler             = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg          = "OTEL_TRACES_SAMPLER_ARG"
	EnvCaptureContent      = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	defaultServiceName     = "bridge"
	defaultTracesURLPath   = "/v1/traces"
	defaultOTLPTracesLocal = "http://localhost:4318" + defaultTracesURLPath
)

// EnvConfig says where FromEnv reads and writes. The zero value means
// os.Getenv and os.Stdout.
type EnvConfig struct {
	// Getenv reads a variable (default os.Getenv). The OTLP exporter itself
	// also reads its finer settings (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
	// _COMPRESSION, _CERTIFICATE ...) and the batch processor its
	// OTEL_BSP_* settings from the process environment.
	Getenv func(string) string
	// Console is where the console exporter writes (default os.Stdout).
	Console io.Writer
	// ServiceVersion becomes service.version when set.
	ServiceVersion string
}

// FromEnv builds the providers the standard OTEL_* environment variables
// describe and returns a Telemetry that owns them (Shutdown flushes them).
//
//   - OTEL_TRACES_EXPORTER: a comma-separated list of otlp, console and
//     none. Unset, it is otlp when an OTLP endpoint variable is set and none
//     otherwise (the specification's default is otlp; a bridge with no
//     collector should not retry exports to localhost forever).
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the full URL spans are posted
//     to; else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended; else
//     http://localhost:4318/v1/traces. The protocol is http/protobuf
//     (http/json is accepted too; grpc is an error).
//   - OTEL_SERVICE_NAME (default "bridge") and OTEL_RESOURCE_ATTRIBUTES
//     (key=value,... with percent-encoded values) make the resource.
//   - OTEL_TRACES_SAMPLER: always_on, always_off, traceidratio,
//     parentbased_always_on (the default), parentbased_always_off,
//     parentbased_traceidratio; OTEL_TRACES_SAMPLER_ARG is the ratio
//     (default 1.0).
//   - OTEL_METRICS_EXPORTER: prometheus turns the metrics on and makes
//     MetricsHandler serve them; none (the default) leaves them off.
//   - OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true records message
//     contents on spans (Config.RecordContent).
//   - OTEL_SDK_DISABLED=true turns everything off; an inbound traceparent
//     still propagates.
//
// With no trace exporter the tracer provider is a no-op one: spans cost
// nothing, and the engine's run still carries the inbound parent's trace id.
func FromEnv(ctx context.Context, cfg EnvConfig) (*Telemetry, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if cfg.Console == nil {
		cfg.Console = os.Stdout
	}
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }

	tc := Config{}
	if v := env(EnvCaptureContent); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want true or false", EnvCaptureContent, v)
		}
		tc.RecordContent = b
	}
	if v := env(EnvSDKDisabled); v != "" {
		if b, err := strconv.ParseBool(v); err == nil && b {
			return New(tc)
		}
	}

	var shutdown []func(context.Context) error
	fail := func(err error) (*Telemetry, error) {
		for i := len(shutdown) - 1; i >= 0; i-- {
			_ = shutdown[i](ctx)
		}
		return nil, err
	}

	res, err := envResource(env, cfg.ServiceVersion)
	if err != nil {
		return nil, err
	}

	exporters, err := envSpanExporters(ctx, env, cfg.Console)
	if err != nil {
		return nil, err
	}
	if len(exporters) > 0 {
		sampler, err := envSampler(env)
		if err != nil {
			for _, e := range exporters {
				_ = e.Shutdown(ctx)
			}
			return nil, err
		}
		opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sampler)}
		for _, e := range exporters {
			opts = append(opts, sdktrace.WithBatcher(e))
		}
		tp := sdktrace.NewTracerProvider(opts...)
		tc.TracerProvider = tp
		shutdown = append(shutdown, tp.Shutdown)
	}

	var metrics http.Handler
	switch v := strings.ToLower(env(EnvMetricsExporter)); v {
	case "", "none":
	case "prometheus":
		reg := promclient.NewRegistry()
		exp, err := promexporter.New(promexporter.WithRegisterer(reg))
		if err != nil {
			return fail(fmt.Errorf("prometheus exporter: %w", err))
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(exp))
		tc.MeterProvider = mp
		shutdown = append(shutdown, mp.Shutdown)
		metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	default:
		return fail(fmt.Errorf("%s=%q: want prometheus or none", EnvMetricsExporter, v))
	}

	t, err := New(tc)
	if err != nil {
		return fail(err)
	}
	t.metrics = metrics
	t.shutdown = shutdown
	return t, nil
}

// envSpanExporters makes the exporters OTEL_TRACES_EXPORTER names.
func envSpanExporters(ctx context.Context, env func(string) string, console io.Writer) ([]sdktrace.SpanExporter, error) {
	names := env(EnvTracesExporter)
	if names == "" {
		if env(EnvEndpoint) == "" && env(EnvTracesEndpoint) == "" {
			return nil, nil
		}
		names = "otlp"
	}
	var out []sdktrace.SpanExporter
	seen := map[string]bool{}
	for _, name := range strings.Split(names, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if seen[name] {
			continue
		}
		seen[name] = true
		switch name {
		case "none", "":
		case "console":
			e, err := stdouttrace.New(stdouttrace.WithWriter(console))
			if err != nil {
				return nil, fmt.Errorf("console exporter: %w", err)
			}
			out = append(out, e)
		case "otlp":
			e, err := otlpExporter(ctx, env)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		default:
			return nil, fmt.Errorf("%s=%q: unknown exporter %q (want otlp, console or none)", EnvTracesExporter, names, name)
		}
	}
	if seen["none"] && len(out) > 0 {
		return nil, fmt.Errorf("%s=%q: none cannot be combined with other exporters", EnvTracesExporter, names)
	}
	return out, nil
}

// otlpExporter makes the OTLP/HTTP span exporter.
func otlpExporter(ctx context.Context, env func(string) string) (sdktrace.SpanExporter, error) {
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(tracesURL(env))}
	proto := env(EnvTracesProtocol)
	if proto == "" {
		proto = env(EnvProtocol)
	}
	switch proto {
	case "", "http/protobuf":
		opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf))
	case "http/json":
		opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	default:
		return nil, fmt.Errorf("OTLP protocol %q is not supported: the bridge exports over http/protobuf (or http/json)", proto)
	}
	e, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	return e, nil
}

// tracesURL is the URL spans are posted to.
func tracesURL(env func(string) string) string {
	if u := env(EnvTracesEndpoint); u != "" {
		return u
	}
	if u := env(EnvEndpoint); u != "" {
		return strings.TrimSuffix(u, "/") + defaultTracesURLPath
	}
	return defaultOTLPTracesLocal
}

// envSampler reads OTEL_TRACES_SAMPLER and its argument.
func envSampler(env func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(env(EnvSampler))
	ratio := func() (float64, error) {
		arg := env(EnvSamplerArg)
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("%s=%q: want a ratio between 0 and 1", EnvSamplerArg, arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("%s=%q: unknown sampler", EnvSampler, name)
}

// envResource makes the resource from OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME (which wins over a service.name in the attributes).
func envResource(env func(string) string, version string) (*resource.Resource, error) {
	attrs, err := parseResourceAttributes(env(EnvResourceAttributes))
	if err != nil {
		return nil, err
	}
	name := defaultServiceName
	for _, a := range attrs {
		if a.Key == semconv.ServiceNameKey {
			name = a.Value.AsString()
		}
	}
	if v := env(EnvServiceName); v != "" {
		name = v
	}
	attrs = append(attrs, semconv.ServiceName(name))
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	attrs = append(attrs, semconv.TelemetrySDKName("opentelemetry"), semconv.TelemetrySDKLanguageGo,
		semconv.TelemetrySDKVersion(sdk.Version()))
	return resource.NewWithAttributes(semconv.SchemaURL, attrs...), nil
}

// parseResourceAttributes reads key=value pairs separated by commas, values
// percent-encoded, as the specification writes OTEL_RESOURCE_ATTRIBUTES.
func parseResourceAttributes(s string) ([]attribute.KeyValue, error) {
	var out []attribute.KeyValue
	if s == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not key=value", EnvResourceAttributes, pair)
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: value of %q: %w", EnvResourceAttributes, k, err)
		}
		out = append(out, attribute.String(k, val))
	}
	return out, nil
}
